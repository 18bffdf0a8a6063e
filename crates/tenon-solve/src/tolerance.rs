//! The solver's tolerances, in one place, and how they scale with the model.
//!
//! A residual is computed from world coordinates, and a coordinate `x` is known to about
//! `|x| * f64::EPSILON`: an assembly 300 m from the origin in millimetres cannot bring a
//! point-on-point residual below about 1e-10, whatever the solver does. So the length
//! tolerance grows with the model's reach (how far its parts lie from the origin, see
//! [`tenon_system::System::reach`]): `max(TOLERANCE, RELATIVE_TOLERANCE * reach)`, about
//! 450 units in the last place of the largest coordinate. Angles (and direction
//! cosines) do not grow with the model: their tolerance is [`TOLERANCE`] radians. (A 10 m
//! bar 1e-10 rad off is 1e-6 mm off at its far end: measuring a conflict, the diagnosis
//! holds the other joints [`MEASURE_FACTOR`] tighter where it can.)
//!
//! The geometric tolerance is the user's (`--tolerance`, the file's `settings`): joints
//! that repeat others and disagree with them by less than it are placed by least squares
//! and reported as over-constrained with their disagreement; by more, conflicting. It is
//! never below the length tolerance.
//!
//! Architecture invariant: every comparison of a residual with a tolerance, in the
//! solve, the diagnosis, drag and the kinematic runs, goes through [`Tolerances`], so a
//! residual is judged the same way everywhere.

use tenon_system::{Quantity, System};

use crate::SolveOptions;

/// The tolerance (model units for lengths, radians for angles) of a model within 1,000
/// units of the origin; the floor of every tolerance.
pub const TOLERANCE: f64 = 1e-10;

/// Length residuals are held to this fraction of the model's reach, when that is more
/// than [`TOLERANCE`].
pub const RELATIVE_TOLERANCE: f64 = 1e-13;

/// Measuring a conflict, the diagnosis first holds the other joints this much tighter
/// than the tolerances (falling back to them where that cannot be reached), so that the
/// conflict's size is not blurred by the others' leeway.
pub const MEASURE_FACTOR: f64 = 1e-3;

/// A cluster whose condition estimate (see `Conditioning`) exceeds this is reported as
/// ill-conditioned, naming the joints whose rows nearly repeat one another: a row that
/// adds less than 1e-5 of its length to the rows before it still counts (it is
/// independent down to [`DEPENDENT_ROW`]), but a change of that size in the model or in
/// rounding can make it a repetition or a conflict.
pub const CONDITION_WARNING: f64 = 1e5;

/// A row adding less than this fraction of its own length is dependent (the
/// diagnosis's and the solve's sparse rank).
pub const DEPENDENT_ROW: f64 = 1e-8;

/// A dependent row whose residual disagrees with its combination by more than this
/// (model units or radians, scaled like the row's tolerance for models far from the
/// origin) is conflicting.
pub const CONSISTENT: f64 = 1e-8;

/// Singular values below this fraction of the largest count as zero (rank decisions).
pub const RANK_TOLERANCE: f64 = 1e-9;

/// The tolerances a solve judged by: stated in every report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerances {
    /// Length residuals (model units).
    pub length: f64,
    /// Angle residuals and direction cosines (radians).
    pub angle: f64,
    /// Disagreements of repeated joints that are placed rather than refused (model
    /// units; at least `length`).
    pub geometric: f64,
    /// The model's reach the length tolerance was scaled by (model units).
    pub reach: f64,
}

impl Tolerances {
    /// The tolerances for `options` on a model reaching `reach` units from the origin.
    pub fn new(options: &SolveOptions, reach: f64) -> Tolerances {
        let reach = if reach.is_finite() { reach.abs() } else { 0.0 };
        let length = options.tolerance.max(RELATIVE_TOLERANCE * reach);
        let angle = options.tolerance;
        let geometric = options
            .geometric_tolerance
            .filter(|g| g.is_finite())
            .map_or(length, |g| g.max(length));
        Tolerances {
            length,
            angle,
            geometric,
            reach,
        }
    }

    /// The tolerances for `options` on `system` at `state`.
    pub fn at(system: &System, state: &[f64], options: &SolveOptions) -> Tolerances {
        Tolerances::new(options, system.reach(state))
    }

    /// The tolerance of a residual measuring `quantity`.
    pub fn of(&self, quantity: Quantity) -> f64 {
        match quantity {
            Quantity::Length => self.length,
            Quantity::Angle => self.angle,
        }
    }

    /// Per equation and per joint limit of `system`, its tolerance.
    pub(crate) fn per_row(&self, system: &System) -> RowTolerances {
        let turn = self.geometric_turn();
        RowTolerances {
            equations: system
                .equations()
                .iter()
                .map(|e| self.of(e.quantity))
                .collect(),
            placed: system
                .equations()
                .iter()
                .map(|e| match e.quantity {
                    Quantity::Length => self.geometric,
                    Quantity::Angle => turn,
                })
                .collect(),
            placing: self.geometric > self.length,
            limits: system
                .limits()
                .iter()
                .map(|l| match l.coordinate {
                    tenon_model::Coordinate::Angle => self.angle,
                    tenon_model::Coordinate::Distance => self.length,
                })
                .collect(),
        }
    }

    /// The geometric tolerance as a turn (radians): the angle that moves no point of
    /// the model by more than the geometric tolerance, at least the angle tolerance.
    pub fn geometric_turn(&self) -> f64 {
        (self.geometric / self.reach.max(1.0)).max(self.angle)
    }
}

/// The tolerance of each equation (in [`System::equations`] order) and of each joint
/// limit (in [`System::limits`] order) of a system.
#[derive(Debug, Clone)]
pub(crate) struct RowTolerances {
    pub(crate) equations: Vec<f64>,
    pub(crate) limits: Vec<f64>,
    /// Per equation, the residual a least-squares placement may leave (the geometric
    /// tolerance, turned into radians for angles).
    pub(crate) placed: Vec<f64>,
    /// Whether the geometric tolerance exceeds the length tolerance (repeated joints
    /// that disagree within it are placed).
    pub(crate) placing: bool,
}

impl RowTolerances {
    /// The same tolerances times `factor`.
    pub(crate) fn scaled(&self, factor: f64) -> RowTolerances {
        let times = |v: &[f64]| v.iter().map(|t| t * factor).collect();
        RowTolerances {
            equations: times(&self.equations),
            limits: times(&self.limits),
            placed: self.placed.clone(),
            placing: self.placing,
        }
    }

    /// Equation `k`'s tolerance.
    pub(crate) fn equation(&self, k: usize) -> f64 {
        self.equations.get(k).copied().unwrap_or(TOLERANCE)
    }

    /// What a least-squares placement may leave on equation `k`.
    pub(crate) fn placed(&self, k: usize) -> f64 {
        self.placed.get(k).copied().unwrap_or(TOLERANCE)
    }

    /// Limit `k`'s tolerance.
    pub(crate) fn limit(&self, k: usize) -> f64 {
        self.limits.get(k).copied().unwrap_or(TOLERANCE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_scale_with_reach_and_angles_do_not() {
        let options = SolveOptions::default();
        let near = Tolerances::new(&options, 500.0);
        assert_eq!(near.length, TOLERANCE);
        assert_eq!(near.angle, TOLERANCE);
        // 300 m in millimetres: one unit in the last place is 5.8e-11.
        let far = Tolerances::new(&options, 3e5);
        assert!((far.length - 3e-8).abs() < 1e-20);
        assert_eq!(far.angle, TOLERANCE);
        assert_eq!(far.geometric, far.length);
        // 10 m: a 1e-6 mm disagreement is well above the tolerance.
        assert!(Tolerances::new(&options, 1e4).length < 1e-8);
    }

    #[test]
    fn geometric_tolerance_is_never_below_the_length_tolerance() {
        let options = SolveOptions {
            geometric_tolerance: Some(1e-12),
            ..SolveOptions::default()
        };
        let t = Tolerances::new(&options, 1e6);
        assert_eq!(t.geometric, t.length);
        let loose = SolveOptions {
            geometric_tolerance: Some(0.05),
            ..SolveOptions::default()
        };
        assert_eq!(Tolerances::new(&loose, 100.0).geometric, 0.05);
    }
}
