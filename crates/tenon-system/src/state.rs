//! The state of an assembly (values of the unknowns) and its tangent space: the
//! exponential-map update, the tangent Jacobian, and the turn counters.

use std::sync::Mutex;

use tenon_expr::{ExprId, Tape, TapeOutput, TapeWorkspace, VarId};
use tenon_model::quaternion_multiply;

use crate::build::System;
use crate::error::SystemError;

/// The whole system compiled once: all residuals and their Jacobian with respect to
/// every unknown, and the raw angles whose turns are counted.
#[derive(Debug, Clone)]
pub struct Compiled {
    tape: CachedTape,
    raw_angles: CachedTape,
    branches: CachedTape,
}

/// A tape with a spare workspace and output kept between evaluations, so a solve does
/// not allocate (and zero) the workspace's slot array at every call. Concurrent callers
/// that find the spare taken (or its lock poisoned) make their own.
struct CachedTape {
    tape: Tape,
    spare: Mutex<Option<(TapeWorkspace, TapeOutput)>>,
}

impl CachedTape {
    fn new(tape: Tape) -> Self {
        CachedTape {
            tape,
            spare: Mutex::new(None),
        }
    }

    /// Runs `f` with a workspace and output for this tape.
    fn with<R>(&self, f: impl FnOnce(&Tape, &mut TapeWorkspace, &mut TapeOutput) -> R) -> R {
        let spare = self.spare.try_lock().ok().and_then(|mut s| s.take());
        let (mut ws, mut out) =
            spare.unwrap_or_else(|| (self.tape.workspace(), self.tape.output()));
        let result = f(&self.tape, &mut ws, &mut out);
        if let Ok(mut s) = self.spare.try_lock() {
            *s = Some((ws, out));
        }
        result
    }
}

impl Clone for CachedTape {
    fn clone(&self) -> Self {
        CachedTape::new(self.tape.clone())
    }
}

impl std::fmt::Debug for CachedTape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.tape.fmt(f)
    }
}

/// A Jacobian in the tangent space, as `(row, column, value)` entries (a column may
/// appear more than once per row; entries add).
#[derive(Debug, Clone, PartialEq)]
pub struct TangentJacobian {
    /// Rows (equations).
    pub rows: usize,
    /// Columns (6 per free part: `dp`, then `dtheta`; then one per extra unknown).
    pub columns: usize,
    /// Entries.
    pub entries: Vec<(u32, u32, f64)>,
}

impl TangentJacobian {
    /// Row-major dense form.
    pub fn to_dense(&self) -> Vec<f64> {
        let mut m = vec![0.0; self.rows * self.columns];
        for &(r, c, v) in &self.entries {
            if let Some(x) = m.get_mut(r as usize * self.columns + c as usize) {
                *x += v;
            }
        }
        m
    }
}

/// Where a graph unknown lands in the tangent space.
#[derive(Clone, Copy)]
enum Slot {
    /// Tangent column directly (positions, extra unknowns).
    Direct(u32),
    /// Quaternion component `k` of free part `part`.
    Quaternion { part: u32, k: u8 },
}

impl System {
    /// Compiles all equations (once; evaluate many times).
    pub fn compile(&mut self) -> Result<Compiled, SystemError> {
        let outputs: Vec<ExprId> = self.equations.iter().map(|e| e.residual).collect();
        let mut columns: Vec<VarId> = self.free_parts.iter().flat_map(|p| p.vars).collect();
        columns.extend(self.extra.iter().map(|e| e.var));
        let tape = self.graph.compile(&outputs, &columns)?;
        let raws: Vec<ExprId> = self.turns.iter().map(|t| t.raw).collect();
        let raw_angles = self.graph.compile(&raws, &[])?;
        let indicators: Vec<ExprId> = self.branches.iter().map(|&(_, e)| e).collect();
        let branches = self.graph.compile(&indicators, &[])?;
        Ok(Compiled {
            tape: CachedTape::new(tape),
            raw_angles: CachedTape::new(raw_angles),
            branches: CachedTape::new(branches),
        })
    }

    /// Dimension of the tangent space: 6 per free part plus one per extra unknown.
    pub fn tangent_dimension(&self) -> usize {
        6 * self.free_parts.len() + self.extra.len()
    }

    fn slot(&self, column: usize) -> Slot {
        let n7 = 7 * self.free_parts.len();
        if column < n7 {
            let (part, k) = (column / 7, column % 7);
            if k < 3 {
                Slot::Direct((6 * part + k) as u32)
            } else {
                Slot::Quaternion {
                    part: part as u32,
                    k: (k - 3) as u8,
                }
            }
        } else {
            Slot::Direct((6 * self.free_parts.len() + column - n7) as u32)
        }
    }

    /// Residuals and the tangent-space Jacobian at `state`: `J_T = [J_p, J_q G(q)]`
    /// with `G(q) = 1/2 [-v^T; w I - [v]x]` for `q = (w, v)`, the derivative of
    /// `exp(dtheta) * q` at `dtheta = 0`.
    pub fn tangent_jacobian(
        &self,
        compiled: &Compiled,
        state: &[f64],
        params: &[f64],
    ) -> Result<(Vec<f64>, TangentJacobian), SystemError> {
        let all: Vec<usize> = (0..self.equations.len()).collect();
        self.tangent_jacobian_of_rows(compiled, state, params, &all)
    }

    /// [`tangent_jacobian`](Self::tangent_jacobian) for some equations only: their
    /// residuals, in the order given, and a Jacobian whose row `k` is equation
    /// `rows[k]` (rows out of range are left empty). The whole tape still runs; only
    /// the tangent entries of these rows are built.
    pub fn tangent_jacobian_of_rows(
        &self,
        compiled: &Compiled,
        state: &[f64],
        params: &[f64],
        rows: &[usize],
    ) -> Result<(Vec<f64>, TangentJacobian), SystemError> {
        compiled.tape.with(|tape, ws, out| {
            tape.evaluate(ws, state, params, out)?;
            let pattern = tape.pattern();
            let starts = pattern.row_starts();
            let values = out.jacobian();
            let mut entries = Vec::new();
            let mut residuals = Vec::with_capacity(rows.len());
            for (local, &row) in rows.iter().enumerate() {
                residuals.push(out.residuals().get(row).copied().unwrap_or(0.0));
                let first = starts.get(row).map_or(0, |&x| x as usize);
                for (offset, &col) in pattern.row(row).iter().enumerate() {
                    let value = values.get(first + offset).copied().unwrap_or(0.0);
                    match self.slot(col as usize) {
                        Slot::Direct(c) => entries.push((local as u32, c, value)),
                        Slot::Quaternion { part, k } => {
                            let vars = self.free_parts[part as usize].vars;
                            let q = [3, 4, 5, 6]
                                .map(|i| state.get(vars[i].index()).copied().unwrap_or(0.0));
                            let g = quaternion_tangent(q);
                            for (r, &gk) in g[k as usize].iter().enumerate() {
                                if gk != 0.0 {
                                    entries.push((
                                        local as u32,
                                        6 * part + 3 + r as u32,
                                        value * gk,
                                    ));
                                }
                            }
                        }
                    }
                }
            }
            Ok((
                residuals,
                TangentJacobian {
                    rows: rows.len(),
                    columns: self.tangent_dimension(),
                    entries,
                },
            ))
        })
    }

    /// Residuals only.
    pub fn residuals(
        &self,
        compiled: &Compiled,
        state: &[f64],
        params: &[f64],
    ) -> Result<Vec<f64>, SystemError> {
        compiled.tape.with(|tape, ws, out| {
            tape.evaluate_residuals(ws, state, params, out)?;
            Ok(out.residuals().to_vec())
        })
    }

    /// Applies a tangent step: `p += dp`, `q <- exp(dtheta) * q` (exact exponential map,
    /// renormalized), extra unknowns `+= d` and wrapped into `[0, 2 pi)`.
    pub fn retract(&self, state: &mut [f64], delta: &[f64]) {
        for (k, part) in self.free_parts.iter().enumerate() {
            let d = |i: usize| delta.get(6 * k + i).copied().unwrap_or(0.0);
            for (c, var) in part.vars[..3].iter().enumerate() {
                if let Some(x) = state.get_mut(var.index()) {
                    *x += d(c);
                }
            }
            let theta = [d(3), d(4), d(5)];
            let q = [3, 4, 5, 6].map(|i| state.get(part.vars[i].index()).copied().unwrap_or(0.0));
            let updated = quaternion_multiply(exp_map(theta), q);
            let n = updated.iter().map(|c| c * c).sum::<f64>().sqrt();
            for (i, &var) in part.vars[3..].iter().enumerate() {
                if let Some(x) = state.get_mut(var.index()) {
                    *x = updated[i] / n;
                }
            }
        }
        let base = 6 * self.free_parts.len();
        for (k, e) in self.extra.iter().enumerate() {
            if let Some(x) = state.get_mut(e.var.index()) {
                *x = (*x + delta.get(base + k).copied().unwrap_or(0.0))
                    .rem_euclid(2.0 * std::f64::consts::PI);
            }
        }
    }

    /// Joints that flipped between `before` and `after`: an aligned axis or a locked
    /// twist that went from its intended side (`z_i . z_j > 0`, `x_i . x_j > 0`) to the
    /// mirror one, which the joint's equations also allow. Each joint is listed once.
    pub fn flipped(
        &self,
        compiled: &Compiled,
        before: &[f64],
        after: &[f64],
        params: &[f64],
    ) -> Result<Vec<tenon_model::JointKey>, SystemError> {
        if self.branches.is_empty() {
            return Ok(Vec::new());
        }
        let (a, b) = compiled.branches.with(|tape, ws, out| {
            tape.evaluate_residuals(ws, before, params, out)?;
            let a = out.residuals().to_vec();
            tape.evaluate_residuals(ws, after, params, out)?;
            Ok::<_, SystemError>((a, out.residuals().to_vec()))
        })?;
        let mut flipped = Vec::new();
        for ((&(joint, _), &x), &y) in self.branches.iter().zip(&a).zip(&b) {
            // A flip leaves the intended branch (positive) for the mirror one; coming
            // back from the mirror side is a correction, and near zero the branch is
            // undecided.
            if x > 1e-6 && y < -1e-6 && !flipped.contains(&joint) {
                flipped.push(joint);
            }
        }
        Ok(flipped)
    }

    /// Keeps counted angles continuous from `old` to `new`: each turn counter moves by
    /// the whole turns its raw angle wrapped by (steps between calls must turn less than
    /// half a turn).
    pub fn update_turns(
        &self,
        compiled: &Compiled,
        old: &[f64],
        new: &[f64],
        params: &mut [f64],
    ) -> Result<(), SystemError> {
        if self.turns.is_empty() {
            return Ok(());
        }
        let (before, after) = compiled.raw_angles.with(|tape, ws, out| {
            tape.evaluate_residuals(ws, old, params, out)?;
            let before = out.residuals().to_vec();
            tape.evaluate_residuals(ws, new, params, out)?;
            Ok::<_, SystemError>((before, out.residuals().to_vec()))
        })?;
        let two_pi = 2.0 * std::f64::consts::PI;
        for ((t, &a), &b) in self.turns.iter().zip(&before).zip(&after) {
            let jump = ((a - b) / two_pi).round();
            if let Some(k) = params.get_mut(t.turns.index()) {
                *k += jump;
            }
        }
        Ok(())
    }
}

/// `exp` of a rotation vector as a unit quaternion.
pub(crate) fn exp_map(theta: [f64; 3]) -> [f64; 4] {
    let angle = (theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]).sqrt();
    if angle < 1e-12 {
        let q = [1.0, theta[0] / 2.0, theta[1] / 2.0, theta[2] / 2.0];
        let n = q.iter().map(|c| c * c).sum::<f64>().sqrt();
        return q.map(|c| c / n);
    }
    let (s, c) = (angle / 2.0).sin_cos();
    [
        c,
        s * theta[0] / angle,
        s * theta[1] / angle,
        s * theta[2] / angle,
    ]
}

/// `G(q)` rows: `dq_k / dtheta_r` for `q <- exp(dtheta) * q` at `dtheta = 0`.
fn quaternion_tangent(q: [f64; 4]) -> [[f64; 3]; 4] {
    let [w, x, y, z] = q;
    [
        [-x / 2.0, -y / 2.0, -z / 2.0],
        [w / 2.0, z / 2.0, -y / 2.0],
        [-z / 2.0, w / 2.0, x / 2.0],
        [y / 2.0, -x / 2.0, w / 2.0],
    ]
}
