//! A step solved to the end by conjugate gradients, the regularised factorization as
//! the preconditioner, for a Newton step that crawls.
//!
//! A step `(A^T A + mu I)^-1 A^T r` shortens each singular direction of `A` by
//! `s^2 / (s^2 + mu)`. The floor `mu` is tiny, but a very long structure has directions
//! softer still: a coiled ladder of 10,000 parts, kept at a pose its stiff chords found,
//! went on cutting its residual's norm by 5% a full step, 100 Newton iterations at 1.5
//! to 6 times its tolerance, its worst row walking down the ladder. The refinement of
//! [`super::refine_step`] (iterated Tikhonov, a stationary iteration) removes such a
//! direction's shortening by the same factor a round, so it gives up at once.
//!
//! Conjugate gradients on `A^T A x = A^T r`, preconditioned by the same factorization,
//! see the preconditioned matrix's eigenvalues `s^2 / (s^2 + mu)`: near 1 but for the
//! few soft directions, which it takes out a few rounds each. Each round costs what a
//! refinement round does (one solve with the factorization, one product with `A`: the
//! product with the search direction is updated from the one with the preconditioned
//! residual). Started from zero, every iterate is in the row space of `A`, so a
//! consistent system ends at the minimum-norm solution: the least-change step.

use super::{norm, Steps};

/// Rounds at most.
const ROUNDS: usize = 40;

/// Rounds end once `|r - A x|` is this fraction of `|r|`.
const TARGET: f64 = 1e-12;

/// A step whose `|r - A x|` stays above this fraction of `|r|` after the rounds is not
/// the solution of a consistent system (the equations disagree, or the rounds ran out):
/// the caller keeps its plain step.
const CONSISTENT: f64 = 1e-6;

/// The minimum-norm solution of `A x = r`, by conjugate gradients preconditioned by
/// `steps` (see the module's header), where the system is consistent; `None` where it
/// is not (within [`CONSISTENT`]).
pub(crate) fn consistent_step(steps: &Steps<'_>, r: &[f64]) -> Option<Vec<f64>> {
    let size_r = norm(r);
    if !size_r.is_finite() || size_r == 0.0 {
        return None;
    }
    let zero = vec![0.0; r.len()];
    // `A v`, from `r - A v` with `r` zero.
    let times = |v: &[f64]| -> Vec<f64> {
        let mut out = steps.residual_of(&zero, v);
        out.iter_mut().for_each(|x| *x = -*x);
        out
    };
    let dot = |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
    // x = 0: e = r; z = M^-1 A^T e; p = z; q = A p; rho = (A^T e) . z = e . (A z).
    let mut e = r.to_vec();
    let mut z = steps.solve(&e);
    let mut x = vec![0.0; z.len()];
    let mut p = z.clone();
    let mut q = times(&p);
    let mut rho = dot(&e, &q);
    for _ in 0..ROUNDS {
        let qq = dot(&q, &q);
        if !(rho > 0.0 && qq > 0.0 && rho.is_finite() && qq.is_finite()) {
            break;
        }
        let alpha = rho / qq;
        x.iter_mut().zip(&p).for_each(|(x, p)| *x += alpha * p);
        e.iter_mut().zip(&q).for_each(|(e, q)| *e -= alpha * q);
        if norm(&e) <= TARGET * size_r {
            break;
        }
        z = steps.solve(&e);
        let w = times(&z);
        let next = dot(&e, &w);
        let beta = next / rho;
        rho = next;
        p.iter_mut().zip(&z).for_each(|(p, z)| *p = z + beta * *p);
        q.iter_mut().zip(&w).for_each(|(q, w)| *q = w + beta * *q);
    }
    // The recurrence's residual drifts from the true one in rounding: judged afresh.
    let left = norm(&steps.residual_of(r, &x));
    (left <= CONSISTENT * size_r && x.iter().all(|v| v.is_finite())).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::super::StepMatrix;
    use super::*;
    use tenon_system::TangentJacobian;

    /// A 2 x 3 system with one very soft direction: its plain regularised step falls
    /// short, the conjugate gradients' reaches the minimum-norm solution.
    #[test]
    fn a_soft_direction_is_taken_out_to_the_minimum_norm_solution() {
        // Rows (1, 0, 0) and (0, eps, 0): column 3 is free, column 2 soft.
        let eps = 1e-7;
        let jac = TangentJacobian {
            rows: 2,
            columns: 3,
            entries: vec![(0, 0, 1.0), (1, 1, eps)],
        };
        for dense_columns in [48, 0] {
            let mut m = StepMatrix::new(2, 3, dense_columns);
            m.fill(&jac, &[0, 1, 2], &[1.0, 1.0, 1.0]);
            let factored = m.factor().unwrap();
            let steps = factored.regularized(0.0, 1.0).unwrap();
            let r = [1.0, 1e-7];
            let plain = steps.solve(&r);
            assert!((plain[1] - 1.0).abs() > 1e-3, "{plain:?}");
            let x = consistent_step(&steps, &r).unwrap();
            assert!((x[0] - 1.0).abs() < 1e-9, "{x:?}");
            assert!((x[1] - 1.0).abs() < 1e-6, "{x:?}");
            assert_eq!(x[2], 0.0);
        }
    }

    /// A step's part along the null space of `A` allowed by the property test below.
    const NULL_SPACE: f64 = 1e-7;

    proptest::proptest! {
        /// Random consistent systems, some columns a million times softer than the
        /// rest, dense and sparse: the step solves `A x = r` and lies in the row space of
        /// `A` (no part along its null space): the minimum-norm, least-change step. (Up
        /// to rounding: the factorization's solves, as the plain step's, leave about
        /// `f64::EPSILON / floor` of a step along the null space, where `A^T A + mu I`
        /// has only the floor; 5e-9 measured.)
        #[test]
        fn consistent_systems_get_their_minimum_norm_solution(
            m in 2usize..7,
            n in 2usize..9,
            entries in proptest::collection::vec(-1.0f64..1.0, 63),
            keep in proptest::collection::vec(0u8..3, 63),
            soft in 0usize..9,
            x0 in proptest::collection::vec(-2.0f64..2.0, 9),
            sparse in proptest::bool::ANY,
        ) {
            let mut a = nalgebra::DMatrix::<f64>::zeros(m, n);
            let mut list = Vec::new();
            for i in 0..m {
                for j in 0..n {
                    let k = i * 9 + j;
                    if keep[k] == 0 {
                        continue;
                    }
                    let v = entries[k] * if j == soft { 1e-6 } else { 1.0 };
                    a[(i, j)] = v;
                    list.push((i as u32, j as u32, v));
                }
            }
            let x_true = nalgebra::DVector::from_iterator(n, x0.iter().copied().take(n));
            let r: Vec<f64> = (&a * &x_true).iter().copied().collect();
            proptest::prop_assume!(norm(&r) > 1e-3);
            let jac = TangentJacobian { rows: m, columns: n, entries: list };
            let mut matrix = StepMatrix::new(m, n, if sparse { 0 } else { 48 });
            let cols: Vec<usize> = (0..n).collect();
            matrix.fill(&jac, &cols, &vec![1.0; n]);
            let factored = matrix.factor().unwrap();
            let steps = factored.regularized(0.0, 1.0).unwrap();
            let x = consistent_step(&steps, &r).unwrap();
            let ax = &a * nalgebra::DVector::from_column_slice(&x);
            let left: f64 = ax.iter().zip(&r).map(|(p, q)| (p - q).powi(2)).sum::<f64>().sqrt();
            proptest::prop_assert!(left <= 1e-6 * norm(&r), "|Ax - r| = {left}");
            // The null space of A: right singular vectors of zero singular values.
            let svd = a.clone().svd(false, true);
            let v_t = svd.v_t.unwrap();
            let largest = svd.singular_values.max();
            for (k, s) in svd.singular_values.iter().enumerate() {
                if *s <= 1e-12 * largest {
                    let along: f64 = v_t.row(k).iter().zip(&x).map(|(p, q)| p * q).sum();
                    proptest::prop_assert!(along.abs() <= NULL_SPACE * (1.0 + norm(&x)), "{along}");
                }
            }
            // Rows beyond the rank: the null space the SVD's thin factors leave out.
            if n > m {
                let projector = v_t.transpose() * &v_t;
                let xv = nalgebra::DVector::from_column_slice(&x);
                let outside = &xv - &projector * &xv;
                proptest::prop_assert!(outside.norm() <= NULL_SPACE * (1.0 + xv.norm()), "{}", outside.norm());
            }
        }
    }
}
