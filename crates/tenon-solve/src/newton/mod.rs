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

//!
//! | module | owns |
//! |---|---|
//! | `mod` (here) | a cluster: split into pieces by the equations taking part, stage tapes cut, each piece solved, reports in equation terms |
//! | `piece` | one piece: the Newton loop (line search, chord steps, damping, limits as an active set), staged or whole, the trial step, the rank at the end |
//! | `shift` | translation-only corrections after a full step on a large piece (the turns held, point equations are linear in the positions) |

mod piece;
mod shift;
mod stiff;

use std::borrow::Cow;

use petgraph::unionfind::UnionFind;
use tenon_system::{ClusterTape, LimitRow, Scratch, StageTape, System};

use crate::blocks;
use crate::structure::RowLists;
use crate::tolerance::RowTolerances;
use crate::{takes_part, ClusterReport, LimitReport, SolveError, SolveOptions};
use piece::{solve_piece, solve_staged, Equations, Room, Run, Work};

/// A sub-cluster: the local tangent columns and local equation rows that the equations
/// taking part in this solve join (a motion left out may split a compiled cluster).
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub(super) cols: Vec<usize>,
    pub(super) rows: Vec<usize>,
    /// Limit sides on its coordinates.
    pub(super) limits: Vec<LimitRow>,
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
        .map(|k| weights[cluster.global_column(k)])
        .collect()
}

/// Solves only some equations of a cluster (`rows`, local indices), every unknown of the
/// cluster free, from the global `state`: the same least-change Newton as a solve.
/// Returns the local state and the parameters at the end, and whether `rows` hold.
pub(crate) fn solve_rows(
    cluster: &ClusterTape,
    scratch: &mut Scratch,
    (state, params): (&[f64], &[f64]),
    weights: &[f64],
    rows: Vec<usize>,
    (tolerance, options): (&RowTolerances, SolveOptions),
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
        tolerance,
        placing: false,
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
    Ok((local, params.into_owned(), report.excess <= 1.0))
}

/// One compiled cluster to solve, with its stage tapes if [`crate::prepare`] made them.
pub(crate) struct ClusterJob<'a> {
    pub(crate) system: &'a System,
    pub(crate) cluster: &'a ClusterTape,
    /// Per piece, its stages (empty: solved whole).
    pub(crate) stages: Option<&'a [Vec<StageTape>]>,
    /// The cluster's pieces for these options, when [`prepare`](crate::prepare) split it
    /// (else it is split here).
    pub(crate) pieces: Option<&'a [Part]>,
    /// Per equation of the system, its tolerance (see [`crate::Tolerances`]).
    pub(crate) tolerance: &'a RowTolerances,
}

/// The equations of a cluster that take part in a solve with `options`.
fn used_rows(system: &System, cluster: &ClusterTape, options: SolveOptions) -> Vec<usize> {
    (0..cluster.equations().len())
        .filter(|&k| takes_part(system, cluster.equations()[k], options.include_motions))
        .collect()
}

/// A cluster's pieces as a solve with the plan's options splits it, and each piece's
/// stages (none: the piece is solved whole). Kept with the compiled system, so that a
/// solve does not split the cluster again (nor does a drag at each step).
#[derive(Debug, Clone)]
pub(crate) struct ClusterPlan {
    pub(crate) pieces: Vec<Part>,
    pub(crate) stages: Vec<Vec<StageTape>>,
}

/// Cuts a cluster's pieces into stages (see [`crate::blocks`]) and compiles a tape per
/// stage; a piece with one stage, or with joint limits, gets none.
pub(crate) fn cut_stages(
    system: &mut System,
    cluster: &ClusterTape,
    options: SolveOptions,
) -> Result<ClusterPlan, SolveError> {
    let used = used_rows(system, cluster, options);
    let pattern = cluster.tangent_pattern(&used);
    let row_cols = RowLists::from_pairs(
        cluster.equations().len(),
        pattern
            .iter()
            .filter_map(|&(r, c)| used.get(r as usize).map(|&row| (row, c))),
    );
    let pieces = split(cluster, &used);
    let mut plan = Vec::with_capacity(pieces.len());
    for piece in &pieces {
        if !piece.limits.is_empty() {
            plan.push(Vec::new());
            continue;
        }
        let stages = blocks::stages(&piece.rows, &piece.cols, &row_cols, options.stage_columns);
        if stages.len() < 2 {
            plan.push(Vec::new());
            continue;
        }
        let cut: Vec<(Vec<usize>, Vec<usize>)> =
            stages.into_iter().map(|s| (s.rows, s.cols)).collect();
        if cluster.tangent_dimension() <= blocks::STAGE_TAPE_COLUMNS {
            plan.push(
                cut.into_iter()
                    .map(|(rows, cols)| StageTape::on_cluster_tape(cols, rows))
                    .collect(),
            );
            continue;
        }
        plan.push(compile_stages(system, cluster, cut)?);
    }
    Ok(ClusterPlan {
        pieces,
        stages: plan,
    })
}

/// Stages `(rows, cols)` of `cluster`, each compiled into a tape of its own.
pub(crate) fn compile_stages(
    system: &mut System,
    cluster: &ClusterTape,
    cut: Vec<(Vec<usize>, Vec<usize>)>,
) -> Result<Vec<StageTape>, SolveError> {
    let tapes = cluster.restricted(system, &cut)?;
    Ok(cut
        .into_iter()
        .zip(tapes)
        .map(|((_, cols), tape)| StageTape::new(cols, tape))
        .collect())
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
    let (system, cluster, tolerance) = (job.system, job.cluster, job.tolerance);
    let mut local = cluster.gather(state);
    let mut params: Cow<'_, [f64]> = Cow::Borrowed(params);
    let mut out = cluster.output();
    cluster.evaluate(scratch, &local, &params, &mut out)?;
    let split_here;
    let pieces = match job.pieces {
        Some(pieces) => pieces,
        None => {
            split_here = split(cluster, &used_rows(system, cluster, options));
            &split_here[..]
        }
    };
    let weight = local_weights(cluster, weights);
    let mut room = Room::new(cluster, &local);
    let mut reports = Vec::with_capacity(pieces.len());
    let mut residuals = Vec::new();
    for (k, piece) in pieces.iter().enumerate() {
        // `out` holds the evaluation at the start until the first piece moves anything.
        let run = Run {
            evaluated: k == 0,
            rank: options.report_rank,
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
            tolerance,
            placing: true,
            options,
        };
        let equations = Equations {
            tape: cluster,
            out: &mut out,
        };
        // A piece with couplings keeps its start, to be placed without them if it
        // stalls (see `without_couplings_first`).
        let couplings = coupling_rows(system, cluster, piece);
        let start = (!couplings.is_empty()).then(|| (work.local.to_vec(), work.params.clone()));
        let mut report = match stages {
            Some(stages) => solve_staged(equations, piece, stages, run, &mut work)?,
            None => solve_piece(equations, piece, run, &mut work)?,
        };
        if let Some(start) = start.filter(|_| report.excess > 1.0) {
            let equations = Equations {
                tape: cluster,
                out: &mut out,
            };
            let stalled = report.residual;
            let placed_first = without_couplings_first(
                equations,
                (piece, &couplings),
                (start, stalled),
                &mut work,
            )?;
            if let Some(better) = placed_first {
                report = piece::PieceReport {
                    iterations: report.iterations + better.iterations,
                    ..better
                };
            }
        }
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
        let limits_hold = report
            .limits
            .iter()
            .all(|(l, e)| *e <= tolerance.limit(l.limit));
        reports.push(ClusterReport {
            parts,
            equations,
            iterations: report.iterations,
            max_residual: report.residual,
            converged: (report.excess <= 1.0 || report.placed) && limits_hold,
            placed: report.placed,
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

/// The piece's rows that are couplings (see [`tenon_system::Role::Coupling`]).
fn coupling_rows(system: &System, cluster: &ClusterTape, piece: &Part) -> Vec<usize> {
    piece
        .rows
        .iter()
        .copied()
        .filter(|&k| {
            cluster
                .equations()
                .get(k)
                .and_then(|&e| system.equations().get(e))
                .is_some_and(|e| e.role == tenon_system::Role::Coupling)
        })
        .collect()
}

/// After a piece solve that stalled with couplings among its rows: from the piece's
/// start again, the parts placed by the other equations alone, then everything from
/// there. A screw coupling whose nut starts with its axis across the screw pulls the
/// nut's turn one way while its axis must swing another; placed first, the nut turns
/// and slides along a line it is already on. Returns the second solve's report, or
/// `None` (and the state as the stalled solve left it) when it did no better.
fn without_couplings_first(
    equations: Equations<'_>,
    (piece, couplings): (&Part, &[usize]),
    (start, stalled_residual): ((Vec<f64>, Cow<'_, [f64]>), f64),
    work: &mut Work<'_, '_>,
) -> Result<Option<piece::PieceReport>, SolveError> {
    let stalled = (work.local.to_vec(), work.params.to_vec());
    work.local.copy_from_slice(&start.0);
    *work.params = Cow::Owned(start.1.into_owned());
    work.room.resync(work.local);
    let Equations { tape, out } = equations;
    let placing = Part {
        cols: piece.cols.clone(),
        rows: piece
            .rows
            .iter()
            .copied()
            .filter(|r| !couplings.contains(r))
            .collect(),
        limits: piece.limits.clone(),
    };
    let quiet = Run {
        evaluated: false,
        rank: false,
    };
    let first = solve_piece(
        Equations {
            tape,
            out: &mut *out,
        },
        &placing,
        quiet,
        work,
    )?;
    let all = Run {
        evaluated: false,
        rank: work.options.report_rank,
    };
    let second = solve_piece(
        Equations {
            tape,
            out: &mut *out,
        },
        piece,
        all,
        work,
    )?;
    if second.residual < stalled_residual {
        return Ok(Some(piece::PieceReport {
            iterations: first.iterations + second.iterations,
            ..second
        }));
    }
    work.local.copy_from_slice(&stalled.0);
    *work.params = Cow::Owned(stalled.1);
    work.room.resync(work.local);
    tape.evaluate(work.scratch, work.local, work.params, out)?;
    Ok(None)
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
            // A row reads a part's columns side by side: one union per run of them.
            let mut last = first;
            for g in read {
                if g != last {
                    uf.union(first, g);
                    last = g;
                }
            }
            Some(first)
        })
        .collect();
    // Each group's piece, then each piece's lists sized before they are filled (a
    // 10,000-part cluster is one piece; growing its lists copied them again and again).
    let mut piece_of_root = vec![usize::MAX; groups];
    let mut piece_of_group = Vec::with_capacity(groups);
    let mut sizes: Vec<(usize, usize, usize)> = Vec::new();
    for g in 0..groups {
        let root = uf.find(g);
        if piece_of_root[root] == usize::MAX {
            piece_of_root[root] = sizes.len();
            sizes.push((0, 0, 0));
        }
        let p = piece_of_root[root];
        piece_of_group.push(p);
        sizes[p].0 += if g < n_parts { 6 } else { 1 };
    }
    // A used row with no unknown cannot be moved; it is reported with the first piece
    // (it belongs to the cluster only through unknowns that cancel here).
    let piece_of_row: Vec<usize> = row_group
        .iter()
        .map(|g| g.map_or(0, |g| uf.find(g)))
        .map(|root| piece_of_root.get(root).copied().unwrap_or(usize::MAX))
        .collect();
    for (k, &p) in piece_of_row.iter().enumerate() {
        if let Some(size) = sizes.get_mut(p) {
            if k < used.len() {
                size.1 += 1;
            } else {
                size.2 += 1;
            }
        }
    }
    let mut pieces: Vec<Part> = sizes
        .iter()
        .map(|&(cols, rows, limits)| Part {
            cols: Vec::with_capacity(cols),
            rows: Vec::with_capacity(rows),
            limits: Vec::with_capacity(limits),
        })
        .collect();
    for (g, &p) in piece_of_group.iter().enumerate() {
        let piece = &mut pieces[p];
        if g < n_parts {
            piece.cols.extend(6 * g..6 * g + 6);
        } else {
            piece.cols.push(g + 5 * n_parts);
        }
    }
    for (k, &p) in piece_of_row.iter().enumerate() {
        if let Some(piece) = pieces.get_mut(p) {
            if k < used.len() {
                piece.rows.push(used[k]);
            } else if let Some(&limit) = limits.get(k - used.len()) {
                piece.limits.push(limit);
            }
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces a plan keeps are the ones a solve with the plan's options splits the
    /// cluster into (same columns, rows and limits, in the same order): for every JSON
    /// fixture, every cluster, with motions taking part and without them.
    #[test]
    fn planned_pieces_are_the_pieces_a_solve_splits() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|p| p.extension().is_some_and(|e| e == "json"));
        files.sort();
        let mut pieces_seen = 0;
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            let assembly = tenon_model::read_json(&text, None).unwrap();
            let mut system = System::build(&assembly).unwrap();
            let compiled = system.compile().unwrap();
            for include_motions in [true, false] {
                let options = SolveOptions {
                    include_motions,
                    ..SolveOptions::default()
                };
                for cluster in compiled.clusters() {
                    let plan = cut_stages(&mut system, cluster, options).unwrap();
                    let split = split(cluster, &used_rows(&system, cluster, options));
                    assert_eq!(plan.pieces.len(), split.len(), "{}", path.display());
                    assert_eq!(plan.stages.len(), split.len(), "{}", path.display());
                    for (a, b) in plan.pieces.iter().zip(&split) {
                        assert_eq!((&a.cols, &a.rows), (&b.cols, &b.rows));
                        assert_eq!(a.limits, b.limits);
                    }
                    pieces_seen += split.len();
                }
            }
        }
        assert!(
            files.len() >= 15 && pieces_seen >= 40,
            "{} files, {pieces_seen} pieces",
            files.len()
        );
    }
}
