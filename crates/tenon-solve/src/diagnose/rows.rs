//! The dense row analysis: a cluster's weighted Jacobian rows orthogonalised in order;
//! a row that adds less than [`DEPENDENT_ROW`](super::DEPENDENT_ROW) of its length is
//! dependent, with its coefficients on the rows before it.

use nalgebra::{DMatrix, DVector};
use rustc_hash::FxHashMap;
use tenon_model::JointKey;

use super::DEPENDENT_ROW;

/// The joints of a dependent row's combination (`(row, coefficient)` on earlier rows;
/// negligible coefficients left out) and its own `joint`, in file order, each once.
pub(super) fn combination_joints(
    coefficients: &[(usize, f64)],
    joint: JointKey,
    joint_order: &FxHashMap<JointKey, usize>,
    joint_of_row: impl Fn(usize) -> Option<JointKey>,
) -> Vec<JointKey> {
    let largest = coefficients
        .iter()
        .fold(0.0f64, |m, &(_, c)| m.max(c.abs()));
    let mut set: Vec<JointKey> = coefficients
        .iter()
        .filter(|&&(_, c)| c.abs() > 1e-8 * largest)
        .filter_map(|&(k, _)| joint_of_row(k))
        .chain(std::iter::once(joint))
        .collect();
    set.sort_by_key(|j| joint_order[j]);
    set.dedup();
    set
}

/// A dependent row: its index, its coefficients on independent rows `(row, c)`, and the
/// disagreement of its residual with theirs.
pub(super) struct Dependent {
    pub(super) row: usize,
    pub(super) coefficients: Vec<(usize, f64)>,
    pub(super) gap: f64,
}

/// The independent row nearest to depending on the rows before it: its index, the share
/// of its length those rows leave (`DEPENDENT_ROW` < share <= 1), and its coefficients on
/// them `(row, c)` (the combination it nearly repeats).
pub(super) struct Weakest {
    pub(super) row: usize,
    pub(super) share: f64,
    pub(super) coefficients: Vec<(usize, f64)>,
}

pub(super) struct RowAnalysis {
    /// Independent rows, in the order taken.
    pub(super) independent: Vec<usize>,
    /// The weakest independent row (none without rows).
    pub(super) weakest: Option<Weakest>,
    pub(super) dependent: Vec<Dependent>,
    /// Orthonormal basis of the row space (one vector per independent row).
    pub(super) basis: Vec<DVector<f64>>,
}

/// Orthogonalises the rows of `a` in order (see the module documentation).
pub(super) fn analyse_rows(a: &DMatrix<f64>, residuals: &[f64]) -> RowAnalysis {
    let mut basis: Vec<DVector<f64>> = Vec::new();
    // Row k of the independent rows = sum_l r[k][l] basis[l] (lower triangular).
    let mut r: Vec<Vec<f64>> = Vec::new();
    let mut independent = Vec::new();
    let mut dependent = Vec::new();
    // The weakest independent row so far: (row, share, its projections on the basis).
    let mut weakest: Option<(usize, f64, Vec<f64>)> = None;
    for i in 0..a.nrows() {
        let row: DVector<f64> = a.row(i).transpose();
        let norm = row.norm();
        let mut v = row.clone();
        let mut beta = vec![0.0; basis.len()];
        for _ in 0..2 {
            for (l, q) in basis.iter().enumerate() {
                let c = q.dot(&v);
                beta[l] += c;
                v -= q * c;
            }
        }
        let rest = v.norm();
        if norm > 0.0 && rest > DEPENDENT_ROW * norm {
            let share = rest / norm;
            if weakest.as_ref().is_none_or(|w| share < w.1) {
                weakest = Some((independent.len(), share, beta.clone()));
            }
            beta.push(rest);
            r.push(beta);
            basis.push(v / rest);
            independent.push(i);
            continue;
        }
        let c = combination(&r, &beta);
        let combined: f64 = c
            .iter()
            .zip(&independent)
            .map(|(cm, &row)| cm * residuals[row])
            .sum();
        dependent.push(Dependent {
            row: i,
            gap: residuals[i] - combined,
            coefficients: independent.iter().copied().zip(c).collect(),
        });
    }
    // The weakest row's combination of the independent rows before it.
    let weakest = weakest.map(|(k, share, beta)| Weakest {
        row: independent[k],
        share,
        coefficients: independent
            .iter()
            .copied()
            .zip(combination(&r[..k], &beta))
            .collect(),
    });
    RowAnalysis {
        independent,
        weakest,
        dependent,
        basis,
    }
}

/// The coefficients `c` on the first `r.len()` independent rows of a row whose
/// projections on their basis are `beta`: `a_i = beta^T Q = c^T R Q`, so `R^T c = beta`
/// (`R` lower triangular, row `k` of it `r[k]`).
fn combination(r: &[Vec<f64>], beta: &[f64]) -> Vec<f64> {
    let k = r.len();
    let mut c = vec![0.0; k];
    for m in (0..k).rev() {
        let mut s = beta[m];
        for (n, cn) in c.iter().enumerate().skip(m + 1) {
            s -= r[n][m] * cn;
        }
        c[m] = s / r[m][m];
    }
    c
}
