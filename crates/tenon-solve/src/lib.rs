//! Tenon's solver: the assembly is split into clusters of parts that share equations,
//! and each cluster is solved by least-change Gauss-Newton in its tangent space.
//!
//! - Clusters come compiled from tenon-system (one local tape each); grounded parts are
//!   constants, so they cut the assembly apart. Clusters are solved independently, on
//!   several threads (rayon); the result does not depend on the thread count.
//! - The step is the minimum-norm solution of `J dx = -r` with parts weighted by their
//!   size (a rotation of `dtheta` moves a part's markers by about `size * dtheta`, so
//!   metres and radians compare): `dx = -W^-1 pinv(J W^-1) r`, so rank-deficient
//!   Jacobians (redundant joints, normal in CAD) are handled and unconstrained directions
//!   do not move (module `newton`; the linear algebra, dense or sparse by size, in
//!   module `linalg`).
//! - After a full step on a large piece, translation-only steps remove what the step's
//!   turns left in the point equations (linear in the positions once the turns are
//!   held): a straight open chain of any length takes one Newton iteration (module
//!   `newton::shift`).
//! - Inside a cluster, each piece is solved in the stages of its Dulmage-Mendelsohn
//!   block-triangular order (module `blocks`; stage tapes compiled by [`prepare`]):
//!   over-determined part, square blocks in dependency order, under-determined part.
//! - Counted turns are updated after every accepted step.

#![warn(missing_docs)]

mod blocks;
mod diagnose;
mod kinematics;
mod linalg;
mod newton;
mod row_rank;
mod structure;
mod tolerance;

pub use structure::{
    dulmage_mendelsohn, maximum_matching, Decomposition, Incidence, Matching, Subset,
};

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use tenon_model::{Assembly, PartKey};
pub use tenon_system::LimitSide;
use tenon_system::{Compiled, Scratch, System, SystemError};

/// Options of a solve.
#[derive(Debug, Clone, Copy)]
pub struct SolveOptions {
    /// Largest residual accepted (model units for lengths, radians for angles) on a
    /// model near the origin; length residuals are held to a fraction of the model's
    /// reach where that is larger (see [`Tolerances`]).
    pub tolerance: f64,
    /// Repeated joints that disagree by less than this (model units) are placed by
    /// least squares and reported over-constrained with their disagreement, not
    /// conflicting; `None`: the length tolerance (see [`Tolerances`]).
    pub geometric_tolerance: Option<f64>,
    /// Newton iterations per cluster before giving up.
    pub max_iterations: usize,
    /// Whether motions take part (at the time in the parameters). Assembling (`tenon
    /// solve`) leaves them out, so driven coordinates stay free; kinematic runs use them.
    pub include_motions: bool,
    /// Pieces with more tangent columns than this are solved with the sparse
    /// normal-equation step instead of the dense SVD (which also reveals the rank).
    pub dense_columns: usize,
    /// Whether a piece is solved in the stages of its block-triangular order or whole.
    pub order: SolveOrder,
    /// Square blocks are merged until a stage has at least this many tangent columns.
    pub stage_columns: usize,
    /// Clusters with more tangent columns than this are diagnosed sparse (rank and
    /// dependent rows, no free motions) instead of dense.
    pub diagnose_columns: usize,
    /// Whether each cluster's report gives its rank and degrees of freedom (a singular
    /// value decomposition at the end of a solve where the piece is small). A kinematic
    /// run's frames, which watch the rank themselves, leave it out.
    pub report_rank: bool,
    /// Pieces with more tangent columns than this get no rank from a solve (their DOF
    /// uncounted; the diagnosis counts them). Up to [`RANK_COLUMNS`] the rank comes from
    /// a dense QR; above, from the sparse row elimination the diagnosis uses, which
    /// adds about a third to a 1,000-link chain's solve: `usize::MAX` counts every
    /// piece (`tenon solve` does).
    pub rank_columns: usize,
}

/// How a cluster's piece is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SolveOrder {
    /// In stages of its Dulmage-Mendelsohn block-triangular order (over-determined
    /// part, square blocks in dependency order, under-determined part), each stage over
    /// its own unknowns with the earlier ones held and with its own tape, so a stage
    /// costs its equations only; the piece is solved whole again from its start when a
    /// later stage cannot hold (an earlier stage's choice may be why). The stage tapes
    /// are compiled by [`prepare`]; without them a piece is solved whole.
    #[default]
    BlockTriangular,
    /// All its equations over all its unknowns at once.
    Whole,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            tolerance: TOLERANCE,
            geometric_tolerance: None,
            max_iterations: 100,
            include_motions: false,
            dense_columns: DENSE_COLUMNS,
            order: SolveOrder::default(),
            stage_columns: MIN_STAGE_COLUMNS,
            diagnose_columns: DIAGNOSE_COLUMNS,
            report_rank: true,
            rank_columns: RANK_COLUMNS,
        }
    }
}

pub use blocks::MIN_STAGE_COLUMNS;
pub use diagnose::{
    diagnose, ClusterDiagnosis, Conditioning, Conflict, Diagnosis, FreeMotion, Motion, Status,
    Structure, CONDITION_WARNING, CONSISTENT, DEPENDENT_ROW, DIAGNOSE_COLUMNS, MEASURED_CONFLICTS,
    WINDOW_COLUMNS,
};
pub use kinematics::{
    run_rows, undriven_freedoms, EventKind, KinematicEvent, KinematicFrame, KinematicRun,
};
pub use linalg::{DenseLu, SparseLdlt, DENSE_COLUMNS, RANK_COLUMNS};
pub use row_rank::dependent_rows;

pub use tolerance::{Tolerances, RANK_TOLERANCE, RELATIVE_TOLERANCE, TOLERANCE};

/// What became of one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterReport {
    /// Its free parts, in file order.
    pub parts: Vec<PartKey>,
    /// Indices of its equations in [`System::equations`].
    pub equations: Vec<usize>,
    /// Newton iterations taken.
    pub iterations: usize,
    /// Largest residual at the end.
    pub max_residual: f64,
    /// Whether every equation holds within the tolerance (or, `placed`, repeated joints
    /// disagree within the geometric tolerance).
    pub converged: bool,
    /// Placed by least squares: repeated joints disagree by less than the geometric
    /// tolerance (checked by the diagnosis's measure of each disagreement), so not every
    /// equation holds to the length tolerance.
    pub placed: bool,
    /// Numerical rank of its Jacobian at the end (`None` for large clusters, solved
    /// sparse, whose rank the solve does not reveal).
    pub rank: Option<usize>,
    /// Degrees of freedom left: unknowns (tangent) minus rank, when the rank is known
    /// (joint limits do not count: they are inequalities).
    pub dof: Option<usize>,
    /// Its joint limits that bind at the end (held at their bounds) or are broken.
    pub limits: Vec<LimitReport>,
    /// Stages it was solved in (1: whole; more: its block-triangular order, see
    /// [`SolveOrder`]).
    pub stages: usize,
}

/// A joint limit that binds (the solve holds the coordinate at the bound, `excess` 0) or
/// is broken (`excess` > tolerance: the joints cannot hold with the coordinate within
/// its limits; the cluster is then not converged).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitReport {
    /// The joint.
    pub joint: tenon_model::JointKey,
    /// Which coordinate (angle or distance).
    pub coordinate: tenon_model::Coordinate,
    /// Which bound.
    pub side: LimitSide,
    /// How far beyond the bound the coordinate ends (radians or model units; 0 when it
    /// binds).
    pub excess: f64,
}

/// The result of a solve; `state` and parameters passed in hold the solution.
#[derive(Debug, Clone, PartialEq)]
pub struct SolveReport {
    /// Whether every cluster converged (and equations between grounded parts hold).
    pub converged: bool,
    /// Largest residual of all equations at the end.
    pub max_residual: f64,
    /// The clusters.
    pub clusters: Vec<ClusterReport>,
    /// Equations that still do not hold: `(index, residual)`, largest first.
    pub unsatisfied: Vec<(usize, f64)>,
    /// Joints that changed branch (an aligned axis or locked twist ended on the other
    /// side of perpendicular from where the solve started): never silent.
    pub flipped: Vec<tenon_model::JointKey>,
    /// The tolerances the equations were judged by (lengths scaled by the model's
    /// reach at the start).
    pub tolerances: Tolerances,
}

/// Errors: only a failure to evaluate (the input was usable, so this is a bug).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SolveError {
    /// Building or evaluating the equations failed.
    #[error(transparent)]
    System(#[from] SystemError),
    /// A free-part index out of range (`drag`).
    #[error("no free part {index} (the system has {parts})")]
    UnknownPart {
        /// The index given.
        index: usize,
        /// How many free parts there are.
        parts: usize,
    },
    /// A linear system could not be factored even with regularisation.
    #[error("factorization failed: {0}")]
    Factorization(String),
}

/// Whether equation `row` takes part in a solve (motions only when included).
fn takes_part(system: &System, row: usize, include_motions: bool) -> bool {
    include_motions
        || !matches!(
            system.equations().get(row).map(|e| e.owner),
            Some(tenon_system::Owner::Motion(_))
        )
}

/// Rotation weights are at least this fraction of the largest free part's size. A part
/// far smaller than the assembly (a 0.1 mm pin beside 10 m frames) would otherwise turn
/// by large angles in each least-change step, cheaply in its own size, while the turn's
/// second-order error is as large as the residual the step removes: a 10,000-part chain
/// of 10 m frames, 0.1 mm pins and 100 mm links took 65 Newton iterations (11 at 1,000
/// parts), and takes 7 (3) with the floor. Parts of at least this fraction weigh as
/// before; the ratio of the weights is bounded by its inverse.
const ROTATION_WEIGHT_FLOOR: f64 = 1e-3;

/// Fewest tangent columns, over all clusters, for which the clusters are solved on
/// several threads. Handing work to rayon's threads costs tens of microseconds (they
/// are woken, and spin while they wait): more than solving a CAD file's few small
/// clusters takes (`anglejoint.asmt`'s two, 8 parts: 55 to 64 us on threads, most of
/// it in the kernel, 5.6 us on one). 33 four-bars (594 columns) re-solve in 325 us on
/// two threads and 469 us on one. 120 columns are twenty parts.
const PARALLEL_COLUMNS: usize = 120;

/// Weight of each tangent column: a free part's size for its rotation columns (so
/// metres and radians compare; at least [`ROTATION_WEIGHT_FLOOR`] of the largest), 1 for
/// translations and extra unknowns.
fn column_weights(system: &System) -> Vec<f64> {
    let sizes = system.part_sizes();
    let floor = ROTATION_WEIGHT_FLOOR * sizes.iter().fold(0.0f64, |m, &s| m.max(s));
    let layout = system.layout();
    (0..layout.dimension())
        .map(|col| match layout.column(col) {
            Some(tenon_system::TangentColumn::Rotation { part, .. }) => sizes[part].max(floor),
            _ => 1.0,
        })
        .collect()
}

/// What a solve works on: the equations, their compiled form, and the assembly they came
/// from (for part sizes).
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a> {
    /// The equations.
    pub system: &'a System,
    /// Compiled once by [`System::compile`].
    pub compiled: &'a Compiled,
    /// The assembly the system was built from.
    pub assembly: &'a Assembly,
    /// Stage tapes cut by [`prepare`], if any (without them pieces are solved whole).
    pub stages: Option<&'a Stages>,
}

/// How stages were cut: which equations took part and how small a stage may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct StageKey {
    /// Whether motions took part.
    with_motions: bool,
    /// The smallest stage (tangent columns) square blocks were merged into.
    min_columns: usize,
}

/// Per cluster (in [`Compiled::clusters`] order): its pieces, and per piece (in the
/// solver's order) its stage tapes in solve order; an empty list solves the piece whole.
type StagePlan = Vec<newton::ClusterPlan>;

/// The stage tapes [`prepare`] cut for a compiled system, per way of cutting them (with
/// or without motions, stage size). Owned by whoever owns the compiled system (the
/// facade's mechanism) and passed to the solve through [`Problem::stages`].
#[derive(Debug, Clone, Default)]
pub struct Stages {
    plans: Vec<(StageKey, StagePlan)>,
}

impl Stages {
    /// None cut yet.
    pub fn new() -> Stages {
        Stages::default()
    }

    fn get(&self, key: StageKey) -> Option<&StagePlan> {
        self.plans.iter().find(|(k, _)| *k == key).map(|(_, p)| p)
    }

    /// Gives every stage that [`prepare`] left on rows of its cluster's tape (the stages
    /// of clusters of up to 48 tangent columns, `STAGE_TAPE_COLUMNS`) a tape of its own,
    /// in the plan for `options`. A first solve does better without them (compiling
    /// them costs more than it saves); a caller that solves the same system again and
    /// again (a host re-solving after each edit of a value, a drag) calls this after the
    /// first.
    pub fn compile_own_tapes(
        &mut self,
        system: &mut System,
        compiled: &Compiled,
        options: SolveOptions,
    ) -> Result<(), SolveError> {
        let key = stage_key(options);
        let Some((_, plan)) = self.plans.iter_mut().find(|(k, _)| *k == key) else {
            return Ok(());
        };
        for (cluster, cut) in compiled.clusters().iter().zip(plan.iter_mut()) {
            for piece in cut.stages.iter_mut() {
                if piece.iter().all(|s| s.tape().is_some()) {
                    continue;
                }
                let cut = piece
                    .iter()
                    .map(|s| (s.rows().to_vec(), s.cols().to_vec()))
                    .collect();
                *piece = newton::compile_stages(system, cluster, cut)?;
            }
        }
        Ok(())
    }
}

fn stage_key(options: SolveOptions) -> StageKey {
    StageKey {
        with_motions: options.include_motions,
        min_columns: options.stage_columns,
    }
}

/// Compiles the stage tapes a [`SolveOrder::BlockTriangular`] solve with `options` uses
/// (once per way of cutting them: with or without motions, stage size), and keeps them
/// in `compiled`. Pieces whose order has a single stage, or that carry joint limits, get
/// none and are solved whole. Costs about one more compilation of the clusters that
/// split into stages, nothing for those that do not.
pub fn prepare(
    system: &mut System,
    compiled: &Compiled,
    stages: &mut Stages,
    options: SolveOptions,
) -> Result<(), SolveError> {
    let key = stage_key(options);
    if options.order == SolveOrder::Whole || stages.get(key).is_some() {
        return Ok(());
    }
    let mut plan = Vec::with_capacity(compiled.clusters().len());
    for cluster in compiled.clusters() {
        plan.push(newton::cut_stages(system, cluster, options)?);
    }
    stages.plans.push((key, plan));
    Ok(())
}

/// Solves every cluster from `state` (updated in place, as are the turn counters in
/// `params`). Pieces are solved in block-triangular stages when [`prepare`] compiled
/// them for these options, else whole.
pub fn solve(
    problem: &Problem<'_>,
    state: &mut [f64],
    params: &mut [f64],
    options: SolveOptions,
) -> Result<SolveReport, SolveError> {
    let Problem {
        system, compiled, ..
    } = *problem;
    system.check_lengths(state, params)?;
    let start = state.to_vec();
    let tolerances = Tolerances::at(system, state, &options);
    let rows = tolerances.per_row(system);
    let tolerance = &rows.equations;
    let weights = column_weights(system);
    let clusters = compiled.clusters();
    let plan = match options.order {
        SolveOrder::BlockTriangular => problem.stages.and_then(|s| s.get(stage_key(options))),
        SolveOrder::Whole => None,
    };
    let results: Vec<Result<newton::ClusterResult, SolveError>> = {
        let (state, params): (&[f64], &[f64]) = (state, params);
        let one = |scratch: &mut Scratch, (k, cluster): (usize, &tenon_system::ClusterTape)| {
            let cut = plan.and_then(|p| p.get(k));
            let job = newton::ClusterJob {
                system,
                cluster,
                stages: cut.map(|c| c.stages.as_slice()),
                pieces: cut.map(|c| c.pieces.as_slice()),
                tolerance: &rows,
            };
            newton::solve_cluster(&job, scratch, state, params, &weights, options)
        };
        // One scratch per thread, kept between solves (it is large and zeroed when
        // made).
        let with_scratch = |item| {
            let mut scratch = Scratch::take_thread_local();
            let result = one(&mut scratch, item);
            Scratch::give_back(scratch);
            result
        };
        let columns: usize = clusters.iter().map(|c| c.tangent_dimension()).sum();
        if clusters.len() > 1 && columns >= PARALLEL_COLUMNS {
            clusters.par_iter().enumerate().map(with_scratch).collect()
        } else {
            clusters.iter().enumerate().map(with_scratch).collect()
        }
    };
    let mut reports: Vec<ClusterReport> = Vec::new();
    // Final residuals, from each cluster's last evaluation and the fixed set's.
    let mut r = vec![0.0; system.equations().len()];
    for (cluster, result) in clusters.iter().zip(results) {
        let result = result?;
        cluster.scatter(&result.local, state);
        for (index, value) in result.turns {
            if let Some(p) = params.get_mut(index) {
                *p = value;
            }
        }
        for &(k, v) in &result.residuals {
            if let Some(x) = r.get_mut(k) {
                *x = v;
            }
        }
        reports.extend(result.reports);
    }
    let constant_rows: Vec<usize> = compiled
        .fixed()
        .equations()
        .iter()
        .copied()
        .filter(|&r| takes_part(system, r, options.include_motions))
        .collect();
    if !constant_rows.is_empty() {
        let fixed = compiled.fixed();
        let mut out = fixed.output();
        let mut scratch = Scratch::take_thread_local();
        fixed.evaluate_residuals(&mut scratch, &[], params, &mut out)?;
        Scratch::give_back(scratch);
        for (&k, &v) in fixed.equations().iter().zip(out.residuals()) {
            if let Some(x) = r.get_mut(k) {
                *x = v;
            }
        }
    }
    // The equations this solve was asked to satisfy (motions only when included).
    let considered: Vec<usize> = reports
        .iter()
        .flat_map(|c| c.equations.iter().copied())
        .chain(constant_rows.iter().copied())
        .collect();
    let max_residual = considered.iter().fold(0.0f64, |m, &k| m.max(r[k].abs()));
    // Clusters placed by least squares: each disagreement measured (the others held
    // exactly); one beyond the geometric tolerance makes the cluster not converged.
    confirm_placed(
        problem,
        (state, params),
        &mut reports,
        (tolerances, options),
    )?;
    let placed: rustc_hash::FxHashSet<usize> = reports
        .iter()
        .filter(|c| c.placed)
        .flat_map(|c| c.equations.iter().copied())
        .collect();
    let mut unsatisfied: Vec<(usize, f64)> = considered
        .iter()
        .filter(|&&k| r[k].abs() > tolerance[k] && !placed.contains(&k))
        .map(|&k| (k, r[k]))
        .collect();
    unsatisfied.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()).then(a.0.cmp(&b.0)));
    let constants_hold = constant_rows.iter().all(|&k| r[k].abs() <= tolerance[k]);
    let flipped = system.flipped(compiled, &start, state, params)?;
    Ok(SolveReport {
        converged: reports.iter().all(|c| c.converged) && constants_hold,
        flipped,
        max_residual,
        clusters: reports,
        unsatisfied,
        tolerances,
    })
}

/// Measures the disagreements of the clusters a solve placed by least squares (see
/// [`ClusterReport::placed`]) with the diagnosis; a cluster where one exceeds the
/// geometric tolerance is not converged (a conflict, not a disagreement).
fn confirm_placed(
    problem: &Problem<'_>,
    (state, params): (&[f64], &[f64]),
    reports: &mut [ClusterReport],
    (tolerances, options): (Tolerances, SolveOptions),
) -> Result<(), SolveError> {
    let placed: Vec<usize> = (0..reports.len()).filter(|&k| reports[k].placed).collect();
    if placed.is_empty() {
        return Ok(());
    }
    let sub = SolveReport {
        converged: true,
        max_residual: 0.0,
        clusters: placed.iter().map(|&k| reports[k].clone()).collect(),
        unsatisfied: Vec::new(),
        flipped: Vec::new(),
        tolerances,
    };
    let diagnosis = diagnose(problem, state, params, &sub, options)?;
    for (&k, d) in placed.iter().zip(&diagnosis.clusters) {
        // No disagreement found: the solve stalled short of a pose that exists.
        if !d.conflicts.is_empty() || d.disagreements.is_empty() {
            reports[k].converged = false;
            reports[k].placed = false;
        }
    }
    Ok(())
}

/// The cluster's block of the tangent Jacobian with columns divided by their weights.
fn block(
    jac: &tenon_system::TangentJacobian,
    rows: &[usize],
    cols: &[usize],
    weight: &dyn Fn(usize) -> f64,
) -> DMatrix<f64> {
    let row_of: FxHashMap<usize, usize> = rows.iter().enumerate().map(|(k, &r)| (r, k)).collect();
    let col_of: FxHashMap<usize, usize> = cols.iter().enumerate().map(|(k, &c)| (c, k)).collect();
    let mut m = DMatrix::zeros(rows.len(), cols.len());
    for &(r, c, v) in &jac.entries {
        if let (Some(&i), Some(&j)) = (row_of.get(&(r as usize)), col_of.get(&(c as usize))) {
            m[(i, j)] += v / weight(c as usize);
        }
    }
    m
}

/// One drag step: moves free part `part` (index into [`System::free_parts`]) toward
/// `target` as far as the joints allow, the rest of the mechanism following on its
/// current branch, with every joint restored by a least-change solve.
///
/// Each round takes the motion in the null space of the (weighted) Jacobian that brings
/// the dragged part closest to its target: with `N` a null-space basis and `N_p` its rows
/// for the part, `c = pinv(N_p) w_p` and the step is `N c`; then a solve restores the
/// joints. Rounds repeat until the part stops approaching the target. Drag far with many
/// nearby targets.
pub fn drag(
    problem: &Problem<'_>,
    state: &mut [f64],
    params: &mut [f64],
    part: usize,
    target: &tenon_model::Pose,
    options: SolveOptions,
) -> Result<SolveReport, SolveError> {
    let Problem {
        system, compiled, ..
    } = *problem;
    system.check_lengths(state, params)?;
    let Some(fp) = system.free_parts().get(part).copied() else {
        return Err(SolveError::UnknownPart {
            index: part,
            parts: system.free_parts().len(),
        });
    };
    let n = system.tangent_dimension();
    let weights = column_weights(system);
    let weight = |col: usize| weights[col];
    let mut report = solve(problem, state, params, options)?;
    let mut previous_miss = f64::INFINITY;
    for _ in 0..20 {
        // The wished motion of the part, weighted: translation and rotation vector.
        let p: Vec<f64> = fp.vars[..3].iter().map(|v| state[v.index()]).collect();
        let q: Vec<f64> = fp.vars[3..].iter().map(|v| state[v.index()]).collect();
        let mut d =
            tenon_model::quaternion_multiply(target.quaternion, [q[0], -q[1], -q[2], -q[3]]);
        if d[0] < 0.0 {
            d = d.map(|c| -c);
        }
        let s = (d[1] * d[1] + d[2] * d[2] + d[3] * d[3]).sqrt();
        let scale = if s > 1e-15 {
            2.0 * s.atan2(d[0]) / s
        } else {
            2.0
        };
        let wish: Vec<f64> = (0..6)
            .map(|c| {
                let w = if c < 3 {
                    target.position[c] - p[c]
                } else {
                    d[c - 2] * scale
                };
                w * weight(6 * part + c)
            })
            .collect();
        let miss = wish.iter().map(|w| w * w).sum::<f64>().sqrt();
        if miss <= report.tolerances.length || miss >= previous_miss * (1.0 - 1e-6) {
            break;
        }
        previous_miss = miss;
        // Null space of the weighted Jacobian of the equations this solve satisfies.
        let (_, jac) = system.tangent_jacobian(compiled, state, params)?;
        let rows: Vec<usize> = (0..jac.rows)
            .filter(|&r| takes_part(system, r, options.include_motions))
            .collect();
        let cols: Vec<usize> = (0..n).collect();
        let j = block(&jac, &rows, &cols, &weight);
        if !linalg::all_finite(j.iter()) {
            break;
        }
        let basis: Vec<DVector<f64>> = if j.nrows() == 0 {
            (0..n)
                .map(|k| DVector::from_fn(n, |i, _| if i == k { 1.0 } else { 0.0 }))
                .collect()
        } else {
            let Some(svd) = linalg::thin_svd(&j) else {
                break;
            };
            let smax = svd.singular_values.iter().fold(0.0f64, |m, &s| m.max(s));
            let vt = svd.v_t;
            let rank = svd
                .singular_values
                .iter()
                .filter(|&&s| s > RANK_TOLERANCE * smax.max(1e-300))
                .count();
            // Rows of v_t past the rank (and the non-pivoted rest) span the null space.
            let mut b: Vec<DVector<f64>> = Vec::new();
            let sv: Vec<f64> = svd.singular_values.to_vec();
            for k in 0..vt.nrows() {
                if sv
                    .get(k)
                    .is_none_or(|&s| s <= RANK_TOLERANCE * smax.max(1e-300))
                {
                    b.push(vt.row(k).transpose());
                }
            }
            // A wide Jacobian's thin SVD has only min(rows, cols) rows of v_t: complete the
            // basis with the orthogonal complement when needed.
            if b.len() + rank < n {
                b = linalg::complete_null_space(
                    (0..rank).map(|k| vt.row(k).transpose()).collect(),
                    n,
                    1e-8,
                );
            }
            b
        };
        if basis.is_empty() {
            break;
        }
        let k = basis.len();
        let np = DMatrix::from_fn(6, k, |r, c| basis[c][6 * part + r]);
        if !linalg::all_finite(np.iter().chain(&wish)) {
            break;
        }
        let c = linalg::thin_svd(&np).map_or_else(
            || DVector::zeros(k),
            |svd| svd.solve(&DVector::from_vec(wish.clone()), 1e-12),
        );
        let mut step = DVector::zeros(n);
        for (i, b) in basis.iter().enumerate() {
            step += b * c[i];
        }
        let delta: Vec<f64> = (0..n).map(|col| step[col] / weight(col)).collect();
        let old = state.to_vec();
        system.retract(state, &delta)?;
        system.update_turns(compiled, &old, state, params)?;
        report = solve(problem, state, params, options)?;
        if !report.converged {
            break;
        }
    }
    Ok(report)
}

/// The Dulmage-Mendelsohn decomposition of a system's equations (motions left out unless
/// `include_motions`) against its tangent columns, from the Jacobian's sparsity at
/// `state`.
pub fn structure(
    problem: &Problem<'_>,
    state: &[f64],
    params: &[f64],
    include_motions: bool,
) -> Result<Decomposition, SolveError> {
    let system = problem.system;
    system.check_lengths(state, params)?;
    let (_, jac) = system.tangent_jacobian(problem.compiled, state, params)?;
    let rows: Vec<usize> = (0..jac.rows)
        .filter(|&r| takes_part(system, r, include_motions))
        .collect();
    let mut index = vec![usize::MAX; jac.rows];
    for (k, &r) in rows.iter().enumerate() {
        index[r] = k;
    }
    let pairs = jac.entries.iter().filter_map(|&(r, c, _)| {
        index
            .get(r as usize)
            .filter(|&&k| k != usize::MAX)
            .map(|&k| (k, c))
    });
    Ok(dulmage_mendelsohn(&Incidence::from_pairs(
        rows.len(),
        jac.columns,
        pairs,
    )))
}
