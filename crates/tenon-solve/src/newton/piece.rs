//! One piece of a cluster solved by least-change Gauss-Newton: a backtracking line
//! search, translation-only shifts (see `shift`) and chord steps after a full step,
//! Levenberg damping when it stalls, joint limits as a growing active set; staged (a
//! tape per stage) or whole; its rank at the end.

use std::borrow::Cow;

use tenon_system::{ClusterOutput, ClusterTape, LimitRow, Scratch, StageTape};

use super::{shift, stiff, Part};
use crate::linalg::{self, StepMatrix};
use crate::tolerance::RowTolerances;
use crate::{SolveError, SolveOptions};

/// Step components below this fraction of the largest are dropped as rounding noise.
const STEP_NOISE: f64 = 1e-14;

/// Chord steps (the last factorization reused) tried after each full Newton step: each
/// costs about a quarter of a Newton iteration.
const MAX_CHORD_STEPS: usize = 5;

#[derive(Debug, Clone)]
pub(super) struct PieceReport {
    pub(super) iterations: usize,
    pub(super) residual: f64,
    /// The largest residual relative to its equation's tolerance (1 or less: every
    /// equation holds).
    pub(super) excess: f64,
    /// Not every equation holds, but the piece stalled at a least-squares pose where
    /// every residual is within the geometric tolerance (repeated joints that disagree
    /// a little: see [`crate::Tolerances`]).
    pub(super) placed: bool,
    /// The residuals of its equations at the end: `(local row, value)`.
    pub(super) residuals: Vec<(usize, f64)>,
    pub(super) rank: Option<usize>,
    /// Its limit sides that bind (held as equations) and those still violated, with
    /// how far each is beyond its bound.
    pub(super) limits: Vec<(LimitRow, f64)>,
    /// A staged solve fell back to solving the piece whole.
    pub(super) whole_again: bool,
}

/// How a piece solve starts and ends.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    /// `out` already holds the evaluation at the starting state.
    pub(super) evaluated: bool,
    /// Reveal the rank at the end (a stage's is not needed).
    pub(super) rank: bool,
}

/// What every piece solve of a cluster shares: the thread's scratch, the cluster's
/// local state and parameters (moved in place), its room, its column weights and the
/// options. Whose equations are solved (the cluster's tape or a stage's) and into which
/// output are passed beside it.
pub(super) struct Work<'w, 'p> {
    pub(super) scratch: &'w mut Scratch,
    pub(super) local: &'w mut [f64],
    pub(super) params: &'w mut Cow<'p, [f64]>,
    pub(super) room: &'w mut Room,
    pub(super) weight: &'w [f64],
    /// Per equation of the system (see [`crate::Tolerances::per_equation`]), its
    /// tolerance.
    pub(super) tolerance: &'w RowTolerances,
    /// Whether a piece that stalls within the geometric tolerance is placed (a solve)
    /// or must hold exactly (the diagnosis holding some joints to measure the rest).
    pub(super) placing: bool,
    pub(super) options: SolveOptions,
}

/// Equations to solve: a tape and the output its evaluations go to.
pub(super) struct Equations<'t> {
    pub(super) tape: &'t ClusterTape,
    pub(super) out: &'t mut ClusterOutput,
}

/// Solves a piece stage by stage, each stage with its own tape (see
/// [`crate::blocks`]); when a stage after the first cannot hold, the piece is solved
/// whole again from its start. The rank and residuals reported are the whole piece's,
/// from one evaluation of the cluster at the end.
pub(super) fn solve_staged(
    whole: Equations<'_>,
    piece: &Part,
    stages: &[StageTape],
    run: Run,
    work: &mut Work<'_, '_>,
) -> Result<PieceReport, SolveError> {
    let start = (work.local.to_vec(), work.params.clone());
    let mut iterations = 0;
    let mut placed = false;
    for (k, stage) in stages.iter().enumerate() {
        let tape = stage.tape().unwrap_or(whole.tape);
        let part = Part {
            cols: stage.cols().to_vec(),
            rows: stage.rows().to_vec(),
            limits: Vec::new(),
        };
        let mut stage_out = tape.output();
        let stage_run = Run {
            evaluated: false,
            rank: false,
        };
        let equations = Equations {
            tape,
            out: &mut stage_out,
        };
        let report = solve_piece(equations, &part, stage_run, work)?;
        iterations += report.iterations;
        placed |= report.placed;
        if k > 0 && report.excess > 1.0 && !report.placed {
            return solve_whole_again((whole, piece), start, (run, iterations), work);
        }
    }
    let Equations { tape: cluster, out } = whole;
    cluster.evaluate(work.scratch, work.local, work.params, out)?;
    let residuals = final_residuals(piece, out);
    let residual = residuals.iter().fold(0.0f64, |m, &(_, v)| m.max(v.abs()));
    let row_tol = row_tolerances(cluster, work.tolerance);
    let excess = excess_of(&piece.rows, out.residuals(), &row_tol);
    let placed = placed
        && excess > 1.0
        && excess_of(
            &piece.rows,
            out.residuals(),
            &placed_tolerances(cluster, work.tolerance),
        ) <= 1.0;
    // Each stage held its own equations, yet the piece does not: a later stage moved
    // what an earlier one's equations read (a random chain: a slider left free before a
    // driven revolute, ended 1.3e-8 off). Solved whole from the start instead.
    if excess > 1.0 && !placed && stages.len() > 1 {
        let whole = Equations { tape: cluster, out };
        return solve_whole_again((whole, piece), start, (run, iterations), work);
    }
    let rank = if run.rank {
        let mut col_of = vec![usize::MAX; cluster.tangent_dimension()];
        for (k, &c) in piece.cols.iter().enumerate() {
            col_of[c] = k;
        }
        let piece_weight: Vec<f64> = piece.cols.iter().map(|&c| work.weight[c]).collect();
        let at = Linearization {
            cluster,
            local: work.local,
            out,
            col_of: &col_of,
            weight: &piece_weight,
        };
        equation_rank(&at, piece, work.options)?
    } else {
        None
    };
    Ok(PieceReport {
        iterations,
        residual,
        excess,
        placed,
        residuals,
        rank,
        limits: Vec::new(),
        whole_again: false,
    })
}

/// The piece solved whole from `start` (after its stages could not hold it).
fn solve_whole_again<'p>(
    (whole, piece): (Equations<'_>, &Part),
    start: (Vec<f64>, Cow<'p, [f64]>),
    (run, iterations): (Run, usize),
    work: &mut Work<'_, 'p>,
) -> Result<PieceReport, SolveError> {
    work.local.copy_from_slice(&start.0);
    *work.params = start.1;
    let whole_run = Run {
        evaluated: false,
        rank: run.rank,
    };
    work.room.resync(work.local);
    let again = solve_piece(whole, piece, whole_run, work)?;
    Ok(PieceReport {
        iterations: iterations + again.iterations,
        whole_again: true,
        ..again
    })
}

/// Room a piece solve needs at its cluster's size (a column map, a trial state, a
/// step), made once per cluster solve and shared by its pieces and stages, so that a
/// stage of a few columns in a cluster of thousands costs its columns.
pub(super) struct Room {
    /// Piece column of each cluster column (`usize::MAX`: not in the piece solved).
    col_of: Vec<usize>,
    /// Equal to the local state outside the columns being solved.
    trial: Vec<f64>,
    delta: Vec<f64>,
}

impl Room {
    pub(super) fn new(cluster: &ClusterTape, local: &[f64]) -> Room {
        let n = cluster.tangent_dimension();
        Room {
            col_of: vec![usize::MAX; n],
            trial: local.to_vec(),
            delta: vec![0.0; n],
        }
    }

    /// After the local state changed anywhere (a staged solve starting over).
    pub(super) fn resync(&mut self, local: &[f64]) {
        self.trial.copy_from_slice(local);
    }
}

/// Solves a piece's equations over its columns, from where `work` stands.
pub(super) fn solve_piece(
    equations: Equations<'_>,
    piece: &Part,
    run: Run,
    work: &mut Work<'_, '_>,
) -> Result<PieceReport, SolveError> {
    let cluster = equations.tape;
    for (k, &c) in piece.cols.iter().enumerate() {
        work.room.col_of[c] = k;
    }
    let moved = cluster.state_entries(&piece.cols);
    let report = solve_piece_in(equations, piece, run, &moved, work);
    // Leave the room as found: no piece columns, the trial equal to the state.
    for &c in &piece.cols {
        work.room.col_of[c] = usize::MAX;
    }
    for &i in &moved {
        work.room.trial[i] = work.local[i];
    }
    report
}

/// [`solve_piece`] with the room's column map set for the piece.
fn solve_piece_in(
    equations: Equations<'_>,
    piece: &Part,
    run: Run,
    moved: &[usize],
    work: &mut Work<'_, '_>,
) -> Result<PieceReport, SolveError> {
    let Equations { tape: cluster, out } = equations;
    let Work {
        scratch,
        local,
        params,
        room,
        weight,
        tolerance,
        placing,
        options,
    } = work;
    let (scratch, local, params, options): (
        &mut Scratch,
        &mut [f64],
        &mut Cow<'_, [f64]>,
        SolveOptions,
    ) = (scratch, local, params, *options);
    let mut rows = piece.rows.clone();
    let mut active: Vec<LimitRow> = Vec::new();
    let Room {
        col_of,
        trial,
        delta,
    } = &mut **room;
    let col_of: &[usize] = col_of;
    let piece_weight: Vec<f64> = piece.cols.iter().map(|&c| weight[c]).collect();
    let row_tol = row_tolerances(cluster, tolerance);
    // Where repeated joints may disagree a little (a geometric tolerance above the
    // length tolerance): the piece is placed when it stalls within it.
    let row_placed = (*placing && tolerance.placing).then(|| placed_tolerances(cluster, tolerance));
    let mut stalled = false;
    // Whether the last full step cut the residual's norm less than `CRAWL` times: the
    // next step is then solved to the end where the equations agree (see
    // `linalg::krylov`). Where they disagree once (a conflict: the piece crawls to its
    // least-squares pose), not tried again in this solve.
    let mut crawling = false;
    let mut disagreeing = false;
    // Whether a translation-only correction was taken, and the one extra step after it.
    let (mut shifted, mut polished) = (false, false);
    let mut iterations = 0;
    let mut lambda = 0.0;
    let mut first_residual: Option<f64> = None;
    // Kicks taken out of stationary points, and where the first one started (kept if
    // the kicks find nothing better).
    let mut kicks = 0;
    let mut before_kicks: Option<(f64, Vec<f64>, Vec<f64>)> = None;
    let mut stepper = Stepper {
        cluster,
        cols: &piece.cols,
        weight: &piece_weight,
        moved,
        trial,
        delta,
        params: Vec::new(),
        turns: cluster.has_turns(),
    };
    // Ordered by parts where assembling. A kinematic run's frames keep the ordering of
    // every column: with a freedom left free, its rounding along that freedom (a frame's
    // position against its neighbours') measured 4.9e-7 against finite differences of a
    // 100-link chain's frames, where the grouped order gave 4.3e-6.
    // (Only a sparse step uses them.)
    let groups = (!options.include_motions && piece.cols.len() > options.dense_columns)
        .then(|| column_groups(cluster, &piece.cols));
    let mut matrix = StepMatrix::new(rows.len(), piece.cols.len(), options.dense_columns);
    if let Some(groups) = &groups {
        matrix.set_groups(groups.clone());
    }
    // Made when first wanted; refused for the rest of the solve once a first shift
    // falls short.
    let mut shifts: Option<shift::Shifts> = None;
    let mut shift_refused = false;
    // Stiff chords (see `stiff`): refused for the rest of the solve once first ones have
    // fallen short or been undone for too little gain `stiff::FIRST_FAILURES` times, or
    // once they are undone at a disagreement.
    let mut stiff_failures = 0;
    // Stiff chords were kept short of the tolerance: the next full step is judged with
    // one chord from where it lands (see `stiff`).
    let mut after_stiff = false;
    let mut jac = tenon_system::TangentJacobian {
        rows: 0,
        columns: 0,
        entries: Vec::new(),
    };
    // The caller's evaluation at the starting state serves the first iteration.
    // `out` holds the residuals at `local` (`values`), and their derivatives too
    // (`derivatives`).
    let mut values = run.evaluated;
    let mut derivatives = run.evaluated;
    // The residuals of `rows`, kept between iterations.
    let mut r: Vec<f64> = Vec::with_capacity(rows.len());
    // A kick out of a stationary point: a small fixed turn and shift of the piece's
    // parts (see `kick_step`), then on from there with the damping reset; the state
    // before the first kick is kept to fall back on.
    macro_rules! kick {
        ($residual:expr) => {
            kicks += 1;
            before_kicks.get_or_insert_with(|| ($residual, local.to_vec(), params.to_vec()));
            let kick = kick_step(cluster, &piece.cols, &piece_weight);
            stepper.try_step(scratch, (local, params), out, &rows, (&kick, 1.0))?;
            stepper.accept(local, params);
            (values, derivatives, lambda, first_residual) = (true, false, 0.0, None);
            continue;
        };
    }
    loop {
        if !values {
            cluster.evaluate(scratch, local, params, out)?;
            derivatives = true;
        }
        values = false;
        r.clear();
        r.extend(rows.iter().map(|&k| out.residuals()[k]));
        let residual = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let excess = excess_of(&rows, out.residuals(), &row_tol);
        // Joint limits (active set): a limit the converged pose breaks is held at its
        // bound from then on, and the piece solved again from there.
        if excess <= 1.0 && iterations < options.max_iterations {
            let broken: Vec<LimitRow> = piece
                .limits
                .iter()
                .filter(|l| !active.contains(l))
                .filter(|l| l.excess(out.residuals()[l.row]) > row_tol[l.row])
                .copied()
                .collect();
            if !broken.is_empty() {
                rows.extend(broken.iter().map(|l| l.row));
                active.extend(broken);
                matrix = StepMatrix::new(rows.len(), piece.cols.len(), options.dense_columns);
                if let Some(groups) = &groups {
                    matrix.set_groups(groups.clone());
                }
                lambda = 0.0;
                first_residual = None;
                // Nothing moved: the evaluation still holds.
                values = true;
                continue;
            }
        }
        let placed = excess > 1.0
            && stalled
            && row_placed
                .as_ref()
                .is_some_and(|g| excess_of(&rows, out.residuals(), g) <= 1.0);
        // After translation-only corrections the last step may land just inside the
        // tolerance; one more Newton step (quadratic there) takes the pose well inside,
        // where rank decisions (a loop's repeated rows) are not at the tolerance's edge.
        let polish = shifted && !polished && excess <= 1.0 && excess > shift::POLISH_EXCESS;
        polished |= polish;
        let done = (excess <= 1.0 && !polish) || placed || iterations >= options.max_iterations;
        // Out of iterations after kicks that found nothing better: back to where the
        // first kick started, and end there.
        if done && excess > 1.0 && !placed {
            if let Some((best, at, p)) = before_kicks.take() {
                if best < residual {
                    local.copy_from_slice(&at);
                    *params = Cow::Owned(p);
                    (values, derivatives) = (false, false);
                    continue;
                }
            }
        }
        if rows.is_empty() || !residual.is_finite() {
            return Ok(PieceReport {
                iterations,
                residual,
                excess,
                placed,
                residuals: final_residuals(piece, out),
                rank: Some(0),
                limits: limit_report(piece, &active, out, &row_tol),
                whole_again: false,
            });
        }
        // Converged, and no rank wanted (a stage, or a solve of some rows, or a piece
        // larger than `options.rank_columns` with no limit held, whose rank the step
        // matrix does not give): the final pose needs no derivatives. The rank is always
        // taken at the final pose: the rows of redundant joints are dependent only on the
        // solution set, and a linearization one step back, where the residual was
        // larger, counts them as independent.
        let rank_unasked =
            active.is_empty() && !matrix.gives_rank() && piece.cols.len() > options.rank_columns;
        if done && (!run.rank || rank_unasked) {
            return Ok(PieceReport {
                iterations,
                residual,
                excess,
                placed,
                residuals: final_residuals(piece, out),
                rank: None,
                limits: limit_report(piece, &active, out, &row_tol),
                whole_again: false,
            });
        }
        if !derivatives {
            cluster.evaluate(scratch, local, params, out)?;
            derivatives = true;
        }
        cluster.tangent_jacobian_into(local, out, &rows, &mut jac);
        // A Jacobian with an infinity or a NaN (a distance joint whose two points
        // coincide, a profile so large it overflows) is never factored: the piece stops
        // where it is and reports that it did not converge.
        let taken = iterations;
        let stuck = |out: &ClusterOutput| PieceReport {
            iterations: taken,
            residual,
            excess,
            placed: false,
            residuals: final_residuals(piece, out),
            rank: None,
            limits: limit_report(piece, &active, out, &row_tol),
            whole_again: false,
        };
        // The report at the final pose: its rank from the step matrix where that gives
        // one (`dense_rank`), else from the rows (a large sparse piece) or from the
        // equations with the limits that bind.
        let report_done = |dense_rank: Option<usize>| -> Result<PieceReport, SolveError> {
            Ok(PieceReport {
                iterations,
                residual,
                excess,
                placed,
                residuals: final_residuals(piece, out),
                rank: if active.is_empty() {
                    dense_rank.or_else(|| {
                        (piece.cols.len() <= options.rank_columns)
                            .then(|| sparse_rank(&jac, col_of, &piece_weight))
                            .flatten()
                    })
                } else {
                    let at = Linearization {
                        cluster,
                        local,
                        out,
                        col_of,
                        weight: &piece_weight,
                    };
                    equation_rank(&at, piece, options)?
                },
                limits: limit_report(piece, &active, out, &row_tol),
                whole_again: false,
            })
        };
        let finite = linalg::all_finite(jac.entries.iter().map(|e| &e.2));
        // Done: the rank alone is wanted, not a step. The step matrix gives it where it
        // can (a dense one straight from the Jacobian, without a fill: `rank_at`); where
        // it gives none, it is not filled for nothing (a 10,000-part ladder's solve had
        // filled its 60,000 columns four times, the last for nothing); with limits that
        // bind, the rank is the equations' with them, which `report_done` takes.
        if done && finite {
            let step_rank = match active.is_empty() && matrix.gives_rank() {
                true => matrix.rank_at(&jac, col_of, &piece_weight)?,
                false => None,
            };
            return report_done(step_rank);
        }
        let factored = if finite {
            matrix.fill(&jac, col_of, &piece_weight);
            matrix.factor().ok()
        } else {
            None
        };
        let Some(factored) = factored else {
            if kicks < MAX_KICKS && !done {
                kick!(residual);
            }
            return Ok(stuck(out));
        };
        iterations += 1;
        let smax = factored.scale();
        let first = *first_residual.get_or_insert(residual);
        let Ok(steps) = factored.regularized(lambda, residual / first.max(1e-300)) else {
            return Ok(stuck(out));
        };
        let consistent = (crawling && !disagreeing)
            .then(|| steps.solve_consistent(&r))
            .flatten();
        disagreeing |= crawling && consistent.is_none();
        let mut dy = consistent.unwrap_or_else(|| steps.solve(&r));
        drop_noise(&mut dy);
        let norm0 = linalg::norm(&r);
        let mut alpha = 1.0;
        let mut accepted = false;
        let mut norm = f64::INFINITY;
        let watch = std::mem::take(&mut after_stiff);
        for _ in 0..30 {
            norm = stepper.try_step(scratch, (local, params), out, &rows, (&dy, alpha))?;
            if norm.is_finite() && norm < norm0 * (1.0 - 1e-4 * alpha) || norm <= options.tolerance
            {
                stepper.accept(local, params);
                accepted = true;
                // `out` holds the residuals at the new pose, not their derivatives.
                values = true;
                derivatives = false;
                break;
            }
            // After kept stiff chords, a full step that lands above where it started is
            // taken with one chord from where it lands, if that chord ends below it.
            if watch && alpha >= 1.0 && norm.is_finite() {
                let (at, p) = (local.to_vec(), params.clone());
                stepper.accept(local, params);
                let landed: Vec<f64> = rows.iter().map(|&k| out.residuals()[k]).collect();
                let mut dc = steps.solve(&landed);
                drop_noise(&mut dc);
                let chord = stepper.try_step(scratch, (local, params), out, &rows, (&dc, 1.0))?;
                if chord.is_finite() && chord < norm0 * (1.0 - 1e-4) {
                    stepper.accept(local, params);
                    norm = chord;
                    accepted = true;
                    values = true;
                    derivatives = false;
                    break;
                }
                local.copy_from_slice(&at);
                *params = p;
            }
            alpha *= 0.5;
        }
        // Little or no descent: at (or crawling to) a least-squares pose.
        stalled = !accepted || (alpha >= 1.0 && norm > STALLED * norm0);
        crawling = accepted && alpha >= 1.0 && norm * CRAWL > norm0;
        // Chord steps: after a full step that left the equations unsolved, the same
        // factorization corrects what the step's curvature left (the step's own second
        // order error, e.g. a crank's end leaving the tangent for its circle) for one
        // residual evaluation and one back-substitution each, where a Newton iteration
        // would evaluate derivatives and factor again. Kept while each cuts the residual
        // at least fourfold (a Newton step would do better from there); one that does
        // not is undone. A re-solve after a 1-degree change of a driven crank: one
        // Newton step then four chord steps (1.7e-2, 4.6e-3, 2.8e-5, 1.6e-7, 9.2e-10,
        // 5.3e-12), where Newton alone took three steps.
        if accepted && alpha >= 1.0 {
            // What the full step left, and the residual it solved (only where stiff
            // chords may follow: what its linear model left is worked out from it, a
            // product with `A`, only if the chords stall early).
            let after_step = norm;
            let stiff_may = stiff_failures < stiff::FIRST_FAILURES
                && stiff::may_take(options, piece.cols.len());
            let step_residual = stiff_may.then(|| r.clone());
            let mut linear_left = None;
            // What the linear model leaves: an inconsistent part (a conflict) or nearly
            // nothing (what the step left is then its curvature).
            let wanted = !shift_refused
                && shift::wanted(
                    options,
                    piece.cols.len(),
                    (norm0, norm),
                    excess_of(&rows, out.residuals(), &row_tol),
                    || linalg::norm(&steps.residual_of(&r, &dy)),
                );
            let factored = wanted
                .then(|| {
                    shifts
                        .get_or_insert_with(|| {
                            shift::Shifts::new(cluster, piece, col_of.len(), &piece_weight, options)
                        })
                        .factor(&jac, rows.len())
                })
                .flatten();
            if let Some((steps, shift_cols)) = factored {
                for round in 0..shift::MAX_SHIFTS {
                    if excess_of(&rows, out.residuals(), &row_tol) <= shift::POLISH_EXCESS {
                        break;
                    }
                    r.clear();
                    r.extend(rows.iter().map(|&k| out.residuals()[k]));
                    let mut ds =
                        shift::spread(&steps.solve_refined(&r), shift_cols, piece.cols.len());
                    drop_noise(&mut ds);
                    let before = norm;
                    let trial =
                        stepper.try_step(scratch, (local, params), out, &rows, (&ds, 1.0))?;
                    let cut = if round == 0 { shift::FIRST_CUT } else { 2.0 };
                    if trial.is_finite() && trial * cut <= before {
                        stepper.accept(local, params);
                        norm = trial;
                        shifted = true;
                    } else {
                        // Translations alone do not reach what is left: no more
                        // shifts in this solve.
                        shift_refused |= round == 0;
                        // `out` holds the rejected trial: evaluate again where we are.
                        cluster.evaluate_residuals(scratch, local, params, out)?;
                        break;
                    }
                }
            }
            let mut short = false;
            for _ in 0..MAX_CHORD_STEPS {
                if excess_of(&rows, out.residuals(), &row_tol) <= 1.0 {
                    break;
                }
                r.clear();
                r.extend(rows.iter().map(|&k| out.residuals()[k]));
                let mut dc = steps.solve(&r);
                drop_noise(&mut dc);
                let before = norm;
                norm = stepper.try_step(scratch, (local, params), out, &rows, (&dc, 1.0))?;
                if norm.is_finite() && norm <= 0.25 * before {
                    stepper.accept(local, params);
                } else {
                    // `out` holds the rejected trial: evaluate again where we are.
                    values = false;
                    short = true;
                    norm = before;
                    break;
                }
            }
            let stiff_wanted = short
                && stiff::chords_short(after_step, norm)
                && step_residual.as_ref().is_some_and(|step_r| {
                    let left = linalg::norm(&steps.residual_of(step_r, &dy));
                    linear_left = Some(left);
                    stiff::wanted(after_step, norm, left)
                });
            if stiff_wanted {
                cluster.evaluate_residuals(scratch, local, params, out)?;
                values = true;
                // The same Jacobian weighed again (its `A^T A` rescaled, not summed
                // again); the next iteration fills the matrix afresh.
                let stiff_weight = stiff::weights(cluster, &piece.cols, &piece_weight);
                matrix.reweigh(&jac, col_of, (&piece_weight, &stiff_weight));
                let stiff_steps = matrix
                    .factor()
                    .ok()
                    .and_then(|f| f.regularized(0.0, residual / first.max(1e-300)).ok());
                if let Some(stiff_steps) = stiff_steps {
                    let before_stiff = (local.to_vec(), params.clone(), norm);
                    let again = stiff_failures > 0;
                    // How many times the chord that ended them still cut the residual
                    // (none: they ended at the tolerance or after their last round).
                    let mut last_cut = f64::INFINITY;
                    let mut taken = 0;
                    for round in 0..stiff::MAX_STIFF_CHORDS {
                        if excess_of(&rows, out.residuals(), &row_tol) <= shift::POLISH_EXCESS {
                            break;
                        }
                        r.clear();
                        r.extend(rows.iter().map(|&k| out.residuals()[k]));
                        let mut dc = stiff_steps.solve(&r);
                        drop_noise(&mut dc);
                        stiff::in_step_metric(&mut dc, &stiff_weight, &piece_weight);
                        let before = norm;
                        let trial =
                            stepper.try_step(scratch, (local, params), out, &rows, (&dc, 1.0))?;
                        if trial.is_finite() && trial * stiff::STIFF_CUT <= before {
                            stepper.accept(local, params);
                            norm = trial;
                            taken += 1;
                        } else {
                            if round == 0 {
                                stiff_failures += 1;
                            }
                            last_cut = if trial.is_finite() && trial > 0.0 {
                                before / trial
                            } else {
                                0.0
                            };
                            // `out` holds the rejected trial: evaluate again where we are.
                            cluster.evaluate_residuals(scratch, local, params, out)?;
                            break;
                        }
                    }
                    let held = excess_of(&rows, out.residuals(), &row_tol) <= 1.0;
                    let (at, p, start) = before_stiff;
                    let ended = stiff::Ended {
                        start,
                        end: norm,
                        linear_left: linear_left.unwrap_or(0.0),
                        last_cut,
                        again,
                    };
                    // (Where the first fell short nothing moved: that counts towards
                    // `stiff::FIRST_FAILURES` alone.)
                    let kept = stiff::kept(ended);
                    if !held && taken > 0 && !kept {
                        // Too little gained, or stalled at the equations' disagreement:
                        // undone, and the Newton steps go on from where they were; a
                        // disagreement ends stiff chords, too little gain counts as a
                        // failure.
                        local.copy_from_slice(&at);
                        *params = p;
                        cluster.evaluate_residuals(scratch, local, params, out)?;
                        stiff_failures = if stiff::at_disagreement(ended) {
                            stiff::FIRST_FAILURES
                        } else {
                            stiff_failures + 1
                        };
                    }
                    after_stiff = !held && taken > 0 && kept;
                    // As after shifts: where stiff chords end the solve just inside the
                    // tolerance, one more Newton step follows.
                    shifted |= held;
                }
            }
        }
        if accepted && alpha >= 1.0 {
            lambda *= 0.1;
        } else if accepted && alpha >= 0.25 {
            lambda *= 0.25;
        } else if accepted {
            // Only a short step helped: the Gauss-Newton direction is unreliable here
            // (near-singular Jacobian, e.g. redundant joints near a solution set): damp
            // the next one (Levenberg-Marquardt).
            lambda = if lambda == 0.0 {
                1e-6 * smax * smax
            } else {
                lambda * 4.0
            };
        } else {
            // No descent along the Gauss-Newton direction: damp it.
            lambda = if lambda == 0.0 {
                1e-6 * smax * smax
            } else {
                lambda * 10.0
            };
            if lambda > 1e12 * (smax * smax).max(1.0) && kicks < MAX_KICKS {
                // Stalled with the equations unsolved: a stationary point (axes exactly
                // perpendicular make the axis equations' gradient vanish) or a conflict.
                // A small turn of the piece's parts leaves a stationary point; from a
                // conflict it changes nothing, and the best point is kept below.
                kick!(residual);
            }
            if lambda > 1e12 * (smax * smax).max(1.0) {
                // Kicks found nothing better: back to where they started.
                if let Some((best, at, p)) = before_kicks.take() {
                    if best <= residual {
                        local.copy_from_slice(&at);
                        *params = std::borrow::Cow::Owned(p);
                    }
                }
                cluster.evaluate(scratch, local, params, out)?;
                let r: Vec<f64> = rows.iter().map(|&k| out.residuals()[k]).collect();
                return Ok(PieceReport {
                    iterations,
                    residual: r.iter().fold(0.0f64, |m, x| m.max(x.abs())),
                    excess: excess_of(&rows, out.residuals(), &row_tol),
                    placed: false,
                    residuals: final_residuals(piece, out),
                    rank: equation_rank(
                        &Linearization {
                            cluster,
                            local,
                            out,
                            col_of,
                            weight: &piece_weight,
                        },
                        piece,
                        options,
                    )?,
                    limits: limit_report(piece, &active, out, &row_tol),
                    whole_again: false,
                });
            }
        }
    }
}

/// A full step that leaves more than this fraction of the residual's norm made little
/// progress: where the equations cannot all hold, Gauss-Newton crawls to the
/// least-squares pose at this pace or slower (near a solution that exists, full steps
/// converge quadratically).
const STALLED: f64 = 0.9;

/// A full step that cuts the residual's norm less than this many times crawls: the next
/// one is solved to the end by conjugate gradients where the equations agree (near a
/// solution, a full Newton step cuts it by far more).
const CRAWL: f64 = 2.0;

/// Kicks out of a stationary point per piece solve.
const MAX_KICKS: usize = 2;
/// A kick turns each part by this much (radians) and moves it by this fraction of its
/// size, in fixed skew directions (the same input gives the same result).
const KICK_TURN: f64 = 0.05;
const KICK_SHIFT: f64 = 0.01;

/// The kick as a weighted step `dy` over the piece's columns (see [`Stepper`]):
/// `delta = -dy / weight`.
fn kick_step(cluster: &ClusterTape, cols: &[usize], weight: &[f64]) -> Vec<f64> {
    const TURN: [f64; 3] = [0.267_261_2, 0.534_522_5, 0.801_783_7];
    const SHIFT: [f64; 3] = [0.6, -0.5, 0.624_499_8];
    let layout = cluster.layout();
    cols.iter()
        .zip(weight)
        .map(|(&c, &w)| {
            let delta = match layout.column(c) {
                Some(tenon_system::TangentColumn::Rotation { axis, .. }) => KICK_TURN * TURN[axis],
                // A part's rotation weight is its size: shift by a fraction of it.
                Some(tenon_system::TangentColumn::Translation { part, axis }) => {
                    let size = weight_of_rotation(cols, weight, layout, part);
                    KICK_SHIFT * size * SHIFT[axis]
                }
                _ => KICK_TURN,
            };
            -delta * w
        })
        .collect()
}

/// The size of local part `part` (its rotation columns' weight), 1 when not found.
fn weight_of_rotation(
    cols: &[usize],
    weight: &[f64],
    layout: tenon_system::Layout,
    part: usize,
) -> f64 {
    let rotation = layout.part_columns(part).start + 3;
    cols.iter()
        .position(|&c| c == rotation)
        .map_or(1.0, |k| weight[k])
}

/// A trial step of a piece: the local state moved by `-alpha W^-1 dy` in the piece's
/// columns (its parts' entries only, counted turns followed), its residuals evaluated;
/// then kept or dropped.
struct Stepper<'p> {
    cluster: &'p ClusterTape,
    cols: &'p [usize],
    weight: &'p [f64],
    /// The local state entries the piece's columns move.
    moved: &'p [usize],
    trial: &'p mut [f64],
    delta: &'p mut [f64],
    /// The parameters at the trial (its counted turns), when the cluster has any.
    params: Vec<f64>,
    turns: bool,
}

impl Stepper<'_> {
    /// Evaluates the trial `at - alpha W^-1 dy` (`step` is `(dy, alpha)`) into `out`;
    /// returns the norm of `rows`' residuals there.
    fn try_step(
        &mut self,
        scratch: &mut Scratch,
        (local, params): (&[f64], &[f64]),
        out: &mut ClusterOutput,
        rows: &[usize],
        (dy, alpha): (&[f64], f64),
    ) -> Result<f64, SolveError> {
        let cluster = self.cluster;
        for (k, &c) in self.cols.iter().enumerate() {
            self.delta[c] = -alpha * dy[k] / self.weight[k];
        }
        for &i in self.moved {
            self.trial[i] = local[i];
        }
        cluster.retract_columns(self.trial, self.delta, self.cols);
        if self.turns {
            self.params.clear();
            self.params.extend_from_slice(params);
            cluster.update_turns(scratch, local, self.trial, &mut self.params, out)?;
        }
        let at: &[f64] = if self.turns { &self.params } else { params };
        cluster.evaluate_residuals(scratch, self.trial, at, out)?;
        Ok(linalg::norm_of_rows(out.residuals(), rows))
    }

    /// Moves to the last trial.
    fn accept(&self, local: &mut [f64], params: &mut Cow<'_, [f64]>) {
        for &i in self.moved {
            local[i] = self.trial[i];
        }
        if self.turns {
            match params {
                Cow::Owned(p) => p.copy_from_slice(&self.params),
                Cow::Borrowed(_) => *params = Cow::Owned(self.params.clone()),
            }
        }
    }
}

/// The groups of a piece's columns `cols` (ascending cluster tangent columns) that
/// rows read together: a part's columns one group, an extra unknown alone; numbered in
/// column order (see `StepMatrix::set_groups`).
pub(super) fn column_groups(cluster: &ClusterTape, cols: &[usize]) -> Vec<usize> {
    let n6 = 6 * cluster.parts().len();
    let mut groups = Vec::with_capacity(cols.len());
    let mut last = None;
    for &c in cols {
        let key = if c < n6 { c / 6 } else { c };
        if last.is_some_and(|l| l != key) {
            groups.push(groups.last().map_or(0, |g| g + 1));
        } else {
            groups.push(groups.last().copied().unwrap_or(0));
        }
        last = Some(key);
    }
    groups
}

/// Step components at rounding level are noise: left in, they would creep into
/// coordinates that are exactly zero (a planar part's tilt) as subnormal numbers, which
/// are slow, and move parts that should not move at all.
fn drop_noise(dy: &mut [f64]) {
    let largest = dy.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    dy.iter_mut()
        .filter(|x| x.abs() <= STEP_NOISE * largest)
        .for_each(|x| *x = 0.0);
}

/// The residuals of the piece's equations from the last evaluation.
fn final_residuals(piece: &Part, out: &ClusterOutput) -> Vec<(usize, f64)> {
    piece
        .rows
        .iter()
        .map(|&k| (k, out.residuals()[k]))
        .collect()
}

/// Where the equations were last evaluated, and how the piece's columns sit in the
/// cluster's (`col_of`) with their weights.
struct Linearization<'a> {
    cluster: &'a ClusterTape,
    local: &'a [f64],
    out: &'a ClusterOutput,
    col_of: &'a [usize],
    weight: &'a [f64],
}

/// The rank of the piece's equations alone (limits held at their bounds are not
/// joints: they do not change the degrees of freedom), from the last evaluation.
fn equation_rank(
    at: &Linearization<'_>,
    piece: &Part,
    options: SolveOptions,
) -> Result<Option<usize>, SolveError> {
    let jac = at.cluster.tangent_jacobian(at.local, at.out, &piece.rows);
    if piece.cols.len() > options.rank_columns {
        return Ok(None);
    }
    if piece.cols.len() > crate::linalg::RANK_COLUMNS {
        return Ok(sparse_rank(&jac, at.col_of, at.weight));
    }
    let mut matrix = StepMatrix::new(piece.rows.len(), piece.cols.len(), options.dense_columns);
    matrix.rank_at(&jac, at.col_of, at.weight)
}

/// The rank of a large piece's weighted Jacobian `jac` (columns mapped by `col_of`) by
/// sparse elimination row by row (as the diagnosis does), or `None` when its factor
/// would grow too large (see [`crate::row_rank`]).
fn sparse_rank(
    jac: &tenon_system::TangentJacobian,
    col_of: &[usize],
    weight: &[f64],
) -> Option<usize> {
    let mut rows: Vec<Vec<(u32, f64)>> = vec![Vec::new(); jac.rows];
    for &(r, c, v) in &jac.entries {
        let k = col_of.get(c as usize).copied().unwrap_or(usize::MAX);
        if let (Some(row), Some(w)) = (rows.get_mut(r as usize), weight.get(k)) {
            row.push((k as u32, v / w));
        }
    }
    let rhs = vec![0.0; rows.len()];
    crate::row_rank::row_rank(weight.len(), &rows, &rhs, crate::DEPENDENT_ROW).map(|r| r.rank)
}

/// The piece's limit sides that bind (held at their bounds) or are broken, with how far
/// each is beyond its bound at the last evaluation.
fn limit_report(
    piece: &Part,
    active: &[LimitRow],
    out: &ClusterOutput,
    row_tol: &[f64],
) -> Vec<(LimitRow, f64)> {
    piece
        .limits
        .iter()
        .filter_map(|l| {
            let excess = l.excess(out.residuals()[l.row]);
            (active.contains(l) || excess > row_tol[l.row]).then_some((*l, excess))
        })
        .collect()
}

/// Per row of `tape`, its tolerance: its equations', then (after them) its limit rows'.
pub(super) fn row_tolerances(tape: &ClusterTape, tolerance: &RowTolerances) -> Vec<f64> {
    per_row(tape, tolerance, |e| tolerance.equation(e))
}

/// Per row of `tape`, the residual a least-squares pose may leave there: the geometric
/// tolerance for lengths, that over the model's reach for angles (no point moved more).
pub(super) fn placed_tolerances(tape: &ClusterTape, tolerance: &RowTolerances) -> Vec<f64> {
    per_row(tape, tolerance, |e| tolerance.placed(e))
}

/// `of_equation` for each of `tape`'s equation rows, then its limit rows' tolerances.
fn per_row(
    tape: &ClusterTape,
    tolerance: &RowTolerances,
    of_equation: impl Fn(usize) -> f64,
) -> Vec<f64> {
    let mut row_tol: Vec<f64> = tape.equations().iter().map(|&e| of_equation(e)).collect();
    for l in tape.limit_rows() {
        if row_tol.len() <= l.row {
            row_tol.resize(l.row + 1, crate::TOLERANCE);
        }
        row_tol[l.row] = tolerance.limit(l.limit);
    }
    row_tol
}

/// The largest of `rows`' residuals relative to their tolerances (1 or less: all hold;
/// NaN counts as not holding).
pub(super) fn excess_of(rows: &[usize], residuals: &[f64], row_tol: &[f64]) -> f64 {
    rows.iter().fold(0.0f64, |m, &k| {
        let e = residuals[k].abs() / row_tol[k];
        if e.is_nan() {
            f64::INFINITY
        } else {
            m.max(e)
        }
    })
}
