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
        let mut nodes = Vec::new();
        let mut seen = rustc_hash::FxHashSet::default();
        let mut stack = outputs.to_vec();
        while let Some(n) = stack.pop() {
            if n.index() >= self.node_count() {
                return Err(ExprError::ForeignId(n));
            }
            if seen.insert(n) {
                nodes.push(n);
                stack.extend(self.children_of(n));
            }
        }
        // Children are made before their parents: in id order every operand's value is
        // there when it is read (found by binary search among the nodes reached).
        nodes.sort_unstable();
        let mut value: Vec<f64> = Vec::with_capacity(nodes.len());
        let get = |value: &[f64], e: ExprId| {
            nodes
                .binary_search(&e)
                .ok()
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
