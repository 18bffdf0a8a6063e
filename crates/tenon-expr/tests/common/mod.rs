//! Test support shared by the integration tests and the benchmark: random expressions
//! (with a dual-number oracle) and a synthetic system shaped like an assembly.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use num_dual::DualNum;
use proptest::prelude::*;
use tenon_expr::{ExprGraph, ExprId, VarId};

/// A random expression over `n` unknowns. Domain-restricted operations are guarded so
/// that random points are mostly inside their domains; the oracle applies the same
/// guards.
#[derive(Clone, Debug)]
pub enum G {
    Var(usize),
    Const(f64),
    Neg(Box<G>),
    /// sqrt(a^2 + 0.5)
    Sqrt(Box<G>),
    Sin(Box<G>),
    Cos(Box<G>),
    /// tan(sin a)
    Tan(Box<G>),
    /// asin(a / (a^2 + 2))
    Asin(Box<G>),
    /// acos(a / (a^2 + 2))
    Acos(Box<G>),
    /// exp(a / (a^2 + 1))
    Exp(Box<G>),
    /// ln(a^2 + 0.5)
    Ln(Box<G>),
    Abs(Box<G>),
    Add(Box<G>, Box<G>),
    Sub(Box<G>, Box<G>),
    Mul(Box<G>, Box<G>),
    /// a / (b^2 + 0.5)
    Div(Box<G>, Box<G>),
    /// (a^2 + 0.5) ^ sin(b)
    Pow(Box<G>, Box<G>),
    Atan2(Box<G>, Box<G>),
    Min(Box<G>, Box<G>),
    Max(Box<G>, Box<G>),
    /// a^n for n in 0..=3, (a^2 + 0.5)^n for negative n
    Powi(Box<G>, i32),
}

pub fn arb_expr(vars: usize) -> impl Strategy<Value = G> {
    let leaf = prop_oneof![
        3 => (0..vars).prop_map(G::Var),
        1 => (-2.0f64..2.0).prop_map(G::Const),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        let b = |g: G| Box::new(g);
        prop_oneof![
            inner.clone().prop_map(move |a| G::Neg(b(a))),
            inner.clone().prop_map(move |a| G::Sqrt(b(a))),
            inner.clone().prop_map(move |a| G::Sin(b(a))),
            inner.clone().prop_map(move |a| G::Cos(b(a))),
            inner.clone().prop_map(move |a| G::Tan(b(a))),
            inner.clone().prop_map(move |a| G::Asin(b(a))),
            inner.clone().prop_map(move |a| G::Acos(b(a))),
            inner.clone().prop_map(move |a| G::Exp(b(a))),
            inner.clone().prop_map(move |a| G::Ln(b(a))),
            inner.clone().prop_map(move |a| G::Abs(b(a))),
            (inner.clone(), -3i32..=3).prop_map(move |(a, n)| G::Powi(b(a), n)),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| G::Add(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| G::Sub(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| G::Mul(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| G::Div(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| G::Pow(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| G::Atan2(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| G::Min(b(x), b(y))),
            (inner.clone(), inner).prop_map(move |(x, y)| G::Max(b(x), b(y))),
        ]
    })
}

fn sq_plus(g: &mut ExprGraph, a: ExprId, c: f64) -> ExprId {
    let sq = g.powi(a, 2);
    let c = g.constant(c);
    g.add(sq, c)
}

/// Builds `e` in the graph.
pub fn build(e: &G, g: &mut ExprGraph, vars: &[VarId]) -> ExprId {
    match e {
        G::Var(k) => g.var(vars[*k]),
        G::Const(c) => g.constant(*c),
        G::Neg(a) => {
            let a = build(a, g, vars);
            g.neg(a)
        }
        G::Sqrt(a) => {
            let a = build(a, g, vars);
            let s = sq_plus(g, a, 0.5);
            g.sqrt(s)
        }
        G::Sin(a) => {
            let a = build(a, g, vars);
            g.sin(a)
        }
        G::Cos(a) => {
            let a = build(a, g, vars);
            g.cos(a)
        }
        G::Tan(a) => {
            let a = build(a, g, vars);
            let s = g.sin(a);
            g.tan(s)
        }
        G::Asin(a) | G::Acos(a) => {
            let a = build(a, g, vars);
            let d = sq_plus(g, a, 2.0);
            let q = g.div(a, d);
            if matches!(e, G::Asin(_)) {
                g.asin(q)
            } else {
                g.acos(q)
            }
        }
        G::Exp(a) => {
            let a = build(a, g, vars);
            let d = sq_plus(g, a, 1.0);
            let q = g.div(a, d);
            g.exp(q)
        }
        G::Ln(a) => {
            let a = build(a, g, vars);
            let s = sq_plus(g, a, 0.5);
            g.ln(s)
        }
        G::Abs(a) => {
            let a = build(a, g, vars);
            g.abs(a)
        }
        G::Powi(a, n) => {
            let a = build(a, g, vars);
            if *n < 0 {
                let s = sq_plus(g, a, 0.5);
                g.powi(s, *n)
            } else {
                g.powi(a, *n)
            }
        }
        G::Add(x, y) | G::Sub(x, y) | G::Mul(x, y) | G::Div(x, y) | G::Pow(x, y) => {
            let x = build(x, g, vars);
            let y = build(y, g, vars);
            match e {
                G::Add(..) => g.add(x, y),
                G::Sub(..) => g.sub(x, y),
                G::Mul(..) => g.mul(x, y),
                G::Div(..) => {
                    let d = sq_plus(g, y, 0.5);
                    g.div(x, d)
                }
                _ => {
                    let base = sq_plus(g, x, 0.5);
                    let ex = g.sin(y);
                    g.pow(base, ex)
                }
            }
        }
        G::Atan2(x, y) | G::Min(x, y) | G::Max(x, y) => {
            let x = build(x, g, vars);
            let y = build(y, g, vars);
            match e {
                G::Atan2(..) => g.atan2(x, y),
                G::Min(..) => g.min(x, y),
                _ => g.max(x, y),
            }
        }
    }
}

/// The oracle: evaluates `e` in any dual-number type.
pub fn eval_dual<D: DualNum<Primitive = f64> + Copy>(e: &G, x: &[D]) -> D {
    let sq_plus = |a: D, c: f64| a * a + D::from(c);
    match e {
        G::Var(k) => x[*k],
        G::Const(c) => D::from(*c),
        G::Neg(a) => -eval_dual(a, x),
        G::Sqrt(a) => sq_plus(eval_dual(a, x), 0.5).sqrt(),
        G::Sin(a) => eval_dual(a, x).sin(),
        G::Cos(a) => eval_dual(a, x).cos(),
        G::Tan(a) => eval_dual(a, x).sin().tan(),
        G::Asin(a) => {
            let a = eval_dual(a, x);
            (a / sq_plus(a, 2.0)).asin()
        }
        G::Acos(a) => {
            let a = eval_dual(a, x);
            (a / sq_plus(a, 2.0)).acos()
        }
        G::Exp(a) => {
            let a = eval_dual(a, x);
            (a / sq_plus(a, 1.0)).exp()
        }
        G::Ln(a) => sq_plus(eval_dual(a, x), 0.5).ln(),
        G::Abs(a) => {
            let a = eval_dual(a, x);
            if a.re() < 0.0 {
                -a
            } else {
                a
            }
        }
        G::Powi(a, n) => {
            let a = eval_dual(a, x);
            if *n < 0 {
                sq_plus(a, 0.5).powi(*n)
            } else if *n == 0 {
                D::from(1.0)
            } else {
                a.powi(*n)
            }
        }
        G::Add(a, b) => eval_dual(a, x) + eval_dual(b, x),
        G::Sub(a, b) => eval_dual(a, x) - eval_dual(b, x),
        G::Mul(a, b) => eval_dual(a, x) * eval_dual(b, x),
        G::Div(a, b) => eval_dual(a, x) / sq_plus(eval_dual(b, x), 0.5),
        G::Pow(a, b) => sq_plus(eval_dual(a, x), 0.5).powd(eval_dual(b, x).sin()),
        G::Atan2(a, b) => eval_dual(a, x).atan2(eval_dual(b, x)),
        G::Min(a, b) => {
            let (a, b) = (eval_dual(a, x), eval_dual(b, x));
            if a.re() <= b.re() {
                a
            } else {
                b
            }
        }
        G::Max(a, b) => {
            let (a, b) = (eval_dual(a, x), eval_dual(b, x));
            if a.re() >= b.re() {
                a
            } else {
                b
            }
        }
    }
}

/// A system shaped like an assembly: a chain of `groups + 1` parts (position and
/// quaternion, 7 unknowns each); group `k` holds a revolute-like joint between parts
/// `k` and `k + 1`: 3 point-coincidence and 2 axis-alignment residuals over 14
/// unknowns, built from rotation-matrix-from-quaternion subterms.
pub struct Synthetic {
    pub graph: ExprGraph,
    pub outputs: Vec<ExprId>,
    pub columns: Vec<VarId>,
    pub values: Vec<f64>,
}

/// Rotation matrix (rows) of the quaternion `(w, x, y, z)` (assumed unit).
pub fn rotation(g: &mut ExprGraph, q: [ExprId; 4]) -> [[ExprId; 3]; 3] {
    let [w, x, y, z] = q;
    let two = |g: &mut ExprGraph, a: ExprId, b: ExprId| {
        let m = g.mul(a, b);
        g.scale(m, 2.0)
    };
    let (xx, yy, zz) = (two(g, x, x), two(g, y, y), two(g, z, z));
    let (xy, xz, yz) = (two(g, x, y), two(g, x, z), two(g, y, z));
    let (wx, wy, wz) = (two(g, w, x), two(g, w, y), two(g, w, z));
    let one = g.one();
    let diag = |g: &mut ExprGraph, a: ExprId, b: ExprId| {
        let s = g.add(a, b);
        g.sub(one, s)
    };
    [
        [diag(g, yy, zz), g.sub(xy, wz), g.add(xz, wy)],
        [g.add(xy, wz), diag(g, xx, zz), g.sub(yz, wx)],
        [g.sub(xz, wy), g.add(yz, wx), diag(g, xx, yy)],
    ]
}

pub fn assembly_shaped(groups: usize) -> Synthetic {
    let mut g = ExprGraph::new();
    let mut parts = Vec::new();
    let mut columns = Vec::new();
    let mut values = Vec::new();
    for k in 0..=groups {
        let vars: Vec<VarId> = (0..7).map(|c| g.new_var(format!("part{k}.{c}"))).collect();
        columns.extend(&vars);
        let a = 0.3 + 0.01 * (k % 17) as f64;
        let (s, c) = (a / 2.0).sin_cos();
        let n = (1.0f64 + 0.04 + 0.09).sqrt();
        values.extend([k as f64, 0.5, -0.25, c, s / n, 0.2 * s / n, 0.3 * s / n]);
        let e: Vec<ExprId> = vars.iter().map(|&v| g.var(v)).collect();
        let rot = rotation(&mut g, [e[3], e[4], e[5], e[6]]);
        parts.push(([e[0], e[1], e[2]], rot));
    }
    let mut outputs = Vec::new();
    for k in 0..groups {
        let (pa, ra) = parts[k];
        let (pb, rb) = parts[k + 1];
        let ma = [1.0 + 0.001 * k as f64, 0.2, 0.1];
        let mb = [-0.5, 0.1, 0.3];
        for r in 0..3 {
            let world = |g: &mut ExprGraph, rot: [[ExprId; 3]; 3], p: ExprId, m: [f64; 3]| {
                let terms: Vec<ExprId> = (0..3).map(|c| g.scale(rot[r][c], m[c])).collect();
                let s = g.sum(&terms);
                g.add(s, p)
            };
            let wa = world(&mut g, ra, pa[r], ma);
            let wb = world(&mut g, rb, pb[r], mb);
            outputs.push(g.sub(wa, wb));
        }
        let za = [ra[0][2], ra[1][2], ra[2][2]];
        let xb = [rb[0][0], rb[1][0], rb[2][0]];
        let yb = [rb[0][1], rb[1][1], rb[2][1]];
        outputs.push(g.dot(&za, &xb));
        outputs.push(g.dot(&za, &yb));
    }
    Synthetic {
        graph: g,
        outputs,
        columns,
        values,
    }
}
