//! Compilation by shape: groups of outputs that are the same expression up to their
//! leaves are differentiated and scheduled once.
//!
//! A large assembly holds thousands of joints of a few kinds, and the rows of one joint
//! (a revolute's five, say) form the same DAG for every joint of that kind laid out
//! alike; only the unknowns they read and the constants they hold (marker offsets)
//! differ. Differentiating, hashing and scheduling the same nodes 10,000 times was most
//! of the time from file to answer. Here a group of outputs (one joint's rows, as the
//! caller says) is first reduced to its *shape*: its nodes in post-order with children as
//! positions in that list and leaves numbered by first appearance (the `k`-th unknown,
//! the `k`-th parameter, the `k`-th constant). Small integers and halves stay literal
//! constants of the shape (they come from the formulas: `2`, `-1`, `0.5`); other
//! constants become leaves, so joints whose markers sit at different offsets share one
//! shape. Each distinct shape is compiled once, in a small graph of its own, into a
//! [`Template`] (kept in the graph and in a process-wide cache, so a rebuilt assembly
//! finds its shapes compiled): its symbolic Jacobian with respect to its unknowns, and its two
//! instruction streams. Each group is then an *instance*: the template's instructions
//! copied with loads redirected to the group's own unknowns, parameters and constants
//! and stores to its rows' output cells, or, for a template with many instances, only
//! those loads and cells, the template's streams run over the instances side by side
//! (module `batch`).
//!
//! The price is sharing between groups: a subexpression used by two joints (a part's
//! rotation matrix) is computed by each. The gain is that compilation costs one walk of
//! each group's nodes plus a copy of its template's instructions.
//!
//! Architecture invariant: an instance computes the same values as compiling its rows
//! directly, with the same operations in the same order, except that constant leaves
//! are loaded where the direct compile may have folded products of constants made while
//! differentiating (the same value to rounding). Groups holding spline nodes are not
//! shaped (their tables are operands outside the node) and are compiled directly.

use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::compile::{CompiledParts, Form, LocalColumns};
use crate::error::ExprError;
use crate::graph::ExprGraph;
use crate::node::{Binary, ExprId, Node, ParamId, Unary, VarId};
use crate::tape::{narrow_copy, Code, JacobianPattern, Op, Stream};

mod walk;

/// Marks a shape's parameter leaf as a constant leaf (the low bits number it).
const CONSTANT_LEAF: u32 = 1 << 31;

/// Largest integer kept as a literal constant of a shape.
const LITERAL_INTEGER: f64 = 16.0;

/// Whether a constant is part of a shape (a number from a formula) rather than a leaf
/// (a number from the model: an offset, a length).
fn is_literal(bits: u64) -> bool {
    let v = f64::from_bits(bits);
    (v.trunc() == v && v.abs() <= LITERAL_INTEGER) || v.abs() == 0.5
}

/// A group's shape: its nodes in post-order, children and leaves numbered locally (a
/// parameter leaf with [`CONSTANT_LEAF`] set is the group's `k`-th constant), and the
/// positions of its outputs.
///
/// Its hash is worked out once: the nodes' part as the walk lists them, then the roots
/// ([`ShapeKey::seal_with`]; [`ShapeKey::seal`] works out the same from the list). A
/// key is looked up in the graph's templates and in the process's, and inserted in the
/// graph's, and each of those had hashed every node again (a fifteenth of a small
/// file's build).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ShapeKey {
    /// The nodes, each packed into one word ([`pack`]): keys are compared as lists of
    /// words, which the library compares as bytes.
    nodes: Vec<u64>,
    roots: Vec<u32>,
    /// Whether the template holds the Jacobian with respect to its unknowns (else values
    /// only).
    jacobian: bool,
    /// The hash of the fields above, set by [`ShapeKey::seal`] (equal keys have equal
    /// hashes: it is a function of them).
    hash: u64,
}

impl std::hash::Hash for ShapeKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl ShapeKey {
    /// Sets the hash from the nodes, roots and `jacobian` (after they are all set).
    fn seal(&mut self) {
        let nodes = self.nodes.iter().fold(0, |h, &w| mix(h, w));
        self.seal_with(nodes);
    }

    /// [`seal`](Self::seal) where the nodes' part of the hash (their words [`mix`]ed in
    /// order from 0) was worked out as they were listed.
    fn seal_with(&mut self, nodes: u64) {
        let roots = self.roots.iter().fold(nodes, |h, &r| mix(h, u64::from(r)));
        self.hash = mix(
            mix(roots, self.roots.len() as u64),
            u64::from(self.jacobian),
        );
    }
}

/// One step of the shape hash (the multiply-rotate of FxHash): `h` with `word` mixed in.
#[inline(always)]
fn mix(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

/// Bits of a packed shape node's tag (the top three).
const TAG_SHIFT: u32 = 61;
/// A literal constant's low bits, zero for every literal (small integers and halves use
/// the top dozen bits of the mantissa at most), so the packed word keeps the rest.
const LITERAL_LOW_BITS: u32 = 40;
/// Bits of each operand position of a packed binary node (a group of more nodes than
/// this counts to is not shaped, and compiles the usual way).
const OPERAND_BITS: u32 = 27;
/// Bits of the operand position of a packed integer power.
const POWI_OPERAND_BITS: u32 = 29;

/// A shape node packed into one word without loss: its tag in the top three bits, then
/// its operation and operands (positions in the shape), leaf number or literal value.
/// `None` for a node no word holds: a spline, or an operand past [`OPERAND_BITS`]
/// (positions that far into one group), or a constant that is not a literal. The word is
/// also what the shape's hash mixes in.
#[inline(always)]
fn pack(node: Node) -> Option<u64> {
    let fits = |e: ExprId, bits: u32| (u64::from(e.0) >> bits == 0).then_some(u64::from(e.0));
    let tag = |t: u64| t << TAG_SHIFT;
    Some(match node {
        Node::Const(bits) => {
            let bits = bits.bits();
            if !is_literal(bits) || bits & ((1 << LITERAL_LOW_BITS) - 1) != 0 {
                return None;
            }
            tag(0) | bits >> LITERAL_LOW_BITS
        }
        Node::Var(v) => tag(1) | u64::from(v.0),
        Node::Param(p) => tag(2) | u64::from(p.0),
        Node::Unary(op, a) => tag(3) | (op as u64) << 32 | u64::from(a.0),
        Node::Binary(op, a, b) => {
            tag(4)
                | (op as u64) << (2 * OPERAND_BITS)
                | fits(a, OPERAND_BITS)? << OPERAND_BITS
                | fits(b, OPERAND_BITS)?
        }
        Node::Powi(a, k) => {
            tag(5) | u64::from(k as u32) << POWI_OPERAND_BITS | fits(a, POWI_OPERAND_BITS)?
        }
        Node::Spline(..) => return None,
    })
}

/// The node [`pack`] made `word` from (a word it does not make, which no key holds, as
/// the constant 0).
fn unpack(word: u64) -> Node {
    unpack_checked(word).unwrap_or(Node::Const(crate::node::ConstBits::of(0.0)))
}

/// [`unpack`], `None` for a word [`pack`] does not make.
fn unpack_checked(word: u64) -> Option<Node> {
    let low = |bits: u32| word & ((1 << bits) - 1);
    let id = |x: u64| ExprId(x as u32);
    Some(match word >> TAG_SHIFT {
        0 => Node::Const(crate::node::ConstBits::of(f64::from_bits(
            low(TAG_SHIFT) << LITERAL_LOW_BITS,
        ))),
        1 => Node::Var(VarId(low(32) as u32)),
        2 => Node::Param(ParamId(low(32) as u32)),
        3 => Node::Unary(*UNARY.get(low(TAG_SHIFT) as usize >> 32)?, id(low(32))),
        4 => Node::Binary(
            *BINARY.get((low(TAG_SHIFT) >> (2 * OPERAND_BITS)) as usize)?,
            id(low(2 * OPERAND_BITS) >> OPERAND_BITS),
            id(low(OPERAND_BITS)),
        ),
        5 => Node::Powi(
            id(low(POWI_OPERAND_BITS)),
            (low(TAG_SHIFT) >> POWI_OPERAND_BITS) as u32 as i32,
        ),
        _ => return None,
    })
}

/// Every unary operation, at its number (`op as u64`).
const UNARY: [Unary; 11] = [
    Unary::Neg,
    Unary::Sqrt,
    Unary::Sin,
    Unary::Cos,
    Unary::Tan,
    Unary::Asin,
    Unary::Acos,
    Unary::Exp,
    Unary::Ln,
    Unary::Abs,
    Unary::Sign,
];

/// Every binary operation, at its number (`op as u64`).
const BINARY: [Binary; 8] = [
    Binary::Add,
    Binary::Sub,
    Binary::Mul,
    Binary::Div,
    Binary::Pow,
    Binary::Atan2,
    Binary::Min,
    Binary::Max,
];

/// A group's own leaves, in the order its shape numbers them; also the leaves of many
/// groups end to end (a compile's instances hold ranges of one such list).
#[derive(Clone, Debug, Default)]
pub(crate) struct Leaves {
    pub(crate) vars: Vec<VarId>,
    params: Vec<ParamId>,
    consts: Vec<u64>,
}

/// Where one group's leaves are in a [`Leaves`] holding many groups' (start and end of
/// each list).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LeafRanges {
    pub(crate) vars: (u32, u32),
    params: (u32, u32),
    consts: (u32, u32),
}

impl Leaves {
    pub(crate) fn clear(&mut self) {
        self.vars.clear();
        self.params.clear();
        self.consts.clear();
    }

    /// Bytes of room held by the lists.
    pub(crate) fn capacity_bytes(&self) -> usize {
        (self.vars.capacity() + self.params.capacity()) * 4 + self.consts.capacity() * 8
    }

    /// Room for `groups` more groups with as many leaves as the one at `r`.
    pub(crate) fn reserve(&mut self, groups: usize, r: LeafRanges) {
        let count = |(a, b): (u32, u32)| {
            groups
                .saturating_mul((b - a) as usize)
                .min(crate::compile::RESERVE_CAP)
        };
        self.vars.reserve(count(r.vars));
        self.params.reserve(count(r.params));
        self.consts.reserve(count(r.consts));
    }

    /// The unknowns, parameters and constants of the group at `r`.
    pub(crate) fn vars_at(&self, r: LeafRanges) -> &[VarId] {
        range_of(&self.vars, r.vars)
    }

    pub(crate) fn params_at(&self, r: LeafRanges) -> &[ParamId] {
        range_of(&self.params, r.params)
    }

    pub(crate) fn consts_at(&self, r: LeafRanges) -> &[u64] {
        range_of(&self.consts, r.consts)
    }

    /// Appends `group`'s leaves; where they are.
    fn append(&mut self, group: &Leaves) -> LeafRanges {
        fn push<T: Copy>(list: &mut Vec<T>, more: &[T]) -> (u32, u32) {
            let start = list.len() as u32;
            list.extend_from_slice(more);
            (start, list.len() as u32)
        }
        LeafRanges {
            vars: push(&mut self.vars, &group.vars),
            params: push(&mut self.params, &group.params),
            consts: push(&mut self.consts, &group.consts),
        }
    }
}

/// Entries `range` of `list` (empty where out of range).
pub(crate) fn range_of<T>(list: &[T], (start, end): (u32, u32)) -> &[T] {
    list.get(start as usize..end as usize).unwrap_or(&[])
}

/// A shape compiled once: its Jacobian pattern over its unknowns (column `k` is its
/// `k`-th unknown; no columns for a template of values only) and its parts, with outputs in cells as a tape's (0 scratch,
/// `1..=rows` its outputs, then its Jacobian entries in pattern order).
#[derive(Clone, Debug)]
pub(crate) struct Template {
    pub(crate) parts: CompiledParts,
    /// Its streams with `u16` slots, for instances copied into narrow streams (the
    /// usual case), when they fit.
    pub(crate) narrow: Option<NarrowCopy>,
    /// Number of real parameters among its parameter leaves (constant leaves follow).
    params: usize,
    /// The shape it was compiled from (the caches find templates by it).
    key: ShapeKey,
}

/// A template found by its shape: hashed and compared as its key, so the caches hold
/// the template alone (no copy of its key beside it) and a look-up borrows the key.
#[derive(Clone, Debug)]
struct ByShape(Arc<Template>);

impl std::hash::Hash for ByShape {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.key.hash(state);
    }
}

impl PartialEq for ByShape {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for ByShape {}

impl std::borrow::Borrow<ShapeKey> for ByShape {
    fn borrow(&self) -> &ShapeKey {
        &self.0.key
    }
}

impl Template {
    pub(crate) fn pattern(&self) -> &JacobianPattern {
        &self.parts.pattern
    }
}

/// A template's residual and full streams with `u16` slots, and in each the positions
/// of the instructions an instance changes: its loads (redirected to the instance's
/// leaves) and its stores (moved to the instance's cells). An instance is the stream
/// copied whole, then those patched.
#[derive(Clone, Debug)]
pub(crate) struct NarrowCopy {
    pub(crate) residual: Stream<u16>,
    pub(crate) full: Stream<u16>,
    pub(crate) patched: [Vec<u32>; 2],
}

impl NarrowCopy {
    fn of(parts: &CompiledParts) -> Option<NarrowCopy> {
        let narrow = |code: &Code| match code {
            Code::Narrow(s) => Some(s.clone()),
            Code::Wide(s) => narrow_copy(s),
        };
        let patched = |s: &Stream<u16>| {
            s.instrs
                .iter()
                .enumerate()
                .filter(|(_, i)| i.out != 0 || i.op.is_load())
                .map(|(k, _)| k as u32)
                .collect()
        };
        let (residual, full) = (narrow(&parts.residual)?, narrow(&parts.full)?);
        let patched = [patched(&residual), patched(&full)];
        Some(NarrowCopy {
            residual,
            full,
            patched,
        })
    }
}

/// Scratch for shape walks, kept in the graph between compiles: per node, the walk that
/// last reached it (`stamp`) and its position in that walk's shape; the last walk's
/// shape, leaves and stack (a shape found in the templates costs no allocation).
#[derive(Clone, Debug, Default)]
pub(crate) struct ShapeScratch {
    seen: Vec<(u32, u32)>,
    stamp: u32,
    key: ShapeKey,
    leaves: Leaves,
    stack: Vec<(ExprId, bool)>,
    /// The nodes' part of the shape hash, when the walk worked it out as it went.
    nodes_hash: Option<u64>,
}

impl ShapeScratch {
    /// Nodes the per-node list has room for.
    pub(crate) fn nodes(&self) -> usize {
        self.seen.len()
    }
}

/// Templates a graph uses, by shape (each also in the process-wide [`SHARED`] cache
/// while it has room).
#[derive(Clone, Debug, Default)]
pub(crate) struct Templates {
    /// Each template with its number in `list`.
    index: FxHashMap<ByShape, u32>,
    list: Vec<Arc<Template>>,
}

impl Templates {
    pub(crate) fn get(&self, k: u32) -> Option<&Template> {
        self.list.get(k as usize).map(|t| &**t)
    }

    /// Template `k`, shared.
    pub(crate) fn shared(&self, k: u32) -> Option<Arc<Template>> {
        self.list.get(k as usize).cloned()
    }

    /// Number of templates.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}

/// Nodes of a group the shape scratch has room for at first (it grows past that like
/// any list).
const GROUP_ROOM: usize = 256;

/// Templates a graph has room for at first (a joint type and layout each; a small
/// assembly has a handful).
const TEMPLATE_ROOM: usize = 16;

/// Most templates the process-wide cache keeps (a template is a few kilobytes; shapes
/// come from joint types and how their markers are laid out, so real assemblies have
/// tens of them).
const SHARED_TEMPLATES: usize = 2048;

/// Templates shared by every graph of the process: a CAD host rebuilds its assembly at
/// every edit, and the rebuilt joints have the shapes of the last build. A template is
/// a function of its shape alone, so whether it came from here or was compiled afresh,
/// the tape is the same.
static SHARED: std::sync::OnceLock<Mutex<FxHashSet<ByShape>>> = std::sync::OnceLock::new();

fn shared() -> &'static Mutex<FxHashSet<ByShape>> {
    SHARED.get_or_init(|| Mutex::new(FxHashSet::default()))
}

impl ExprGraph {
    /// The template of the group `roots` (compiled if its shape is new) and where its
    /// leaves were appended to `pool`; `None` when it cannot be shaped (it holds a
    /// spline).
    pub(crate) fn shaped_group(
        &mut self,
        roots: &[ExprId],
        jacobian: bool,
        pool: &mut Leaves,
    ) -> Result<Option<(u32, LeafRanges)>, ExprError> {
        let mut scratch = std::mem::take(&mut self.shape_scratch);
        let found = if self.walk_shape(roots, &mut scratch) {
            scratch.key.jacobian = jacobian;
            match scratch.nodes_hash {
                Some(nodes) => scratch.key.seal_with(nodes),
                None => scratch.key.seal(),
            }
            self.template_for(&scratch.key, &scratch.leaves)
                .map(|t| Some((t, pool.append(&scratch.leaves))))
        } else {
            Ok(None)
        };
        self.shape_scratch = scratch;
        found
    }

    /// The template of `key` (whose leaves are `leaves`): this graph's, the process's,
    /// or compiled now.
    pub(crate) fn template_for(
        &mut self,
        key: &ShapeKey,
        leaves: &Leaves,
    ) -> Result<u32, ExprError> {
        if let Some(&k) = self.templates.index.get(key) {
            return Ok(k);
        }
        // A poisoned lock only means another thread panicked while holding it; the map
        // itself is whole (entries are inserted whole), so it is used as it is.
        let cached = shared()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .map(|t| Arc::clone(&t.0));
        let template = match cached {
            Some(t) => t,
            None => {
                let t = Arc::new(compile_template(key, leaves)?);
                let mut set = shared().lock().unwrap_or_else(|e| e.into_inner());
                if set.len() < SHARED_TEMPLATES {
                    set.insert(ByShape(Arc::clone(&t)));
                }
                t
            }
        };
        let k = self.templates.list.len() as u32;
        if k == 0 {
            self.templates.list.reserve(TEMPLATE_ROOM);
            self.templates.index.reserve(TEMPLATE_ROOM);
        }
        self.templates.list.push(Arc::clone(&template));
        self.templates.index.insert(ByShape(template), k);
        Ok(k)
    }
}

/// Rebuilds a shape in a graph of its own (nodes as they are, no simplification, so the
/// instructions are those of the original) and compiles it over its unknowns.
fn compile_template(key: &ShapeKey, leaves: &Leaves) -> Result<Template, ExprError> {
    let mut g = ExprGraph::new();
    let vars: Vec<VarId> = (0..leaves.vars.len())
        .map(|k| g.new_var(format!("u{k}")))
        .collect();
    let real = leaves.params.len();
    let params: Vec<ParamId> = (0..real + leaves.consts.len())
        .map(|k| g.new_param(format!("p{k}")))
        .collect();
    let mut ids: Vec<ExprId> = Vec::with_capacity(key.nodes.len());
    let id = |ids: &[ExprId], e: ExprId| ids.get(e.index()).copied().unwrap_or(ExprId(0));
    for &word in &key.nodes {
        let node = unpack(word);
        let e = match node {
            Node::Var(v) => g.var(vars[v.index()]),
            Node::Param(p) if p.0 & CONSTANT_LEAF != 0 => {
                g.param(params[real + (p.0 & !CONSTANT_LEAF) as usize])
            }
            Node::Param(p) => g.param(params[p.index()]),
            Node::Const(_) => g.intern(node),
            Node::Unary(op, a) => g.intern(Node::Unary(op, id(&ids, a))),
            Node::Binary(op, a, b) => g.intern(Node::Binary(op, id(&ids, a), id(&ids, b))),
            Node::Powi(a, k) => g.intern(Node::Powi(id(&ids, a), k)),
            Node::Spline(..) => ExprId(0),
        };
        ids.push(e);
    }
    let outputs: Vec<ExprId> = key.roots.iter().map(|&r| id(&ids, ExprId(r))).collect();
    // Either way the template reads its `k`-th unknown at `k`: as a local column, or at
    // its index in this graph.
    let parts = if key.jacobian {
        let columns = LocalColumns::new(&vars)?;
        g.compile_parts(&outputs, &columns, Form::LOCAL, None)?
    } else {
        let columns = LocalColumns::new(&[])?;
        g.compile_parts(&outputs, &columns, Form::default(), None)?
    };
    Ok(Template {
        narrow: NarrowCopy::of(&parts),
        parts,
        params: real,
        key: key.clone(),
    })
}

/// Where an instance's loads and stores go, for copying its template's instructions.
pub(crate) struct InstanceMap<'a> {
    /// The index each of its unknowns is read at (column or global index).
    pub(crate) var_index: &'a [u32],
    /// Its parameter and constant leaves.
    pub(crate) params: &'a [ParamId],
    pub(crate) consts: &'a [u64],
    /// Output cell of its first row.
    pub(crate) first_cell: u32,
    /// Output cell of each of its template's Jacobian entries.
    pub(crate) entry_cells: &'a [u32],
}

impl InstanceMap<'_> {
    /// The cell of the template's output cell `c`.
    pub(crate) fn cell(&self, template: &Template, c: u32) -> u32 {
        let rows = template.parts.pattern.rows as u32;
        if c == 0 {
            0
        } else if c <= rows {
            self.first_cell + c - 1
        } else {
            self.entry_cells
                .get((c - 1 - rows) as usize)
                .copied()
                .unwrap_or(0)
        }
    }

    /// What a template load of `op` at `index` becomes: the operation and index in the
    /// compiled tape (`const_index` interns a constant's bits in its pool).
    pub(crate) fn load(
        &self,
        template: &Template,
        op: Op,
        index: u32,
        const_index: &mut dyn FnMut(u64) -> u32,
    ) -> (Op, u32) {
        let k = index as usize;
        match op {
            Op::LoadVar => (Op::LoadVar, self.var_index.get(k).copied().unwrap_or(0)),
            Op::LoadParam if k < template.params => {
                (Op::LoadParam, self.params.get(k).map_or(0, |p| p.0))
            }
            Op::LoadParam => {
                let bits = self.consts.get(k - template.params).copied().unwrap_or(0);
                (Op::LoadConst, const_index(bits))
            }
            Op::LoadConst => {
                let bits = template.parts.consts.get(k).map_or(0, |c| c.to_bits());
                (Op::LoadConst, const_index(bits))
            }
            _ => (op, index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::ConstBits;

    /// Every node a shape holds packs into a word that unpacks to it, distinct nodes into
    /// distinct words; what no word holds (a spline, a constant that is no literal, an
    /// operand past the bits) does not pack.
    #[test]
    fn shape_nodes_pack_into_words_without_loss() {
        let limit = ExprId((1 << OPERAND_BITS) - 1);
        let powi_limit = ExprId((1 << POWI_OPERAND_BITS) - 1);
        let mut nodes = Vec::new();
        for v in [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -7.0, 16.0, -16.0] {
            nodes.push(Node::Const(ConstBits::of(v)));
        }
        for k in [0, 1, 17, u32::MAX >> 1, u32::MAX] {
            nodes.push(Node::Var(VarId(k)));
            nodes.push(Node::Param(ParamId(k)));
            nodes.push(Node::Param(ParamId(CONSTANT_LEAF | (k & !CONSTANT_LEAF))));
        }
        for op in UNARY {
            for a in [ExprId(0), ExprId(5), ExprId(u32::MAX)] {
                nodes.push(Node::Unary(op, a));
            }
        }
        for op in BINARY {
            for (a, b) in [(0, 0), (1, 0), (0, 1), (3, 9), (limit.0, 0), (0, limit.0)] {
                nodes.push(Node::Binary(op, ExprId(a), ExprId(b)));
            }
            nodes.push(Node::Binary(op, limit, limit));
        }
        for k in [i32::MIN, -3, -1, 0, 1, 2, 7, i32::MAX] {
            for a in [ExprId(0), ExprId(11), powi_limit] {
                nodes.push(Node::Powi(a, k));
            }
        }
        let words: Vec<u64> = nodes
            .iter()
            .map(|&n| pack(n).unwrap_or_else(|| panic!("{n:?} does not pack")))
            .collect();
        for (&n, &w) in nodes.iter().zip(&words) {
            assert_eq!(unpack_checked(w), Some(n), "{n:?}");
            assert_eq!(unpack(w), n);
        }
        let distinct_nodes: std::collections::HashSet<Node> = nodes.iter().copied().collect();
        let distinct_words: std::collections::HashSet<u64> = words.iter().copied().collect();
        assert_eq!(distinct_words.len(), distinct_nodes.len());
        let past = ExprId(1 << OPERAND_BITS);
        for n in [
            Node::Const(ConstBits::of(0.3)),
            Node::Const(ConstBits::of(17.0)),
            Node::Binary(Binary::Add, past, ExprId(0)),
            Node::Binary(Binary::Mul, ExprId(0), past),
            Node::Powi(ExprId(1 << POWI_OPERAND_BITS), 2),
            Node::Spline(crate::node::SplineId(0), ExprId(0), 0),
        ] {
            assert_eq!(pack(n), None, "{n:?}");
        }
        // Every operation's number is its place in the tables.
        for (k, op) in UNARY.iter().enumerate() {
            assert_eq!(*op as usize, k);
        }
        for (k, op) in BINARY.iter().enumerate() {
            assert_eq!(*op as usize, k);
        }
    }
}
