//! Branch indicators: the signs that tell which of a joint's two mirror poses it is in.
//!
//! A joint that aligns axes (revolute, slider, fixed, ...) also holds with one axis
//! reversed; `z_i . z_j` (and `x_i . x_j` for joints that lock the twist) changes sign
//! when a solve takes it there, and the solve's report names the joint as flipped.
//!
//! Most markers sit on their parts at numbers, so a marker's world axis is the part's
//! rotation `R(q)` applied to a constant vector (or a constant vector outright on a part
//! placed in numbers): its indicator is worked out in numbers from the state, a few
//! dozen flops, and needs no compiled tape. Only indicators whose frames hold
//! expressions (a marker or grounded part placed by parameters) are compiled, onto one
//! tape. A 37-file corpus spent an eighth of a large file's build compiling indicators
//! that are read twice per solve.
//!
//! Architecture invariant: a numeric indicator equals its expression's value to
//! rounding (the rotation is the model's `quaternion_to_matrix`, the formula of
//! [`crate::frames::quaternion_matrix`]); only its sign beyond `UNDECIDED` is read.

use tenon_expr::ExprId;
use tenon_model::{quaternion_to_matrix, JointKey};

/// The rotation of a frame, as far as it is numbers: `R(q) * matrix` with `q` the
/// quaternion unknowns at `quaternion` (state indices) of a free part, or `matrix`
/// alone for a frame on a part placed in numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NumericRotation {
    pub(crate) quaternion: Option<[u32; 4]>,
    pub(crate) matrix: [[f64; 3]; 3],
}

impl NumericRotation {
    /// Local axis `k` (0 x, 1 y, 2 z) of the frame, as a world axis recipe.
    fn axis(&self, k: usize) -> NumericAxis {
        NumericAxis {
            quaternion: self.quaternion,
            local: [self.matrix[0][k], self.matrix[1][k], self.matrix[2][k]],
        }
    }
}

/// A world axis in numbers: `R(q) * local`, or `local` itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NumericAxis {
    quaternion: Option<[u32; 4]>,
    local: [f64; 3],
}

impl NumericAxis {
    /// The axis at `state` (NaN where the state is too short: then no sign is read).
    fn at(&self, state: &[f64]) -> [f64; 3] {
        let Some(q) = self.quaternion else {
            return self.local;
        };
        let get = |k: usize| state.get(q[k] as usize).copied().unwrap_or(f64::NAN);
        let r = quaternion_to_matrix([get(0), get(1), get(2), get(3)]);
        r.map(|row| row[0] * self.local[0] + row[1] * self.local[1] + row[2] * self.local[2])
    }
}

/// One indicator: in numbers, or row `k` of the compiled indicator tape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Indicator {
    Numeric([NumericAxis; 2]),
    Compiled(usize),
}

/// Every joint's branch indicators, in joint order, and the expressions of those
/// compiled (the rows of the indicator tape, in that order).
#[derive(Debug, Clone, Default)]
pub(crate) struct Branches {
    pub(crate) indicators: Vec<(JointKey, Indicator)>,
    pub(crate) expressions: Vec<ExprId>,
}

impl Branches {
    /// Room for the indicators of `joints` joints (most have one).
    pub(crate) fn with_capacity(joints: usize) -> Self {
        Branches {
            indicators: Vec::with_capacity(joints),
            ..Branches::default()
        }
    }

    /// Adds the indicator of joint `joint` on local axis `axis` of both its frames: in
    /// numbers when both frames' rotations are (`numeric`), else `expression()` (made
    /// only then) compiled.
    pub(crate) fn push(
        &mut self,
        joint: JointKey,
        axis: usize,
        numeric: [Option<NumericRotation>; 2],
        expression: impl FnOnce() -> ExprId,
    ) {
        let indicator = match numeric {
            [Some(i), Some(j)] => Indicator::Numeric([i.axis(axis), j.axis(axis)]),
            _ => {
                self.expressions.push(expression());
                Indicator::Compiled(self.expressions.len() - 1)
            }
        };
        self.indicators.push((joint, indicator));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.indicators.is_empty()
    }

    /// The indicators' values at `state`; `compiled` holds the compiled ones' values
    /// (by row) at that state.
    pub(crate) fn values(&self, state: &[f64], compiled: &[f64]) -> Vec<f64> {
        self.indicators
            .iter()
            .map(|(_, indicator)| match indicator {
                Indicator::Numeric([i, j]) => {
                    let (a, b) = (i.at(state), j.at(state));
                    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
                }
                Indicator::Compiled(k) => compiled.get(*k).copied().unwrap_or(f64::NAN),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::quaternion_matrix;
    use tenon_expr::ExprGraph;

    /// The numeric rotation is the expression rotation to rounding.
    #[test]
    fn numeric_rotation_is_the_expression_rotation() {
        let mut g = ExprGraph::new();
        let vars = [0, 1, 2, 3].map(|k| g.new_var(format!("q{k}")));
        let e = vars.map(|v| g.var(v));
        let r = quaternion_matrix(&mut g, e);
        let outputs: Vec<ExprId> = r.iter().flatten().copied().collect();
        for q in [
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.5f64.sqrt(), 0.0, 0.0, 0.5f64.sqrt()],
            [0.3, -0.5, 0.7, 0.2],
        ] {
            let n = (q.iter().map(|x| x * x).sum::<f64>()).sqrt();
            let q = q.map(|x| x / n);
            let expected = g.evaluate(&outputs, &q, &[]).expect("evaluates");
            let got: Vec<f64> = quaternion_to_matrix(q).iter().flatten().copied().collect();
            for (a, b) in got.iter().zip(&expected) {
                assert!((a - b).abs() < 1e-15, "q = {q:?}: {got:?} {expected:?}");
            }
        }
    }

    #[test]
    fn a_numeric_indicator_reads_the_quaternion_at_its_state_indices() {
        let key = JointKey::default();
        let mut branches = Branches::default();
        // Frame i: z of a free part whose quaternion is at state[3..7]; frame j: a
        // fixed frame whose z is the world's -z.
        let i = NumericRotation {
            quaternion: Some([3, 4, 5, 6]),
            matrix: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        };
        let j = NumericRotation {
            quaternion: None,
            matrix: [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]],
        };
        branches.push(key, 2, [Some(i), Some(j)], || unreachable!());
        assert!(branches.expressions.is_empty());
        let unturned = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        assert_eq!(branches.values(&unturned, &[]), vec![-1.0]);
        // Half a turn about x: z becomes -z.
        let turned = [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0];
        assert_eq!(branches.values(&turned, &[]), vec![1.0]);
        // A state too short reads no sign.
        assert!(branches.values(&[0.0; 3], &[])[0].is_nan());
    }

    #[test]
    fn a_frame_with_expressions_is_compiled() {
        let mut branches = Branches::default();
        let mut g = ExprGraph::new();
        let e = g.constant(0.25);
        let i = NumericRotation {
            quaternion: None,
            matrix: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        };
        branches.push(JointKey::default(), 0, [Some(i), None], || e);
        assert_eq!(branches.expressions, vec![e]);
        assert_eq!(branches.values(&[], &[0.25]), vec![0.25]);
    }
}
