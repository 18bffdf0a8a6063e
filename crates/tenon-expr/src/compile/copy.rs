//! An instance's code in a compiled stream: its template's instructions with loads
//! redirected to the instance's leaves and stores moved to its cells. Into a narrow
//! stream (the usual case) the template's own `u16` copy is appended whole and patched
//! where it loads and stores; otherwise the instructions are copied one at a time.
//!
//! Architecture invariant: both ways write the same instructions (tested).

use super::{ConstPool, Needed};
use crate::shape::{InstanceMap, Template};
use crate::tape::{Code, Op, SlotIndex, Stream};

/// Calls `append` with the template and map of every instance whose template `copied`
/// says is copied, in order; false as soon as one call is (an instruction did not fit
/// the streams' slot type: nothing can be concluded from the streams then).
pub(super) fn append_all(
    templates: &crate::shape::Templates,
    instances: &super::Instances,
    copied: &dyn Fn(u32) -> bool,
    mut append: impl FnMut(&Template, &InstanceMap<'_>) -> bool,
) -> bool {
    for inst in instances.list.iter().filter(|i| copied(i.template)) {
        let Some(t) = templates.get(inst.template) else {
            continue;
        };
        if !append(t, &instances.map(inst)) {
            return false;
        }
    }
    true
}

/// Appends one instance's residual and full streams, an instruction at a time
/// ([`append_instance`]).
pub(super) fn append_both<D: SlotIndex>(
    (residual, full): (&mut Stream<D>, &mut Stream<D>),
    (t, map): (&Template, &InstanceMap<'_>),
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
) -> bool {
    append_code(residual, &t.parts.residual, t, map, consts, needed)
        && append_code(full, &t.parts.full, t, map, consts, needed)
}

/// [`append_both`] into narrow streams for a template with a narrow copy: that copy
/// appended whole and patched where it loads and stores ([`append_patched`]), the same
/// instructions [`append_instance`] writes one by one.
pub(super) fn append_both_narrow(
    (residual, full): (&mut Stream<u16>, &mut Stream<u16>),
    (t, map): (&Template, &InstanceMap<'_>),
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
) -> bool {
    let Some(c) = &t.narrow else {
        return append_both((residual, full), (t, map), consts, needed);
    };
    append_patched(
        residual,
        (&c.residual, &c.patched[0]),
        t,
        map,
        consts,
        needed,
    );
    append_patched(full, (&c.full, &c.patched[1]), t, map, consts, needed);
    true
}

/// Appends a template's narrow stream for one instance: copied whole, then the
/// instructions at `patched` (every load and store) redirected as
/// [`append_instance`] redirects them.
fn append_patched(
    stream: &mut Stream<u16>,
    (source, patched): (&Stream<u16>, &[u32]),
    template: &Template,
    map: &InstanceMap<'_>,
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
) {
    let base = stream.instrs.len();
    stream.instrs.extend_from_slice(&source.instrs);
    let copied = stream.instrs.get_mut(base..).unwrap_or_default();
    for &k in patched {
        let Some(copy) = copied.get_mut(k as usize) else {
            continue;
        };
        if copy.op.is_load() {
            let (op, index) =
                redirect_load(template, map, (copy.op, copy.load_index()), consts, needed);
            // Both halves fit: each is 16 bits.
            copy.op = op;
            copy.a[0] = (index & 0xffff) as u16;
            copy.a[1] = (index >> 16) as u16;
        }
        copy.out = map.cell(template, copy.out);
    }
    stream.slots = stream.slots.max(source.slots);
}

fn append_code<D: SlotIndex>(
    stream: &mut Stream<D>,
    source: &Code,
    template: &Template,
    map: &InstanceMap<'_>,
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
) -> bool {
    match source {
        Code::Narrow(s) => append_instance(stream, s, template, map, consts, needed),
        Code::Wide(s) => append_instance(stream, s, template, map, consts, needed),
    }
}

/// Appends a template's stream, copied for one instance (loads redirected to the
/// instance's leaves, stores moved to its cells), to `stream`. Slots are the template's:
/// every value an instance reads it computed itself, so instances may reuse each
/// other's slots. False when an instruction does not fit `D`.
fn append_instance<S: SlotIndex, D: SlotIndex>(
    stream: &mut Stream<D>,
    source: &Stream<S>,
    template: &Template,
    map: &InstanceMap<'_>,
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
) -> bool {
    stream.instrs.reserve(source.instrs.len());
    for &instr in &source.instrs {
        // Slots carried over as they are (one conversion to `D`, checked).
        let Some(mut copy) = instr.map(|x| D::from_u32(x.get() as u32)) else {
            return false;
        };
        if instr.op.is_load() {
            let (op, index) = redirect_load(
                template,
                map,
                (instr.op, instr.load_index()),
                consts,
                needed,
            );
            let (Some(low), Some(high)) = (D::from_u32(index & 0xffff), D::from_u32(index >> 16))
            else {
                return false;
            };
            copy.op = op;
            copy.a[0] = low;
            copy.a[1] = high;
        }
        copy.out = map.cell(template, instr.out);
        stream.instrs.push(copy);
    }
    stream.slots = stream.slots.max(source.slots);
    true
}

/// What a template's load `(op, index)` becomes in an instance (see
/// [`InstanceMap::load`]), with the unknowns and parameters the tape reads grown to
/// take it in.
fn redirect_load(
    template: &Template,
    map: &InstanceMap<'_>,
    (op, index): (Op, usize),
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
) -> (Op, u32) {
    let (op, index) = map.load(template, op, index as u32, &mut |bits| consts.get(bits));
    match op {
        Op::LoadVar => needed.vars = needed.vars.max(index as usize + 1),
        Op::LoadParam => needed.params = needed.params.max(index as usize + 1),
        _ => {}
    }
    (op, index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{Form, Instances, LocalColumns};
    use crate::graph::ExprGraph;
    use crate::node::VarId;

    /// An instance appended as its template's narrow copy patched at its loads and
    /// stores ([`append_patched`]) is, instruction for instruction, the template's code
    /// redirected one instruction at a time ([`append_instance`]): over groups alike and
    /// unlike, reading unknowns, parameters, constant leaves and literal constants.
    #[test]
    fn patched_copies_are_the_instructions_copied_one_by_one() {
        let mut g = ExprGraph::new();
        let vars: Vec<VarId> = (0..12).map(|k| g.new_var(format!("x{k}"))).collect();
        let p = g.new_param("p");
        let mut outputs = Vec::new();
        let mut groups = Vec::new();
        for k in 0..6usize {
            let (a, b, c) = (g.var(vars[2 * k]), g.var(vars[2 * k + 1]), g.var(vars[k]));
            let offset = g.constant(0.25 + k as f64);
            let pe = g.param(p);
            let ab = g.mul(a, b);
            let r0 = g.add(ab, offset);
            let sc = g.sin(c);
            let r1 = if k % 2 == 0 {
                g.sub(sc, pe)
            } else {
                let two = g.constant(2.0);
                let t = g.mul(two, a);
                g.div(t, sc)
            };
            outputs.extend([r0, r1]);
            groups.extend([k as u32, k as u32]);
        }
        let columns = LocalColumns::new(&vars).unwrap();
        let instances = g
            .shaped_instances(
                &outputs,
                &groups,
                &columns,
                Form::LOCAL,
                Instances::default(),
            )
            .unwrap();
        assert_eq!(instances.list.len(), 6);
        let (mut patched, mut one_by_one) = (ConstPool::default(), ConstPool::default());
        let mut needed = [Needed::default(), Needed::default()];
        for inst in &instances.list {
            let t = g.templates.get(inst.template).unwrap();
            let copy = t.narrow.as_ref().unwrap();
            let map = instances.map(inst);
            for (stream, (code, fix)) in [
                (&t.parts.residual, (&copy.residual, &copy.patched[0])),
                (&t.parts.full, (&copy.full, &copy.patched[1])),
            ] {
                let empty = || Stream::<u16> {
                    instrs: Vec::new(),
                    slots: 0,
                    tables: Vec::new(),
                };
                let mut a = empty();
                append_patched(&mut a, (code, fix), t, &map, &mut patched, &mut needed[0]);
                let mut b = empty();
                assert!(append_code(
                    &mut b,
                    stream,
                    t,
                    &map,
                    &mut one_by_one,
                    &mut needed[1]
                ));
                assert_eq!(format!("{:?}", a.instrs), format!("{:?}", b.instrs));
                assert_eq!(a.slots, b.slots);
            }
        }
        assert_eq!(patched.values, one_by_one.values);
        assert_eq!(needed[0].vars, needed[1].vars);
        assert_eq!(needed[0].params, needed[1].params);
    }
}
