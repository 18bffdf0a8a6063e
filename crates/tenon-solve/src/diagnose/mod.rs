//! Diagnostics at the solution (or the best point a failed solve reached): degrees of
//! freedom, redundant and conflicting joints, and the free motions of each part.
//!
//! Per cluster, on the size-weighted tangent Jacobian `A` (so metres and radians
//! compare, as in the solve):
//! - Equation rows are taken in file order of their joints and orthogonalised one by one
//!   (modified Gram-Schmidt, twice): a row that adds less than [`DEPENDENT_ROW`] of its
//!   own length is dependent on the rows before it. The rank is the number of
//!   independent rows; DOF = columns - rank.
//! - A dependent row `a_d = sum c_k a_k` is **redundant** when its residual agrees with
//!   the combination (`r_d - sum c_k r_k` = 0: the joint holds but adds nothing), else
//!   **conflicting**; the conflict's joints are those with `c_k != 0` and the dependent
//!   row's own. The coefficients are unique (the rows before are independent), so the
//!   set is minimal among these rows. Its violation: the cluster's other joints are
//!   solved exactly from the best point (the solve's own Newton, on those equations
//!   only), and the largest residual of the conflict's last joint there is reported (model units for points, radians for axes), what a person
//!   means by "the link is 1 mm too long"; `|r_d - sum c_k r_k|` when the others cannot
//!   be solved either.
//! - Free motions: the null space of `A` (the orthogonal complement of the independent
//!   rows), per part split into translations (no rotation), rotations and screws about an
//!   axis through a point, in world coordinates. A rotation that moves one part only,
//!   while that part is jointed to two or more others, is named idle (a rod spinning
//!   between two balls).
//!
//! - Structure first, at every size: the Dulmage-Mendelsohn decomposition of the
//!   cluster's sparsity pattern proves a lower bound on repeated equations (more
//!   equations than the unknowns they involve) and on freedom left.
//!
//! Dense: clusters of up to [`SolveOptions::diagnose_columns`] tangent columns
//! ([`DIAGNOSE_COLUMNS`] by default). Larger ones are
//! analysed sparse (module `row_rank`: the rows in the same file order rotated one by
//! one into a sparse triangular factor, the same dependence test): exact DOF, redundant
//! joints, and conflicting ones; for the first [`MEASURED_CONFLICTS`], the conflict's
//! set is traced by the dense analysis of the rows around it (a window of up to
//! [`WINDOW_COLUMNS`] columns: conflicts close loops, and loops are local) and its size
//! measured; beyond, or when the combination reaches past the window, a conflict is
//! named by its own joint alone. Free motions are not listed. When a large cluster's
//! solve fails, its least-squares compromise spreads the error (loops far from the
//! conflict then disagree slightly); the analysis first moves to the pose that
//! concentrates the error on as few equations as possible (`concentrate`).

//!
//! | module | owns |
//! |---|---|
//! | `mod` (here) | the report types, the per-cluster orchestration (structure, dense or sparse) |
//! | `rows` | the dense row analysis: rows orthogonalised in order, dependent rows with their combinations |
//! | `dependents` | the one rule from dependent rows to redundant and conflicting joints, and the status, for both analyses |
//! | `sparse` | clusters beyond the dense size: `row_rank`, conflict sets traced in dense windows |
//! | `conflict` | measuring a conflict (the others solved exactly), and the pose that concentrates a failed solve's error |
//! | `motions` | free motions per part from the null space: translations, rotations, screws, idle spins |

mod conflict;
mod dependents;
mod motions;
mod rows;
mod sparse;

use nalgebra::DMatrix;
use rustc_hash::FxHashMap;
use tenon_model::{JointKey, PartKey};

use crate::{
    column_weights, dulmage_mendelsohn, Incidence, Problem, SolveError, SolveOptions, SolveReport,
    Tolerances,
};

pub use crate::tolerance::{CONDITION_WARNING, CONSISTENT, DEPENDENT_ROW};
/// Default of [`SolveOptions::diagnose_columns`]: clusters with more tangent columns than
/// this are analysed sparse (rank and dependent rows only; see [`crate::diagnose`]).
pub const DIAGNOSE_COLUMNS: usize = 1200;
/// In the sparse analysis, at most this many conflicts get their joint set traced and
/// their size measured by solving the other joints (each such solve is one of the whole
/// cluster).
pub const MEASURED_CONFLICTS: usize = 8;
/// In the sparse analysis, a conflict's joint set is traced by the dense analysis of a
/// window of at most this many columns around it.
pub const WINDOW_COLUMNS: usize = 240;

/// How a cluster stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No freedom left, no equation repeated.
    WellConstrained,
    /// Some freedom left.
    UnderConstrained,
    /// Some joints repeat others (consistently).
    OverConstrained,
    /// Some joints cannot hold together.
    Conflicting,
    /// The solve did not converge, and no conflict explains it.
    Failed,
    /// Too large for the dense analysis.
    NotAnalysed,
}

impl Status {
    /// The spec's name (`well_constrained`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Status::WellConstrained => "well_constrained",
            Status::UnderConstrained => "under_constrained",
            Status::OverConstrained => "over_constrained",
            Status::Conflicting => "conflicting",
            Status::Failed => "failed",
            Status::NotAnalysed => "not_analysed",
        }
    }
}

/// How near a cluster's independent rows are to depending on one another: the dense
/// analysis takes the rows in order and measures what share of its length each adds to
/// the rows before it (column-weighted, as the rank); the estimate is one over the
/// smallest share, a lower bound of the condition number of the rows with unit lengths.
/// Rows of unrelated joints have shares near 1; a share of 1e-6 means the row repeats
/// the others but for a millionth of its length.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditioning {
    /// One over the smallest share (1 for orthogonal rows).
    pub estimate: f64,
    /// Above [`CONDITION_WARNING`]: the joints of the weakest row and of the rows it
    /// nearly repeats, in file order; empty otherwise.
    pub nearly_dependent: Vec<JointKey>,
}

/// Joints that cannot hold together: drop any one and the rest can (to first order).
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The joints, in file order.
    pub joints: Vec<JointKey>,
    /// How far from holding (model units or radians).
    pub violation: f64,
}

/// One independent motion left to a part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Motion {
    /// Sliding along a direction (unit).
    Translation {
        /// Unit direction, world frame.
        direction: [f64; 3],
    },
    /// Turning about an axis through a point.
    Rotation {
        /// Unit axis, world frame.
        axis: [f64; 3],
        /// The point of the axis nearest the world origin.
        point: [f64; 3],
    },
    /// Turning about an axis while advancing along it.
    Screw {
        /// Unit axis, world frame.
        axis: [f64; 3],
        /// The point of the axis nearest the world origin.
        point: [f64; 3],
        /// Advance per turn (model units; positive: right-handed about `axis`).
        pitch: f64,
    },
}

/// A free motion of a part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FreeMotion {
    /// The part.
    pub part: PartKey,
    /// The motion.
    pub motion: Motion,
    /// Whether it moves nothing but this part while the part is jointed to two or more
    /// others (a rod spinning about the line through its two balls).
    pub idle: bool,
}

/// What the sparsity pattern alone proves (Dulmage-Mendelsohn), before any numbers:
/// available at every size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Structure {
    /// Equations beyond the unknowns they involve, in the over-determined part: at least
    /// this many must repeat or conflict.
    pub excess_equations: usize,
    /// Unknowns beyond the equations that involve them, in the under-determined part: at
    /// least this many degrees of freedom are left.
    pub unfixed_unknowns: usize,
}

/// The diagnosis of one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterDiagnosis {
    /// Its free parts.
    pub parts: Vec<PartKey>,
    /// The joints with equations in it, in file order.
    pub joints: Vec<JointKey>,
    /// How it stands.
    pub status: Status,
    /// Degrees of freedom left (when analysed).
    pub dof: Option<usize>,
    /// Joints that repeat others, in file order.
    pub redundant: Vec<JointKey>,
    /// Sets of joints that cannot hold together.
    pub conflicts: Vec<Conflict>,
    /// Sets of joints that repeat one another and disagree by less than the geometric
    /// tolerance: placed by least squares (the set's last joint is also among
    /// `redundant`), each with the size of its disagreement.
    pub disagreements: Vec<Conflict>,
    /// Independent motions left, per part.
    pub free_motions: Vec<FreeMotion>,
    /// What the structure alone proves.
    pub structure: Structure,
    /// The condition estimate (dense analysis only: `None` for clusters diagnosed sparse
    /// and for clusters with no rows).
    pub conditioning: Option<Conditioning>,
}

/// The diagnosis of an assembly, cluster by cluster (as in the solve report).
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnosis {
    /// The clusters.
    pub clusters: Vec<ClusterDiagnosis>,
}

impl Diagnosis {
    /// Total degrees of freedom, when every cluster was analysed.
    pub fn dof(&self) -> Option<usize> {
        self.clusters.iter().map(|c| c.dof).sum()
    }
}

/// One cluster under analysis: where (state and parameters), its equation rows in file
/// order of their joints, and what the rules need to name and order joints.
pub(super) struct ClusterAt<'a> {
    pub(super) problem: &'a Problem<'a>,
    pub(super) state: &'a [f64],
    pub(super) params: &'a [f64],
    /// Global equation indices, in file order of their joints.
    pub(super) rows: &'a [usize],
    /// Weights of the system's tangent columns.
    pub(super) weights: &'a [f64],
    pub(super) joint_order: &'a FxHashMap<JointKey, usize>,
    pub(super) options: SolveOptions,
    /// The tolerances the solve judged by.
    pub(super) tolerances: Tolerances,
    /// Per equation and limit of the system, its tolerance.
    pub(super) tolerance: &'a crate::tolerance::RowTolerances,
}

impl ClusterAt<'_> {
    /// The joint that equation `row` (global) belongs to (a motion: the joint it drives).
    pub(super) fn joint_of(&self, row: usize) -> Option<JointKey> {
        self.problem.system.joint_of(row)
    }

    /// The joint of the cluster's `k`-th row.
    pub(super) fn joint_of_row(&self, k: usize) -> Option<JointKey> {
        self.rows.get(k).and_then(|&r| self.joint_of(r))
    }
}

/// Diagnoses every cluster of `report` at `state` (the solve's result or best point).
pub fn diagnose(
    problem: &Problem<'_>,
    state: &[f64],
    params: &[f64],
    report: &SolveReport,
    options: SolveOptions,
) -> Result<Diagnosis, SolveError> {
    let Problem {
        system,
        compiled,
        assembly,
        ..
    } = *problem;
    system.check_lengths(state, params)?;
    let weights = column_weights(system);
    let tolerances = report.tolerances;
    let tolerance = tolerances.per_row(system);
    let joint_order: FxHashMap<JointKey, usize> = assembly
        .joints()
        .enumerate()
        .map(|(k, (key, _))| (key, k))
        .collect();
    let part_index: FxHashMap<PartKey, usize> = system
        .free_parts()
        .iter()
        .enumerate()
        .map(|(k, fp)| (fp.part, k))
        .collect();
    let all_parts: Vec<PartKey> = system.free_parts().iter().map(|fp| fp.part).collect();
    let jointed = motions::jointed_parts(assembly, &all_parts);
    let mut clusters = Vec::with_capacity(report.clusters.len());
    for c in &report.clusters {
        let mut rows = c.equations.clone();
        let order_of = ClusterAt {
            problem,
            state,
            params,
            rows: &[],
            weights: &weights,
            joint_order: &joint_order,
            options,
            tolerances,
            tolerance: &tolerance,
        };
        rows.sort_by_key(|&r| {
            let order = order_of.joint_of(r).and_then(|j| joint_order.get(&j));
            (order.copied().unwrap_or(usize::MAX), r)
        });
        let mut seen: rustc_hash::FxHashSet<JointKey> = rustc_hash::FxHashSet::default();
        let joints: Vec<JointKey> = rows
            .iter()
            .filter_map(|&r| order_of.joint_of(r))
            .filter(|&j| seen.insert(j))
            .collect();
        let (residuals, jac) = system.tangent_jacobian_of_rows(compiled, state, params, &rows)?;
        // Columns: the parts' 6 each, then extra unknowns met in the rows.
        let mut cols: Vec<usize> = c
            .parts
            .iter()
            .filter_map(|p| part_index.get(p))
            .flat_map(|&k| 6 * k..6 * k + 6)
            .collect();
        let n6 = 6 * system.free_parts().len();
        let mut extras: Vec<usize> = jac
            .entries
            .iter()
            .map(|&(_, col, _)| col as usize)
            .filter(|&col| col >= n6)
            .collect();
        extras.sort_unstable();
        extras.dedup();
        cols.extend(extras);
        let col_of: FxHashMap<usize, usize> =
            cols.iter().enumerate().map(|(k, &c)| (c, k)).collect();
        // A failed solve ends at a least-squares compromise that spreads the error over
        // the cluster; in a large cluster, that makes loops far from a conflict disagree
        // a little, so the sparse analysis reads the pose where the error is concentrated
        // on as few equations as possible instead (see `concentrate`). Small clusters
        // keep the solve's pose: their dense analysis traces each combination whole.
        let failed = !c.converged && cols.len() > options.diagnose_columns;
        let concentrated = if failed {
            let at = ClusterAt {
                rows: &rows,
                ..order_of
            };
            Some(conflict::concentrate(&at, &cols)?)
        } else {
            None
        };
        let (state, params): (&[f64], &[f64]) = match &concentrated {
            Some(at) => (&at.0, &at.1),
            None => (state, params),
        };
        let (residuals, jac) = if failed {
            system.tangent_jacobian_of_rows(compiled, state, params, &rows)?
        } else {
            (residuals, jac)
        };
        let cx = ClusterAt {
            problem,
            state,
            params,
            rows: &rows,
            weights: &weights,
            joint_order: &joint_order,
            options,
            tolerances,
            tolerance: &tolerance,
        };
        let pairs = jac.entries.iter().filter_map(|&(r, col, _)| {
            col_of.get(&(col as usize)).map(|&k| (r as usize, k as u32))
        });
        let dm = dulmage_mendelsohn(&Incidence::from_pairs(rows.len(), cols.len(), pairs));
        let structure = Structure {
            excess_equations: dm.over.rows.len().saturating_sub(dm.over.columns.len()),
            unfixed_unknowns: dm.under.columns.len().saturating_sub(dm.under.rows.len()),
        };
        let base = ClusterDiagnosis {
            parts: c.parts.clone(),
            joints,
            status: Status::NotAnalysed,
            dof: None,
            redundant: Vec::new(),
            conflicts: Vec::new(),
            disagreements: Vec::new(),
            free_motions: Vec::new(),
            structure,
            conditioning: None,
        };
        if cols.len() > options.diagnose_columns {
            let sparse = sparse::SparseCluster {
                cx: &cx,
                cols: &cols,
                col_of: &col_of,
            };
            clusters.push(sparse.diagnose(c, &jac, &residuals, base)?);
            continue;
        }
        let weight = |col: usize| weights[col];
        let mut a = DMatrix::<f64>::zeros(rows.len(), cols.len());
        for &(r, col, v) in &jac.entries {
            if let Some(&k) = col_of.get(&(col as usize)) {
                a[(r as usize, k)] += v / weight(col as usize);
            }
        }
        let analysis = rows::analyse_rows(&a, &residuals);
        let dof = cols.len() - analysis.independent.len();
        let conditioning = analysis.weakest.as_ref().map(|w| {
            let estimate = 1.0 / w.share;
            let nearly_dependent = match cx.joint_of_row(w.row) {
                Some(joint) if estimate > CONDITION_WARNING => {
                    rows::combination_joints(&w.coefficients, joint, &joint_order, |i| {
                        cx.joint_of_row(i)
                    })
                }
                _ => Vec::new(),
            };
            Conditioning {
                estimate,
                nearly_dependent,
            }
        });
        // Dependent rows back to joints.
        let dependents = analysis.dependent.iter().map(|d| (d.row, d.gap));
        let coefficients: FxHashMap<usize, &[(usize, f64)]> = analysis
            .dependent
            .iter()
            .map(|d| (d.row, d.coefficients.as_slice()))
            .collect();
        let findings = dependents::classify(&cx, dependents, |k, joint, _| {
            let combination = coefficients.get(&k).copied().unwrap_or(&[]);
            rows::combination_joints(combination, joint, &joint_order, |i| cx.joint_of_row(i))
        });
        let settled = dependents::settle(&cx, findings, dof, c)?;
        let free_motions = motions::free_motions(
            &motions::NullSpace {
                system,
                state,
                cols: &cols,
                row_basis: &analysis.basis,
                weight: &weight,
            },
            &c.parts,
            &part_index,
            &jointed,
        );
        clusters.push(ClusterDiagnosis {
            dof: Some(dof),
            status: settled.status,
            redundant: settled.redundant,
            conflicts: settled.conflicts,
            disagreements: settled.disagreements,
            free_motions,
            conditioning,
            ..base
        });
    }
    Ok(Diagnosis { clusters })
}
