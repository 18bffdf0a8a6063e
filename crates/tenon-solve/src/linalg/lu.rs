//! Dense LU with partial pivoting for small square systems that are factored once and
//! solved several times (a dynamics step's KKT matrix: a factorization, then a solve per
//! Newton iteration and per rate).
//!
//! Row-major, on a buffer kept from one factorization to the next. A KKT matrix is
//! mostly zeros (a 6 by 6 mass block per part, a joint's rows reading two parts), and so
//! are its factors: A02's 59 by 59 matrix has 225 nonzeros and its `L` and `U` 431 of
//! 3,481 entries. The elimination skips zero multipliers and updates only the columns
//! where the pivot row is not zero, and the factors' nonzeros are listed row by row once
//! per factorization, so that each solve reads only those.
//! Measured on A02 (callgrind, 1 s of simulation): nalgebra's dense `LU::solve_mut` took
//! 15,900 instructions a solve.
//!
//! Architecture invariant: a solve's sums run over a row's nonzeros in column order, so
//! the results are the same from run to run and thread to thread.

/// The LU factors of a square matrix, `P A = L U` (`L` unit lower triangular).
#[derive(Debug, Default, Clone)]
pub struct DenseLu {
    n: usize,
    /// `L` below the diagonal and `U` on and above it, row-major.
    lu: Vec<f64>,
    /// `pivots[k]`: the row swapped into row `k` at step `k`.
    pivots: Vec<u32>,
    /// Row `i` of `L` (below the diagonal) is `lower[lower_start[i]..lower_start[i +
    /// 1]]`, `(column, value)`; of `U` (right of the diagonal) likewise in `upper`; the
    /// diagonal of `U` in `diagonal`.
    lower: Factor,
    upper: Factor,
    diagonal: Vec<f64>,
    /// Whether every pivot is nonzero (the matrix is numerically invertible).
    invertible: bool,
    /// Operations the last factorization took (entries visited and multiply-adds).
    factor_work: usize,
}

impl DenseLu {
    /// An empty factorization (factor it before solving).
    pub fn new() -> DenseLu {
        DenseLu::default()
    }

    /// Factors the `n` by `n` matrix that is the sum of `entries` (`(row, column,
    /// value)`; repeated positions add; positions outside the matrix are ignored).
    /// `false` when an entry is not finite. A zero pivot is not a failure here: the
    /// factorization is kept and [`solve_in_place`](Self::solve_in_place) refuses.
    pub fn factor_entries(&mut self, n: usize, entries: &[(u32, u32, f64)]) -> bool {
        self.n = n;
        self.invertible = false;
        if !entries.iter().all(|e| e.2.is_finite()) {
            return false;
        }
        self.lu.clear();
        self.lu.resize(n * n, 0.0);
        for &(r, c, v) in entries {
            let (r, c) = (r as usize, c as usize);
            if r < n && c < n {
                self.lu[r * n + c] += v;
            }
        }
        self.pivots.clear();
        self.pivots.resize(n, 0);
        let (invertible, work) = eliminate(&mut self.lu, n, &mut self.pivots);
        self.invertible = invertible;
        self.factor_work = work + 2 * n * n + entries.len();
        self.list_factors();
        true
    }

    /// Operations of the last factorization and of one solve with it (entries visited
    /// and multiply-adds, counted as they happen): what refactoring costs against a solve.
    pub fn work(&self) -> (usize, usize) {
        let solve = self.lower.columns.len() + self.upper.columns.len() + 2 * self.n;
        (self.factor_work, solve)
    }

    /// Lists the factors' nonzeros row by row.
    fn list_factors(&mut self) {
        let n = self.n;
        self.lower.clear();
        self.upper.clear();
        self.diagonal.clear();
        for (i, row) in self.lu.chunks_exact(n.max(1)).enumerate().take(n) {
            let before = (self.lower.columns.len(), self.upper.columns.len());
            for (j, &v) in row.iter().enumerate() {
                if v != 0.0 && j != i {
                    let factor = if j < i {
                        &mut self.lower
                    } else {
                        &mut self.upper
                    };
                    factor.columns.push(j as u32);
                    factor.values.push(v);
                }
            }
            self.lower.end_row(before.0);
            self.upper.end_row(before.1);
            self.diagonal.push(row[i]);
        }
    }

    /// The size of the matrix factored.
    pub fn size(&self) -> usize {
        self.n
    }

    /// Solves `A x = b` in place; `false` (with `b` undefined) when a pivot is zero, `b`
    /// is not of the matrix's size or the result is not finite.
    pub fn solve_in_place(&self, b: &mut [f64]) -> bool {
        let n = self.n;
        if !self.invertible || b.len() != n {
            return false;
        }
        for (k, &p) in self.pivots.iter().enumerate() {
            b.swap(k, p as usize);
        }
        let (l, u) = (&self.lower, &self.upper);
        let mut k = 0;
        for (i, &len) in l.len.iter().enumerate() {
            let end = k + len as usize;
            let mut s = 0.0;
            for (&j, &v) in l.columns[k..end].iter().zip(&l.values[k..end]) {
                s += v * b[j as usize];
            }
            b[i] -= s;
            k = end;
        }
        let mut end = u.columns.len();
        for (i, (&len, d)) in u.len.iter().zip(&self.diagonal).enumerate().rev() {
            let start = end - len as usize;
            let mut s = 0.0;
            for (&j, &v) in u.columns[start..end].iter().zip(&u.values[start..end]) {
                s += v * b[j as usize];
            }
            b[i] = (b[i] - s) / d;
            end = start;
        }
        b.iter().all(|x| x.is_finite())
    }
}

/// One triangle of the factors, its nonzeros listed row by row: row `i` has `len[i]`
/// entries (`columns` and `values`), after those of the rows before it.
#[derive(Debug, Clone, Default)]
struct Factor {
    len: Vec<u32>,
    columns: Vec<u32>,
    values: Vec<f64>,
}

impl Factor {
    fn clear(&mut self) {
        self.len.clear();
        self.columns.clear();
        self.values.clear();
    }

    /// Ends a row that began when the list held `before` entries.
    fn end_row(&mut self, before: usize) {
        self.len.push((self.columns.len() - before) as u32);
    }
}

/// LU with partial pivoting of the row-major `n` by `n` matrix `a`, in place; whether
/// every pivot is nonzero. A zero column below the diagonal is stepped over (its pivot
/// stays zero).
fn eliminate(a: &mut [f64], n: usize, pivots: &mut [u32]) -> (bool, usize) {
    let mut invertible = true;
    let mut work = 0;
    // The pivot row's nonzeros right of the diagonal: only those columns change.
    let mut tail: Vec<(usize, f64)> = Vec::with_capacity(n);
    for k in 0..n {
        let (p, top) = (k..n)
            .map(|i| (i, a[i * n + k].abs()))
            .fold((k, -1.0), |best, x| if x.1 > best.1 { x } else { best });
        pivots[k] = p as u32;
        work += 3 * (n - k);
        if top == 0.0 {
            invertible = false;
            continue;
        }
        if p != k {
            let (upper, lower) = a.split_at_mut(p * n);
            upper[k * n..k * n + n].swap_with_slice(&mut lower[..n]);
        }
        let (upper, lower) = a.split_at_mut((k + 1) * n);
        let pivot_row = &upper[k * n..(k + 1) * n];
        let pivot = pivot_row[k];
        tail.clear();
        tail.extend(
            pivot_row
                .iter()
                .enumerate()
                .skip(k + 1)
                .filter(|(_, &u)| u != 0.0)
                .map(|(j, &u)| (j, u)),
        );
        for row in lower.chunks_exact_mut(n) {
            if row[k] == 0.0 {
                continue;
            }
            let f = row[k] / pivot;
            row[k] = f;
            for &(j, u) in &tail {
                row[j] -= f * u;
            }
            work += tail.len();
        }
    }
    (invertible, work)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matrix with zeros, a row swap needed at the first step, and a dominant
    /// off-diagonal entry.
    fn sample(n: usize) -> Vec<(u32, u32, f64)> {
        let mut e = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let v = ((i * 7 + j * 3) % 11) as f64 - 5.0;
                if (i + 2 * j) % 3 != 0 && !(i == 0 && j == 0) {
                    e.push((i as u32, j as u32, v / (1.0 + (i + j) as f64)));
                }
            }
            e.push((i as u32, ((i + 1) % n) as u32, 4.0));
        }
        e
    }

    #[test]
    fn solves_to_rounding_against_nalgebra() {
        for n in [1, 2, 3, 5, 8, 33, 60] {
            let entries = sample(n);
            let mut lu = DenseLu::new();
            assert!(lu.factor_entries(n, &entries));
            let mut dense = nalgebra::DMatrix::<f64>::zeros(n, n);
            for &(r, c, v) in &entries {
                dense[(r as usize, c as usize)] += v;
            }
            let b: Vec<f64> = (0..n).map(|k| (k as f64 * 0.37).sin() + 0.5).collect();
            let mut x = b.clone();
            assert!(lu.solve_in_place(&mut x), "n = {n}");
            let reference = dense
                .clone()
                .lu()
                .solve(&nalgebra::DVector::from_column_slice(&b))
                .expect("the sample is invertible");
            let residual = &dense * nalgebra::DVector::from_column_slice(&x)
                - nalgebra::DVector::from_column_slice(&b);
            assert!(
                residual.amax() < 1e-12,
                "n = {n}: residual {}",
                residual.amax()
            );
            for (a, r) in x.iter().zip(reference.iter()) {
                assert!(
                    (a - r).abs() <= 1e-10 * (1.0 + r.abs()),
                    "n = {n}: {a} vs {r}"
                );
            }
            // The counts: a solve reads each factor entry once, a factorization at
            // least every entry of the matrix.
            let (factor, solve) = lu.work();
            assert!(
                solve >= 2 * n && factor >= 2 * n * n,
                "n = {n}: {factor} {solve}"
            );
        }
    }

    #[test]
    fn a_singular_matrix_factors_but_refuses_to_solve_and_bad_input_is_refused() {
        // Two equal rows.
        let entries = [(0, 0, 1.0), (0, 1, 2.0), (1, 0, 1.0), (1, 1, 2.0)];
        let mut lu = DenseLu::new();
        assert!(lu.factor_entries(2, &entries));
        assert!(!lu.solve_in_place(&mut [1.0, 2.0]));
        assert!(!lu.factor_entries(2, &[(0, 0, f64::NAN)]));
        assert!(!lu.solve_in_place(&mut [1.0, 2.0]));
        // The wrong length.
        assert!(lu.factor_entries(1, &[(0, 0, 2.0)]));
        assert!(!lu.solve_in_place(&mut [1.0, 2.0]));
        let mut b = [3.0];
        assert!(lu.solve_in_place(&mut b));
        assert_eq!(b, [1.5]);
    }
}
