//! Index-1 mode with Baumgarte stabilisation (the seeds' form), for comparison and for
//! users who know it: at each evaluation the accelerations and multipliers solve
//!
//! ```text
//! M a + J^T lambda = f,    J a = -gamma - 2 alpha C' - beta^2 C
//! ```
//!
//! with `-gamma` the kinematic run's full right-hand side (including `-(dJ/dt) v`, so a
//! conical pendulum's tension is `m g / cos(theta)`), `C' = J v + C_t` and `C` the
//! residuals. The state is integrated by the classical Runge-Kutta 4 on the manifold:
//! each stage's pose is `exp(h c_i k) q_n` (per part: translation added, rotation vector
//! on the left), the step `exp(h / 6 (k1 + 2 k2 + 2 k3 + k4)) q_n`. That is fourth order
//! for rotations about a fixed axis (planar mechanisms) and second order in general
//! (no `dexp` correction); generalized-alpha is the accurate method.
//!
//! A compliant equation (compliance `a`) is a regularised row of the same system: its
//! force is that of its spring at the pose the step `h` predicts, `a lambda = C + h C'
//! + h^2 C''`, that is
//!
//! ```text
//! J a - (a / h^2) lambda = -gamma - (C + h C') / h^2
//! ```
//!
//! (the seeds' soft constraint: softness `a / h^2` added to `J M^-1 J^T`). It is stable
//! at any stiffness; against the exact spring it adds the mass `h^2 / a` and the damping
//! `h / a` (a damping ratio of `h omega / 2` at the spring's frequency `omega`), so its
//! frequency is right to `(h omega)^2 / 2`.

use tenon_system::TangentJacobian;

use crate::error::DynamicsError;
use crate::run::{times, Inputs, Run, Step};
use crate::start::{pick, solve_refined, spread};

/// Accelerations, multipliers and the largest residual at a state.
type Rates = (Vec<f64>, Vec<f64>, f64);

/// A Runge-Kutta stage: its velocity and acceleration.
type Stage = (Vec<f64>, Vec<f64>);

impl Run {
    /// The accelerations and multipliers at `(state, params)` with `velocity`; `None`
    /// where the KKT matrix cannot be factored.
    fn baumgarte_rates(
        &mut self,
        inputs: Inputs<'_>,
        (state, params): (&[f64], &[f64]),
        velocity: &[f64],
        h: f64,
    ) -> Result<Option<Rates>, DynamicsError> {
        let problem = inputs.problem;
        let n = velocity.len();
        self.evaluator
            .evaluate(problem.compiled, &mut self.scratch, state, params)?;
        let residuals = self.evaluator.residuals().to_vec();
        let jac: TangentJacobian = self.evaluator.jacobian().clone();
        let placed = inputs.dynamics.placed(state);
        // The rows solved: the independent rigid ones and the compliant ones.
        let soft_terms: Vec<f64> = self.soft.iter().map(|a| a / (h * h)).collect();
        self.kkt_valid = self.kkt.factor(
            (&placed, &[]),
            n,
            &jac,
            (&self.active, &self.weights, &soft_terms),
            self.careful > 0,
        );
        if !self.kkt_valid {
            return Ok(None);
        }
        let kkt = &self.kkt;
        let (f, _) = Run::forces(inputs, &placed, state, velocity, n);
        let c_t: Vec<f64> = inputs
            .rates
            .velocity_rhs(&mut self.work, (state, params))?
            .iter()
            .map(|x| -x)
            .collect();
        let gamma = inputs
            .rates
            .acceleration_rhs(&mut self.work, (state, params), velocity)?
            .to_vec();
        let jv = times(&jac, velocity);
        let (alpha, beta) = self.settings.baumgarte;
        let rhs: Vec<f64> = (0..self.rows.len())
            .map(|k| {
                let rate = jv[k] + c_t[k];
                if self.soft[k] > 0.0 {
                    gamma[k] - (residuals[k] + h * rate) / (h * h)
                } else {
                    gamma[k] - 2.0 * alpha * rate - beta * beta * residuals[k]
                }
            })
            .collect();
        let Some((a, y)) = solve_refined(
            kkt,
            (&placed, &jac, &self.active, &soft_terms),
            &f,
            &pick(&rhs, &self.active),
        ) else {
            return Ok(None);
        };
        let lambda = spread(&y, &self.active, self.rows.len());
        // The rigid rows' residuals (a compliant row stretches as its spring does).
        let held = residuals
            .iter()
            .zip(&self.soft)
            .filter(|(_, &a)| a == 0.0)
            .fold(0.0f64, |m, (c, _)| m.max(c.abs()));
        Ok(Some((a, lambda, held)))
    }

    /// One Runge-Kutta 4 step to `target`; `Ok(false)` (the run unchanged) when an
    /// evaluation fails.
    pub(crate) fn baumgarte_step(
        &mut self,
        inputs: Inputs<'_>,
        target: f64,
    ) -> Result<bool, DynamicsError> {
        let n = self.velocity.len();
        let h = target - self.time;
        let v0 = self.velocity.clone();
        // With compliant rows the rates depend on the step: the first stage's anew.
        let a0 = if self.soft.iter().any(|&a| a > 0.0) {
            let (state, params) = (self.state.clone(), self.params.clone());
            let Some((a, _, _)) = self.baumgarte_rates(inputs, (&state, &params), &v0, h)? else {
                return Ok(false);
            };
            a
        } else {
            self.acceleration.clone()
        };
        let mut ks: Vec<Stage> = vec![(v0.clone(), a0)];
        for (fraction, from) in [(0.5, 0usize), (0.5, 1), (1.0, 2)] {
            let (kv, ka) = &ks[from];
            let increment: Vec<f64> = kv.iter().map(|x| x * h * fraction).collect();
            let velocity: Vec<f64> = (0..n).map(|k| v0[k] + h * fraction * ka[k]).collect();
            let mut state = self.state.clone();
            let mut params = self.params.clone();
            self.moved(
                inputs,
                &increment,
                self.time + h * fraction,
                (&mut state, &mut params),
            )?;
            let Some((a, _, _)) = self.baumgarte_rates(inputs, (&state, &params), &velocity, h)?
            else {
                return Ok(false);
            };
            ks.push((velocity, a));
        }
        let combine = |pick: &dyn Fn(&Stage) -> &Vec<f64>| -> Vec<f64> {
            (0..n)
                .map(|k| {
                    (pick(&ks[0])[k]
                        + 2.0 * pick(&ks[1])[k]
                        + 2.0 * pick(&ks[2])[k]
                        + pick(&ks[3])[k])
                        / 6.0
                })
                .collect()
        };
        let mean_velocity = combine(&|k| &k.0);
        let mean_accel = combine(&|k| &k.1);
        let increment: Vec<f64> = mean_velocity.iter().map(|x| x * h).collect();
        let velocity: Vec<f64> = (0..n).map(|k| v0[k] + h * mean_accel[k]).collect();
        let mut state = self.state.clone();
        let mut params = self.params.clone();
        self.moved(inputs, &increment, target, (&mut state, &mut params))?;
        let Some((a, lambda, held)) =
            self.baumgarte_rates(inputs, (&state, &params), &velocity, h)?
        else {
            return Ok(false);
        };
        if !a.iter().chain(&velocity).all(|x| x.is_finite()) {
            return Ok(false);
        }
        self.accept(
            inputs,
            Step {
                time: target,
                state,
                params,
                velocity,
                acceleration: a.clone(),
                pseudo: a,
                multipliers: lambda,
                max_residual: held,
            },
        )?;
        Ok(true)
    }
}
