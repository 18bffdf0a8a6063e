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

use nalgebra::{DMatrix, DVector};
use rustc_hash::{FxHashMap, FxHashSet};
use tenon_model::{Assembly, JointKey, PartKey};
use tenon_system::{Owner, Scratch, System};

use crate::newton;
use crate::row_rank::row_rank;
use crate::{
    column_weights, dulmage_mendelsohn, Incidence, Problem, SolveError, SolveOptions, SolveReport,
};

/// A row adding less than this fraction of its own length is dependent.
pub const DEPENDENT_ROW: f64 = 1e-8;
/// A dependent row whose residual disagrees with its combination by more than this
/// (model units or radians) is conflicting.
pub const CONSISTENT: f64 = 1e-8;
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
    /// Independent motions left, per part.
    pub free_motions: Vec<FreeMotion>,
    /// What the structure alone proves.
    pub structure: Structure,
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

fn owner_joint(system: &System, assembly: &Assembly, row: usize) -> Option<JointKey> {
    match system.equations().get(row)?.owner {
        Owner::Joint(j) | Owner::Drive(j, _) => Some(j),
        Owner::Motion(m) => assembly.motions().get(m).map(|m| m.joint),
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
    } = *problem;
    system.check_lengths(state, params)?;
    let weights = column_weights(system);
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
    let jointed = jointed_parts(assembly, &all_parts);
    let mut clusters = Vec::with_capacity(report.clusters.len());
    for c in &report.clusters {
        let mut rows = c.equations.clone();
        rows.sort_by_key(|&r| {
            let order = owner_joint(system, assembly, r).and_then(|j| joint_order.get(&j));
            (order.copied().unwrap_or(usize::MAX), r)
        });
        let mut joints: Vec<JointKey> = Vec::new();
        for &r in &rows {
            if let Some(j) = owner_joint(system, assembly, r) {
                if !joints.contains(&j) {
                    joints.push(j);
                }
            }
        }
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
        let failed = (!c.converged || c.max_residual > options.tolerance)
            && cols.len() > options.diagnose_columns;
        let concentrated = if failed {
            Some(concentrate(
                problem, &rows, &cols, state, params, &weights, options,
            )?)
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
        let mut adjacency: Vec<Vec<u32>> = vec![Vec::new(); rows.len()];
        for &(r, col, _) in &jac.entries {
            if let (Some(&k), Some(row)) =
                (col_of.get(&(col as usize)), adjacency.get_mut(r as usize))
            {
                row.push(k as u32);
            }
        }
        let dm = dulmage_mendelsohn(&Incidence::new(cols.len(), adjacency));
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
            free_motions: Vec::new(),
            structure,
        };
        if cols.len() > options.diagnose_columns {
            let sparse = SparseCluster {
                rows: &rows,
                cols: &cols,
                col_of: &col_of,
                weights: &weights,
                joint_order: &joint_order,
            };
            clusters
                .push(sparse.diagnose(problem, state, params, c, &jac, &residuals, base, options)?);
            continue;
        }
        let weight = |col: usize| weights.get(col).copied().unwrap_or(1.0);
        let mut a = DMatrix::<f64>::zeros(rows.len(), cols.len());
        for &(r, col, v) in &jac.entries {
            if let Some(&k) = col_of.get(&(col as usize)) {
                a[(r as usize, k)] += v / weight(col as usize);
            }
        }
        let analysis = analyse_rows(&a, &residuals);
        let weight = &weight;
        let dof = cols.len() - analysis.independent.len();
        let mut diagnosis = ClusterDiagnosis {
            dof: Some(dof),
            ..base
        };
        // Dependent rows back to joints.
        let mut conflicts: Vec<Conflict> = Vec::new();
        let mut redundant: Vec<JointKey> = Vec::new();
        for dep in &analysis.dependent {
            let Some(joint) = owner_joint(system, assembly, rows[dep.row]) else {
                continue;
            };
            if dep.gap.abs() <= CONSISTENT {
                if !redundant.contains(&joint) {
                    redundant.push(joint);
                }
                continue;
            }
            let set = combination_joints(&dep.coefficients, joint, &joint_order, |k| {
                owner_joint(system, assembly, rows[k])
            });
            add_conflict(&mut conflicts, set, dep.gap, &joint_order);
        }
        redundant.retain(|j| !conflicts.iter().any(|c| c.joints.last() == Some(j)));
        // The size of each conflict: how far its last joint is from holding when the
        // others of the cluster hold exactly (solved from the best point).
        for conflict in &mut conflicts {
            if let Some(&last) = conflict.joints.last() {
                let keep: Vec<usize> = rows
                    .iter()
                    .copied()
                    .filter(|&r| owner_joint(system, assembly, r) != Some(last))
                    .collect();
                let own: Vec<usize> = rows
                    .iter()
                    .copied()
                    .filter(|&r| owner_joint(system, assembly, r) == Some(last))
                    .collect();
                if let Some(v) =
                    violation_without(problem, state, params, &keep, &own, &weights, options)?
                {
                    conflict.violation = v;
                }
            }
        }
        diagnosis.status = status_of(&conflicts, &redundant, dof, c, options);
        diagnosis.redundant = redundant;
        diagnosis.conflicts = conflicts;
        diagnosis.free_motions = free_motions(
            system,
            &jointed,
            state,
            &c.parts,
            &part_index,
            &cols,
            &analysis.basis,
            &weight,
        );
        clusters.push(diagnosis);
    }
    Ok(Diagnosis { clusters })
}

/// A cluster too large for the dense analysis, in the form the sparse one reads.
struct SparseCluster<'a> {
    /// Equation rows in file order of their joints.
    rows: &'a [usize],
    /// Global tangent columns.
    cols: &'a [usize],
    col_of: &'a FxHashMap<usize, usize>,
    weights: &'a [f64],
    joint_order: &'a FxHashMap<JointKey, usize>,
}

impl SparseCluster<'_> {
    /// Rank, redundant and conflicting joints by [`row_rank`]; the structural base when
    /// the factor would grow too large.
    #[allow(clippy::too_many_arguments)]
    fn diagnose(
        &self,
        problem: &Problem<'_>,
        state: &[f64],
        params: &[f64],
        report: &crate::ClusterReport,
        jac: &tenon_system::TangentJacobian,
        residuals: &[f64],
        base: ClusterDiagnosis,
        options: SolveOptions,
    ) -> Result<ClusterDiagnosis, SolveError> {
        let (system, assembly) = (problem.system, problem.assembly);
        let mut sparse_rows: Vec<Vec<(u32, f64)>> = vec![Vec::new(); self.rows.len()];
        for &(r, col, v) in &jac.entries {
            let col = col as usize;
            if let (Some(&k), Some(row)) = (self.col_of.get(&col), sparse_rows.get_mut(r as usize))
            {
                let w = self.weights.get(col).copied().unwrap_or(1.0);
                row.push((k as u32, v / w));
            }
        }
        let Some(found) = row_rank(self.cols.len(), &sparse_rows, residuals, DEPENDENT_ROW) else {
            return Ok(base);
        };
        let dof = self.cols.len() - found.rank;
        let mut redundant: Vec<JointKey> = Vec::new();
        let mut conflicts: Vec<Conflict> = Vec::new();
        for &(row, gap) in &found.dependent {
            let Some(joint) = self
                .rows
                .get(row)
                .and_then(|&r| owner_joint(system, assembly, r))
            else {
                continue;
            };
            if gap.abs() <= CONSISTENT {
                if !redundant.contains(&joint) {
                    redundant.push(joint);
                }
                continue;
            }
            // The joints it conflicts with: the dense analysis of the rows around it
            // (conflicts close loops, and loops are local); itself alone when its
            // combination reaches beyond that window.
            let set = if conflicts.len() < MEASURED_CONFLICTS {
                self.conflict_set(system, assembly, &sparse_rows, residuals, row)
            } else {
                None
            }
            .unwrap_or_else(|| vec![joint]);
            add_conflict(&mut conflicts, set, gap, self.joint_order);
        }
        redundant.retain(|j| !conflicts.iter().any(|c| c.joints.last() == Some(j)));
        redundant.sort_by_key(|j| self.joint_order.get(j).copied().unwrap_or(usize::MAX));
        for conflict in conflicts.iter_mut().take(MEASURED_CONFLICTS) {
            let Some(&last) = conflict.joints.last() else {
                continue;
            };
            let (own, keep): (Vec<usize>, Vec<usize>) = self
                .rows
                .iter()
                .partition(|&&r| owner_joint(system, assembly, r) == Some(last));
            if let Some(v) =
                violation_without(problem, state, params, &keep, &own, self.weights, options)?
            {
                conflict.violation = v;
            }
        }
        let status = status_of(&conflicts, &redundant, dof, report, options);
        Ok(ClusterDiagnosis {
            dof: Some(dof),
            status,
            redundant,
            conflicts,
            ..base
        })
    }
}

impl SparseCluster<'_> {
    /// The joints of the combination that makes row `dependent` (an index into `rows`)
    /// dependent: the dense analysis on a window of the rows before it, grown from its
    /// columns through the rows that share them up to [`WINDOW_COLUMNS`] columns, with
    /// the row last. `None` when it is not dependent within the window.
    fn conflict_set(
        &self,
        system: &System,
        assembly: &Assembly,
        sparse_rows: &[Vec<(u32, f64)>],
        residuals: &[f64],
        dependent: usize,
    ) -> Option<Vec<JointKey>> {
        let own = sparse_rows.get(dependent)?;
        // Rows before it, by column.
        let mut rows_of_col: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
        for (k, row) in sparse_rows.iter().enumerate().take(dependent) {
            for &(c, _) in row {
                rows_of_col.entry(c).or_default().push(k);
            }
        }
        let mut window_cols: Vec<u32> = own.iter().map(|&(c, _)| c).collect();
        window_cols.sort_unstable();
        window_cols.dedup();
        let mut in_window: FxHashSet<u32> = window_cols.iter().copied().collect();
        let mut taken: FxHashSet<usize> = FxHashSet::default();
        let mut frontier: Vec<u32> = window_cols.clone();
        while let Some(c) = frontier.pop() {
            for &k in rows_of_col.get(&c).map_or(&[][..], |v| v.as_slice()) {
                if taken.contains(&k) {
                    continue;
                }
                let new: Vec<u32> = sparse_rows[k]
                    .iter()
                    .map(|&(c, _)| c)
                    .filter(|c| !in_window.contains(c))
                    .collect();
                if in_window.len() + new.len() > WINDOW_COLUMNS {
                    continue;
                }
                taken.insert(k);
                for c in new {
                    if in_window.insert(c) {
                        window_cols.push(c);
                        frontier.push(c);
                    }
                }
            }
        }
        let mut rows: Vec<usize> = taken.into_iter().collect();
        rows.sort_unstable();
        rows.push(dependent);
        window_cols.sort_unstable();
        let col_index: FxHashMap<u32, usize> = window_cols
            .iter()
            .enumerate()
            .map(|(k, &c)| (c, k))
            .collect();
        let mut a = DMatrix::<f64>::zeros(rows.len(), window_cols.len());
        for (i, &k) in rows.iter().enumerate() {
            for &(c, v) in &sparse_rows[k] {
                if let Some(&j) = col_index.get(&c) {
                    a[(i, j)] += v;
                }
            }
        }
        let r: Vec<f64> = rows
            .iter()
            .map(|&k| residuals.get(k).copied().unwrap_or(0.0))
            .collect();
        let analysis = analyse_rows(&a, &r);
        let last = rows.len() - 1;
        let dep = analysis.dependent.iter().find(|d| d.row == last)?;
        let joint = owner_joint(system, assembly, self.rows[dependent])?;
        Some(combination_joints(
            &dep.coefficients,
            joint,
            self.joint_order,
            |k| owner_joint(system, assembly, self.rows[rows[k]]),
        ))
    }
}

/// Rounds of [`concentrate`].
const ROBUST_ROUNDS: usize = 40;

/// A state and its parameters.
type At = (Vec<f64>, Vec<f64>);

/// From a failed solve's end, the pose that concentrates the cluster's error on as few
/// equations as possible: iteratively reweighted least squares toward the least sum of
/// absolute residuals (row weights `1 / sqrt(r^2 + e^2)`, `e` shrinking), each round one
/// least-change Gauss-Newton step on the weighted rows, kept when the sum falls. Where
/// joints conflict, this leaves the joints that can hold holding (a loop that cannot
/// close fails at one joint instead of spreading its gap over the cluster), so the rank
/// analysis sees the dependencies of a consistent pose and the conflict alone disagrees.
fn concentrate(
    problem: &Problem<'_>,
    rows: &[usize],
    cols: &[usize],
    state: &[f64],
    params: &[f64],
    weights: &[f64],
    options: SolveOptions,
) -> Result<At, SolveError> {
    let (system, compiled) = (problem.system, problem.compiled);
    let n = system.tangent_dimension();
    let mut col_of = vec![usize::MAX; n];
    for (k, &c) in cols.iter().enumerate() {
        if let Some(slot) = col_of.get_mut(c) {
            *slot = k;
        }
    }
    let col_weight: Vec<f64> = cols
        .iter()
        .map(|&c| weights.get(c).copied().unwrap_or(1.0))
        .collect();
    let sum = |r: &[f64]| r.iter().map(|x| x.abs()).sum::<f64>();
    let mut at = (state.to_vec(), params.to_vec());
    let mut matrix = crate::linalg::StepMatrix::new(rows.len(), cols.len(), options.dense_columns);
    let mut eps: Option<f64> = None;
    for _ in 0..ROBUST_ROUNDS {
        let (r, mut jac) = system.tangent_jacobian_of_rows(compiled, &at.0, &at.1, rows)?;
        let largest = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        if largest <= options.tolerance || !largest.is_finite() {
            break;
        }
        let e = *eps.get_or_insert(0.1 * largest);
        let w: Vec<f64> = r
            .iter()
            .map(|x| (x * x + e * e).sqrt().recip().sqrt())
            .collect();
        for entry in &mut jac.entries {
            entry.2 *= w.get(entry.0 as usize).copied().unwrap_or(1.0);
        }
        let rw: Vec<f64> = r.iter().zip(&w).map(|(a, b)| a * b).collect();
        matrix.fill(&jac, &col_of, &col_weight);
        let factored = matrix.factor()?;
        let dy = factored.regularized(0.0, 1.0)?.solve(&rw);
        let before = sum(&r);
        let mut alpha = 1.0;
        let mut accepted = false;
        for _ in 0..12 {
            let mut delta = vec![0.0; n];
            for (k, &c) in cols.iter().enumerate() {
                delta[c] = -alpha * dy[k] / col_weight[k];
            }
            let mut next = at.clone();
            system.retract(&mut next.0, &delta)?;
            system.update_turns(compiled, &at.0, &next.0, &mut next.1)?;
            let all = system.residuals(compiled, &next.0, &next.1)?;
            let trial: Vec<f64> = rows
                .iter()
                .map(|&k| all.get(k).copied().unwrap_or(0.0))
                .collect();
            if sum(&trial) < before {
                at = next;
                accepted = true;
                break;
            }
            alpha *= 0.5;
        }
        eps = Some(if accepted { e * 0.3 } else { e * 0.1 });
        if e < 1e-3 * options.tolerance {
            break;
        }
    }
    // The equations left with small residuals are then solved exactly (the rest let go):
    // the rank of a nearly consistent pose is not the rank of a consistent one.
    let (r, _) = system.tangent_jacobian_of_rows(compiled, &at.0, &at.1, rows)?;
    let largest = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let keep: Vec<usize> = rows
        .iter()
        .zip(&r)
        .filter(|(_, x)| x.abs() <= CONCENTRATED * largest)
        .map(|(&k, _)| k)
        .collect();
    if keep.len() < rows.len() {
        if let Some(held) = solve_keeping(problem, &at, &keep, weights, options)? {
            at = held;
        }
    }
    Ok(at)
}

/// After [`concentrate`], residuals below this fraction of the largest count as
/// equations that hold.
const CONCENTRATED: f64 = 1e-3;

/// Solves `keep` (global equation indices, one cluster's) exactly from `at` with the
/// solve's least-change Newton; the state reached, or `None` when they cannot hold.
fn solve_keeping(
    problem: &Problem<'_>,
    at: &At,
    keep: &[usize],
    weights: &[f64],
    options: SolveOptions,
) -> Result<Option<At>, SolveError> {
    let compiled = problem.compiled;
    let Some(k) = keep.first().and_then(|&r| compiled.cluster_of(r)) else {
        return Ok(None);
    };
    let Some(cluster) = compiled.clusters().get(k) else {
        return Ok(None);
    };
    let local_row = |r: &usize| cluster.equations().binary_search(r).ok();
    let keep: Vec<usize> = keep.iter().filter_map(local_row).collect();
    let mut scratch = Scratch::take_thread_local();
    let solved = newton::solve_rows(cluster, &mut scratch, &at.0, &at.1, weights, keep, options);
    Scratch::give_back(scratch);
    let (local, params, held) = solved?;
    if !held {
        return Ok(None);
    }
    let mut state = at.0.clone();
    cluster.scatter(&local, &mut state);
    Ok(Some((state, params)))
}

/// Adds a dependent row's conflict: rows of the same joint (the set's last) make one
/// conflict, whose set is the union of theirs (in file order) and whose disagreement adds
/// up in squares.
fn add_conflict(
    conflicts: &mut Vec<Conflict>,
    set: Vec<JointKey>,
    gap: f64,
    joint_order: &FxHashMap<JointKey, usize>,
) {
    match conflicts
        .iter_mut()
        .find(|c| c.joints.last().is_some() && c.joints.last() == set.last())
    {
        Some(c) => {
            c.violation = c.violation.hypot(gap);
            c.joints.extend(set);
            c.joints
                .sort_by_key(|j| joint_order.get(j).copied().unwrap_or(usize::MAX));
            c.joints.dedup();
        }
        None => conflicts.push(Conflict {
            joints: set,
            violation: gap.abs(),
        }),
    }
}

/// How a cluster stands, from what its analysis found and how its solve ended.
fn status_of(
    conflicts: &[Conflict],
    redundant: &[JointKey],
    dof: usize,
    report: &crate::ClusterReport,
    options: SolveOptions,
) -> Status {
    if !conflicts.is_empty() {
        Status::Conflicting
    } else if !report.converged || report.max_residual > options.tolerance {
        Status::Failed
    } else if !redundant.is_empty() {
        Status::OverConstrained
    } else if dof == 0 {
        Status::WellConstrained
    } else {
        Status::UnderConstrained
    }
}

/// The joints of a dependent row's combination (`(row, coefficient)` on earlier rows;
/// negligible coefficients left out) and its own `joint`, in file order, each once.
fn combination_joints(
    coefficients: &[(usize, f64)],
    joint: JointKey,
    joint_order: &FxHashMap<JointKey, usize>,
    joint_of_row: impl Fn(usize) -> Option<JointKey>,
) -> Vec<JointKey> {
    let largest = coefficients
        .iter()
        .fold(0.0f64, |m, &(_, c)| m.max(c.abs()));
    let mut set: Vec<JointKey> = coefficients
        .iter()
        .filter(|&&(_, c)| c.abs() > 1e-8 * largest)
        .filter_map(|&(k, _)| joint_of_row(k))
        .chain(std::iter::once(joint))
        .collect();
    set.sort_by_key(|j| joint_order.get(j).copied().unwrap_or(usize::MAX));
    set.dedup();
    set
}

/// Solves `keep` exactly from `state` (the solve's least-change Newton, on the cluster
/// holding them) and returns the largest residual of `own` there, or `None` when `keep`
/// cannot be solved either.
fn violation_without(
    problem: &Problem<'_>,
    state: &[f64],
    params: &[f64],
    keep: &[usize],
    own: &[usize],
    weights: &[f64],
    options: SolveOptions,
) -> Result<Option<f64>, SolveError> {
    let at = (state.to_vec(), params.to_vec());
    let Some(held) = solve_keeping(problem, &at, keep, weights, options)? else {
        return Ok(None);
    };
    let r = problem
        .system
        .residuals(problem.compiled, &held.0, &held.1)?;
    Ok(Some(own.iter().fold(0.0f64, |m, &k| {
        m.max(r.get(k).copied().unwrap_or(0.0).abs())
    })))
}

/// A dependent row: its index, its coefficients on independent rows `(row, c)`, and the
/// disagreement of its residual with theirs.
struct Dependent {
    row: usize,
    coefficients: Vec<(usize, f64)>,
    gap: f64,
}

struct RowAnalysis {
    /// Independent rows, in the order taken.
    independent: Vec<usize>,
    dependent: Vec<Dependent>,
    /// Orthonormal basis of the row space (one vector per independent row).
    basis: Vec<DVector<f64>>,
}

/// Orthogonalises the rows of `a` in order (see the module documentation).
fn analyse_rows(a: &DMatrix<f64>, residuals: &[f64]) -> RowAnalysis {
    let mut basis: Vec<DVector<f64>> = Vec::new();
    // Row k of the independent rows = sum_l r[k][l] basis[l] (lower triangular).
    let mut r: Vec<Vec<f64>> = Vec::new();
    let mut independent = Vec::new();
    let mut dependent = Vec::new();
    for i in 0..a.nrows() {
        let row: DVector<f64> = a.row(i).transpose();
        let norm = row.norm();
        let mut v = row.clone();
        let mut beta = vec![0.0; basis.len()];
        for _ in 0..2 {
            for (l, q) in basis.iter().enumerate() {
                let c = q.dot(&v);
                beta[l] += c;
                v -= q * c;
            }
        }
        let rest = v.norm();
        if norm > 0.0 && rest > DEPENDENT_ROW * norm {
            beta.push(rest);
            r.push(beta);
            basis.push(v / rest);
            independent.push(i);
            continue;
        }
        // a_i = beta^T Q = c^T R Q: solve R^T c = beta (R lower triangular).
        let k = independent.len();
        let mut c = vec![0.0; k];
        for m in (0..k).rev() {
            let mut s = beta[m];
            for (n, cn) in c.iter().enumerate().skip(m + 1) {
                s -= r[n][m] * cn;
            }
            c[m] = s / r[m][m];
        }
        let combined: f64 = c
            .iter()
            .zip(&independent)
            .map(|(cm, &row)| cm * residuals.get(row).copied().unwrap_or(0.0))
            .sum();
        dependent.push(Dependent {
            row: i,
            gap: residuals.get(i).copied().unwrap_or(0.0) - combined,
            coefficients: independent.iter().copied().zip(c).collect(),
        });
    }
    RowAnalysis {
        independent,
        dependent,
        basis,
    }
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// A unit vector with its first clearly non-zero component positive; tiny components
/// set to 0.
fn canonical(v: [f64; 3]) -> [f64; 3] {
    let n = dot(v, v).sqrt().max(1e-300);
    let mut u = v.map(|x| x / n);
    if let Some(&first) = u.iter().find(|x| x.abs() > 1e-9) {
        if first < 0.0 {
            u = u.map(|x| -x);
        }
    }
    u.map(|x| if x.abs() < 1e-12 { 0.0 } else { x })
}

fn clean(v: [f64; 3], scale: f64) -> [f64; 3] {
    v.map(|x| {
        if x.abs() < 1e-9 * scale.max(1.0) {
            0.0
        } else {
            x
        }
    })
}

/// An orthonormal basis of the columns of `m` (singular values above 1e-9 of the
/// largest), as coefficient vectors over the columns.
fn column_space(m: &DMatrix<f64>) -> Vec<DVector<f64>> {
    if m.ncols() == 0 {
        return Vec::new();
    }
    let svd = m.clone().svd(false, true);
    let Some(vt) = svd.v_t else {
        return Vec::new();
    };
    let smax = svd.singular_values.iter().fold(0.0f64, |a, &s| a.max(s));
    svd.singular_values
        .iter()
        .enumerate()
        .filter(|&(_, &s)| s > 1e-9 * smax.max(1e-300))
        .map(|(k, &s)| vt.row(k).transpose() / s)
        .collect()
}

/// Free motions per part from the null space of the weighted Jacobian (the complement
/// of `row_basis`).
#[allow(clippy::too_many_arguments)]
fn free_motions(
    system: &System,
    jointed: &FxHashMap<PartKey, Vec<PartKey>>,
    state: &[f64],
    parts: &[PartKey],
    part_index: &FxHashMap<PartKey, usize>,
    cols: &[usize],
    row_basis: &[DVector<f64>],
    weight: &dyn Fn(usize) -> f64,
) -> Vec<FreeMotion> {
    let n = cols.len();
    let null = crate::linalg::complete_null_space(row_basis.to_vec(), n, 1e-6);
    if null.is_empty() {
        return Vec::new();
    }
    // Unweighted tangent motions, one column per null vector.
    let d = null.len();
    let motion = DMatrix::from_fn(n, d, |i, k| null[k][i] / weight(cols[i]));
    let mut out = Vec::new();
    for &part in parts {
        let Some(&index) = part_index.get(&part) else {
            continue;
        };
        let Some(first) = cols.iter().position(|&c| c == 6 * index) else {
            continue;
        };
        let block = motion.rows(first, 6).into_owned();
        let origin = system
            .free_parts()
            .get(index)
            .map(|fp| [0, 1, 2].map(|c| state.get(fp.vars[c].index()).copied().unwrap_or(0.0)))
            .unwrap_or([0.0; 3]);
        // Motions of this part alone: null combinations that leave every other row 0.
        let others = DMatrix::from_fn(n - 6, d, |i, k| {
            let row = if i < first { i } else { i + 6 };
            motion[(row, k)]
        });
        let local: Vec<DVector<f64>> = null_combinations(&others, d);
        let local_motions: Vec<[f64; 6]> = local
            .iter()
            .map(|z| {
                let m = &block * z;
                [m[0], m[1], m[2], m[3], m[4], m[5]]
            })
            .collect();
        let jointed = jointed.get(&part).map_or(0, |v| v.len());
        for m in part_motions(&block) {
            let idle = jointed >= 2
                && m[3..].iter().any(|x| x.abs() > 1e-12)
                && in_span(&m, &local_motions);
            out.push(FreeMotion {
                part,
                motion: classify(m, origin),
                idle,
            });
        }
    }
    out
}

/// Coefficient vectors `z` (orthonormal) with `m z = 0`.
fn null_combinations(m: &DMatrix<f64>, d: usize) -> Vec<DVector<f64>> {
    if m.nrows() == 0 {
        return (0..d)
            .map(|k| DVector::from_fn(d, |i, _| if i == k { 1.0 } else { 0.0 }))
            .collect();
    }
    let gram = m.tr_mul(m);
    let eig = gram.symmetric_eigen();
    let largest = eig.eigenvalues.iter().fold(0.0f64, |a, &x| a.max(x.abs()));
    eig.eigenvalues
        .iter()
        .enumerate()
        .filter(|&(_, &x)| x.abs() <= 1e-18 * largest.max(1.0))
        .map(|(k, _)| eig.eigenvectors.column(k).into_owned())
        .collect()
}

fn in_span(m: &[f64; 6], span: &[[f64; 6]]) -> bool {
    if span.is_empty() {
        return false;
    }
    let a = DMatrix::from_fn(6, span.len(), |i, k| span[k][i]);
    let v = DVector::from_column_slice(m);
    let svd = a.clone().svd(true, true);
    let Ok(coef) = svd.solve(&v, 1e-12) else {
        return false;
    };
    (&a * coef - &v).norm() <= 1e-8 * v.norm().max(1e-300)
}

/// For each of `parts`, the distinct other parts (grounded ones included) it is jointed
/// to.
fn jointed_parts(assembly: &Assembly, parts: &[PartKey]) -> FxHashMap<PartKey, Vec<PartKey>> {
    let mut out: FxHashMap<PartKey, Vec<PartKey>> =
        parts.iter().map(|&p| (p, Vec::new())).collect();
    for (_, j) in assembly.joints() {
        if j.suppressed || j.i.part == j.j.part {
            continue;
        }
        for (a, b) in [(j.i.part, j.j.part), (j.j.part, j.i.part)] {
            if let Some(list) = out.get_mut(&a) {
                if !list.contains(&b) {
                    list.push(b);
                }
            }
        }
    }
    out
}

/// Independent motions of one part (its 6 rows of the null-space motions): pure
/// translations first, then rotations with any sliding that a translation already covers
/// taken out.
fn part_motions(block: &DMatrix<f64>) -> Vec<[f64; 6]> {
    let span = column_space(block);
    if span.is_empty() {
        return Vec::new();
    }
    let basis: Vec<[f64; 6]> = span
        .iter()
        .map(|z| {
            let m = block * z;
            [m[0], m[1], m[2], m[3], m[4], m[5]]
        })
        .collect();
    let k = basis.len();
    // Translations: combinations with no rotation.
    let rot = DMatrix::from_fn(3, k, |i, c| basis[c][3 + i]);
    let translations: Vec<[f64; 6]> = null_combinations(&rot, k)
        .iter()
        .map(|z| {
            let mut m = [0.0; 6];
            for (c, b) in basis.iter().enumerate() {
                for i in 0..6 {
                    m[i] += z[c] * b[i];
                }
            }
            m
        })
        .collect();
    let mut out = translations.clone();
    // Rotations: an orthonormal complement, in the rotation part.
    let mut rotations: Vec<[f64; 3]> = Vec::new();
    let mut rotation_motions = Vec::new();
    for b in &basis {
        let mut w = [b[3], b[4], b[5]];
        let mut m = *b;
        for (q, qm) in rotations.iter().zip(&rotation_motions) {
            let c = dot(w, *q);
            w = [w[0] - c * q[0], w[1] - c * q[1], w[2] - c * q[2]];
            let qm: &[f64; 6] = qm;
            for i in 0..6 {
                m[i] -= c * qm[i];
            }
        }
        let n = dot(w, w).sqrt();
        if n > 1e-9 && rotations.len() < 3 {
            rotations.push(w.map(|x| x / n));
            rotation_motions.push(m.map(|x| x / n));
        }
    }
    // Take out sliding that the translations cover.
    for mut m in rotation_motions {
        for t in &translations {
            let dir = [t[0], t[1], t[2]];
            let tn = dot(dir, dir);
            if tn > 0.0 {
                let c = dot([m[0], m[1], m[2]], dir) / tn;
                for i in 0..3 {
                    m[i] -= c * t[i];
                }
            }
        }
        out.push(m);
    }
    out
}

/// The motion `(dp, dtheta)` of a part whose origin is at `origin`, in words.
fn classify(m: [f64; 6], origin: [f64; 3]) -> Motion {
    let omega = [m[3], m[4], m[5]];
    let w2 = dot(omega, omega);
    let dp = [m[0], m[1], m[2]];
    if w2 <= 1e-24 * dot(dp, dp).max(1e-300) {
        return Motion::Translation {
            direction: canonical(dp),
        };
    }
    // Velocity of the point at the world origin: dp - omega x origin.
    let wxo = cross(omega, origin);
    let v0 = [dp[0] - wxo[0], dp[1] - wxo[1], dp[2] - wxo[2]];
    let axis = canonical(omega);
    let point_raw = cross(omega, v0).map(|x| x / w2);
    let scale = dot(origin, origin).sqrt();
    let point = clean(point_raw, scale);
    let h = dot(omega, v0) / w2;
    let pitch = 2.0 * std::f64::consts::PI * h;
    if pitch.abs() <= 1e-9 * scale.max(1.0) {
        Motion::Rotation { axis, point }
    } else {
        Motion::Screw { axis, point, pitch }
    }
}
