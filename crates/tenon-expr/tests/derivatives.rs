//! Symbolic derivatives against central finite differences and against dual numbers.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

mod common;

use common::{arb_expr, build, eval_dual, G};
use num_dual::{Dual64, HyperDual64};
use proptest::prelude::*;
use tenon_expr::{ExprGraph, ExprId, VarId};

const FD_RELATIVE: f64 = 1e-6;

fn value(g: &ExprGraph, e: ExprId, x: &[f64]) -> f64 {
    g.evaluate(&[e], x, &[]).unwrap()[0]
}

/// Central difference of `e` along unknown `k`, with step `h`.
fn central(g: &ExprGraph, e: ExprId, x: &[f64], k: usize, h: f64) -> f64 {
    let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
    xp[k] += h;
    xm[k] -= h;
    (value(g, e, &xp) - value(g, e, &xm)) / (2.0 * h)
}

/// Compares `d` with the central difference of `e`, or returns `None` when the
/// difference itself is unreliable there (a kink or singularity nearby: two Richardson
/// estimates at different steps disagree), so the point is not "away from
/// singularities".
fn fd_agrees(g: &ExprGraph, e: ExprId, d: f64, x: &[f64], k: usize) -> Option<bool> {
    let h = 1e-3 * x[k].abs().max(1.0);
    let c: Vec<f64> = [h, h / 2.0, h / 4.0]
        .iter()
        .map(|&s| central(g, e, x, k, s))
        .collect();
    // Richardson extrapolation removes the h^2 term of the central difference.
    let r1 = (4.0 * c[1] - c[0]) / 3.0;
    let r2 = (4.0 * c[2] - c[1]) / 3.0;
    let scale = r1.abs().max(r2.abs()).max(1e-2);
    if !r1.is_finite() || !r2.is_finite() || (r1 - r2).abs() > 1e-7 * scale {
        return None;
    }
    Some((d - r2).abs() <= FD_RELATIVE * scale)
}

fn check_unary(name: &str, point: f64, f: impl Fn(&mut ExprGraph, ExprId) -> ExprId) {
    let mut g = ExprGraph::new();
    let v = g.new_var("x");
    let x = g.var(v);
    let e = f(&mut g, x);
    let d = g.derivative(e, v);
    let d2 = g.derivative(d, v);
    let at = [point];
    let dv = value(&g, d, &at);
    let d2v = value(&g, d2, &at);
    assert_eq!(
        fd_agrees(&g, e, dv, &at, 0),
        Some(true),
        "{name}' at {point}: {dv}"
    );
    assert_eq!(
        fd_agrees(&g, d, d2v, &at, 0),
        Some(true),
        "{name}'' at {point}: {d2v}"
    );
}

#[test]
fn every_unary_operation_matches_finite_differences() {
    for &p in &[-1.3, -0.4, 0.35, 0.9, 2.2] {
        check_unary("neg", p, |g, x| g.neg(x));
        check_unary("sin", p, |g, x| g.sin(x));
        check_unary("cos", p, |g, x| g.cos(x));
        check_unary("tan", p, |g, x| g.tan(x));
        check_unary("exp", p, |g, x| g.exp(x));
        check_unary("abs", p, |g, x| g.abs(x));
        check_unary("atan2(x,1)", p, |g, x| {
            let one = g.one();
            g.atan2(x, one)
        });
        for n in [-3, -1, 2, 3, 5] {
            check_unary("powi", p, |g, x| g.powi(x, n));
        }
        let q = p.abs() + 0.1; // positive domain
        check_unary("sqrt", q, |g, x| g.sqrt(x));
        check_unary("ln", q, |g, x| g.ln(x));
        check_unary("pow(x, 2.5)", q, |g, x| {
            let c = g.constant(2.5);
            g.pow(x, c)
        });
        check_unary("pow(2, x)", p, |g, x| {
            let c = g.constant(2.0);
            g.pow(c, x)
        });
        let r = p / 2.5; // (-1, 1)
        check_unary("asin", r, |g, x| g.asin(x));
        check_unary("acos", r, |g, x| g.acos(x));
    }
}

fn check_binary(name: &str, a: f64, b: f64, f: impl Fn(&mut ExprGraph, ExprId, ExprId) -> ExprId) {
    let mut g = ExprGraph::new();
    let (u, v) = (g.new_var("a"), g.new_var("b"));
    let (x, y) = (g.var(u), g.var(v));
    let e = f(&mut g, x, y);
    let at = [a, b];
    for (k, var) in [u, v].into_iter().enumerate() {
        let d = g.derivative(e, var);
        let dv = value(&g, d, &at);
        assert_eq!(
            fd_agrees(&g, e, dv, &at, k),
            Some(true),
            "d{name}/d{k} at {at:?}"
        );
        for (k2, var2) in [u, v].into_iter().enumerate() {
            let d2 = g.derivative(d, var2);
            let d2v = value(&g, d2, &at);
            assert_eq!(
                fd_agrees(&g, d, d2v, &at, k2),
                Some(true),
                "d2{name}/d{k}d{k2} at {at:?}"
            );
        }
    }
}

#[test]
fn every_binary_operation_matches_finite_differences() {
    let points = [(0.7, -1.2), (-0.3, 0.45), (1.9, 2.6), (-2.1, -0.8)];
    for &(a, b) in &points {
        check_binary("+", a, b, |g, x, y| g.add(x, y));
        check_binary("-", a, b, |g, x, y| g.sub(x, y));
        check_binary("*", a, b, |g, x, y| g.mul(x, y));
        check_binary("/", a, b, |g, x, y| g.div(x, y));
        check_binary("atan2", a, b, |g, x, y| g.atan2(x, y));
        check_binary("min", a, b, |g, x, y| g.min(x, y));
        check_binary("max", a, b, |g, x, y| g.max(x, y));
        check_binary("pow", a.abs() + 0.2, b, |g, x, y| g.pow(x, y));
    }
}

#[test]
fn conventions_at_kinks() {
    let mut g = ExprGraph::new();
    let (u, v) = (g.new_var("a"), g.new_var("b"));
    let (x, y) = (g.var(u), g.var(v));
    let abs = g.abs(x);
    let min = g.min(x, y);
    let max = g.max(x, y);
    let d_abs = g.derivative(abs, u);
    let d_min = g.derivative(min, u);
    let d_max = g.derivative(max, v);
    let at = [0.0, 0.0];
    // |x|' = sign(x) = 0 at 0; min/max at a tie: the mean of both sides (1/2 each).
    assert_eq!(
        g.evaluate(&[d_abs, d_min, d_max], &at, &[]).unwrap(),
        vec![0.0, 0.5, 0.5]
    );
}

fn gradient_dual(e: &G, x: &[f64], k: usize) -> f64 {
    let xs: Vec<Dual64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if i == k {
                Dual64::from_re(v).derivative()
            } else {
                Dual64::from_re(v)
            }
        })
        .collect();
    eval_dual(e, &xs).eps
}

fn hessian_dual(e: &G, x: &[f64], i: usize, j: usize) -> f64 {
    let xs: Vec<HyperDual64> = x
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let mut d = HyperDual64::from_re(v);
            if k == i {
                d = d.derivative1();
            }
            if k == j {
                d = d.derivative2();
            }
            d
        })
        .collect();
    eval_dual(e, &xs).eps1eps2
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

const N: usize = 3;

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Random compositions: first and second derivatives equal the dual-number oracle
    /// (exact arithmetic of derivatives, so the tolerance is near rounding).
    #[test]
    fn random_compositions_match_dual_numbers(e in arb_expr(N), x in prop::array::uniform3(-2.0f64..2.0)) {
        let mut g = ExprGraph::new();
        let vars: Vec<VarId> = (0..N).map(|k| g.new_var(format!("x{k}"))).collect();
        let root = build(&e, &mut g, &vars);
        let f = value(&g, root, &x);
        prop_assume!(f.is_finite() && f.abs() < 1e6);
        for i in 0..N {
            let d = g.derivative(root, vars[i]);
            let dv = value(&g, d, &x);
            let oracle = gradient_dual(&e, &x, i);
            prop_assume!(oracle.is_finite());
            prop_assert!(close(dv, oracle, 1e-9), "d/dx{i}: {dv} vs {oracle} for {}", g.display(root));
            for j in 0..N {
                let d2 = g.derivative(d, vars[j]);
                let d2v = value(&g, d2, &x);
                let oracle2 = hessian_dual(&e, &x, i, j);
                prop_assume!(oracle2.is_finite());
                prop_assert!(close(d2v, oracle2, 1e-8), "d2/dx{i}dx{j}: {d2v} vs {oracle2}");
            }
        }
    }

    /// Random compositions: derivatives match central finite differences to 1e-6
    /// relative wherever the difference quotient itself is reliable.
    #[test]
    fn random_compositions_match_finite_differences(e in arb_expr(N), x in prop::array::uniform3(-2.0f64..2.0)) {
        let mut g = ExprGraph::new();
        let vars: Vec<VarId> = (0..N).map(|k| g.new_var(format!("x{k}"))).collect();
        let root = build(&e, &mut g, &vars);
        let f = value(&g, root, &x);
        prop_assume!(f.is_finite() && f.abs() < 1e6);
        for i in 0..N {
            let d = g.derivative(root, vars[i]);
            let dv = value(&g, d, &x);
            if let Some(ok) = fd_agrees(&g, root, dv, &x, i) {
                prop_assert!(ok, "d/dx{i} = {dv} disagrees with finite differences for {}", g.display(root));
            }
            let d2 = g.derivative(d, vars[(i + 1) % N]);
            let d2v = value(&g, d2, &x);
            if let Some(ok) = fd_agrees(&g, d, d2v, &x, (i + 1) % N) {
                prop_assert!(ok, "second derivative {d2v} disagrees with finite differences");
            }
        }
    }
}

#[test]
fn derivatives_are_memoized_and_shared() {
    let mut g = ExprGraph::new();
    let v = g.new_var("x");
    let x = g.var(v);
    let s = g.sin(x);
    let e = g.mul(s, s);
    let d1 = g.derivative(e, v);
    let count = g.node_count();
    let d1_again = g.derivative(e, v);
    assert_eq!(d1, d1_again);
    assert_eq!(
        g.node_count(),
        count,
        "a repeated derivative creates no node"
    );
}

#[test]
fn directional_derivative_is_the_jacobian_times_the_direction() {
    let mut g = ExprGraph::new();
    let (u, v) = (g.new_var("a"), g.new_var("b"));
    let (pu, pv) = (g.new_param("va"), g.new_param("vb"));
    let (x, y) = (g.var(u), g.var(v));
    let (du, dv) = (g.param(pu), g.param(pv));
    // f = x^2 y + sin(y); Df . (va, vb) = 2xy va + (x^2 + cos y) vb
    let xx = g.powi(x, 2);
    let xxy = g.mul(xx, y);
    let sy = g.sin(y);
    let f = g.add(xxy, sy);
    let dd = g.directional_derivative(f, &[(u, du), (v, dv)]);
    let (a, b, va, vb) = (0.7, -1.1, 0.3, 2.0);
    let got = g.evaluate(&[dd], &[a, b], &[va, vb]).unwrap()[0];
    let want = 2.0 * a * b * va + (a * a + b.cos()) * vb;
    assert!((got - want).abs() < 1e-14, "{got} vs {want}");
    // The result differentiates again: d/dx of it is 2 y va + 2 x vb.
    let again = g.derivative(dd, u);
    let got2 = g.evaluate(&[again], &[a, b], &[va, vb]).unwrap()[0];
    assert!((got2 - (2.0 * b * va + 2.0 * a * vb)).abs() < 1e-14);
}

/// Forward derivatives along a registered direction equal the sum of partial
/// derivatives times the direction, and twice along a direction whose components depend
/// on the unknowns they equal the second derivative along the path `x' = r(x)`: checked
/// on random expressions against hyper-dual numbers along the straight line `x + t r`
/// (constant rates, first and second order) and against the two-step chain rule.
#[test]
fn derivatives_along_a_direction_match_dual_numbers() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    use proptest::strategy::ValueTree;
    for _ in 0..300 {
        let e = arb_expr(3).new_tree(&mut runner).unwrap().current();
        let x = [0.4, -0.7, 1.3];
        let r = [0.9, 0.2, -0.5];
        let mut g = ExprGraph::new();
        let vars: Vec<VarId> = (0..3).map(|k| g.new_var(format!("x{k}"))).collect();
        let f = build(&e, &mut g, &vars);
        let components: Vec<(VarId, ExprId)> = vars
            .iter()
            .zip(r)
            .map(|(&v, c)| (v, g.constant(c)))
            .collect();
        let d = g.new_direction(&components);
        let first = g.derivative_along(f, d);
        let second = g.derivative_along(first, d);
        let values = g.evaluate(&[f, first, second], &x, &[]).unwrap();
        // Along x + t r: value, d/dt and d2/dt2 at t = 0 from hyper-dual numbers.
        let path: Vec<HyperDual64> = (0..3)
            .map(|k| HyperDual64::new(x[k], r[k], r[k], 0.0))
            .collect();
        let h = eval_dual(&e, &path);
        if !h.re.is_finite() || !h.eps1.is_finite() || !h.eps1eps2.is_finite() {
            continue;
        }
        assert!(
            close(values[1], h.eps1, 1e-9),
            "first: {} vs {}",
            values[1],
            h.eps1
        );
        assert!(
            close(values[2], h.eps1eps2, 1e-9),
            "second: {} vs {}",
            values[2],
            h.eps1eps2
        );
        // The sum over unknowns of the one-variable derivatives, the other way.
        let summed = g.directional_derivative(f, &components);
        let s = g.evaluate(&[summed], &x, &[]).unwrap()[0];
        assert!(close(values[1], s, 1e-12), "{} vs {s}", values[1]);
    }
    // Rates that depend on the unknowns: x' = y, y' = -x (a rotation); along it
    // f = x^2 + 3 y has f' = 2 x y + 3 (-x) and f'' = 2 (y^2 - x^2) - 3 y.
    let mut g = ExprGraph::new();
    let (u, v) = (g.new_var("x"), g.new_var("y"));
    let (x, y) = (g.var(u), g.var(v));
    let minus_x = g.neg(x);
    let d = g.new_direction(&[(u, y), (v, minus_x)]);
    let xx = g.powi(x, 2);
    let three_y = g.scale(y, 3.0);
    let f = g.add(xx, three_y);
    let f1 = g.derivative_along(f, d);
    let f2 = g.derivative_along(f1, d);
    let (a, b) = (0.6, -1.7);
    let got = g.evaluate(&[f1, f2], &[a, b], &[]).unwrap();
    assert!((got[0] - (2.0 * a * b - 3.0 * a)).abs() < 1e-14);
    assert!((got[1] - (2.0 * (b * b - a * a) - 3.0 * b)).abs() < 1e-14);
}

#[test]
fn deep_expressions_differentiate_without_overflowing_the_stack() {
    let mut g = ExprGraph::new();
    let v = g.new_var("x");
    let x = g.var(v);
    let mut e = x;
    // e_{k+1} = e_k + 1e-6 sin(e_k): 200,000 levels deep, derivative near exp(0.2).
    for _ in 0..200_000 {
        let s = g.sin(e);
        let small = g.scale(s, 1e-6);
        e = g.add(e, small);
    }
    let d = g.derivative(e, v);
    let dv = g.evaluate(&[d], &[0.1], &[]).unwrap()[0];
    assert!(dv > 1.0 && dv < 1.3, "{dv}");
}

/// A derivative set by hand along a direction is used in place of the chain rule, by
/// first and second derivatives through the node: along the rotation `x' = y, y' = -x`
/// the radius `s = x^2 + y^2` is constant, so with `ds = 0` given, `f = s x` has `f' =
/// s y` and `f'' = -s x`. A node whose derivative is already set, or that does not
/// move along the direction, is refused.
#[test]
fn a_derivative_set_along_a_direction_is_used_in_place_of_the_chain_rule() {
    let mut g = ExprGraph::new();
    let (u, v, w) = (g.new_var("x"), g.new_var("y"), g.new_var("z"));
    let (x, y, z) = (g.var(u), g.var(v), g.var(w));
    let minus_x = g.neg(x);
    let d = g.new_direction(&[(u, y), (v, minus_x)]);
    let (xx, yy) = (g.powi(x, 2), g.powi(y, 2));
    let s = g.add(xx, yy);
    let zero = g.zero();
    assert!(
        !g.set_derivative_along(z, d, zero),
        "z does not move along d"
    );
    assert!(g.set_derivative_along(s, d, zero));
    assert!(!g.set_derivative_along(s, d, zero), "already set");
    let f = g.mul(s, x);
    let f1 = g.derivative_along(f, d);
    let f2 = g.derivative_along(f1, d);
    let (a, b) = (0.6, -1.7);
    let r2 = a * a + b * b;
    let got = g.evaluate(&[f1, f2], &[a, b, 0.3], &[]).unwrap();
    assert!((got[0] - r2 * b).abs() < 1e-14, "{}", got[0]);
    assert!((got[1] + r2 * a).abs() < 1e-14, "{}", got[1]);
}

/// Which roots read a parameter, through shared subterms, splines' tables and deep
/// chains: exact, each root on its own.
#[test]
fn roots_that_read_a_parameter_are_told_apart() {
    let mut g = ExprGraph::new();
    let x = g.new_var("x");
    let (t, s) = (g.new_param("t"), g.new_param("s"));
    let (xe, te, se) = (g.var(x), g.param(t), g.param(s));
    let shared = g.mul(xe, te);
    let a = g.sin(shared);
    let b = g.add(xe, se);
    let c = g.add(a, b);
    let table = g.spline_table(&[se, te, xe]);
    let spline = g.spline(table, xe, 0);
    let mut deep = xe;
    for _ in 0..100_000 {
        deep = g.add(deep, se);
    }
    let deep_t = g.add(deep, te);
    let got = g.depends_on_param(&[b, a, c, spline, deep, deep_t, b], t);
    assert_eq!(got, [false, true, true, true, false, true, false]);
    assert_eq!(g.depends_on_param(&[a, b], s), [false, true]);
}
