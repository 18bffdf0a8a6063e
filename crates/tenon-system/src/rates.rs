//! The right-hand sides of the velocity and acceleration equations of a kinematic run,
//! built from the same residual expressions as the solve and compiled once.
//!
//! With `C(q, t) = 0` the equations (joints and motions) and `v` the tangent velocity (per
//! free part `(dp/dt, omega)`, `omega` world-frame; per extra unknown its rate), so that
//! `dC/dt = J v + C_t` with `J` the tangent Jacobian of the solve:
//!
//! - velocities solve `J v = -C_t`;
//! - accelerations solve `J a = -gamma`, `gamma = D^2 C [qdot, qdot] + 2 D C_t [qdot] +
//!   C_tt`, where `qdot(q, v)` is the rate of the state along `v` (`dp/dt = v_p`,
//!   `dq/dt = 1/2 [0, omega] q`) and `D` the directional derivative over the state with
//!   `v` held fixed. Differentiating `qdot` itself along `qdot` gives
//!   `d2q/dt2 = 1/4 [0, omega] [0, omega] q`, the exponential map's own second-order
//!   term: `gamma` is exactly `d2C/dt2` along `q(t) = exp(t omega) q` with `a = 0`, so
//!   no term of the rotation group is left out.
//! - The joints read a free part's orientation through its rotation matrix `R(q)`, whose
//!   rate along that path is `[omega]x R` (at a unit quaternion, as every evaluated
//!   state is). That is given to the graph as the matrix entries' derivative, so the
//!   derivatives stop there: `D R = [omega]x R`, `D^2 R = [omega]x [omega]x R`, where
//!   the chain rule through the quaternion's polynomials built 2.7 times the
//!   acceleration tape (a link of a driven chain, revolute and motion: 496 operations,
//!   now 186).
//!
//! All of it is symbolic (time is a parameter differentiated like an unknown); the
//! velocity components are parameters of the tape, set per evaluation. No finite
//! differences anywhere.

use rustc_hash::FxHashMap;
use tenon_expr::{DirectionId, ExprId, ParamId, Tape, TapeOutput, TapeWorkspace, VarId};

use crate::build::System;
use crate::error::SystemError;
use crate::tangent::{STATE_PER_PART, TANGENT_PER_PART};

/// The compiled right-hand sides of some equations' velocity and acceleration
/// conditions (see the module documentation). Made by [`System::rates`].
#[derive(Debug, Clone)]
pub struct RateTape {
    /// `-C_t` (no velocity needed).
    velocity_tape: Tape,
    /// `-gamma`.
    acceleration_tape: Tape,
    /// `d/dt (J^T mu)` along the velocity, per tangent column, for multipliers `mu` (one
    /// per row); made by [`System::add_multiplier_rates`].
    multiplier_tape: Option<Tape>,
    rows: usize,
    /// The parameters holding the tangent velocity, in tangent column order.
    velocity: Vec<ParamId>,
    /// The parameters holding the multipliers, one per row (empty until
    /// [`System::add_multiplier_rates`]).
    multipliers: Vec<ParamId>,
    /// The equations' residuals, one per row.
    residuals: Vec<ExprId>,
    /// Their residuals and tangent Jacobian in one tape, where made (see
    /// [`RateTape::set_tangent`]).
    tangent: Option<crate::TangentTape>,
    /// The system's parameter count: velocities follow it in the tape's parameters.
    base_params: usize,
    /// The state's rate along the velocity (per unknown, expressions in the velocity
    /// parameters), registered in the graph.
    direction: DirectionId,
}

/// Scratch for evaluating a [`RateTape`]: the extended parameters and the outputs.
#[derive(Debug, Clone)]
pub struct RateWork {
    velocity_ws: TapeWorkspace,
    acceleration_ws: TapeWorkspace,
    params: Vec<f64>,
    velocity_rhs: TapeOutput,
    acceleration_rhs: TapeOutput,
    multiplier_ws: Option<TapeWorkspace>,
    multiplier_rates: Vec<f64>,
    tangent_ws: Option<crate::TangentWork>,
}

impl System {
    /// Compiles the velocity and acceleration right-hand sides of equations `rows`
    /// (indices into [`equations`](Self::equations)).
    pub fn rates(&mut self, rows: &[usize]) -> Result<RateTape, SystemError> {
        let residuals = self.residuals_of_rows(rows)?;
        let base_params = self.params.len();
        let layout = self.layout();
        let velocity: Vec<ParamId> = (0..layout.dimension())
            .map(|k| self.graph.new_param(format!("velocity#{k}")))
            .collect();
        let g = &mut self.graph;
        // The state's rate along the tangent velocity, per unknown.
        let mut rate: FxHashMap<VarId, ExprId> = FxHashMap::default();
        for (k, part) in self.free_parts.iter().enumerate() {
            let v: Vec<ExprId> = (0..TANGENT_PER_PART)
                .map(|c| g.param(velocity[TANGENT_PER_PART * k + c]))
                .collect();
            for (&var, &rate_of) in part.vars.iter().zip(&v).take(3) {
                rate.insert(var, rate_of);
            }
            let q: Vec<ExprId> = part.vars[3..STATE_PER_PART]
                .iter()
                .map(|&x| g.var(x))
                .collect();
            let (w, x, y, z) = (q[0], q[1], q[2], q[3]);
            let (a, b, c) = (v[3], v[4], v[5]);
            // dq/dt = 1/2 [0, omega] q, row by row (the derivative of exp(t omega) q).
            let half_dot = |g: &mut tenon_expr::ExprGraph, terms: [(f64, ExprId, ExprId); 3]| {
                let products: Vec<ExprId> = terms
                    .iter()
                    .map(|&(s, p, o)| {
                        let m = g.mul(p, o);
                        g.scale(m, 0.5 * s)
                    })
                    .collect();
                g.sum(&products)
            };
            let dw = half_dot(g, [(-1.0, x, a), (-1.0, y, b), (-1.0, z, c)]);
            let dx = half_dot(g, [(1.0, w, a), (1.0, z, b), (-1.0, y, c)]);
            let dy = half_dot(g, [(-1.0, z, a), (1.0, w, b), (1.0, x, c)]);
            let dz = half_dot(g, [(1.0, y, a), (-1.0, x, b), (1.0, w, c)]);
            for (var, d) in part.vars[3..STATE_PER_PART].iter().zip([dw, dx, dy, dz]) {
                rate.insert(*var, d);
            }
        }
        let first_extra = TANGENT_PER_PART * self.free_parts.len();
        for (k, e) in self.extra.iter().enumerate() {
            let p = g.param(velocity[first_extra + k]);
            rate.insert(e.var, p);
        }
        let time = self.time;
        // The direction of the motion in the state: forward derivatives along it (one
        // derivative node per node, shared between rows).
        let mut components: Vec<(VarId, ExprId)> = rate.iter().map(|(&v, &e)| (v, e)).collect();
        components.sort_unstable_by_key(|&(v, _)| v);
        let direction = g.new_direction(&components);
        // Each free part's rotation changes along the velocity as `dR/dt = [omega]x R`
        // (exactly, at a unit quaternion): given so, the derivatives stop at the
        // matrix's nodes instead of going through its quaternion polynomials, and the
        // second derivative is `[omega]x [omega]x R` by the same rules.
        for (k, rotation) in self.rotations.iter().enumerate() {
            let at = TANGENT_PER_PART * k + 3;
            let w: Vec<ExprId> = velocity[at..at + 3].iter().map(|&p| g.param(p)).collect();
            for (i, row) in rotation.iter().enumerate() {
                for (j, &entry) in row.iter().enumerate() {
                    // Row i of [omega]x R: omega_(i+1) R_(i+2) - omega_(i+2) R_(i+1).
                    let (b, c) = ((i + 1) % 3, (i + 2) % 3);
                    let first = g.mul(w[b], rotation[c][j]);
                    let second = g.mul(w[c], rotation[b][j]);
                    let rate = g.sub(first, second);
                    g.set_derivative_along(entry, direction, rate);
                }
            }
        }
        let along = |g: &mut tenon_expr::ExprGraph, e: ExprId| g.derivative_along(e, direction);
        let mut velocity_rhs = Vec::with_capacity(rows.len());
        let mut acceleration_rhs = Vec::with_capacity(rows.len());
        // Most rows (the joints') do not read the time: their time derivatives are 0
        // without differentiating them (a derivative by a parameter walks the whole
        // expression).
        let timed = g.depends_on_param(&residuals, time);
        for (&c, timed) in residuals.iter().zip(timed) {
            let c_dot = along(g, c);
            let c_ddot = along(g, c_dot);
            let (c_t, gamma) = if timed {
                let c_t = g.derivative_param(c, time);
                let c_tq = along(g, c_t);
                let c_tt = g.derivative_param(c_t, time);
                let twice = g.scale(c_tq, 2.0);
                (c_t, g.sum(&[c_ddot, twice, c_tt]))
            } else {
                (g.zero(), c_ddot)
            };
            velocity_rhs.push(g.neg(c_t));
            acceleration_rhs.push(g.neg(gamma));
        }
        // One shape per joint form, compiled once and instanced (like the residuals').
        let groups = crate::cluster::owner_groups(self, rows, rows.len());
        let g = &mut self.graph;
        let velocity_tape = g.compile_by_shape(&velocity_rhs, &groups, &[])?;
        let acceleration_tape = g.compile_by_shape(&acceleration_rhs, &groups, &[])?;
        Ok(RateTape {
            velocity_tape,
            acceleration_tape,
            multiplier_tape: None,
            tangent: None,
            rows: rows.len(),
            velocity,
            multipliers: Vec::new(),
            residuals,
            base_params,
            direction,
        })
    }

    /// Adds to `tape` the rate of the transposed tangent Jacobian applied to multipliers
    /// `mu` (one per row, held fixed): per tangent column `c`, `d/dt (J_T^T mu)_c` along
    /// the velocity, with `(J_T^T mu)` = `sum_k mu_k dC_k/dp` for a part's position,
    /// `G(q)^T sum_k mu_k dC_k/dq` for its rotation and `sum_k mu_k dC_k/de` for an extra
    /// unknown; the time derivative is the directional one of the module documentation
    /// plus the explicit one in `t`. A run needs it where some freedom is driven by no
    /// motion: the least-norm velocities `v = M^-1 J^T mu` then change along those
    /// freedoms by the projection of `M^-1 (dJ/dt)^T mu` (see `tenon-solve`'s
    /// kinematics).
    pub fn add_multiplier_rates(&mut self, tape: &mut RateTape) -> Result<(), SystemError> {
        let multipliers: Vec<ParamId> = (0..tape.rows)
            .map(|k| self.graph.new_param(format!("multiplier#{k}")))
            .collect();
        let g = &mut self.graph;
        // Per unknown, the terms mu_k dC_k/dx.
        let mut terms: FxHashMap<VarId, Vec<ExprId>> = FxHashMap::default();
        for (&c, &mu) in tape.residuals.iter().zip(&multipliers) {
            let mu = g.param(mu);
            for x in g.vars_of(c) {
                let d = g.derivative(c, x);
                let term = g.mul(mu, d);
                terms.entry(x).or_default().push(term);
            }
        }
        let gradient_of = |g: &mut tenon_expr::ExprGraph, x: VarId| match terms.get(&x) {
            Some(t) => g.sum(t),
            None => g.constant(0.0),
        };
        let mut columns = Vec::with_capacity(tape.velocity.len());
        for part in &self.free_parts {
            for &x in &part.vars[..3] {
                columns.push(gradient_of(g, x));
            }
            let q: Vec<ExprId> = part.vars[3..STATE_PER_PART]
                .iter()
                .map(|&x| g.var(x))
                .collect();
            let dq: Vec<ExprId> = part.vars[3..STATE_PER_PART]
                .iter()
                .map(|&x| gradient_of(g, x))
                .collect();
            let (w, x, y, z) = (q[0], q[1], q[2], q[3]);
            // G(q)^T dq, G = 1/2 [-x -y -z; w z -y; -z w x; y -x w] (rows w, x, y, z).
            let g_columns = [
                [(-1.0, x), (1.0, w), (-1.0, z), (1.0, y)],
                [(-1.0, y), (1.0, z), (1.0, w), (-1.0, x)],
                [(-1.0, z), (-1.0, y), (1.0, x), (1.0, w)],
            ];
            for column in g_columns {
                let products: Vec<ExprId> = column
                    .iter()
                    .zip(&dq)
                    .map(|(&(s, qi), &d)| {
                        let m = g.mul(qi, d);
                        g.scale(m, 0.5 * s)
                    })
                    .collect();
                columns.push(g.sum(&products));
            }
        }
        for e in &self.extra {
            columns.push(gradient_of(g, e.var));
        }
        let time = self.time;
        let mut outputs = Vec::with_capacity(columns.len());
        for column in columns {
            let along = g.derivative_along(column, tape.direction);
            let explicit = g.derivative_param(column, time);
            outputs.push(g.add(along, explicit));
        }
        tape.multiplier_tape = Some(g.compile_grouped(&outputs, &[])?);
        tape.multipliers = multipliers;
        Ok(())
    }
}

impl RateTape {
    /// Scratch sized for this tape.
    pub fn work(&self) -> RateWork {
        RateWork {
            velocity_ws: self.velocity_tape.workspace(),
            acceleration_ws: self.acceleration_tape.workspace(),
            params: Vec::new(),
            velocity_rhs: self.velocity_tape.output(),
            acceleration_rhs: self.acceleration_tape.output(),
            multiplier_ws: self.multiplier_tape.as_ref().map(Tape::workspace),
            multiplier_rates: vec![0.0; self.velocity.len()],
            tangent_ws: None,
        }
    }

    /// Keeps `tangent` (made by [`System::tangent_tape`] over the same rows) for
    /// [`evaluate_tangent`](Self::evaluate_tangent); refused (false) where its rows are
    /// not as many as this tape's.
    pub fn set_tangent(&mut self, tangent: crate::TangentTape) -> bool {
        if tangent.shape().0 != self.rows {
            return false;
        }
        self.tangent = Some(tangent);
        true
    }

    /// Evaluates the rows' residuals and tangent Jacobian into `evaluator` (made over
    /// the same rows) from the tangent tape (see [`RowEvaluator::evaluate_tangent`]);
    /// false, with nothing evaluated, where there is none.
    ///
    /// [`RowEvaluator::evaluate_tangent`]: crate::RowEvaluator::evaluate_tangent
    pub fn evaluate_tangent(
        &self,
        work: &mut RateWork,
        evaluator: &mut crate::RowEvaluator,
        (state, params): (&[f64], &[f64]),
    ) -> Result<bool, SystemError> {
        let Some(tape) = self.tangent.as_ref() else {
            return Ok(false);
        };
        let ws = work.tangent_ws.get_or_insert_with(|| tape.work());
        evaluator.evaluate_tangent(tape, ws, (state, params))?;
        Ok(true)
    }

    /// Whether [`multiplier_rates`](Self::multiplier_rates) is available.
    pub fn has_multiplier_rates(&self) -> bool {
        self.multiplier_tape.is_some()
    }

    /// `d/dt (J_T^T mu)` per tangent column (see [`System::add_multiplier_rates`]) at
    /// `state` and `params` with the tangent velocity `velocity` and one multiplier per
    /// row; `None` if the tape was not made.
    pub fn multiplier_rates<'w>(
        &self,
        work: &'w mut RateWork,
        (state, params): (&[f64], &[f64]),
        velocity: &[f64],
        multipliers: &[f64],
    ) -> Result<Option<&'w [f64]>, SystemError> {
        let (Some(tape), Some(ws)) = (self.multiplier_tape.as_ref(), work.multiplier_ws.as_mut())
        else {
            return Ok(None);
        };
        if multipliers.len() != self.multipliers.len() {
            return Err(SystemError::WrongLength {
                what: "multipliers",
                expected: self.multipliers.len(),
                actual: multipliers.len(),
            });
        }
        self.set_params(&mut work.params, params, velocity)?;
        let needed = self
            .multipliers
            .iter()
            .map(|p| p.index() + 1)
            .max()
            .unwrap_or(0);
        if work.params.len() < needed {
            work.params.resize(needed, 0.0);
        }
        for (p, &m) in self.multipliers.iter().zip(multipliers) {
            if let Some(slot) = work.params.get_mut(p.index()) {
                *slot = m;
            }
        }
        work.multiplier_rates.resize(self.velocity.len(), 0.0);
        tape.eval_residuals(ws, state, &work.params, &mut work.multiplier_rates)?;
        Ok(Some(&work.multiplier_rates))
    }

    /// The velocity right-hand side `-C_t` at `state` and `params` (the system's, time
    /// set), one value per row.
    pub fn velocity_rhs<'w>(
        &self,
        work: &'w mut RateWork,
        (state, params): (&[f64], &[f64]),
    ) -> Result<&'w [f64], SystemError> {
        // The velocity tape reads no velocity: the system's parameters are set, the
        // velocities' places left as they are.
        if work.params.len() < self.params_len() || params.len() != self.base_params {
            let zero = vec![0.0; self.velocity.len()];
            self.set_params(&mut work.params, params, &zero)?;
        } else {
            work.params[..params.len()].copy_from_slice(params);
        }
        self.velocity_tape.evaluate_residuals(
            &mut work.velocity_ws,
            state,
            &work.params,
            &mut work.velocity_rhs,
        )?;
        Ok(work.velocity_rhs.residuals())
    }

    /// The acceleration right-hand side `-gamma` at `state` and `params` with the
    /// tangent velocity `velocity`, one value per row.
    pub fn acceleration_rhs<'w>(
        &self,
        work: &'w mut RateWork,
        (state, params): (&[f64], &[f64]),
        velocity: &[f64],
    ) -> Result<&'w [f64], SystemError> {
        self.set_params(&mut work.params, params, velocity)?;
        self.acceleration_tape.evaluate_residuals(
            &mut work.acceleration_ws,
            state,
            &work.params,
            &mut work.acceleration_rhs,
        )?;
        Ok(work.acceleration_rhs.residuals())
    }

    /// The length of the tapes' parameters (see [`RateTape::set_params`]).
    fn params_len(&self) -> usize {
        self.velocity
            .iter()
            .map(|p| p.index() + 1)
            .max()
            .unwrap_or(0)
            .max(self.base_params)
    }

    /// The tapes' parameters: the system's, then the velocity.
    fn set_params(
        &self,
        out: &mut Vec<f64>,
        params: &[f64],
        velocity: &[f64],
    ) -> Result<(), SystemError> {
        if params.len() != self.base_params || velocity.len() != self.velocity.len() {
            return Err(SystemError::WrongLength {
                what: "parameters and velocities",
                expected: self.base_params + self.velocity.len(),
                actual: params.len() + velocity.len(),
            });
        }
        out.clear();
        out.extend_from_slice(params);
        let needed = self
            .velocity
            .iter()
            .map(|p| p.index() + 1)
            .max()
            .unwrap_or(0)
            .max(params.len());
        out.resize(needed, 0.0);
        for (p, &v) in self.velocity.iter().zip(velocity) {
            if let Some(slot) = out.get_mut(p.index()) {
                *slot = v;
            }
        }
        Ok(())
    }
}
