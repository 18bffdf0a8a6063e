//! The walk of a group into its shape: its nodes in post-order (first operand first),
//! children as positions in that list, leaves numbered by first appearance, and the
//! nodes' part of the key's hash mixed in as they are listed.
//!
//! The walk recurses: each node is visited once, where a stack of visits pushed and
//! popped each twice, and a joint's group is a few levels deep. A group deeper than
//! [`WALK_DEPTH`] (a long formula) is walked again with a stack of its own, which gives
//! the same shape (a test holds the two equal).
//!
//! Architecture invariant: the hash mixed in during the walk is the one
//! `ShapeKey::seal` works out from the list of nodes, so a key's hash
//! does not depend on which walk made it.

use super::{is_literal, mix, pack, Leaves, ShapeScratch, CONSTANT_LEAF, GROUP_ROOM};
use crate::graph::ExprGraph;
use crate::node::{ExprId, Node, ParamId, VarId};

/// How deep the recursive walk of a group goes before the group is walked again with a
/// stack of its own (a joint's group is a few tens of levels deep at most; a formula's
/// may be deeper).
const WALK_DEPTH: u32 = 256;

/// Why a recursive walk stopped.
enum Deep {
    /// The group cannot be shaped: it holds a spline, or is too large for its nodes'
    /// words (see `pack`).
    Unshapeable,
    /// The group is deeper than [`WALK_DEPTH`].
    TooDeep,
}

/// A recursive walk of a group into its shape: the graph, the stamped positions of the
/// nodes met so far, and the shape's nodes and leaves.
struct Walk<'w> {
    graph: &'w ExprGraph,
    seen: &'w mut [(u32, u32)],
    stamp: u32,
    nodes: &'w mut Vec<u64>,
    /// The nodes' part of the shape hash so far (see [`ShapeKey::seal_with`](super::ShapeKey::seal_with)).
    hash: u64,
    leaves: &'w mut Leaves,
}

impl Walk<'_> {
    /// The position of `n` in the shape, its operands first placed (first operand first),
    /// then `n` itself, unless it was met before.
    fn visit(&mut self, n: ExprId, depth: u32) -> Result<u32, Deep> {
        match self.seen_at(n) {
            Some(k) => Ok(k),
            None => self.visit_new(n, depth),
        }
    }

    /// Where `n` was placed in this walk, if it was.
    #[inline(always)]
    fn seen_at(&self, n: ExprId) -> Option<u32> {
        match self.seen.get(n.index()) {
            Some(&(s, k)) if s == self.stamp => Some(k),
            _ => None,
        }
    }

    /// [`visit`](Self::visit) of an operand, inlined into its parent's visit: an operand
    /// met before or a leaf is placed without a call of its own (most of a group's
    /// operands are one or the other; the calls were a third of the walk).
    #[inline(always)]
    fn operand(&mut self, n: ExprId, depth: u32) -> Result<u32, Deep> {
        if let Some(k) = self.seen_at(n) {
            return Ok(k);
        }
        match self.graph.node(n) {
            node @ (Node::Const(_) | Node::Var(_) | Node::Param(_)) => {
                let shaped = self.leaf(node);
                self.place(n, shaped)
            }
            _ => self.visit_new(n, depth),
        }
    }

    /// A leaf as its shape has it: a literal constant as it is, other constants,
    /// unknowns and parameters numbered by first appearance.
    #[inline(always)]
    fn leaf(&mut self, node: Node) -> Node {
        match node {
            Node::Const(bits) if !is_literal(bits.bits()) => {
                self.leaves.consts.push(bits.bits());
                Node::Param(ParamId(
                    CONSTANT_LEAF | (self.leaves.consts.len() - 1) as u32,
                ))
            }
            Node::Var(v) => {
                self.leaves.vars.push(v);
                Node::Var(VarId((self.leaves.vars.len() - 1) as u32))
            }
            Node::Param(p) => {
                self.leaves.params.push(p);
                Node::Param(ParamId((self.leaves.params.len() - 1) as u32))
            }
            node => node,
        }
    }

    /// Lists `n` as `shaped`, its operands already placed.
    #[inline(always)]
    fn place(&mut self, n: ExprId, shaped: Node) -> Result<u32, Deep> {
        let word = pack(shaped).ok_or(Deep::Unshapeable)?;
        let k = self.nodes.len() as u32;
        if let Some(s) = self.seen.get_mut(n.index()) {
            *s = (self.stamp, k);
        }
        self.nodes.push(word);
        self.hash = mix(self.hash, word);
        Ok(k)
    }

    /// [`visit`](Self::visit) of a node not met before in this walk.
    fn visit_new(&mut self, n: ExprId, depth: u32) -> Result<u32, Deep> {
        if depth > WALK_DEPTH {
            return Err(Deep::TooDeep);
        }
        let shaped = match self.graph.node(n) {
            node @ (Node::Const(_) | Node::Var(_) | Node::Param(_)) => self.leaf(node),
            Node::Unary(op, a) => Node::Unary(op, ExprId(self.operand(a, depth + 1)?)),
            Node::Binary(op, a, b) => {
                let a = self.operand(a, depth + 1)?;
                let b = self.operand(b, depth + 1)?;
                Node::Binary(op, ExprId(a), ExprId(b))
            }
            Node::Powi(a, k) => Node::Powi(ExprId(self.operand(a, depth + 1)?), k),
            Node::Spline(..) => return Err(Deep::Unshapeable),
        };
        self.place(n, shaped)
    }
}

impl ExprGraph {
    /// Walks the group `roots` into `scratch`'s shape (nodes and roots) and leaves; false
    /// when it cannot be shaped. Recursively (a joint's group is a few levels deep, and
    /// the recursion's calls and returns are cheaper than a stack of visits); a group
    /// deeper than [`WALK_DEPTH`] is walked again with a stack of its own.
    pub(super) fn walk_shape(&self, roots: &[ExprId], scratch: &mut ShapeScratch) -> bool {
        self.begin_walk(scratch);
        let ShapeScratch {
            seen,
            key,
            leaves,
            stamp,
            ..
        } = scratch;
        let mut walk = Walk {
            graph: self,
            seen,
            stamp: *stamp,
            nodes: &mut key.nodes,
            hash: 0,
            leaves,
        };
        for &root in roots {
            match walk.visit(root, 0) {
                Ok(k) => key.roots.push(k),
                Err(Deep::Unshapeable) => return false,
                Err(Deep::TooDeep) => return self.walk_shape_with_stack(roots, scratch),
            }
        }
        scratch.nodes_hash = Some(walk.hash);
        true
    }

    /// A new stamp for a walk, room for the graph's nodes, and the shape and leaves
    /// emptied.
    fn begin_walk(&self, scratch: &mut ShapeScratch) {
        scratch.stamp = scratch.stamp.wrapping_add(1);
        if scratch.stamp == 0 {
            scratch.seen.iter_mut().for_each(|s| *s = (0, 0));
            scratch.stamp = 1;
        }
        if scratch.seen.len() < self.node_count() {
            scratch.seen.resize(self.node_count(), (0, 0));
        }
        if scratch.stack.capacity() == 0 {
            // Room for a joint's group once, rather than lists grown by doubling from
            // nothing in every build.
            scratch.stack.reserve(GROUP_ROOM);
            scratch.key.nodes.reserve(GROUP_ROOM);
            scratch.key.roots.reserve(GROUP_ROOM / 16);
            scratch.leaves.vars.reserve(GROUP_ROOM / 8);
            scratch.leaves.params.reserve(GROUP_ROOM / 16);
            scratch.leaves.consts.reserve(GROUP_ROOM / 8);
        }
        scratch.nodes_hash = None;
        scratch.key.nodes.clear();
        scratch.key.roots.clear();
        scratch.leaves.clear();
        scratch.stack.clear();
    }

    /// [`walk_shape`](Self::walk_shape) with a stack of visits instead of recursion, for
    /// any depth.
    fn walk_shape_with_stack(&self, roots: &[ExprId], scratch: &mut ShapeScratch) -> bool {
        self.begin_walk(scratch);
        let stamp = scratch.stamp;
        let ShapeScratch {
            seen,
            key,
            leaves,
            stack,
            ..
        } = scratch;
        let position = |seen: &[(u32, u32)], e: ExprId| -> Option<u32> {
            match seen.get(e.index()) {
                Some(&(s, k)) if s == stamp => Some(k),
                _ => None,
            }
        };
        let nodes = &mut key.nodes;
        for &root in roots {
            stack.push((root, false));
            while let Some((n, expanded)) = stack.pop() {
                if position(seen, n).is_some() {
                    continue;
                }
                let node = self.node(n);
                if !expanded {
                    stack.push((n, true));
                    // Pushed in reverse so the first operand is numbered first.
                    let kids: [Option<ExprId>; 2] = match node {
                        Node::Unary(_, a) | Node::Powi(a, _) => [Some(a), None],
                        Node::Binary(_, a, b) => [Some(a), Some(b)],
                        Node::Spline(..) => return false,
                        _ => [None, None],
                    };
                    for c in kids.into_iter().rev().flatten() {
                        if position(seen, c).is_none() {
                            stack.push((c, false));
                        }
                    }
                    continue;
                }
                let local = |e: ExprId| ExprId(position(seen, e).unwrap_or(0));
                let shaped = match node {
                    Node::Const(bits) if is_literal(bits.bits()) => node,
                    Node::Const(bits) => {
                        leaves.consts.push(bits.bits());
                        Node::Param(ParamId(CONSTANT_LEAF | (leaves.consts.len() - 1) as u32))
                    }
                    Node::Var(v) => {
                        leaves.vars.push(v);
                        Node::Var(VarId((leaves.vars.len() - 1) as u32))
                    }
                    Node::Param(p) => {
                        leaves.params.push(p);
                        Node::Param(ParamId((leaves.params.len() - 1) as u32))
                    }
                    Node::Unary(op, a) => Node::Unary(op, local(a)),
                    Node::Binary(op, a, b) => Node::Binary(op, local(a), local(b)),
                    Node::Powi(a, k) => Node::Powi(local(a), k),
                    Node::Spline(..) => return false,
                };
                let Some(word) = pack(shaped) else {
                    return false;
                };
                if let Some(s) = seen.get_mut(n.index()) {
                    *s = (stamp, nodes.len() as u32);
                }
                nodes.push(word);
            }
            key.roots.push(position(seen, root).unwrap_or(0));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recursive walk and the walk with a stack give the same shape, leaves and
    /// hash (the one worked out as the nodes were listed is the one `ShapeKey::seal`
    /// works out from the list): over mixed groups (sums, products with constants,
    /// sines, powers, parameters, literal constants, shared operands, splines, which
    /// cannot be shaped) and over a chain deeper than [`WALK_DEPTH`], which the
    /// recursive walk hands over to the stack.
    #[test]
    fn recursive_walks_are_the_stack_walks() {
        let mut g = ExprGraph::new();
        let mut made: Vec<ExprId> = (0..12)
            .map(|k| {
                let v = g.new_var(format!("v{k}"));
                g.var(v)
            })
            .collect();
        let p = g.new_param("p");
        made.push(g.param(p));
        for k in 0..600usize {
            let a = made[(k * 7 + 3) % made.len()];
            let b = made[(k * 13 + 5) % made.len()];
            let c = g.constant(if k % 3 == 0 { 2.0 } else { 0.25 + k as f64 });
            let e = match k % 8 {
                0 => g.add(a, b),
                1 => g.mul(a, c),
                2 => g.sin(a),
                3 => g.sub(b, a),
                4 => g.powi(a, 3),
                5 if k % 40 == 5 => {
                    let t = g.spline_table(&[a, c, b, c]);
                    g.spline(t, c, 0)
                }
                _ => g.mul(a, b),
            };
            made.push(e);
        }
        // A chain deeper than the recursion goes.
        let mut deep = made[0];
        for k in 0..(WALK_DEPTH as usize + 40) {
            let c = g.constant(1.25 + k as f64);
            deep = if k % 2 == 0 {
                g.add(deep, c)
            } else {
                g.mul(deep, made[k % 12])
            };
        }
        let mut groups: Vec<Vec<ExprId>> = (0..made.len())
            .map(|k| {
                vec![
                    made[k],
                    made[(k * 31) % made.len()],
                    made[(k * 17) % made.len()],
                ]
            })
            .collect();
        groups.push(vec![deep, made[40]]);
        let (mut shaped, mut deep_seen) = (0, false);
        for roots in &groups {
            let mut recursive = ShapeScratch::default();
            let mut stacked = ShapeScratch::default();
            let a = g.walk_shape(roots, &mut recursive);
            let b = g.walk_shape_with_stack(roots, &mut stacked);
            assert_eq!(a, b, "{roots:?}");
            if !a {
                continue;
            }
            shaped += 1;
            assert_eq!(recursive.key, stacked.key);
            assert_eq!(recursive.leaves.vars, stacked.leaves.vars);
            assert_eq!(recursive.leaves.params, stacked.leaves.params);
            assert_eq!(recursive.leaves.consts, stacked.leaves.consts);
            // The deep chain went to the stack: no hash worked out on the way.
            deep_seen |= recursive.nodes_hash.is_none();
            assert_eq!(recursive.nodes_hash.is_none(), roots[0] == deep);
            let mut sealed = recursive.key.clone();
            sealed.seal();
            if let Some(nodes) = recursive.nodes_hash {
                recursive.key.seal_with(nodes);
            } else {
                recursive.key.seal();
            }
            assert_eq!(recursive.key.hash, sealed.hash);
        }
        assert!(deep_seen);
        // Both kinds were met: groups shaped, and groups holding a spline.
        assert!(
            shaped >= 100 && shaped < groups.len(),
            "{shaped} of {}",
            groups.len()
        );
    }
}
