//! The layout of unknowns and of tangent steps, and the retraction between them.
//!
//! A state holds 7 numbers per free part (`p`, then a unit quaternion `q = (w, x, y,
//! z)`), then one per extra unknown (contact parameters, angle-joint azimuths). A step
//! lives in the tangent space: 6 columns per free part (`dp`, then a world-frame rotation
//! vector `dtheta`), then one per extra unknown. A step is applied by the retraction
//! `p += dp`, `q <- exp(dtheta) q`, extra unknowns `+= d` wrapped into `[0, 2 pi)`.
//!
//! **Invariant:** this module is the only place that knows the 7/6 layout's arithmetic
//! and the exponential map; everything else asks it.

use std::ops::Range;

use tenon_model::quaternion_multiply;

/// State entries per free part: `p` (3) and `q` (4).
pub const STATE_PER_PART: usize = 7;
/// Tangent columns per free part: `dp` (3) and `dtheta` (3).
pub const TANGENT_PER_PART: usize = 6;

/// What one tangent column moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TangentColumn {
    /// Free part `part`'s translation along world axis `axis` (0, 1, 2).
    Translation {
        /// Index among the free parts.
        part: usize,
        /// World axis.
        axis: usize,
    },
    /// Free part `part`'s rotation about world axis `axis`.
    Rotation {
        /// Index among the free parts.
        part: usize,
        /// World axis.
        axis: usize,
    },
    /// Extra unknown `k`.
    Extra(usize),
}

/// The layout of a state and its tangent space: how many free parts, how many extra
/// unknowns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    parts: usize,
    extras: usize,
}

impl Layout {
    /// `parts` free parts and `extras` extra unknowns.
    pub fn new(parts: usize, extras: usize) -> Layout {
        Layout { parts, extras }
    }
    /// Free parts.
    pub fn parts(self) -> usize {
        self.parts
    }
    /// Extra unknowns.
    pub fn extras(self) -> usize {
        self.extras
    }
    /// Length of a state.
    pub fn state_len(self) -> usize {
        STATE_PER_PART * self.parts + self.extras
    }
    /// Dimension of the tangent space.
    pub fn dimension(self) -> usize {
        TANGENT_PER_PART * self.parts + self.extras
    }
    /// The tangent columns of free part `k`.
    pub fn part_columns(self, k: usize) -> Range<usize> {
        TANGENT_PER_PART * k..TANGENT_PER_PART * (k + 1)
    }
    /// The state entries of free part `k`.
    pub fn part_state(self, k: usize) -> Range<usize> {
        STATE_PER_PART * k..STATE_PER_PART * (k + 1)
    }
    /// The tangent column of extra unknown `k`.
    pub fn extra_column(self, k: usize) -> usize {
        TANGENT_PER_PART * self.parts + k
    }
    /// The state entry of extra unknown `k`.
    pub fn extra_state(self, k: usize) -> usize {
        STATE_PER_PART * self.parts + k
    }
    /// What tangent column `col` moves (`None` past the dimension).
    pub fn column(self, col: usize) -> Option<TangentColumn> {
        let n6 = TANGENT_PER_PART * self.parts;
        if col < n6 {
            let (part, c) = (col / TANGENT_PER_PART, col % TANGENT_PER_PART);
            Some(if c < 3 {
                TangentColumn::Translation { part, axis: c }
            } else {
                TangentColumn::Rotation { part, axis: c - 3 }
            })
        } else if col < n6 + self.extras {
            Some(TangentColumn::Extra(col - n6))
        } else {
            None
        }
    }
}

/// `exp` of a rotation vector as a unit quaternion.
pub(crate) fn exp_map(theta: [f64; 3]) -> [f64; 4] {
    let angle = (theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]).sqrt();
    if angle < 1e-12 {
        let q = [1.0, theta[0] / 2.0, theta[1] / 2.0, theta[2] / 2.0];
        let n = q.iter().map(|c| c * c).sum::<f64>().sqrt();
        return q.map(|c| c / n);
    }
    let (s, c) = (angle / 2.0).sin_cos();
    [
        c,
        s * theta[0] / angle,
        s * theta[1] / angle,
        s * theta[2] / angle,
    ]
}

/// `G(q)` rows: `dq_k / dtheta_r` for `q <- exp(dtheta) * q` at `dtheta = 0`.
pub(crate) fn quaternion_tangent(q: [f64; 4]) -> [[f64; 3]; 4] {
    let [w, x, y, z] = q;
    [
        [-x / 2.0, -y / 2.0, -z / 2.0],
        [w / 2.0, z / 2.0, -y / 2.0],
        [-z / 2.0, w / 2.0, x / 2.0],
        [y / 2.0, -x / 2.0, w / 2.0],
    ]
}

/// The retraction of one part's pose `[p, q]` by a step `[dp, dtheta]`: `p += dp`,
/// `q <- exp(dtheta) q` (exact exponential map, renormalised).
///
/// Both are read where they are (a cluster's local state and its step): copied into
/// arrays first, the step's three angles were loaded across two of the copy's stores,
/// which stalls until the stores are done (14% of this function's time in a solve,
/// as the compiler laid out the copy in one build).
pub(crate) fn retract_pose(pose: &[f64; 7], step: &[f64; 6]) -> [f64; 7] {
    let q = quaternion_multiply(
        exp_map([step[3], step[4], step[5]]),
        [pose[3], pose[4], pose[5], pose[6]],
    );
    let n = q.iter().map(|c| c * c).sum::<f64>().sqrt();
    [
        pose[0] + step[0],
        pose[1] + step[1],
        pose[2] + step[2],
        q[0] / n,
        q[1] / n,
        q[2] / n,
        q[3] / n,
    ]
}

/// The retraction of an extra unknown (an angle-like parameter): `x + d` in `[0, 2 pi)`.
pub(crate) fn retract_extra(x: f64, d: f64) -> f64 {
    (x + d).rem_euclid(std::f64::consts::TAU)
}

/// A Jacobian in the tangent space, as `(row, column, value)` entries (a column may
/// appear more than once per row; entries add).
#[derive(Debug, Clone, PartialEq)]
pub struct TangentJacobian {
    /// Rows (equations).
    pub rows: usize,
    /// Columns (6 per free part: `dp`, then `dtheta`; then one per extra unknown).
    pub columns: usize,
    /// Entries.
    pub entries: Vec<(u32, u32, f64)>,
}

impl TangentJacobian {
    /// `out += J^T y` (`y` one value per row, `out` one per column; entries out of
    /// either's range are skipped).
    pub fn add_transposed(&self, y: &[f64], out: &mut [f64]) {
        for &(r, c, v) in &self.entries {
            if let (Some(&m), Some(slot)) = (y.get(r as usize), out.get_mut(c as usize)) {
                *slot += v * m;
            }
        }
    }

    /// Row-major dense form.
    pub fn to_dense(&self) -> Vec<f64> {
        let mut m = vec![0.0; self.rows * self.columns];
        for &(r, c, v) in &self.entries {
            if let Some(x) = m.get_mut(r as usize * self.columns + c as usize) {
                *x += v;
            }
        }
        m
    }
}
