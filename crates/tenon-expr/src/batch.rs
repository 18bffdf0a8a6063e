//! Many instances of one template evaluated side by side.
//!
//! A large assembly's tape holds thousands of instances of a few templates (module
//! `shape`): a chain's revolutes are one template read at different unknowns. Copied
//! into the stream one after another, each instance pays the interpreter's dispatch and
//! decoding for every instruction (about eighteen machine instructions for one addition,
//! with its operand loads and stores), and the
//! copies themselves fill megabytes. A [`Batch`] keeps the template's stream once and,
//! per instance, only where its loads read and where its stores go. Each template
//! instruction then runs over [`LANES`] instances at once in a slot memory laid out
//! lane by lane (slot `s` of lane `i` at `s * LANES + i`), so the dispatch is paid once
//! per lane group and the arithmetic runs as plain vector loops.
//!
//! Where the instances' loads read and their stores go is kept lane group by lane group
//! (a group's indices for its first load, then for its second, ...), so a group reads
//! one contiguous block of indices rather than one short run per load spread across the
//! whole list: at 10,000 instances the list outgrows the caches, and a run per load
//! (dozens of streams at once) left the prefetcher behind.
//!
//! Architecture invariant: each instance computes exactly what its copy in the stream
//! would (the same operations in the same order, on the same values), so a tape's
//! results do not depend on whether its instances were batched. Lanes past the last
//! instance compute on stale values and are never stored.

use std::sync::Arc;

use crate::shape::Template;
use crate::tape::{Code, Inputs, Op, SlotIndex, Stream};

/// Instances evaluated together by each instruction.
pub(crate) const LANES: usize = 16;

/// Fewest instances of a template that are batched; a template with fewer has its
/// instances copied into the stream (dispatching each is cheaper than a lane group's
/// loops for one or two instances).
pub(crate) const MIN_BATCH: usize = 4;

/// The instances of one template in one of its streams (the residual one or the full
/// one): where each instance's loads read and its stores go.
#[derive(Clone, Debug)]
pub(crate) struct Batch {
    template: Arc<Template>,
    /// Whether this batch runs the template's full stream (else its residual one).
    full: bool,
    count: usize,
    /// Per load instruction of the stream, in order: what it reads after mapping
    /// (`LoadVar`, `LoadParam` or `LoadConst`, the same for every instance).
    load_ops: Vec<Op>,
    /// Per lane group, per load instruction, per lane (see [`group_index`]): the index
    /// read (0 in the lanes past the last instance).
    sources: Vec<u32>,
    /// Per lane group, per storing instruction (output cell not 0), per lane: the
    /// output cell.
    cells: Vec<u32>,
    /// Number of load instructions and of storing instructions in the stream.
    loads: usize,
    stores: usize,
}

/// Lane groups `count` instances take (the last one may be partly filled).
fn groups(count: usize) -> usize {
    count.div_ceil(LANES)
}

/// Where instance `i`'s entry for the `k`-th of `per_group` loads (or stores) sits in a
/// list laid out lane group by lane group.
fn group_index(i: usize, k: usize, per_group: usize) -> usize {
    (i / LANES * per_group + k) * LANES + i % LANES
}

/// Where a batch is built from: the template's load and store plan of one stream, filled
/// instance by instance.
pub(crate) struct BatchBuilder {
    batch: Batch,
    /// Per load instruction, the template's own operation and index.
    template_loads: Vec<(Op, u32)>,
    /// Per storing instruction, the template's output cell.
    template_cells: Vec<u32>,
    added: usize,
}

impl BatchBuilder {
    /// A builder for `count` instances of `template`'s full or residual stream.
    pub(crate) fn new(template: Arc<Template>, full: bool, count: usize) -> BatchBuilder {
        let (template_loads, template_cells) = match code_of(&template, full) {
            Code::Narrow(s) => plan_of(s),
            Code::Wide(s) => plan_of(s),
        };
        let loads = template_loads.len();
        let stores = template_cells.len();
        BatchBuilder {
            batch: Batch {
                template,
                full,
                count,
                load_ops: Vec::with_capacity(loads),
                sources: vec![0; loads * groups(count) * LANES],
                cells: vec![0; stores * groups(count) * LANES],
                loads,
                stores,
            },
            template_loads,
            template_cells,
            added: 0,
        }
    }

    /// The template this builder's batch runs.
    pub(crate) fn template_arc(&self) -> Arc<Template> {
        Arc::clone(&self.batch.template)
    }

    /// Adds the next instance: `load` maps a template load to the instance's (operation
    /// and index), `cell` a template output cell to the instance's. False when the
    /// instance does not fit (more instances than announced, or a load that maps to
    /// another operation than the first instance's).
    pub(crate) fn add(
        &mut self,
        mut load: impl FnMut(Op, u32) -> (Op, u32),
        mut cell: impl FnMut(u32) -> u32,
    ) -> bool {
        let i = self.added;
        let count = self.batch.count;
        if i >= count {
            return false;
        }
        for (j, &(op, index)) in self.template_loads.iter().enumerate() {
            let (mapped, source) = load(op, index);
            match self.batch.load_ops.get(j) {
                Some(&first) if first != mapped => return false,
                Some(_) => {}
                None => self.batch.load_ops.push(mapped),
            }
            let at = group_index(i, j, self.batch.loads);
            if let Some(slot) = self.batch.sources.get_mut(at) {
                *slot = source;
            }
        }
        for (s, &c) in self.template_cells.iter().enumerate() {
            let at = group_index(i, s, self.batch.stores);
            if let Some(slot) = self.batch.cells.get_mut(at) {
                *slot = cell(c);
            }
        }
        self.added += 1;
        true
    }

    /// The batch, once every announced instance was added.
    pub(crate) fn finish(self) -> Option<Batch> {
        (self.added == self.batch.count && self.batch.load_ops.len() == self.template_loads.len())
            .then_some(self.batch)
    }
}

fn code_of(template: &Template, full: bool) -> &Code {
    if full {
        &template.parts.full
    } else {
        &template.parts.residual
    }
}

/// A stream's loads (operation and index) and output cells, in order.
fn plan_of<S: SlotIndex>(stream: &Stream<S>) -> (Vec<(Op, u32)>, Vec<u32>) {
    let mut loads = Vec::new();
    let mut cells = Vec::new();
    for ins in &stream.instrs {
        if matches!(ins.op, Op::LoadVar | Op::LoadParam | Op::LoadConst) {
            let index = ins.load_index() as u32;
            loads.push((ins.op, index));
        }
        if ins.out != 0 {
            cells.push(ins.out);
        }
    }
    (loads, cells)
}

impl Batch {
    /// Slot memory this batch needs (lane groups: one per slot of its stream).
    pub(crate) fn memory(&self) -> usize {
        code_of(&self.template, self.full).slots()
    }

    /// Number of arithmetic instructions run, over all instances.
    pub(crate) fn arithmetic(&self) -> usize {
        code_of(&self.template, self.full).arithmetic() * self.count
    }

    /// Runs every instance: `memory` holds at least [`memory`](Self::memory) values;
    /// `stored` is the tape's output buffer.
    pub(crate) fn run(&self, memory: &mut [Lanes], inputs: Inputs<'_>, stored: &mut [f64]) {
        match code_of(&self.template, self.full) {
            Code::Narrow(s) => self.run_stream(s, memory, inputs, stored),
            Code::Wide(s) => self.run_stream(s, memory, inputs, stored),
        }
    }

    fn run_stream<S: SlotIndex>(
        &self,
        stream: &Stream<S>,
        m: &mut [Lanes],
        inputs: Inputs<'_>,
        stored: &mut [f64],
    ) {
        let count = self.count;
        let mut first = 0;
        while first < count {
            let n = (count - first).min(LANES);
            // This group's block of load indices and of output cells.
            let group = first / LANES;
            let sources = range(&self.sources, group * self.loads * LANES, self.loads);
            let group_cells = range(&self.cells, group * self.stores * LANES, self.stores);
            let (mut load, mut store) = (0usize, 0usize);
            for ins in &stream.instrs {
                let d = ins.d.get();
                let a = |k: usize| ins.a[k].get();
                match ins.op {
                    Op::LoadVar | Op::LoadParam | Op::LoadConst => {
                        let from = match self.load_ops.get(load) {
                            Some(Op::LoadVar) => inputs.vars,
                            Some(Op::LoadParam) => inputs.params,
                            _ => inputs.consts,
                        };
                        let at = load * LANES;
                        let sources = sources.get(at..at + n).unwrap_or(&[]);
                        if let Some(lanes) = m.get_mut(d) {
                            for (x, &s) in lanes.iter_mut().zip(sources) {
                                *x = from.get(s as usize).copied().unwrap_or(f64::NAN);
                            }
                        }
                        load += 1;
                    }
                    Op::Copy => map1(m, d, a(0), |x| x),
                    Op::Add => map2(m, d, [a(0), a(1)], |x, y| x + y),
                    Op::Sub => map2(m, d, [a(0), a(1)], |x, y| x - y),
                    Op::Mul => map2(m, d, [a(0), a(1)], |x, y| x * y),
                    Op::Div => map2(m, d, [a(0), a(1)], |x, y| x / y),
                    Op::Pow => map2(m, d, [a(0), a(1)], |x, y| {
                        crate::node::Binary::Pow.apply(x, y)
                    }),
                    Op::Atan2 => map2(m, d, [a(0), a(1)], f64::atan2),
                    Op::Min => map2(m, d, [a(0), a(1)], |x, y| {
                        crate::node::Binary::Min.apply(x, y)
                    }),
                    Op::Max => map2(m, d, [a(0), a(1)], |x, y| {
                        crate::node::Binary::Max.apply(x, y)
                    }),
                    Op::Neg => map1(m, d, a(0), |x| -x),
                    Op::Sqrt => map1(m, d, a(0), f64::sqrt),
                    Op::Sin => map1(m, d, a(0), f64::sin),
                    Op::Cos => map1(m, d, a(0), f64::cos),
                    Op::Tan => map1(m, d, a(0), f64::tan),
                    Op::Asin => map1(m, d, a(0), f64::asin),
                    Op::Acos => map1(m, d, a(0), f64::acos),
                    Op::Exp => map1(m, d, a(0), f64::exp),
                    Op::Ln => map1(m, d, a(0), f64::ln),
                    Op::Abs => map1(m, d, a(0), f64::abs),
                    Op::Sign => map1(m, d, a(0), |x| crate::node::Unary::Sign.apply(x)),
                    Op::Square => map1(m, d, a(0), |x| x * x),
                    Op::Powi => {
                        let k = i32::from(ins.a[1].get() as u16 as i16);
                        map1(m, d, a(0), |x| crate::node::powi(x, k));
                    }
                    Op::MulAdd => map3(m, d, [a(0), a(1), a(2)], |x, y, z| x * y + z),
                    Op::MulSub => map3(m, d, [a(0), a(1), a(2)], |x, y, z| x * y - z),
                    Op::SubMul => map3(m, d, [a(0), a(1), a(2)], |x, y, z| x - y * z),
                    Op::MulMul => map3(m, d, [a(0), a(1), a(2)], |x, y, z| x * y * z),
                    Op::NegMul => map2(m, d, [a(0), a(1)], |x, y| -(x * y)),
                    Op::Dot2 => map4(m, d, [a(0), a(1), a(2), a(3)], |x, y, z, w| x * y + z * w),
                    Op::DotSub => map4(m, d, [a(0), a(1), a(2), a(3)], |x, y, z, w| x * y - z * w),
                    // Templates hold no splines (groups with one are not shaped).
                    Op::Spline => map1(m, d, a(0), |_| f64::NAN),
                }
                if ins.out != 0 {
                    let at = store * LANES;
                    let cells = group_cells.get(at..at + n).unwrap_or(&[]);
                    if let Some(values) = m.get(d) {
                        for (&c, &v) in cells.iter().zip(values) {
                            if let Some(x) = stored.get_mut(c as usize) {
                                *x = v;
                            }
                        }
                    }
                    store += 1;
                }
            }
            first += n;
        }
    }
}

/// The `per_group * LANES` entries of `list` from `start` (empty where out of range).
fn range(list: &[u32], start: usize, per_group: usize) -> &[u32] {
    list.get(start..start + per_group * LANES).unwrap_or(&[])
}

/// One slot of every lane of a lane group.
pub(crate) type Lanes = [f64; LANES];

/// Slot `s`'s lanes (NaN where out of range, which the compiler's construction rules
/// out).
#[inline(always)]
fn lanes(m: &[Lanes], s: usize) -> Lanes {
    *m.get(s).unwrap_or(&NAN_LANES)
}

/// What an out-of-range slot reads.
static NAN_LANES: Lanes = [f64::NAN; LANES];

#[inline(always)]
fn put(m: &mut [Lanes], d: usize, x: Lanes) {
    if let Some(to) = m.get_mut(d) {
        *to = x;
    }
}

#[inline(always)]
fn map1(m: &mut [Lanes], d: usize, a: usize, f: impl Fn(f64) -> f64) {
    let x = lanes(m, a);
    put(m, d, x.map(f));
}

#[inline(always)]
fn map2(m: &mut [Lanes], d: usize, [a, b]: [usize; 2], f: impl Fn(f64, f64) -> f64) {
    let (x, y) = (lanes(m, a), lanes(m, b));
    put(m, d, std::array::from_fn(|i| f(x[i], y[i])));
}

#[inline(always)]
fn map3(m: &mut [Lanes], d: usize, [a, b, c]: [usize; 3], f: impl Fn(f64, f64, f64) -> f64) {
    let (x, y, z) = (lanes(m, a), lanes(m, b), lanes(m, c));
    put(m, d, std::array::from_fn(|i| f(x[i], y[i], z[i])));
}

#[inline(always)]
fn map4(
    m: &mut [Lanes],
    d: usize,
    [a, b, c, e]: [usize; 4],
    f: impl Fn(f64, f64, f64, f64) -> f64,
) {
    let (x, y, z, w) = (lanes(m, a), lanes(m, b), lanes(m, c), lanes(m, e));
    put(m, d, std::array::from_fn(|i| f(x[i], y[i], z[i], w[i])));
}
