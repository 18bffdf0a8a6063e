//! Free motions per part, from the null space of a cluster's weighted Jacobian:
//! translations, rotations about an axis through a point, screws, and idle spins.

use nalgebra::{DMatrix, DVector};
use rustc_hash::FxHashMap;
use tenon_model::{Assembly, PartKey};
use tenon_system::System;

use super::{FreeMotion, Motion};

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// A unit vector with its first clearly non-zero component positive; tiny components
/// set to 0.
fn canonical(v: [f64; 3]) -> [f64; 3] {
    let n = dot(v, v).sqrt().max(1e-300);
    let mut u = v.map(|x| x / n);
    if let Some(&first) = u.iter().find(|x| x.abs() > 1e-9) {
        if first < 0.0 {
            u = u.map(|x| -x);
        }
    }
    u.map(|x| if x.abs() < 1e-12 { 0.0 } else { x })
}

fn clean(v: [f64; 3], scale: f64) -> [f64; 3] {
    v.map(|x| {
        if x.abs() < 1e-9 * scale.max(1.0) {
            0.0
        } else {
            x
        }
    })
}

/// An orthonormal basis of the columns of `m` (singular values above 1e-9 of the
/// largest), as coefficient vectors over the columns.
fn column_space(m: &DMatrix<f64>) -> Vec<DVector<f64>> {
    if m.ncols() == 0 || !crate::linalg::all_finite(m.iter()) {
        return Vec::new();
    }
    let Some(svd) = crate::linalg::thin_svd(m) else {
        return Vec::new();
    };
    let smax = svd.singular_values.iter().fold(0.0f64, |a, &s| a.max(s));
    svd.singular_values
        .iter()
        .enumerate()
        .filter(|&(_, &s)| s > 1e-9 * smax.max(1e-300))
        .map(|(k, &s)| svd.v_t.row(k).transpose() / s)
        .collect()
}

/// A cluster's null space, given by the complement of its independent rows.
pub(super) struct NullSpace<'a> {
    pub(super) system: &'a System,
    pub(super) state: &'a [f64],
    /// The cluster's global tangent columns.
    pub(super) cols: &'a [usize],
    /// Orthonormal basis of the weighted rows' span.
    pub(super) row_basis: &'a [DVector<f64>],
    /// A tangent column's weight.
    pub(super) weight: &'a dyn Fn(usize) -> f64,
}

/// Free motions per part from the null space of the weighted Jacobian; `jointed`: the
/// parts each part is jointed to (for idle spins).
pub(super) fn free_motions(
    space: &NullSpace<'_>,
    parts: &[PartKey],
    part_index: &FxHashMap<PartKey, usize>,
    jointed: &FxHashMap<PartKey, Vec<PartKey>>,
) -> Vec<FreeMotion> {
    let NullSpace {
        system,
        state,
        cols,
        row_basis,
        weight,
    } = *space;
    let n = cols.len();
    let null = crate::linalg::complete_null_space(row_basis.to_vec(), n, 1e-6);
    if null.is_empty() {
        return Vec::new();
    }
    // Unweighted tangent motions, one column per null vector.
    let d = null.len();
    let motion = DMatrix::from_fn(n, d, |i, k| null[k][i] / weight(cols[i]));
    let mut out = Vec::new();
    for &part in parts {
        let Some(&index) = part_index.get(&part) else {
            continue;
        };
        let Some(first) = cols.iter().position(|&c| c == 6 * index) else {
            continue;
        };
        let block = motion.rows(first, 6).into_owned();
        let origin = system
            .free_parts()
            .get(index)
            .map(|fp| [0, 1, 2].map(|c| state[fp.vars[c].index()]))
            .unwrap_or([0.0; 3]);
        // Motions of this part alone: null combinations that leave every other row 0.
        let others = DMatrix::from_fn(n - 6, d, |i, k| {
            let row = if i < first { i } else { i + 6 };
            motion[(row, k)]
        });
        let local: Vec<DVector<f64>> = null_combinations(&others, d);
        let local_motions: Vec<[f64; 6]> = local
            .iter()
            .map(|z| {
                let m = &block * z;
                [m[0], m[1], m[2], m[3], m[4], m[5]]
            })
            .collect();
        let jointed = jointed.get(&part).map_or(0, |v| v.len());
        for m in part_motions(&block) {
            let idle = jointed >= 2
                && m[3..].iter().any(|x| x.abs() > 1e-12)
                && in_span(&m, &local_motions);
            out.push(FreeMotion {
                part,
                motion: classify(m, origin),
                idle,
            });
        }
    }
    out
}

/// Coefficient vectors `z` (orthonormal) with `m z = 0`.
fn null_combinations(m: &DMatrix<f64>, d: usize) -> Vec<DVector<f64>> {
    if m.nrows() == 0 {
        return (0..d)
            .map(|k| DVector::from_fn(d, |i, _| if i == k { 1.0 } else { 0.0 }))
            .collect();
    }
    let gram = m.tr_mul(m);
    if !crate::linalg::all_finite(gram.iter()) {
        return Vec::new();
    }
    let eig = gram.symmetric_eigen();
    let largest = eig.eigenvalues.iter().fold(0.0f64, |a, &x| a.max(x.abs()));
    eig.eigenvalues
        .iter()
        .enumerate()
        .filter(|&(_, &x)| x.abs() <= 1e-18 * largest.max(1.0))
        .map(|(k, _)| eig.eigenvectors.column(k).into_owned())
        .collect()
}

fn in_span(m: &[f64; 6], span: &[[f64; 6]]) -> bool {
    if span.is_empty() {
        return false;
    }
    let a = DMatrix::from_fn(6, span.len(), |i, k| span[k][i]);
    let v = DVector::from_column_slice(m);
    if !crate::linalg::all_finite(a.iter().chain(v.iter())) {
        return false;
    }
    let svd = a.clone().svd(true, true);
    let Ok(coef) = svd.solve(&v, 1e-12) else {
        return false;
    };
    (&a * coef - &v).norm() <= 1e-8 * v.norm().max(1e-300)
}

/// For each of `parts`, the distinct other parts (grounded ones included) it is jointed
/// to.
pub(super) fn jointed_parts(
    assembly: &Assembly,
    parts: &[PartKey],
) -> FxHashMap<PartKey, Vec<PartKey>> {
    let mut out: FxHashMap<PartKey, Vec<PartKey>> =
        parts.iter().map(|&p| (p, Vec::new())).collect();
    for (_, j) in assembly.joints() {
        if j.suppressed || j.i.part == j.j.part {
            continue;
        }
        for (a, b) in [(j.i.part, j.j.part), (j.j.part, j.i.part)] {
            if let Some(list) = out.get_mut(&a) {
                if !list.contains(&b) {
                    list.push(b);
                }
            }
        }
    }
    out
}

/// Independent motions of one part (its 6 rows of the null-space motions): pure
/// translations first, then rotations with any sliding that a translation already covers
/// taken out.
fn part_motions(block: &DMatrix<f64>) -> Vec<[f64; 6]> {
    let span = column_space(block);
    if span.is_empty() {
        return Vec::new();
    }
    let basis: Vec<[f64; 6]> = span
        .iter()
        .map(|z| {
            let m = block * z;
            [m[0], m[1], m[2], m[3], m[4], m[5]]
        })
        .collect();
    let k = basis.len();
    // Translations: combinations with no rotation.
    let rot = DMatrix::from_fn(3, k, |i, c| basis[c][3 + i]);
    let translations: Vec<[f64; 6]> = null_combinations(&rot, k)
        .iter()
        .map(|z| {
            let mut m = [0.0; 6];
            for (c, b) in basis.iter().enumerate() {
                for i in 0..6 {
                    m[i] += z[c] * b[i];
                }
            }
            m
        })
        .collect();
    let mut out = translations.clone();
    // Rotations: an orthonormal complement, in the rotation part.
    let mut rotations: Vec<[f64; 3]> = Vec::new();
    let mut rotation_motions = Vec::new();
    for b in &basis {
        let mut w = [b[3], b[4], b[5]];
        let mut m = *b;
        for (q, qm) in rotations.iter().zip(&rotation_motions) {
            let c = dot(w, *q);
            w = [w[0] - c * q[0], w[1] - c * q[1], w[2] - c * q[2]];
            let qm: &[f64; 6] = qm;
            for i in 0..6 {
                m[i] -= c * qm[i];
            }
        }
        let n = dot(w, w).sqrt();
        if n > 1e-9 && rotations.len() < 3 {
            rotations.push(w.map(|x| x / n));
            rotation_motions.push(m.map(|x| x / n));
        }
    }
    // Take out sliding that the translations cover.
    for mut m in rotation_motions {
        for t in &translations {
            let dir = [t[0], t[1], t[2]];
            let tn = dot(dir, dir);
            if tn > 0.0 {
                let c = dot([m[0], m[1], m[2]], dir) / tn;
                for i in 0..3 {
                    m[i] -= c * t[i];
                }
            }
        }
        out.push(m);
    }
    out
}

/// The motion `(dp, dtheta)` of a part whose origin is at `origin`, in words.
fn classify(m: [f64; 6], origin: [f64; 3]) -> Motion {
    let omega = [m[3], m[4], m[5]];
    let w2 = dot(omega, omega);
    let dp = [m[0], m[1], m[2]];
    if w2 <= 1e-24 * dot(dp, dp).max(1e-300) {
        return Motion::Translation {
            direction: canonical(dp),
        };
    }
    // Velocity of the point at the world origin: dp - omega x origin.
    let wxo = cross(omega, origin);
    let v0 = [dp[0] - wxo[0], dp[1] - wxo[1], dp[2] - wxo[2]];
    let axis = canonical(omega);
    let point_raw = cross(omega, v0).map(|x| x / w2);
    let scale = dot(origin, origin).sqrt();
    let point = clean(point_raw, scale);
    let h = dot(omega, v0) / w2;
    let pitch = 2.0 * std::f64::consts::PI * h;
    if pitch.abs() <= 1e-9 * scale.max(1.0) {
        Motion::Rotation { axis, point }
    } else {
        Motion::Screw { axis, point, pitch }
    }
}
