//! The KKT matrix of a step and its factorization:
//!
//! ```text
//! [ M   J^T ] [ x ]   [ f ]
//! [ J  -e 1 ] [ y ] = [ b ]
//! ```
//!
//! `M` the bodies' mass matrix (block diagonal, 6 x 6 per free part, possibly singular
//! where a part's joints make up for it), `J` the tangent Jacobian of the equations
//! held. Compliant equations add their own term to `e` (`soft`, per row: generalized-
//! alpha's `beta' compliance`), exactly: their equation is `C - compliance lambda = 0`.
//! The small `e` (`REGULARIZATION` times the scale of `J M^-1 J^T`) keeps the
//! matrix invertible where rows of `J` are momentarily dependent (a four-bar passing a
//! singular position); a step's Newton iteration converges to the exact equations all
//! the same, since its residuals are exact. Rows found dependent at the start of a run
//! are left out before they come here (`start`); rows nearly dependent on the others at
//! the pose of a factorization (within [`NEARLY_DEPENDENT`], a singular position) are
//! left out of that factorization (on large systems only after a step has failed, for a
//! while): their multipliers are not corrected by it, so the
//! iteration cannot push the multipliers along the Jacobian's near-null directions
//! (where a tiny force error is a huge multiplier, and the iteration cycles).
//!
//! Dense LU with partial pivoting (`tenon_solve::DenseLu`, which lists the factors'
//! nonzeros for its solves) up to [`DENSE_KKT`]; above, a sparse `L D L^T` of the
//! quasi-definite matrix (the mass block lifted by [`STATIC`] of its scale, pivots held
//! to their signs; faer through `tenon_solve::SparseLdlt`, AMD ordering, its assembly
//! and symbolic analysis kept between factorizations). Sparse LU with partial pivoting
//! (COLAMD) was used first: on a 10,000-link chain its fill made a step cost a second.

use tenon_system::TangentJacobian;

use crate::bodies::Placed;

/// Relative size of the regularisation of the constraint block.
pub(crate) const REGULARIZATION: f64 = 1e-10;
/// A row whose part outside the span of the rows before it is below this fraction of its
/// norm (columns weighted) is left out of a factorization.
pub(crate) const NEARLY_DEPENDENT: f64 = 1e-3;

/// The mass block's diagonal lift in the sparse `L D L^T` factorization, relative to its
/// largest diagonal entry (the iteration matrix only: residuals stay exact).
pub(crate) const STATIC: f64 = 1e-8;

/// Large sparse iteration matrices cheap to factor against a solve are refactored at the
/// first iterate of every step (see [`Kkt::refactor_each_step`]). Measured
/// (instructions): a pendulum chain's matrix costs about 3 solves to factor by the
/// analysis's counts (about 8 in instructions, faer's overheads included). Fresh at each
/// step, its steps take about 3 iterations instead of 4.3 (10 links), 5.2 (100) and 5.7
/// (1,000); the runs take 48% more at 10 links (110 rows: a factorization's fixed costs
/// weigh), 9% less at 100 and 20% less at 1,000. The crane truss (a ratio of 10: its
/// kept matrix needs no refactoring at all), A02 (dense, 30) and the small fixtures
/// (dense: their factorizations also look for nearly dependent rows) keep theirs: fresh
/// each step, their runs took 1.2 to 4 times as long.
pub(crate) const FRESH_SOLVES: f64 = 5.0;
/// See [`FRESH_SOLVES`].
pub(crate) const FRESH_SIZE: usize = 1000;

/// Above this size (`n + m`) the KKT matrix is factored sparse.
pub(crate) const DENSE_KKT: usize = 60;
/// Up to this many rows, nearly dependent rows are looked for at every factorization
/// (leaving them out before Newton stalls near a singular position keeps each step's
/// solution clean: A02's B0 is 4e-8 off at h = 1e-4 this way, 1e-5 when rows are
/// dropped only after a failure).
pub(crate) const ALWAYS_CHECK_ROWS: usize = 60;
/// Up to this many rows, after a failed step (`careful`).
pub(crate) const NEAR_CHECK_ROWS: usize = 20_000;

/// The KKT matrix's factorization, dense or sparse by size; the sparse one keeps its
/// symbolic analysis from one factorization to the next.
#[derive(Debug, Default)]
pub(crate) struct Kkt {
    n: usize,
    m: usize,
    /// Positions (in the rows given) of the rows factored.
    kept: Vec<usize>,
    /// How many rows were given.
    given: usize,
    dense: tenon_solve::DenseLu,
    dense_ready: bool,
    sparse: tenon_solve::SparseLdlt,
    sparse_ready: bool,
    signs: Vec<i8>,
    entries: Vec<(u32, u32, f64)>,
}

impl Kkt {
    /// Factors the matrix of `placed` bodies (one per free part, filling the first
    /// `6 * placed.len()` of `n` columns) plus `extra` entries in that block (the
    /// springs' stiffness and damping in Newton's iteration matrix; symmetric, both
    /// triangles given), and `jac` restricted to rows `given` (indices of `jac`'s rows,
    /// in order), less, when `careful` (a step failed nearby), those nearly dependent at
    /// this pose. `false` if the factorization fails.
    pub(crate) fn factor(
        &mut self,
        (placed, extra): (&[Placed], &[(u32, u32, f64)]),
        n: usize,
        jac: &TangentJacobian,
        (given, weights, soft): (&[usize], &[f64], &[f64]),
        careful: bool,
    ) -> bool {
        let soft_of = |row: usize| soft.get(row).copied().unwrap_or(0.0);
        // Only rigid rows can be left out as nearly dependent: a compliant row's
        // multiplier is fixed by its own term however its row lies.
        let rigid: Vec<usize> = (0..given.len())
            .filter(|&k| soft_of(given[k]) == 0.0)
            .collect();
        let near: Vec<usize> =
            if given.len() <= ALWAYS_CHECK_ROWS || (careful && given.len() <= NEAR_CHECK_ROWS) {
                let rows: Vec<usize> = rigid.iter().map(|&k| given[k]).collect();
                crate::dependence::dependent_rows(jac, &rows, weights, NEARLY_DEPENDENT)
                    .into_iter()
                    .map(|k| rigid[k])
                    .collect()
            } else {
                Vec::new()
            };
        self.kept = (0..given.len())
            .filter(|k| near.binary_search(k).is_err())
            .collect();
        self.given = given.len();
        self.n = n;
        self.m = self.kept.len();
        self.dense_ready = false;
        self.sparse_ready = false;
        let entries = &mut self.entries;
        entries.clear();
        let mut mass_scale = 0.0f64;
        for (k, p) in placed.iter().enumerate() {
            let block = p.mass_matrix();
            for r in 0..6 {
                for c in 0..6 {
                    let (i, j) = (6 * k + r, 6 * k + c);
                    if i < n && j < n && (block[(r, c)] != 0.0 || i == j) {
                        entries.push((i as u32, j as u32, block[(r, c)]));
                    }
                }
                mass_scale = mass_scale.max(block[(r, r)]);
            }
        }
        entries.extend(
            extra
                .iter()
                .filter(|&&(r, c, _)| (r as usize) < n && (c as usize) < n),
        );
        let mut place = vec![usize::MAX; jac.rows];
        for (k, &g) in self.kept.iter().enumerate() {
            if let Some(slot) = given.get(g).and_then(|&r| place.get_mut(r)) {
                *slot = k;
            }
        }
        let mut jac_scale = 0.0f64;
        for &(r, c, v) in &jac.entries {
            let Some(&k) = place.get(r as usize) else {
                continue;
            };
            if k == usize::MAX || c as usize >= n {
                continue;
            }
            entries.push(((n + k) as u32, c, v));
            entries.push((c, (n + k) as u32, v));
            jac_scale = jac_scale.max(v.abs());
        }
        let e = REGULARIZATION * jac_scale * jac_scale / mass_scale.max(f64::MIN_POSITIVE);
        for (k, &g) in self.kept.iter().enumerate() {
            let own = given.get(g).map_or(0.0, |&row| soft_of(row));
            entries.push(((n + k) as u32, (n + k) as u32, -e - own));
        }
        let size = n + self.m;
        if size <= DENSE_KKT {
            self.dense_ready = self.dense.factor_entries(size, entries);
            self.dense_ready
        } else {
            // L D L^T without pivoting: quasi-definite once the mass block is held
            // positive (`STATIC` of its scale on the diagonal: a part's direction that
            // only its joints determine has no inertia), pivots kept to their signs.
            let lift = STATIC * mass_scale;
            for k in 0..n {
                entries.push((k as u32, k as u32, lift));
            }
            self.signs.clear();
            self.signs
                .extend((0..size).map(|k| if k < n { 1 } else { -1 }));
            let scale = mass_scale.max(jac_scale * jac_scale / mass_scale.max(f64::MIN_POSITIVE));
            self.sparse_ready = self.sparse.factor(
                size,
                entries,
                &self.signs,
                (STATIC * scale, 1e-6 * STATIC * scale),
            );
            self.sparse_ready
        }
    }

    /// Whether a step refactors its iteration matrix at its first iterate rather than
    /// keeping the last one while it converges: a sparse matrix of at least
    /// [`FRESH_SIZE`] rows whose factorization costs under [`FRESH_SOLVES`] solves (by
    /// the analysis's operation counts); `false` before a factorization.
    pub(crate) fn refactor_each_step(&self) -> bool {
        self.sparse_ready
            && self.n + self.m >= FRESH_SIZE
            && self
                .sparse
                .work()
                .is_some_and(|(factor, solve)| (factor as f64) < FRESH_SOLVES * solve as f64)
    }

    /// Whether the last factorization left rows out as nearly dependent (a singular
    /// position is near).
    pub(crate) fn left_rows_out(&self) -> bool {
        self.kept.len() < self.given
    }

    /// Solves for `(x, y)` given `(f, b)` (`b` and `y` over the rows given; rows left out
    /// of the factorization get `y = 0`); `None` if the result is not finite.
    pub(crate) fn solve(&self, f: &[f64], b: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
        let (mut rhs, mut x, mut y) = (Vec::new(), Vec::new(), Vec::new());
        self.solve_into(f, b, &mut rhs, (&mut x, &mut y))
            .then_some((x, y))
    }

    /// [`Kkt::solve`] into `(x, y)` with `rhs` as the work vector (all three resized);
    /// `false` if the result is not finite.
    pub(crate) fn solve_into(
        &self,
        f: &[f64],
        b: &[f64],
        rhs: &mut Vec<f64>,
        (x, y): (&mut Vec<f64>, &mut Vec<f64>),
    ) -> bool {
        let size = self.n + self.m;
        // Written entry by entry (no zeroing first).
        rhs.clear();
        rhs.extend(f.iter().take(self.n));
        rhs.extend(std::iter::repeat_n(0.0, self.n - rhs.len()));
        rhs.extend(self.kept.iter().map(|&g| b.get(g).copied().unwrap_or(0.0)));
        debug_assert_eq!(rhs.len(), size);
        if self.dense_ready {
            if !self.dense.solve_in_place(rhs) {
                return false;
            }
        } else if !(self.sparse_ready && self.sparse.solve_in_place(rhs)) {
            return false;
        }
        if !rhs.iter().all(|v| v.is_finite()) {
            return false;
        }
        x.clear();
        x.extend_from_slice(&rhs[..self.n]);
        y.clear();
        if self.m == self.given {
            // Every row factored: `kept` is `0..given`.
            y.extend_from_slice(&rhs[self.n..]);
        } else {
            y.resize(self.given, 0.0);
            for (k, &g) in self.kept.iter().enumerate() {
                y[g] = rhs[self.n + k];
            }
        }
        true
    }
}
