//! Residuals and the tangent Jacobian of chosen equations, evaluated again and again
//! into buffers kept between calls (a dynamic run evaluates them at every Newton
//! iteration: the general [`System::tangent_jacobian_of_rows`] sorts out clusters and
//! allocates each time).

use crate::build::System;
use crate::cluster::{ClusterOutput, ClusterTape, Scratch};
use crate::error::SystemError;
use crate::state::Compiled;
use crate::tangent::TangentJacobian;

/// An evaluator of some equations' residuals and tangent Jacobian (row `k` is equation
/// `rows[k]`), made by [`System::row_evaluator`] for one [`Compiled`] system.
#[derive(Debug)]
pub struct RowEvaluator {
    pieces: Vec<Piece>,
    residuals: Vec<f64>,
    jacobian: TangentJacobian,
    /// Whether `jacobian` holds the last full evaluation (else only the tapes' own
    /// partial derivatives do, until [`RowEvaluator::fold`]).
    folded: bool,
    /// Whether `jacobian`'s entries are in the order a fold emits them, each emitted
    /// entry kept (a later fold then writes the values alone, in place).
    fold_layout: bool,
    /// Whether `jacobian`'s entries are at a tangent tape's positions (see
    /// [`RowEvaluator::evaluate_tangent`]).
    tangent_layout: bool,
    state_len: usize,
}

/// The wanted equations of one cluster.
#[derive(Debug)]
struct Piece {
    /// Index into the compiled clusters (`None`: the fixed set).
    cluster: Option<usize>,
    /// Its local equations wanted, and where each goes among the rows.
    local_rows: Vec<usize>,
    positions: Vec<u32>,
    /// Per local tangent column, its global one.
    columns: Vec<u32>,
    /// The state gathered at the last full evaluation (the Jacobian's), and at the last
    /// evaluation of residuals alone.
    local: Vec<f64>,
    residual_local: Vec<f64>,
    out: ClusterOutput,
    /// Per part, the quaternion columns of `J^T y` (see `add_transposed`).
    sums: Vec<[f64; 4]>,
}

/// The compiled cluster of a piece (`None`: the fixed set).
fn piece_cluster(compiled: &Compiled, cluster: Option<usize>) -> Option<&ClusterTape> {
    match cluster {
        Some(k) => compiled.clusters().get(k),
        None => Some(compiled.fixed()),
    }
}

impl Piece {
    /// Its wanted residuals from the last evaluation into their places among the rows.
    fn copy_residuals(&self, residuals: &mut [f64]) {
        for (&l, &p) in self.local_rows.iter().zip(&self.positions) {
            if let (Some(slot), Some(&v)) =
                (residuals.get_mut(p as usize), self.out.residuals().get(l))
            {
                *slot = v;
            }
        }
    }
}

impl System {
    /// An evaluator of equations `rows` (indices into [`equations`](Self::equations);
    /// each at most once, out of range ones left empty) over `compiled`.
    pub fn row_evaluator(&self, compiled: &Compiled, rows: &[usize]) -> RowEvaluator {
        let mut position = vec![u32::MAX; self.equations().len()];
        for (k, &r) in rows.iter().enumerate() {
            if let Some(slot) = position.get_mut(r) {
                *slot = k as u32;
            }
        }
        let clusters = compiled.clusters();
        let mut pieces = Vec::new();
        for (index, cluster) in clusters
            .iter()
            .enumerate()
            .map(|(k, c)| (Some(k), c))
            .chain(std::iter::once((None, compiled.fixed())))
        {
            let mut local_rows = Vec::new();
            let mut positions = Vec::new();
            for (local, &r) in cluster.equations().iter().enumerate() {
                if let Some(&p) = position.get(r) {
                    if p != u32::MAX {
                        local_rows.push(local);
                        positions.push(p);
                    }
                }
            }
            if local_rows.is_empty() {
                continue;
            }
            pieces.push(Piece {
                cluster: index,
                local_rows,
                positions,
                columns: (0..cluster.tangent_dimension())
                    .map(|c| cluster.global_column(c) as u32)
                    .collect(),
                local: Vec::with_capacity(cluster.state_len()),
                residual_local: Vec::with_capacity(cluster.state_len()),
                out: cluster.output(),
                sums: Vec::new(),
            });
        }
        RowEvaluator {
            pieces,
            residuals: vec![0.0; rows.len()],
            jacobian: TangentJacobian {
                rows: rows.len(),
                columns: self.tangent_dimension(),
                entries: Vec::new(),
            },
            folded: true,
            fold_layout: false,
            tangent_layout: false,
            state_len: self.state_len(),
        }
    }
}

impl RowEvaluator {
    /// Evaluates at `state` and `params` (the system's lengths; `compiled` the one it
    /// was made for).
    pub fn evaluate(
        &mut self,
        compiled: &Compiled,
        scratch: &mut Scratch,
        state: &[f64],
        params: &[f64],
    ) -> Result<(), SystemError> {
        self.evaluate_unfolded(compiled, scratch, state, params)?;
        self.fold(compiled);
        Ok(())
    }

    /// [`RowEvaluator::evaluate`] without forming the tangent Jacobian: the tapes'
    /// partial derivatives are kept, [`RowEvaluator::add_transposed`] reads them, and
    /// [`RowEvaluator::fold`] forms the Jacobian when it is wanted. (A dynamics step
    /// needs `J^T lambda` at every evaluation but the matrix only when it refactors.)
    pub fn evaluate_unfolded(
        &mut self,
        compiled: &Compiled,
        scratch: &mut Scratch,
        state: &[f64],
        params: &[f64],
    ) -> Result<(), SystemError> {
        crate::build::check_length("state", self.state_len, state.len())?;
        self.folded = false;
        for piece in &mut self.pieces {
            let Some(cluster) = piece_cluster(compiled, piece.cluster) else {
                continue;
            };
            cluster.gather_into(state, &mut piece.local);
            cluster.evaluate(scratch, &piece.local, params, &mut piece.out)?;
            piece.copy_residuals(&mut self.residuals);
        }
        Ok(())
    }

    /// Evaluates the residuals and the tangent Jacobian at `state` and `params` from
    /// `tape` (made by [`System::tangent_tape`] over this evaluator's rows), instead of
    /// the cluster tapes and a fold. The Jacobian's entries are then at the tape's
    /// positions (another order than a fold's).
    ///
    /// [`System::tangent_tape`]: crate::System::tangent_tape
    pub fn evaluate_tangent(
        &mut self,
        tape: &crate::TangentTape,
        ws: &mut crate::TangentWork,
        (state, params): (&[f64], &[f64]),
    ) -> Result<(), SystemError> {
        crate::build::check_length("state", self.state_len, state.len())?;
        let (rows, columns) = tape.shape();
        if rows != self.residuals.len() || columns != self.jacobian.columns {
            return Err(SystemError::WrongLength {
                what: "tangent tape rows",
                expected: self.residuals.len(),
                actual: rows,
            });
        }
        let positions = tape.positions();
        if !self.tangent_layout || self.jacobian.entries.len() != positions.len() {
            self.jacobian.entries.clear();
            self.jacobian
                .entries
                .extend(positions.iter().map(|&(r, c)| (r, c, 0.0)));
            self.tangent_layout = true;
            self.fold_layout = false;
        }
        tape.evaluate_into(
            ws,
            (state, params),
            &mut self.residuals,
            &mut self.jacobian.entries,
        )?;
        // Formed: a fold has nothing to do (and `add_transposed` reads the entries).
        self.folded = true;
        Ok(())
    }

    /// Forms the tangent Jacobian of the last full evaluation, if not formed yet.
    pub fn fold(&mut self, compiled: &Compiled) {
        if self.folded {
            return;
        }
        self.folded = true;
        // The positions are the pattern's and the same every time: after the first fold
        // only the values are written, in the order they are emitted.
        if self.fold_layout {
            let entries = &mut self.jacobian.entries;
            let mut k = 0;
            for piece in &self.pieces {
                let Some(cluster) = piece_cluster(compiled, piece.cluster) else {
                    continue;
                };
                cluster.tangent_jacobian_with(
                    &piece.local,
                    &piece.out,
                    &piece.local_rows,
                    |_, _, v| {
                        if let Some(entry) = entries.get_mut(k) {
                            entry.2 = v;
                        }
                        k += 1;
                    },
                );
            }
            if k == entries.len() {
                return;
            }
        }
        self.tangent_layout = false;
        self.jacobian.entries.clear();
        let mut emitted = 0usize;
        for piece in &self.pieces {
            let Some(cluster) = piece_cluster(compiled, piece.cluster) else {
                continue;
            };
            // Straight into the rows' places and the global columns.
            let entries = &mut self.jacobian.entries;
            let (positions, columns) = (&piece.positions, &piece.columns);
            cluster.tangent_jacobian_with(
                &piece.local,
                &piece.out,
                &piece.local_rows,
                |i, c, v| {
                    emitted += 1;
                    if let (Some(&p), Some(&c)) =
                        (positions.get(i as usize), columns.get(c as usize))
                    {
                        entries.push((p, c, v));
                    }
                },
            );
        }
        self.fold_layout = emitted == self.jacobian.entries.len();
    }

    /// `out += J^T y` with the Jacobian of the last full evaluation (`y` one value per
    /// row, `out` one per tangent column), from the formed Jacobian or, before
    /// [`RowEvaluator::fold`], from the tapes' partial derivatives.
    pub fn add_transposed(&mut self, compiled: &Compiled, y: &[f64], out: &mut [f64]) {
        if self.folded {
            self.jacobian.add_transposed(y, out);
            return;
        }
        for piece in &mut self.pieces {
            let Some(cluster) = piece_cluster(compiled, piece.cluster) else {
                continue;
            };
            let (positions, columns) = (&piece.positions, &piece.columns);
            let y_of = |i: usize| {
                positions
                    .get(i)
                    .and_then(|&p| y.get(p as usize))
                    .copied()
                    .unwrap_or(0.0)
            };
            cluster.transposed_times_with(
                &piece.local,
                &piece.out,
                (&piece.local_rows, y_of),
                &mut piece.sums,
                |c, v| {
                    if let Some(slot) = columns
                        .get(c as usize)
                        .and_then(|&c| out.get_mut(c as usize))
                    {
                        *slot += v;
                    }
                },
            );
        }
    }

    /// Evaluates the residuals only (the Jacobian keeps the last full evaluation's).
    pub fn evaluate_residuals(
        &mut self,
        compiled: &Compiled,
        scratch: &mut Scratch,
        state: &[f64],
        params: &[f64],
    ) -> Result<(), SystemError> {
        crate::build::check_length("state", self.state_len, state.len())?;
        for piece in &mut self.pieces {
            let Some(cluster) = piece_cluster(compiled, piece.cluster) else {
                continue;
            };
            // Gathered apart: `local` stays the Jacobian's state, for a later fold.
            cluster.gather_into(state, &mut piece.residual_local);
            cluster.evaluate_residuals(scratch, &piece.residual_local, params, &mut piece.out)?;
            piece.copy_residuals(&mut self.residuals);
        }
        Ok(())
    }

    /// The residuals of the last evaluation, one per row.
    pub fn residuals(&self) -> &[f64] {
        &self.residuals
    }

    /// The tangent Jacobian of the last evaluation formed (see
    /// [`RowEvaluator::evaluate_unfolded`]).
    pub fn jacobian(&self) -> &TangentJacobian {
        &self.jacobian
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::cluster::Scratch;

    /// `J^T y` from the tapes' partial derivatives (before the fold) equals `J^T y` from
    /// the formed Jacobian to rounding, on fixtures at their pose and at one turned far
    /// from it, after residual-only evaluations elsewhere (which leave the Jacobian's
    /// state alone); the fold formed afterwards is the Jacobian `evaluate` forms.
    #[test]
    fn transposed_product_before_the_fold_equals_the_folded_one() {
        let mut checked = 0;
        for fixture in crate::test_fixtures::fixture_systems(&[
            "four-bar.json",
            "robot-arm.json",
            "screw-jack.json",
            "universal-joint.json",
            "planetary.json",
        ]) {
            let (system, compiled, params) = (&fixture.system, &fixture.compiled, &fixture.params);
            let rows: Vec<usize> = (0..system.equations().len()).rev().collect();
            let y: Vec<f64> = (0..rows.len()).map(|k| (k as f64 * 0.7).sin()).collect();
            let [start, turned] = &fixture.poses;
            for (state, other) in [(start, turned), (turned, start)] {
                let mut scratch = Scratch::new();
                let mut folded = system.row_evaluator(compiled, &rows);
                folded
                    .evaluate(compiled, &mut scratch, state, params)
                    .unwrap();
                let mut expected = vec![0.0; system.tangent_dimension()];
                folded.add_transposed(compiled, &y, &mut expected);
                let mut lazy = system.row_evaluator(compiled, &rows);
                lazy.evaluate_unfolded(compiled, &mut scratch, state, params)
                    .unwrap();
                lazy.evaluate_residuals(compiled, &mut scratch, other, params)
                    .unwrap();
                let mut got = vec![0.0; system.tangent_dimension()];
                lazy.add_transposed(compiled, &y, &mut got);
                let scale = expected.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                for (a, b) in got.iter().zip(&expected) {
                    assert!((a - b).abs() <= 1e-13 * scale, "{a} vs {b}");
                }
                lazy.fold(compiled);
                assert_eq!(lazy.jacobian().entries, folded.jacobian().entries);
                checked += expected.len();
            }
        }
        assert!(checked > 100, "{checked} columns checked");
    }
}
