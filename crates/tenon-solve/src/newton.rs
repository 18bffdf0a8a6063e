//! Least-change Gauss-Newton on one cluster, in its local tangent space.
//!
//! The step is the minimum-norm solution of `J dx = -r` with parts weighted by their
//! size: `dx = -W^-1 pinv(J W^-1) r` (see [`crate::linalg`]). A backtracking line search
//! keeps each step a descent of `|r|`; when it stalls, or only a short step helps,
//! Levenberg damping shortens the next one. Counted turns are updated after every
//! accepted step.
//!
//! Everything here reads and writes the cluster's local state only: the cost of an
//! iteration is the cost of the cluster.

use std::borrow::Cow;

use petgraph::unionfind::UnionFind;
use tenon_system::{ClusterOutput, ClusterTape, LimitRow, Scratch, StageTape, System};

use crate::blocks;
use crate::linalg::{self, StepMatrix};
use crate::{takes_part, ClusterReport, LimitReport, SolveError, SolveOptions};

/// Step components below this fraction of the largest are dropped as rounding noise.
const STEP_NOISE: f64 = 1e-14;

/// Chord steps (the last factorization reused) tried after each full Newton step: each
/// costs about a quarter of a Newton iteration.
const MAX_CHORD_STEPS: usize = 5;

/// A sub-cluster: the local tangent columns and local equation rows that the equations
/// taking part in this solve join (a motion left out may split a compiled cluster).
struct Part {
    cols: Vec<usize>,
    rows: Vec<usize>,
    /// Limit sides on its coordinates.
    limits: Vec<LimitRow>,
}

/// The result of solving one compiled cluster.
pub(crate) struct ClusterResult {
    pub(crate) local: Vec<f64>,
    /// Its turn counters' new values: `(parameter index, value)`.
    pub(crate) turns: Vec<(usize, f64)>,
    pub(crate) reports: Vec<ClusterReport>,
    /// Final residuals of the equations solved: `(equation index, value)`.
    pub(crate) residuals: Vec<(usize, f64)>,
}

/// The weights of a cluster's local tangent columns, from the system's.
fn local_weights(cluster: &ClusterTape, weights: &[f64]) -> Vec<f64> {
    (0..cluster.tangent_dimension())
        .map(|k| {
            weights
                .get(cluster.global_column(k))
                .copied()
                .unwrap_or(1.0)
        })
        .collect()
}

/// Solves only some equations of a cluster (`rows`, local indices), every unknown of the
/// cluster free, from the global `state`: the same least-change Newton as a solve.
/// Returns the local state and the parameters at the end, and whether `rows` hold.
pub(crate) fn solve_rows(
    cluster: &ClusterTape,
    scratch: &mut Scratch,
    state: &[f64],
    params: &[f64],
    weights: &[f64],
    rows: Vec<usize>,
    options: SolveOptions,
) -> Result<(Vec<f64>, Vec<f64>, bool), SolveError> {
    let mut local = cluster.gather(state);
    let mut params: Cow<'_, [f64]> = Cow::Borrowed(params);
    let mut out = cluster.output();
    cluster.evaluate(scratch, &local, &params, &mut out)?;
    let piece = Part {
        cols: (0..cluster.tangent_dimension()).collect(),
        rows,
        limits: Vec::new(),
    };
    let weight = local_weights(cluster, weights);
    let mut room = Room::new(cluster, &local);
    let mut work = Work {
        scratch,
        local: &mut local,
        params: &mut params,
        room: &mut room,
        weight: &weight,
        options,
    };
    let report = solve_piece(
        Equations {
            tape: cluster,
            out: &mut out,
        },
        &piece,
        Run {
            evaluated: true,
            rank: false,
        },
        &mut work,
    )?;
    Ok((
        local,
        params.into_owned(),
        report.residual <= options.tolerance,
    ))
}

/// One compiled cluster to solve, with its stage tapes if [`crate::prepare`] made them.
pub(crate) struct ClusterJob<'a> {
    pub(crate) system: &'a System,
    pub(crate) cluster: &'a ClusterTape,
    /// Per piece, its stages (empty: solved whole).
    pub(crate) stages: Option<&'a [Vec<StageTape>]>,
}

/// The equations of a cluster that take part in a solve with `options`.
fn used_rows(system: &System, cluster: &ClusterTape, options: SolveOptions) -> Vec<usize> {
    (0..cluster.equations().len())
        .filter(|&k| takes_part(system, cluster.equations()[k], options.include_motions))
        .collect()
}

/// Cuts a cluster's pieces into stages (see [`crate::blocks`]) and compiles a tape per
/// stage; a piece with one stage, or with joint limits, gets none.
pub(crate) fn cut_stages(
    system: &mut System,
    cluster: &ClusterTape,
    options: SolveOptions,
) -> Result<Vec<Vec<StageTape>>, SolveError> {
    let used = used_rows(system, cluster, options);
    let pattern = cluster.tangent_pattern(&used);
    let mut row_cols: Vec<Vec<usize>> = vec![Vec::new(); cluster.equations().len()];
    for &(r, c, _) in &pattern.entries {
        if let Some(&row) = used.get(r as usize) {
            row_cols[row].push(c as usize);
        }
    }
    let mut plan = Vec::new();
    for piece in split(cluster, &used) {
        if !piece.limits.is_empty() {
            plan.push(Vec::new());
            continue;
        }
        let reads: Vec<Vec<usize>> = piece.rows.iter().map(|&r| row_cols[r].clone()).collect();
        let stages = blocks::stages(&piece.rows, &piece.cols, &reads, options.stage_columns);
        if stages.len() < 2 {
            plan.push(Vec::new());
            continue;
        }
        let cut: Vec<(Vec<usize>, Vec<usize>)> =
            stages.into_iter().map(|s| (s.rows, s.cols)).collect();
        let tapes = cluster.restricted(system, &cut)?;
        plan.push(
            cut.into_iter()
                .zip(tapes)
                .map(|((_, cols), tape)| StageTape::new(cols, tape))
                .collect(),
        );
    }
    Ok(plan)
}

/// Solves a compiled cluster from the global `state`.
pub(crate) fn solve_cluster(
    job: &ClusterJob<'_>,
    scratch: &mut Scratch,
    state: &[f64],
    params: &[f64],
    weights: &[f64],
    options: SolveOptions,
) -> Result<ClusterResult, SolveError> {
    let (system, cluster) = (job.system, job.cluster);
    let mut local = cluster.gather(state);
    let mut params: Cow<'_, [f64]> = Cow::Borrowed(params);
    let mut out = cluster.output();
    let used = used_rows(system, cluster, options);
    cluster.evaluate(scratch, &local, &params, &mut out)?;
    let pieces = split(cluster, &used);
    let weight = local_weights(cluster, weights);
    let mut room = Room::new(cluster, &local);
    let mut reports = Vec::with_capacity(pieces.len());
    let mut residuals = Vec::new();
    for (k, piece) in pieces.iter().enumerate() {
        // `out` holds the evaluation at the start until the first piece moves anything.
        let run = Run {
            evaluated: k == 0,
            rank: true,
        };
        // Stage tapes are cut from the same pattern, so pieces come in the same order;
        // a stage list that does not fit this piece is ignored.
        let stages = job
            .stages
            .and_then(|p| p.get(k))
            .filter(|s| s.len() > 1)
            .filter(|s| {
                let mut cols: Vec<usize> = s.iter().flat_map(|t| t.cols()).copied().collect();
                cols.sort_unstable();
                cols == piece.cols
            });
        let mut work = Work {
            scratch,
            local: &mut local,
            params: &mut params,
            room: &mut room,
            weight: &weight,
            options,
        };
        let equations = Equations {
            tape: cluster,
            out: &mut out,
        };
        let report = match stages {
            Some(stages) => solve_staged(equations, piece, stages, run, &mut work)?,
            None => solve_piece(equations, piece, run, &mut work)?,
        };
        let staged = stages.map_or(1, |s| s.len());
        let parts = piece
            .cols
            .iter()
            .filter(|&&c| c < 6 * cluster.parts().len() && c % 6 == 0)
            .filter_map(|&c| {
                let index = *cluster.parts().get(c / 6)?;
                Some(system.free_parts().get(index)?.part)
            })
            .collect();
        let equations = piece
            .rows
            .iter()
            .filter_map(|&r| cluster.equations().get(r).copied())
            .collect();
        residuals.extend(
            report
                .residuals
                .iter()
                .filter_map(|&(k, v)| Some((*cluster.equations().get(k)?, v))),
        );
        let limits: Vec<LimitReport> = report
            .limits
            .iter()
            .filter_map(|&(row, excess)| {
                let spec = system.limits().get(row.limit)?;
                Some(LimitReport {
                    joint: spec.joint,
                    coordinate: spec.coordinate,
                    side: row.side,
                    excess: excess.max(0.0),
                })
            })
            .collect();
        let limits_hold = limits.iter().all(|l| l.excess <= options.tolerance);
        reports.push(ClusterReport {
            parts,
            equations,
            iterations: report.iterations,
            max_residual: report.residual,
            converged: report.residual <= options.tolerance && limits_hold,
            limits,
            rank: report.rank,
            dof: report.rank.map(|r| piece.cols.len().saturating_sub(r)),
            stages: if report.whole_again { 1 } else { staged },
        });
    }
    let turns = match &params {
        Cow::Borrowed(_) => Vec::new(),
        Cow::Owned(p) => cluster
            .turn_parameters()
            .iter()
            .filter_map(|id| Some((id.index(), *p.get(id.index())?)))
            .collect(),
    };
    Ok(ClusterResult {
        local,
        turns,
        reports,
        residuals,
    })
}

/// Splits a compiled cluster by the equations taking part (`used`, local rows) and its
/// limit rows: union-find over the part and extra-unknown groups each row reads, from
/// the compiled pattern alone (nothing evaluated).
fn split(cluster: &ClusterTape, used: &[usize]) -> Vec<Part> {
    let n_parts = cluster.parts().len();
    let groups = n_parts + cluster.extras().len();
    let limits = cluster.limit_rows();
    let mut uf = UnionFind::<usize>::new(groups.max(1));
    let row_group: Vec<Option<usize>> = used
        .iter()
        .copied()
        .chain(limits.iter().map(|l| l.row))
        .map(|row| {
            let mut read = cluster.groups_read(row).filter(|&g| g < groups);
            let first = read.next()?;
            for g in read {
                uf.union(first, g);
            }
            Some(first)
        })
        .collect();
    let mut piece_of_root = vec![usize::MAX; groups];
    let mut pieces: Vec<Part> = Vec::new();
    for g in 0..groups {
        let root = uf.find(g);
        if piece_of_root[root] == usize::MAX {
            piece_of_root[root] = pieces.len();
            pieces.push(Part {
                cols: Vec::new(),
                rows: Vec::new(),
                limits: Vec::new(),
            });
        }
        let piece = &mut pieces[piece_of_root[root]];
        if g < n_parts {
            piece.cols.extend(6 * g..6 * g + 6);
        } else {
            piece.cols.push(g + 5 * n_parts);
        }
    }
    for (k, g) in row_group.iter().enumerate() {
        // A used row with no unknown cannot be moved; it is reported with the first
        // piece (it belongs to the cluster only through unknowns that cancel here).
        let root = g.map_or(0, |g| uf.find(g));
        if let Some(piece) = piece_of_root.get(root).and_then(|&p| pieces.get_mut(p)) {
            if k < used.len() {
                piece.rows.push(used[k]);
            } else if let Some(&limit) = limits.get(k - used.len()) {
                piece.limits.push(limit);
            }
        }
    }
    pieces
}

struct PieceReport {
    iterations: usize,
    residual: f64,
    /// The residuals of its equations at the end: `(local row, value)`.
    residuals: Vec<(usize, f64)>,
    rank: Option<usize>,
    /// Its limit sides that bind (held as equations) and those still violated, with
    /// how far each is beyond its bound.
    limits: Vec<(LimitRow, f64)>,
    /// A staged solve fell back to solving the piece whole.
    whole_again: bool,
}

/// How a piece solve starts and ends.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// `out` already holds the evaluation at the starting state.
    evaluated: bool,
    /// Reveal the rank at the end (a stage's is not needed).
    rank: bool,
}

/// What every piece solve of a cluster shares: the thread's scratch, the cluster's
/// local state and parameters (moved in place), its room, its column weights and the
/// options. Whose equations are solved (the cluster's tape or a stage's) and into which
/// output are passed beside it.
struct Work<'w, 'p> {
    scratch: &'w mut Scratch,
    local: &'w mut [f64],
    params: &'w mut Cow<'p, [f64]>,
    room: &'w mut Room,
    weight: &'w [f64],
    options: SolveOptions,
}

/// Equations to solve: a tape and the output its evaluations go to.
struct Equations<'t> {
    tape: &'t ClusterTape,
    out: &'t mut ClusterOutput,
}

/// Solves a piece stage by stage, each stage with its own tape (see
/// [`crate::blocks`]); when a stage after the first cannot hold, the piece is solved
/// whole again from its start. The rank and residuals reported are the whole piece's,
/// from one evaluation of the cluster at the end.
fn solve_staged(
    whole: Equations<'_>,
    piece: &Part,
    stages: &[StageTape],
    run: Run,
    work: &mut Work<'_, '_>,
) -> Result<PieceReport, SolveError> {
    let start = (work.local.to_vec(), work.params.clone());
    let mut iterations = 0;
    for (k, stage) in stages.iter().enumerate() {
        let tape = stage.tape();
        let part = Part {
            cols: stage.cols().to_vec(),
            rows: (0..tape.equations().len()).collect(),
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
        if k > 0 && report.residual > work.options.tolerance {
            work.local.copy_from_slice(&start.0);
            *work.params = start.1;
            let whole_run = Run {
                evaluated: false,
                rank: run.rank,
            };
            work.room.resync(work.local);
            let again = solve_piece(whole, piece, whole_run, work)?;
            return Ok(PieceReport {
                iterations: iterations + again.iterations,
                whole_again: true,
                ..again
            });
        }
    }
    let Equations { tape: cluster, out } = whole;
    cluster.evaluate(work.scratch, work.local, work.params, out)?;
    let residuals = final_residuals(piece, out);
    let residual = residuals.iter().fold(0.0f64, |m, &(_, v)| m.max(v.abs()));
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
        residuals,
        rank,
        limits: Vec::new(),
        whole_again: false,
    })
}

/// Room a piece solve needs at its cluster's size (a column map, a trial state, a
/// step), made once per cluster solve and shared by its pieces and stages, so that a
/// stage of a few columns in a cluster of thousands costs its columns.
pub(crate) struct Room {
    /// Piece column of each cluster column (`usize::MAX`: not in the piece solved).
    col_of: Vec<usize>,
    /// Equal to the local state outside the columns being solved.
    trial: Vec<f64>,
    delta: Vec<f64>,
}

impl Room {
    pub(crate) fn new(cluster: &ClusterTape, local: &[f64]) -> Room {
        let n = cluster.tangent_dimension();
        Room {
            col_of: vec![usize::MAX; n],
            trial: local.to_vec(),
            delta: vec![0.0; n],
        }
    }

    /// After the local state changed anywhere (a staged solve starting over).
    fn resync(&mut self, local: &[f64]) {
        self.trial.copy_from_slice(local);
    }
}

/// Solves a piece's equations over its columns, from where `work` stands.
fn solve_piece(
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
    let mut iterations = 0;
    let mut lambda = 0.0;
    let mut first_residual: Option<f64> = None;
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
    let mut matrix = StepMatrix::new(rows.len(), piece.cols.len(), options.dense_columns);
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
    loop {
        if !values {
            cluster.evaluate(scratch, local, params, out)?;
            derivatives = true;
        }
        values = false;
        r.clear();
        r.extend(rows.iter().map(|&k| out.residuals()[k]));
        let residual = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        // Joint limits (active set): a limit the converged pose breaks is held at its
        // bound from then on, and the piece solved again from there.
        if residual <= options.tolerance && iterations < options.max_iterations {
            let broken: Vec<LimitRow> = piece
                .limits
                .iter()
                .filter(|l| !active.contains(l))
                .filter(|l| l.excess(out.residuals()[l.row]) > options.tolerance)
                .copied()
                .collect();
            if !broken.is_empty() {
                rows.extend(broken.iter().map(|l| l.row));
                active.extend(broken);
                matrix = StepMatrix::new(rows.len(), piece.cols.len(), options.dense_columns);
                lambda = 0.0;
                first_residual = None;
                // Nothing moved: the evaluation still holds.
                values = true;
                continue;
            }
        }
        let done = residual <= options.tolerance || iterations >= options.max_iterations;
        if rows.is_empty() || !residual.is_finite() {
            return Ok(PieceReport {
                iterations,
                residual,
                residuals: final_residuals(piece, out),
                rank: Some(0),
                limits: limit_report(piece, &active, out, options),
                whole_again: false,
            });
        }
        // Converged, and no rank wanted (a stage, or a solve of some rows): the final
        // pose needs no derivatives. The rank is always taken at the final pose: the
        // rows of redundant joints are dependent only on the solution set, and a
        // linearization one step back, where the residual was larger, counts them as
        // independent.
        if done && !run.rank {
            return Ok(PieceReport {
                iterations,
                residual,
                residuals: final_residuals(piece, out),
                rank: None,
                limits: limit_report(piece, &active, out, options),
                whole_again: false,
            });
        }
        if !derivatives {
            cluster.evaluate(scratch, local, params, out)?;
            derivatives = true;
        }
        cluster.tangent_jacobian_into(local, out, &rows, &mut jac);
        matrix.fill(&jac, col_of, &piece_weight);
        let factored = matrix.factor()?;
        if done {
            return Ok(PieceReport {
                iterations,
                residual,
                residuals: final_residuals(piece, out),
                rank: if !run.rank {
                    None
                } else if active.is_empty() {
                    factored.rank()
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
                limits: limit_report(piece, &active, out, options),
                whole_again: false,
            });
        }
        iterations += 1;
        let smax = factored.scale();
        let first = *first_residual.get_or_insert(residual);
        let steps = factored.regularized(lambda, residual / first.max(1e-300))?;
        let mut dy = steps.solve(&r);
        drop_noise(&mut dy);
        let norm0 = linalg::norm(&r);
        let mut alpha = 1.0;
        let mut accepted = false;
        let mut norm = f64::INFINITY;
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
            alpha *= 0.5;
        }
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
            for _ in 0..MAX_CHORD_STEPS {
                let largest = rows
                    .iter()
                    .fold(0.0f64, |m, &k| m.max(out.residuals()[k].abs()));
                if largest <= options.tolerance {
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
                    break;
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
            if lambda > 1e12 * (smax * smax).max(1.0) {
                cluster.evaluate(scratch, local, params, out)?;
                let r: Vec<f64> = rows.iter().map(|&k| out.residuals()[k]).collect();
                return Ok(PieceReport {
                    iterations,
                    residual: r.iter().fold(0.0f64, |m, x| m.max(x.abs())),
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
                    limits: limit_report(piece, &active, out, options),
                    whole_again: false,
                });
            }
        }
    }
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
        .map(|&k| (k, out.residuals().get(k).copied().unwrap_or(0.0)))
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
    if piece.cols.len() > crate::linalg::RANK_COLUMNS {
        return Ok(None);
    }
    let jac = at.cluster.tangent_jacobian(at.local, at.out, &piece.rows);
    let mut matrix = StepMatrix::new(piece.rows.len(), piece.cols.len(), options.dense_columns);
    matrix.fill(&jac, at.col_of, at.weight);
    Ok(matrix.factor()?.rank())
}

/// The piece's limit sides that bind (held at their bounds) or are broken, with how far
/// each is beyond its bound at the last evaluation.
fn limit_report(
    piece: &Part,
    active: &[LimitRow],
    out: &ClusterOutput,
    options: SolveOptions,
) -> Vec<(LimitRow, f64)> {
    piece
        .limits
        .iter()
        .filter_map(|l| {
            let excess = l.excess(out.residuals().get(l.row).copied().unwrap_or(0.0));
            (active.contains(l) || excess > options.tolerance).then_some((*l, excess))
        })
        .collect()
}
