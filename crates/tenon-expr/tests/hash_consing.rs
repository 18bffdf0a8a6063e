//! Hash-consing: equal subexpressions are one node.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use tenon_expr::ExprGraph;

#[test]
fn a_residual_set_with_repeated_subterms_stores_each_distinct_subterm_once() {
    let mut g = ExprGraph::new();
    assert_eq!(g.node_count(), 2, "a new graph holds the constants 0 and 1");
    let (u, v) = (g.new_var("x"), g.new_var("y"));
    // Residuals r1 = (x+y)^2 + sin(x+y), r2 = sin(y+x) * (x+y)^2, r3 = (y+x)*(x+y) + sin(x+y),
    // each building its subterms afresh (and in the other operand order).
    let build_r1 = |g: &mut ExprGraph| {
        let (x, y) = (g.var(u), g.var(v));
        let s = g.add(x, y);
        let sq = g.powi(s, 2);
        let sn = g.sin(s);
        g.add(sq, sn)
    };
    let r1 = build_r1(&mut g);
    // Distinct: 0, 1, x, y, x+y, (x+y)^2, sin(x+y), r1.
    assert_eq!(g.node_count(), 8);
    let (x, y) = (g.var(u), g.var(v));
    let s2 = g.add(y, x);
    let sn2 = g.sin(s2);
    let sq2 = g.mul(s2, s2);
    let r2 = g.mul(sn2, sq2);
    // New: only the product r2.
    assert_eq!(g.node_count(), 9);
    let p = g.mul(s2, s2);
    let sn3 = g.sin(s2);
    let r3 = g.add(sn3, p);
    assert_eq!(r3, r1, "r3 is r1 written differently");
    assert_ne!(r2, r1);
    assert_eq!(g.node_count(), 9);
    assert_eq!(build_r1(&mut g), r1);
    assert_eq!(g.node_count(), 9);
}

#[test]
fn rotation_matrices_built_twice_are_shared() {
    let mut g = ExprGraph::new();
    let q: Vec<_> = (0..4).map(|k| g.new_var(format!("q{k}"))).collect();
    let e: Vec<_> = q.iter().map(|&v| g.var(v)).collect();
    let r1 = common::rotation(&mut g, [e[0], e[1], e[2], e[3]]);
    let count = g.node_count();
    let r2 = common::rotation(&mut g, [e[0], e[1], e[2], e[3]]);
    assert_eq!(r1, r2);
    assert_eq!(g.node_count(), count);
}

#[test]
fn construction_simplifies() {
    let mut g = ExprGraph::new();
    let v = g.new_var("x");
    let x = g.var(v);
    let zero = g.zero();
    let one = g.one();
    let two = g.constant(2.0);
    let three = g.constant(3.0);
    assert_eq!(g.add(x, zero), x);
    assert_eq!(g.mul(x, one), x);
    assert_eq!(g.mul(x, zero), zero);
    assert_eq!(g.sub(x, x), zero);
    assert_eq!(g.div(x, x), one);
    let n = g.neg(x);
    assert_eq!(g.neg(n), x);
    assert_eq!(g.add(two, three), g.constant(5.0));
    assert_eq!(g.add(x, n), zero, "x + (-x) = x - x = 0");
    let sq = g.powi(x, 2);
    assert_eq!(g.mul(x, x), sq);
    let sq3 = g.powi(sq, 3);
    assert_eq!(sq3, g.powi(x, 6));
    let tx = g.mul(two, x);
    assert_eq!(g.add(x, x), tx);
    assert_eq!(g.mul(three, tx), g.scale(x, 6.0));
    let s = g.sqrt(sq);
    assert_eq!(s, g.abs(x));
    let pi = g.constant(std::f64::consts::PI);
    let c = g.cos(pi);
    assert_eq!(g.as_const(c), Some(-1.0));
    let p = g.constant(2.0);
    assert_eq!(g.pow(x, p), sq, "constant integer exponents become powi");
}
