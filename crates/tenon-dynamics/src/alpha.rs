//! Index-3 generalized-alpha on the rotation group (Chung-Hulbert's scheme as Arnold and
//! Bruls put it on Lie groups), in the solver's tangent coordinates.
//!
//! With `rho` the spectral radius at infinite frequency: `alpha_m = (2 rho - 1) / (rho +
//! 1)`, `alpha_f = rho / (rho + 1)`, `gamma = 1/2 + alpha_f - alpha_m`, `beta = (gamma +
//! 1/2)^2 / 4`. A step from `t_n` to `t_n + h`, unknowns the acceleration-like `abar`
//! and the multipliers:
//!
//! ```text
//! q_{n+1} = exp(h v_n + h^2 (1/2 - beta) abar_n + h^2 beta abar_{n+1}) q_n
//! v_{n+1} = v_n + h (1 - gamma) abar_n + h gamma abar_{n+1}
//! (1 - alpha_m) abar_{n+1} + alpha_m abar_n = (1 - alpha_f) a_{n+1} + alpha_f a_n
//! M(q) a + h(q, v) - Q(q, v, t) + J^T lambda = 0,   C(q_{n+1}, t_{n+1}) = 0
//! ```
//!
//! (`exp` per part: translation added, rotation vector applied on the left, as the
//! static solver retracts). Newton on `(abar_{n+1}, lambda)`: a correction `dx` of the
//! position increment moves `abar` by `dx / (h^2 beta)`, `a` by `beta' dx` with `beta' =
//! (1 - alpha_m) / (h^2 beta (1 - alpha_f))`, and the iteration matrix, with `y = beta'
//! dx`, is the KKT matrix `[M J^T; J 0]` itself (right-hand side `[-r; -beta' C]`),
//! independent of `h`: it is factored once and kept while steps converge with it,
//! refactored at the current pose when one converges slowly. The springs' stiffness and
//! damping enter its mass block as `K / beta' + gamma / (h beta beta') C` (so it depends
//! on `h` when there are springs); the rest of the forces' derivatives are left out
//! (modified Newton: the residuals are exact, so the answer is too).

use crate::error::DynamicsError;
use crate::run::{largest, mass_times_into, Inputs, Run, Step, StepBuffers};

/// The scheme's coefficients.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Coefficients {
    pub(crate) alpha_m: f64,
    pub(crate) alpha_f: f64,
    pub(crate) gamma: f64,
    pub(crate) beta: f64,
}

impl Coefficients {
    pub(crate) fn new(rho: f64) -> Coefficients {
        let alpha_m = (2.0 * rho - 1.0) / (rho + 1.0);
        let alpha_f = rho / (rho + 1.0);
        let gamma = 0.5 + alpha_f - alpha_m;
        Coefficients {
            alpha_m,
            alpha_f,
            gamma,
            beta: 0.25 * (gamma + 0.5) * (gamma + 0.5),
        }
    }
}

/// Corrections smaller than this fraction of the model's extent (in all, since the last
/// Jacobian) leave the Jacobian as it was: the residuals alone are evaluated. (At 1e-11
/// A02's Richardson-extrapolated B0 at t = 10 s was 1.8e-7 off the reference, at 1e-9
/// 2.2e-7, at 1e-8 1.2e-6: past the 1e-6 asked. 1e-9 saves a 100-link chain 5% of its
/// instructions.)
pub(crate) const JACOBIAN_KEPT: f64 = 1e-9;

impl Coefficients {
    /// From the step's start (`v_n`, `abar_n`, `a_n`) and a value of `abar_{n+1}`: the
    /// position increment, `v_{n+1}` and `a_{n+1}`.
    fn rates(
        &self,
        h: f64,
        start: (&[f64], &[f64], &[f64]),
        next: &[f64],
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        self.rates_into(h, start, next, (&mut out.0, &mut out.1, &mut out.2));
        out
    }

    /// [`Coefficients::rates`] written into `(increment, velocity, acceleration)`.
    fn rates_into(
        &self,
        h: f64,
        (v, abar, a): (&[f64], &[f64], &[f64]),
        next: &[f64],
        (increment, velocity, acceleration): (&mut Vec<f64>, &mut Vec<f64>, &mut Vec<f64>),
    ) {
        let c = self;
        increment.clear();
        increment.extend(
            (0..next.len())
                .map(|k| h * v[k] + h * h * ((0.5 - c.beta) * abar[k] + c.beta * next[k])),
        );
        velocity.clear();
        velocity.extend(
            (0..next.len()).map(|k| v[k] + h * ((1.0 - c.gamma) * abar[k] + c.gamma * next[k])),
        );
        acceleration.clear();
        acceleration.extend((0..next.len()).map(|k| {
            ((1.0 - c.alpha_m) * next[k] + c.alpha_m * abar[k] - c.alpha_f * a[k])
                / (1.0 - c.alpha_f)
        }));
    }
}

/// `now` (the values at the current time) replaced by their extrapolation to the end of
/// the next step `h`, from the values `before` one step `last_h` earlier and, if at
/// hand, `older` (`(step, values)`: one step before that): the parabola through the
/// three, else the line through two. Lists of another length are left alone.
///
/// On A02 at h = 1e-3 a step's first correction falls from about 4e-2 (acceleration
/// units, the last step's values held) to 1e-4 with the line, and the run takes 14%
/// fewer instructions; the parabola takes 13% off that (the four-bar's accelerations
/// are smooth between its singular positions). On a 100-link pendulum chain, 8% in all.
fn extrapolated(
    now: &mut [f64],
    (h, last_h): (f64, f64),
    before: &[f64],
    older: Option<(f64, &[f64])>,
) {
    if before.len() != now.len() || !(h > 0.0 && last_h > 0.0) {
        return;
    }
    match older {
        Some((h2, older)) if older.len() == now.len() && h2 > 0.0 => {
            // Lagrange weights at t = h of the nodes 0, -last_h, -last_h - h2.
            let h1 = last_h;
            let w0 = (h + h1) * (h + h1 + h2) / (h1 * (h1 + h2));
            let w1 = -h * (h + h1 + h2) / (h1 * h2);
            let w2 = h * (h + h1) / ((h1 + h2) * h2);
            for ((x, b), c) in now.iter_mut().zip(before).zip(older) {
                *x = w0 * *x + w1 * b + w2 * c;
            }
        }
        _ => {
            let ratio = h / last_h;
            for (x, b) in now.iter_mut().zip(before) {
                *x += ratio * (*x - b);
            }
        }
    }
}

/// How a step's Newton iteration starts (see [`Run::alpha_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Predictor {
    /// The last step's acceleration and multipliers.
    Held,
    /// Both extrapolated through the last steps where that is safe (see
    /// `extrapolated`).
    Extrapolated,
}

/// The multipliers are extrapolated only while a step changes them by less than this
/// fraction of their size.
const TURN: f64 = 0.05;

/// A correction that shrinks by less than this factor has the iteration matrix refreshed.
/// (0.05 refactored a 100-link chain's 1,100-row KKT matrix at three steps in four; at
/// 0.1 its run takes 6% fewer instructions, A02's 0.5% more, and at 0.2 both more.)
const SLOW: f64 = 0.1;
/// A step has converged when its last correction of the accelerations is below this
/// fraction of their scale (the largest acceleration or gravity, rotations times the
/// part's size) and the equations hold to the run's tolerance. Its effect on the
/// positions, `h^2 beta` times it per step, stays far below the scheme's own error
/// (measured on A02: B0 at t = 10 s moved by 2e-9 from 1e-10, the error being 3e-5; the
/// Richardson-extrapolated B0 at 10 s is 2.1e-7 off the reference at 1e-8 as at 1e-10).
/// From 1e-10 to 1e-8 a 100-link chain's run takes 7% fewer instructions.
pub(crate) const ACCELERATION_TOLERANCE: f64 = 1e-8;
/// Corrections of the positions below this many units in the last place of the model's
/// extent are rounding noise: a step whose correction is that small has converged.
pub(crate) const ROUNDING: f64 = 64.0;
/// A correction that stalls (a fresh iteration matrix no longer halves it) below this
/// fraction of the accelerations' scale is the rounding of an ill-conditioned matrix
/// (near a singular position): the step has converged as far as it can.
pub(crate) const STALLED: f64 = 1e-5;

impl Run {
    /// Whether the last step changed the multipliers by less than [`TURN`] of their size
    /// (scaled to a step `h`) and its factorization found no row nearly dependent: away
    /// from singular positions, where the multipliers turn sharply and extrapolating
    /// them started Newton badly (A02 stopped at its singular position at h <= 2.5e-4
    /// when they were extrapolated everywhere).
    fn changes_smoothly(&self, h: f64) -> bool {
        let Some((last_h, _, before)) = &self.last_step else {
            return false;
        };
        let lambda = &self.multipliers;
        let size = lambda.iter().fold(0.0f64, |m, l| m.max(l.abs()));
        let turn = lambda
            .iter()
            .zip(before)
            .fold(0.0f64, |m, (l, b)| m.max((l - b).abs()));
        before.len() == lambda.len()
            && turn * h / last_h <= TURN * size
            && !self.kkt.left_rows_out()
    }

    /// One step to `target`; `Ok(false)` (the run unchanged) when Newton does not
    /// converge.
    pub(crate) fn alpha_step(
        &mut self,
        inputs: Inputs<'_>,
        target: f64,
        predictor: Predictor,
    ) -> Result<bool, DynamicsError> {
        let mut buffers = std::mem::take(&mut self.buffers);
        let done = self.alpha_step_with(inputs, target, predictor, &mut buffers);
        self.buffers = buffers;
        done
    }

    /// [`Run::alpha_step`] with the iteration's work vectors `b`.
    fn alpha_step_with(
        &mut self,
        inputs: Inputs<'_>,
        target: f64,
        predictor: Predictor,
        b: &mut StepBuffers,
    ) -> Result<bool, DynamicsError> {
        let problem = inputs.problem;
        let n = self.velocity.len();
        let h = target - self.time;
        let c = Coefficients::new(self.settings.rho_inf);
        let beta_prime = (1.0 - c.alpha_m) / (h * h * c.beta * (1.0 - c.alpha_f));
        // Compliant rows: `C - a lambda = 0`, their term `beta' a` in the matrix
        // (refactored when the step changes).
        let compliant = self.soft.iter().any(|&a| a > 0.0);
        if compliant && self.factored_h != h {
            self.kkt_valid = false;
        }
        let soft_terms: Vec<f64> = if compliant {
            self.soft.iter().map(|a| beta_prime * a).collect()
        } else {
            Vec::new()
        };
        // Predictor: the acceleration and the multipliers of the last step, or, with
        // `Predictor::Extrapolated` while the multipliers change smoothly and no row is
        // nearly dependent, both extrapolated from the last steps (see `extrapolated`).
        let mut lambda = self.multipliers.clone();
        let mut predicted = self.acceleration.clone();
        if predictor == Predictor::Extrapolated && self.changes_smoothly(h) {
            if let Some((last_h, before, before_l)) = &self.last_step {
                let older = self
                    .step_before
                    .as_ref()
                    .map(|(h2, a, l)| (*h2, &a[..], &l[..]));
                extrapolated(
                    &mut predicted,
                    (h, *last_h),
                    before,
                    older.map(|o| (o.0, o.1)),
                );
                extrapolated(
                    &mut lambda,
                    (h, *last_h),
                    before_l,
                    older.map(|o| (o.0, o.2)),
                );
            }
        }
        let mut pseudo: Vec<f64> = (0..n)
            .map(|k| {
                let forward = (1.0 - c.alpha_f) * predicted[k] + c.alpha_f * self.acceleration[k];
                (forward - c.alpha_m * self.pseudo[k]) / (1.0 - c.alpha_m)
            })
            .collect();
        let mut params = self.params.clone();
        let mut state = self.state.clone();
        let mut fresh = false;
        if self.kkt.refactor_each_step() {
            self.kkt_valid = false;
        }
        let mut last_correction = f64::INFINITY;
        // The pose's change since the Jacobian was last evaluated (infinite: evaluate).
        let mut moved_since_jacobian = f64::INFINITY;
        for _ in 0..self.settings.max_iterations {
            // The pose, velocity and acceleration of this iterate.
            c.rates_into(
                h,
                (&self.velocity, &self.pseudo, &self.acceleration),
                &pseudo,
                (&mut b.increment, &mut b.velocity, &mut b.acceleration),
            );
            let (velocity, accel) = (&b.velocity, &b.acceleration);
            self.moved(inputs, &b.increment, target, (&mut state, &mut params))?;
            // Once the corrections have moved the pose by less than JACOBIAN_KEPT of
            // its extent since the Jacobian was evaluated, the residuals alone are
            // evaluated and `J^T lambda` uses that Jacobian: the force error that leaves
            // is far below the scheme's own error (see the constant).
            if moved_since_jacobian <= JACOBIAN_KEPT * self.extent && self.kkt_valid {
                self.evaluator.evaluate_residuals(
                    problem.compiled,
                    &mut self.scratch,
                    &state,
                    &params,
                )?;
            } else {
                // The Jacobian itself is formed only for a factorization; `J^T lambda`
                // reads the tapes' partial derivatives.
                self.evaluator.evaluate_unfolded(
                    problem.compiled,
                    &mut self.scratch,
                    &state,
                    &params,
                )?;
                moved_since_jacobian = 0.0;
            }
            // The equations as held: `C - a lambda` (just `C` on rigid rows).
            b.held.clear();
            if compliant {
                b.held.extend(
                    self.evaluator
                        .residuals()
                        .iter()
                        .zip(&self.soft)
                        .zip(&lambda)
                        .map(|((c, a), l)| c - a * l),
                );
            } else {
                b.held.extend_from_slice(self.evaluator.residuals());
            }
            let residuals = &b.held;
            inputs.dynamics.placed_into(&state, &mut b.placed);
            let placed = &b.placed;
            // r = M a - f + J^T lambda.
            Run::forces_into(inputs, placed, (&state, velocity), n, &mut b.forces);
            let r = &mut b.residual;
            mass_times_into(placed, accel, r);
            for (x, fx) in r.iter_mut().zip(&b.forces) {
                *x -= fx;
            }
            self.evaluator.add_transposed(problem.compiled, &lambda, r);
            if !r.iter().chain(residuals.iter()).all(|x| x.is_finite()) {
                return Ok(false);
            }
            self.iterations += 1;
            if !self.kkt_valid {
                self.factorizations += 1;
                // With y = beta' dx: the velocities move by gamma / (h beta beta') y,
                // the positions by y / beta'.
                let mut springs = Vec::new();
                inputs.dynamics.spring_tangent(
                    &state,
                    velocity,
                    (1.0 / beta_prime, c.gamma / (h * c.beta * beta_prime)),
                    &mut springs,
                );
                self.evaluator.fold(problem.compiled);
                self.kkt_valid = self.kkt.factor(
                    (placed, &springs),
                    n,
                    self.evaluator.jacobian(),
                    (&self.active, &self.weights, &soft_terms),
                    self.careful > 0,
                );
                self.factored_h = h;
                fresh = true;
                if !self.kkt_valid {
                    return Ok(false);
                }
            }
            b.top.clear();
            b.top.extend(b.residual.iter().map(|x| -x));
            b.bottom.clear();
            b.bottom.extend(
                self.active
                    .iter()
                    .map(|&k| -beta_prime * residuals.get(k).copied().unwrap_or(0.0)),
            );
            if !self
                .kkt
                .solve_into(&b.top, &b.bottom, &mut b.rhs, (&mut b.x, &mut b.y))
            {
                if fresh {
                    return Ok(false);
                }
                self.kkt_valid = false;
                continue;
            }
            let (y, dl) = (&b.x, &b.y);
            // The correction in acceleration units (y = beta' dx), weighed against the
            // accelerations' own scale: a position tolerance alone would let the
            // accelerations carry beta' times it, which grows as 1 / h^2.
            let correction = y
                .iter()
                .zip(&self.weights)
                .map(|(d, w)| (d * w).abs())
                .fold(0.0f64, f64::max);
            let scale = accel
                .iter()
                .zip(&self.weights)
                .map(|(a, w)| (a * w).abs())
                .fold(inputs.dynamics.gravity_scale(), f64::max);
            for (p, d) in pseudo.iter_mut().zip(y) {
                *p += d / beta_prime / (h * h * c.beta);
            }
            moved_since_jacobian += correction / beta_prime;
            for (&k, d) in self.active.iter().zip(dl) {
                if let Some(l) = lambda.get_mut(k) {
                    *l += d;
                }
            }
            let held = largest(residuals);
            // Below the rounding of the positions (which the constraint rows multiply by
            // beta', as 1 / h^2), a correction is noise.
            // (Accepting by the error left, estimated from the corrections' contraction
            // rate, saved a third of the iterations but let errors through near singular
            // positions: A02's B0 off by 6e-4 at h = 1.25e-4. The correction itself is
            // the test.)
            let settled = correction <= ACCELERATION_TOLERANCE * scale
                || correction / beta_prime <= ROUNDING * f64::EPSILON * self.extent;
            // Near a singular position (the Jacobian losing rank) the KKT matrix is
            // ill-conditioned and the corrections stall at its rounding level: with a
            // fresh matrix, the equations held and a correction that no longer shrinks
            // but is small, the iterate is as good as this matrix can make it.
            let stalled =
                fresh && correction > 0.5 * last_correction && correction <= STALLED * scale;
            if (settled || stalled) && held <= self.settings.tolerance {
                self.finish(inputs, (state, params), (&pseudo, lambda), h, &c)?;
                return Ok(true);
            }
            if correction > SLOW * last_correction && !fresh {
                // Converging slowly with an old matrix: refactor at this iterate.
                self.kkt_valid = false;
            }
            last_correction = correction;
        }
        // Not converged: the next attempt starts with a fresh matrix.
        self.kkt_valid = false;
        Ok(false)
    }

    /// Makes the converged iterate current: the pose from the final `abar`, its
    /// velocities, accelerations, multipliers and residual.
    fn finish(
        &mut self,
        inputs: Inputs<'_>,
        (mut state, mut params): (Vec<f64>, Vec<f64>),
        (pseudo, lambda): (&[f64], Vec<f64>),
        h: f64,
        c: &Coefficients,
    ) -> Result<(), DynamicsError> {
        let compiled = inputs.problem.compiled;
        let target = self.time + h;
        let (increment, velocity, acceleration) = c.rates(
            h,
            (&self.velocity, &self.pseudo, &self.acceleration),
            pseudo,
        );
        self.moved(inputs, &increment, target, (&mut state, &mut params))?;
        self.evaluator
            .evaluate_residuals(compiled, &mut self.scratch, &state, &params)?;
        let max_residual = self
            .evaluator
            .residuals()
            .iter()
            .zip(&self.soft)
            .zip(&lambda)
            .map(|((c, a), l)| (c - a * l).abs())
            .fold(0.0f64, f64::max);
        self.accept(
            inputs,
            Step {
                time: target,
                state,
                params,
                velocity,
                acceleration,
                pseudo: pseudo.to_vec(),
                multipliers: lambda,
                max_residual,
            },
        )
    }
}
