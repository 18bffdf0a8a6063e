//! Placements (position and rotation, as written) and their numeric form.

use crate::scalar::{EvalProblem, ParameterValues, Scalar};

/// Tolerance for a rotation matrix to count as orthonormal with determinant +1.
pub const MATRIX_TOLERANCE: f64 = 1e-6;

/// A rotation as the file writes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Rotation {
    /// No rotation.
    Identity,
    /// `[w, x, y, z]`, scalar first; normalized when evaluated.
    Quaternion([Scalar; 4]),
    /// A turn by `angle` (file units) about `axis` (normalized when evaluated).
    AxisAngle {
        /// Axis (not zero).
        axis: [Scalar; 3],
        /// Angle.
        angle: Scalar,
    },
    /// Rows of an orthonormal matrix with determinant +1.
    Matrix([[Scalar; 3]; 3]),
}

/// A frame relative to its parent: `world = R * local + position`.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// Origin in the parent frame.
    pub position: [Scalar; 3],
    /// Orientation.
    pub rotation: Rotation,
}

impl Default for Placement {
    fn default() -> Self {
        Placement {
            position: [
                Scalar::Number(0.0),
                Scalar::Number(0.0),
                Scalar::Number(0.0),
            ],
            rotation: Rotation::Identity,
        }
    }
}

impl Placement {
    /// A placement from plain numbers: a position and a unit quaternion `[w, x, y, z]`.
    pub fn from_numbers(position: [f64; 3], quaternion: [f64; 4]) -> Self {
        Placement {
            position: position.map(Scalar::Number),
            rotation: if quaternion == [1.0, 0.0, 0.0, 0.0] {
                Rotation::Identity
            } else {
                Rotation::Quaternion(quaternion.map(Scalar::Number))
            },
        }
    }
}

/// A placement in numbers: position and unit quaternion `[w, x, y, z]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Origin.
    pub position: [f64; 3],
    /// Unit quaternion, scalar first.
    pub quaternion: [f64; 4],
}

impl Pose {
    /// The identity.
    pub const IDENTITY: Pose = Pose {
        position: [0.0; 3],
        quaternion: [1.0, 0.0, 0.0, 0.0],
    };

    /// Rotation matrix (rows).
    pub fn matrix(&self) -> [[f64; 3]; 3] {
        quaternion_to_matrix(self.quaternion)
    }

    /// `self * other`: the pose of a frame placed by `other` inside a frame placed by
    /// `self`.
    pub fn compose(&self, other: &Pose) -> Pose {
        let r = self.matrix();
        let p = other.position;
        let mut position = self.position;
        for (i, pos) in position.iter_mut().enumerate() {
            *pos += r[i][0] * p[0] + r[i][1] * p[1] + r[i][2] * p[2];
        }
        Pose {
            position,
            quaternion: quaternion_multiply(self.quaternion, other.quaternion),
        }
    }
}

/// Hamilton product of quaternions `[w, x, y, z]`.
pub fn quaternion_multiply(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    [
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    ]
}

/// Rotation matrix (rows) of a unit quaternion `[w, x, y, z]`.
pub fn quaternion_to_matrix(q: [f64; 4]) -> [[f64; 3]; 3] {
    let [w, x, y, z] = q;
    [
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
        ],
        [
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
        ],
    ]
}

/// Whether `m` is the identity matrix to the bit (zeros positive).
fn is_identity(m: &[[f64; 3]; 3]) -> bool {
    let bits = |r: usize, c: usize| m[r][c].to_bits();
    let (one, zero) = (1.0f64.to_bits(), 0.0f64.to_bits());
    bits(0, 0) == one
        && bits(1, 1) == one
        && bits(2, 2) == one
        && (bits(0, 1) | bits(0, 2) | bits(1, 0) | bits(1, 2) | bits(2, 0) | bits(2, 1)) == zero
}

/// Unit quaternion (`w >= 0`) of a rotation matrix given by rows, by the largest of the
/// four diagonal combinations (accurate for every rotation, 180 degree turns included).
pub fn matrix_to_quaternion(m: [[f64; 3]; 3]) -> [f64; 4] {
    // Most matrices of most files are the identity: its quaternion without the square
    // roots and divisions (whose latency was a percent of a small file's run), the same
    // to the bit as the general path gives.
    if is_identity(&m) {
        return [1.0, 0.0, 0.0, 0.0];
    }
    quaternion_of_rotation(m)
}

/// [`matrix_to_quaternion`] worked out.
fn quaternion_of_rotation(m: [[f64; 3]; 3]) -> [f64; 4] {
    let trace = m[0][0] + m[1][1] + m[2][2];
    let q = if trace > m[0][0].max(m[1][1]).max(m[2][2]) {
        let s = (1.0 + trace).sqrt() * 2.0;
        [
            0.25 * s,
            (m[2][1] - m[1][2]) / s,
            (m[0][2] - m[2][0]) / s,
            (m[1][0] - m[0][1]) / s,
        ]
    } else if m[0][0] >= m[1][1] && m[0][0] >= m[2][2] {
        let s = (1.0 + m[0][0] - m[1][1] - m[2][2]).sqrt() * 2.0;
        [
            (m[2][1] - m[1][2]) / s,
            0.25 * s,
            (m[0][1] + m[1][0]) / s,
            (m[0][2] + m[2][0]) / s,
        ]
    } else if m[1][1] >= m[2][2] {
        let s = (1.0 + m[1][1] - m[0][0] - m[2][2]).sqrt() * 2.0;
        [
            (m[0][2] - m[2][0]) / s,
            (m[0][1] + m[1][0]) / s,
            0.25 * s,
            (m[1][2] + m[2][1]) / s,
        ]
    } else {
        let s = (1.0 + m[2][2] - m[0][0] - m[1][1]).sqrt() * 2.0;
        [
            (m[1][0] - m[0][1]) / s,
            (m[0][2] + m[2][0]) / s,
            (m[1][2] + m[2][1]) / s,
            0.25 * s,
        ]
    };
    let sign = if q[0] < 0.0 { -1.0 } else { 1.0 };
    unit(q).map_or([1.0, 0.0, 0.0, 0.0], |u| u.map(|c| sign * c))
}

/// A placement problem and the sub-path it concerns (`rotation.axis`, ...).
pub(crate) struct PlacementProblem {
    pub(crate) sub_path: &'static str,
    pub(crate) message: String,
}

impl From<(&'static str, EvalProblem)> for PlacementProblem {
    fn from((sub_path, e): (&'static str, EvalProblem)) -> Self {
        PlacementProblem {
            sub_path,
            message: e.message,
        }
    }
}

impl Placement {
    /// The placement in numbers with these parameter values, or `None` when it does not
    /// evaluate (an unknown name, a zero axis: what the readers refuse).
    pub fn numbers(&self, values: &ParameterValues, units: crate::Units) -> Option<Pose> {
        self.evaluate(values, units.angle.radians(), None).ok()
    }

    /// Evaluates to numbers (at time `time`, for frames that move), checking the rotation
    /// (zero axis or quaternion, non-orthonormal matrix).
    pub(crate) fn evaluate(
        &self,
        values: &ParameterValues,
        angle_radians: f64,
        time: Option<f64>,
    ) -> Result<Pose, PlacementProblem> {
        let eval3 = |sub: &'static str, v: &[Scalar; 3]| -> Result<[f64; 3], PlacementProblem> {
            let mut out = [0.0; 3];
            for (o, s) in out.iter_mut().zip(v) {
                *o = values.eval(s, time).map_err(|e| (sub, e))?;
            }
            Ok(out)
        };
        let position = eval3("position", &self.position)?;
        let quaternion = match &self.rotation {
            Rotation::Identity => [1.0, 0.0, 0.0, 0.0],
            Rotation::Quaternion(q) => {
                let mut v = [0.0; 4];
                for (o, s) in v.iter_mut().zip(q) {
                    *o = values
                        .eval(s, time)
                        .map_err(|e| ("rotation.quaternion", e))?;
                }
                unit(v).ok_or_else(|| PlacementProblem {
                    sub_path: "rotation.quaternion",
                    message: "the quaternion is zero".into(),
                })?
            }
            Rotation::AxisAngle { axis, angle } => {
                let a = eval3("rotation.axis", axis)?;
                let a = unit(a).ok_or_else(|| PlacementProblem {
                    sub_path: "rotation.axis",
                    message: "the rotation axis is zero".into(),
                })?;
                let theta = values
                    .eval(angle, time)
                    .map_err(|e| ("rotation.angle", e))?
                    * angle_radians;
                let (s, c) = (theta / 2.0).sin_cos();
                [c, s * a[0], s * a[1], s * a[2]]
            }
            Rotation::Matrix(rows) => {
                let mut m = [[0.0; 3]; 3];
                for (mr, r) in m.iter_mut().zip(rows) {
                    *mr = eval3("rotation.matrix", r)?;
                }
                check_rotation_matrix(&m).map_err(|message| PlacementProblem {
                    sub_path: "rotation.matrix",
                    message,
                })?;
                matrix_to_quaternion(m)
            }
        };
        Ok(Pose {
            position,
            quaternion,
        })
    }
}

/// `v` scaled to unit length, or `None` when it is zero (or not finite). Scaled by its
/// largest component first, so that neither a huge vector (`1e200`) overflows the sum of
/// squares nor a tiny one underflows it.
pub fn unit<const N: usize>(v: [f64; N]) -> Option<[f64; N]> {
    let largest = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if !(largest > 0.0 && largest.is_finite()) {
        return None;
    }
    let w = v.map(|x| x / largest);
    let n = w.iter().map(|x| x * x).sum::<f64>().sqrt();
    Some(w.map(|x| x / n))
}

/// Checks that `m` is orthonormal with determinant +1 within [`MATRIX_TOLERANCE`].
pub(crate) fn check_rotation_matrix(m: &[[f64; 3]; 3]) -> Result<(), String> {
    check_rotation_matrix_within(m, MATRIX_TOLERANCE)
}

/// Checks that `m` is orthonormal with determinant +1 within `tolerance`.
pub(crate) fn check_rotation_matrix_within(
    m: &[[f64; 3]; 3],
    tolerance: f64,
) -> Result<(), String> {
    // The identity is a rotation (its products and determinant are exact).
    if is_identity(m) && tolerance >= 0.0 {
        return Ok(());
    }
    for i in 0..3 {
        for j in 0..3 {
            let dot: f64 = (0..3).map(|k| m[i][k] * m[j][k]).sum();
            let want = if i == j { 1.0 } else { 0.0 };
            if (dot - want).abs() > tolerance {
                return Err(format!(
                    "the rotation matrix is not orthonormal (rows {i} and {j}: dot product {dot:.9}, expected {want})"
                ));
            }
        }
    }
    let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    if (det - 1.0).abs() > tolerance {
        return Err(format!(
            "the rotation matrix has determinant {det:.9}, not +1 (a reflection)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The identity's quick answers are the worked-out ones to the bit; a matrix that
    /// differs from it in any bit (a negative zero, the next double) takes the worked-out
    /// path.
    #[test]
    fn the_identity_takes_a_shortcut_to_the_same_answers() {
        let identity = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let fast = matrix_to_quaternion(identity);
        let slow = quaternion_of_rotation(identity);
        assert_eq!(fast.map(f64::to_bits), slow.map(f64::to_bits));
        assert!(check_rotation_matrix_within(&identity, 0.0).is_ok());
        assert!(is_identity(&identity));
        for r in 0..3 {
            for c in 0..3 {
                for changed in [
                    -identity[r][c],
                    f64::from_bits(identity[r][c].to_bits() + 1),
                ] {
                    let mut m = identity;
                    m[r][c] = changed;
                    assert!(!is_identity(&m), "{r} {c} {changed}");
                    assert_eq!(
                        matrix_to_quaternion(m).map(f64::to_bits),
                        quaternion_of_rotation(m).map(f64::to_bits)
                    );
                }
            }
        }
    }
}
