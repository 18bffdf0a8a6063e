//! Translation-only corrections ("shifts") after a full Newton step.
//!
//! A full step from a pose drawn by hand turns each part by up to a few degrees, and a
//! turn moves a marker at lever `l` by `l (1 - cos t)` beyond what the linear model
//! saw. Along a long, nearly straight chain the least-change step also bends the chain
//! a little to close gaps along it (a bend is cheaper than moving every part after the
//! gap, by the step's norm), and the bend's curvature brings back residuals of the size
//! removed: a 10,000-link chain took 9 Newton iterations, its residual cut two to four
//! times by each.
//!
//! With the parts' turns held, a point equation (`p_i + R_i a = p_j + R_j b`) is linear
//! in the parts' positions. So after a full step, the least-change step over the
//! translation columns alone, `ds = -W_t^-1 pinv(J_t W_t^-1) r`, removes what the turns
//! left in the point equations, exactly where the translations reach them (an open
//! chain: all of it) and in part elsewhere (a closed loop also needs turns). Its matrix
//! has the same rows as the step's, half the columns, and is factored once per
//! iteration for all its rounds; its softest directions (the `(pi / 2n)^2` of a long
//! chain's translations) are refined back from the regularisation floor
//! ([`crate::linalg::Steps::solve_refined`]).
//!
//! Measured (`tenon solve`, the issue-16 layouts): Newton iterations at 1,000 / 10,000
//! parts, straight chain 5 / 9 -> 1 / 1 (100,000 links: 14 -> 1), mixed sizes
//! 3 / 7 -> 1 / 1. The ladder keeps
//! 3 / 6: its closed cells need turns as well, its first shift cuts the residual 4.4
//! times only and is refused (see [`FIRST_CUT`]).
//!
//! Shifts are taken only where the step behaved like Newton's on consistent equations
//! (see [`wanted`]): a conflict's least-squares compromise is left to the Newton steps,
//! and kinematic runs (small steps from a solved frame) never take them.

use tenon_system::{ClusterTape, TangentJacobian};

use super::Part;
use crate::linalg::{StepMatrix, Steps};
use crate::SolveOptions;

/// A full step is followed by shifts only where it cut the residual's norm at least
/// this many times (the linear model held)...
const SHIFT_CUT: f64 = 16.0;

/// ... where the linear model's own residual `|r - A dy|` is at most this fraction of
/// what the step left (the rest is curvature, not the remainder of equations that
/// disagree)...
const SHIFT_LINEAR: f64 = 1e-2;

/// ... and left more than this many times the tolerance (curvature to remove, not the
/// last digits).
const SHIFT_EXCESS: f64 = 1e2;

/// A first shift after a full step is kept only where it cuts the residual's norm this
/// many times: translations then reach what the step left (an open chain's bends). One
/// that falls short (a closed loop, which needs turns; a chain coiled in space) would
/// trade the step's curvature for a pose the next Newton steps crawl from (measured: a
/// coiled 10,000-link chain, 20 times cut by its first shift, then took 23 iterations
/// instead of 3), and ends the shifts for the rest of the solve.
pub(super) const FIRST_CUT: f64 = 100.0;

/// Shifts after one full step at most (each reuses the one factorization; one that
/// does not halve the residual ends them).
pub(super) const MAX_SHIFTS: usize = 4;

/// Shifts go on until the residual is this fraction of its tolerance. A solve that took
/// shifts and ended between this and the tolerance takes one more Newton step: a pose
/// just inside the tolerance leaves a loop's repeated rows at the edge of the rank
/// decisions that follow.
pub(super) const POLISH_EXCESS: f64 = 1e-2;

/// Pieces with fewer tangent columns than this take no shifts: bends add up along long
/// chains, a small piece converges in a few Newton steps anyway, and a shift that falls
/// short costs it an evaluation (1,000 RSSR four-bars: about 25% more solve time).
const SHIFT_COLUMNS: usize = 240;

/// Whether a full step on a piece of `columns` tangent columns that took the residual's
/// norm from `before` to `after`, leaving the largest residual `excess` times its
/// tolerance, is followed by shifts; `linear_left` gives what the linear model left,
/// `|r - A dy|` (asked last: it costs a product with `A`).
pub(super) fn wanted(
    options: SolveOptions,
    columns: usize,
    (before, after): (f64, f64),
    excess: f64,
    linear_left: impl FnOnce() -> f64,
) -> bool {
    !options.include_motions
        && columns >= SHIFT_COLUMNS
        && after <= before / SHIFT_CUT
        && excess > SHIFT_EXCESS
        && linear_left() <= SHIFT_LINEAR * after
}

/// The shift's factorization takes the smallest regularisation floor (the floor's
/// `progress` at its lower clamp): an open chain's translations are independent, and
/// their softest directions (`(pi / 2n)^2` of the largest: 2.5e-10 at 100,000 links)
/// lie far below the floor a Newton step starts with, where refining alone would need
/// hundreds of rounds. A singular one (a closed loop) is caught by the trial.
const SHIFT_PROGRESS: f64 = 0.0;

/// The translation columns of one piece and their step matrix.
pub(super) struct Shifts {
    /// Per tangent column of the cluster: its translation column here, or `usize::MAX`.
    col_of: Vec<usize>,
    /// Per translation column here: its column in the piece.
    piece_col: Vec<usize>,
    weight: Vec<f64>,
    matrix: StepMatrix,
    /// Per translation column here, its part's group (see `StepMatrix::set_groups`).
    groups: Vec<usize>,
    /// The rows the matrix was made for (limits that become active add rows).
    rows: usize,
    dense_columns: usize,
}

impl Shifts {
    /// For `piece` of `cluster` (whose columns are weighted `weight`, in piece order);
    /// `tangent_columns` is the cluster's tangent dimension.
    pub(super) fn new(
        cluster: &ClusterTape,
        piece: &Part,
        tangent_columns: usize,
        weight: &[f64],
        options: SolveOptions,
    ) -> Shifts {
        let n6 = 6 * cluster.parts().len();
        let mut col_of = vec![usize::MAX; tangent_columns];
        let mut piece_col = Vec::new();
        let mut w = Vec::new();
        let mut translations = Vec::new();
        for (k, &c) in piece.cols.iter().enumerate() {
            // A part's tangent columns: its translation (0..3), then its turn (3..6).
            if c < n6 && c % 6 < 3 {
                if let Some(slot) = col_of.get_mut(c) {
                    *slot = piece_col.len();
                    piece_col.push(k);
                    translations.push(c);
                    w.push(weight.get(k).copied().unwrap_or(1.0));
                }
            }
        }
        // A part's three translation columns are read together: one group.
        let groups = super::piece::column_groups(cluster, &translations);
        let mut matrix = StepMatrix::new(piece.rows.len(), piece_col.len(), options.dense_columns);
        matrix.set_groups(groups.clone());
        Shifts {
            matrix,
            groups,
            col_of,
            piece_col,
            weight: w,
            rows: piece.rows.len(),
            dense_columns: options.dense_columns,
        }
    }

    /// The translation columns of `jac` (a Jacobian over `rows` rows) factored, and the
    /// piece column of each; `None` when there are none or they cannot be factored.
    pub(super) fn factor(
        &mut self,
        jac: &TangentJacobian,
        rows: usize,
    ) -> Option<(Steps<'_>, &[usize])> {
        if self.piece_col.is_empty() {
            return None;
        }
        if self.rows != rows {
            self.matrix = StepMatrix::new(rows, self.piece_col.len(), self.dense_columns);
            self.matrix.set_groups(self.groups.clone());
            self.rows = rows;
        }
        self.matrix.fill(jac, &self.col_of, &self.weight);
        let steps = self
            .matrix
            .factor()
            .ok()?
            .regularized(0.0, SHIFT_PROGRESS)
            .ok()?;
        Some((steps, &self.piece_col))
    }
}

/// A step over translation columns `ds` as a step over the piece's `cols` columns.
pub(super) fn spread(ds: &[f64], piece_col: &[usize], cols: usize) -> Vec<f64> {
    let mut full = vec![0.0; cols];
    for (&d, &k) in ds.iter().zip(piece_col) {
        if let Some(slot) = full.get_mut(k) {
            *slot = d;
        }
    }
    full
}
