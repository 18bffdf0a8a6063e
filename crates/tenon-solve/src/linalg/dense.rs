//! Small pieces (up to [`DENSE_COLUMNS`](super::DENSE_COLUMNS) columns), dense: the
//! weighted Jacobian `A` as its nonzeros row by row (the Jacobian of a joint reads two
//! parts, so a piece's rows are mostly zeros; the lists are made once per pattern and
//! refilled), `A^T A` summed from them, a Cholesky factor on a flat buffer, and `A` in
//! column-major storage only when its rank or pseudo-inverse is asked for.
//!
//! These kernels are written out because a solve calls them thousands of times on
//! matrices of a few dozen columns, where the general-purpose routines spend much of
//! their time in set-up and allocation. Measured on a 21 by 18 matrix (one timing loop,
//! same run): nalgebra's `ColPivQR` 13 us against 6 us for [`rank`]; the Cholesky
//! about as fast as nalgebra's; `A^T A` from the nonzeros takes about 210
//! multiplications on a driven four-bar (84 nonzeros in 21 rows) where the dense product
//! takes 3,600.

use tenon_system::TangentJacobian;

use crate::{SolveError, RANK_TOLERANCE};

/// The weighted Jacobian of a small piece and what is derived from it.
pub(crate) struct DenseStep {
    rows: usize,
    cols: usize,
    /// Row `r`'s nonzeros are `nonzeros[row_start[r]..row_start[r + 1]]`.
    row_start: Vec<usize>,
    nonzeros: Vec<(usize, f64)>,
    /// `A^T A`, row-major, lower triangle filled.
    gram: Vec<f64>,
    column_norm: f64,
    /// Room for `fill`: per column, the row that last listed it; the `(row, column)`
    /// pairs listed.
    seen: Vec<u32>,
    listed: Vec<(u32, usize)>,
    /// The Jacobian positions and column map the row lists were made for, and per
    /// Jacobian entry its place in `nonzeros` (`u32::MAX`: ignored): while they hold,
    /// a fill only adds the values in.
    key: Vec<(u32, u32)>,
    key_columns: Vec<usize>,
    slot: Vec<u32>,
}

impl DenseStep {
    pub(crate) fn new(rows: usize, cols: usize) -> DenseStep {
        DenseStep {
            rows,
            cols,
            // Sized at the first fill: a piece that is solved where it starts is never
            // filled (its rank is taken without, `rank_of`).
            row_start: Vec::new(),
            nonzeros: Vec::new(),
            gram: Vec::new(),
            column_norm: 0.0,
            seen: Vec::new(),
            listed: Vec::new(),
            key: Vec::new(),
            key_columns: Vec::new(),
            slot: Vec::new(),
        }
    }

    /// Sets `A = J W^-1` (entry `(r, c)` to column `col_of[c]`, divided by
    /// `weight[col]`; entries of other columns ignored), its row nonzeros and `A^T A`.
    /// The row lists (every position the Jacobian lists, zero or not) are made when the
    /// Jacobian's positions or the column map change, and reused while they hold.
    pub(crate) fn fill(&mut self, jac: &TangentJacobian, col_of: &[usize], weight: &[f64]) {
        let (rows, cols) = (self.rows, self.cols);
        let same = self.key_columns == col_of && super::same_positions(&self.key, &jac.entries);
        if !same {
            self.list_rows(jac, col_of);
        }
        for (_, v) in self.nonzeros.iter_mut() {
            *v = 0.0;
        }
        for (&slot, &(_, _, v)) in self.slot.iter().zip(&jac.entries) {
            let Some(entry) = self.nonzeros.get_mut(slot as usize) else {
                continue;
            };
            entry.1 += v / weight[entry.0];
        }
        self.gram.clear();
        self.gram.resize(cols * cols, 0.0);
        for r in 0..rows {
            let row = &self.nonzeros[self.row_start[r]..self.row_start[r + 1]];
            for (x, &(j, vj)) in row.iter().enumerate() {
                for &(i, vi) in &row[x..] {
                    // i >= j: lower triangle, row i.
                    self.gram[i * cols + j] += vi * vj;
                }
            }
        }
        self.column_norm = (0..cols)
            .map(|j| self.gram[j * cols + j])
            .fold(0.0f64, f64::max)
            .sqrt();
    }

    /// Makes the row lists for `jac`'s positions and `col_of`: each `(row, column)`
    /// once, rows in order and each row's columns as first met, and each entry's slot.
    fn list_rows(&mut self, jac: &TangentJacobian, col_of: &[usize]) {
        let (rows, cols) = (self.rows, self.cols);
        let column = |c: u32, r: u32| -> Option<usize> {
            let j = *col_of.get(c as usize)?;
            (j < cols && (r as usize) < rows).then_some(j)
        };
        // Each (row, column) is listed once, when first met; the Jacobian comes row by
        // row, but a column may repeat within a row, so `seen` marks the row that last
        // listed each column.
        let mut seen = std::mem::take(&mut self.seen);
        seen.clear();
        seen.resize(cols, u32::MAX);
        let mut listed: Vec<(u32, usize)> = std::mem::take(&mut self.listed);
        listed.clear();
        listed.reserve(jac.entries.len());
        // Each entry's place in `listed` (where it was listed, or where its column was
        // listed in its row), kept in `slot`.
        let mut place = vec![0u32; cols];
        self.slot.clear();
        for &(r, c, _) in &jac.entries {
            let Some(j) = column(c, r) else {
                self.slot.push(u32::MAX);
                continue;
            };
            if seen[j] != r {
                seen[j] = r;
                place[j] = listed.len() as u32;
                listed.push((r, j));
            }
            self.slot.push(place[j]);
        }
        // Rows in order (a stable sort keeps each row's columns as met); the places are
        // then looked up again.
        let sorted = listed.windows(2).all(|w| w[0].0 <= w[1].0);
        if !sorted {
            listed.sort_by_key(|&(r, _)| r);
        }
        self.row_start.clear();
        self.row_start.reserve(rows + 1);
        self.nonzeros.clear();
        self.nonzeros.reserve(listed.len());
        let mut next = 0;
        for r in 0..rows {
            self.row_start.push(self.nonzeros.len());
            while next < listed.len() && listed[next].0 as usize == r {
                self.nonzeros.push((listed[next].1, 0.0));
                next += 1;
            }
        }
        self.row_start.push(self.nonzeros.len());
        if !sorted {
            self.slot.clear();
            for &(r, c, _) in &jac.entries {
                let slot = column(c, r).and_then(|j| {
                    let (a, z) = (self.row_start[r as usize], self.row_start[r as usize + 1]);
                    self.nonzeros[a..z]
                        .iter()
                        .position(|&(k, _)| k == j)
                        .map(|p| (a + p) as u32)
                });
                self.slot.push(slot.unwrap_or(u32::MAX));
            }
        }
        self.key.clear();
        self.key.extend(jac.entries.iter().map(|&(r, c, _)| (r, c)));
        self.key_columns.clear();
        self.key_columns.extend_from_slice(col_of);
        self.seen = seen;
        self.listed = listed;
    }

    /// `A`, column-major (made from the row lists: only the rank and the
    /// pseudo-inverse need it, rarely).
    fn dense(&self) -> Vec<f64> {
        let rows = self.rows;
        let mut a = vec![0.0; rows * self.cols];
        for r in 0..rows {
            for &(j, v) in &self.nonzeros[self.row_start[r]..self.row_start[r + 1]] {
                a[j * rows + r] = v;
            }
        }
        a
    }

    /// The largest column norm of `A`.
    pub(crate) fn scale(&self) -> f64 {
        self.column_norm
    }

    /// Numerical rank of `A` (see [`rank`]).
    pub(crate) fn rank(&self) -> usize {
        rank(&self.dense(), self.rows, self.cols)
    }

    /// [`rank`](Self::rank) of `A = J W^-1` made from `jac` as [`fill`](Self::fill)
    /// makes it (the same sums, in the same order), without filling this matrix: no row
    /// lists and no `A^T A`, which only a step needs (the rank at a final pose).
    pub(crate) fn rank_of(&self, jac: &TangentJacobian, col_of: &[usize], weight: &[f64]) -> usize {
        let (rows, cols) = (self.rows, self.cols);
        let mut a = vec![0.0; rows * cols];
        for &(r, c, v) in &jac.entries {
            let Some(&j) = col_of.get(c as usize) else {
                continue;
            };
            if j < cols && (r as usize) < rows {
                if let Some(cell) = a.get_mut(j * rows + r as usize) {
                    *cell += v / weight[j];
                }
            }
        }
        rank(&a, rows, cols)
    }

    /// As many rows of `A` as its rank, independent: the pivots of a QR with column
    /// pivoting of `A^T` (whose column-major storage is `A`'s row-major), in ascending
    /// order.
    pub(crate) fn independent_rows(&self) -> Vec<usize> {
        let (rows, cols) = (self.rows, self.cols);
        let mut a_t = vec![0.0; rows * cols];
        for r in 0..rows {
            for &(j, v) in &self.nonzeros[self.row_start[r]..self.row_start[r + 1]] {
                a_t[r * cols + j] = v;
            }
        }
        let mut kept = pivoted_rank(&a_t, cols, rows);
        kept.sort_unstable();
        kept
    }

    /// `A`'s pseudo-inverse by a singular value decomposition (singular values below
    /// [`RANK_TOLERANCE`] of the largest are zero), for exact least-norm solutions where
    /// `A` has a null space (a regularised normal solve leaves rounding noise along it).
    pub(crate) fn pseudo_inverse(&self, rank: Option<usize>) -> PseudoInverse {
        let (rows, cols) = (self.rows, self.cols);
        let a = nalgebra::DMatrix::from_column_slice(rows, cols, &self.dense());
        // Independent rows (the rank known to be the row count): through the rows.
        if rank == Some(rows) && rows <= cols {
            let gram = &a * a.transpose();
            if let Some(gram) = nalgebra::Cholesky::new(gram) {
                return PseudoInverse::Rows { a, gram };
            }
        }
        let Some(svd) = super::thin_svd(&a) else {
            return PseudoInverse::Svd {
                u: nalgebra::DMatrix::zeros(rows, 0),
                sigma: Vec::new(),
                v_t: nalgebra::DMatrix::zeros(0, cols),
            };
        };
        let s = &svd.singular_values;
        let smax = s.iter().fold(0.0f64, |m, &x| m.max(x));
        let keep: Vec<usize> = (0..s.len())
            .filter(|&k| s[k] > RANK_TOLERANCE * smax.max(1e-300))
            .collect();
        PseudoInverse::Svd {
            u: svd.u.select_columns(&keep),
            sigma: keep.iter().map(|&k| s[k]).collect(),
            v_t: svd.v_t.select_rows(&keep),
        }
    }

    /// `A^T A + mu I` factored (`mu` raised a hundredfold, up to eight times, while it is
    /// not numerically positive definite).
    pub(crate) fn factor(&self, mu: f64) -> Result<Cholesky, SolveError> {
        let n = self.cols;
        let mut mu = mu.max(1e-300);
        let mut l = vec![0.0; n * n];
        for _ in 0..8 {
            // (A matrix never filled is all zeros.)
            match self.gram.len() == l.len() {
                true => l.copy_from_slice(&self.gram),
                false => l.fill(0.0),
            }
            for k in 0..n {
                l[k * n + k] += mu;
            }
            if cholesky_in_place(&mut l, n) {
                return Ok(Cholesky { n, l });
            }
            mu *= 100.0;
        }
        Err(SolveError::Factorization(
            "normal equations could not be factored".into(),
        ))
    }

    /// `A^T r`.
    /// `r - A x`.
    pub(crate) fn residual_of(&self, r: &[f64], x: &[f64]) -> Vec<f64> {
        (0..self.rows)
            .map(|row| {
                let ax: f64 = self.nonzeros[self.row_start[row]..self.row_start[row + 1]]
                    .iter()
                    .map(|&(j, v)| v * x[j])
                    .sum();
                r[row] - ax
            })
            .collect()
    }

    pub(crate) fn transpose_times(&self, r: &[f64]) -> Vec<f64> {
        let mut x = vec![0.0; self.cols];
        for (row, &ri) in r.iter().enumerate().take(self.rows) {
            for &(j, v) in &self.nonzeros[self.row_start[row]..self.row_start[row + 1]] {
                x[j] += v * ri;
            }
        }
        x
    }
}

/// A lower-triangular Cholesky factor `L` (row-major, `n` by `n`) of a symmetric
/// positive definite matrix `L L^T`.
pub(crate) struct Cholesky {
    n: usize,
    l: Vec<f64>,
}

impl Cholesky {
    /// `ln det(L L^T)`: twice the sum of the logarithms of the pivots.
    pub(crate) fn log_det(&self) -> f64 {
        (0..self.n).map(|i| 2.0 * self.l[i * self.n + i].ln()).sum()
    }

    /// Solves `L L^T x = b` in place.
    pub(crate) fn solve_in_place(&self, x: &mut [f64]) {
        let (n, l) = (self.n, &self.l);
        for i in 0..n.min(x.len()) {
            let s: f64 = l[i * n..i * n + i]
                .iter()
                .zip(&x[..i])
                .map(|(a, b)| a * b)
                .sum();
            x[i] = (x[i] - s) / l[i * n + i];
        }
        // L^T x = y by rows of L: once x_i is known, row i's entries left of the
        // diagonal (column i of L^T, contiguous) are taken off the unknowns before it.
        for i in (0..n.min(x.len())).rev() {
            let xi = x[i] / l[i * n + i];
            x[i] = xi;
            if xi != 0.0 {
                for (xk, &lik) in x[..i].iter_mut().zip(&l[i * n..i * n + i]) {
                    *xk -= lik * xi;
                }
            }
        }
    }
}

/// Factors the lower triangle of a row-major `n` by `n` matrix into `L` in place;
/// false when a pivot is not positive (not numerically positive definite).
fn cholesky_in_place(m: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        let (head, later) = m.split_at_mut((j + 1) * n);
        let row_j = &mut head[j * n..];
        let d = row_j[j] - row_j[..j].iter().map(|x| x * x).sum::<f64>();
        // Not positive, or not a number.
        if d.is_nan() || d <= 0.0 {
            return false;
        }
        let d = d.sqrt();
        row_j[j] = d;
        // Column j below the diagonal, from row j (done) and each later row.
        let row_j = &head[j * n..j * n + j];
        for row_i in later.chunks_exact_mut(n) {
            let s: f64 = row_i[..j].iter().zip(row_j).map(|(a, b)| a * b).sum();
            row_i[j] = (row_i[j] - s) / d;
        }
    }
    true
}

/// A pseudo-inverse `A^+`: by the singular value decomposition `A = U S V^T`
/// restricted to the nonzero singular values (`A^+ = V S^-1 U^T`), or, where `A`'s rows
/// are independent, through its rows: `A^+ = A^T (A A^T)^-1`, with `A A^T` by Cholesky
/// and each solve refined once against `A` (a fraction of an SVD's cost: a kinematic
/// run with undriven freedoms makes one per frame).
pub(crate) enum PseudoInverse {
    Svd {
        u: nalgebra::DMatrix<f64>,
        sigma: Vec<f64>,
        v_t: nalgebra::DMatrix<f64>,
    },
    Rows {
        a: nalgebra::DMatrix<f64>,
        gram: nalgebra::Cholesky<f64, nalgebra::Dyn>,
    },
}

impl PseudoInverse {
    /// `A^+ b` (a column-space vector: the least-norm least-squares solution).
    pub(crate) fn solve(&self, b: &[f64]) -> Vec<f64> {
        let b = nalgebra::DVector::from_column_slice(b);
        match self {
            PseudoInverse::Svd { u, sigma, v_t } => {
                let mut c = u.tr_mul(&b);
                for (c, s) in c.iter_mut().zip(sigma) {
                    *c /= s;
                }
                v_t.tr_mul(&c).iter().copied().collect()
            }
            PseudoInverse::Rows { a, gram } => {
                // x = A^T y with A A^T y = b, y refined once by what A x leaves of b.
                let mut y = gram.solve(&b);
                let left = &b - a * a.tr_mul(&y);
                y += gram.solve(&left);
                a.tr_mul(&y).iter().copied().collect()
            }
        }
    }

    /// `(A^+)^T y` (a row-space vector): `U S^-1 V^T y`, or `(A A^T)^-1 A y`.
    pub(crate) fn transposed_solve(&self, y: &[f64]) -> Vec<f64> {
        let y = nalgebra::DVector::from_column_slice(y);
        match self {
            PseudoInverse::Svd { u, sigma, v_t } => {
                let mut c = v_t * y;
                for (c, s) in c.iter_mut().zip(sigma) {
                    *c /= s;
                }
                (u * c).iter().copied().collect()
            }
            PseudoInverse::Rows { a, gram } => {
                // The least-norm z with A^T z = y's row-space part: A A^T z = A y,
                // refined once.
                let ay = a * &y;
                let mut z = gram.solve(&ay);
                let left = &ay - a * a.tr_mul(&z);
                z += gram.solve(&left);
                z.iter().copied().collect()
            }
        }
    }

    /// `(I - A^+ A) u`: `u`'s part in the null space of `A` (`u - V V^T u`, or `u - A^+
    /// (A u)`).
    pub(crate) fn null_part(&self, u: &[f64]) -> Vec<f64> {
        match self {
            PseudoInverse::Svd { v_t, .. } => {
                let u = nalgebra::DVector::from_column_slice(u);
                let along = v_t.tr_mul(&(v_t * &u));
                (u - along).iter().copied().collect()
            }
            PseudoInverse::Rows { a, .. } => {
                let au: Vec<f64> = (a * nalgebra::DVector::from_column_slice(u))
                    .iter()
                    .copied()
                    .collect();
                let along = self.solve(&au);
                u.iter().zip(&along).map(|(x, p)| x - p).collect()
            }
        }
    }
}

/// `a . b` over their common length, in four running sums (so the compiler can keep
/// them in one vector register; one sum in order cannot be vectorised).
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut sums = [0.0f64; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (a4.remainder(), b4.remainder());
    for (x, y) in a4.zip(b4) {
        for k in 0..4 {
            sums[k] += x[k] * y[k];
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
}

/// Numerical rank of a column-major `rows` by `cols` matrix: Householder QR with
/// column pivoting on a copy, counting the diagonal entries of `R` above
/// [`RANK_TOLERANCE`] times the first (the largest).
pub(crate) fn rank(m: &[f64], rows: usize, cols: usize) -> usize {
    pivoted_rank(m, rows, cols).len()
}

/// The columns a Householder QR with column pivoting of the column-major `rows` by
/// `cols` matrix `m` takes as pivots, in the order taken, while their diagonal entry of
/// `R` stays above [`RANK_TOLERANCE`] times the first: as many as the numerical rank,
/// and independent (each taken as the one with most left outside those before it).
pub(crate) fn pivoted_rank(m: &[f64], rows: usize, cols: usize) -> Vec<usize> {
    // Compiled again for the best vector instructions the CPU has, chosen when the
    // program runs. The arithmetic is the same to the bit either way: no operation is
    // fused or reordered (Rust contracts no multiply-add), only the same lane-wise
    // operations are done wider.
    struct Rank<'m> {
        m: &'m [f64],
        rows: usize,
        cols: usize,
    }
    impl pulp::WithSimd for Rank<'_> {
        type Output = Vec<usize>;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) -> Vec<usize> {
            pivoted_rank_scalar(self.m, self.rows, self.cols)
        }
    }
    pulp::Arch::new().dispatch(Rank { m, rows, cols })
}

/// [`pivoted_rank`]'s work, inlined into each of its compilations.
#[inline(always)]
fn pivoted_rank_scalar(m: &[f64], rows: usize, cols: usize) -> Vec<usize> {
    let mut a = m.to_vec();
    let mut order: Vec<usize> = (0..cols).collect();
    // What is left of each column below the rows done, squared: downdated after each
    // step, recomputed where the downdate has cancelled most of it.
    let mut left: Vec<f64> = a
        .chunks_exact(rows.max(1))
        .take(cols)
        .map(|c| dot(c, c))
        .collect();
    let mut exact = left.clone();
    let mut first: Option<f64> = None;
    let mut rank = 0;
    for k in 0..rows.min(cols) {
        // Pivot: the column with the most left.
        let (p, best) =
            (k..cols)
                .map(|j| (j, left[j]))
                .fold((k, -1.0f64), |b, c| if c.1 > b.1 { c } else { b });
        if p != k {
            for i in 0..rows {
                a.swap(k * rows + i, p * rows + i);
            }
            left.swap(k, p);
            exact.swap(k, p);
            order.swap(k, p);
        }
        let alpha = best.max(0.0).sqrt();
        let first = *first.get_or_insert(alpha);
        if alpha.is_nan() || alpha <= RANK_TOLERANCE * first.max(1e-300) {
            break;
        }
        rank += 1;
        // The rows below the diagonal where the pivot column is nonzero are brought up
        // to start at row `k`, in order (the rows of the few joints on the pivot's part,
        // and what earlier steps filled in): the reflection then spans only them, and
        // dots and updates stop at their end. Reordering rows changes `Q`, not `R` (the
        // same pivots and diagonal, up to rounding), and a Jacobian's columns are mostly
        // zeros, so this is a fraction of the work. Each row moved costs a swap in every
        // later column, each zero row left out saves a product and an update there: the
        // rows are gathered where more are left out than moved, else the reflection
        // spans to the last nonzero row.
        let pivot = &a[k * rows..(k + 1) * rows];
        let last = pivot[k..]
            .iter()
            .rposition(|&x| x != 0.0)
            .map_or(k, |e| k + e);
        let reach = match pivot[k..=last].iter().position(|&x| x == 0.0) {
            Some(first_zero) => {
                let nonzero = pivot[k..=last].iter().filter(|&&x| x != 0.0).count();
                let (left_out, moved) = (last + 1 - k - nonzero, nonzero - first_zero);
                if left_out > moved {
                    // The rows before the first zero are in place already.
                    let mut reach = k + first_zero;
                    for i in k + first_zero..=last {
                        if a[k * rows + i] != 0.0 {
                            if i != reach {
                                for col in a[k * rows..].chunks_exact_mut(rows) {
                                    col.swap(i, reach);
                                }
                            }
                            reach += 1;
                        }
                    }
                    // Row k is always in the reflection (its entry is made nonzero).
                    reach.max(k + 1)
                } else {
                    last + 1
                }
            }
            None => last + 1,
        };
        // Reflect x = a[k..reach, k] onto -sign(x0) |x| e1: v = x + sign(x0) |x| e1, and
        // each later column loses 2 v (v . a_j) / (v . v).
        let x0 = a[k * rows + k];
        let scale = 1.0 / (alpha * (alpha + x0.abs()));
        a[k * rows + k] = x0 + alpha.copysign(x0);
        let (head, tail) = a.split_at_mut((k + 1) * rows);
        let v = &head[k * rows + k..k * rows + reach];
        for (j, col) in tail.chunks_exact_mut(rows).enumerate() {
            let col = &mut col[k..];
            let f = scale * dot(v, &col[..v.len()]);
            if f != 0.0 {
                for (c, p) in col.iter_mut().zip(v) {
                    *c -= f * p;
                }
            }
            // Row k of this column is final now.
            let j = j + k + 1;
            left[j] -= col[0] * col[0];
            if left[j] <= 1e-6 * exact[j] {
                left[j] = dot(&col[1..], &col[1..]);
                exact[j] = left[j];
            }
        }
    }
    order.truncate(rank);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rank of products of random-ish factors of known inner dimension, and of a
    /// matrix with a repeated row and a zero column, against nalgebra's singular values.
    #[test]
    fn rank_matches_the_singular_values() {
        let entry = |i: usize, j: usize, salt: f64| {
            ((i as f64 * 1.7 + j as f64 * 2.3 + salt).sin() * 3.0).round() / 3.0
                + 0.1 * (i as f64 - j as f64 * salt).cos()
        };
        for (rows, cols, inner) in [(21, 18, 15), (6, 6, 6), (5, 9, 3), (12, 4, 4), (8, 8, 1)] {
            let b = nalgebra::DMatrix::from_fn(rows, inner, |i, j| entry(i, j, 0.3));
            let c = nalgebra::DMatrix::from_fn(inner, cols, |i, j| entry(i, j, 1.9));
            let m = b * c;
            let svd = m.singular_values();
            let smax = svd.max();
            let expected = svd.iter().filter(|&&s| s > 1e-9 * smax).count();
            assert_eq!(
                rank(m.as_slice(), rows, cols),
                expected,
                "{rows}x{cols} of rank {inner}"
            );
            assert_eq!(expected, inner.min(rows).min(cols));
        }
        let mut m = nalgebra::DMatrix::from_fn(5, 4, |i, j| entry(i, j, 0.7));
        let row = m.row(1).clone_owned();
        m.set_row(3, &row);
        m.set_column(2, &nalgebra::DVector::zeros(5));
        assert_eq!(rank(m.as_slice(), 5, 4), 3);
        assert_eq!(rank(&[], 0, 0), 0);
    }

    /// Jacobian-like sparse matrices (each row reads two of several groups of columns,
    /// as a joint reads two parts, with loops making some rows dependent): the rank
    /// against the singular values, and the same pivots whatever the order of the rows
    /// (the reflections span only the rows where the pivot column is nonzero, gathered
    /// up; `R` does not depend on the rows' order).
    #[test]
    fn sparse_rank_and_pivots_do_not_depend_on_the_row_order() {
        let value = |i: usize, j: usize| ((i * 7 + j * 13) as f64 * 0.37).sin() + 0.05;
        for (groups, width, rows, dependent) in [(6, 3, 14, 2), (10, 6, 40, 5), (14, 6, 83, 9)] {
            let cols = groups * width;
            let mut m = nalgebra::DMatrix::<f64>::zeros(rows, cols);
            for i in 0..rows - dependent {
                // Row i reads group i mod g and its neighbour, most entries of both.
                let (g, h) = (i % groups, (i * 5 + 1) % groups);
                for j in (g * width..(g + 1) * width).chain(h * width..(h + 1) * width) {
                    if (i + j) % 4 != 0 {
                        m[(i, j)] = value(i, j);
                    }
                }
            }
            // The last rows are sums of two earlier ones (a loop closed twice).
            for d in 0..dependent {
                let row = m.row(d).clone_owned() + m.row(d + 3).clone_owned() * 0.5;
                m.set_row(rows - dependent + d, &row);
            }
            let svd = m.singular_values();
            let expected = svd.iter().filter(|&&s| s > 1e-9 * svd.max()).count();
            let pivots = pivoted_rank(m.as_slice(), rows, cols);
            assert_eq!(pivots.len(), expected, "{rows}x{cols}");
            assert_eq!(
                expected,
                rows - dependent,
                "{rows}x{cols}: a generic matrix"
            );
            // The rows reversed and turned by three: the same pivots.
            let order: Vec<usize> = (0..rows).map(|k| (2 * rows + 2 - k) % rows).collect();
            let shuffled = nalgebra::DMatrix::from_fn(rows, cols, |i, j| m[(order[i], j)]);
            assert_eq!(pivoted_rank(shuffled.as_slice(), rows, cols), pivots);
        }
    }

    /// The pivots of the QR compiled for the CPU's vector instructions are those of the
    /// baseline compilation, on matrices with dependent rows and columns, ties between
    /// columns of equal norm, and values of every scale.
    #[test]
    fn the_dispatched_rank_is_the_baseline_rank() {
        for (rows, cols, salt) in [(21, 18, 0.3), (7, 12, 1.1), (30, 30, 2.7), (5, 3, 0.9)] {
            let mut m: Vec<f64> = (0..rows * cols)
                .map(|k| (k as f64 * salt).sin() * 10f64.powi((k % 7) as i32 - 3))
                .collect();
            // A column repeated (a tie), a row twice the first, a zero column.
            m.copy_within(0..rows, rows);
            for j in 0..cols {
                m[j * rows + rows - 1] = 2.0 * m[j * rows];
            }
            m[(cols - 1) * rows..cols * rows].fill(0.0);
            assert_eq!(
                pivoted_rank(&m, rows, cols),
                pivoted_rank_scalar(&m, rows, cols)
            );
        }
    }

    /// The rank taken without a fill ([`DenseStep::rank_of`]) is a fill's, from the same
    /// matrix to the bit: over Jacobians that come row by row (as a tangent Jacobian
    /// does) with the rows out of order, a position listed twice in its row (summed),
    /// entries of columns outside the piece or past its rows (ignored), dependent rows
    /// or dependent columns, and on a matrix filled before for another Jacobian.
    #[test]
    fn a_rank_without_a_fill_is_the_fills() {
        let value =
            |k: usize| ((k as f64 * 0.731).sin() * 4.0 * 1024.0).round() / 1024.0 + 1e-3 * k as f64;
        let (rows, cols) = (7, 5);
        // Jacobian columns 0..7 go to piece columns by `col_of` (5 and 6 are outside).
        let col_of = [3, 0, 4, 1, 2, usize::MAX, 9];
        let weights = [2.0, 0.5, 1.0, 3.0, 0.25];
        let mut entries = Vec::new();
        // Row 5 is row 6 again (dependent rows); rows 7 and 9 are past the piece's.
        for (k, r) in [3u32, 0, 1, 2, 4, 6, 5, 7, 9].into_iter().enumerate() {
            let k = if r == 5 { k - 1 } else { k };
            for c in 0..7u32 {
                if (k + c as usize) % 3 != 1 {
                    entries.push((r, c, value(k * 7 + c as usize)));
                }
            }
            if r == 1 {
                entries.push((1, 3, 0.125));
            }
        }
        let jac = TangentJacobian {
            rows,
            columns: 7,
            entries,
        };
        let mut other = jac.clone();
        other.entries.retain(|e| e.1 != 2);
        for first in [None, Some(&other)] {
            let mut step = DenseStep::new(rows, cols);
            if let Some(j) = first {
                step.fill(j, &col_of, &weights);
            }
            let without = step.rank_of(&jac, &col_of, &weights);
            step.fill(&jac, &col_of, &weights);
            assert_eq!(without, step.rank());
            let mut a = vec![0.0; rows * cols];
            for &(r, c, v) in &jac.entries {
                if let Some(&j) = col_of.get(c as usize).filter(|&&j| j < cols) {
                    if (r as usize) < rows {
                        a[j * rows + r as usize] += v / weights[j];
                    }
                }
            }
            let filled: Vec<u64> = step.dense().iter().map(|x| x.to_bits()).collect();
            assert_eq!(filled, a.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
            let m = nalgebra::DMatrix::from_column_slice(rows, cols, &a);
            assert_eq!(without, m.rank(1e-9));
        }
        // Dependent columns: piece column 4 is column 2 scaled (rank 4 of 5).
        let mut entries = Vec::new();
        for r in 0..6u32 {
            for c in 0..4u32 {
                entries.push((r, c, value((r * 4 + c) as usize)));
            }
            let v = entries
                .iter()
                .rev()
                .take(4)
                .find(|e| e.1 == 2)
                .map_or(0.0, |e| e.2);
            entries.push((r, 4, 2.0 * v));
        }
        let jac = TangentJacobian {
            rows: 6,
            columns: 5,
            entries,
        };
        let col_of = [0, 1, 2, 3, 4];
        let mut step = DenseStep::new(6, 5);
        let without = step.rank_of(&jac, &col_of, &[1.0; 5]);
        step.fill(&jac, &col_of, &[1.0; 5]);
        assert_eq!((without, step.rank()), (4, 4));
        {}
    }

    /// `a` as a step's Jacobian, every entry listed, filled into a [`DenseStep`] with
    /// column weights `weights`.
    fn step_of(a: &nalgebra::DMatrix<f64>, weights: &[f64]) -> DenseStep {
        let (rows, cols) = a.shape();
        let jac = TangentJacobian {
            rows,
            columns: cols,
            entries: (0..rows)
                .flat_map(|i| (0..cols).map(move |j| (i, j)))
                .map(|(i, j)| (i as u32, j as u32, a[(i, j)]))
                .collect(),
        };
        let mut step = DenseStep::new(rows, cols);
        let col_of: Vec<usize> = (0..cols).collect();
        step.fill(&jac, &col_of, weights);
        step
    }

    /// The rows chosen as independent: as many as the rank, of full rank together, and
    /// never one that repeats a row before it or is all zeros.
    #[test]
    fn independent_rows_are_as_many_as_the_rank_and_of_full_rank() {
        let entry = |i: usize, j: usize| {
            (0.37 * (i + 1) as f64 + (j + 1) as f64 * (0.61 * i as f64 + 1.1)).sin()
        };
        let (rows, cols) = (9, 6);
        let mut a = nalgebra::DMatrix::from_fn(rows, cols, entry);
        // Row 4 repeats row 1, row 7 is the sum of rows 0 and 2, row 8 is zero: rank 6.
        let (r1, r0, r2) = (
            a.row(1).clone_owned(),
            a.row(0).clone_owned(),
            a.row(2).clone_owned(),
        );
        a.set_row(4, &r1);
        a.set_row(7, &(r0 + r2));
        a.set_row(8, &nalgebra::RowDVector::zeros(cols));
        let step = step_of(&a, &[2.0, 1.0, 0.5, 1.0, 3.0, 1.0]);
        let kept = step.independent_rows();
        assert_eq!(kept.len(), a.rank(1e-9));
        assert_eq!(kept.len(), 6);
        assert!(kept.windows(2).all(|w| w[0] < w[1]), "{kept:?}");
        assert!(!kept.contains(&8), "{kept:?}");
        assert!(!(kept.contains(&1) && kept.contains(&4)), "{kept:?}");
        let chosen = a.select_rows(&kept);
        assert_eq!(chosen.rank(1e-9), 6, "{kept:?}");
    }

    /// The pseudo-inverse through the rows (independent rows, the rank given) solves,
    /// transposes and projects like the one by singular values, to 1e-12.
    #[test]
    fn pseudo_inverse_through_the_rows_matches_the_svd() {
        let (rows, cols) = (7, 11);
        let a = nalgebra::DMatrix::from_fn(rows, cols, |i, j| {
            if (i + 3 * j) % 4 == 0 {
                0.0
            } else {
                (1.3 * i as f64 + 0.7 * j as f64).sin() + if i == j { 2.0 } else { 0.0 }
            }
        });
        let step = step_of(&a, &[1.0; 11]);
        let by_rows = step.pseudo_inverse(Some(rows));
        let by_svd = step.pseudo_inverse(None);
        assert!(matches!(by_rows, PseudoInverse::Rows { .. }));
        assert!(matches!(by_svd, PseudoInverse::Svd { .. }));
        let b: Vec<f64> = (0..rows).map(|k| (k as f64 * 0.9).cos()).collect();
        let u: Vec<f64> = (0..cols).map(|k| (k as f64 * 0.4).sin()).collect();
        for (x, y) in [
            (by_rows.solve(&b), by_svd.solve(&b)),
            (by_rows.transposed_solve(&u), by_svd.transposed_solve(&u)),
            (by_rows.null_part(&u), by_svd.null_part(&u)),
        ] {
            assert_eq!(x.len(), y.len());
            for (p, q) in x.iter().zip(&y) {
                assert!((p - q).abs() < 1e-12 * (1.0 + q.abs()), "{p} vs {q}");
            }
        }
    }

    /// The Cholesky solve against nalgebra's, on `A^T A + mu I` of a sparse-ish `A`.
    #[test]
    fn cholesky_solves_like_nalgebra() {
        let a = nalgebra::DMatrix::from_fn(9, 7, |i, j| {
            if (i + 2 * j) % 3 == 0 {
                0.0
            } else {
                (i as f64 - 0.5 * j as f64).sin()
            }
        });
        let step = step_of(&a, &[1.0; 7]);
        let r: Vec<f64> = (0..9).map(|k| (k as f64).cos()).collect();
        let mut x = step.transpose_times(&r);
        step.factor(1e-3).unwrap().solve_in_place(&mut x);
        let mut n = a.tr_mul(&a);
        for k in 0..7 {
            n[(k, k)] += 1e-3;
        }
        let expected = n
            .cholesky()
            .unwrap()
            .solve(&a.tr_mul(&nalgebra::DVector::from_vec(r)));
        for k in 0..7 {
            assert!(
                (x[k] - expected[k]).abs() < 1e-12,
                "{k}: {} vs {}",
                x[k],
                expected[k]
            );
        }
        assert_eq!(step.rank(), a.rank(1e-9));
    }
}
