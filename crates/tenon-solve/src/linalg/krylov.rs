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

    /// Equations that disagree have no consistent step.
    #[test]
    fn disagreeing_equations_keep_the_plain_step() {
        // Two rows on the same column asking for 1 and 2.
        let jac = TangentJacobian {
            rows: 2,
            columns: 1,
            entries: vec![(0, 0, 1.0), (1, 0, 1.0)],
        };
        let mut m = StepMatrix::new(2, 1, 48);
        m.fill(&jac, &[0], &[1.0]);
        let factored = m.factor().unwrap();
        let steps = factored.regularized(0.0, 1.0).unwrap();
        assert!(consistent_step(&steps, &[1.0, 2.0]).is_none());
    }
}
