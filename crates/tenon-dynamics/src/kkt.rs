//! The KKT matrix of a step and its factorization:
//!
//! ```text
//! [ M   J^T ] [ x ]   [ f ]
//! [ J  -e 1 ] [ y ] = [ b ]
//! ```
//!
//! `M` the bodies' mass matrix (block diagonal, 6 x 6 per free part, possibly singular
//! where a part's joints make up for it), `J` the tangent Jacobian of the equations
//! held. The small `e` (`REGULARIZATION` times the scale of `J M^-1 J^T`) keeps the
//! matrix invertible where rows of `J` are momentarily dependent (a four-bar passing a
//! singular position); a step's Newton iteration converges to the exact equations all
//! the same, since its residuals are exact. Rows found dependent at the start of a run
//! are left out before they come here (`start`); rows nearly dependent on the others at
//! the pose of a factorization (within [`NEARLY_DEPENDENT`], a singular position) are
//! left out of that factorization: their multipliers are not corrected by it, so the
//! iteration cannot push the multipliers along the Jacobian's near-null directions
//! (where a tiny force error is a huge multiplier, and the iteration cycles).
//!
//! Dense LU with partial pivoting (nalgebra) for now: the matrix is `(n + m)` square.

use nalgebra::{DMatrix, DVector};
use tenon_system::TangentJacobian;

use crate::bodies::Placed;

/// Relative size of the regularisation of the constraint block.
pub(crate) const REGULARIZATION: f64 = 1e-10;
/// A row whose part outside the span of the rows before it is below this fraction of its
/// norm (columns weighted) is left out of a factorization.
pub(crate) const NEARLY_DEPENDENT: f64 = 1e-3;

/// A factored KKT matrix.
#[derive(Debug)]
pub(crate) struct Kkt {
    n: usize,
    m: usize,
    /// Positions (in the rows given) of the rows factored.
    kept: Vec<usize>,
    /// How many rows were given.
    given: usize,
    lu: nalgebra::LU<f64, nalgebra::Dyn, nalgebra::Dyn>,
}

impl Kkt {
    /// Factors the matrix of `placed` bodies (one per free part, filling the first
    /// `6 * placed.len()` of `n` columns) and `jac` restricted to `rows` (indices of
    /// `jac`'s rows, in order). `None` if the factorization fails.
    pub(crate) fn new(
        placed: &[Placed],
        n: usize,
        jac: &TangentJacobian,
        (given, weights): (&[usize], &[f64]),
    ) -> Option<Kkt> {
        let near = if given.len() <= crate::start::DEPENDENCE_ROWS {
            crate::start::dependent_rows(jac, given, weights, NEARLY_DEPENDENT)
        } else {
            Vec::new()
        };
        let kept: Vec<usize> = (0..given.len())
            .filter(|k| near.binary_search(k).is_err())
            .collect();
        let rows: Vec<usize> = kept.iter().map(|&k| given[k]).collect();
        let m = rows.len();
        let mut a = DMatrix::<f64>::zeros(n + m, n + m);
        let mut mass_scale = 0.0f64;
        for (k, p) in placed.iter().enumerate() {
            let block = p.mass_matrix();
            for r in 0..6 {
                for c in 0..6 {
                    if 6 * k + r < n && 6 * k + c < n {
                        a[(6 * k + r, 6 * k + c)] = block[(r, c)];
                    }
                }
                mass_scale = mass_scale.max(block[(r, r)]);
            }
        }
        let mut place = vec![usize::MAX; jac.rows];
        for (k, &r) in rows.iter().enumerate() {
            if let Some(slot) = place.get_mut(r) {
                *slot = k;
            }
        }
        let mut jac_scale = 0.0f64;
        for &(r, c, v) in &jac.entries {
            let Some(&k) = place.get(r as usize) else {
                continue;
            };
            let c = c as usize;
            if k == usize::MAX || c >= n {
                continue;
            }
            a[(n + k, c)] += v;
            a[(c, n + k)] += v;
            jac_scale = jac_scale.max(v.abs());
        }
        let e = REGULARIZATION * jac_scale * jac_scale / mass_scale.max(f64::MIN_POSITIVE);
        for k in 0..m {
            a[(n + k, n + k)] = -e;
        }
        if !a.iter().all(|x| x.is_finite()) {
            return None;
        }
        let lu = a.lu();
        Some(Kkt {
            n,
            m,
            kept,
            given: given.len(),
            lu,
        })
    }

    /// Solves for `(x, y)` given `(f, b)` (`b` and `y` over the rows given; rows left out
    /// of the factorization get `y = 0`); `None` if the result is not finite.
    pub(crate) fn solve(&self, f: &[f64], b: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
        let mut rhs = DVector::<f64>::zeros(self.n + self.m);
        for (k, &x) in f.iter().take(self.n).enumerate() {
            rhs[k] = x;
        }
        for (k, &g) in self.kept.iter().enumerate() {
            rhs[self.n + k] = b.get(g).copied().unwrap_or(0.0);
        }
        if !self.lu.solve_mut(&mut rhs) {
            return None;
        }
        if !rhs.iter().all(|x| x.is_finite()) {
            return None;
        }
        let x = rhs.rows(0, self.n).iter().copied().collect();
        let mut y = vec![0.0; self.given];
        for (k, &g) in self.kept.iter().enumerate() {
            y[g] = rhs[self.n + k];
        }
        Some((x, y))
    }
}
