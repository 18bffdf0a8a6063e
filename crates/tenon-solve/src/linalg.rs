//! The linear algebra of a Newton step, kept in this one module: the minimum-norm
//! (optionally damped) solution of `A dy = r` for `A = J W^-1`, the weighted Jacobian
//! of one piece of a cluster.
//!
//! - Small pieces (up to [`DENSE_COLUMNS`] columns): the same regularised normal
//!   equations, dense (`dense`: `A^T A` summed from the rows' nonzeros, a Cholesky on a
//!   flat buffer); the rank by column-pivoted QR once, at the end (diagonal entries of
//!   `R` below [`RANK_TOLERANCE`](crate::RANK_TOLERANCE) times the largest count as
//!   zero).
//! - Large pieces: the regularised normal equations `(A^T A + mu I) dy = A^T r` by sparse
//!   Cholesky (faer). The pattern of `A`, of `A^T A` and the symbolic factorization
//!   (with its fill-reducing ordering) are computed once per piece; each iteration
//!   refills the numbers. The step lies in the row space of `A` like the minimum-norm
//!   one (it is the minimum-norm step of the damped problem), and `mu >= `
//!   [`REGULARIZATION`] times the largest diagonal keeps redundant equations (a singular
//!   `A^T A`) factorable. The rank is not revealed here (the diagnostics do that).
//!
//! - Square Jacobians of a kinematic run (`triangular`): their Dulmage-Mendelsohn blocks
//!   factored densely and solved in order, where the blocks are small.
//! - Small square systems factored once and solved several times (`lu`, [`DenseLu`]: a
//!   dynamics step's KKT matrix).
//! - Large symmetric quasi-definite systems (`ldlt`, [`SparseLdlt`]: a dynamics step's
//!   KKT matrix above the dense size), assembled in the ordering's positions.
//!
//! Architecture invariant: faer appears in this module only.

mod dense;
mod kept;
mod krylov;
mod ldlt;
mod lu;
mod ordering;
mod triangular;

use dense::DenseStep;
pub(crate) use dense::PseudoInverse;
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::solvers::Solve;
use faer::perm::PermRef;
use faer::sparse::linalg::cholesky::{
    factorize_symbolic_cholesky, LltRef, SymbolicCholesky, SymmetricOrdering,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMat};
use faer::{Conj, Mat, MatMut, Par, Side};
pub use ldlt::SparseLdlt;
pub use lu::DenseLu;
use nalgebra::{DMatrix, DVector};
use tenon_system::TangentJacobian;
pub(crate) use triangular::{BlockFactors, BlockPlan};

use crate::SolveError;

/// Pieces with more tangent columns than this are solved sparse by default (see
/// [`SolveOptions::dense_columns`](crate::SolveOptions::dense_columns)).
pub const DENSE_COLUMNS: usize = 48;

/// Pieces solved sparse but with at most this many columns still get their rank, from
/// one dense singular value decomposition at the end.
pub const RANK_COLUMNS: usize = 150;

/// Regularisation of the normal equations at the start of a solve, relative to the
/// squared scale; it shrinks with the residual (down to 1e-6 of this). Measured: 1e-8
/// took the 10,000-link chain in 14 iterations and the 10,000-part ladder in 8, against
/// 17 and 10 with 1e-10 (the softest directions of long chains overshoot less when
/// damped a little early on); 1e-7 and above slow the last steps.
pub(crate) const REGULARIZATION: f64 = 1e-8;

/// An orthonormal basis of the complement of `row_basis` (orthonormal vectors of length
/// `n`): unit vectors orthogonalised against everything kept so far (twice, for
/// accuracy), kept when more than `tolerance` of their length is left.
pub(crate) fn complete_null_space(
    row_basis: Vec<DVector<f64>>,
    n: usize,
    tolerance: f64,
) -> Vec<DVector<f64>> {
    let mut all = row_basis;
    let mut null = Vec::new();
    for e in 0..n {
        if all.len() >= n {
            break;
        }
        let mut v = DVector::from_fn(n, |i, _| if i == e { 1.0 } else { 0.0 });
        for _ in 0..2 {
            for b in &all {
                let c = b.dot(&v);
                v -= b * c;
            }
        }
        let norm = v.norm();
        if norm > tolerance {
            v /= norm;
            all.push(v.clone());
            null.push(v);
        }
    }
    null
}

/// Euclidean norm.
pub(crate) fn norm(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// Euclidean norm of `x[rows]`.
pub(crate) fn norm_of_rows(x: &[f64], rows: &[usize]) -> f64 {
    rows.iter()
        .map(|&k| x.get(k).map_or(0.0, |v| v * v))
        .sum::<f64>()
        .sqrt()
}

/// The weighted Jacobian of a piece, dense or sparse by size.
pub(crate) enum StepMatrix {
    Dense(Box<DenseStep>),
    Sparse(Box<SparseNormal>),
}

impl StepMatrix {
    pub(crate) fn new(rows: usize, cols: usize, dense_columns: usize) -> StepMatrix {
        if cols <= dense_columns {
            StepMatrix::Dense(Box::new(DenseStep::new(rows, cols)))
        } else {
            StepMatrix::Sparse(Box::new(SparseNormal::new(rows, cols)))
        }
    }

    /// Whether [`Factored::rank`] of this matrix gives a rank (dense, or sparse of at
    /// most [`RANK_COLUMNS`] columns): where it does not, a fill at the final pose,
    /// made for the rank alone, would go unused.
    pub(crate) fn gives_rank(&self) -> bool {
        match self {
            StepMatrix::Dense(_) => true,
            StepMatrix::Sparse(s) => s.cols <= RANK_COLUMNS,
        }
    }

    /// Names the groups of its columns that rows read together (`groups[j]` for column
    /// `j`, each group a run of adjacent columns numbered in order: a part's tangent
    /// columns), so a sparse factorization is ordered by groups (see `ordering`).
    pub(crate) fn set_groups(&mut self, groups: Vec<usize>) {
        if let StepMatrix::Sparse(s) = self {
            if groups.len() == s.cols && s.groups.as_ref() != Some(&groups) {
                s.groups = Some(groups);
                // A new order: analysed again at the next fill.
                s.n_symbolic = None;
            }
        }
    }

    /// Sets `A = J W^-1` from the piece's Jacobian: entry `(r, c)` goes to column
    /// `col_of[c]` (entries of other columns are ignored), divided by `weight[col]`.
    pub(crate) fn fill(&mut self, jac: &TangentJacobian, col_of: &[usize], weight: &[f64]) {
        match self {
            StepMatrix::Dense(d) => d.fill(jac, col_of, weight),
            StepMatrix::Sparse(s) => s.fill(jac, col_of, weight),
        }
    }

    /// [`Factored::rank`] of `A = J W^-1` for `jac`: what [`fill`](Self::fill) then
    /// [`factor`](Self::factor) would give, where the matrix is dense without filling it
    /// for steps (a rank at the final pose needs no `A^T A`).
    pub(crate) fn rank_at(
        &mut self,
        jac: &TangentJacobian,
        col_of: &[usize],
        weight: &[f64],
    ) -> Result<Option<usize>, SolveError> {
        match self {
            StepMatrix::Dense(d) => Ok(Some(d.rank_of(jac, col_of, weight))),
            StepMatrix::Sparse(_) => {
                self.fill(jac, col_of, weight);
                Ok(self.factor()?.rank())
            }
        }
    }

    /// The steps of `factor`, a regularised factorization of this matrix as it is now
    /// (from [`Steps::into_factor`]); `None` if it is of the other kind.
    pub(crate) fn steps_with(&self, factor: Factor) -> Option<Steps<'_>> {
        match (self, factor) {
            (StepMatrix::Dense(step), Factor::Dense(chol)) => Some(Steps::Dense { step, chol }),
            // A factor made before the pattern was analysed again does not fit.
            (StepMatrix::Sparse(normal), Factor::Sparse(llt))
                if llt.analysis == normal.analysis =>
            {
                Some(Steps::Sparse { normal, llt })
            }
            _ => None,
        }
    }

    /// `A = J W^-1` again for other column weights, from the matrix as [`fill`](Self::fill)
    /// left it with `from`: a sparse matrix's `A^T A` is rescaled entry by entry
    /// (`s_i s_j`, `s = from / to`) rather than summed again from the rows' pairs.
    pub(crate) fn reweigh(
        &mut self,
        jac: &TangentJacobian,
        col_of: &[usize],
        (from, to): (&[f64], &[f64]),
    ) {
        let rescaled = match self {
            StepMatrix::Sparse(s) => s.same_pattern(jac) && s.reweigh(from, to),
            StepMatrix::Dense(_) => false,
        };
        if !rescaled {
            self.fill(jac, col_of, to);
        }
    }

    /// Factors what can be factored once for any damping.
    pub(crate) fn factor(&self) -> Result<Factored<'_>, SolveError> {
        Ok(match self {
            StepMatrix::Dense(d) => Factored::Dense(d),
            StepMatrix::Sparse(s) => Factored::Sparse(s),
        })
    }
}

/// A factored (or ready to factor) step matrix.
pub(crate) enum Factored<'a> {
    Dense(&'a DenseStep),
    Sparse(&'a SparseNormal),
}

impl<'a> Factored<'a> {
    /// Numerical rank (singular values of the dense matrix; called once, at the end),
    /// where the piece is small enough.
    pub(crate) fn rank(&self) -> Option<usize> {
        match self {
            Factored::Dense(d) => Some(d.rank()),
            Factored::Sparse(s) if s.cols <= RANK_COLUMNS => Some(s.dense_rank()),
            Factored::Sparse(_) => None,
        }
    }

    /// As many independent rows of `A` as its rank (ascending), where `A` is dense.
    pub(crate) fn independent_rows(&self) -> Option<Vec<usize>> {
        match self {
            Factored::Dense(d) => Some(d.independent_rows()),
            Factored::Sparse(_) => None,
        }
    }

    /// `A`'s pseudo-inverse where `A` is dense: through its rows where `rank` (when
    /// known) is the row count, else by a singular value decomposition.
    pub(crate) fn pseudo_inverse(&self, rank: Option<usize>) -> Option<PseudoInverse> {
        match self {
            Factored::Dense(d) => Some(d.pseudo_inverse(rank)),
            Factored::Sparse(_) => None,
        }
    }

    /// The largest column norm (a scale for damping, the same whichever way the step
    /// is computed, within a factor `sqrt(columns)` of the largest singular value).
    pub(crate) fn scale(&self) -> f64 {
        match self {
            Factored::Dense(d) => d.scale(),
            Factored::Sparse(s) => s.scale(),
        }
    }

    /// `A^T A + mu I` factored with `mu = max(lambda, floor)`, to solve
    /// `dy = (A^T A + mu I)^-1 A^T r` for one or more `r`: in the row space of `A`, and
    /// the minimum-norm solution as `mu` goes to 0. `progress` in `(0, 1]` scales the
    /// regularisation floor down as the residual falls (rounding drift along free
    /// directions is proportional to the step, so a small step can take a small floor,
    /// and the last steps converge fast).
    pub(crate) fn regularized(&self, lambda: f64, progress: f64) -> Result<Steps<'a>, SolveError> {
        let floor = REGULARIZATION * progress.clamp(1e-6, 1.0) * self.scale().powi(2);
        let mu = lambda.max(floor);
        match self {
            Factored::Dense(d) => Ok(Steps::Dense {
                step: d,
                chol: d.factor(mu)?,
            }),
            Factored::Sparse(s) => Ok(Steps::Sparse {
                normal: s,
                llt: s.factor(mu)?,
            }),
        }
    }
}

/// `(A^T A + mu I)` factored: `solve(r)` is `(A^T A + mu I)^-1 A^T r`.
pub(crate) enum Steps<'a> {
    Dense {
        step: &'a DenseStep,
        chol: dense::Cholesky,
    },
    Sparse {
        normal: &'a SparseNormal,
        llt: SparseLlt,
    },
}

/// A regularised factorization kept apart from its matrix, to be used again while the
/// matrix stays as it was ([`StepMatrix::steps_with`]).
pub(crate) enum Factor {
    Dense(dense::Cholesky),
    Sparse(SparseLlt),
}

impl Steps<'_> {
    /// Its factorization, without the borrow of its matrix.
    pub(crate) fn into_factor(self) -> Factor {
        match self {
            Steps::Dense { chol, .. } => Factor::Dense(chol),
            Steps::Sparse { llt, .. } => Factor::Sparse(llt),
        }
    }

    /// `ln det(A^T A + mu I)` where it is at hand (dense), to watch for a rank drop
    /// between factorizations of one pattern without a rank-revealing one each time.
    pub(crate) fn log_det(&self) -> Option<f64> {
        match self {
            Steps::Dense { chol, .. } => Some(chol.log_det()),
            Steps::Sparse { .. } => None,
        }
    }

    /// `(A^T A + mu I)^-1 A^T r`, refined towards the minimum-norm solution of
    /// `A dy = r` where that is consistent (see [`refine_step`]); for factorizations
    /// whose only regularisation is the floor.
    pub(crate) fn solve_refined(&self, r: &[f64]) -> Vec<f64> {
        let mut x = self.solve(r);
        refine_step(self, r, &mut x);
        x
    }

    /// `(A^T A + mu I)^-1 A^T r`.
    pub(crate) fn solve(&self, r: &[f64]) -> Vec<f64> {
        match self {
            Steps::Dense { step, chol } => {
                let mut x = step.transpose_times(r);
                chol.solve_in_place(&mut x);
                x
            }
            Steps::Sparse { normal, llt } => {
                let mut x = normal.transpose_times(r);
                normal.solve_in_place(llt, &mut x);
                x
            }
        }
    }

    /// The minimum-norm solution of `A dy = r` by preconditioned conjugate gradients
    /// (see `krylov`), where the system is consistent: for a Newton step that crawls
    /// along directions softer than the floor.
    pub(crate) fn solve_consistent(&self, r: &[f64]) -> Option<Vec<f64>> {
        krylov::consistent_step(self, r)
    }

    /// `r - A x`.
    pub(crate) fn residual_of(&self, r: &[f64], x: &[f64]) -> Vec<f64> {
        match self {
            Steps::Dense { step, .. } => step.residual_of(r, x),
            Steps::Sparse { normal, .. } => normal.residual_of(r, x),
        }
    }
}

/// Rounds of refinement of a step at most (see [`refine_step`]).
const REFINE_ROUNDS: usize = 24;

/// A refined step is left once its linear residual is this fraction of `|r|`.
const REFINE_TARGET: f64 = 1e-12;

/// Takes the regularisation floor back out of a step (iterated Tikhonov):
/// `dy += (A^T A + mu I)^-1 A^T (r - A dy)` while that halves `|r - A dy|`. Each round
/// stays in the row space of `A` and, per singular direction, leaves
/// `(mu / (s^2 + mu))^k` of the floor's shortening. A long chain's softest directions
/// (`s^2` near `(pi / 2n)^2` of the largest: a 10,000-link chain's are below the floor)
/// otherwise come out shortened in every step.
fn refine_step(steps: &Steps<'_>, r: &[f64], x: &mut [f64]) {
    let size_r = norm(r);
    let mut e = steps.residual_of(r, x);
    let mut size = norm(&e);
    for _ in 0..REFINE_ROUNDS {
        if size <= REFINE_TARGET * size_r {
            break;
        }
        let dx = steps.solve(&e);
        let trial: Vec<f64> = x.iter().zip(&dx).map(|(a, b)| a + b).collect();
        let e_trial = steps.residual_of(r, &trial);
        let size_trial = norm(&e_trial);
        if size_trial > 0.5 * size {
            break;
        }
        x.copy_from_slice(&trial);
        (e, size) = (e_trial, size_trial);
    }
}

/// `A` in compressed rows with a fixed pattern, `A^T A` (lower triangle, compressed
/// columns) with a precomputed scatter, and the symbolic Cholesky of that pattern.
pub(crate) struct SparseNormal {
    rows: usize,
    cols: usize,
    /// The `(row, col)` sequence of the Jacobian entries the pattern was built for.
    key: Vec<(u32, u32)>,
    /// The map from Jacobian columns to this matrix's the pattern was built with.
    col_of: Vec<usize>,
    /// Jacobian entry `k` adds into `a_values[entry_slot[k]]` (`u32::MAX`: ignored).
    entry_slot: Vec<u32>,
    a_row_start: Vec<usize>,
    a_cols: Vec<u32>,
    a_values: Vec<f64>,
    /// For each row, for each pair `(i <= j)` of its entries, where `a_i a_j` goes in
    /// `n_values`; in row order.
    pair_slot: Vec<u32>,
    diag_slot: Vec<usize>,
    n_symbolic: Option<SymbolicSparseColMat<u32>>,
    n_values: Vec<f64>,
    /// The symbolic Cholesky of that pattern, in a fill-reducing order found on the
    /// column groups where they are known (see `ordering`), else on every column.
    llt: Option<SymbolicCholesky<u32>>,
    /// Per column, its group (a part's columns), numbered in column order.
    groups: Option<Vec<usize>>,
    /// How many times the pattern was analysed (a factor records the analysis it was
    /// made with).
    analysis: u64,
    /// `A^T A` for the current `A` (kept between iterations: no reallocation).
    normal: Vec<f64>,
    /// The largest column norm of the current `A`.
    column_norm: f64,
    /// Room for `A^T A + mu I` while it is factored.
    damped: std::cell::RefCell<Vec<f64>>,
    /// Value buffers of this matrix's dropped factors, for its next ones (see
    /// [`SpareFactors`]).
    spares: SpareFactors,
    /// faer's working memory for factorizations and solves, kept for the next (see
    /// [`SpareFactors`]: a factorization's holds a permuted copy of `A^T A`).
    scratch: std::cell::RefCell<Option<MemBuffer>>,
}

/// The value buffers that a matrix's numeric factors give back when dropped, taken
/// again by its next factorization. A solve factors one pattern several times (Newton
/// iterations, reweighted chords); a 10,000-part ladder's factor holds 5.8 MB of values,
/// and a fresh buffer is memory the kernel zeroes and maps in first (in a fresh process,
/// as `tenon solve` runs, that page zeroing took most of the ladder's solve on a 2-core
/// VM). Shared with the factors, which outlive the borrow of their matrix.
type SpareFactors = std::sync::Arc<std::sync::Mutex<Vec<Vec<f64>>>>;

/// Buffers kept in [`SpareFactors`] at most: a solve keeps two factors at once (a
/// Newton step's and its reweighted chords').
const SPARE_FACTORS: usize = 2;

impl SparseNormal {
    fn new(rows: usize, cols: usize) -> SparseNormal {
        SparseNormal {
            rows,
            cols,
            key: Vec::new(),
            col_of: Vec::new(),
            entry_slot: Vec::new(),
            a_row_start: Vec::new(),
            a_cols: Vec::new(),
            a_values: Vec::new(),
            pair_slot: Vec::new(),
            diag_slot: Vec::new(),
            n_symbolic: None,
            n_values: Vec::new(),
            llt: None,
            groups: None,
            analysis: 0,
            normal: Vec::new(),
            column_norm: 0.0,
            damped: std::cell::RefCell::new(Vec::new()),
            spares: SpareFactors::default(),
            scratch: std::cell::RefCell::new(None),
        }
    }

    fn same_pattern(&self, jac: &TangentJacobian) -> bool {
        self.n_symbolic.is_some() && same_positions(&self.key, &jac.entries)
    }

    fn fill(&mut self, jac: &TangentJacobian, col_of: &[usize], weight: &[f64]) {
        if !self.same_pattern(jac) && !self.adopt_kept(jac, col_of) {
            self.analyse(jac, col_of);
        }
        self.a_values.iter_mut().for_each(|v| *v = 0.0);
        for (k, &(_, _, v)) in jac.entries.iter().enumerate() {
            let slot = self.entry_slot[k];
            if slot != u32::MAX {
                let col = self.a_cols[slot as usize] as usize;
                self.a_values[slot as usize] += v / weight[col];
            }
        }
        self.fill_normal();
        self.column_norm = self.scale_of_a();
    }

    /// Builds the patterns of `A` and `A^T A` and the symbolic factorization. Both
    /// patterns are gathered by counting (flat arrays, no list per row or column): at
    /// 60,000 columns, lists per row and column took 30 ms, more than the factorization.
    fn analyse(&mut self, jac: &TangentJacobian, col_of: &[usize]) {
        self.key = jac.entries.iter().map(|&(r, c, _)| (r, c)).collect();
        self.col_of = col_of.to_vec();
        self.analysis += 1;
        let (rows, cols) = (self.rows, self.cols);
        let column = |r: u32, c: u32| -> Option<(usize, usize)> {
            let j = *col_of.get(c as usize)?;
            (j < cols && (r as usize) < rows).then_some((r as usize, j))
        };
        // A: per row, its distinct piece columns, ascending.
        let mut start = vec![0usize; rows + 1];
        for &(r, c, _) in &jac.entries {
            if let Some((r, _)) = column(r, c) {
                start[r + 1] += 1;
            }
        }
        for r in 0..rows {
            start[r + 1] += start[r];
        }
        // Columns as 32-bit indices from here on (the Jacobian's columns are 32-bit, so
        // every piece column is too): at 60,000 columns these lists reach tens of
        // megabytes, and each byte is a fresh page to fault in.
        let mut listed = vec![0u32; start[rows]];
        let mut next = start.clone();
        for &(r, c, _) in &jac.entries {
            if let Some((r, j)) = column(r, c) {
                listed[next[r]] = j as u32;
                next[r] += 1;
            }
        }
        self.a_row_start = Vec::with_capacity(rows + 1);
        // `A`'s columns, row by row.
        let mut a_cols: Vec<u32> = Vec::with_capacity(listed.len());
        self.a_row_start.push(0);
        sorted_distinct_into(&mut listed, &start, &mut a_cols, &mut self.a_row_start);
        self.a_values = vec![0.0; a_cols.len()];
        self.entry_slot = jac
            .entries
            .iter()
            .map(|&(r, c, _)| {
                let Some((r, j)) = column(r, c) else {
                    return u32::MAX;
                };
                let (a, b) = (self.a_row_start[r], self.a_row_start[r + 1]);
                match a_cols[a..b].binary_search(&(j as u32)) {
                    Ok(k) => (a + k) as u32,
                    Err(_) => u32::MAX,
                }
            })
            .collect();
        // A^T A, lower triangle: column j holds rows i >= j (and always j itself).
        let mut col_start = vec![0usize; cols + 1];
        for j in 0..cols {
            col_start[j + 1] = 1;
        }
        for r in 0..rows {
            let row = &a_cols[self.a_row_start[r]..self.a_row_start[r + 1]];
            for (x, &j) in row.iter().enumerate() {
                col_start[j as usize + 1] += row.len() - x;
            }
        }
        for j in 0..cols {
            col_start[j + 1] += col_start[j];
        }
        let mut gathered = vec![0u32; col_start[cols]];
        let mut next: Vec<usize> = col_start[..cols].to_vec();
        for (j, at) in next.iter_mut().enumerate() {
            gathered[*at] = j as u32;
            *at += 1;
        }
        for r in 0..rows {
            let row = &a_cols[self.a_row_start[r]..self.a_row_start[r + 1]];
            for (x, &j) in row.iter().enumerate() {
                for &i in &row[x..] {
                    gathered[next[j as usize]] = i;
                    next[j as usize] += 1;
                }
            }
        }
        // Each row's pairs once, besides each column's diagonal.
        let pairs = gathered.len() - cols;
        let mut col_ptr = Vec::with_capacity(cols + 1);
        let mut row_idx: Vec<u32> = Vec::with_capacity(gathered.len());
        col_ptr.push(0usize);
        sorted_distinct_into(&mut gathered, &col_start, &mut row_idx, &mut col_ptr);
        drop(gathered);
        let slot_of = |i: u32, j: u32| -> usize {
            let (a, b) = (col_ptr[j as usize], col_ptr[j as usize + 1]);
            a + row_idx[a..b].binary_search(&i).unwrap_or(0)
        };
        self.pair_slot.clear();
        self.pair_slot.reserve(pairs);
        // A joint's rows mostly read the same columns: a row like the one before takes
        // its pairs' slots from it.
        let mut before = 0..0;
        for r in 0..rows {
            let here = self.a_row_start[r]..self.a_row_start[r + 1];
            let row = &a_cols[here.clone()];
            let pairs = row.len() * (row.len() + 1) / 2;
            if r > 0 && a_cols[before.clone()] == *row {
                let from = self.pair_slot.len() - pairs;
                self.pair_slot.extend_from_within(from..);
            } else {
                for (x, &j) in row.iter().enumerate() {
                    for &i in &row[x..] {
                        self.pair_slot.push(slot_of(i, j) as u32);
                    }
                }
            }
            before = here;
        }
        self.diag_slot = (0..cols as u32).map(|j| slot_of(j, j)).collect();
        // Read at every step (`A^T r`): 12 bytes an entry with its value, not 16.
        self.a_cols = a_cols;
        self.n_values = vec![0.0; row_idx.len()];
        let grouped = self
            .groups
            .as_deref()
            .and_then(|g| ordering::grouped_amd(&col_ptr, &row_idx, g));
        // The pattern and its factor's are kept with 32-bit indices: at 60,000 columns
        // the factor's 720,000 entries are then 12 bytes each rather than 16, for every
        // factorization and back-substitution (a pattern past 2^32 entries is not
        // analysed: its matrix would not fit in memory anyway).
        let Some(col_ptr) = indices_u32(&col_ptr) else {
            self.llt = None;
            self.n_symbolic = None;
            return;
        };
        let symbolic = SymbolicSparseColMat::new_checked(cols, cols, col_ptr, None, row_idx);
        let grouped = grouped.and_then(|(f, i)| Some((indices_u32(&f)?, indices_u32(&i)?)));
        self.llt = match grouped {
            Some((forward, inverse)) => factorize_symbolic_cholesky(
                symbolic.as_ref(),
                Side::Lower,
                SymmetricOrdering::Custom(PermRef::new_checked(&forward, &inverse, cols)),
                Default::default(),
            ),
            None => factorize_symbolic_cholesky(
                symbolic.as_ref(),
                Side::Lower,
                SymmetricOrdering::Amd,
                Default::default(),
            ),
        }
        .ok();
        self.n_symbolic = Some(symbolic);
    }

    /// Takes the analysis a dropped matrix left for this exact pattern (see `kept`);
    /// false when there is none.
    fn adopt_kept(&mut self, jac: &TangentJacobian, col_of: &[usize]) -> bool {
        let Some(a) = kept::take(
            (self.rows, self.cols),
            &jac.entries,
            col_of,
            self.groups.as_deref(),
        ) else {
            return false;
        };
        self.analysis += 1;
        self.a_values = vec![0.0; a.a_cols.len()];
        self.n_values = vec![0.0; a.n_symbolic.row_idx().len()];
        self.key = a.key;
        self.col_of = a.col_of;
        self.entry_slot = a.entry_slot;
        self.a_row_start = a.a_row_start;
        self.a_cols = a.a_cols;
        self.pair_slot = a.pair_slot;
        self.diag_slot = a.diag_slot;
        self.n_symbolic = Some(a.n_symbolic);
        self.llt = a.llt;
        true
    }

    /// See [`StepMatrix::reweigh`]; false (nothing changed) where the matrix was not
    /// filled for its pattern or the weights do not fit it.
    fn reweigh(&mut self, from: &[f64], to: &[f64]) -> bool {
        let Some(symbolic) = &self.n_symbolic else {
            return false;
        };
        if from.len() != self.cols
            || to.len() != self.cols
            || self.normal.len() != symbolic.row_idx().len()
            || self.a_values.len() != self.a_cols.len()
        {
            return false;
        }
        let scale: Vec<f64> = from.iter().zip(to).map(|(f, t)| f / t).collect();
        for (v, &j) in self.a_values.iter_mut().zip(&self.a_cols) {
            *v *= scale[j as usize];
        }
        let (col_ptr, row_idx) = (symbolic.col_ptr(), symbolic.row_idx());
        for j in 0..self.cols {
            let (a, b) = (col_ptr[j] as usize, col_ptr[j + 1] as usize);
            for (v, &i) in self.normal[a..b].iter_mut().zip(&row_idx[a..b]) {
                *v *= scale[i as usize] * scale[j];
            }
        }
        self.column_norm = self.scale_of_a();
        true
    }

    /// `A^T A` (before regularisation) into `normal`, reusing its memory.
    fn fill_normal(&mut self) {
        self.normal.clear();
        self.normal.resize(self.n_values.len(), 0.0);
        let mut p = 0;
        for r in 0..self.rows {
            let vals = &self.a_values[self.a_row_start[r]..self.a_row_start[r + 1]];
            for (x, &vj) in vals.iter().enumerate() {
                for &vi in &vals[x..] {
                    self.normal[self.pair_slot[p] as usize] += vi * vj;
                    p += 1;
                }
            }
        }
    }

    /// Rank by the singular values of `A` made dense.
    fn dense_rank(&self) -> usize {
        let mut m = vec![0.0; self.rows * self.cols];
        for r in 0..self.rows {
            for k in self.a_row_start[r]..self.a_row_start[r + 1] {
                m[self.a_cols[k] as usize * self.rows + r] = self.a_values[k];
            }
        }
        dense::rank(&m, self.rows, self.cols)
    }

    fn scale(&self) -> f64 {
        self.column_norm
    }

    fn scale_of_a(&self) -> f64 {
        let mut col_sq = vec![0.0f64; self.cols];
        for (k, &j) in self.a_cols.iter().enumerate() {
            col_sq[j as usize] += self.a_values[k] * self.a_values[k];
        }
        col_sq.iter().fold(0.0f64, |m, &x| m.max(x)).sqrt()
    }

    /// `r - A x`.
    pub(crate) fn residual_of(&self, r: &[f64], x: &[f64]) -> Vec<f64> {
        (0..self.rows)
            .map(|row| {
                let a = self.a_row_start[row]..self.a_row_start[row + 1];
                let ax: f64 = self.a_cols[a.clone()]
                    .iter()
                    .zip(&self.a_values[a])
                    .map(|(&c, &v)| v * x[c as usize])
                    .sum();
                r[row] - ax
            })
            .collect()
    }

    /// `A^T r`.
    fn transpose_times(&self, r: &[f64]) -> Vec<f64> {
        let mut rhs = vec![0.0; self.cols];
        debug_assert_eq!(r.len(), self.rows);
        for (row, &ri) in r.iter().enumerate() {
            let at = self.a_row_start[row]..self.a_row_start[row + 1];
            for (&j, &v) in self.a_cols[at.clone()].iter().zip(&self.a_values[at]) {
                rhs[j as usize] += v * ri;
            }
        }
        rhs
    }

    /// The numeric Cholesky of `A^T A + mu I` (more regularisation if it is not
    /// numerically positive definite).
    fn factor(&self, lambda: f64) -> Result<SparseLlt, SolveError> {
        let (Some(symbolic), Some(llt)) = (&self.n_symbolic, &self.llt) else {
            return Err(SolveError::Factorization(
                "no symbolic factorization".into(),
            ));
        };
        let base = &self.normal;
        let max_diag = self.diag_slot.iter().fold(0.0f64, |m, &s| m.max(base[s]));
        let mut mu = lambda.max(1e-300 * max_diag.max(1.0));
        let mut values = self.damped.borrow_mut();
        // A spare buffer, else a fresh one (a lock poisoned by a panic elsewhere: fresh).
        let mut factor = self
            .spares
            .lock()
            .ok()
            .and_then(|mut spares| spares.pop())
            .unwrap_or_default();
        factor.clear();
        factor.resize(llt.len_val(), 0.0);
        let mut scratch = self.scratch.borrow_mut();
        let Some(buffer) = room(
            &mut scratch,
            llt.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default()),
        ) else {
            return Err(SolveError::Factorization(
                "no room for the factorization".into(),
            ));
        };
        for _ in 0..8 {
            values.clear();
            values.extend_from_slice(base);
            for &s in &self.diag_slot {
                values[s] += mu;
            }
            let matrix = SparseColMatRef::new(symbolic.as_ref(), &values);
            match llt.factorize_numeric_llt::<f64>(
                &mut factor,
                matrix,
                Side::Lower,
                Default::default(),
                Par::Seq,
                MemStack::new(buffer),
                Default::default(),
            ) {
                Ok(_) => {
                    return Ok(SparseLlt {
                        values: factor,
                        analysis: self.analysis,
                        spares: std::sync::Arc::clone(&self.spares),
                    })
                }
                // Not numerically positive definite: regularise more.
                Err(_) => mu *= 100.0,
            }
        }
        Err(SolveError::Factorization(
            "normal equations could not be factored".into(),
        ))
    }

    /// `x <- (L L^T)^-1 x` with the numeric factor `llt` of this matrix's pattern.
    fn solve_in_place(&self, llt: &SparseLlt, x: &mut [f64]) {
        let Some(symbolic) = &self.llt else {
            return;
        };
        debug_assert_eq!(llt.analysis, self.analysis, "a factor of another analysis");
        if llt.analysis != self.analysis
            || llt.values.len() != symbolic.len_val()
            || x.len() != self.cols
        {
            return;
        }
        let mut scratch = self.scratch.borrow_mut();
        let Some(buffer) = room(
            &mut scratch,
            symbolic.solve_in_place_scratch::<f64>(1, Par::Seq),
        ) else {
            x.fill(f64::NAN);
            return;
        };
        let cols = x.len();
        LltRef::new(symbolic, &llt.values).solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(x, cols, 1),
            Par::Seq,
            MemStack::new(buffer),
        );
    }
}

/// The numeric values of a sparse Cholesky factor of `A^T A + mu I`, for the symbolic
/// factorization its [`SparseNormal`] keeps (its `analysis`-th).
pub(crate) struct SparseLlt {
    values: Vec<f64>,
    analysis: u64,
    /// Where its values go when it is dropped.
    spares: SpareFactors,
}

impl Drop for SparseLlt {
    fn drop(&mut self) {
        if let Ok(mut spares) = self.spares.lock() {
            if spares.len() < SPARE_FACTORS {
                spares.push(std::mem::take(&mut self.values));
            }
        }
    }
}

/// A large matrix leaves its analysis for the next matrix of the same pattern (see
/// `kept`).
impl Drop for SparseNormal {
    fn drop(&mut self) {
        if self.cols < kept::KEPT_FROM_COLUMNS {
            return;
        }
        let Some(n_symbolic) = self.n_symbolic.take() else {
            return;
        };
        kept::keep(kept::Analysis {
            rows: self.rows,
            cols: self.cols,
            key: std::mem::take(&mut self.key),
            col_of: std::mem::take(&mut self.col_of),
            groups: self.groups.take(),
            entry_slot: std::mem::take(&mut self.entry_slot),
            a_row_start: std::mem::take(&mut self.a_row_start),
            a_cols: std::mem::take(&mut self.a_cols),
            pair_slot: std::mem::take(&mut self.pair_slot),
            diag_slot: std::mem::take(&mut self.diag_slot),
            n_symbolic,
            llt: self.llt.take(),
        });
    }
}

/// `kept` if it holds `req`, else a buffer that does, kept in its place; `None` if
/// there is no memory for one.
fn room(kept: &mut Option<MemBuffer>, req: StackReq) -> Option<&mut MemBuffer> {
    if let Some(buffer) = kept {
        if !MemStack::new(buffer).can_hold(req) {
            *kept = None;
        }
    }
    if kept.is_none() {
        *kept = Some(MemBuffer::try_new(req).ok()?);
    }
    kept.as_mut()
}

/// `v` as 32-bit indices, or `None` where one does not fit.
fn indices_u32(v: &[usize]) -> Option<Vec<u32>> {
    v.iter().map(|&x| u32::try_from(x).ok()).collect()
}

/// Each list `lists[start[k]..start[k + 1]]` sorted, appended to `out` without repeats,
/// and the end of each in `out` pushed to `ends`: compressed rows or columns from
/// entries gathered by counting.
fn sorted_distinct_into(
    lists: &mut [u32],
    start: &[usize],
    out: &mut Vec<u32>,
    ends: &mut Vec<usize>,
) {
    for w in start.windows(2) {
        let list = &mut lists[w[0]..w[1]];
        list.sort_unstable();
        let mut last = None;
        for &x in list.iter() {
            if last != Some(x) {
                out.push(x);
                last = Some(x);
            }
        }
        ends.push(out.len());
    }
}

/// Whether `entries` list the positions `key` lists, in the same order (a pattern made
/// for `key` then holds for their values).
pub(crate) fn same_positions(key: &[(u32, u32)], entries: &[(u32, u32, f64)]) -> bool {
    key.len() == entries.len()
        && key
            .iter()
            .zip(entries)
            .all(|(&(r, c), &(er, ec, _))| r == er && c == ec)
}

/// Whether every number is finite: a matrix with an infinity or a NaN is never handed
/// to a factorization or an SVD (nalgebra's panics on one), the caller stops instead.
pub(crate) fn all_finite<'a>(values: impl IntoIterator<Item = &'a f64>) -> bool {
    values.into_iter().all(|x| x.is_finite())
}

/// A thin singular value decomposition `M = U diag(s) V^T` (`k = min(rows, columns)`
/// singular values, descending). Computed by faer: nalgebra's (0.33) occasionally
/// returns factors that do not recompose the matrix (dimforge/nalgebra#1172; met on an
/// 11 x 12 Jacobian, off by 2.5e-4).
pub(crate) struct ThinSvd {
    pub(crate) u: DMatrix<f64>,
    pub(crate) singular_values: Vec<f64>,
    pub(crate) v_t: DMatrix<f64>,
}

/// The thin SVD of `m`, or `None` if it does not converge (or `m` is not finite).
pub(crate) fn thin_svd(m: &DMatrix<f64>) -> Option<ThinSvd> {
    let (rows, cols) = m.shape();
    if !all_finite(m.iter()) {
        return None;
    }
    let a = Mat::<f64>::from_fn(rows, cols, |r, c| m[(r, c)]);
    let svd = a.thin_svd().ok()?;
    let s = svd.S().column_vector();
    let (u, v) = (svd.U(), svd.V());
    let k = s.nrows();
    Some(ThinSvd {
        u: DMatrix::from_fn(rows, k, |r, c| u[(r, c)]),
        singular_values: (0..k).map(|i| s[i]).collect(),
        v_t: DMatrix::from_fn(k, cols, |r, c| v[(c, r)]),
    })
}

impl ThinSvd {
    /// The least-norm least-squares solution of `M x = b`, singular values at or below
    /// `eps` taken as zero.
    pub(crate) fn solve(&self, b: &DVector<f64>, eps: f64) -> DVector<f64> {
        let mut c = self.u.tr_mul(b);
        for (c, &s) in c.iter_mut().zip(&self.singular_values) {
            *c = if s > eps { *c / s } else { 0.0 };
        }
        self.v_t.tr_mul(&c)
    }
}

/// A square Jacobian factored by sparse LU (partial pivoting): where a large run's
/// equations are as many as its unknowns and independent (every freedom driven), this
/// solves `J x = b` at the Jacobian's own condition, where the normal equations square
/// it (a 1,000-link chain's rates needed a dozen refinement rounds that way).
pub(crate) struct SquareLu {
    lu: faer::sparse::linalg::solvers::Lu<usize, f64>,
    n: usize,
}

/// The symbolic analysis of a square Jacobian's sparse LU (its column ordering), kept
/// with the pattern it was made for: a kinematic run factors a Jacobian of one pattern at
/// every frame.
#[derive(Debug, Default)]
pub(crate) struct LuPattern {
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    symbolic: Option<faer::sparse::linalg::solvers::SymbolicLu<usize>>,
}

impl SquareLu {
    /// Factors `jac` (its entries summed where repeated), or `None` if it is not square
    /// or the factorization fails.
    #[cfg(test)]
    pub(crate) fn new(jac: &TangentJacobian) -> Option<SquareLu> {
        SquareLu::with_pattern(jac, &mut LuPattern::default())
    }

    /// [`new`](Self::new), with the symbolic analysis of `pattern` where `jac` has its
    /// pattern (else made afresh and kept there).
    pub(crate) fn with_pattern(jac: &TangentJacobian, pattern: &mut LuPattern) -> Option<SquareLu> {
        use faer::sparse::linalg::solvers::{Lu, SymbolicLu};
        use faer::sparse::{SparseColMat, Triplet};
        let n = jac.columns;
        if jac.rows != n || n == 0 || !all_finite(jac.entries.iter().map(|e| &e.2)) {
            return None;
        }
        let triplets: Vec<Triplet<usize, usize, f64>> = jac
            .entries
            .iter()
            .map(|&(r, c, v)| Triplet::new(r as usize, c as usize, v))
            .collect();
        let a = SparseColMat::<usize, f64>::try_new_from_triplets(n, n, &triplets).ok()?;
        let structure = a.symbolic();
        let known = pattern.symbolic.is_some()
            && pattern.col_ptr == structure.col_ptr()
            && pattern.row_idx == structure.row_idx();
        if !known {
            pattern.symbolic = SymbolicLu::try_new(structure).ok();
            pattern.col_ptr = structure.col_ptr().to_vec();
            pattern.row_idx = structure.row_idx().to_vec();
        }
        let lu = Lu::try_new_with_symbolic(pattern.symbolic.clone()?, a.as_ref()).ok()?;
        Some(SquareLu { lu, n })
    }

    /// `J^-1 b`, or `None` if the result is not finite (a singular matrix).
    pub(crate) fn solve(&self, b: &[f64]) -> Option<Vec<f64>> {
        let mut x = Mat::<f64>::zeros(self.n, 1);
        for (k, &v) in b.iter().enumerate().take(self.n) {
            x[(k, 0)] = v;
        }
        self.lu.solve_in_place(x.as_mut());
        let out: Vec<f64> = (0..self.n).map(|k| x[(k, 0)]).collect();
        all_finite(out.iter()).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A long chain's translations: row `k` is `x_k - x_(k-1)` (`x_(-1)` grounded), the
    /// last part free at its end. Its smallest singular value squared is about
    /// `(pi / 2n)^2`, below the regularisation floor at `n = 10,000`: one solve comes out
    /// shortened, the refined one is the exact (here unique) solution, a running sum,
    /// dense and sparse alike.
    #[test]
    fn refined_steps_take_the_floor_back_out_of_soft_directions() {
        for (n, dense_columns) in [(40, 48), (40, 0), (10_000, 0)] {
            // Columns ascending within a row, as tangent Jacobians list them.
            let mut entries = Vec::new();
            for k in 0..n as u32 {
                if k > 0 {
                    entries.push((k, k - 1, -1.0));
                }
                entries.push((k, k, 1.0));
            }
            let jac = TangentJacobian {
                rows: n,
                columns: n,
                entries,
            };
            let cols: Vec<usize> = (0..n).collect();
            let mut matrix = StepMatrix::new(n, n, dense_columns);
            matrix.fill(&jac, &cols, &vec![1.0; n]);
            let factored = matrix.factor().unwrap();
            let steps = factored.regularized(0.0, 1.0).unwrap();
            let r: Vec<f64> = (0..n)
                .map(|k| if k % 2 == 0 { 1.0 } else { -0.5 })
                .collect();
            let exact: Vec<f64> = r
                .iter()
                .scan(0.0, |sum, v| {
                    *sum += v;
                    Some(*sum)
                })
                .collect();
            let error = |x: &[f64]| {
                x.iter()
                    .zip(&exact)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
            };
            let once = error(&steps.solve(&r));
            let refined = error(&steps.solve_refined(&r));
            assert!(
                refined < 1e-4,
                "n = {n}, dense up to {dense_columns}: refined off by {refined:.2e}, once {once:.2e}"
            );
            if n == 10_000 {
                assert!(once > 1.0, "n = {n}: one solve off by only {once:.2e}");
            }
        }
    }

    /// A sparse matrix filled with one set of column weights and reweighed to another
    /// steps as one filled with the other: the same step to rounding, dense and sparse.
    #[test]
    fn a_reweighed_matrix_steps_as_one_filled_with_its_weights() {
        // Rows over overlapping runs of three columns, an entry repeated (summed).
        let (rows, cols) = (60usize, 64usize);
        let mut entries = Vec::new();
        for r in 0..rows as u32 {
            for (d, v) in [(0u32, 1.5), (1, -0.75), (3, 0.5)] {
                let c = r + d;
                entries.push((r, c, v + 0.01 * f64::from(r)));
            }
        }
        entries.push((7, 8, 0.25));
        let jac = TangentJacobian {
            rows,
            columns: cols,
            entries,
        };
        let col_of: Vec<usize> = (0..cols).collect();
        let first: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 3) as f64).collect();
        let second: Vec<f64> = (0..cols)
            .map(|j| {
                if j % 6 < 3 {
                    300.0 * first[j]
                } else {
                    first[j]
                }
            })
            .collect();
        let r: Vec<f64> = (0..rows).map(|k| ((k * 7) % 5) as f64 - 2.0).collect();
        for dense_columns in [0, 100] {
            let mut filled = StepMatrix::new(rows, cols, dense_columns);
            filled.fill(&jac, &col_of, &second);
            let mut reweighed = StepMatrix::new(rows, cols, dense_columns);
            reweighed.fill(&jac, &col_of, &first);
            reweighed.reweigh(&jac, &col_of, (&first, &second));
            let a = filled
                .factor()
                .unwrap()
                .regularized(0.0, 1.0)
                .unwrap()
                .solve(&r);
            let b = reweighed
                .factor()
                .unwrap()
                .regularized(0.0, 1.0)
                .unwrap()
                .solve(&r);
            let size = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let off = a
                .iter()
                .zip(&b)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            assert!(
                size > 0.1 && off <= 1e-10 * size,
                "dense up to {dense_columns}: off by {off:.2e}"
            );
        }
    }

    /// Refinement stops where the equations disagree: two rows on one unknown asking
    /// for 1 and 3 give their least-squares 2, however often refined; the conjugate
    /// gradients of a crawling step (`krylov`) find them disagreeing.
    /// A factorization in a dropped factor's buffer (a different, shorter one: a
    /// matrix of another pattern) and faer's kept working memory steps exactly as one in
    /// fresh memory, and the buffers are given back and taken again.
    #[test]
    fn factors_in_spare_buffers_step_as_fresh_ones() {
        let jac = |n: u32| TangentJacobian {
            rows: n as usize,
            columns: n as usize,
            entries: (0..n)
                .flat_map(|k| {
                    let left = (k > 0).then(|| (k, k - 1, -1.0 - 0.01 * f64::from(k)));
                    left.into_iter()
                        .chain([(k, k, 1.0 + 0.1 * f64::from(k % 7))])
                })
                .collect(),
        };
        let n = 300;
        let cols: Vec<usize> = (0..n).collect();
        let r: Vec<f64> = (0..n).map(|k| (k as f64 * 0.37).sin()).collect();
        let fresh = |lambda: f64| {
            let mut matrix = StepMatrix::new(n, n, 0);
            matrix.fill(&jac(n as u32), &cols, &vec![1.0; n]);
            let factored = matrix.factor().unwrap();
            let steps = factored.regularized(lambda, 1.0).unwrap();
            steps.solve(&r)
        };
        let mut matrix = StepMatrix::new(n, n, 0);
        let StepMatrix::Sparse(normal) = &matrix else {
            panic!("a sparse matrix was asked for");
        };
        let spares = std::sync::Arc::clone(&normal.spares);
        // A first factor of a smaller pattern leaves a buffer too short for the next.
        let small: Vec<usize> = (0..n / 3).collect();
        matrix.fill(&jac((n / 3) as u32), &small, &vec![1.0; n / 3]);
        drop(matrix.factor().unwrap().regularized(0.0, 1.0).unwrap());
        assert_eq!(spares.lock().unwrap().len(), 1);
        matrix.fill(&jac(n as u32), &cols, &vec![1.0; n]);
        for lambda in [0.0, 1e-3, 0.0] {
            let factored = matrix.factor().unwrap();
            let steps = factored.regularized(lambda, 1.0).unwrap();
            assert!(spares.lock().unwrap().is_empty(), "the spare was taken");
            assert_eq!(steps.solve(&r), fresh(lambda));
            drop(steps);
            assert_eq!(spares.lock().unwrap().len(), 1, "and given back");
        }
    }

    #[test]
    fn refined_steps_stop_at_the_least_squares_remainder() {
        let jac = TangentJacobian {
            rows: 2,
            columns: 1,
            entries: vec![(0, 0, 1.0), (1, 0, 1.0)],
        };
        let mut matrix = StepMatrix::new(2, 1, 48);
        matrix.fill(&jac, &[0], &[1.0]);
        let factored = matrix.factor().unwrap();
        let steps = factored.regularized(0.0, 1.0).unwrap();
        let x = steps.solve_refined(&[1.0, 3.0]);
        assert!((x[0] - 2.0).abs() < 1e-7, "{x:?}");
        assert!(steps.solve_consistent(&[1.0, 3.0]).is_none());
    }

    /// A chain-like square system: lower bidiagonal with a long coupling row, entries
    /// repeated (summed), solved to rounding; a singular one is not.
    #[test]
    fn square_lu_solves_a_sparse_square_jacobian() {
        let n = 200;
        let mut entries = Vec::new();
        for k in 0..n as u32 {
            entries.push((k, k, 1.0 + f64::from(k) * 1e-3));
            if k > 0 {
                entries.push((k, k - 1, -0.5));
                entries.push((k, k - 1, -0.25));
            }
        }
        entries.push((0, n as u32 - 1, 0.3));
        let jac = TangentJacobian {
            rows: n,
            columns: n,
            entries,
        };
        let b: Vec<f64> = (0..n).map(|k| (k as f64 * 0.37).sin()).collect();
        let x = SquareLu::new(&jac).unwrap().solve(&b).unwrap();
        let mut r = b.clone();
        for &(row, col, v) in &jac.entries {
            r[row as usize] -= v * x[col as usize];
        }
        assert!(r.iter().all(|v| v.abs() < 1e-12), "{r:?}");
        // Not square: none.
        let wide = TangentJacobian {
            rows: n - 1,
            columns: n,
            entries: jac.entries.clone(),
        };
        assert!(SquareLu::new(&wide).is_none());
        // Singular (an empty row): no finite solution, or none at all.
        let singular = TangentJacobian {
            rows: n,
            columns: n,
            entries: jac.entries.iter().copied().filter(|e| e.0 != 7).collect(),
        };
        let solved = SquareLu::new(&singular).and_then(|lu| lu.solve(&b));
        assert!(solved.is_none(), "a singular system solved");
        // A kept symbolic analysis: new values on the same pattern solve as a fresh
        // factorization does; another pattern gets an analysis of its own.
        let mut pattern = LuPattern::default();
        for scale in [1.0, 3.0, -0.5] {
            let scaled = TangentJacobian {
                rows: n,
                columns: n,
                entries: jac
                    .entries
                    .iter()
                    .map(|&(r, c, v)| (r, c, v * scale))
                    .collect(),
            };
            let kept = SquareLu::with_pattern(&scaled, &mut pattern)
                .unwrap()
                .solve(&b);
            let fresh = SquareLu::new(&scaled).unwrap().solve(&b);
            assert_eq!(kept, fresh);
        }
        let kept = (pattern.col_ptr.clone(), pattern.row_idx.clone());
        let transposed = TangentJacobian {
            rows: n,
            columns: n,
            entries: jac.entries.iter().map(|&(r, c, v)| (c, r, v)).collect(),
        };
        let x = SquareLu::with_pattern(&transposed, &mut pattern)
            .unwrap()
            .solve(&b)
            .unwrap();
        assert_ne!((pattern.col_ptr.clone(), pattern.row_idx.clone()), kept);
        let mut r = b.clone();
        for &(row, col, v) in &transposed.entries {
            r[row as usize] -= v * x[col as usize];
        }
        assert!(r.iter().all(|v| v.abs() < 1e-12), "{r:?}");
    }
}
