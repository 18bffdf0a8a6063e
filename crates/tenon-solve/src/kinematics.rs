//! Kinematic runs: the motions driven over time, frame by frame, with velocities and
//! accelerations.
//!
//! Each frame at time `t`: the pose is predicted from the last frame (`exp(v h + a h^2 /
//! 2 + j h^3 / 6)` on the manifold, the jerk `j` from the last two accelerations), corrected by the same least-change Newton as a solve (with the
//! motions taking part; one or two iterations when the prediction is good), then the
//! velocities solve `J v = -C_t` and the accelerations `J a = -gamma` with one
//! factorization of the tangent Jacobian (right-hand sides from
//! [`tenon_system::RateTape`]). Both are minimum-norm in the solve's weighted sense, so a
//! coordinate that no motion drives stays at rest. The normal equations are regularised
//! like a Newton step; a few rounds of iterative refinement take the regularisation's
//! bias out, so the rates are exact to rounding where the Jacobian has full rank.

use tenon_model::JointKey;
use tenon_system::{RateTape, RateWork, System, TangentJacobian};

use crate::linalg::{Factored, PseudoInverse, SquareLu, StepMatrix, Steps};
use crate::{column_weights, solve, takes_part, Problem, SolveError, SolveOptions};

/// Refinement rounds at most after the regularised solve of the rates: they stop once
/// the residual is below [`RATE_TOLERANCE`] of the right-hand side or no longer halves.
const MAX_REFINEMENTS: usize = 60;
/// Refinement rounds before a large square system's rates are solved by sparse LU.
const QUICK_REFINEMENTS: usize = 4;
/// Residual of the rates' equations, relative to their right-hand side, at which the
/// refinement stops.
const RATE_TOLERANCE: f64 = 1e-14;
/// Largest residual, relative to the right-hand side, of a sparse LU solve of the rates
/// taken as exact (else the refined least-norm solve is used).
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
    /// The weighted Jacobian of the rates, its pattern (and a sparse one's symbolic
    /// analysis) made at the first frame and refilled at each.
    matrix: Option<StepMatrix>,
    rows: Vec<usize>,
    weights: Vec<f64>,
    options: SolveOptions,
    state: Vec<f64>,
    params: Vec<f64>,
    velocity: Vec<f64>,
    acceleration: Vec<f64>,
    time: f64,
    rank: Option<usize>,
    /// `ln det` of the first frame's normal matrix (dense runs).
    log_det: Option<f64>,
    singular: bool,
    /// The step to the current frame and the acceleration before it (for the jerk).
    previous: Option<(f64, Vec<f64>)>,
    /// Frames since chord steps last stalled.
    since_chord_failed: usize,
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
        Ok(KinematicRun {
            work: rates.work(),
            matrix: None,
            rows: run_rows(problem.system),
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
            since_chord_failed: usize::MAX,
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
            // Taylor to third order, the jerk estimated from the last two frames'
            // accelerations.
            let jerk_scale = match self.previous {
                Some((h_before, _)) if h_before > 0.0 => h * h * h / (6.0 * h_before),
                _ => 0.0,
            };
            let before_acceleration = self.previous.as_ref().map(|(_, a)| a);
            let delta: Vec<f64> = self
                .velocity
                .iter()
                .zip(&self.acceleration)
                .enumerate()
                .map(|(k, (v, a))| {
                    let jerk = before_acceleration
                        .and_then(|b| b.get(k))
                        .map_or(0.0, |b| (a - b) * jerk_scale);
                    v * h + 0.5 * a * h * h + jerk
                })
                .collect();
            move_by(problem, (&mut state, &mut params), &delta)?;
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
        let mut evaluated: Option<TangentJacobian> = None;
        let mut corrected = None;
        if h != 0.0 && system.limits().is_empty() {
            self.since_chord_failed = self.since_chord_failed.saturating_add(1);
            if self.since_chord_failed > CHORD_RETRY {
                corrected = self.chord(problem, &mut state, &mut params)?;
                if corrected.is_none() {
                    self.since_chord_failed = 0;
                }
            }
            if corrected.is_none() && system.tangent_dimension() <= self.options.dense_columns {
                if let Some((largest, jac)) = self.newton(problem, &mut state, &mut params)? {
                    corrected = Some(largest);
                    evaluated = Some(jac);
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
            },
            None => {
                evaluated = None;
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
        self.velocity.clone_from(&velocity);
        let last = std::mem::replace(&mut self.acceleration, acceleration.clone());
        self.previous = (time != self.time).then_some((time - self.time, last));
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

    /// Corrects a predicted state by chord steps with the last frame's Jacobian (its
    /// matrix is still filled): `x <- x - J^+ r`, up to [`MAX_CHORD_STEPS`], each to be
    /// at least four times smaller than the one before. Returns the largest residual when
    /// they converge; else puts the prediction back and returns `None`.
    fn chord(
        &mut self,
        problem: &Problem<'_>,
        state: &mut [f64],
        params: &mut [f64],
    ) -> Result<Option<f64>, SolveError> {
        let system = problem.system;
        let Some(matrix) = self.matrix.as_ref() else {
            return Ok(None);
        };
        let predicted = (state.to_vec(), params.to_vec());
        let factored = matrix.factor()?;
        let steps = factored.regularized(0.0, 1e-6)?;
        let mut last = f64::INFINITY;
        for _ in 0..MAX_CHORD_STEPS {
            let all = system.residuals(problem.compiled, state, params)?;
            let r: Vec<f64> = self
                .rows
                .iter()
                .map(|&k| all.get(k).copied().unwrap_or(0.0))
                .collect();
            let largest = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            if !largest.is_finite() || largest > 0.25 * last {
                break;
            }
            if largest <= self.options.tolerance {
                return Ok(Some(largest));
            }
            last = largest;
            let dy = steps.solve(&r);
            let delta: Vec<f64> = dy.iter().zip(&self.weights).map(|(d, w)| -d / w).collect();
            move_by(problem, (state, params), &delta)?;
        }
        state.copy_from_slice(&predicted.0);
        params.copy_from_slice(&predicted.1);
        Ok(None)
    }

    /// Corrects a predicted state by Newton steps with a fresh Jacobian each (least
    /// change, as a solve steps), up to [`MAX_NEWTON_STEPS`], each residual at most a
    /// quarter of the one before. Returns the largest residual and the Jacobian at the
    /// final state (for the rates) when they converge; else puts the prediction back.
    #[allow(clippy::type_complexity)]
    fn newton(
        &mut self,
        problem: &Problem<'_>,
        state: &mut [f64],
        params: &mut [f64],
    ) -> Result<Option<(f64, TangentJacobian)>, SolveError> {
        let system = problem.system;
        let predicted = (state.to_vec(), params.to_vec());
        let mut last = f64::INFINITY;
        for _ in 0..=MAX_NEWTON_STEPS {
            let (r, jac) =
                system.tangent_jacobian_of_rows(problem.compiled, state, params, &self.rows)?;
            let largest = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            if !largest.is_finite() || largest > 0.25 * last {
                break;
            }
            if largest <= self.options.tolerance {
                return Ok(Some((largest, jac)));
            }
            last = largest;
            let shape = (self.rows.len(), self.options.dense_columns);
            let factored = filled(&mut self.matrix, shape, &self.weights, &jac)?;
            let steps = factored.regularized(0.0, 1e-6)?;
            // The least-change step, refined like the rates.
            let x = refined(&steps, &jac, &self.weights, (&r, MAX_REFINEMENTS)).0;
            let delta: Vec<f64> = x.iter().map(|d| -d).collect();
            move_by(problem, (state, params), &delta)?;
        }
        state.copy_from_slice(&predicted.0);
        params.copy_from_slice(&predicted.1);
        Ok(None)
    }

    /// The parameters of the current frame (time and turn counters set).
    pub fn params(&self) -> &[f64] {
        &self.params
    }

    /// The time of the current frame.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Velocities and accelerations at a solved state, and the Jacobian's rank where it
    /// is known.
    #[allow(clippy::type_complexity)]
    fn rates_at(
        &mut self,
        (problem, rates): (&Problem<'_>, &RateTape),
        (state, params): (&[f64], &[f64]),
        evaluated: Option<TangentJacobian>,
    ) -> Result<(Vec<f64>, Vec<f64>, Option<usize>), SolveError> {
        let system = problem.system;
        let dimension = system.tangent_dimension();
        let jac = match evaluated {
            Some(jac) => jac,
            None => {
                system
                    .tangent_jacobian_of_rows(problem.compiled, state, params, &self.rows)?
                    .1
            }
        };
        let shape = (self.rows.len(), self.options.dense_columns);
        let factored = filled(&mut self.matrix, shape, &self.weights, &jac)?;
        let steps = factored.regularized(0.0, 1e-6)?;
        // The rank (a rank-revealing QR) where the matrix is dense: at the first frame,
        // and again only when the normal matrix's determinant has fallen by a factor
        // SINGULAR_DROP since then (a singular value going to zero); a large (sparse) run
        // is not watched for singular positions (said in the docs).
        let log_det = steps.log_det();
        // `log_det` is only at hand for a dense matrix.
        let rank = match (log_det, self.log_det) {
            (Some(_), None) => {
                self.log_det = log_det;
                factored.rank()
            }
            (Some(now), Some(first)) if now < first - SINGULAR_DROP.ln() => factored.rank(),
            _ => None,
        };
        let weights = &self.weights;
        let jac = &jac;
        // Refined least-norm solves; where a few rounds do not finish and the system is
        // large and square (every freedom driven), sparse LU (made once per frame, each
        // solve checked by its residual); else refinement to the end.
        let lu: std::cell::OnceCell<Option<SquareLu>> = std::cell::OnceCell::new();
        let square = dimension > self.options.dense_columns && self.rows.len() == dimension;
        let solve_refined = |b: &[f64]| -> Vec<f64> {
            let (x, done) = refined(&steps, jac, weights, (b, QUICK_REFINEMENTS));
            if done {
                return x;
            }
            if square {
                if let Some(x) = lu
                    .get_or_init(|| SquareLu::new(jac))
                    .as_ref()
                    .and_then(|lu| lu.solve(b))
                    .filter(|x| {
                        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                        let left = residual_of(jac, x, b)
                            .iter()
                            .fold(0.0f64, |m, v| m.max(v.abs()));
                        left <= SQUARE_CHECK * scale.max(f64::MIN_POSITIVE)
                    })
                {
                    return x;
                }
            }
            refined(&steps, jac, weights, (b, MAX_REFINEMENTS)).0
        };
        // Freedoms no motion drives (the Jacobian has a null space): the rates by the
        // pseudo-inverse, exact where the regularised solve leaves rounding noise along
        // the null space.
        let undriven = rank.or(self.rank).is_some_and(|r| r < dimension);
        if undriven {
            if let Some(pinv) = factored.pseudo_inverse() {
                let (velocity, acceleration) =
                    undriven_rates((rates, &mut self.work), &pinv, (state, params), weights)?;
                return Ok((velocity, acceleration, rank));
            }
        }
        let velocity_rhs = rates.velocity_rhs(&mut self.work, (state, params))?;
        let velocity = solve_refined(velocity_rhs);
        let acceleration_rhs =
            rates.acceleration_rhs(&mut self.work, (state, params), &velocity)?;
        let acceleration = solve_refined(acceleration_rhs);
        Ok((velocity, acceleration, rank))
    }
}

/// Velocities and accelerations where some freedom is driven by no motion, with `A = J
/// W^-1` (`W` the column weights, `M = W^2` the metric of least change) and its
/// pseudo-inverse: `v = W^-1 A^+ (-C_t)`, the least-norm velocity, which is `M^-1 J^T
/// mu` with `mu = (A^+)^T W v`. Along the run `dv/dt = W^-1 (A^+ (-gamma) + (I - A^+ A)
/// W^-1 (dJ/dt)^T mu)`: the least-norm acceleration plus the change of the velocities
/// along the freedoms themselves, so that the accelerations are the derivatives of the
/// velocities (and the predicted poses follow the velocities to third order). Without
/// the multipliers' rates (not made for large runs) the second term is left out.
fn undriven_rates(
    (rates, work): (&RateTape, &mut RateWork),
    pinv: &PseudoInverse,
    (state, params): (&[f64], &[f64]),
    weights: &[f64],
) -> Result<(Vec<f64>, Vec<f64>), SolveError> {
    let y = pinv.solve(rates.velocity_rhs(work, (state, params))?);
    let velocity = scaled(&y, weights);
    let mut ya = pinv.solve(rates.acceleration_rhs(work, (state, params), &velocity)?);
    let mu = pinv.transposed_solve(&y);
    if let Some(rate) = rates.multiplier_rates(work, (state, params), &velocity, &mu)? {
        let along = pinv.null_part(&scaled(rate, weights));
        for (a, n) in ya.iter_mut().zip(&along) {
            *a += n;
        }
    }
    Ok((velocity, scaled(&ya, weights)))
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

/// The least-norm solution of `J x = b` (weighted; least squares where `b` is not in
/// `J`'s range) from the regularised factorization `steps`, refined: each round solves
/// for what is left of `b`, up to `rounds`; also whether it finished (the residual at
/// [`RATE_TOLERANCE`] of `b`, or no longer halving: a least-squares residual). Where
/// the normal equations are well conditioned one or two rounds reach rounding; a long
/// chain's (1,000 links: the weighted Jacobian's condition squared) gain about a digit a
/// round, and stopping after two left the velocities 13% off.
fn refined(
    steps: &Steps<'_>,
    jac: &TangentJacobian,
    weights: &[f64],
    (b, rounds): (&[f64], usize),
) -> (Vec<f64>, bool) {
    let mut x = vec![0.0; weights.len()];
    let mut r = b.to_vec();
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut last = f64::INFINITY;
    for _ in 0..rounds {
        let dy = steps.solve(&r);
        for ((x, d), w) in x.iter_mut().zip(&dy).zip(weights) {
            *x += d / w;
        }
        r = residual_of(jac, &x, b);
        let left = r.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if !left.is_finite() || left <= RATE_TOLERANCE * scale || left > 0.5 * last {
            return (x, true);
        }
        last = left;
    }
    (x, false)
}

/// Moves `state` by the tangent step `delta`, its turn counters (in `params`) kept
/// continuous.
fn move_by(
    problem: &Problem<'_>,
    (state, params): (&mut [f64], &mut [f64]),
    delta: &[f64],
) -> Result<(), SolveError> {
    let before = state.to_vec();
    problem.system.retract(state, delta)?;
    problem
        .system
        .update_turns(problem.compiled, &before, state, params)?;
    Ok(())
}

/// A run's step matrix (made at first use, `rows` by `jac`'s columns, dense up to
/// `dense_columns`) filled with `jac` weighted by `weights`, ready to factor.
fn filled<'m>(
    matrix: &'m mut Option<StepMatrix>,
    (rows, dense_columns): (usize, usize),
    weights: &[f64],
    jac: &TangentJacobian,
) -> Result<Factored<'m>, SolveError> {
    let dimension = jac.columns;
    let col_of: Vec<usize> = (0..dimension).collect();
    let matrix = matrix.get_or_insert_with(|| StepMatrix::new(rows, dimension, dense_columns));
    matrix.fill(jac, &col_of, weights);
    matrix.factor()
}

/// `x / w`, component by component.
fn scaled(x: &[f64], weights: &[f64]) -> Vec<f64> {
    x.iter().zip(weights).map(|(x, w)| x / w).collect()
}

/// `b - J x`.
fn residual_of(jac: &TangentJacobian, x: &[f64], b: &[f64]) -> Vec<f64> {
    let mut r = b.to_vec();
    for &(row, col, value) in &jac.entries {
        if let (Some(ri), Some(xc)) = (r.get_mut(row as usize), x.get(col as usize)) {
            *ri -= value * xc;
        }
    }
    r
}
