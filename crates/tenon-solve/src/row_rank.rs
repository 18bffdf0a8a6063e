//! The rank of a large sparse matrix, and which of its rows depend on earlier ones, row
//! by row: Heath's method with tolerance-based deferral.
//!
//! Rows are taken in the order given (the diagnostics give them in file order of their
//! joints) and rotated one by one into a sparse upper-triangular `R`, one row of `R` per
//! pivot column: a new row's leading entry at column `k` is eliminated by a Givens
//! rotation with `R`'s row `k` (which may fill in later columns of both), until the row
//! either lands on a column with no row yet (it becomes that row: the rank grows) or
//! vanishes (it depends on the rows before it). Entries below `tolerance` times the
//! row's original length are dropped as they lead (deferral, as SuiteSparseQR does with
//! its columns): a row that only rounding keeps alive counts as dependent, as in the
//! dense analysis (a row adding less than that fraction of its own length). Each
//! rotation scales what is left of the row by its cosine, so the threshold is scaled
//! with it: what is compared is the row's remainder as the row itself would have it,
//! not as the rotations shrank it (on a 10,000-link chain they shrink it a hundred
//! million times, and rows with a column of their own were called dependent).
//!
//! A right-hand side rides along: when a row `a` vanishes, what is left of its right-hand
//! side is `(r - a x) / sqrt(1 + a M^+ a^T)`, with `x` the least-squares fit of the rows
//! before it and `M` their `A^T A`: zero exactly when the row's residual agrees with
//! theirs (redundant rather than conflicting).
//!
//! Memory is bounded: past [`MAX_R_ENTRIES`] entries of `R` (a column order that fills
//! in badly) the analysis stops and says so instead of running on.
//!
//! Rows of `R` are sparse vectors sorted by column; fill stays within the band when the
//! columns follow the mechanism (parts in file order along a chain or a ladder).

/// Entries of `R` beyond which the analysis gives up.
pub const MAX_R_ENTRIES: usize = 40_000_000;

/// A sparse row: ascending columns, their values, and its right-hand side.
#[derive(Debug, Clone, Default)]
struct Row {
    cols: Vec<u32>,
    vals: Vec<f64>,
    rhs: f64,
}

/// What the rows' rank analysis found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowRank {
    /// Rows that added something (in the order given).
    pub(crate) rank: usize,
    /// Rows that depend on earlier ones: their index, and what was left of their
    /// right-hand side.
    pub(crate) dependent: Vec<(usize, f64)>,
}

/// Rank and dependent rows of the matrix with `columns` columns and rows `rows`
/// (`(column, value)` pairs, any order, repeats add), right-hand sides `rhs`. `None` when
/// `R` would grow past [`MAX_R_ENTRIES`].
pub(crate) fn row_rank(
    columns: usize,
    rows: &[Vec<(u32, f64)>],
    rhs: &[f64],
    tolerance: f64,
) -> Option<RowRank> {
    let mut r: Vec<Option<Row>> = vec![None; columns];
    let mut entries = 0usize;
    let mut rank = 0;
    let mut dependent = Vec::new();
    let mut merged = Row::default();
    let mut other = Row::default();
    for (index, row) in rows.iter().enumerate() {
        let mut a = normalise(row, rhs[index], columns);
        let length = a.vals.iter().map(|v| v * v).sum::<f64>().sqrt();
        // Each rotation scales what is left of the row by its cosine; the threshold
        // follows, so that the test stays on the row's own part outside the rows before
        // it (what is left, divided by the product of the cosines) and not on what the
        // rotations shrank (a long chain's rows shrink with the square of its length).
        let mut threshold = tolerance * length;
        let mut placed = false;
        // `a` keeps its entries ascending; its first entry leads.
        while let Some(&k) = a.cols.first() {
            let lead = a.vals[0];
            if lead.abs() <= threshold {
                a.cols.remove(0);
                a.vals.remove(0);
                continue;
            }
            let Some(rk) = r.get_mut(k as usize).and_then(|slot| slot.as_mut()) else {
                // A new pivot: the row joins R.
                entries += a.cols.len();
                if entries > MAX_R_ENTRIES {
                    return None;
                }
                if let Some(slot) = r.get_mut(k as usize) {
                    *slot = Some(std::mem::take(&mut a));
                }
                rank += 1;
                placed = true;
                break;
            };
            let pivot = rk.vals[0];
            let rho = pivot.hypot(lead);
            let (c, s) = (pivot / rho, lead / rho);
            threshold *= c.abs();
            // rk' = c rk + s a, a' = -s rk + c a, over the union of their columns.
            merged.cols.clear();
            merged.vals.clear();
            other.cols.clear();
            other.vals.clear();
            let (mut i, mut j) = (0, 0);
            while i < rk.cols.len() || j < a.cols.len() {
                let ci = rk.cols.get(i).copied().unwrap_or(u32::MAX);
                let cj = a.cols.get(j).copied().unwrap_or(u32::MAX);
                let col = ci.min(cj);
                let x = if ci == col {
                    i += 1;
                    rk.vals[i - 1]
                } else {
                    0.0
                };
                let y = if cj == col {
                    j += 1;
                    a.vals[j - 1]
                } else {
                    0.0
                };
                merged.cols.push(col);
                merged.vals.push(c * x + s * y);
                if col != k {
                    let v = -s * x + c * y;
                    if v != 0.0 {
                        other.cols.push(col);
                        other.vals.push(v);
                    }
                }
            }
            if let Some(first) = merged.vals.first_mut() {
                *first = rho;
            }
            merged.rhs = c * rk.rhs + s * a.rhs;
            other.rhs = -s * rk.rhs + c * a.rhs;
            entries = entries + merged.cols.len() - rk.cols.len();
            if entries > MAX_R_ENTRIES {
                return None;
            }
            std::mem::swap(rk, &mut merged);
            std::mem::swap(&mut a, &mut other);
        }
        if !placed {
            dependent.push((index, a.rhs));
        }
    }
    Some(RowRank { rank, dependent })
}

/// A row with ascending, distinct columns (repeats added, zeros and out-of-range
/// columns dropped).
fn normalise(row: &[(u32, f64)], rhs: f64, columns: usize) -> Row {
    let mut pairs: Vec<(u32, f64)> = row
        .iter()
        .copied()
        .filter(|&(c, _)| (c as usize) < columns)
        .collect();
    pairs.sort_unstable_by_key(|&(c, _)| c);
    let mut merged: Vec<(u32, f64)> = Vec::with_capacity(pairs.len());
    for (c, v) in pairs {
        match merged.last_mut() {
            Some(last) if last.0 == c => last.1 += v,
            _ => merged.push((c, v)),
        }
    }
    merged.retain(|&(_, v)| v != 0.0);
    Row {
        cols: merged.iter().map(|&(c, _)| c).collect(),
        vals: merged.iter().map(|&(_, v)| v).collect(),
        rhs,
    }
}

/// Which rows of a sparse matrix (`(column, value)` pairs per row, `columns` columns)
/// depend on the rows before them: a row adding less than `tolerance` of its own length
/// to the span of the earlier ones (Heath's Givens rotations, as the diagnosis finds
/// redundant equations). `None` when the triangular factor would grow past
/// [`MAX_R_ENTRIES`].
pub fn dependent_rows(
    columns: usize,
    rows: &[Vec<(u32, f64)>],
    tolerance: f64,
) -> Option<Vec<usize>> {
    let rhs = vec![0.0; rows.len()];
    row_rank(columns, rows, &rhs, tolerance)
        .map(|r| r.dependent.into_iter().map(|(k, _)| k).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the dense analysis's definition on a small example: x0 + x1 = 1,
    /// x1 + x2 = 2, x0 - x2 = -1 (the first minus the second: consistent), x0 - x2 = 0
    /// (inconsistent), 2 x2 = 4.
    #[test]
    fn dependent_rows_and_their_consistency() {
        let rows = vec![
            vec![(0, 1.0), (1, 1.0)],
            vec![(1, 1.0), (2, 1.0)],
            vec![(0, 1.0), (2, -1.0)],
            vec![(2, -1.0), (0, 1.0)],
            vec![(2, 2.0)],
        ];
        let rhs = [1.0, 2.0, -1.0, 0.0, 4.0];
        let result = row_rank(4, &rows, &rhs, 1e-8).unwrap();
        assert_eq!(result.rank, 3);
        let dep: Vec<usize> = result.dependent.iter().map(|&(k, _)| k).collect();
        assert_eq!(dep, vec![2, 3]);
        assert!(result.dependent[0].1.abs() < 1e-12);
        // Off by 1 from the least-squares fit of the rows before it (the dependent third
        // row counts too): 1 / sqrt(1 + a M^+ a^T) with M = A^T A of rows 0..3, a M^+ a^T
        // = 2/3, so sqrt(3/5).
        assert!((result.dependent[1].1.abs() - 0.6f64.sqrt()).abs() < 1e-12);
    }

    /// A row that only rounding separates from the rows before it is dependent.
    #[test]
    fn nearly_dependent_rows_are_dependent() {
        let rows = vec![
            vec![(0, 1.0), (1, 2.0)],
            vec![(0, 2.0), (1, 4.0 + 1e-12)],
            vec![(0, 2.0), (1, 4.0 + 1e-3)],
        ];
        let result = row_rank(2, &rows, &[0.0; 3], 1e-8).unwrap();
        assert_eq!(result.rank, 2);
        assert_eq!(result.dependent.len(), 1);
        assert_eq!(result.dependent[0].0, 1);
    }

    /// A long chain's out-of-plane block, a discrete beam: per link a height `h` and a
    /// tilt `r`; joint k holds `h_k = h_{k-1} + r_{k-1}` (the previous link's tip) and
    /// `r_k = r_{k-1}` (scaled as tilt rows are, 1/100). Square and regular at any
    /// length, but the rows shrink under the rotations with the square of the length:
    /// judged against their original length they were called dependent near 10,000
    /// links.
    #[test]
    fn a_long_beam_keeps_full_rank() {
        let n = 20_000u32;
        let (h, r) = (|k: u32| 2 * k, |k: u32| 2 * k + 1);
        let mut rows = Vec::new();
        for k in 0..n {
            let mut z = vec![(h(k), 1.0)];
            let mut tilt = vec![(r(k), 0.01)];
            if k > 0 {
                z.extend([(h(k - 1), -1.0), (r(k - 1), -1.0)]);
                tilt.push((r(k - 1), -0.01));
            }
            rows.push(z);
            rows.push(tilt);
        }
        let found = row_rank(2 * n as usize, &rows, &vec![0.0; rows.len()], 1e-8).unwrap();
        assert_eq!(found.rank, 2 * n as usize);
        assert!(found.dependent.is_empty());
    }

    /// The rank of random sparse matrices matches the dense SVD's.
    #[test]
    fn rank_matches_the_singular_values() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as f64 / (1u64 << 31) as f64
        };
        for case in 0..50 {
            let (m, n) = (3 + case % 7, 2 + case % 5);
            // Low-rank rows: combinations of a few random ones.
            let basis: Vec<Vec<f64>> = (0..1 + case % 3)
                .map(|_| (0..n).map(|_| next() - 0.5).collect())
                .collect();
            let dense: Vec<Vec<f64>> = (0..m)
                .map(|_| {
                    let w: Vec<f64> = basis.iter().map(|_| next() - 0.5).collect();
                    (0..n)
                        .map(|j| basis.iter().zip(&w).map(|(b, w)| b[j] * w).sum())
                        .collect()
                })
                .collect();
            let rows: Vec<Vec<(u32, f64)>> = dense
                .iter()
                .map(|r| r.iter().enumerate().map(|(j, &v)| (j as u32, v)).collect())
                .collect();
            let ours = row_rank(n, &rows, &vec![0.0; m], 1e-8).unwrap();
            let flat: Vec<f64> = dense.iter().flatten().copied().collect();
            let svd = nalgebra::DMatrix::from_row_slice(m, n, &flat).svd(false, false);
            let max = svd.singular_values.max();
            let expected = svd
                .singular_values
                .iter()
                .filter(|&&s| s > 1e-9 * max)
                .count();
            assert_eq!(ours.rank, expected, "case {case}");
            assert_eq!(ours.rank + ours.dependent.len(), m);
        }
    }
}
