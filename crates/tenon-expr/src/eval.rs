//! Reference evaluation straight from the graph (no compilation), and a readable
//! rendering of expressions. Slow but simple: the oracle the tape is tested against.

use std::fmt;

use crate::error::ExprError;
use crate::graph::ExprGraph;
use crate::node::{powi, ExprId, Node, Unary};

impl ExprGraph {
    /// Values of `outputs` for the given unknowns and parameters (indexed by
    /// [`VarId::index`](crate::VarId::index) and [`ParamId::index`](crate::ParamId::index)).
    pub fn evaluate(
        &self,
        outputs: &[ExprId],
        vars: &[f64],
        params: &[f64],
    ) -> Result<Vec<f64>, ExprError> {
        // Outputs that are constants (placements given in numbers, most of a file's)
        // are their values.
        let constants: Option<Vec<f64>> = outputs
            .iter()
            .map(|&o| {
                (o.index() < self.node_count())
                    .then(|| self.as_const(o))
                    .flatten()
            })
            .collect();
        if let Some(values) = constants {
            return Ok(values);
        }
        // The nodes reached, each once. Children are made before their parents, so no
        // node reached has a larger id than the largest output: below
        // `DENSE_EVALUATION_SPAN` a node's place is kept in an array by id (a build
        // evaluates load values and placements a few times per joint, and hashing and
        // binary searches had been half of a small file's equations), above it in a
        // hash set and found again by binary search (an array as long as a large graph
        // for each of a few nodes would cost more than the walk).
        let span = outputs.iter().map(|o| o.index() + 1).max().unwrap_or(0);
        let mut places = Places::new(span);
        let mut nodes = Vec::new();
        let mut stack = outputs.to_vec();
        while let Some(n) = stack.pop() {
            if n.index() >= self.node_count() {
                return Err(ExprError::ForeignId(n));
            }
            if places.first_visit(n) {
                nodes.push(n);
                stack.extend(self.children_of(n));
            }
        }
        // In id order every operand's value is there when it is read.
        nodes.sort_unstable();
        places.number(&nodes);
        let mut value: Vec<f64> = Vec::with_capacity(nodes.len());
        let get = |value: &[f64], e: ExprId| {
            places
                .of(&nodes, e)
                .and_then(|k| value.get(k).copied())
                .unwrap_or(f64::NAN)
        };
        for &n in &nodes {
            let v = match self.node(n) {
                Node::Const(bits) => bits.value(),
                Node::Var(x) => *vars.get(x.index()).ok_or(ExprError::Length {
                    what: "unknowns",
                    expected: x.index() + 1,
                    got: vars.len(),
                })?,
                Node::Param(p) => *params.get(p.index()).ok_or(ExprError::Length {
                    what: "parameters",
                    expected: p.index() + 1,
                    got: params.len(),
                })?,
                Node::Unary(op, a) => op.apply(get(&value, a)),
                Node::Binary(op, a, b) => op.apply(get(&value, a), get(&value, b)),
                Node::Powi(a, k) => powi(get(&value, a), k),
                Node::Spline(t, u, order) => {
                    let table = self.spline_coefficients(t);
                    crate::spline::blend(table.len(), get(&value, u), order, |k| {
                        get(&value, table[k])
                    })
                }
            };
            value.push(v);
        }
        Ok(outputs.iter().map(|&o| get(&value, o)).collect())
    }

    /// A displayable infix rendering of `e` (for messages and debugging); subtrees
    /// deeper than 64 levels print as `…`.
    pub fn display(&self, e: ExprId) -> impl fmt::Display + '_ {
        Display {
            graph: self,
            root: e,
        }
    }
}

/// Largest node id below which [`ExprGraph::evaluate`] keeps the nodes' places in an
/// array by id.
const DENSE_EVALUATION_SPAN: usize = 1 << 16;

/// Where each node reached by an evaluation sits among the nodes reached (sorted by
/// id): an array by id for a small span, else found by binary search.
enum Places {
    /// Per id below the span: its place, [`Places::UNSEEN`], or [`Places::SEEN`] until
    /// numbered.
    Dense(Vec<u32>),
    Sparse(rustc_hash::FxHashSet<ExprId>),
}

impl Places {
    const UNSEEN: u32 = u32::MAX;
    const SEEN: u32 = u32::MAX - 1;

    fn new(span: usize) -> Places {
        if span <= DENSE_EVALUATION_SPAN {
            Places::Dense(vec![Places::UNSEEN; span])
        } else {
            Places::Sparse(rustc_hash::FxHashSet::default())
        }
    }

    /// Marks `n` reached; whether it was not before.
    fn first_visit(&mut self, n: ExprId) -> bool {
        match self {
            Places::Dense(at) => match at.get_mut(n.index()) {
                Some(slot) if *slot == Places::UNSEEN => {
                    *slot = Places::SEEN;
                    true
                }
                Some(_) => false,
                // Above the span (not a child of an output): never reached by the walk.
                None => false,
            },
            Places::Sparse(seen) => seen.insert(n),
        }
    }

    /// Records the places of `nodes` (sorted, each reached).
    fn number(&mut self, nodes: &[ExprId]) {
        if let Places::Dense(at) = self {
            for (k, n) in nodes.iter().enumerate() {
                if let Some(slot) = at.get_mut(n.index()) {
                    *slot = k as u32;
                }
            }
        }
    }

    /// The place of `e` among `nodes`.
    fn of(&self, nodes: &[ExprId], e: ExprId) -> Option<usize> {
        match self {
            Places::Dense(at) => at
                .get(e.index())
                .copied()
                .filter(|&k| k < Places::SEEN)
                .map(|k| k as usize),
            Places::Sparse(_) => nodes.binary_search(&e).ok(),
        }
    }
}

struct Display<'g> {
    graph: &'g ExprGraph,
    root: ExprId,
}

impl fmt::Display for Display<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(self.graph, self.root, f, 0)
    }
}

fn write_expr(g: &ExprGraph, e: ExprId, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
    if depth > 64 {
        return write!(f, "…");
    }
    match g.node(e) {
        Node::Const(bits) => write!(f, "{}", bits.value()),
        Node::Var(v) => write!(f, "{}", g.var_name(v)),
        Node::Param(p) => write!(f, "{}", g.param_name(p)),
        Node::Unary(Unary::Neg, a) => {
            write!(f, "-(")?;
            write_expr(g, a, f, depth + 1)?;
            write!(f, ")")
        }
        Node::Unary(op, a) => {
            write!(f, "{}(", op.name())?;
            write_expr(g, a, f, depth + 1)?;
            write!(f, ")")
        }
        Node::Spline(t, u, order) => {
            write!(f, "spline{}{}(", t.index(), "'".repeat(order as usize))?;
            write_expr(g, u, f, depth + 1)?;
            write!(f, ")")
        }
        Node::Powi(a, k) => {
            write!(f, "(")?;
            write_expr(g, a, f, depth + 1)?;
            write!(f, ")^{k}")
        }
        Node::Binary(op, a, b) => {
            use crate::node::Binary::*;
            let infix = match op {
                Add => Some(" + "),
                Sub => Some(" - "),
                Mul => Some("*"),
                Div => Some("/"),
                Pow => Some("^"),
                _ => None,
            };
            match infix {
                Some(sym) => {
                    write!(f, "(")?;
                    write_expr(g, a, f, depth + 1)?;
                    write!(f, "{sym}")?;
                    write_expr(g, b, f, depth + 1)?;
                    write!(f, ")")
                }
                None => {
                    let name = match op {
                        Atan2 => "atan2",
                        Min => "min",
                        _ => "max",
                    };
                    write!(f, "{name}(")?;
                    write_expr(g, a, f, depth + 1)?;
                    write!(f, ", ")?;
                    write_expr(g, b, f, depth + 1)?;
                    write!(f, ")")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DENSE_EVALUATION_SPAN;
    use crate::graph::ExprGraph;
    use crate::node::ExprId;

    /// `sin(x) * y + x / 3 + p`, with the nodes made after `padding` others.
    fn graph_with(padding: usize) -> (ExprGraph, Vec<ExprId>) {
        let mut g = ExprGraph::new();
        for k in 0..padding {
            g.constant(k as f64 + 0.25);
        }
        let (x, y) = (g.new_var("x"), g.new_var("y"));
        let p = g.new_param("p");
        let (x, y, p) = (g.var(x), g.var(y), g.param(p));
        let s = g.sin(x);
        let sy = g.mul(s, y);
        let third = g.scale(x, 1.0 / 3.0);
        let sum = g.add(sy, third);
        let out = g.add(sum, p);
        (g, vec![out, sy, x])
    }

    #[test]
    fn a_large_graph_evaluates_as_a_small_one() {
        let (small, small_out) = graph_with(0);
        let (large, large_out) = graph_with(DENSE_EVALUATION_SPAN + 10);
        assert!(large_out.iter().all(|o| o.index() > DENSE_EVALUATION_SPAN));
        let (vars, params) = ([0.7, -1.3], [2.5]);
        let a = small
            .evaluate(&small_out, &vars, &params)
            .expect("evaluates");
        let b = large
            .evaluate(&large_out, &vars, &params)
            .expect("evaluates");
        assert_eq!(a, b);
        let expected = 0.7f64.sin() * -1.3 + 0.7 / 3.0 + 2.5;
        assert!((a[0] - expected).abs() < 1e-15, "{} {expected}", a[0]);
    }
}
