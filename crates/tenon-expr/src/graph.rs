//! The hash-consed arena: every node is created through a builder method that first
//! simplifies, then looks the node up, so building the same expression twice yields the
//! same [`ExprId`].
//!
//! Architecture invariant: a node's children have smaller ids than the node. Ascending
//! id order is therefore a topological order, which the tape compiler and the reference
//! evaluator rely on.
//!
//! Simplification rules (applied on construction, never afterwards):
//! - constant folding of every operation whose operands are all constants;
//! - identities `x+0`, `x-0`, `0-x = -x`, `x-x = 0`, `x*0 = 0`, `x*1`, `x*(-1) = -x`,
//!   `x/1`, `0/x = 0`, `x/x = 1`, `--x = x`, `-(a-b) = b-a`, `x+(-y) = x-y`,
//!   `x-(-y) = x+y`, `(-x)-y = -(x+y)`, `(-x)*y = -(x*y)`, `(-c)*x = -(c*x)` for a
//!   constant `c > 0` (constant factors stay positive), `x*x = x^2`, `x+x = 2*x`, `c1*(c2*x) = (c1 c2) x`,
//!   `(x^m)^n = x^(mn)`, `x^0 = 1`, `x^1 = x`, `sqrt(x^2) = |x|`, `| -x | = |x|`,
//!   `cos(-x) = cos x`, `sin(-x) = -sin x`, `min(x,x) = x`, `max(x,x) = x`;
//! - commutative operations store their operands in a canonical order (constant first,
//!   then by id), so `a+b` and `b+a` are one node.
//!
//! `x*0 = 0`, `0/x = 0` and `x/x = 1` assume finite, non-zero operands where that matters;
//! they are the usual algebra of symbolic systems and keep derivative trees small.

use std::borrow::Cow;
use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::node::{powi, Binary, ConstBits, ExprId, Node, ParamId, Unary, VarId};
use crate::spline::SplineTables;
use crate::table::{NodeTable, Probe};

/// The expression arena. See the module documentation for the simplification rules.
#[derive(Debug, Clone)]
pub struct ExprGraph {
    nodes: Vec<Node>,
    /// Per node: its variables' mask and its places in the lists of nodes kept with
    /// their newest child ([`NodeLinks`]); one list beside `nodes`, so that a node made
    /// is two pushes, not four.
    links: Vec<NodeLinks>,
    /// Hash-consing: node ids with 32 bits of their hashes (module `table`), except
    /// those kept with their newest child (see [`intern`](Self::intern)).
    lookup: NodeTable,
    /// Per unknown: its node ([`NO_NODE`]: not made yet). Unknowns are numbered one
    /// after another, so their nodes are found by index: a 10,000-part build made 70,000
    /// of them, each an insert at a random place of the table.
    var_nodes: Vec<u32>,
    var_names: Vec<VarName>,
    /// The shared first parts of names made by [`new_vars_of`](Self::new_vars_of).
    name_bases: Vec<String>,
    param_names: Vec<String>,
    param_by_name: FxHashMap<String, ParamId>,
    pub(crate) deriv_memo: FxHashMap<(ExprId, crate::deriv::Wrt), ExprId>,
    /// Coefficient tables of spline nodes.
    pub(crate) splines: SplineTables,
    /// Directions registered for forward directional derivatives.
    pub(crate) directions: Vec<crate::deriv::Direction>,
    zero: ExprId,
    one: ExprId,
    /// Per node, the last [`vars_of_marked`](Self::vars_of_marked) walk that reached it
    /// (`marks_stamp`): a visited set without hashing, kept between walks.
    marks: Vec<u32>,
    marks_stamp: u32,
    /// The stack of those walks, kept between them.
    marks_stack: Vec<ExprId>,
    /// Per-node scratch of shape walks (module `shape`).
    pub(crate) shape_scratch: crate::shape::ShapeScratch,
    /// Templates compiled so far, by shape (module `shape`).
    pub(crate) templates: crate::shape::Templates,
    /// Lists a compile fills and empties, kept between compiles (module `compile`).
    pub(crate) compile_scratch: crate::compile::CompileScratch,
}

/// The scratch lists of a graph's walks and compiles, handed on from a graph dropped to
/// the next one made on the same thread: a CAD host rebuilds its assembly at every edit,
/// and a small build had allocated them anew each time (some twenty allocations, and
/// per-node lists zeroed). They hold nothing a walk reads before writing: the per-node
/// marks carry the stamp of the walk that set them, and the stamp goes on counting from
/// the last graph's, so a mark left by that graph is never taken for a new one.
struct Recycled {
    marks: Vec<u32>,
    marks_stamp: u32,
    marks_stack: Vec<ExprId>,
    shape: crate::shape::ShapeScratch,
    compile: crate::compile::CompileScratch,
}

/// Most nodes a graph may have had for its scratch to be handed on (larger lists are
/// freed: a large build's allocations are a small part of it, and a thread should not
/// hold megabytes for the next small one).
const RECYCLED_NODES: usize = 1 << 14;

/// Most scratch sets a thread keeps for graphs to come.
const RECYCLED_KEPT: usize = 4;

thread_local! {
    /// A few, on the heap: a thread-local slot holding the lists themselves took
    /// so much of the static thread-local block that the Python module (a library loaded
    /// into a running process, whose thread locals must fit in what is left of that
    /// block) could no longer be loaded.
    static RECYCLED: std::cell::RefCell<Vec<Recycled>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Recycled {
    fn take() -> Option<Recycled> {
        RECYCLED
            .try_with(|r| r.try_borrow_mut().ok().and_then(|mut r| r.pop()))
            .ok()
            .flatten()
    }

    /// Kept for the next graph made (the last kept is the first taken; a thread that
    /// drops several graphs, a host holding several mechanisms, keeps a set for each),
    /// unless [`RECYCLED_KEPT`] are kept already. The list keeps its room: no allocation
    /// once it has grown.
    fn give(self) {
        // (A thread being torn down has no slot left: the lists are then freed.)
        let _ = RECYCLED.try_with(|r| {
            if let Ok(mut r) = r.try_borrow_mut() {
                if r.len() < RECYCLED_KEPT {
                    r.push(self);
                }
            }
        });
    }
}

impl Drop for ExprGraph {
    fn drop(&mut self) {
        // (Every list of the shape scratch holds at most one entry a node.)
        if self.marks.len() > RECYCLED_NODES || self.shape_scratch.nodes() > RECYCLED_NODES {
            return;
        }
        let recycled = Recycled {
            marks: std::mem::take(&mut self.marks),
            marks_stamp: self.marks_stamp,
            marks_stack: std::mem::take(&mut self.marks_stack),
            shape: std::mem::take(&mut self.shape_scratch),
            compile: std::mem::take(&mut self.compile_scratch),
        };
        recycled.give();
    }
}

impl Default for ExprGraph {
    fn default() -> Self {
        Self::new()
    }
}

/// An unknown's display name: its own, or a shared base and a member (`part.px`).
#[derive(Debug, Clone)]
enum VarName {
    Own(String),
    Member(u32, &'static str),
}

/// No node is built over this one yet (see [`ExprGraph::intern`]); the end of a list.
const NO_PARENT: u32 = u32::MAX;

/// An unknown whose node is not made yet (in `var_nodes`).
const NO_NODE: u32 = u32::MAX;

/// Most nodes kept with their newest child (see [`ExprGraph::intern`]); further ones
/// go into the hash table.
const SIBLINGS: usize = 8;

/// Largest integer exponent kept as `powi`; larger ones are `pow` with a constant
/// exponent (their results overflow or underflow anyway).
pub(crate) const MAX_POWI: i32 = 1024;

/// 32 bits of a node's hash, every bit of Fx's hash mixed into them.
///
/// Fx's product has its best-mixed bits at the top, and its `finish` rotates them to the
/// bottom; its high half alone holds the product's middle bits, which depend only on the
/// low bits of what was hashed last. Constants that differ only in their high bits (the
/// integer coordinates 100000 and 100100 as doubles, whose low 32 bits are zero) then
/// had one hash between them, and a large far-off assembly's lookups ran through
/// clusters of thousands of them. A multiplicative mix of the whole word spreads every
/// bit over the high half taken here.
#[inline]
fn node_hash(node: &Node) -> u32 {
    let h = FxBuildHasher.hash_one(node);
    ((h ^ (h >> 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
}

/// The constant `x ^ y` folds to (in [`ExprGraph::pow`] and in `ParsedExpr::evaluate`):
/// an integer exponent as `powi`, `0.5` as a square root, any other as `powf`.
pub(crate) fn pow_value(x: f64, y: f64) -> f64 {
    if y.fract() == 0.0 && y.abs() <= f64::from(MAX_POWI) {
        match y as i32 {
            0 => 1.0,
            1 => x,
            n => powi(x, n),
        }
    } else if y == 0.5 {
        Unary::Sqrt.apply(x)
    } else {
        x.powf(y)
    }
}

/// A Bloom mask of unknowns: bit `v % 32` for each unknown `v` below a node. A
/// joint's equations read two parts' fourteen unknowns, numbered one after another, so
/// 32 bits tell them apart as 64 did, at half the memory a node.
pub(crate) type VarMask = u32;

/// What the arena keeps per node besides the node.
#[derive(Debug, Clone, Copy)]
struct NodeLinks {
    /// A 32-bit Bloom mask of the variables the node depends on ([`VarMask`]). A
    /// clear bit proves independence, which lets differentiation skip whole subtrees.
    var_mask: VarMask,
    /// The first node kept with this one as its newest child ([`NO_PARENT`]: none yet),
    /// the head of a list of at most [`SIBLINGS`].
    first_parent: u32,
    /// For a node kept with its newest child: the next node kept with that child.
    next_sibling: u32,
}

#[inline]
pub(crate) fn var_bit(v: VarId) -> VarMask {
    1 << (v.0 % VarMask::BITS)
}

/// Whether commutative operands `a` and `b` (nodes `na`, `nb`) swap places in the
/// canonical order: constants first, then by id.
#[inline(always)]
fn ordered_nodes(a: ExprId, b: ExprId, na: &Node, nb: &Node) -> bool {
    let (ca, cb) = (na.as_const().is_some(), nb.as_const().is_some());
    (cb && !ca) || (ca == cb && b < a)
}

/// `x` of a node `-x`.
#[inline(always)]
fn negated(n: &Node) -> Option<ExprId> {
    match *n {
        Node::Unary(Unary::Neg, x) => Some(x),
        _ => None,
    }
}

impl ExprGraph {
    /// An empty graph (holding the constants 0 and 1).
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty graph with room for about `nodes` nodes (see
    /// [`reserve`](Self::reserve)), made before its first two: a build that reserved
    /// after [`new`](Self::new) grew the lists those two had just made.
    pub fn with_capacity(nodes: usize) -> Self {
        let mut g = ExprGraph {
            nodes: Vec::new(),
            links: Vec::new(),
            lookup: NodeTable::default(),
            var_nodes: Vec::new(),
            var_names: Vec::new(),
            name_bases: Vec::new(),
            param_names: Vec::new(),
            param_by_name: FxHashMap::default(),
            deriv_memo: FxHashMap::default(),
            splines: SplineTables::default(),
            directions: Vec::new(),
            zero: ExprId(0),
            one: ExprId(0),
            marks: Vec::new(),
            marks_stamp: 0,
            marks_stack: Vec::new(),
            shape_scratch: Default::default(),
            templates: Default::default(),
            compile_scratch: Default::default(),
        };
        if let Some(r) = Recycled::take() {
            g.marks = r.marks;
            g.marks_stamp = r.marks_stamp;
            g.marks_stack = r.marks_stack;
            g.shape_scratch = r.shape;
            g.compile_scratch = r.compile;
        }
        if nodes > 0 {
            g.reserve(nodes);
        }
        g.zero = g.intern(Node::Const(ConstBits::of(0.0)));
        g.one = g.intern(Node::Const(ConstBits::of(1.0)));
        g
    }

    /// Room for about `nodes` more nodes, so that a large build fills its arena and its
    /// hash-consing table once instead of growing them by doubling (each growth of the
    /// table re-inserts every entry). The arena is given half as much again (room it
    /// does not use is never touched); the table exactly that (its entries land all over
    /// it, so a table larger than its entries need touches memory for nothing).
    pub fn reserve(&mut self, nodes: usize) {
        let room = nodes + nodes / 2;
        self.nodes.reserve(room);
        self.links.reserve(room);
        // Most nodes stay out of the table (see `intern`): it holds constants,
        // parameters and nodes over much-shared children, a twentieth to a tenth of a
        // large build's nodes (measured on chains, ladders and RSSR four-bars, whose
        // builds are asked to reserve some more than they make). Room for a sixteenth: a
        // table sized for every node was 8 MB at 10,000 parts, all of it written when
        // made and its few entries spread over every page.
        self.lookup.reserve(nodes / 16);
    }

    /// Room for `unknowns` more unknowns and their nodes' index (a build knows how many
    /// its parts make: seven each; the list of 70,000 names grown by doubling had been
    /// copied a dozen times).
    pub fn reserve_unknowns(&mut self, unknowns: usize) {
        self.var_names.reserve(unknowns);
        self.var_nodes.reserve(unknowns);
    }

    /// Number of nodes stored (distinct subexpressions, including leaves).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of unknowns created so far.
    pub fn var_count(&self) -> usize {
        self.var_names.len()
    }

    /// Number of parameters created so far.
    pub fn param_count(&self) -> usize {
        self.param_names.len()
    }

    /// The node behind an id.
    ///
    /// Ids from another graph are a caller error; an out-of-range id reads as the
    /// constant 0 rather than panicking.
    pub fn node(&self, e: ExprId) -> Node {
        self.nodes
            .get(e.index())
            .copied()
            .unwrap_or(Node::Const(ConstBits::of(0.0)))
    }

    /// The constant value of `e`, if it is a constant.
    pub fn as_const(&self, e: ExprId) -> Option<f64> {
        self.node(e).as_const()
    }

    pub(crate) fn var_mask(&self, e: ExprId) -> VarMask {
        self.links.get(e.index()).map_or(0, |l| l.var_mask)
    }

    /// Name given to an unknown at creation.
    pub fn var_name(&self, v: VarId) -> Cow<'_, str> {
        match self.var_names.get(v.index()) {
            Some(VarName::Own(name)) => Cow::Borrowed(name),
            Some(&VarName::Member(base, member)) => {
                let base = self
                    .name_bases
                    .get(base as usize)
                    .map_or("?", String::as_str);
                Cow::Owned(format!("{base}.{member}"))
            }
            None => Cow::Borrowed("?"),
        }
    }

    /// Name of a parameter.
    pub fn param_name(&self, p: ParamId) -> &str {
        self.param_names.get(p.index()).map_or("?", String::as_str)
    }

    /// The parameter with this name, if one was created.
    pub fn find_param(&self, name: &str) -> Option<ParamId> {
        self.param_by_name.get(name).copied()
    }

    /// The id of `node`, made if the arena does not hold it yet.
    ///
    /// A node with children is looked for first among the nodes kept with its newest
    /// child (the child with the largest id): the first [`SIBLINGS`] nodes built over a
    /// child are listed with it, only later ones and leaves go into the hash table. An
    /// expression of a large build is mostly fresh nodes over fresh nodes (a part's
    /// rotation matrix over its new quaternion, each step of a sum over the one before):
    /// those are found, or known to be new, from the child's short list, written just
    /// before and so in cache, without a probe of the table, whose slots in a
    /// 10,000-part build are spread over megabytes.
    ///
    /// Architecture invariant: a node with operands is in its newest operand's list or,
    /// if that list was full when it was made, in the table; an unknown's node is in
    /// `var_nodes`; any other leaf or a spline node is in the table. So no node is made
    /// twice.
    ///
    /// Inlined into each operation (the look-up in the table is not): called, it took
    /// `node` from memory the caller had just written field by field, in loads wider
    /// than those stores, which wait for them to finish (a quarter of this function's
    /// time in a small file's build).
    #[inline(always)]
    pub(crate) fn intern(&mut self, node: Node) -> ExprId {
        if let Node::Var(v) = node {
            return self.var_node(v);
        }
        let newest = match node {
            Node::Unary(_, a) | Node::Powi(a, _) => Some(a),
            Node::Binary(_, a, b) => Some(a.max(b)),
            _ => None,
        };
        if let Some(c) = newest.filter(|c| c.index() < self.links.len()) {
            // The nodes over `c` kept with it, oldest first.
            let mut last = NO_PARENT;
            let mut next = self.links[c.index()].first_parent;
            let mut held = 0;
            while next != NO_PARENT {
                if self.nodes.get(next as usize) == Some(&node) {
                    return ExprId(next);
                }
                last = next;
                next = self
                    .links
                    .get(next as usize)
                    .map_or(NO_PARENT, |l| l.next_sibling);
                held += 1;
            }
            if held < SIBLINGS {
                // Not among them, and there is room: the node is new (had it been made,
                // it would be here), and is kept with `c`.
                let id = self.push(node);
                match self.links.get_mut(last as usize) {
                    Some(l) => l.next_sibling = id.0,
                    None => self.links[c.index()].first_parent = id.0,
                }
                return id;
            }
        }
        self.intern_in_table(node)
    }

    /// [`intern`](Self::intern) of a node not kept with its newest operand: looked up in
    /// the hash table, and put there if new.
    #[inline(never)]
    fn intern_in_table(&mut self, node: Node) -> ExprId {
        let hash = node_hash(&node);
        let nodes = &self.nodes;
        let at = match self
            .lookup
            .find(hash, |id| nodes.get(id.index()) == Some(&node))
        {
            Probe::Found(id) => return id,
            Probe::Vacant(at) => at,
        };
        let id = self.push(node);
        self.lookup.insert(at, hash, id);
        id
    }

    /// The node of unknown `v`, made if there is none yet (kept in `var_nodes`, not in
    /// the table).
    fn var_node(&mut self, v: VarId) -> ExprId {
        match self.var_nodes.get(v.index()) {
            Some(&id) if id != NO_NODE => ExprId(id),
            _ => {
                let id = self.push(Node::Var(v));
                if self.var_nodes.len() <= v.index() {
                    self.var_nodes.resize(v.index() + 1, NO_NODE);
                }
                self.var_nodes[v.index()] = id.0;
                id
            }
        }
    }

    /// Appends `node` to the arena (not to the table) and returns its id.
    ///
    /// Inlined: called, it took `node` from memory its caller had just written in
    /// narrower pieces, and the load waited for those stores to finish (a third of this
    /// function's time in a small file's build).
    #[inline(always)]
    fn push(&mut self, node: Node) -> ExprId {
        let mask = match node {
            Node::Var(v) => var_bit(v),
            Node::Spline(t, u, _) => self.var_mask(u) | self.splines.mask(t),
            Node::Binary(_, a, b) => self.var_mask(a) | self.var_mask(b),
            Node::Unary(_, a) | Node::Powi(a, _) => self.var_mask(a),
            Node::Const(_) | Node::Param(_) => 0,
        };
        let id = ExprId(self.nodes.len() as u32);
        self.nodes.push(node);
        self.links.push(NodeLinks {
            var_mask: mask,
            first_parent: NO_PARENT,
            next_sibling: NO_PARENT,
        });
        id
    }

    // ----- leaves -----

    /// The constant `value`.
    pub fn constant(&mut self, value: f64) -> ExprId {
        // 0 and 1 (made with the graph, and most of the entries of the rotations of
        // markers and parts) without a look-up in the table.
        match value.to_bits() {
            0 => self.zero,
            bits if bits == 1f64.to_bits() => self.one,
            _ => self.intern(Node::Const(ConstBits::of(value))),
        }
    }

    /// The constant 0.
    pub fn zero(&self) -> ExprId {
        self.zero
    }

    /// The constant 1.
    pub fn one(&self) -> ExprId {
        self.one
    }

    /// Creates a new unknown. Names are for display only and need not be unique.
    pub fn new_var(&mut self, name: impl Into<String>) -> VarId {
        let v = VarId(self.var_names.len() as u32);
        self.var_names.push(VarName::Own(name.into()));
        v
    }

    /// Creates one unknown per member, named `base.member` (the name is formed when it
    /// is asked for: a large assembly makes seven per part).
    pub fn new_vars_of<const N: usize>(
        &mut self,
        base: &str,
        members: [&'static str; N],
    ) -> [VarId; N] {
        let b = self.name_bases.len() as u32;
        self.name_bases.push(base.to_string());
        members.map(|member| {
            let v = VarId(self.var_names.len() as u32);
            self.var_names.push(VarName::Member(b, member));
            v
        })
    }

    /// The expression for unknown `v`.
    pub fn var(&mut self, v: VarId) -> ExprId {
        self.intern(Node::Var(v))
    }

    /// Creates a parameter, or returns the existing one of that name.
    pub fn new_param(&mut self, name: impl Into<String>) -> ParamId {
        let name = name.into();
        if let Some(&p) = self.param_by_name.get(&name) {
            return p;
        }
        let p = ParamId(self.param_names.len() as u32);
        self.param_names.push(name.clone());
        self.param_by_name.insert(name, p);
        p
    }

    /// The expression for parameter `p`.
    pub fn param(&mut self, p: ParamId) -> ExprId {
        self.intern(Node::Param(p))
    }

    // ----- arithmetic -----

    fn is(&self, e: ExprId, value: f64) -> bool {
        self.as_const(e) == Some(value)
    }

    fn neg_inner(&self, e: ExprId) -> Option<ExprId> {
        negated(&self.node(e))
    }

    /// Canonical operand order for commutative operations: constants first, then by id.
    fn ordered(&self, a: ExprId, b: ExprId) -> (ExprId, ExprId) {
        match ordered_nodes(a, b, &self.node(a), &self.node(b)) {
            true => (b, a),
            false => (a, b),
        }
    }

    /// `a + b`
    pub fn add(&mut self, a: ExprId, b: ExprId) -> ExprId {
        // Each operand's node read once, as in `mul`.
        let (na, nb) = (self.node(a), self.node(b));
        let (ca, cb) = (na.as_const(), nb.as_const());
        if let (Some(x), Some(y)) = (ca, cb) {
            return self.constant(x + y);
        }
        if ca == Some(0.0) {
            return b;
        }
        if cb == Some(0.0) {
            return a;
        }
        if let Some(y) = negated(&nb) {
            return self.sub(a, y);
        }
        if let Some(x) = negated(&na) {
            return self.sub(b, x);
        }
        if a == b {
            let two = self.constant(2.0);
            return self.mul(two, a);
        }
        let (a, b) = match ordered_nodes(a, b, &na, &nb) {
            true => (b, a),
            false => (a, b),
        };
        self.intern(Node::Binary(Binary::Add, a, b))
    }

    /// `a - b`
    pub fn sub(&mut self, a: ExprId, b: ExprId) -> ExprId {
        if let (Some(x), Some(y)) = (self.as_const(a), self.as_const(b)) {
            return self.constant(x - y);
        }
        if a == b {
            return self.zero;
        }
        if self.is(b, 0.0) {
            return a;
        }
        if self.is(a, 0.0) {
            return self.neg(b);
        }
        if let Some(y) = self.neg_inner(b) {
            return self.add(a, y);
        }
        if let Some(x) = self.neg_inner(a) {
            // -x - b = -(x + b)
            let s = self.add(x, b);
            return self.neg(s);
        }
        self.intern(Node::Binary(Binary::Sub, a, b))
    }

    /// `a * b`
    pub fn mul(&mut self, a: ExprId, b: ExprId) -> ExprId {
        // Each operand's node read once (the rules below looked at each up to four
        // times, a read with its bounds check each).
        let (na, nb) = (self.node(a), self.node(b));
        let (a, b, na, nb) = match ordered_nodes(a, b, &na, &nb) {
            true => (b, a, nb, na),
            false => (a, b, na, nb),
        };
        if let Some(x) = na.as_const() {
            if let Some(y) = nb.as_const() {
                return self.constant(x * y);
            }
            if x == 0.0 {
                return self.zero;
            }
            if x == 1.0 {
                return b;
            }
            if x < 0.0 {
                // Constant factors are kept positive; the sign becomes a negation, which
                // sums absorb (`a + (-b) = a - b`).
                let pos = self.constant(-x);
                let m = self.mul(pos, b);
                return self.neg(m);
            }
            // c1 * (c2 * x) = (c1 c2) * x
            if let Node::Binary(Binary::Mul, c, rest) = nb {
                if let Some(y) = self.as_const(c) {
                    let cy = self.constant(x * y);
                    return self.mul(cy, rest);
                }
            }
        }
        match (negated(&na), negated(&nb)) {
            (Some(x), Some(y)) => return self.mul(x, y),
            (Some(x), None) => {
                let m = self.mul(x, b);
                return self.neg(m);
            }
            (None, Some(y)) => {
                let m = self.mul(a, y);
                return self.neg(m);
            }
            (None, None) => {}
        }
        if a == b {
            return self.powi(a, 2);
        }
        self.intern(Node::Binary(Binary::Mul, a, b))
    }

    /// `a / b`
    pub fn div(&mut self, a: ExprId, b: ExprId) -> ExprId {
        if let (Some(x), Some(y)) = (self.as_const(a), self.as_const(b)) {
            return self.constant(x / y);
        }
        if self.is(b, 1.0) {
            return a;
        }
        if self.is(b, -1.0) {
            return self.neg(a);
        }
        if self.is(a, 0.0) {
            return self.zero;
        }
        if a == b {
            return self.one;
        }
        if let Some(x) = self.neg_inner(a) {
            let d = self.div(x, b);
            return self.neg(d);
        }
        if let Some(y) = self.neg_inner(b) {
            let d = self.div(a, y);
            return self.neg(d);
        }
        self.intern(Node::Binary(Binary::Div, a, b))
    }

    /// `-a`
    pub fn neg(&mut self, a: ExprId) -> ExprId {
        match self.node(a) {
            Node::Const(bits) => self.constant(-bits.value()),
            Node::Unary(Unary::Neg, x) => x,
            Node::Binary(Binary::Sub, x, y) => self.sub(y, x),
            _ => self.intern(Node::Unary(Unary::Neg, a)),
        }
    }

    /// `a ^ n` for an integer `n`.
    pub fn powi(&mut self, a: ExprId, n: i32) -> ExprId {
        if n == 0 {
            return self.one;
        }
        if n == 1 {
            return a;
        }
        match self.node(a) {
            Node::Const(bits) => return self.constant(powi(bits.value(), n)),
            Node::Powi(x, m) => {
                if let Some(mn) = m.checked_mul(n).filter(|mn| mn.abs() <= MAX_POWI) {
                    return self.powi(x, mn);
                }
            }
            Node::Unary(Unary::Neg, x) if n % 2 == 0 => return self.powi(x, n),
            _ => {}
        }
        if n.abs() > MAX_POWI {
            let e = self.constant(f64::from(n));
            return self.intern(Node::Binary(Binary::Pow, a, e));
        }
        self.intern(Node::Powi(a, n))
    }

    /// `a ^ b`; a constant integer exponent becomes [`powi`](Self::powi), `0.5` a
    /// square root.
    pub fn pow(&mut self, a: ExprId, b: ExprId) -> ExprId {
        if let (Some(x), Some(y)) = (self.as_const(a), self.as_const(b)) {
            return self.constant(pow_value(x, y));
        }
        if let Some(y) = self.as_const(b) {
            if y.fract() == 0.0 && y.abs() <= f64::from(MAX_POWI) {
                return self.powi(a, y as i32);
            }
            if y == 0.5 {
                return self.sqrt(a);
            }
        }
        self.intern(Node::Binary(Binary::Pow, a, b))
    }

    /// Applies a one-argument operation (with folding and the module's rules).
    pub fn unary(&mut self, op: Unary, a: ExprId) -> ExprId {
        let node = self.node(a);
        if let Some(x) = node.as_const() {
            return self.constant(op.apply(x));
        }
        match (op, node) {
            (Unary::Neg, _) => return self.neg(a),
            (Unary::Sqrt, Node::Powi(x, 2)) => return self.unary(Unary::Abs, x),
            (Unary::Abs, Node::Unary(Unary::Neg | Unary::Abs, x)) => {
                return self.unary(Unary::Abs, x)
            }
            (Unary::Abs, Node::Powi(_, n)) if n % 2 == 0 => return a,
            (Unary::Cos, Node::Unary(Unary::Neg, x)) => return self.unary(Unary::Cos, x),
            (Unary::Sin | Unary::Tan | Unary::Asin, Node::Unary(Unary::Neg, x)) => {
                let inner = self.unary(op, x);
                return self.neg(inner);
            }
            (Unary::Sign, Node::Unary(Unary::Sign, _)) => return a,
            _ => {}
        }
        self.intern(Node::Unary(op, a))
    }

    /// Applies a two-argument operation (with folding and the module's rules).
    pub fn binary(&mut self, op: Binary, a: ExprId, b: ExprId) -> ExprId {
        match op {
            Binary::Add => self.add(a, b),
            Binary::Sub => self.sub(a, b),
            Binary::Mul => self.mul(a, b),
            Binary::Div => self.div(a, b),
            Binary::Pow => self.pow(a, b),
            Binary::Atan2 | Binary::Min | Binary::Max => {
                if let (Some(x), Some(y)) = (self.as_const(a), self.as_const(b)) {
                    return self.constant(op.apply(x, y));
                }
                if a == b && op != Binary::Atan2 {
                    return a;
                }
                let (a, b) = if op.is_commutative() {
                    self.ordered(a, b)
                } else {
                    (a, b)
                };
                self.intern(Node::Binary(op, a, b))
            }
        }
    }

    /// `sqrt(a)`
    pub fn sqrt(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Sqrt, a)
    }
    /// `sin(a)` (radians)
    pub fn sin(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Sin, a)
    }
    /// `cos(a)` (radians)
    pub fn cos(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Cos, a)
    }
    /// `tan(a)` (radians)
    pub fn tan(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Tan, a)
    }
    /// `asin(a)` (radians)
    pub fn asin(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Asin, a)
    }
    /// `acos(a)` (radians)
    pub fn acos(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Acos, a)
    }
    /// `exp(a)`
    pub fn exp(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Exp, a)
    }
    /// `ln(a)`
    pub fn ln(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Ln, a)
    }
    /// `|a|`
    pub fn abs(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Abs, a)
    }
    /// `sign(a)`
    pub fn sign(&mut self, a: ExprId) -> ExprId {
        self.unary(Unary::Sign, a)
    }
    /// `atan2(y, x)` (radians)
    pub fn atan2(&mut self, y: ExprId, x: ExprId) -> ExprId {
        self.binary(Binary::Atan2, y, x)
    }
    /// `min(a, b)`
    pub fn min(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(Binary::Min, a, b)
    }
    /// `max(a, b)`
    pub fn max(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.binary(Binary::Max, a, b)
    }

    /// Sum of all terms (0 for none).
    pub fn sum(&mut self, terms: &[ExprId]) -> ExprId {
        terms.iter().fold(self.zero, |acc, &t| self.add(acc, t))
    }

    /// `a * k` for a constant `k`.
    pub fn scale(&mut self, a: ExprId, k: f64) -> ExprId {
        let c = self.constant(k);
        self.mul(c, a)
    }

    /// Dot product of two equally long vectors of expressions (extra entries of the
    /// longer one are ignored).
    pub fn dot(&mut self, a: &[ExprId], b: &[ExprId]) -> ExprId {
        // Products first, then their sum (the order nodes are made in is the order of
        // their ids), without a heap list for the usual 3 or 4 terms.
        let n = a.len().min(b.len());
        if n <= 4 {
            let mut terms = [self.zero; 4];
            for ((t, &x), &y) in terms.iter_mut().zip(a).zip(b) {
                *t = self.mul(x, y);
            }
            return self.sum(&terms[..n]);
        }
        let terms: Vec<ExprId> = a.iter().zip(b).map(|(&x, &y)| self.mul(x, y)).collect();
        self.sum(&terms)
    }

    /// [`vars_of`](Self::vars_of), marking visited nodes in the graph itself instead of a
    /// hash set: the walks of compilation (every equation's, for its Jacobian row and its
    /// cluster) spent most of their time hashing.
    pub fn vars_of_marked(&mut self, e: ExprId) -> Vec<VarId> {
        self.vars_of_marked_all(&[e])
    }

    /// Whether `e` depends on any unknown.
    pub fn has_unknowns(&self, e: ExprId) -> bool {
        self.var_mask(e) != 0
    }

    /// The unknowns below any of `roots`, sorted and de-duplicated: one walk, each node
    /// entered once however many roots share it.
    pub fn vars_of_marked_all(&mut self, roots: &[ExprId]) -> Vec<VarId> {
        let mut out = Vec::with_capacity(16);
        self.vars_of_marked_all_into(roots, &mut out);
        out
    }

    /// [`vars_of_marked_all`](Self::vars_of_marked_all) into `out` (cleared first), for
    /// a caller that walks many groups of roots with one list.
    pub fn vars_of_marked_all_into(&mut self, roots: &[ExprId], out: &mut Vec<VarId>) {
        let mut older = Vec::new();
        self.vars_of_marked_all_before_into(roots, 0, out, &mut older);
    }

    /// [`vars_of_marked_all_into`](Self::vars_of_marked_all_into) with the nodes made
    /// before the first `frontier` left unwalked: each of them below the roots that
    /// depends on an unknown goes into `older` (cleared first; unsorted, possibly
    /// repeated) in place of its unknowns. For a caller that knows what its first nodes
    /// read without reading them: a build knows which part's unknowns each node of its
    /// part frames holds, and at 10,000 parts those nodes were long out of the caches
    /// when the joints' walks came back to them. With a frontier of 0 (or a graph of at
    /// most 32 unknowns, read off the masks) `older` stays empty.
    pub fn vars_of_marked_all_before_into(
        &mut self,
        roots: &[ExprId],
        frontier: usize,
        out: &mut Vec<VarId>,
        older: &mut Vec<ExprId>,
    ) {
        older.clear();
        if self.vars_by_masks(roots, out) {
            return;
        }
        self.marks_stamp = self.marks_stamp.wrapping_add(1);
        if self.marks_stamp == 0 {
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.marks_stamp = 1;
        }
        let stamp = self.marks_stamp;
        let mut marks = std::mem::take(&mut self.marks);
        marks.resize(marks.len().max(self.nodes.len()), 0);
        let mut stack = std::mem::take(&mut self.marks_stack);
        let first_visit = |n: ExprId| match marks.get_mut(n.index()) {
            Some(m) if *m != stamp => {
                *m = stamp;
                true
            }
            _ => false,
        };
        self.walk_vars(roots, &mut stack, first_visit, out, (frontier, older));
        self.marks = marks;
        self.marks_stack = stack;
    }

    /// Per root, whether it depends on parameter `p` (exact, by one walk shared by all
    /// roots: each node is decided once). A derivative with respect to a parameter walks
    /// the whole expression however little of it reads the parameter (parameters have
    /// no masks), so where most roots do not read it (a kinematic run's joint equations
    /// and time) this tells which to differentiate at all.
    pub fn depends_on_param(&self, roots: &[ExprId], p: ParamId) -> Vec<bool> {
        // 0: not decided, 1: on the stack, 2: independent, 3: dependent.
        let mut state = vec![0u8; self.nodes.len()];
        let mut stack: Vec<ExprId> = Vec::new();
        for &root in roots {
            if state.get(root.index()).is_none_or(|&s| s >= 2) {
                continue;
            }
            stack.push(root);
            while let Some(&n) = stack.last() {
                let at = n.index();
                if state[at] == 0 {
                    state[at] = 1;
                    if let Node::Param(q) = self.node(n) {
                        state[at] = if q == p { 3 } else { 2 };
                        stack.pop();
                        continue;
                    }
                    for c in self.children_of(n) {
                        if state.get(c.index()) == Some(&0) {
                            stack.push(c);
                        }
                    }
                    continue;
                }
                stack.pop();
                if state[at] == 1 {
                    let dependent = self
                        .children_of(n)
                        .any(|c| state.get(c.index()) == Some(&3));
                    state[at] = if dependent { 3 } else { 2 };
                }
            }
        }
        roots
            .iter()
            .map(|r| state.get(r.index()) == Some(&3))
            .collect()
    }

    /// Sorted, de-duplicated unknowns that `e` depends on (exact, by traversal).
    pub fn vars_of(&self, e: ExprId) -> Vec<VarId> {
        let mut out = Vec::with_capacity(16);
        if self.vars_by_masks(&[e], &mut out) {
            return out;
        }
        let mut seen = rustc_hash::FxHashSet::default();
        self.walk_vars(
            &[e],
            &mut Vec::new(),
            |n| seen.insert(n),
            &mut out,
            (0, &mut Vec::new()),
        );
        out
    }

    /// The unknowns below `roots` into `out` (cleared first), sorted, read off the roots'
    /// masks without a walk when the graph has at most 32 unknowns: each then has a bit
    /// of its own (bit `v % 32` is bit `v`), and a node's mask, the union of its
    /// operands', holds exactly the unknowns below it. False (and `out` untouched) for a
    /// larger graph. A small assembly's build walked every joint's nodes for this.
    fn vars_by_masks(&self, roots: &[ExprId], out: &mut Vec<VarId>) -> bool {
        if self.var_count() > VarMask::BITS as usize {
            return false;
        }
        out.clear();
        let mut bits = roots.iter().fold(0, |m, &r| m | self.var_mask(r));
        while bits != 0 {
            out.push(VarId(bits.trailing_zeros()));
            bits &= bits - 1;
        }
        true
    }

    /// The unknowns below `roots` into `out` (cleared first), each node entered once
    /// (`first_visit(n)` is false for a node seen before), sorted and de-duplicated;
    /// a node made before `frontier` that depends on an unknown goes into `older`
    /// instead, unwalked (`frontier` 0: none).
    fn walk_vars(
        &self,
        roots: &[ExprId],
        stack: &mut Vec<ExprId>,
        mut first_visit: impl FnMut(ExprId) -> bool,
        out: &mut Vec<VarId>,
        (frontier, older): (usize, &mut Vec<ExprId>),
    ) {
        out.clear();
        stack.clear();
        stack.extend_from_slice(roots);
        while let Some(n) = stack.pop() {
            if self.var_mask(n) == 0 {
                continue;
            }
            if n.index() < frontier {
                older.push(n);
                continue;
            }
            if !first_visit(n) {
                continue;
            }
            // Operands pushed one by one (an extend from the chained iterator of
            // `children_of` cost a twentieth of a small file's build).
            match self.node(n) {
                Node::Var(v) => out.push(v),
                Node::Unary(_, a) | Node::Powi(a, _) => stack.push(a),
                Node::Binary(_, a, b) => {
                    stack.push(a);
                    stack.push(b);
                }
                Node::Spline(..) => stack.extend(self.children_of(n)),
                Node::Const(_) | Node::Param(_) => {}
            }
        }
        out.sort_unstable();
        out.dedup();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph of `unknowns` unknowns and `count` more nodes mixed from them (products,
    /// sines, powers, spline tables over unknowns, constants that cancel nothing); the
    /// unknowns' nodes, then the others, in the order made.
    fn mixed_graph(unknowns: usize, count: usize) -> (ExprGraph, Vec<ExprId>) {
        let mut g = ExprGraph::new();
        let mut made: Vec<ExprId> = (0..unknowns)
            .map(|k| {
                let v = g.new_var(format!("v{k}"));
                g.var(v)
            })
            .collect();
        for k in 0..count {
            let a = made[(k * 7 + 3) % made.len()];
            let b = made[(k * 13 + 5) % made.len()];
            let c = g.constant(0.5 + (k % 7) as f64);
            let e = match k % 7 {
                0 => g.add(a, b),
                1 => g.mul(a, c),
                2 => g.sin(a),
                3 => g.sub(b, a),
                4 => g.powi(a, 3),
                5 => {
                    let t = g.spline_table(&[a, c, b, c]);
                    g.spline(t, c, 0)
                }
                _ => g.mul(a, b),
            };
            made.push(e);
        }
        (g, made)
    }

    /// The unknowns below some roots read off the masks (a graph of at most 32 unknowns)
    /// are the ones a walk finds, in the same order: over mixed expressions (products,
    /// sines, powers, spline tables over unknowns, constants that cancel nothing), for
    /// graphs of 1, 20 and 32 unknowns, and of 33, where the walk is taken.
    #[test]
    fn unknowns_from_masks_are_the_walks() {
        for count in [1usize, 20, 32, 33] {
            let (mut g, made) = mixed_graph(count, 400);
            for k in 0..made.len() {
                let roots = [made[k], made[(k * 31) % made.len()]];
                let mut seen = rustc_hash::FxHashSet::default();
                let mut walked = Vec::new();
                g.walk_vars(
                    &roots,
                    &mut Vec::new(),
                    |n| seen.insert(n),
                    &mut walked,
                    (0, &mut Vec::new()),
                );
                let mut marked = Vec::new();
                g.vars_of_marked_all_into(&roots, &mut marked);
                assert_eq!(marked, walked, "{count} unknowns, roots {roots:?}");
                assert_eq!(g.vars_of(roots[0]), g.vars_of_marked(roots[0]));
            }
        }
    }

    /// A walk with a frontier: the unknowns it finds above the frontier and those of the
    /// older nodes it reports are, together, the unknowns of the whole walk; it reports
    /// only nodes below the frontier that depend on an unknown; a frontier of 0 reports
    /// none. Over a graph of 40 unknowns (walked) and frontiers at the unknowns, a third
    /// of the way and two thirds.
    #[test]
    fn a_walk_with_a_frontier_loses_no_unknown() {
        let unknowns = 40;
        let (mut g, made) = mixed_graph(unknowns, 600);
        let count = g.node_count();
        for frontier in [0, unknowns, count / 3, 2 * count / 3] {
            let (mut out, mut older) = (Vec::new(), Vec::new());
            for k in 0..made.len() {
                let roots = [made[k], made[(k * 17 + 11) % made.len()]];
                g.vars_of_marked_all_before_into(&roots, frontier, &mut out, &mut older);
                let mut all = g.vars_of_marked_all(&roots);
                let mut joined = out.clone();
                for &n in &older {
                    assert!(n.index() < frontier, "{n:?} is not below {frontier}");
                    assert!(g.has_unknowns(n));
                    joined.extend(g.vars_of(n));
                }
                joined.sort_unstable();
                joined.dedup();
                all.sort_unstable();
                assert_eq!(joined, all, "frontier {frontier}, roots {roots:?}");
                if frontier == 0 {
                    assert!(older.is_empty());
                }
            }
        }
    }

    /// Integer coordinates as doubles (low 32 bits zero), halves and small multiples of
    /// a node: their hashes spread over the table's homes instead of sharing a few (a
    /// far-off chain's constants once probed through clusters of thousands).
    #[test]
    fn node_hashes_of_like_constants_spread() {
        let distinct = |nodes: Vec<Node>| {
            let mut hashes: Vec<u32> = nodes.iter().map(node_hash).collect();
            hashes.sort_unstable();
            hashes.dedup();
            hashes.len()
        };
        let coordinates: Vec<Node> = (0..4096)
            .map(|k| Node::Const(ConstBits::of(100_000.0 + 100.0 * f64::from(k))))
            .collect();
        assert!(distinct(coordinates) >= 4090);
        let halves: Vec<Node> = (-2048..2048)
            .map(|k| Node::Const(ConstBits::of(0.5 * f64::from(k))))
            .collect();
        assert!(distinct(halves) >= 4090);
        let products: Vec<Node> = (0..4096)
            .map(|k| Node::Binary(Binary::Mul, ExprId(7), ExprId(k)))
            .collect();
        assert!(distinct(products) >= 4090);
        // The table's homes of the coordinates: no slot is home to many.
        let slots = 8192;
        let mut load = vec![0u32; slots];
        for k in 0..4096 {
            let node = Node::Const(ConstBits::of(100_000.0 + 100.0 * f64::from(k)));
            load[crate::table::home_of(node_hash(&node), slots)] += 1;
        }
        assert!(load.iter().all(|&n| n <= 8), "{:?}", load.iter().max());
    }

    /// Nodes found through their newest child's list and through the table alike: the
    /// same expressions built again, in another order and after other nodes over the
    /// same children, get the same ids, and the arena never holds a node twice.
    #[test]
    fn every_node_is_made_once_whichever_way_it_is_found() {
        let mut g = ExprGraph::new();
        let vars: Vec<ExprId> = (0..6)
            .map(|k| {
                let v = g.new_var(format!("v{k}"));
                g.var(v)
            })
            .collect();
        // A small deterministic mix of operations over the unknowns and what was made
        // before: chains of fresh nodes (kept with their child) and children with many
        // nodes over them (the table).
        let build = |g: &mut ExprGraph, order: &[usize]| -> Vec<ExprId> {
            let mut made = vars.clone();
            let mut out = vec![ExprId(0); order.len()];
            for &k in order {
                let a = made[(k * 7 + 3) % made.len()];
                let b = made[(k * 11 + 1) % made.len()];
                let c = g.constant(0.25 * (k % 5) as f64 + 1.5);
                let e = match k % 6 {
                    0 => g.add(a, b),
                    1 => g.mul(a, c),
                    2 => g.sub(b, a),
                    3 => g.sin(a),
                    4 => {
                        let p = g.mul(a, b);
                        g.add(p, c)
                    }
                    _ => g.div(a, c),
                };
                made.push(e);
                out[k] = e;
            }
            out
        };
        let forward: Vec<usize> = (0..400).collect();
        let first = build(&mut g, &forward);
        let held = g.node_count();
        // Each node again, now that every child has parents: nothing new is made.
        let again = build(&mut g, &forward);
        assert_eq!(first, again);
        assert_eq!(g.node_count(), held);
        // Every node rebuilt from its own operands, newest first.
        for k in (0..held).rev() {
            let node = g.node(ExprId(k as u32));
            assert_eq!(g.intern(node), ExprId(k as u32), "node {k}: {node:?}");
        }
        assert_eq!(g.node_count(), held);
        let distinct: std::collections::HashSet<Node> =
            (0..held).map(|k| g.node(ExprId(k as u32))).collect();
        assert_eq!(distinct.len(), held);

        // Fifty nodes over one child (older constants, a new unknown): the first
        // SIBLINGS are kept with it, the rest are in the table; all are found again.
        let constants: Vec<ExprId> = (0..50).map(|k| g.constant(3.0 + k as f64)).collect();
        let v = g.new_var("w");
        let w = g.var(v);
        let over: Vec<ExprId> = constants.iter().map(|&c| g.mul(c, w)).collect();
        let held = g.node_count();
        let again: Vec<ExprId> = constants.iter().rev().map(|&c| g.mul(w, c)).collect();
        assert_eq!(over, again.into_iter().rev().collect::<Vec<_>>());
        assert_eq!(g.node_count(), held);
        assert!(over.len() > SIBLINGS);

        // Unknowns' nodes (kept by index, not in the table): one each, whether asked
        // for by `var` or as a node, and in whatever order the unknowns are first used.
        let later: Vec<VarId> = (0..5).map(|k| g.new_var(format!("u{k}"))).collect();
        let held = g.node_count();
        let backwards: Vec<ExprId> = later.iter().rev().map(|&v| g.var(v)).collect();
        assert_eq!(g.node_count(), held + 5);
        for (&v, &e) in later.iter().rev().zip(&backwards) {
            assert_eq!(g.var(v), e);
            assert_eq!(g.intern(Node::Var(v)), e);
            assert_eq!(g.node(e), Node::Var(v));
        }
        assert_eq!(g.node_count(), held + 5);
    }
}
