//! Which constraint rows depend on the rows before them: at the start of a run
//! (redundant joints, tolerance `start::DEPENDENT`) and at each factorization near a
//! singular position (`kkt::NEARLY_DEPENDENT`).
//!
//! The measure is one throughout: in the equations' order, a row is dependent when the
//! part of it outside the span of the independent rows before it is shorter than
//! `tolerance` times the row (columns divided by the solver's weights). Three ways to
//! compute it, by size and tolerance:
//! - a few rows and a loose tolerance: the rows' Gram matrix (sparse dot products) and
//!   its Cholesky factor, row by row (`m^3 / 6`; squaring the measure costs accuracy only
//!   far below [`GRAM_TOLERANCE`]);
//! - a few rows and a tight tolerance: Gram-Schmidt on dense rows, twice (`4 m^2 n`);
//! - many rows: the diagnosis's sparse Givens factorization (`tenon_solve::dependent_rows`).

use tenon_system::TangentJacobian;

/// Up to this many rows, dependent rows are found by dense methods; above, by sparse
/// Givens.
pub(crate) const DENSE_ROWS: usize = 100;
/// At or above this tolerance the Gram matrix's Cholesky factor measures dependence
/// (its squared lengths lose about `1e-16 / tolerance^2` of relative accuracy: nothing
/// at `1e-3`); below, Gram-Schmidt.
pub(crate) const GRAM_TOLERANCE: f64 = 1e-5;

/// Which of `jac`'s rows `given` (positions into `given`, ascending) lie within
/// `tolerance` of the span of the given rows before them (columns divided by
/// `weights`).
pub(crate) fn dependent_rows(
    jac: &TangentJacobian,
    given: &[usize],
    weights: &[f64],
    tolerance: f64,
) -> Vec<usize> {
    let rows = weighted_rows(jac, given, weights);
    if given.len() > DENSE_ROWS {
        let mut dependent =
            tenon_solve::dependent_rows(jac.columns, &rows, tolerance).unwrap_or_default();
        dependent.sort_unstable();
        dependent
    } else if tolerance >= GRAM_TOLERANCE {
        gram_cholesky_dependent(&rows, tolerance)
    } else {
        gram_schmidt_dependent(&rows, jac.columns, tolerance)
    }
}

/// The given rows, sparse, sorted by column, columns divided by their weights.
fn weighted_rows(jac: &TangentJacobian, given: &[usize], weights: &[f64]) -> Vec<Vec<(u32, f64)>> {
    let mut place = vec![usize::MAX; jac.rows];
    for (k, &r) in given.iter().enumerate() {
        if let Some(slot) = place.get_mut(r) {
            *slot = k;
        }
    }
    let mut rows: Vec<Vec<(u32, f64)>> = vec![Vec::new(); given.len()];
    for &(r, c, v) in &jac.entries {
        let Some(&k) = place.get(r as usize) else {
            continue;
        };
        if let (Some(row), Some(w)) = (rows.get_mut(k), weights.get(c as usize)) {
            row.push((c, v / w));
        }
    }
    for row in &mut rows {
        row.sort_unstable_by_key(|&(c, _)| c);
        row.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 += later.1;
            }
            same
        });
    }
    rows
}

fn sparse_dot(a: &[(u32, f64)], b: &[(u32, f64)]) -> f64 {
    let (mut i, mut j, mut sum) = (0, 0, 0.0);
    while let (Some(&(ca, va)), Some(&(cb, vb))) = (a.get(i), b.get(j)) {
        match ca.cmp(&cb) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                sum += va * vb;
                i += 1;
                j += 1;
            }
        }
    }
    sum
}

/// Row by row: `l = L^-1 (G_kb)` against the independent rows `b` so far, and the
/// squared length outside their span `G_kk - |l|^2`.
fn gram_cholesky_dependent(rows: &[Vec<(u32, f64)>], tolerance: f64) -> Vec<usize> {
    let mut basis: Vec<usize> = Vec::new();
    // Row `i` of the lower factor, over the basis rows (`factor[i][j]`, j < i).
    let mut factor: Vec<Vec<f64>> = Vec::new();
    let mut dependent = Vec::new();
    for (k, row) in rows.iter().enumerate() {
        let norm2 = sparse_dot(row, row);
        if norm2 == 0.0 {
            dependent.push(k);
            continue;
        }
        let mut l = Vec::with_capacity(basis.len() + 1);
        for (i, &b) in basis.iter().enumerate() {
            let fi = &factor[i];
            let partial: f64 = fi[..i].iter().zip(&l).map(|(x, y)| x * y).sum();
            l.push((sparse_dot(row, &rows[b]) - partial) / fi[i]);
        }
        let outside = norm2 - l.iter().map(|x| x * x).sum::<f64>();
        if outside <= tolerance * tolerance * norm2 {
            dependent.push(k);
        } else {
            l.push(outside.sqrt());
            factor.push(l);
            basis.push(k);
        }
    }
    dependent
}

/// Classical Gram-Schmidt, each row projected twice.
fn gram_schmidt_dependent(rows: &[Vec<(u32, f64)>], columns: usize, tolerance: f64) -> Vec<usize> {
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let mut dependent = Vec::new();
    for (k, sparse) in rows.iter().enumerate() {
        let mut row = vec![0.0; columns];
        for &(c, v) in sparse {
            if let Some(x) = row.get_mut(c as usize) {
                *x += v;
            }
        }
        let norm0 = row.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm0 == 0.0 {
            dependent.push(k);
            continue;
        }
        for _ in 0..2 {
            for b in &basis {
                let d: f64 = b.iter().zip(&row).map(|(x, y)| x * y).sum();
                for (x, y) in row.iter_mut().zip(b) {
                    *x -= d * y;
                }
            }
        }
        let norm = row.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm <= tolerance * norm0 {
            dependent.push(k);
        } else {
            basis.push(row.into_iter().map(|x| x / norm).collect());
        }
    }
    dependent
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jacobian(rows: &[&[f64]]) -> TangentJacobian {
        let columns = rows.first().map_or(0, |r| r.len());
        let mut entries = Vec::new();
        for (r, row) in rows.iter().enumerate() {
            for (c, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    entries.push((r as u32, c as u32, v));
                }
            }
        }
        TangentJacobian {
            rows: rows.len(),
            columns,
            entries,
        }
    }

    /// The three ways agree: a copy, a combination and a row barely outside the span
    /// (1e-4 of its length: dependent at 1e-3, independent at 1e-8).
    #[test]
    fn the_three_ways_find_the_same_rows() {
        let e = 1e-4;
        let j = jacobian(&[
            &[1.0, 0.0, 0.0, 2.0],
            &[0.0, 1.0, 0.0, 0.0],
            &[1.0, 0.0, 0.0, 2.0],
            &[1.0, 3.0, 0.0, 2.0],
            &[0.0, 1.0, e * 2.4, 0.0],
            &[0.0, 0.0, 0.0, 0.0],
            &[0.0, 0.0, 1.0, 1.0],
        ]);
        let given: Vec<usize> = (0..7).collect();
        let weights = [1.0, 2.0, 1.0, 0.5];
        let rows = weighted_rows(&j, &given, &weights);
        for tolerance in [1e-3, 1e-8] {
            let gs = gram_schmidt_dependent(&rows, 4, tolerance);
            let givens = {
                let mut d = tenon_solve::dependent_rows(4, &rows, tolerance).unwrap();
                d.sort_unstable();
                d
            };
            if tolerance >= GRAM_TOLERANCE {
                assert_eq!(gram_cholesky_dependent(&rows, tolerance), gs);
                assert_eq!(gs, vec![2, 3, 4, 5]);
            } else {
                assert_eq!(gs, vec![2, 3, 5]);
            }
            assert_eq!(givens, gs, "tolerance {tolerance}");
        }
    }
}
