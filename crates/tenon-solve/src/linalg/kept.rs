//! Analyses of large step patterns kept for the next matrix of the same pattern.
//!
//! A sparse step matrix analyses its pattern once: the patterns of `A` and `A^T A`,
//! where each product goes, the fill-reducing ordering and the symbolic Cholesky. Each
//! solve makes new matrices, though, and a host solves the same assembly again and again
//! (FreeCAD rebuilds and solves its assembly at every change; a drag solves once per
//! mouse move). The analysis was then made afresh every time: at 10,000 parts, about
//! 80 ms of a 100 ms solve. A matrix dropped after its analysis leaves it here, and a
//! new matrix whose pattern is the same in every respect the analysis depends on takes
//! it instead of analysing.
//!
//! Architecture invariant: an analysis is a function of the matrix's rows and columns,
//! the Jacobian's entry positions, the map from Jacobian columns to the matrix's and
//! the column groups; a kept one is taken only where all five are equal, so a step is
//! the same, bit for bit, whether its analysis was kept or made.

use std::cell::RefCell;

use faer::sparse::linalg::cholesky::SymbolicCholesky;
use faer::sparse::SymbolicSparseColMat;

/// Matrices with fewer columns analyse their pattern in well under a millisecond: not
/// kept.
pub(super) const KEPT_FROM_COLUMNS: usize = 1_000;

/// Analyses kept per thread, the most recently left first (a solve uses two large
/// matrices a piece: the step's and the translation-only one's).
const KEPT_ANALYSES: usize = 4;

/// What a sparse step matrix's analysis made (see `SparseNormal::analyse`).
pub(super) struct Analysis {
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) key: Vec<(u32, u32)>,
    pub(super) col_of: Vec<usize>,
    pub(super) groups: Option<Vec<usize>>,
    pub(super) entry_slot: Vec<u32>,
    pub(super) a_row_start: Vec<usize>,
    pub(super) a_cols: Vec<u32>,
    pub(super) pair_slot: Vec<u32>,
    pub(super) diag_slot: Vec<usize>,
    pub(super) n_symbolic: SymbolicSparseColMat<u32>,
    pub(super) llt: Option<SymbolicCholesky<u32>>,
}

thread_local! {
    static KEPT: RefCell<Vec<Analysis>> = const { RefCell::new(Vec::new()) };
}

/// The kept analysis made for exactly this pattern, taken out of the store.
pub(super) fn take(
    (rows, cols): (usize, usize),
    entries: &[(u32, u32, f64)],
    col_of: &[usize],
    groups: Option<&[usize]>,
) -> Option<Analysis> {
    if cols < KEPT_FROM_COLUMNS {
        return None;
    }
    // (`try_with`: a matrix dropped while the thread's storage is torn down finds
    // nothing, rather than panicking.)
    KEPT.try_with(|kept| {
        let mut kept = kept.try_borrow_mut().ok()?;
        let at = kept.iter().position(|a| {
            a.rows == rows
                && a.cols == cols
                && a.groups.as_deref() == groups
                && a.col_of == col_of
                && super::same_positions(&a.key, entries)
        })?;
        Some(kept.remove(at))
    })
    .ok()
    .flatten()
}

/// Keeps `analysis` for a later matrix (the oldest kept one makes room).
pub(super) fn keep(analysis: Analysis) {
    if analysis.cols < KEPT_FROM_COLUMNS {
        return;
    }
    let _ = KEPT.try_with(|kept| {
        if let Ok(mut kept) = kept.try_borrow_mut() {
            kept.insert(0, analysis);
            kept.truncate(KEPT_ANALYSES);
        }
    });
}

/// How many analyses this thread keeps now.
#[cfg(test)]
fn kept_here() -> usize {
    KEPT.with(|kept| kept.borrow().len())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{kept_here, KEPT_FROM_COLUMNS};
    use crate::linalg::StepMatrix;
    use tenon_system::TangentJacobian;

    /// A chain-like Jacobian of `n` columns: each row couples a column with the one
    /// before and the one six before (as a joint couples two parts' columns), with
    /// values that differ row to row.
    fn jacobian(n: usize) -> TangentJacobian {
        let mut entries = Vec::new();
        for k in 0..n as u32 {
            let v = |s: u32| 1.0 + f64::from((k * 7 + s) % 11) / 13.0;
            if k >= 6 {
                entries.push((k, k - 6, -v(1)));
            }
            if k >= 1 {
                entries.push((k, k - 1, 0.5 * v(2)));
            }
            entries.push((k, k, v(3)));
        }
        TangentJacobian {
            rows: n,
            columns: n,
            entries,
        }
    }

    /// One regularised step of a fresh matrix of `jac`, read at columns `col_of`.
    fn step(jac: &TangentJacobian, col_of: &[usize], groups: Option<Vec<usize>>) -> Vec<u64> {
        let n = jac.columns;
        let mut matrix = StepMatrix::new(n, n, 0);
        if let Some(g) = groups {
            matrix.set_groups(g);
        }
        matrix.fill(jac, col_of, &vec![1.0; n]);
        let factored = matrix.factor().unwrap();
        let steps = factored.regularized(0.0, 1.0).unwrap();
        let r: Vec<f64> = (0..n).map(|k| ((k % 5) as f64 - 2.0) / 3.0).collect();
        steps
            .solve_refined(&r)
            .into_iter()
            .map(f64::to_bits)
            .collect()
    }

    /// A second matrix of the same pattern takes the first's analysis and gives the
    /// same step to the bit; a different column map or grouping does not take it; a
    /// small matrix leaves nothing.
    #[test]
    fn a_kept_analysis_gives_the_same_step_and_is_taken_only_for_its_pattern() {
        // A thread of its own: its store starts empty.
        std::thread::spawn(|| {
            let n = KEPT_FROM_COLUMNS + 200;
            let jac = jacobian(n);
            let cols: Vec<usize> = (0..n).collect();
            assert_eq!(kept_here(), 0);
            let first = step(&jac, &cols, None);
            assert_eq!(kept_here(), 1, "the dropped matrix left its analysis");
            let again = step(&jac, &cols, None);
            assert_eq!(again, first, "the kept analysis gives the same step");
            assert_eq!(kept_here(), 1, "taken, then left again");

            // The same entries read at other columns (the last two swapped): a new
            // analysis, made and left beside the first.
            let mut swapped = cols.clone();
            swapped.swap(n - 1, n - 2);
            let _ = step(&jac, &swapped, None);
            assert_eq!(kept_here(), 2);
            // Grouped columns (a part's six): another analysis again.
            let groups: Vec<usize> = (0..n).map(|k| k / 6).collect();
            let grouped = step(&jac, &cols, Some(groups.clone()));
            assert_eq!(kept_here(), 3);
            assert_eq!(step(&jac, &cols, Some(groups)), grouped);
            assert_eq!(step(&jac, &cols, None), first);
            assert_eq!(kept_here(), 3);

            // Below the size kept, nothing is left.
            let small = jacobian(KEPT_FROM_COLUMNS / 2);
            let small_cols: Vec<usize> = (0..small.columns).collect();
            let _ = step(&small, &small_cols, None);
            assert_eq!(kept_here(), 3);
        })
        .join()
        .unwrap();
    }
}
