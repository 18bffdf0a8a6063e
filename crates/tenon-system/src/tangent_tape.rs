//! Residuals and the tangent Jacobian of chosen equations in one values-only tape, the
//! rotation columns differentiated along the parts' own rotations.
//!
//! The cluster tapes differentiate with respect to the state (a part's quaternion
//! among it), and the tangent Jacobian is then folded from them (`J_q G(q)`, module
//! `fold`). Here each free part's rotation column `k` is the derivative along the
//! turn of that part about world axis `k`, which moves its rotation matrix as `dR =
//! [e_k]x R` (exactly, at a unit quaternion): given so to the graph (like the rate
//! tapes' `[omega]x R`), the derivative stops at the matrix, whose entries it only
//! moves about and negates, and nothing is folded. A joint's point `p + R m` then has
//! the rotation columns `e_k x (R m)`, read off the terms of its residual.
//!
//! A kinematic run evaluates its equations with their Jacobian at every frame, so it
//! compiles this tape once (at its first run) and forms the Jacobian from it.

use rustc_hash::FxHashMap;
use tenon_expr::{DirectionId, ExprId, Tape, TapeOutput, TapeWorkspace, VarId};

use crate::build::System;
use crate::error::SystemError;
use crate::tangent::{STATE_PER_PART, TANGENT_PER_PART};

/// Residuals and tangent Jacobian of some equations (see the module documentation).
/// Made by [`System::tangent_tape`].
#[derive(Debug, Clone)]
pub struct TangentTape {
    tape: Tape,
    rows: usize,
    columns: usize,
    /// Per row, its output.
    residual_at: Vec<u32>,
    /// The Jacobian's positions, and per position its output.
    positions: Vec<(u32, u32)>,
    entry_at: Vec<u32>,
}

/// Scratch for evaluating a [`TangentTape`] (see [`TangentTape::work`]).
#[derive(Debug, Clone)]
pub struct TangentWork {
    ws: TapeWorkspace,
    out: TapeOutput,
}

/// Which Jacobian entries a [`TangentTape`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TangentPattern {
    /// Every column of every part a row reads, zero or not: the pattern a fold of the
    /// cluster tapes gives. A sparse factorization's ordering follows the pattern, and
    /// the least-norm rates of a large run with undriven freedoms (the regularised
    /// normal equations, refined) were found sensitive to it: a 100-link chain with one
    /// motion left out had its velocities match its positions' differences to 5e-7
    /// with this pattern and to 5e-5 with the other.
    RowParts,
    /// The entries that are not identically zero (a revolute's point rows do not move
    /// along the turn about their own axis): fewer entries to place and solve, for
    /// square Jacobians solved block by block.
    Nonzero,
}

/// What an unknown is to the tangent columns.
#[derive(Clone, Copy)]
enum Unknown {
    /// Position component `axis` of free part `part`.
    Position { part: usize, axis: usize },
    /// A quaternion component of free part `part`.
    Rotation { part: usize },
    /// Extra unknown `k`.
    Extra { k: usize },
}

impl System {
    /// Compiles the residuals and tangent Jacobian of equations `rows` (indices into
    /// [`equations`](Self::equations)) into one tape (see the module documentation).
    pub fn tangent_tape(
        &mut self,
        rows: &[usize],
        pattern: TangentPattern,
    ) -> Result<TangentTape, SystemError> {
        let parts = self.free_parts.len();
        let mut unknown: FxHashMap<VarId, Unknown> = FxHashMap::default();
        for (part, free) in self.free_parts.iter().enumerate() {
            for (c, &v) in free.vars.iter().enumerate() {
                let u = if c < 3 {
                    Unknown::Position { part, axis: c }
                } else {
                    Unknown::Rotation { part }
                };
                unknown.insert(v, u);
            }
        }
        for (k, e) in self.extra.iter().enumerate() {
            unknown.insert(e.var, Unknown::Extra { k });
        }
        let residuals = self.residuals_of_rows(rows)?;
        let groups = crate::cluster::owner_groups(self, rows, rows.len());
        // Per part, its three turn directions (made when a row first reads the part).
        let mut turns: Vec<Option<[DirectionId; 3]>> = vec![None; parts];
        let mut outputs: Vec<ExprId> = Vec::new();
        let mut output_groups: Vec<u32> = Vec::new();
        let mut residual_at = vec![0u32; rows.len()];
        let mut positions: Vec<(u32, u32)> = Vec::new();
        let mut entry_at: Vec<u32> = Vec::new();
        let mut row_entries: Vec<(u32, ExprId)> = Vec::new();
        // A group's residuals first, then its entries: each group (a joint's rows) is
        // one instance of its shape.
        let mut start = 0;
        while start < rows.len() {
            let label = groups[start];
            let end = (start..rows.len())
                .find(|&k| groups[k] != label)
                .unwrap_or(rows.len());
            for (k, &c) in residuals.iter().enumerate().take(end).skip(start) {
                residual_at[k] = outputs.len() as u32;
                outputs.push(c);
                output_groups.push(label);
            }
            for (k, &c) in residuals.iter().enumerate().take(end).skip(start) {
                row_entries.clear();
                let mut turned: Vec<usize> = Vec::new();
                for v in self.graph.vars_of_marked(c) {
                    match unknown.get(&v).copied() {
                        Some(Unknown::Position { part, axis }) => {
                            let d = self.graph.derivative(c, v);
                            let column = TANGENT_PER_PART * part + axis;
                            row_entries.push((column as u32, d));
                        }
                        Some(Unknown::Rotation { part }) if !turned.contains(&part) => {
                            turned.push(part);
                        }
                        Some(Unknown::Extra { k: extra }) => {
                            let d = self.graph.derivative(c, v);
                            let column = TANGENT_PER_PART * parts + extra;
                            row_entries.push((column as u32, d));
                        }
                        Some(Unknown::Rotation { .. }) | None => {}
                    }
                }
                for &part in &turned {
                    let directions = match turns[part] {
                        Some(d) => d,
                        None => {
                            let d = self.turn_directions(part);
                            turns[part] = Some(d);
                            d
                        }
                    };
                    for (axis, &d) in directions.iter().enumerate() {
                        let e = self.graph.derivative_along(c, d);
                        let column = TANGENT_PER_PART * part + 3 + axis;
                        row_entries.push((column as u32, e));
                    }
                }
                row_entries.sort_unstable_by_key(|&(column, _)| column);
                for &(column, e) in &row_entries {
                    if pattern == TangentPattern::Nonzero && self.graph.as_const(e) == Some(0.0) {
                        continue;
                    }
                    positions.push((k as u32, column));
                    entry_at.push(outputs.len() as u32);
                    outputs.push(e);
                    output_groups.push(label);
                }
            }
            start = end;
        }
        let tape = self.graph.compile_by_shape(&outputs, &output_groups, &[])?;
        Ok(TangentTape {
            tape,
            rows: rows.len(),
            columns: self.tangent_dimension(),
            residual_at,
            positions,
            entry_at,
        })
    }

    /// Free part `part`'s turns about the world axes as directions of the graph: its
    /// quaternion moves as `1/2 [0, e_k] q`, its rotation matrix (given to the graph) as
    /// `[e_k]x R`.
    fn turn_directions(&mut self, part: usize) -> [DirectionId; 3] {
        let vars = self.free_parts[part].vars;
        let rotation = self.rotations[part];
        let g = &mut self.graph;
        let q: Vec<ExprId> = vars[3..STATE_PER_PART].iter().map(|&v| g.var(v)).collect();
        let (w, x, y, z) = (q[0], q[1], q[2], q[3]);
        std::array::from_fn(|axis| {
            // 1/2 [0, e] q with e = e_axis, row by row (as the rate tapes' dq/dt).
            let e = |k: usize| if k == axis { 1.0 } else { 0.0 };
            let mut half = |terms: [(f64, ExprId); 3]| {
                let parts: Vec<ExprId> = terms
                    .iter()
                    .filter(|(s, _)| *s != 0.0)
                    .map(|&(s, v)| g.scale(v, 0.5 * s))
                    .collect();
                g.sum(&parts)
            };
            let dw = half([(-e(0), x), (-e(1), y), (-e(2), z)]);
            let dx = half([(e(0), w), (e(1), z), (-e(2), y)]);
            let dy = half([(-e(0), z), (e(1), w), (e(2), x)]);
            let dz = half([(e(0), y), (-e(1), x), (e(2), w)]);
            let components: Vec<(VarId, ExprId)> = vars[3..STATE_PER_PART]
                .iter()
                .copied()
                .zip([dw, dx, dy, dz])
                .collect();
            let d = g.new_direction(&components);
            // Row i of [e]x R is e_b R_c - e_c R_b (b, c the axes after i).
            for (i, row) in rotation.iter().enumerate() {
                let (b, c) = ((i + 1) % 3, (i + 2) % 3);
                for (j, &entry) in row.iter().enumerate() {
                    let rate = if axis == b {
                        rotation[c][j]
                    } else if axis == c {
                        g.neg(rotation[b][j])
                    } else {
                        g.zero()
                    };
                    g.set_derivative_along(entry, d, rate);
                }
            }
            d
        })
    }
}

impl TangentTape {
    /// Scratch for [`TangentTape::evaluate`].
    pub fn work(&self) -> TangentWork {
        TangentWork {
            ws: self.tape.workspace(),
            out: self.tape.output(),
        }
    }

    /// Rows (equations) and tangent columns.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.columns)
    }

    /// The Jacobian's positions `(row, column)`, in the order
    /// [`evaluate`](Self::evaluate) gives the values.
    pub fn positions(&self) -> &[(u32, u32)] {
        &self.positions
    }

    /// Evaluates at `state` and `params` (the system's): the residuals into `residuals`
    /// (one per row) and the Jacobian's values, in [`positions`](Self::positions) order,
    /// into `values` (as many).
    pub fn evaluate_into(
        &self,
        work: &mut TangentWork,
        (state, params): (&[f64], &[f64]),
        residuals: &mut [f64],
        values: &mut [(u32, u32, f64)],
    ) -> Result<(), SystemError> {
        if !self.tape.workspace_fits(&work.ws) {
            *work = self.work();
        }
        self.tape
            .evaluate_residuals(&mut work.ws, state, params, &mut work.out)?;
        let out = work.out.residuals();
        for (r, &at) in residuals.iter_mut().zip(&self.residual_at) {
            *r = out.get(at as usize).copied().unwrap_or(f64::NAN);
        }
        for (entry, &at) in values.iter_mut().zip(&self.entry_at) {
            entry.2 = out.get(at as usize).copied().unwrap_or(f64::NAN);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::TangentPattern;

    /// The tape's residuals and Jacobian equal the cluster tapes' residuals and folded
    /// tangent Jacobian (to rounding: other operations in another order), on fixtures
    /// of every kind of joint, at the file's pose and at a pose turned far from it, with
    /// either pattern (the entries one leaves out are zero there).
    #[test]
    fn the_tangent_tape_equals_the_folded_jacobian() {
        let mut checked = 0;
        for mut fixture in crate::test_fixtures::fixture_systems(crate::test_fixtures::EVERY_KIND) {
            let rows: Vec<usize> = (0..fixture.system.equations().len()).collect();
            for pattern in [TangentPattern::RowParts, TangentPattern::Nonzero] {
                let tape = fixture.system.tangent_tape(&rows, pattern).unwrap();
                let mut ws = tape.work();
                for state in &fixture.poses {
                    let (want_r, want_j) = fixture
                        .system
                        .tangent_jacobian_of_rows(&fixture.compiled, state, &fixture.params, &rows)
                        .unwrap();
                    let mut dense = vec![0.0; want_j.rows * want_j.columns];
                    for &(r, c, v) in &want_j.entries {
                        dense[r as usize * want_j.columns + c as usize] += v;
                    }
                    let mut got_r = vec![0.0; rows.len()];
                    let mut got = vec![0.0; dense.len()];
                    let mut values: Vec<(u32, u32, f64)> =
                        tape.positions().iter().map(|&(r, c)| (r, c, 0.0)).collect();
                    tape.evaluate_into(&mut ws, (state, &fixture.params), &mut got_r, &mut values)
                        .unwrap();
                    for &(r, c, v) in &values {
                        got[r as usize * want_j.columns + c as usize] += v;
                    }
                    let scale = dense.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                    for (a, b) in got_r.iter().zip(&want_r) {
                        assert!((a - b).abs() <= 1e-12 * scale, "residual {a} vs {b}");
                    }
                    for (k, (a, b)) in got.iter().zip(&dense).enumerate() {
                        let (r, c) = (k / want_j.columns, k % want_j.columns);
                        assert!(
                            (a - b).abs() <= 1e-12 * scale,
                            "entry ({r}, {c}): {a} vs {b}"
                        );
                    }
                    checked += want_j.entries.len();
                }
            }
        }
        assert!(checked > 500, "{checked} entries checked");
    }
}
