//! Clusters beyond the dense analysis: rank and dependent rows by [`row_rank`] (rows in
//! file order rotated into a sparse triangular factor), each conflict's joints traced by
//! the dense analysis of a window of rows around it.

use nalgebra::DMatrix;
use rustc_hash::{FxHashMap, FxHashSet};
use tenon_model::JointKey;

use super::dependents::{classify, settle};
use super::rows::{analyse_rows, combination_joints};
use super::{ClusterAt, ClusterDiagnosis, DEPENDENT_ROW, MEASURED_CONFLICTS, WINDOW_COLUMNS};
use crate::row_rank::row_rank;
use crate::SolveError;

/// A cluster too large for the dense analysis, in the form the sparse one reads.
pub(super) struct SparseCluster<'a> {
    pub(super) cx: &'a ClusterAt<'a>,
    /// Global tangent columns.
    pub(super) cols: &'a [usize],
    pub(super) col_of: &'a FxHashMap<usize, usize>,
}

impl SparseCluster<'_> {
    /// Rank, redundant and conflicting joints by [`row_rank`]; the structural base when
    /// the factor would grow too large.
    pub(super) fn diagnose(
        &self,
        report: &crate::ClusterReport,
        jac: &tenon_system::TangentJacobian,
        residuals: &[f64],
        base: ClusterDiagnosis,
    ) -> Result<ClusterDiagnosis, SolveError> {
        let cx = self.cx;
        let mut sparse_rows: Vec<Vec<(u32, f64)>> = vec![Vec::new(); cx.rows.len()];
        for &(r, col, v) in &jac.entries {
            let col = col as usize;
            if let (Some(&k), Some(row)) = (self.col_of.get(&col), sparse_rows.get_mut(r as usize))
            {
                let w = cx.weights[col];
                row.push((k as u32, v / w));
            }
        }
        let Some(found) = row_rank(self.cols.len(), &sparse_rows, residuals, DEPENDENT_ROW) else {
            return Ok(base);
        };
        let dof = self.cols.len() - found.rank;
        // The joints a conflict involves: the dense analysis of the rows around it
        // (conflicts close loops, and loops are local); itself alone when its
        // combination reaches beyond that window, or past the conflicts measured.
        let findings = classify(cx, found.dependent.iter().copied(), |k, joint, so_far| {
            if so_far < MEASURED_CONFLICTS {
                self.conflict_set(&sparse_rows, residuals, k)
            } else {
                None
            }
            .unwrap_or_else(|| vec![joint])
        });
        let settled = settle(cx, findings, dof, report)?;
        Ok(ClusterDiagnosis {
            dof: Some(dof),
            status: settled.status,
            redundant: settled.redundant,
            conflicts: settled.conflicts,
            disagreements: settled.disagreements,
            ..base
        })
    }

    /// The joints of the combination that makes row `dependent` (an index into `rows`)
    /// dependent: the dense analysis on a window of the rows before it, grown from its
    /// columns through the rows that share them up to [`WINDOW_COLUMNS`] columns, with
    /// the row last. `None` when it is not dependent within the window.
    fn conflict_set(
        &self,
        sparse_rows: &[Vec<(u32, f64)>],
        residuals: &[f64],
        dependent: usize,
    ) -> Option<Vec<JointKey>> {
        let own = sparse_rows.get(dependent)?;
        // Rows before it, by column.
        let mut rows_of_col: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
        for (k, row) in sparse_rows.iter().enumerate().take(dependent) {
            for &(c, _) in row {
                rows_of_col.entry(c).or_default().push(k);
            }
        }
        let mut window_cols: Vec<u32> = own.iter().map(|&(c, _)| c).collect();
        window_cols.sort_unstable();
        window_cols.dedup();
        let mut in_window: FxHashSet<u32> = window_cols.iter().copied().collect();
        let mut taken: FxHashSet<usize> = FxHashSet::default();
        let mut frontier: Vec<u32> = window_cols.clone();
        while let Some(c) = frontier.pop() {
            for &k in rows_of_col.get(&c).map_or(&[][..], |v| v.as_slice()) {
                if taken.contains(&k) {
                    continue;
                }
                let new: Vec<u32> = sparse_rows[k]
                    .iter()
                    .map(|&(c, _)| c)
                    .filter(|c| !in_window.contains(c))
                    .collect();
                if in_window.len() + new.len() > WINDOW_COLUMNS {
                    continue;
                }
                taken.insert(k);
                for c in new {
                    if in_window.insert(c) {
                        window_cols.push(c);
                        frontier.push(c);
                    }
                }
            }
        }
        let mut rows: Vec<usize> = taken.into_iter().collect();
        rows.sort_unstable();
        rows.push(dependent);
        window_cols.sort_unstable();
        let col_index: FxHashMap<u32, usize> = window_cols
            .iter()
            .enumerate()
            .map(|(k, &c)| (c, k))
            .collect();
        let mut a = DMatrix::<f64>::zeros(rows.len(), window_cols.len());
        for (i, &k) in rows.iter().enumerate() {
            for &(c, v) in &sparse_rows[k] {
                if let Some(&j) = col_index.get(&c) {
                    a[(i, j)] += v;
                }
            }
        }
        let r: Vec<f64> = rows.iter().map(|&k| residuals[k]).collect();
        let analysis = analyse_rows(&a, &r);
        let last = rows.len() - 1;
        let dep = analysis.dependent.iter().find(|d| d.row == last)?;
        let cx = self.cx;
        let joint = cx.joint_of_row(dependent)?;
        Some(combination_joints(
            &dep.coefficients,
            joint,
            cx.joint_order,
            |k| cx.joint_of_row(rows[k]),
        ))
    }
}
