//! Closed plane curves on parts and the joints that follow them: the cam (a point stays
//! on a curve) and the curve contact (two curves touch).
//!
//! A profile is drawn in a marker's xy plane and traced by a parameter `s` in
//! `[0, 2 pi)` (an extra unknown of the joint, wrapped by the state update):
//! - circle: `c(s) = r (cos s, sin s)`;
//! - polar radii `r_0..r_{n-1}`: `c(s) = rho(s) (cos s, sin s)`, `rho` the periodic
//!   uniform cubic B-spline through the radii at `s = 2 pi k / n`;
//! - points `p_0..p_{n-1}`: `c(s)` the periodic uniform cubic B-spline through the points
//!   at `s = 2 pi k / n` (each coordinate on its own).
//!
//! The spline's coefficients solve the interpolation conditions exactly, so the curve
//! passes through every given radius or point. Tangents `c'(s)` are symbolic derivatives
//! with respect to the contact parameter.

use std::f64::consts::TAU;

use tenon_expr::{ExprGraph, ExprId, Node, VarId};
use tenon_model::CamProfile;

use crate::error::SystemError;
use crate::frames::{offset, sub3, Frame, X, Y, Z};
use crate::residual::{angle, length, ContactSearch, JointBuilder, Residual};

/// Samples per given radius or point (and for a circle, in all) when a contact start is
/// searched.
const SAMPLES_PER_KNOT: usize = 16;
const CIRCLE_SAMPLES: usize = 64;
/// At most this many samples per curve (the refinement after the search finds the
/// contact between samples).
const MAX_SAMPLES: usize = 1024;

/// A profile lowered into expressions.
#[derive(Debug, Clone)]
pub(crate) enum LoweredProfile {
    /// The radius.
    Circle(ExprId),
    /// Spline coefficients of `rho`.
    Polar(Vec<ExprId>),
    /// Spline coefficients of x and of y.
    Points(Vec<ExprId>, Vec<ExprId>),
}

impl LoweredProfile {
    /// How many samples a start search takes along the curve.
    fn samples(&self) -> usize {
        match self {
            LoweredProfile::Circle(_) => CIRCLE_SAMPLES,
            LoweredProfile::Polar(c) | LoweredProfile::Points(c, _) => {
                (SAMPLES_PER_KNOT * c.len()).min(MAX_SAMPLES)
            }
        }
    }
}

/// The profiles of one joint: on marker i (curve contact) and on marker j (cam, curve
/// contact).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Profiles<'a> {
    pub(crate) i: Option<&'a LoweredProfile>,
    pub(crate) j: Option<&'a LoweredProfile>,
}

impl ContactSearch {
    /// The unknowns of the searched parameters (non-variables are skipped).
    pub(crate) fn parameters(&self, g: &ExprGraph) -> Vec<Option<VarId>> {
        self.curves
            .iter()
            .map(|&(s, _, _)| match g.node(s) {
                Node::Var(v) => Some(v),
                _ => None,
            })
            .collect()
    }

    /// The best start: indices of samples (one per curve) that are closest, from world
    /// points sampled per curve (and the target point for a single curve).
    pub(crate) fn best(samples: &[Vec<[f64; 3]>], point: Option<[f64; 3]>) -> Vec<usize> {
        let dist2 = |a: [f64; 3], b: [f64; 3]| (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>();
        match (samples, point) {
            ([one], Some(p)) => {
                let k = nearest(one.iter().map(|&q| dist2(q, p)));
                vec![k]
            }
            ([a, b], _) => {
                let mut best = (f64::INFINITY, 0, 0);
                for (ka, &pa) in a.iter().enumerate() {
                    for (kb, &pb) in b.iter().enumerate() {
                        let d = dist2(pa, pb);
                        if d < best.0 {
                            best = (d, ka, kb);
                        }
                    }
                }
                vec![best.1, best.2]
            }
            _ => vec![0; samples.len()],
        }
    }
}

fn nearest(d: impl Iterator<Item = f64>) -> usize {
    d.enumerate()
        .fold(
            (0, f64::INFINITY),
            |best, (k, x)| {
                if x < best.1 {
                    (k, x)
                } else {
                    best
                }
            },
        )
        .0
}

/// Lowers a profile from its scalars, lowered in file order (circle: the radius; polar:
/// the radii; points: x0, y0, x1, y1, ...).
pub(crate) fn lower_profile(
    g: &mut ExprGraph,
    profile: &CamProfile,
    values: &[ExprId],
) -> LoweredProfile {
    match profile {
        CamProfile::Circle { .. } => {
            LoweredProfile::Circle(values.first().copied().unwrap_or(g.zero()))
        }
        CamProfile::Polar(_) => LoweredProfile::Polar(spline_coefficients(g, values)),
        CamProfile::Points(_) => {
            let xs: Vec<ExprId> = values.iter().step_by(2).copied().collect();
            let ys: Vec<ExprId> = values.iter().skip(1).step_by(2).copied().collect();
            LoweredProfile::Points(spline_coefficients(g, &xs), spline_coefficients(g, &ys))
        }
    }
}

/// Coefficients of the periodic uniform cubic B-spline through `values`: the solution
/// of the circulant system `c_(k-1) + 4 c_k + c_(k+1) = 6 v_k`.
///
/// The operator factors as `(1/r) (1 + r E^-1) (1 + r E)` with `E` the periodic shift
/// and `r = 2 - sqrt 3` (`r + 1/r = 4`), so `c = 6 r (1 + r E)^-1 (1 + r E^-1)^-1 v`: a
/// forward recursion `y_k = v_k - r y_(k-1)` then a backward one `z_k = y_k - r z_(k+1)`,
/// each started from its periodic series (`y_0 = sum_j (-r)^j v_(-j)`, terms while
/// `r^j` is above rounding: about 32). Both recursions contract (`r` is about 0.27), and
/// the whole costs about 3n nodes, so a profile of thousands of expression points (a
/// formula per point) builds and evaluates in time linear in n. Constant values fold to
/// constants as they are built.
pub(crate) fn spline_coefficients(g: &mut ExprGraph, values: &[ExprId]) -> Vec<ExprId> {
    let n = values.len();
    if n == 0 {
        return Vec::new();
    }
    let r = 2.0 - 3.0f64.sqrt();
    // `sum_j (-r)^j x(j)` for the periodic sequence `x`, truncated where `r^j` no longer
    // counts.
    let series = |g: &mut ExprGraph, x: &dyn Fn(usize) -> ExprId| {
        let mut terms = Vec::new();
        let mut weight = 1.0f64;
        let mut j = 0;
        while weight.abs() > SPLINE_WEIGHT_FLOOR {
            terms.push(g.scale(x(j), weight));
            weight *= -r;
            j += 1;
        }
        g.sum(&terms)
    };
    // Forward: y_k + r y_(k-1) = v_k.
    let mut y = Vec::with_capacity(n);
    y.push(series(g, &|j| values[(n - j % n) % n]));
    for k in 1..n {
        let carried = g.scale(y[k - 1], r);
        y.push(g.sub(values[k], carried));
    }
    // Backward: z_k + r z_(k+1) = y_k.
    let mut z = vec![g.zero(); n];
    z[n - 1] = series(g, &|j| y[(n - 1 + j) % n]);
    for k in (0..n - 1).rev() {
        let carried = g.scale(z[k + 1], r);
        z[k] = g.sub(y[k], carried);
    }
    z.into_iter().map(|zk| g.scale(zk, 6.0 * r)).collect()
}

/// Series terms below this weight are left out (they change a coefficient by less than
/// its rounding).
const SPLINE_WEIGHT_FLOOR: f64 = 1e-18;

/// The periodic spline with coefficients `c` at `s` (one node: see
/// [`ExprGraph::spline`]; `s` in `[0, 2 pi)` spans the n knots).
fn spline_value(g: &mut ExprGraph, c: &[ExprId], s: ExprId) -> ExprId {
    let u = g.scale(s, c.len() as f64 / TAU);
    let table = g.spline_table(c);
    g.spline(table, u, 0)
}

/// The curve's point `c(s)` in its marker's plane.
fn curve_point(g: &mut ExprGraph, profile: &LoweredProfile, s: ExprId) -> [ExprId; 2] {
    let polar = |g: &mut ExprGraph, rho: ExprId| {
        let (c, sn) = (g.cos(s), g.sin(s));
        [g.mul(rho, c), g.mul(rho, sn)]
    };
    match profile {
        LoweredProfile::Circle(r) => polar(g, *r),
        LoweredProfile::Polar(c) => {
            let rho = spline_value(g, c, s);
            polar(g, rho)
        }
        LoweredProfile::Points(cx, cy) => [spline_value(g, cx, s), spline_value(g, cy, s)],
    }
}

/// `O + a x + b y` for a point `(a, b)` in the frame's plane.
fn in_world(g: &mut ExprGraph, f: &Frame, p: [ExprId; 2]) -> [ExprId; 3] {
    let (o, x, y) = (f.origin(g), f.x(g), f.y(g));
    std::array::from_fn(|k| {
        let ax = g.mul(p[0], x[k]);
        let by = g.mul(p[1], y[k]);
        g.sum(&[o[k], ax, by])
    })
}

/// A cam: `d . x_j = c_x(s)`, `d . y_j = c_y(s)`, `d . z_j = 0` with `d = O_i - O_j`
/// and `c` the profile on marker j (3 equations, one unknown: 2 degrees of freedom
/// removed).
pub(crate) fn cam(
    b: &mut dyn JointBuilder,
    i: &Frame,
    j: &Frame,
    profile: Option<&LoweredProfile>,
) -> Vec<Residual> {
    // The contact parameter starts at the polar angle of O_i in marker j's plane (the
    // builder wraps it into [0, 2 pi)); a points profile searches its samples instead.
    let start = {
        let g = b.graph();
        let d = offset(g, i, j);
        let (y, x) = (j.along(g, d, Y), j.along(g, d, X));
        g.atan2(y, x)
    };
    let s = b.extra_unknown("cam contact", start);
    let Some(profile) = profile else {
        return Vec::new();
    };
    let c = curve_point(b.graph(), profile, s);
    let g = b.graph();
    let d = offset(g, i, j);
    let dx = j.along(g, d, X);
    let dy = j.along(g, d, Y);
    let residuals = vec![
        length(g.sub(dx, c[0])),
        length(g.sub(dy, c[1])),
        length(j.along(g, d, Z)),
    ];
    if let LoweredProfile::Points(..) = profile {
        let traced = in_world(b.graph(), j, c);
        let point = i.origin(b.graph());
        b.contact_search(ContactSearch {
            curves: vec![(s, traced, profile.samples())],
            point: Some(point),
            residuals: residuals.iter().map(|r| r.expr).collect(),
        });
    }
    residuals
}

/// A curve contact between `c_i(s_i)` (in marker i's plane) and `c_j(s_j)` (in marker
/// j's), with `P_i = O_i + c_ix x_i + c_iy y_i`, tangents `T_i = c_ix' x_i + c_iy' y_i`
/// (likewise j):
/// - `(P_i - P_j) . x_j = 0`, `(P_i - P_j) . y_j = 0` (the points meet, seen along
///   `z_j`: the curves are the sections of extruded profiles, as in a plane cam);
/// - `(T_i x T_j) . z_j / (|T_i| |T_j|) = 0`, i.e.
///   `(c_jy' T_i . x_j - c_jx' T_i . y_j) / (|c_i'| |c_j'|) = 0` (the tangents are
///   parallel there: the curves touch, they do not cross).
///
/// Three equations, two unknowns `s_i`, `s_j`: 1 degree of freedom removed. Both
/// parameters start at the closest pair of samples at the loaded pose.
pub(crate) fn curve_contact(
    b: &mut dyn JointBuilder,
    i: &Frame,
    j: &Frame,
    profiles: Profiles<'_>,
) -> Vec<Residual> {
    let zero = b.graph().zero();
    let si = b.extra_unknown("contact on i", zero);
    let sj = b.extra_unknown("contact on j", zero);
    let (Some(pi), Some(pj)) = (profiles.i, profiles.j) else {
        return Vec::new();
    };
    let g = b.graph();
    let ci = curve_point(g, pi, si);
    let cj = curve_point(g, pj, sj);
    let wi = in_world(g, i, ci);
    let wj = in_world(g, j, cj);
    let tangent = |g: &mut ExprGraph, c: [ExprId; 2], s: ExprId| match g.node(s) {
        Node::Var(v) => [g.derivative(c[0], v), g.derivative(c[1], v)],
        _ => [g.zero(), g.zero()],
    };
    let ti = tangent(g, ci, si);
    let tj = tangent(g, cj, sj);
    let ti_world = {
        let (x, y) = (i.x(g), i.y(g));
        let t: [ExprId; 3] = std::array::from_fn(|k| {
            let a = g.mul(ti[0], x[k]);
            let bb = g.mul(ti[1], y[k]);
            g.add(a, bb)
        });
        t
    };
    let d = sub3(g, wi, wj);
    let rx = j.along(g, d, X);
    let ry = j.along(g, d, Y);
    let tix = j.along(g, ti_world, X);
    let tiy = j.along(g, ti_world, Y);
    let cross = {
        let a = g.mul(tj[1], tix);
        let bb = g.mul(tj[0], tiy);
        g.sub(a, bb)
    };
    let norm = |g: &mut ExprGraph, t: [ExprId; 2]| {
        let s = g.dot(&t, &t);
        g.sqrt(s)
    };
    let ni = norm(g, ti);
    let nj = norm(g, tj);
    let scale = g.mul(ni, nj);
    let parallel = g.div(cross, scale);
    b.contact_search(ContactSearch {
        curves: vec![(si, wi, pi.samples()), (sj, wj, pj.samples())],
        point: None,
        residuals: vec![rx, ry, parallel],
    });
    vec![length(rx), length(ry), angle(parallel)]
}

/// Starts a joint's contact parameters at the closest samples (see [`ContactSearch`]),
/// then refines them. The sampled points and the joint's equations are compiled into
/// small tapes first (a profile with many points is a long expression).
pub(crate) fn start(
    graph: &mut ExprGraph,
    search: &ContactSearch,
    state: &mut [f64],
    params: &[f64],
) -> Result<(), SystemError> {
    let Some(vars) = search
        .parameters(graph)
        .into_iter()
        .collect::<Option<Vec<VarId>>>()
    else {
        return Ok(());
    };
    let mut samples = Vec::with_capacity(search.curves.len());
    for (&(_, point, count), var) in search.curves.iter().zip(&vars) {
        let tape = graph.compile(&point, &[])?;
        let mut ws = tape.workspace();
        let saved = state[var.index()];
        let mut traced = Vec::with_capacity(count);
        let mut v = [0.0; 3];
        for m in 0..count {
            state[var.index()] = TAU * m as f64 / count as f64;
            tape.eval_residuals(&mut ws, state, params, &mut v)?;
            traced.push(v);
        }
        state[var.index()] = saved;
        samples.push(traced);
    }
    let point = match search.point {
        Some(p) => {
            let v = graph.evaluate(&p, state, params)?;
            Some([v[0], v[1], v[2]])
        }
        None => None,
    };
    let best = ContactSearch::best(&samples, point);
    for ((var, &k), traced) in vars.iter().zip(&best).zip(&samples) {
        state[var.index()] = TAU * k as f64 / traced.len() as f64;
    }
    refine_contact(graph, &search.residuals, &vars, state, params)
}

/// Gauss-Newton on `residuals` over the contact parameters `vars` alone (a step is kept
/// only when it lowers the residuals), then wrapped into `[0, 2 pi)`.
fn refine_contact(
    graph: &mut ExprGraph,
    residuals: &[ExprId],
    vars: &[VarId],
    state: &mut [f64],
    params: &[f64],
) -> Result<(), SystemError> {
    const ITERATIONS: usize = 30;
    let tape = graph.compile(residuals, vars)?;
    let mut ws = tape.workspace();
    let entries: Vec<(usize, usize)> = tape.pattern().entries().collect();
    let norm = |r: &[f64]| r.iter().map(|x| x * x).sum::<f64>();
    let mut r = vec![0.0; residuals.len()];
    let mut values = vec![0.0; entries.len()];
    tape.eval(&mut ws, state, params, &mut r, &mut values)?;
    for _ in 0..ITERATIONS {
        if norm(&r) < 1e-30 {
            break;
        }
        let mut jac = nalgebra::DMatrix::<f64>::zeros(r.len(), vars.len());
        for (&(row, col), &v) in entries.iter().zip(&values) {
            jac[(row, col)] = v;
        }
        let rhs = nalgebra::DVector::from_column_slice(&r);
        // An extreme profile (radii near 1e300) overflows: keep the sampled start
        // rather than hand the SVD a matrix it cannot take.
        if !(jac.iter().all(|x| x.is_finite()) && rhs.iter().all(|x| x.is_finite())) {
            break;
        }
        let Ok(step) = jac.svd(true, true).solve(&rhs, 1e-12) else {
            break;
        };
        let old: Vec<f64> = vars.iter().map(|v| state[v.index()]).collect();
        for (var, d) in vars.iter().zip(step.iter()) {
            state[var.index()] -= d.clamp(-0.5, 0.5);
        }
        let mut next = vec![0.0; r.len()];
        let mut next_values = vec![0.0; values.len()];
        tape.eval(&mut ws, state, params, &mut next, &mut next_values)?;
        // A NaN counts as no improvement.
        let improved = norm(&next) < norm(&r);
        if !improved {
            for (var, x) in vars.iter().zip(old) {
                state[var.index()] = x;
            }
            break;
        }
        r = next;
        values = next_values;
    }
    for var in vars {
        state[var.index()] = state[var.index()].rem_euclid(TAU);
    }
    Ok(())
}
