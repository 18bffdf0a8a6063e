//! Correcting a predicted frame: chord steps with the last frame's Jacobian, or Newton
//! steps with a fresh one (see the module above for when each is used).

use super::rates::{filled, refined};
use super::{KinematicRun, MAX_CHORD_STEPS, MAX_NEWTON_STEPS, MAX_REFINEMENTS};
use crate::{Problem, SolveError};
use tenon_system::{RateTape, TurnCache};

impl KinematicRun {
    /// Evaluates the residuals and the tangent Jacobian at `state`: from the tangent
    /// tape where the run has one, else from the cluster tapes, folded.
    pub(super) fn evaluate_full(
        &mut self,
        (problem, rates): (&Problem<'_>, &RateTape),
        state: &[f64],
        params: &[f64],
    ) -> Result<(), SolveError> {
        if !rates.evaluate_tangent(&mut self.work, &mut self.evaluator, (state, params))? {
            self.evaluator
                .evaluate(problem.compiled, &mut self.scratch, state, params)?;
        }
        Ok(())
    }

    /// Whether residuals `r` (of the run's rows) are all within their tolerances.
    fn holds(&self, r: &[f64]) -> bool {
        r.iter()
            .zip(&self.row_tolerance)
            .all(|(x, t)| x.abs() <= *t)
    }

    /// Corrects a predicted state by chord steps with the last frame's Jacobian (its
    /// matrix is still filled, or its blocks factored): `x <- x - J^+ r`, up to
    /// [`MAX_CHORD_STEPS`], each to be at least four times smaller than the one before.
    /// Returns the largest residual when they converge, and whether the evaluator holds
    /// the Jacobian at the final state; else puts the prediction back and returns `None`.
    ///
    /// The evaluation the last frame's chord ended on is made a full one (residuals and
    /// Jacobian, formed once converged): a run's frames mostly take the same number of
    /// steps, and the rates then reuse it rather than evaluate the same state again.
    pub(super) fn chord(
        &mut self,
        (problem, rates): (&Problem<'_>, &RateTape),
        state: &mut [f64],
        params: &mut [f64],
    ) -> Result<Option<(f64, bool)>, SolveError> {
        // A square Jacobian factored block by block at the last frame: exact chord steps
        // (the solution is unique, so unweighted); else the regularised normal equations.
        let blocks = match (self.block_factors.as_ref(), self.block_plan.get()) {
            (Some(factors), Some(Some(plan))) => Some((factors, plan)),
            _ => None,
        };
        // A small run's independent rows factored at the last frame: exact chord steps
        // likewise (see `reduced`).
        let reduced = self.reduced.as_ref().filter(|r| r.current());
        let steps = match (blocks.is_some() || reduced.is_some(), self.matrix.as_ref()) {
            (true, _) => None,
            (false, Some(matrix)) => Some(
                match self.factor.take().and_then(|f| matrix.steps_with(f)) {
                    Some(steps) => steps,
                    None => matrix.factor()?.regularized(0.0, 1e-6)?,
                },
            ),
            (false, None) => return Ok(None),
        };
        // The prediction, to put back if the steps do not converge (in memory kept from
        // frame to frame).
        let mut predicted = std::mem::take(&mut self.undo);
        predicted.0.clear();
        predicted.0.extend_from_slice(state);
        predicted.1.clear();
        predicted.1.extend_from_slice(params);
        let mut last = f64::INFINITY;
        let mut converged = None;
        for k in 0..MAX_CHORD_STEPS {
            let full = k + 1 == self.chord_evaluations;
            if full {
                // From the tangent tape where the run has one (formed as it is
                // evaluated), else unfolded (formed once converged).
                if !rates.evaluate_tangent(&mut self.work, &mut self.evaluator, (state, params))? {
                    self.evaluator.evaluate_unfolded(
                        problem.compiled,
                        &mut self.scratch,
                        state,
                        params,
                    )?;
                }
            } else {
                self.evaluator.evaluate_residuals(
                    problem.compiled,
                    &mut self.scratch,
                    state,
                    params,
                )?;
            }
            let r = self.evaluator.residuals();
            let largest = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            if !largest.is_finite() || largest > 0.25 * last {
                break;
            }
            if self.holds(r) {
                if full {
                    self.evaluator.fold(problem.compiled);
                }
                converged = Some((largest, full));
                self.chord_evaluations = k + 1;
                break;
            }
            last = largest;
            let delta: Vec<f64> = match (&steps, blocks, reduced) {
                (Some(steps), ..) => {
                    let dy = steps.solve(r);
                    dy.iter().zip(&self.weights).map(|(d, w)| -d / w).collect()
                }
                (None, Some((factors, plan)), _) => match factors.solve(plan, r) {
                    Some(dx) => dx.iter().map(|d| -d).collect(),
                    None => break,
                },
                (None, None, Some(reduced)) => match reduced.chord_step(r) {
                    Some(mut dx) => {
                        dx.iter_mut().for_each(|d| *d = -*d);
                        dx
                    }
                    None => break,
                },
                (None, None, None) => break,
            };
            move_by((problem, &mut self.turns), (state, params), &delta)?;
        }
        if let Some(steps) = steps {
            self.factor = Some(steps.into_factor());
        }
        if converged.is_none() {
            self.chord_evaluations = 0;
            state.copy_from_slice(&predicted.0);
            params.copy_from_slice(&predicted.1);
        }
        self.undo = predicted;
        Ok(converged)
    }

    /// Corrects a predicted state by Newton steps with a fresh Jacobian each (least
    /// change, as a solve steps), up to [`MAX_NEWTON_STEPS`], each residual at most a
    /// quarter of the one before. Returns the largest residual when they converge (the
    /// evaluator then holds the Jacobian at the final state, for the rates); else puts
    /// the prediction back.
    pub(super) fn newton(
        &mut self,
        (problem, rates): (&Problem<'_>, &RateTape),
        state: &mut [f64],
        params: &mut [f64],
    ) -> Result<Option<f64>, SolveError> {
        let predicted = (state.to_vec(), params.to_vec());
        let mut last = f64::INFINITY;
        for _ in 0..=MAX_NEWTON_STEPS {
            self.evaluate_full((problem, rates), state, params)?;
            let (r, jac) = (self.evaluator.residuals(), self.evaluator.jacobian());
            let largest = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            if !largest.is_finite() || largest > 0.25 * last {
                break;
            }
            if self.holds(r) {
                return Ok(Some(largest));
            }
            last = largest;
            let shape = (self.rows.len(), self.options.dense_columns);
            self.factor = None;
            let factored = filled(&mut self.matrix, shape, &self.weights, jac)?;
            let steps = factored.regularized(0.0, 1e-6)?;
            // The least-change step, refined like the rates.
            let x = refined(&steps, jac, &self.weights, (r, MAX_REFINEMENTS)).0;
            let delta: Vec<f64> = x.iter().map(|d| -d).collect();
            move_by((problem, &mut self.turns), (state, params), &delta)?;
        }
        state.copy_from_slice(&predicted.0);
        params.copy_from_slice(&predicted.1);
        Ok(None)
    }
}

/// Moves `state` by the tangent step `delta`, its turn counters (in `params`) kept
/// continuous.
/// The raw angles at the state moved to are kept in `turns` for the next move.
pub(super) fn move_by(
    (problem, turns): (&Problem<'_>, &mut TurnCache),
    (state, params): (&mut [f64], &mut [f64]),
    delta: &[f64],
) -> Result<(), SolveError> {
    problem
        .system
        .retract_counting_turns(problem.compiled, turns, (state, params), delta)?;
    Ok(())
}
