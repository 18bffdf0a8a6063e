//! A dynamic run: its state, the frame stepped to any later time, its events.
//!
//! The equations held are those of a kinematic run (joints, driving values, motions as
//! drives: [`tenon_solve::run_rows`]); their multipliers `lambda` give the reactions
//! (`-J^T lambda` is the constraint force on the parts) and the drives' efforts. Each
//! step evaluates the equations' residuals and tangent Jacobian through the same
//! compiled tapes as the static solver (`System::tangent_jacobian_of_rows`).

use tenon_solve::Problem;
use tenon_system::{Owner, RateTape, RateWork, RowEvaluator, Scratch, System, TangentJacobian};

use nalgebra::{Vector3, Vector6};

use crate::alpha::Predictor;
use crate::error::DynamicsError;
use crate::forces::{Dynamics, Energy};
use crate::kkt::Kkt;
use crate::start;

/// How a run integrates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// Index-3 generalized-alpha on the rotation group (module `alpha`).
    #[default]
    GeneralizedAlpha,
    /// Index-1: accelerations from the KKT system with a Baumgarte-stabilised right-hand
    /// side, integrated by Runge-Kutta 4 (module `baumgarte`).
    Baumgarte,
}

/// Up to this many rows, redundant joints' reactions are split by minimum norm.
pub const SPLIT_ROWS: usize = 400;
/// The regularisation of the minimum-norm split's normal equations, relative to their
/// largest diagonal entry.
const SPLIT_REGULARIZATION: f64 = 1e-12;

/// After a step fails, this many steps factor the KKT matrix leaving nearly dependent
/// rows out.
const CAREFUL_STEPS: u32 = 16;

/// Settings of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Integration method.
    pub method: Method,
    /// Generalized-alpha's spectral radius at infinite frequency, in `[0, 1]`.
    pub rho_inf: f64,
    /// Newton tolerance: largest residual of the equations (model units) and largest
    /// correction (lengths; rotations times the part's size).
    pub tolerance: f64,
    /// Baumgarte's `(alpha, beta)`: the right-hand side `-gamma - 2 alpha C' - beta^2 C`.
    pub baumgarte: (f64, f64),
    /// Newton iterations per step before the step is halved.
    pub max_iterations: usize,
    /// How many times a step may be halved.
    pub max_halvings: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            method: Method::GeneralizedAlpha,
            rho_inf: 0.9,
            tolerance: 1e-10,
            baumgarte: (0.0, 0.0),
            max_iterations: 12,
            max_halvings: 10,
        }
    }
}

/// What can happen in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventKind {
    /// A step did not converge even halved to its floor: the run stops there.
    NotSolved,
    /// A step was halved (Newton did not converge at the full step).
    StepRefined,
    /// Said once, at the start: equations dependent on others (redundant joints); their
    /// multipliers are 0 in the solve, and the reactions are reported split by minimum
    /// norm.
    Redundant,
    /// Said once, at the start: joint limits are not enforced by dynamics yet.
    LimitsIgnored,
    /// Said once, at the start: the constraint block `J M^-1 J^T` (rows scaled to a unit
    /// diagonal) has a condition estimate above [`CONDITION_WARNING`]: the equations
    /// named are nearly dependent (their reactions are ill-determined, and a small
    /// force error moves them much).
    IllConditioned,
}

/// Condition estimate of the scaled `J M^-1 J^T` above which a run warns (the square
/// of the statics' threshold on `J`, 1e5, as the block is quadratic in `J`).
pub const CONDITION_WARNING: f64 = 1e10;
/// Up to this many rigid rows the start estimates the condition of `J M^-1 J^T`
/// (dense eigenvalues).
pub const CONDITION_ROWS: usize = 200;

impl EventKind {
    /// Whether the run stops at it.
    pub fn stops(self) -> bool {
        matches!(self, EventKind::NotSolved)
    }
}

/// Something that happened at a time, with the equations involved and a sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When.
    pub time: f64,
    /// What.
    pub kind: EventKind,
    /// The equations involved (indices into `System::equations`).
    pub equations: Vec<usize>,
    /// One sentence.
    pub message: String,
}

/// One frame of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Time.
    pub time: f64,
    /// The state (7 per free part).
    pub state: Vec<f64>,
    /// Tangent velocity (6 per free part: linear, then angular; world frame).
    pub velocity: Vec<f64>,
    /// Tangent acceleration.
    pub acceleration: Vec<f64>,
    /// Multipliers, one per equation held ([`Run::rows`] order): `-J^T lambda` is the
    /// constraint force on the parts.
    pub multipliers: Vec<f64>,
    /// Largest residual of the equations held.
    pub max_residual: f64,
    /// Energies and the work done so far.
    pub energy: Energy,
    /// Newton iterations and factorizations of the iteration matrix so far (the run's
    /// cost, for benchmarks and reports).
    pub effort: (u64, u64),
}

/// A dynamic run in progress: the current frame, stepped to any later time. The
/// equations (a [`Problem`], a [`RateTape`] made over [`tenon_solve::run_rows`]) and the
/// [`Dynamics`] are passed to each step, so a host can keep them beside it.
#[derive(Debug)]
pub struct Run {
    pub(crate) settings: Settings,
    pub(crate) rows: Vec<usize>,
    /// Positions in `rows` of the equations solved with (the independent rigid ones and
    /// the compliant ones).
    pub(crate) active: Vec<usize>,
    /// Positions in `rows` of the independent rigid equations (those the
    /// acceleration-level solves hold: a compliant one is a force there).
    pub(crate) rigid: Vec<usize>,
    /// Per row, its compliance (0: rigid; see [`Dynamics::set_compliance`]).
    pub(crate) soft: Vec<f64>,
    /// The step the iteration matrix was factored for (its compliant rows' terms
    /// depend on it).
    pub(crate) factored_h: f64,
    pub(crate) motions: Vec<usize>,
    pub(crate) weights: Vec<f64>,
    /// The largest coordinate or part size: the scale of positions.
    pub(crate) extent: f64,
    pub(crate) work: RateWork,
    /// The equations' residuals and Jacobian, evaluated into kept buffers.
    pub(crate) evaluator: RowEvaluator,
    pub(crate) scratch: Scratch,
    pub(crate) state: Vec<f64>,
    pub(crate) params: Vec<f64>,
    pub(crate) velocity: Vec<f64>,
    pub(crate) acceleration: Vec<f64>,
    /// Generalized-alpha's acceleration-like variable.
    pub(crate) pseudo: Vec<f64>,
    pub(crate) multipliers: Vec<f64>,
    /// The step that reached the current state and the acceleration and multipliers
    /// before it, and the same for the step before that (for the predictor of the next
    /// step).
    pub(crate) last_step: Option<(f64, Vec<f64>, Vec<f64>)>,
    pub(crate) step_before: Option<(f64, Vec<f64>, Vec<f64>)>,
    pub(crate) time: f64,
    pub(crate) max_residual: f64,
    /// The iteration matrix, kept while steps converge with it (`kkt_valid`).
    pub(crate) kkt: Kkt,
    pub(crate) kkt_valid: bool,
    /// Steps left in which factorizations leave nearly dependent rows out (set when a
    /// step fails: a singular position is near).
    pub(crate) careful: u32,
    pub(crate) done_work: f64,
    pub(crate) power: f64,
    /// Newton iterations and factorizations so far.
    pub(crate) iterations: u64,
    pub(crate) factorizations: u64,
    /// Work vectors of a step's Newton iteration, kept between steps.
    pub(crate) buffers: StepBuffers,
}

/// The vectors a step's Newton iteration writes at each iterate (kept in the run, so an
/// iteration allocates nothing).
#[derive(Debug, Default)]
pub(crate) struct StepBuffers {
    /// The iterate's position increment, velocity and acceleration.
    pub(crate) increment: Vec<f64>,
    pub(crate) velocity: Vec<f64>,
    pub(crate) acceleration: Vec<f64>,
    /// The bodies placed at the iterate.
    pub(crate) placed: Vec<crate::bodies::Placed>,
    /// Applied forces, then the residual of the equations of motion.
    pub(crate) forces: Vec<f64>,
    pub(crate) residual: Vec<f64>,
    /// The equations' residuals as held (less the compliant rows' terms).
    pub(crate) held: Vec<f64>,
    /// The KKT solve's right-hand sides, work vector and solution.
    pub(crate) top: Vec<f64>,
    pub(crate) bottom: Vec<f64>,
    pub(crate) rhs: Vec<f64>,
    pub(crate) x: Vec<f64>,
    pub(crate) y: Vec<f64>,
}

/// Everything a step reads.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The equations.
    pub problem: &'a Problem<'a>,
    /// Their rate tapes (over `tenon_solve::run_rows`).
    pub rates: &'a RateTape,
    /// Bodies and forces.
    pub dynamics: &'a Dynamics,
}

/// A coordinate's speed given at the start: `row . v = value` over the tangent velocity
/// (`(column, coefficient)` pairs), with the caller's `tag` to name it in an error.
#[derive(Debug, Clone, PartialEq)]
pub struct GivenRate {
    /// The coordinate's rate as a row over the tangent velocity.
    pub row: Vec<(usize, f64)>,
    /// Its value.
    pub value: f64,
    /// The caller's name for it (an index), returned in `RatesConflict`.
    pub tag: usize,
}

/// What the start velocities should be: the wished tangent velocity (`None`: at rest)
/// and coordinate rates that must hold.
#[derive(Debug, Clone, Copy, Default)]
pub struct StartVelocities<'a> {
    /// Wished tangent velocity, one per tangent column.
    pub wished: Option<&'a [f64]>,
    /// Rates that must hold exactly.
    pub rates: &'a [GivenRate],
}

impl Run {
    /// Starts a run at `time` from an assembled `state` (every equation held), with
    /// the wished tangent velocity of `velocity` projected in the kinetic-energy norm
    /// onto the velocities that satisfy every equation and its given rates; the
    /// accelerations and multipliers at the start from one KKT solve. Returns the run
    /// and what was found at the start.
    pub fn new(
        inputs: Inputs<'_>,
        (state, mut params): (Vec<f64>, Vec<f64>),
        velocity: StartVelocities<'_>,
        time: f64,
        settings: Settings,
    ) -> Result<(Run, Vec<Event>), DynamicsError> {
        let system = inputs.problem.system;
        system.check_lengths(&state, &params)?;
        check_settings(&settings)?;
        if !system.extra_unknowns().is_empty() {
            return Err(DynamicsError::Unsupported(
                "dynamics does not handle joints with contact parameters (cam, curve \
                 contact, angle joints' azimuth) yet"
                    .into(),
            ));
        }
        if inputs.dynamics.bodies().len() != system.free_parts().len() {
            return Err(DynamicsError::BadInput(format!(
                "{} bodies for {} free parts",
                inputs.dynamics.bodies().len(),
                system.free_parts().len()
            )));
        }
        set_time(system, &mut params, time);
        let rows = tenon_solve::run_rows(system);
        let motions: Vec<usize> = rows
            .iter()
            .enumerate()
            .filter(|(_, &r)| {
                matches!(
                    system.equations().get(r).map(|e| e.owner),
                    Some(Owner::Motion(_))
                )
            })
            .map(|(k, _)| k)
            .collect();
        let dimension = system.tangent_dimension();
        let evaluator = system.row_evaluator(inputs.problem.compiled, &rows);
        let mut run = Run {
            settings,
            rows,
            active: Vec::new(),
            rigid: Vec::new(),
            soft: Vec::new(),
            factored_h: f64::NAN,
            motions,
            extent: 0.0,
            weights: weights(system),
            work: inputs.rates.work(),
            evaluator,
            scratch: Scratch::new(),
            state,
            params,
            velocity: vec![0.0; dimension],
            acceleration: vec![0.0; dimension],
            pseudo: vec![0.0; dimension],
            multipliers: Vec::new(),
            last_step: None,
            step_before: None,
            time,
            max_residual: 0.0,
            kkt: Kkt::default(),
            kkt_valid: false,
            careful: 0,
            done_work: 0.0,
            power: 0.0,
            iterations: 0,
            factorizations: 0,
            buffers: StepBuffers::default(),
        };
        run.multipliers = vec![0.0; run.rows.len()];
        run.soft = run
            .rows
            .iter()
            .map(|&e| inputs.dynamics.compliance_of(e))
            .collect();
        run.extent = run
            .weights
            .iter()
            .chain(&run.state)
            .fold(1.0f64, |m, x| m.max(x.abs()));
        let events = start::start(&mut run, inputs, velocity)?;
        Ok((run, events))
    }

    /// The equations held (indices into `System::equations`), in multiplier order.
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }

    /// The current frame.
    pub fn frame(&self, inputs: Inputs<'_>) -> Frame {
        let placed = inputs.dynamics.placed(&self.state);
        let mut energy = inputs.dynamics.energy(&placed, &self.state, &self.velocity);
        energy.work = self.done_work;
        // A compliant equation stores `C^2 / (2 compliance) = compliance lambda^2 / 2`.
        energy.spring += self
            .soft
            .iter()
            .zip(&self.multipliers)
            .map(|(a, l)| 0.5 * a * l * l)
            .sum::<f64>();
        Frame {
            time: self.time,
            state: self.state.clone(),
            velocity: self.velocity.clone(),
            acceleration: self.acceleration.clone(),
            multipliers: self.multipliers.clone(),
            max_residual: self.max_residual,
            energy,
            effort: (self.iterations, self.factorizations),
        }
    }

    /// Steps to `time` (after the current one; a step of `time - current`, halved where
    /// Newton does not converge) and returns what happened ([`frame`](Self::frame) is
    /// the state reached). A run that cannot go on stays at its last state and returns a
    /// `NotSolved` event.
    pub fn step_to(&mut self, inputs: Inputs<'_>, time: f64) -> Result<Vec<Event>, DynamicsError> {
        let mut events = Vec::new();
        let h = time - self.time;
        if h.is_nan() || h <= 0.0 {
            return Ok(events);
        }
        // Substeps of h / 2^depth, halving where one fails and growing back after two
        // successes.
        let mut depth = 0u32;
        let mut successes = 0u32;
        let mut refined = false;
        while self.time < time {
            let remaining = time - self.time;
            let substep = (h / f64::from(1u32 << depth)).min(remaining);
            // The last substep ends exactly at `time` (no sliver of a step from rounding).
            let target = if remaining - substep <= 1e-6 * substep {
                time
            } else {
                self.time + substep
            };
            let ok = match self.settings.method {
                // The extrapolating predictor first, away from recent failures; where
                // Newton does not converge from it, the last step's values.
                Method::GeneralizedAlpha => {
                    let extrapolate = self.careful == 0 && self.last_step.is_some();
                    (extrapolate && self.alpha_step(inputs, target, Predictor::Extrapolated)?)
                        || self.alpha_step(inputs, target, Predictor::Held)?
                }
                Method::Baumgarte => self.baumgarte_step(inputs, target)?,
            };
            if ok {
                self.careful = self.careful.saturating_sub(1);
                successes += 1;
                if successes >= 2 && depth > 0 {
                    depth -= 1;
                    successes = 0;
                }
                continue;
            }
            successes = 0;
            self.careful = CAREFUL_STEPS;
            if depth >= self.settings.max_halvings {
                events.push(Event {
                    time: target,
                    kind: EventKind::NotSolved,
                    equations: Vec::new(),
                    message: format!(
                        "the step to t = {target} did not converge even at {:.3e}: the run \
                         stops at t = {}",
                        substep, self.time
                    ),
                });
                return Ok(events);
            }
            depth += 1;
            refined = true;
        }
        if refined {
            events.push(Event {
                time,
                kind: EventKind::StepRefined,
                equations: Vec::new(),
                message: format!(
                    "Newton did not converge at the step {h:.3e}; the step was halved to \
                     reach t = {time}"
                ),
            });
        }
        Ok(events)
    }

    /// Generalized forces on the parts at `state` with `velocity` (applied less the
    /// inertial terms), and the power of loads and dampers.
    pub(crate) fn forces(
        inputs: Inputs<'_>,
        placed: &[crate::bodies::Placed],
        state: &[f64],
        velocity: &[f64],
        dimension: usize,
    ) -> (Vec<f64>, f64) {
        let mut f = Vec::new();
        let power = Run::forces_into(inputs, placed, (state, velocity), dimension, &mut f);
        (f, power)
    }

    /// [`Run::forces`] written into `f` (resized to `dimension`); returns the power.
    pub(crate) fn forces_into(
        inputs: Inputs<'_>,
        placed: &[crate::bodies::Placed],
        (state, velocity): (&[f64], &[f64]),
        dimension: usize,
        f: &mut Vec<f64>,
    ) -> f64 {
        f.clear();
        f.resize(dimension, 0.0);
        let power = inputs.dynamics.applied(placed, state, velocity, f);
        for (k, p) in placed.iter().enumerate() {
            let w = |i: usize| velocity.get(6 * k + 3 + i).copied().unwrap_or(0.0);
            let h = p.inertial_terms(&Vector3::new(w(0), w(1), w(2)));
            for (c, x) in h.iter().enumerate() {
                if let Some(slot) = f.get_mut(6 * k + c) {
                    *slot -= x;
                }
            }
        }
        power
    }

    /// Writes into `(state, params)` the pose reached from the current one by the tangent
    /// step `increment`, at `time` (turn counters kept continuous).
    pub(crate) fn moved(
        &self,
        inputs: Inputs<'_>,
        increment: &[f64],
        time: f64,
        (state, params): (&mut [f64], &mut [f64]),
    ) -> Result<(), DynamicsError> {
        let problem = inputs.problem;
        state.copy_from_slice(&self.state);
        params.copy_from_slice(&self.params);
        set_time(problem.system, params, time);
        problem.system.retract(state, increment)?;
        problem
            .system
            .update_turns(problem.compiled, &self.state, state, params)?;
        Ok(())
    }

    /// Makes a solved step current: its pose, rates, multipliers and residual; then the
    /// power of loads, dampers and drives there, and the work over the step by the
    /// trapezoidal rule.
    pub(crate) fn accept(&mut self, inputs: Inputs<'_>, step: Step) -> Result<(), DynamicsError> {
        let h = step.time - self.time;
        self.state = step.state;
        self.params = step.params;
        self.velocity = step.velocity;
        let before = std::mem::replace(&mut self.acceleration, step.acceleration);
        let before_multipliers = std::mem::take(&mut self.multipliers);
        let last = Some((h, before, before_multipliers));
        self.step_before = std::mem::replace(&mut self.last_step, last);
        self.pseudo = step.pseudo;
        self.multipliers = step.multipliers;
        self.max_residual = step.max_residual;
        self.time = step.time;
        let n = self.velocity.len();
        let placed = inputs.dynamics.placed(&self.state);
        let (_, power) = Run::forces(inputs, &placed, &self.state, &self.velocity, n);
        let power = power + self.drive_power(inputs)?;
        self.done_work += 0.5 * h * (self.power + power);
        self.power = power;
        Ok(())
    }

    /// The power the drives (motions) deliver at the current state and multipliers.
    pub(crate) fn drive_power(&mut self, inputs: Inputs<'_>) -> Result<f64, DynamicsError> {
        if self.motions.is_empty() {
            return Ok(0.0);
        }
        // The constraint force of a motion row is -J_k^T lambda_k; its power is
        // -lambda_k J_k v = lambda_k C_t,k = -lambda_k (velocity right-hand side)_k.
        let rhs = inputs
            .rates
            .velocity_rhs(&mut self.work, (&self.state, &self.params))?;
        Ok(self
            .motions
            .iter()
            .map(|&k| -self.multipliers[k] * rhs.get(k).copied().unwrap_or(0.0))
            .sum())
    }
}

/// A solved step, to be made current by [`Run::accept`].
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) time: f64,
    pub(crate) state: Vec<f64>,
    pub(crate) params: Vec<f64>,
    pub(crate) velocity: Vec<f64>,
    pub(crate) acceleration: Vec<f64>,
    /// Generalized-alpha's acceleration-like variable (the acceleration for Baumgarte).
    pub(crate) pseudo: Vec<f64>,
    pub(crate) multipliers: Vec<f64>,
    pub(crate) max_residual: f64,
}

/// Sets the time parameter.
pub(crate) fn set_time(system: &System, params: &mut [f64], time: f64) {
    if let Some(t) = params.get_mut(system.time().index()) {
        *t = time;
    }
}

fn check_settings(s: &Settings) -> Result<(), DynamicsError> {
    if !(0.0..=1.0).contains(&s.rho_inf) {
        return Err(DynamicsError::BadInput(format!(
            "rho_inf must be from 0 to 1, is {}",
            s.rho_inf
        )));
    }
    if !(s.tolerance.is_finite() && s.tolerance > 0.0) {
        return Err(DynamicsError::BadInput(format!(
            "the tolerance must be positive, is {}",
            s.tolerance
        )));
    }
    let (a, b) = s.baumgarte;
    if !(a.is_finite() && b.is_finite() && a >= 0.0 && b >= 0.0) {
        return Err(DynamicsError::BadInput(format!(
            "Baumgarte's alpha and beta must be 0 or more, are {a} and {b}"
        )));
    }
    Ok(())
}

/// Weight of each tangent column for measuring corrections: a part's size for its
/// rotation columns (a rotation moves its markers by about size times the angle), 1 for
/// translations.
fn weights(system: &System) -> Vec<f64> {
    let sizes = system.part_sizes();
    let layout = system.layout();
    (0..layout.dimension())
        .map(|col| match layout.column(col) {
            Some(tenon_system::TangentColumn::Rotation { part, .. }) => {
                sizes.get(part).copied().unwrap_or(1.0)
            }
            _ => 1.0,
        })
        .collect()
}

/// `J x`, one value per row of `jac`.
pub(crate) fn times(jac: &TangentJacobian, x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; jac.rows];
    for &(r, c, v) in &jac.entries {
        if let (Some(slot), Some(&xc)) = (out.get_mut(r as usize), x.get(c as usize)) {
            *slot += v * xc;
        }
    }
    out
}

/// The mass matrix times `x` (block by block).
pub(crate) fn mass_times(placed: &[crate::bodies::Placed], x: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    mass_times_into(placed, x, &mut out);
    out
}

/// [`mass_times`] written into `out` (resized to `x`'s length).
pub(crate) fn mass_times_into(placed: &[crate::bodies::Placed], x: &[f64], out: &mut Vec<f64>) {
    // Written block by block (no zeroing first); columns past the bodies' are zero.
    out.clear();
    for (p, x) in placed.iter().zip(x.chunks_exact(6)) {
        let product = p.mass_times(&Vector6::from_column_slice(x));
        out.extend_from_slice(product.as_slice());
    }
    out.resize(x.len(), 0.0);
}

/// Largest absolute value.
pub(crate) fn largest(x: &[f64]) -> f64 {
    x.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

impl Run {
    /// The constraint force `-sum J_k^T lambda_k` on the parts of each group of equations
    /// (positions in [`rows`](Self::rows)) at the current state, as `(tangent column,
    /// value)` terms to be summed (6 columns per free part: force, then torque about the
    /// part origin; a group touches only its joint's parts, so a dense vector per group
    /// would be quadratic in the parts). Where rows are
    /// dependent (redundant joints) the multipliers are not unique: the split used is
    /// the minimum-norm one (up to [`SPLIT_ROWS`] rows; above, the solve's own, with
    /// dependent rows at zero).
    pub fn constraint_forces(
        &mut self,
        inputs: Inputs<'_>,
        groups: &[Vec<usize>],
    ) -> Result<Vec<Vec<(u32, f64)>>, DynamicsError> {
        let problem = inputs.problem;
        // The run's own evaluator (its rows are `self.rows`); the next step evaluates
        // its Jacobian afresh at its first iterate.
        self.evaluator.evaluate(
            problem.compiled,
            &mut self.scratch,
            &self.state,
            &self.params,
        )?;
        let jac = self.evaluator.jacobian();
        let mut group_of = vec![usize::MAX; self.rows.len()];
        for (g, members) in groups.iter().enumerate() {
            for &k in members {
                if let Some(slot) = group_of.get_mut(k) {
                    *slot = g;
                }
            }
        }
        let multipliers = if self.active.len() < self.rows.len() && self.rows.len() <= SPLIT_ROWS {
            minimum_norm(jac, &self.multipliers, &self.soft)
        } else {
            self.multipliers.clone()
        };
        let mut out: Vec<Vec<(u32, f64)>> = vec![Vec::new(); groups.len()];
        for &(r, c, v) in &jac.entries {
            let r = r as usize;
            let Some(&g) = group_of.get(r) else { continue };
            if let (Some(force), Some(&l)) = (out.get_mut(g), multipliers.get(r)) {
                force.push((c, -v * l));
            }
        }
        Ok(out)
    }

    /// This run restarted at its current time from `state` with `params` (every
    /// equation held there; a host changed a dimension, a mass or a force between
    /// frames): the velocities kept as far as the equations now allow (projected in the
    /// kinetic-energy norm, as at a start), accelerations and multipliers anew from one
    /// KKT solve; the work done and the effort so far carried over. Returns the new run
    /// and what its start found.
    pub fn restart(
        &self,
        inputs: Inputs<'_>,
        (state, params): (Vec<f64>, Vec<f64>),
    ) -> Result<(Run, Vec<Event>), DynamicsError> {
        let (mut run, events) = Run::new(
            inputs,
            (state, params),
            StartVelocities {
                wished: Some(&self.velocity),
                rates: &[],
            },
            self.time,
            self.settings,
        )?;
        run.done_work = self.done_work;
        run.iterations += self.iterations;
        run.factorizations += self.factorizations;
        Ok((run, events))
    }

    /// Current parameter values (time among them).
    pub fn params(&self) -> &[f64] {
        &self.params
    }

    /// Current time.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Current state.
    pub fn state(&self) -> &[f64] {
        &self.state
    }
}

/// The multipliers of least norm giving the same constraint force as `lambda`: the
/// projection of `lambda` onto the range of `J` (the forces `J^T lambda` do not see the
/// rest, the null space of `J^T`), `J y` with `y` the least-squares solution of `J y =
/// lambda`: `(J^T J + e I) y = J^T lambda` by Cholesky, `e` [`SPLIT_REGULARIZATION`] of
/// the largest diagonal (a mechanism's freedoms make `J^T J` singular; along them `J y`
/// does not change), refined twice. Compliant rows (`soft` above 0) keep their
/// multipliers (a spring's force is its own); the rigid rows' are split. (Gram-Schmidt
/// over `J`'s columns gave the same split to 3e-15 on A02 and took four times as long.)
fn minimum_norm(jac: &TangentJacobian, lambda: &[f64], soft: &[f64]) -> Vec<f64> {
    let (m, n) = (jac.rows, jac.columns);
    let is_soft = |r: usize| soft.get(r).is_some_and(|&a| a > 0.0);
    let rigid_entries: Vec<(usize, usize, f64)> = jac
        .entries
        .iter()
        .filter(|e| (e.0 as usize) < m && (e.1 as usize) < n && !is_soft(e.0 as usize))
        .map(|&(r, c, v)| (r as usize, c as usize, v))
        .collect();
    let mut out: Vec<f64> = (0..m)
        .map(|r| match (is_soft(r), lambda.get(r)) {
            (true, Some(&l)) => l,
            _ => 0.0,
        })
        .collect();
    let rigid: Vec<f64> = (0..m)
        .map(|r| match (is_soft(r), lambda.get(r)) {
            (false, Some(&l)) => l,
            _ => 0.0,
        })
        .collect();
    // J^T J from each row's entries (a row reads a joint's two parts), the entries
    // sorted by row so each row's are together.
    let mut by_row = rigid_entries.clone();
    by_row.sort_by_key(|e| e.0);
    let mut normal = nalgebra::DMatrix::<f64>::zeros(n, n);
    for row in by_row.chunk_by(|a, b| a.0 == b.0) {
        for &(_, a, va) in row {
            for &(_, b, vb) in row {
                normal[(a, b)] += va * vb;
            }
        }
    }
    let largest = (0..n).map(|k| normal[(k, k)]).fold(0.0f64, f64::max);
    if largest == 0.0 {
        return out;
    }
    for k in 0..n {
        normal[(k, k)] += SPLIT_REGULARIZATION * largest;
    }
    let Some(cholesky) = nalgebra::Cholesky::new(normal) else {
        return lambda.to_vec();
    };
    let transpose_times = |x: &[f64]| {
        let mut t = nalgebra::DVector::<f64>::zeros(n);
        for &(r, c, v) in &rigid_entries {
            t[c] += v * x[r];
        }
        t
    };
    let times = |y: &nalgebra::DVector<f64>| {
        let mut t = vec![0.0; m];
        for &(r, c, v) in &rigid_entries {
            t[r] += v * y[c];
        }
        t
    };
    let mut y = cholesky.solve(&transpose_times(&rigid));
    for _ in 0..2 {
        let left: Vec<f64> = rigid.iter().zip(times(&y)).map(|(l, j)| l - j).collect();
        y += cholesky.solve(&transpose_times(&left));
    }
    for (o, j) in out.iter_mut().zip(times(&y)) {
        *o += j;
    }
    out
}
