//! Kinematic runs: the motions driven over time, frame by frame, with velocities and
//! accelerations.
//!
//! Each frame at time `t`: the pose is predicted from the last frame (`exp(v h + a h^2 /
//! 2 + j h^3 / 6)` on the manifold, the jerk `j` from the last two accelerations), then
//! corrected (`correct`: chord steps with the last frame's Jacobian; where they stall,
//! Newton steps with a fresh one on a small system, else the same least-change solve as
//! `tenon solve` with the motions taking part), then the velocities solve `J v = -C_t`
//! and the accelerations `J a = -gamma` (`rates`: right-hand sides from
//! [`tenon_system::RateTape`], one factorization of the tangent Jacobian, refined to
//! rounding; sparse LU where a large square system needs it; the pseudo-inverse and the
//! multipliers' rates where freedoms are driven by no motion). The rates are least-norm
//! in the solve's weighted sense, so a coordinate no motion drives moves only as the
//! driven ones require.
//!
//! | module | what |
//! |---|---|
//! | `mod` | the run, its frames and events |
//! | `correct` | chord and Newton corrections of a predicted frame |
//! | `rates` | velocities and accelerations at a solved frame |
//! | `reduced` | a small, fully driven run's rates and chord steps by the LU of its independent rows |

use tenon_model::JointKey;
use tenon_system::{RateTape, RateWork, RowEvaluator, Scratch, System, TurnCache};

mod correct;
mod predict;
mod rates;
mod reduced;

use correct::move_by;

use crate::linalg::{BlockFactors, BlockPlan, Factor, LuPattern, StepMatrix};
use crate::{column_weights, solve, takes_part, Problem, SolveError, SolveOptions};

/// Refinement rounds at most after the regularised solve of the rates: they stop once
/// the residual is below [`RATE_TOLERANCE`] of the right-hand side or no longer halves.
const MAX_REFINEMENTS: usize = 60;
/// Refinement rounds before a large square system's rates are solved by sparse LU.
const QUICK_REFINEMENTS: usize = 4;
/// Rate solves running whose quick refinement did not finish (and sparse LU did) after
/// which sparse LU is tried first.
const LU_FIRST_AFTER: u32 = 3;
/// Rate solves taken by sparse LU first before the quick refinement is tried again.
const REFINE_RETRY: u32 = 32;
/// Residual of the rates' equations, relative to their right-hand side, at which the
/// refinement stops.
const RATE_TOLERANCE: f64 = 1e-14;
/// Largest residual, relative to the right-hand side, of a direct solve of the rates
/// (sparse LU, the blocks, a small run's independent rows) taken as exact (else the
/// refined least-norm solve is used).
const SQUARE_CHECK: f64 = 1e-11;
/// A fall of the rates' normal matrix's determinant by this factor since the first
/// frame has its rank checked again.
const SINGULAR_DROP: f64 = 1e8;
/// Chord steps tried on a predicted frame before Newton steps.
const MAX_CHORD_STEPS: usize = 6;
/// Newton steps (fresh Jacobian each) tried on a predicted frame before the full solve.
const MAX_NEWTON_STEPS: usize = 4;
/// After chord steps stall, frames until they are tried again.
const CHORD_RETRY: usize = 16;

/// One frame of a run: the state (as a solve's), the tangent velocity and acceleration
/// (6 per free part: linear then angular, world frame; one per extra unknown), and the
/// largest residual.
#[derive(Debug, Clone, PartialEq)]
pub struct KinematicFrame {
    /// Time.
    pub time: f64,
    /// The state (7 per free part, then the extra unknowns).
    pub state: Vec<f64>,
    /// Tangent velocity.
    pub velocity: Vec<f64>,
    /// Tangent acceleration.
    pub acceleration: Vec<f64>,
    /// Largest residual of the equations taking part.
    pub max_residual: f64,
}

/// What can happen in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventKind {
    /// The equations could not be solved at a frame: the run stops there.
    NotSolved,
    /// A joint limit was reached (the motion would take a coordinate past it): the run
    /// stops there.
    Limit,
    /// The Jacobian lost rank (a singular position): the rates there are the
    /// minimum-norm ones; the run carries on while frames solve.
    Singular,
    /// Said once, at the first frame: freedoms that no motion drives. Their rates are
    /// the least-norm ones (weighted as a solve weighs steps, computed by the
    /// pseudo-inverse), their accelerations include the change of those rates along the
    /// freedoms themselves, and their positions follow the rates (predicted to third
    /// order, corrected by least change).
    Undriven,
}

impl EventKind {
    /// Whether the run stops at it.
    pub fn stops(self) -> bool {
        matches!(self, EventKind::NotSolved | EventKind::Limit)
    }
}

/// Something that happened at a time, with the joints involved and a sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct KinematicEvent {
    /// When.
    pub time: f64,
    /// What.
    pub kind: EventKind,
    /// The joints involved (the equations left unsolved, or those whose rows lost rank).
    pub joints: Vec<JointKey>,
    /// One sentence.
    pub message: String,
}

/// A kinematic run in progress: the current frame, stepped to any later time. It owns
/// its state; the equations (a [`Problem`] and the [`RateTape`] made over
/// [`run_rows`]) are passed to each step, so a host can keep them beside it.
pub struct KinematicRun {
    work: RateWork,
    /// The run's rows evaluated into buffers kept from frame to frame.
    evaluator: RowEvaluator,
    scratch: Scratch,
    /// The weighted Jacobian of the rates, its pattern (and a sparse one's symbolic
    /// analysis) made at the first frame and refilled at each.
    matrix: Option<StepMatrix>,
    /// `matrix` as the last frame's rates filled it, factored as they factored it (the
    /// next frame's chord steps use it); `None` once the matrix is filled again.
    factor: Option<Factor>,
    /// The symbolic analysis of a large square Jacobian's sparse LU (the rates'), kept
    /// from frame to frame.
    lu_pattern: std::cell::RefCell<LuPattern>,
    /// The block-triangular plan of a large square Jacobian (made at its first use;
    /// `None` inside where the blocks are too large or the pattern is not square).
    block_plan: std::cell::OnceCell<Option<BlockPlan>>,
    /// The last frame's Jacobian factored over those blocks (its rates were solved so;
    /// the next frame's chord steps use it).
    block_factors: Option<BlockFactors>,
    /// A small run's independent rows, where every freedom is driven: the rates and the
    /// chord steps by their LU (see `reduced`).
    reduced: Option<reduced::ReducedRows>,
    /// How many rate solves running the quick refinement did not finish and sparse LU
    /// did, and how many solves LU has taken first since (see `rates`).
    lu_first: std::cell::Cell<(u32, u32)>,
    rows: Vec<usize>,
    weights: Vec<f64>,
    options: SolveOptions,
    /// The tolerances at the run's start (lengths scaled by the model's reach).
    tolerances: crate::Tolerances,
    /// Per row of `rows`, its tolerance.
    row_tolerance: Vec<f64>,
    state: Vec<f64>,
    params: Vec<f64>,
    velocity: Vec<f64>,
    acceleration: Vec<f64>,
    time: f64,
    rank: Option<usize>,
    /// `ln det` of the first frame's normal matrix (dense runs).
    log_det: Option<f64>,
    singular: bool,
    /// The step to the current frame and the velocity and acceleration before it (for
    /// the prediction's higher terms).
    previous: Option<(f64, Vec<f64>, Vec<f64>)>,
    /// The same one frame further back (for the quintic prediction of small runs and
    /// the prediction from velocities alone, see `accelerations_complete`).
    earlier: Option<(f64, Vec<f64>, Vec<f64>)>,
    /// Whether the accelerations are the derivatives of the velocities along every
    /// freedom: a large run whose equations are fewer or more than its unknowns (some
    /// freedom may be driven by no motion) has no multipliers' rates, so its
    /// accelerations lack the part along such freedoms, and its prediction goes by the
    /// last three frames' velocities instead (else the poses along those freedoms would
    /// not follow the velocities reported).
    accelerations_complete: bool,
    /// Frames since chord steps last stalled.
    since_chord_failed: usize,
    /// Evaluations the last frame's chord steps took to converge (0: none yet, or they
    /// stalled); the chord makes that one a full evaluation (see `correct`).
    chord_evaluations: usize,
    /// The raw angles of the counted turns at the last state moved to.
    turns: TurnCache,
    /// Room for a predicted state and parameters, put back where chord steps fail.
    undo: (Vec<f64>, Vec<f64>),
}

/// The equations a run holds: joints, drives and motions.
pub fn run_rows(system: &System) -> Vec<usize> {
    (0..system.equations().len())
        .filter(|&k| takes_part(system, k, true))
        .collect()
}

/// How many freedoms no motion drives at `state` (the tangent dimension less the rank of
/// the run's equations), where the Jacobian is small enough to be dense; `None` for a
/// larger one (its rank is not computed).
pub fn undriven_freedoms(
    problem: &Problem<'_>,
    state: &[f64],
    params: &[f64],
    options: SolveOptions,
) -> Result<Option<usize>, SolveError> {
    let system = problem.system;
    let dimension = system.tangent_dimension();
    if dimension > options.dense_columns {
        return Ok(None);
    }
    let rows = run_rows(system);
    let (_, jac) = system.tangent_jacobian_of_rows(problem.compiled, state, params, &rows)?;
    let col_of: Vec<usize> = (0..dimension).collect();
    let mut matrix = StepMatrix::new(rows.len(), dimension, options.dense_columns);
    matrix.fill(&jac, &col_of, &column_weights(system));
    Ok(matrix.factor()?.rank().map(|r| dimension.saturating_sub(r)))
}

impl KinematicRun {
    /// Starts a run at `time` from `state` and `params` (the system's, as a solve takes
    /// them). `rates` must be made by [`System::rates`] over [`run_rows`].
    pub fn new(
        problem: &Problem<'_>,
        rates: &RateTape,
        (state, params): (Vec<f64>, Vec<f64>),
        time: f64,
        options: SolveOptions,
    ) -> Result<Self, SolveError> {
        problem.system.check_lengths(&state, &params)?;
        let dimension = problem.system.tangent_dimension();
        let rows = run_rows(problem.system);
        let rows_count = rows.len();
        let tolerances = crate::Tolerances::at(problem.system, &state, &options);
        let per_row = tolerances.per_row(problem.system);
        let row_tolerance = rows.iter().map(|&k| per_row.equation(k)).collect();
        let evaluator = problem.system.row_evaluator(problem.compiled, &rows);
        Ok(KinematicRun {
            work: rates.work(),
            evaluator,
            scratch: Scratch::new(),
            matrix: None,
            factor: None,
            lu_pattern: std::cell::RefCell::default(),
            block_plan: std::cell::OnceCell::new(),
            block_factors: None,
            reduced: None,
            lu_first: std::cell::Cell::new((0, 0)),
            rows,
            tolerances,
            row_tolerance,
            weights: column_weights(problem.system),
            options: SolveOptions {
                include_motions: true,
                report_rank: false,
                ..options
            },
            state,
            params,
            velocity: vec![0.0; dimension],
            acceleration: vec![0.0; dimension],
            time,
            rank: None,
            log_det: None,
            singular: false,
            previous: None,
            earlier: None,
            accelerations_complete: dimension <= options.dense_columns || rows_count == dimension,
            since_chord_failed: usize::MAX,
            chord_evaluations: 0,
            turns: TurnCache::default(),
            undo: (Vec::new(), Vec::new()),
        })
    }

    /// Solves the frame at `time` (predicted from the current one), makes it current and
    /// returns it with what happened; a frame that does not solve is returned with a
    /// `NotSolved` event and is not made current.
    pub fn frame_at(
        &mut self,
        (problem, rates): (&Problem<'_>, &RateTape),
        time: f64,
    ) -> Result<(KinematicFrame, Vec<KinematicEvent>), SolveError> {
        let system = problem.system;
        let h = time - self.time;
        let mut state = self.state.clone();
        let mut params = self.params.clone();
        if h != 0.0 {
            // The velocity over the step extrapolated from the frames before and
            // integrated (see `predict`): a small run by the quintic through the last
            // three frames' velocities and accelerations, a large one by the cubic
            // through two (each extra node costs every coordinate a few operations,
            // and a large run's steps are short); a run whose accelerations lack the
            // part along undriven freedoms by the last three velocities alone.
            let stepped =
                |p: &Option<(f64, Vec<f64>, Vec<f64>)>| p.as_ref().is_some_and(|p| p.0 > 0.0);
            let by_velocities =
                !self.accelerations_complete && stepped(&self.previous) && stepped(&self.earlier);
            let frames = if by_velocities || self.velocity.len() <= self.options.dense_columns {
                3
            } else {
                2
            };
            let mut known = vec![predict::Known {
                at: 0.0,
                velocity: &self.velocity,
                acceleration: (!by_velocities).then_some(&self.acceleration[..]),
            }];
            let mut at = 0.0;
            for (step, v, a) in [&self.previous, &self.earlier].into_iter().flatten() {
                if known.len() == frames || *step <= 0.0 {
                    break;
                }
                at -= step;
                known.push(predict::Known {
                    at,
                    velocity: v,
                    acceleration: (!by_velocities).then_some(&a[..]),
                });
            }
            let delta = predict::predicted_move(h, &known);
            move_by(
                (problem, &mut self.turns),
                (&mut state, &mut params),
                &delta,
            )?;
        }
        if let Some(t) = params.get_mut(system.time().index()) {
            *t = time;
        }
        // From a good prediction, chord steps with the last frame's Jacobian usually
        // finish the frame; else (or with joint limits to watch) the full solve.
        // Where the chord steps stall (the Jacobian changes too much over a step), Newton
        // steps with a fresh Jacobian on a small (dense) system, whose last evaluation
        // serves the rates; on a large one the full solve, whose block-triangular stages
        // stay well conditioned on long chains (the normal equations do not). A chord
        // that stalled is tried again only every CHORD_RETRY frames.
        // Whether the evaluator holds the Jacobian at the corrected state.
        let mut evaluated = false;
        let mut corrected = None;
        if h != 0.0 && system.limits().is_empty() {
            self.since_chord_failed = self.since_chord_failed.saturating_add(1);
            if self.since_chord_failed > CHORD_RETRY {
                match self.chord((problem, rates), &mut state, &mut params)? {
                    Some((largest, full)) => {
                        corrected = Some(largest);
                        evaluated = full;
                    }
                    None => self.since_chord_failed = 0,
                }
            }
            if corrected.is_none() && system.tangent_dimension() <= self.options.dense_columns {
                if let Some(largest) = self.newton((problem, rates), &mut state, &mut params)? {
                    corrected = Some(largest);
                    evaluated = true;
                }
            }
        }
        let report = match corrected {
            Some(largest) => crate::SolveReport {
                converged: true,
                max_residual: largest,
                clusters: Vec::new(),
                unsatisfied: Vec::new(),
                flipped: Vec::new(),
                tolerances: self.tolerances,
            },
            None => {
                evaluated = false;
                solve(problem, &mut state, &mut params, self.options)?
            }
        };
        let mut events = Vec::new();
        if !report.converged {
            let mut limited: Vec<JointKey> = report
                .clusters
                .iter()
                .flat_map(|c| c.limits.iter().map(|l| l.joint))
                .collect();
            limited.dedup();
            if limited.is_empty() {
                let mut joints: Vec<JointKey> = report
                    .unsatisfied
                    .iter()
                    .filter_map(|&(k, _)| system.joint_of(k))
                    .collect();
                joints.sort_unstable();
                joints.dedup();
                events.push(KinematicEvent {
                    time,
                    kind: EventKind::NotSolved,
                    joints,
                    message: format!(
                        "the joints and motions cannot all hold at t = {time} (largest residual {:.3e}): the run stops here",
                        report.max_residual
                    ),
                });
            } else {
                events.push(KinematicEvent {
                    time,
                    kind: EventKind::Limit,
                    joints: limited,
                    message: format!(
                        "a joint limit is reached at t = {time}: the motion would take the joint past it; the run stops here"
                    ),
                });
            }
            let frame = KinematicFrame {
                time,
                state,
                velocity: vec![0.0; self.velocity.len()],
                acceleration: vec![0.0; self.acceleration.len()],
                max_residual: report.max_residual,
            };
            return Ok((frame, events));
        }
        let (velocity, acceleration, rank) =
            self.rates_at((problem, rates), (&state, &params), evaluated)?;
        match (self.rank, rank) {
            (Some(first), Some(now)) if now < first && !self.singular => {
                self.singular = true;
                events.push(KinematicEvent {
                    time,
                    kind: EventKind::Singular,
                    joints: Vec::new(),
                    message: format!(
                        "singular position at t = {time}: the joints' equations lost {} rank (velocities there are the least-norm ones)",
                        first - now
                    ),
                });
            }
            (Some(first), Some(now)) if now >= first => self.singular = false,
            (Some(_), None) => self.singular = false,
            (None, Some(now)) => {
                self.rank = rank;
                let free = system.tangent_dimension().saturating_sub(now);
                if free > 0 {
                    events.push(KinematicEvent {
                        time,
                        kind: EventKind::Undriven,
                        joints: Vec::new(),
                        message: format!(
                            "{free} degree(s) of freedom are driven by no motion: they move only as little as the driven ones require (least change)"
                        ),
                    });
                }
            }
            _ => {}
        }
        self.state.clone_from(&state);
        self.params = params;
        // The frame two back gives its vectors' memory to the current one's copies.
        let (mut v_now, mut a_now) = match self.earlier.take() {
            Some((_, v, a)) => (v, a),
            None => (Vec::new(), Vec::new()),
        };
        v_now.clone_from(&velocity);
        a_now.clone_from(&acceleration);
        let last_velocity = std::mem::replace(&mut self.velocity, v_now);
        let last = std::mem::replace(&mut self.acceleration, a_now);
        self.earlier = std::mem::take(&mut self.previous);
        self.previous = (time != self.time).then_some((time - self.time, last_velocity, last));
        if self.previous.is_none() {
            self.earlier = None;
        }
        self.time = time;
        Ok((
            KinematicFrame {
                time,
                state,
                velocity,
                acceleration,
                max_residual: report.max_residual,
            },
            events,
        ))
    }

    /// The parameters of the current frame (time and turn counters set).
    pub fn params(&self) -> &[f64] {
        &self.params
    }

    /// The time of the current frame.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Whether the current frame's rates were solved on the Jacobian's independent
    /// rows by LU (a small run whose motions drive every freedom; see `reduced`), not
    /// by the least-norm solve.
    pub fn rates_by_independent_rows(&self) -> bool {
        self.reduced.as_ref().is_some_and(|r| r.current())
    }
}

impl std::fmt::Debug for KinematicRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KinematicRun")
            .field("time", &self.time)
            .field("rows", &self.rows.len())
            .field("rank", &self.rank)
            .finish_non_exhaustive()
    }
}
