//! Stiff chords: corrections after a full Newton step, taken in a metric where turns
//! cost [`STIFFNESS`] times more than in the step's.
//!
//! A full step's curvature (a turned part's markers leave its linear model by
//! `l (1 - cos t)`) leaves residuals that the chord steps (the step's own
//! factorization, the new residual) correct. Along a long ladder of closed cells the
//! chords stall: the least-change metric closes the leftover gaps partly by turning
//! cells, whose curvature brings back residuals of the size removed, and the smallest
//! correction grows with the ladder's length. A 10,000-part ladder took 6 Newton
//! iterations (3 at 1,000 parts), each cutting its residual's norm four to five times.
//! Translations alone cannot close a closed cell (the translation-only shifts, see
//! `shift`, are refused there).
//!
//! So when a chord falls short, the same Jacobian is factored again with the rotation
//! columns weighed `STIFFNESS` times more: the correction then moves parts rather than
//! turning them, and turns only where a loop needs it. Its curvature is small, and its
//! chords converge: the ladder's Newton iterations at 1,000 / 10,000 parts went from
//! 3 / 6 to 2 / 2, with one or two such factorizations each. These corrections are of
//! the size of what the full step left (second order), so the pose a least-change solve
//! reaches moves by as much.
//!
//! Gates, as for the shifts: pieces of [`STIFF_COLUMNS`] tangent columns or more, never
//! in kinematic runs, only after a full step on consistent equations (the linear model
//! left at most [`STIFF_LINEAR`] of what the step left: a conflict's least-squares
//! compromise is left to the Newton steps), where the ordinary chords stalled having cut
//! what the step left less than [`CHORDS_SHORT`] times; after [`FIRST_FAILURES`] full
//! steps whose first stiff chord did not cut the residual [`STIFF_CUT`] times, they end
//! for the rest of the solve. Stiff chords that end above the tolerance having gained
//! little (see [`STIFF_TOTAL_CUT`]) are undone and count as such a failure: after the
//! next full step they are tried once more (see [`FIRST_FAILURES`]); the 30,000-part
//! straight ladder's second try cut its residual 70,000 times, to the tolerance. Those
//! that stalled flat at the equations' disagreement (see [`at_disagreement`], which
//! judges a second try more leniently) are undone and end stiff chords for the solve: a
//! disagreement stays.
//!
//! The full step after stiff chords kept short of the tolerance lands where its own
//! curvature leaves it, much the same wherever the chords ended, and may land above
//! where they ended: it then failed its descent test and went on at half steps. It is
//! taken with one chord from where it lands instead, when that chord ends below where
//! it started (`piece`). With the second tries, the 30,000-part straight ladder's solve
//! took 3 Newton iterations and 14 trial steps, where it had taken 8 and 20; the
//! 30,000- and 90,000-part coiled ladders' took 3 where they had taken 7 and 9.

use tenon_system::{ClusterTape, TangentColumn};

use crate::SolveOptions;

/// How many times more a turn costs in a stiff chord's metric than in the step's (a
/// part's turn by `t` weighs as a shift by `STIFFNESS * size * t`). Measured on the
/// 10,000-part ladder: 30 took 3 Newton iterations and 11 stiff chords, 100 took 2 and
/// 3, 300 and 1,000 took 2 and 2.
pub(super) const STIFFNESS: f64 = 300.0;

/// Pieces with fewer tangent columns than this take no stiff chords: a small piece
/// converges in a few Newton steps, and an extra factorization costs it as much as one.
const STIFF_COLUMNS: usize = 240;

/// Stiff chords are taken only where the linear model's own residual `|r - A dy|` was
/// at most this fraction of what the full step left.
const STIFF_LINEAR: f64 = 1e-2;

/// Stiff chords follow only chords that stalled having cut what the full step left less
/// than this many times: that is the ladder's trouble (the straight ladders' chords cut
/// it 6 times, at 1,000 and 10,000 parts). Where the chords cut it more (coiled chains
/// and ladders of 100 to 1,000 parts: 55 to 220 times) the next Newton step converges
/// anyway, and stiff chords there gained nothing and were undone: their factorization
/// made the 100-part benchmark chain's solve 25% slower.
const CHORDS_SHORT: f64 = 20.0;

/// A stiff chord is kept only where it cuts the residual's norm this many times.
pub(super) const STIFF_CUT: f64 = 2.0;

/// Stiff chords that stall (above the tolerance) with the residual's norm within this
/// many times what the full step's linear model left have met the equations'
/// disagreement, not curvature: they are undone and end stiff chords for the solve. A
/// 250-cell ladder with one cell 1 mm off stalled at 1.6 times, and its least-squares
/// pose then spread the conflict over two cells; the consistent ladders stall at 17
/// (10,000 parts) and 63 (1,000) times, when they stall.
///
/// A second try (see [`Ended::again`]) that stalls below what the linear model left has
/// met no disagreement: equations that disagree cannot be brought below their
/// least-squares residual, and the linear model's is above that by the regularisation's
/// share only. The coiled 10,000-cell ladder's second try stalled at 0.88 times it,
/// having cut the residual 7,700 times; undone, the solve crawled on for 7 Newton
/// iterations (3 when kept). A first try is judged as before: the coiled ladders of 200
/// to 2,000 cells stall below it too (0.79 times at 333 cells), and kept, their next
/// full steps crawl and are solved to the end (`linalg::krylov`), which made those
/// solves up to 73% slower than undoing them (200 cells: 6.6 -> 11.4 ms).
pub(super) const DISAGREEMENT: f64 = 4.0;

/// A stall near what the linear model left is the equations' disagreement only where it
/// is flat: the chord that ended the stiff chords would have cut the residual's norm
/// less than this many times. The 1 mm conflict's last chord cut it 1.22 times. The
/// 100,000-part straight ladder's, after nine rounds of 2.8 times each, cut it 1.94
/// times at 1.8 times what the linear model left (a floor-shortened step's leftover, not
/// a disagreement): undone, that ladder crawled on at four times a Newton step, 10
/// iterations where keeping them takes 3.
pub(super) const STILL_CUTTING: f64 = 1.5;

/// Full steps whose first stiff chord fell short, or whose stiff chords gained too little
/// and were undone, before stiff chords end for the solve. The 100,000-part straight
/// ladder's first fell short (1.83 times) after its first full step, and those after its
/// second cut the residual 15,000 times; the 30,000-part straight ladder's first cut it
/// 2.2 times, and those after its second 70,000 times (14 trial steps where ending them
/// took 20); where they never help, a piece pays one factorization more than with a
/// single try.
pub(super) const FIRST_FAILURES: usize = 2;

/// Stiff chords that end above the tolerance are kept only where together they cut the
/// residual's norm this many times. A coiled ladder of 30,000 parts, whose stiff chords
/// cut it 2.6 times, then crawled for 100 Newton iterations at 5 to 40 times its
/// tolerance (7 iterations without them); the straight ladders' cut it 21 (1,000
/// parts) and 35 times (10,000).
const STIFF_TOTAL_CUT: f64 = 10.0;

/// How stiff chords that did not reach the tolerance ended.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ended {
    /// The residual's norm before them.
    pub(super) start: f64,
    /// The residual's norm after them.
    pub(super) end: f64,
    /// What the full step's linear model left.
    pub(super) linear_left: f64,
    /// How many times the rejected chord that ended them would have cut the residual's
    /// norm (infinite where none was rejected: they ran all their rounds).
    pub(super) last_cut: f64,
    /// Whether they are a second try: an earlier one in this solve fell short or gained
    /// too little (see [`FIRST_FAILURES`]).
    pub(super) again: bool,
}

/// Whether stiff chords that ended above the tolerance stalled flat at the equations'
/// disagreement: within [`DISAGREEMENT`] times what the linear model left, on a chord
/// that cut less than [`STILL_CUTTING`] times; a second try's only at or above what the
/// linear model left.
pub(super) fn at_disagreement(e: Ended) -> bool {
    let below_linear = e.again && e.end < e.linear_left;
    e.end <= DISAGREEMENT * e.linear_left && e.last_cut < STILL_CUTTING && !below_linear
}

/// Whether stiff chords that ended above the tolerance are kept (see
/// [`STIFF_TOTAL_CUT`] and [`at_disagreement`]).
pub(super) fn kept(e: Ended) -> bool {
    e.end * STIFF_TOTAL_CUT <= e.start && !at_disagreement(e)
}

/// Stiff chords after one full step at most (they share one factorization).
pub(super) const MAX_STIFF_CHORDS: usize = 10;

/// Whether a piece of `columns` tangent columns may take stiff chords in this solve
/// (its linear model's residual is then worth taking after each full step).
pub(super) fn may_take(options: SolveOptions, columns: usize) -> bool {
    !options.include_motions && columns >= STIFF_COLUMNS
}

/// Whether a piece that may take them (see [`may_take`]), whose last chord fell short,
/// takes stiff chords: `after` is the residual's norm the full step left, `chords_end`
/// where its chords stalled, `linear_left` what the step's linear model left.
pub(super) fn wanted(after: f64, chords_end: f64, linear_left: f64) -> bool {
    linear_left <= STIFF_LINEAR * after && chords_short(after, chords_end)
}

/// Whether chords that took the residual's norm from `after` (what the full step left)
/// to `chords_end` stalled early enough for stiff chords (see [`CHORDS_SHORT`]).
pub(super) fn chords_short(after: f64, chords_end: f64) -> bool {
    chords_end * CHORDS_SHORT > after
}

/// The piece's column weights in the stiff metric: its rotation columns' `weight`
/// times [`STIFFNESS`], the others' as they are.
pub(super) fn weights(cluster: &ClusterTape, cols: &[usize], weight: &[f64]) -> Vec<f64> {
    let layout = cluster.layout();
    cols.iter()
        .zip(weight)
        .map(|(&c, &w)| match layout.column(c) {
            Some(TangentColumn::Rotation { .. }) => w * STIFFNESS,
            _ => w,
        })
        .collect()
}

/// A step `dc` solved in the stiff metric (`delta = -dc / stiff weight`) rewritten in
/// the step's metric (`delta = -dy / weight`), which the piece's trial steps take.
pub(super) fn in_step_metric(dc: &mut [f64], stiff_weight: &[f64], weight: &[f64]) {
    for ((d, &s), &w) in dc.iter_mut().zip(stiff_weight).zip(weight) {
        *d *= w / s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stiff_step_moves_the_state_as_written() {
        // delta = -dc / s must equal -dy / w after the rewrite.
        let (stiff, weight) = ([300.0, 1.0, 600.0], [1.0, 1.0, 2.0]);
        let dc = [3.0, -2.0, 6.0];
        let mut dy = dc;
        in_step_metric(&mut dy, &stiff, &weight);
        for k in 0..3 {
            assert!((dc[k] / stiff[k] - dy[k] / weight[k]).abs() < 1e-15);
        }
    }

    fn ended(start: f64, end: f64, linear_left: f64, last_cut: f64) -> Ended {
        Ended {
            start,
            end,
            linear_left,
            last_cut,
            again: false,
        }
    }

    #[test]
    fn stiff_chords_that_gain_little_or_stall_at_a_disagreement_are_undone() {
        // The straight ladders of 1,000 and 10,000 parts: kept.
        assert!(kept(ended(0.668, 0.0189, 5.9e-4, 1.1)));
        assert!(kept(ended(0.207, 0.0098, 1.5e-4, 1.1)));
        // The coiled ladder: 2.6 times only.
        assert!(!kept(ended(0.359, 0.138, 0.0308, 1.1)));
        // A 1 mm conflict: at 1.6 times what the linear model left, on a flat stall.
        assert!(!kept(ended(5.9, 0.0268, 0.0168, 1.22)));
        // The 100,000-part straight ladder: near what the linear model left, still
        // cutting; the same end on a flat stall would be a disagreement.
        assert!(kept(ended(0.6512, 4.212e-5, 2.353e-5, 1.94)));
        assert!(!kept(ended(0.6512, 4.212e-5, 2.353e-5, 1.2)));
        // Ended after their last round: no stall at all.
        assert!(kept(ended(0.6512, 4.212e-5, 2.353e-5, f64::INFINITY)));
        // The straight 30,000-part ladder's first try: too little gained, but no
        // disagreement (it is tried again after the next full step).
        let first_try = ended(1.158, 0.5199, 1.04e-3, 1.24);
        assert!(!kept(first_try) && !at_disagreement(first_try));
        assert!(at_disagreement(ended(5.9, 0.0268, 0.0168, 1.22)));
        // Stalls below what the linear model left: a disagreement at a first try (the
        // 333-cell coiled ladder), none at a second (the 10,000-cell coiled ladder).
        assert!(at_disagreement(ended(0.06511, 4.349e-3, 5.470e-3, 1.11)));
        let second_try = Ended {
            again: true,
            ..ended(0.07693, 9.960e-6, 1.128e-5, 1.21)
        };
        assert!(!at_disagreement(second_try) && kept(second_try));
        // A conflict met at a second try still is one.
        let conflict_again = Ended {
            again: true,
            ..ended(5.9, 0.0268, 0.0168, 1.22)
        };
        assert!(at_disagreement(conflict_again));
    }

    #[test]
    fn gates() {
        let options = SolveOptions::default();
        assert!(may_take(options, 600));
        // The straight ladders (1,000 and 10,000 parts).
        assert!(wanted(1.25, 0.207, 1.5e-4));
        assert!(wanted(3.89, 0.668, 5.9e-4));
        // A conflict: the linear model leaves about what the step left.
        assert!(!wanted(1.0, 0.5, 0.9));
        // Coiled chains and ladders of 100 to 1,000 parts: the chords cut 55 to 220 times.
        assert!(!wanted(0.187, 1.7e-3, 3.3e-5));
        assert!(!wanted(0.333, 6.0e-3, 2.8e-3));
        // A small piece.
        assert!(!may_take(options, 60));
        let kinematic = SolveOptions {
            include_motions: true,
            ..options
        };
        assert!(!may_take(kinematic, 600));
    }
}
