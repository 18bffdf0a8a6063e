//! Residuals and the tangent Jacobian of chosen equations, evaluated again and again
//! into buffers kept between calls (a dynamic run evaluates them at every Newton
//! iteration: the general [`System::tangent_jacobian_of_rows`] sorts out clusters and
//! allocates each time).

use crate::build::System;
use crate::cluster::{ClusterOutput, Scratch};
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
    local: Vec<f64>,
    out: ClusterOutput,
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
                out: cluster.output(),
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
        crate::build::check_length("state", self.state_len, state.len())?;
        self.jacobian.entries.clear();
        for piece in &mut self.pieces {
            let cluster = match piece.cluster {
                Some(k) => compiled.clusters().get(k),
                None => Some(compiled.fixed()),
            };
            let Some(cluster) = cluster else { continue };
            cluster.gather_into(state, &mut piece.local);
            cluster.evaluate(scratch, &piece.local, params, &mut piece.out)?;
            piece.copy_residuals(&mut self.residuals);
            // Straight into the rows' places and the global columns.
            let entries = &mut self.jacobian.entries;
            let (positions, columns) = (&piece.positions, &piece.columns);
            cluster.tangent_jacobian_with(
                &piece.local,
                &piece.out,
                &piece.local_rows,
                |i, c, v| {
                    if let (Some(&p), Some(&c)) =
                        (positions.get(i as usize), columns.get(c as usize))
                    {
                        entries.push((p, c, v));
                    }
                },
            );
        }
        Ok(())
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
            let cluster = match piece.cluster {
                Some(k) => compiled.clusters().get(k),
                None => Some(compiled.fixed()),
            };
            let Some(cluster) = cluster else { continue };
            cluster.gather_into(state, &mut piece.local);
            cluster.evaluate_residuals(scratch, &piece.local, params, &mut piece.out)?;
            piece.copy_residuals(&mut self.residuals);
        }
        Ok(())
    }

    /// The residuals of the last evaluation, one per row.
    pub fn residuals(&self) -> &[f64] {
        &self.residuals
    }

    /// The tangent Jacobian of the last evaluation.
    pub fn jacobian(&self) -> &TangentJacobian {
        &self.jacobian
    }
}
