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
//! Most factorizations repeat one pattern (a run's Jacobian frame after frame, a KKT
//! matrix step after step), and their pivots rarely change. So each partial-pivoting
//! factorization leaves a plan: its row order and the structure of its factors, worked
//! out from the positions of the entries (fill included, zeros at this pose included).
//! The next factorization of the same positions reuses it: rows put in that order, each
//! eliminated over its structure alone (no pivot search, no scan for zeros), and taken
//! only while every multiplier stays within [`STATIC_MULTIPLIER`] (threshold pivoting's
//! bound on growth, partial pivoting's being 1). A larger multiplier or a zero pivot
//! sends the factorization back to partial pivoting, which makes a new plan.
//!
//! Architecture invariant: a solve's sums run over a row's listed entries in column
//! order, so the results are the same from run to run and thread to thread.

/// Largest multiplier a factorization in a plan's row order may take (else it pivots
/// anew): threshold pivoting with threshold 0.1.
const STATIC_MULTIPLIER: f64 = 10.0;

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
    /// The row order and factor structure of the last partial-pivoting factorization,
    /// for the next one of the same positions.
    plan: Option<Plan>,
}

/// What a factorization of one pattern of positions in one row order needs: the
/// positions it was made for, each row's entries with the rows in that order, and the
/// structure of the factors (`lower` and `upper` of the
/// [`DenseLu`] hold it, with their values; the plan keeps their sizes to check them).
#[derive(Debug, Clone)]
struct Plan {
    key: Vec<(u32, u32)>,
    /// Per row in the plan's order, its entries (index in the list, column): row `i`'s
    /// are `row_entries[row_entry_start[i]..row_entry_start[i + 1]]`.
    row_entries: Vec<(u32, u32)>,
    row_entry_start: Vec<usize>,
    /// Entries of `L` and of `U` listed.
    sizes: (usize, usize),
    /// Where each row of `U` starts in its list.
    upper_start: Vec<usize>,
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
        if self.factor_in_plan(n, entries) {
            return true;
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
        self.plan = None;
        if invertible {
            self.make_plan(entries);
        } else {
            self.list_factors();
        }
        true
    }

    /// Factors `entries` in the plan's row order over its structure, where the plan is
    /// for these positions and every multiplier stays within [`STATIC_MULTIPLIER`];
    /// `false` (the factors then undefined) otherwise.
    fn factor_in_plan(&mut self, n: usize, entries: &[(u32, u32, f64)]) -> bool {
        let Some(plan) = self.plan.as_ref() else {
            return false;
        };
        if n != self.pivots.len()
            || plan.sizes != (self.lower.columns.len(), self.upper.columns.len())
            || !super::same_positions(&plan.key, entries)
        {
            return false;
        }
        // Row by row in a dense work row (only the places in the row's structure are
        // cleared, filled and read): row `i`'s entries less its multiples of the rows
        // of `U` before it, in ascending order (each `U` row `k` is final once row `k`
        // is done).
        if self.lu.len() < n {
            self.lu.resize(n, 0.0);
        }
        let w = &mut self.lu[..n];
        let (lower, upper, diagonal) = (&mut self.lower, &mut self.upper, &mut self.diagonal);
        let mut work = 0;
        let mut l = 0;
        for i in 0..n {
            let nl = lower.len[i] as usize;
            let (us, nu) = (plan.upper_start[i], upper.len[i] as usize);
            for &j in &lower.columns[l..l + nl] {
                w[j as usize] = 0.0;
            }
            for &j in &upper.columns[us..us + nu] {
                w[j as usize] = 0.0;
            }
            w[i] = 0.0;
            let (es, ee) = (plan.row_entry_start[i], plan.row_entry_start[i + 1]);
            for &(e, j) in &plan.row_entries[es..ee] {
                if let (Some(x), Some(&(_, _, v))) =
                    (w.get_mut(j as usize), entries.get(e as usize))
                {
                    *x += v;
                }
            }
            for x in l..l + nl {
                let k = lower.columns[x] as usize;
                let f = w[k] / diagonal[k];
                if f.is_nan() || f.abs() > STATIC_MULTIPLIER {
                    return false;
                }
                lower.values[x] = f;
                let (start, len) = (plan.upper_start[k], upper.len[k] as usize);
                let (columns, values) = (
                    &upper.columns[start..start + len],
                    &upper.values[start..start + len],
                );
                for (&j, &u) in columns.iter().zip(values) {
                    w[j as usize] -= f * u;
                }
                work += len;
            }
            l += nl;
            let d = w[i];
            if d == 0.0 || !d.is_finite() {
                return false;
            }
            diagonal[i] = d;
            for x in us..us + nu {
                upper.values[x] = w[upper.columns[x] as usize];
            }
        }
        self.invertible = true;
        self.factor_work = work + 2 * (l + upper.columns.len()) + entries.len();
        true
    }

    /// After a partial-pivoting factorization of `entries` (invertible): the plan of its
    /// row order, and the factors listed over the plan's structure.
    fn make_plan(&mut self, entries: &[(u32, u32, f64)]) {
        let n = self.n;
        // Where each original row ends up: the swaps replayed.
        let mut order: Vec<usize> = (0..n).collect();
        for (k, &p) in self.pivots.iter().enumerate() {
            order.swap(k, p as usize);
        }
        let mut place = vec![0usize; n];
        for (k, &r) in order.iter().enumerate() {
            place[r] = k;
        }
        let slot: Vec<usize> = entries
            .iter()
            .map(|&(r, c, _)| {
                let (r, c) = (r as usize, c as usize);
                if r < n && c < n {
                    place[r] * n + c
                } else {
                    usize::MAX
                }
            })
            .collect();
        // The structure, row by row in the new order: a row's positions, and those of
        // every `U` row it takes a multiple of (ascending, so fill found is used).
        let mut rows: Vec<Vec<bool>> = vec![vec![false; n]; n];
        for &s in &slot {
            if s != usize::MAX {
                rows[s / n][s % n] = true;
            }
        }
        self.lower.clear();
        self.upper.clear();
        self.diagonal.clear();
        for i in 0..n {
            let (done, rest) = rows.split_at_mut(i);
            let row = &mut rest[0];
            for (k, u_row) in done.iter().enumerate() {
                if row[k] {
                    for j in k + 1..n {
                        row[j] |= u_row[j];
                    }
                }
            }
            let before = (self.lower.columns.len(), self.upper.columns.len());
            for (j, &there) in row.iter().enumerate() {
                if there && j != i {
                    let factor = if j < i {
                        &mut self.lower
                    } else {
                        &mut self.upper
                    };
                    factor.columns.push(j as u32);
                    factor.values.push(self.lu[i * n + j]);
                }
            }
            self.lower.end_row(before.0);
            self.upper.end_row(before.1);
            self.diagonal.push(self.lu[i * n + i]);
            // Only the `U` part is read by the rows after.
            row[..=i].iter_mut().for_each(|x| *x = false);
        }
        // Each row's entries, rows in the plan's order.
        let mut row_entry_start = vec![0usize; n + 1];
        for &s in &slot {
            if s != usize::MAX {
                row_entry_start[s / n + 1] += 1;
            }
        }
        for i in 0..n {
            row_entry_start[i + 1] += row_entry_start[i];
        }
        let mut next = row_entry_start.clone();
        let mut row_entries = vec![(0u32, 0u32); row_entry_start[n]];
        for (e, &s) in slot.iter().enumerate() {
            if s != usize::MAX {
                row_entries[next[s / n]] = (e as u32, (s % n) as u32);
                next[s / n] += 1;
            }
        }
        let mut upper_start = Vec::with_capacity(n);
        let mut start = 0;
        for &len in &self.upper.len {
            upper_start.push(start);
            start += len as usize;
        }
        self.plan = Some(Plan {
            key: entries.iter().map(|&(r, c, _)| (r, c)).collect(),
            row_entries,
            row_entry_start,
            sizes: (self.lower.columns.len(), self.upper.columns.len()),
            upper_start,
        });
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

    /// `ln |det A|` (the sum of the logarithms of the pivots' sizes); `None` where a
    /// pivot is zero.
    pub fn log_abs_det(&self) -> Option<f64> {
        // The pivots multiplied while the product stays far from overflow and
        // underflow, its logarithm taken when it leaves that range (one or two
        // logarithms rather than one per pivot).
        const RANGE: std::ops::RangeInclusive<f64> = 1e-100..=1e100;
        self.invertible.then(|| {
            let (mut log, mut product) = (0.0, 1.0f64);
            for d in self.diagonal.iter().map(|d| d.abs()) {
                if RANGE.contains(&d) {
                    product *= d;
                    if !RANGE.contains(&product) {
                        log += product.ln();
                        product = 1.0;
                    }
                } else {
                    log += d.ln();
                }
            }
            log + product.ln()
        })
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
            // |det| by the pivots, against nalgebra's.
            let det = dense.determinant().abs().ln();
            let log_det = lu.log_abs_det().expect("invertible");
            assert!(
                (log_det - det).abs() < 1e-9 * (1.0 + det.abs()),
                "n = {n}: {log_det} vs {det}"
            );
            // The counts: a solve reads each factor entry once, a factorization at
            // least every entry of the matrix.
            let (factor, solve) = lu.work();
            assert!(
                solve >= 2 * n && factor >= 2 * n * n,
                "n = {n}: {factor} {solve}"
            );
        }
    }

    /// `A x - b`, largest entry.
    fn residual(entries: &[(u32, u32, f64)], x: &[f64], b: &[f64]) -> f64 {
        let mut r = b.to_vec();
        for &(i, j, v) in entries {
            r[i as usize] -= v * x[j as usize];
        }
        r.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    #[test]
    fn a_refactorization_of_the_same_positions_reuses_the_plan_and_pivots_anew_when_it_must() {
        for n in [2, 5, 8, 33, 60] {
            let first = sample(n);
            let mut lu = DenseLu::new();
            assert!(lu.factor_entries(n, &first));
            let pivots = lu.pivots.clone();
            assert!(lu.plan.is_some(), "n = {n}");
            // The same positions, values moved a little (a zero kept in place too):
            // factored in the plan's order, as exact as a fresh factorization.
            let moved: Vec<(u32, u32, f64)> = first
                .iter()
                .enumerate()
                .map(|(k, &(r, c, v))| {
                    (
                        r,
                        c,
                        if k == 3 {
                            0.0
                        } else {
                            v * (1.0 + 0.01 * (k as f64).sin())
                        },
                    )
                })
                .collect();
            let b: Vec<f64> = (0..n).map(|k| (k as f64 * 0.71).cos()).collect();
            let mut fresh = DenseLu::new();
            assert!(fresh.factor_entries(n, &moved));
            assert!(lu.factor_entries(n, &moved));
            assert_eq!(lu.pivots, pivots, "n = {n}: the plan's order is kept");
            let (mut x, mut y) = (b.clone(), b.clone());
            assert!(lu.solve_in_place(&mut x) && fresh.solve_in_place(&mut y));
            assert!(residual(&moved, &x, &b) < 1e-12, "n = {n}");
            for (a, r) in x.iter().zip(&y) {
                assert!(
                    (a - r).abs() <= 1e-10 * (1.0 + r.abs()),
                    "n = {n}: {a} vs {r}"
                );
            }
            assert!(
                lu.work().0 <= fresh.work().0,
                "n = {n}: {:?} {:?}",
                lu.work(),
                fresh.work()
            );
        }
        // A pivot that became small: the plan's order would take a multiplier of 1e12,
        // so the rows are pivoted anew, and the solve stays exact.
        let mut lu = DenseLu::new();
        let a = [(0, 0, 2.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 3.0)];
        assert!(lu.factor_entries(2, &a));
        assert_eq!(lu.pivots, [0, 1]);
        let small = [(0, 0, 1e-12), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 3.0)];
        assert!(lu.factor_entries(2, &small));
        assert_eq!(lu.pivots, [1, 1]);
        let mut x = [1.0, 2.0];
        assert!(lu.solve_in_place(&mut x));
        assert!(residual(&small, &x, &[1.0, 2.0]) < 1e-15);
        // Other positions: a new plan.
        let other = [(0, 0, 1.0), (1, 1, 1.0)];
        assert!(lu.factor_entries(2, &other));
        let mut x = [4.0, 5.0];
        assert!(lu.solve_in_place(&mut x));
        assert_eq!(x, [4.0, 5.0]);
        // A singular matrix of the plan's positions is refused, as a fresh one is.
        assert!(lu.factor_entries(2, &[(0, 0, 0.0), (1, 1, 1.0)]));
        assert!(!lu.solve_in_place(&mut [1.0, 1.0]));
        // Pivots far apart in size: the logarithm of |det| without overflow or underflow.
        let spread = [
            (0, 0, 1e-200),
            (1, 1, -1e200),
            (2, 2, 1e150),
            (3, 3, 3.0),
            (4, 4, 1e90),
        ];
        assert!(lu.factor_entries(5, &spread));
        let expected = 240.0 * std::f64::consts::LN_10 + 3.0f64.ln();
        let got = lu.log_abs_det().expect("invertible");
        assert!(
            (got - expected).abs() < 1e-12 * expected,
            "{got} vs {expected}"
        );
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
