//! Periodic uniform cubic B-splines as single nodes.
//!
//! A closed profile of n points is a periodic spline `f(u) = sum_k c_(k mod n) B(u - k)`
//! with `B` the uniform cubic B-spline (support `[-2, 2]`). Written out of ordinary
//! nodes, every evaluation would cost all n terms; as one node it costs the four
//! coefficients around `u`, whatever n is. The coefficients sit in a table of the graph
//! (a [`SplineId`]) and may themselves be expressions (a profile whose points are
//! parameter formulas): they are children of the node like any operand.
//!
//! `Node::Spline(t, u, order)` is the `order`-th derivative of `f` with respect to `u`
//! (`u` wraps periodically over `[0, n)`). On the segment `u = k + s`, `s` in `[0, 1)`:
//!
//! | coefficient | weight `b(s)` |
//! |---|---|
//! | `c_(k-1)` | `(1 - s)^3 / 6` |
//! | `c_k` | `(3 s^3 - 6 s^2 + 4) / 6` |
//! | `c_(k+1)` | `(-3 s^3 + 3 s^2 + 3 s + 1) / 6` |
//! | `c_(k+2)` | `s^3 / 6` |
//!
//! Derivatives: `d/dx spline(t, u, m) = spline(t, u, m + 1) du/dx + spline(t', u, m)`
//! with `t'` the table of the coefficients' derivatives (left out when they are all 0).
//! Order 4 and above is identically 0 (the third derivative is piecewise constant).

use crate::graph::ExprGraph;
use crate::node::{ExprId, Node};

/// A coefficient table of an [`ExprGraph`], made by [`ExprGraph::spline_table`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct SplineId(pub(crate) u32);

impl SplineId {
    /// Position of this table in its graph.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Derivative orders above this are identically zero.
pub(crate) const MAX_ORDER: u8 = 3;

/// The four weights of the coefficients `c_(k-1) .. c_(k+2)` at `s` in `[0, 1)`, for the
/// `order`-th derivative.
fn weights(s: f64, order: u8) -> [f64; 4] {
    let r = 1.0 - s;
    match order {
        0 => [
            r * r * r / 6.0,
            (3.0 * s * s * s - 6.0 * s * s + 4.0) / 6.0,
            (-3.0 * s * s * s + 3.0 * s * s + 3.0 * s + 1.0) / 6.0,
            s * s * s / 6.0,
        ],
        1 => [
            -0.5 * r * r,
            1.5 * s * s - 2.0 * s,
            -1.5 * s * s + s + 0.5,
            0.5 * s * s,
        ],
        2 => [r, 3.0 * s - 2.0, 1.0 - 3.0 * s, s],
        3 => [-1.0, 3.0, -3.0, 1.0],
        _ => [0.0; 4],
    }
}

/// `f^(order)(u)` for the `n` periodic coefficients read by `coefficient` (NaN for a
/// non-finite `u`, 0 for an empty table).
pub(crate) fn blend(n: usize, u: f64, order: u8, coefficient: impl Fn(usize) -> f64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    if !u.is_finite() {
        return f64::NAN;
    }
    let w = u.rem_euclid(n as f64);
    // `rem_euclid` may round up to n itself for a tiny negative `u`.
    let k = (w.floor() as usize).min(n - 1);
    let s = (w - k as f64).clamp(0.0, 1.0);
    let b = weights(s, order);
    (0..4)
        .map(|m| b[m] * coefficient((k + n + m - 1) % n))
        .sum()
}

/// The tables of a graph: coefficients per table, their unknowns' masks, and a lookup
/// so that equal tables are one.
#[derive(Debug, Clone, Default)]
pub(crate) struct SplineTables {
    tables: Vec<Vec<ExprId>>,
    masks: Vec<crate::graph::VarMask>,
    lookup: rustc_hash::FxHashMap<Vec<ExprId>, SplineId>,
}

impl SplineTables {
    pub(crate) fn get(&self, t: SplineId) -> &[ExprId] {
        self.tables.get(t.index()).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn mask(&self, t: SplineId) -> crate::graph::VarMask {
        self.masks.get(t.index()).copied().unwrap_or(0)
    }
}

impl ExprGraph {
    /// A table of spline coefficients (equal tables are one table).
    pub fn spline_table(&mut self, coefficients: &[ExprId]) -> SplineId {
        if let Some(&t) = self.splines.lookup.get(coefficients) {
            return t;
        }
        let mask = coefficients.iter().fold(0, |m, &c| m | self.var_mask(c));
        let t = SplineId(self.splines.tables.len() as u32);
        self.splines.tables.push(coefficients.to_vec());
        self.splines.masks.push(mask);
        self.splines.lookup.insert(coefficients.to_vec(), t);
        t
    }

    /// The coefficients of a table (empty for a table of another graph).
    pub fn spline_coefficients(&self, t: SplineId) -> &[ExprId] {
        self.splines.get(t)
    }

    /// The `order`-th derivative at `u` of the periodic spline with coefficients `t`
    /// (see the module documentation). Folds to a constant when everything is one, and
    /// to 0 past the third derivative or for an empty or all-zero table.
    pub fn spline(&mut self, t: SplineId, u: ExprId, order: u8) -> ExprId {
        let table = self.splines.get(t);
        if order > MAX_ORDER || table.iter().all(|&c| self.as_const(c) == Some(0.0)) {
            return self.zero();
        }
        let constants: Option<Vec<f64>> = table.iter().map(|&c| self.as_const(c)).collect();
        if let (Some(c), Some(x)) = (constants, self.as_const(u)) {
            let v = blend(c.len(), x, order, |k| c[k]);
            return self.constant(v);
        }
        self.intern(Node::Spline(t, u, order))
    }

    /// Every operand of `e`: a node's [`children`](Node::children), and for a spline its
    /// coefficients too.
    pub fn children_of(&self, e: ExprId) -> impl Iterator<Item = ExprId> + '_ {
        let node = self.node(e);
        let table = match node {
            Node::Spline(t, ..) => self.splines.get(t),
            _ => &[],
        };
        node.children().chain(table.iter().copied())
    }

    /// The derivative of spline node `n` with respect to `v`, the derivatives of its
    /// operands being known (`known`).
    pub(crate) fn spline_derivative(
        &mut self,
        (t, u, order): (SplineId, ExprId, u8),
        mut known: impl FnMut(&Self, ExprId) -> ExprId,
    ) -> ExprId {
        let mut terms = Vec::with_capacity(2);
        let du = known(self, u);
        if self.as_const(du) != Some(0.0) {
            let next = self.spline(t, u, order + 1);
            terms.push(self.mul(next, du));
        }
        let coefficients = self.splines.get(t).to_vec();
        let moved: Vec<ExprId> = coefficients.iter().map(|&c| known(self, c)).collect();
        if moved.iter().any(|&d| self.as_const(d) != Some(0.0)) {
            let dt = self.spline_table(&moved);
            terms.push(self.spline(dt, u, order));
        }
        self.sum(&terms)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The reference: `sum_k c_k B(u - k)` over all knots, `B` from its closed form.
    fn reference(c: &[f64], u: f64) -> f64 {
        let b = |x: f64| {
            let a = x.abs();
            if a >= 2.0 {
                0.0
            } else if a >= 1.0 {
                (2.0 - a).powi(3) / 6.0
            } else {
                (4.0 - 6.0 * a * a + 3.0 * a * a * a) / 6.0
            }
        };
        let n = c.len() as i64;
        (-3..n + 3)
            .map(|k| c[k.rem_euclid(n) as usize] * b(u - k as f64))
            .sum()
    }

    #[test]
    fn blend_matches_the_sum_over_all_knots_and_wraps() {
        let c = [1.0, -2.0, 3.5, 0.25, 7.0];
        for m in 0..=100 {
            let u = 5.0 * m as f64 / 100.0;
            let v = blend(5, u, 0, |k| c[k]);
            assert!((v - reference(&c, u)).abs() < 1e-12, "u = {u}");
            let wrapped = blend(5, u - 10.0, 0, |k| c[k]);
            assert!((wrapped - v).abs() < 1e-12);
        }
    }

    #[test]
    fn derivatives_match_finite_differences() {
        let c = [1.0, -2.0, 3.5, 0.25, 7.0, 2.0];
        for order in 0..3u8 {
            for m in 0..60 {
                let u = 0.013 + 6.0 * m as f64 / 60.0;
                let h = 1e-6;
                let fd = (blend(6, u + h, order, |k| c[k]) - blend(6, u - h, order, |k| c[k]))
                    / (2.0 * h);
                let d = blend(6, u, order + 1, |k| c[k]);
                assert!(
                    (fd - d).abs() < 1e-6 * (1.0 + d.abs()),
                    "order {order} u {u}"
                );
            }
        }
        assert_eq!(blend(6, 1.5, 4, |k| c[k]), 0.0);
    }

    #[test]
    fn spline_nodes_fold_evaluate_and_differentiate() {
        let mut g = ExprGraph::new();
        let x = g.new_var("x");
        let p = g.new_param("p");
        let (xe, pe) = (g.var(x), g.param(p));
        // Coefficients with a parameter in them and one with the unknown.
        let two = g.constant(2.0);
        let px = g.mul(pe, xe);
        let table = [two, pe, px, two];
        let t = g.spline_table(&table);
        assert_eq!(g.spline_table(&table), t);
        let u = g.scale(xe, 1.5);
        let f = g.spline(t, u, 0);
        let df = g.derivative(f, x);
        let tape = g.compile(&[f], &[x]).unwrap();
        let mut ws = tape.workspace();
        let (mut r, mut jac) = ([0.0], [0.0]);
        for &xv in &[0.1, 0.7, 1.3, 2.9, -0.4] {
            let pv = 0.8;
            let coefficients = [2.0, pv, pv * xv, 2.0];
            let value = reference(&coefficients, 1.5 * xv);
            tape.eval(&mut ws, &[xv], &[pv], &mut r, &mut jac).unwrap();
            assert!((r[0] - value).abs() < 1e-12);
            let by_graph = g.evaluate(&[f, df], &[xv], &[pv]).unwrap();
            assert!((by_graph[0] - value).abs() < 1e-12);
            let h = 1e-6;
            let at = |x: f64| reference(&[2.0, pv, pv * x, 2.0], 1.5 * x);
            let fd = (at(xv + h) - at(xv - h)) / (2.0 * h);
            assert!((jac[0] - fd).abs() < 1e-6, "x {xv}: {} vs {fd}", jac[0]);
            assert!((by_graph[1] - fd).abs() < 1e-6);
        }
        // All constant: folds.
        let c = g.spline_table(&[two, two]);
        let half = g.constant(0.5);
        let folded = g.spline(c, half, 0);
        assert_eq!(g.as_const(folded), Some(2.0));
        assert_eq!(g.spline(c, xe, 4), g.zero());
    }
}
