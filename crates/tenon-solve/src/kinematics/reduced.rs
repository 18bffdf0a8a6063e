//! Small runs whose every freedom is driven: their rates and chord steps by LU of a
//! square system, the run's rows less those that depend on the others.
//!
//! A small run's Jacobian `J` (rows by `n` columns) of rank `n` has `n` independent
//! rows; the others (a planar four-bar's out-of-plane rows, listed by every one of its
//! four revolutes) are combinations of them wherever the rank stays `n`. The rates'
//! equations `J v = -C_t` and `J a = -gamma` then hold on all rows once they hold on the
//! independent ones, and their solution is unique: so `v` comes from those `n` rows by
//! LU with partial pivoting (no normal equations, no regularisation to refine away, no
//! column weights: the solution does not depend on them). Each solve is checked against
//! every row, and a frame whose check fails, or whose rows have come near to losing
//! rank, takes the least-norm path instead.
//!
//! The rows are chosen once (at the first frame whose rank is found to be `n`) by a QR
//! with column pivoting of `J^T`. Frames where their determinant has fallen take the
//! least-norm path, which watches for singular positions as it does without them; the
//! rows serve again once their determinant is back.
//!
//! Architecture invariant: the rates are those of the least-norm path to rounding,
//! since both are the unique solution; only the arithmetic differs.

use tenon_system::{RateTape, RateWork, TangentJacobian};

use super::rates::{exact, Rates};
use super::SINGULAR_DROP;
use crate::linalg::DenseLu;
use crate::SolveError;

/// The independent rows of a small run and their LU at the current frame.
#[derive(Debug)]
pub(super) struct ReducedRows {
    /// Per row of the run, its place among the rows kept (`u32::MAX`: left out).
    place: Vec<u32>,
    /// Rows kept.
    kept: usize,
    /// The kept rows' Jacobian entries, renumbered (room kept from frame to frame).
    entries: Vec<(u32, u32, f64)>,
    lu: DenseLu,
    /// `ln |det|` of the kept rows at their first factorization (the frame after they
    /// were chosen).
    first_log_det: Option<f64>,
    /// Whether `lu` holds the Jacobian at the current frame (for the next chord).
    current: bool,
    /// Whether the last factorization found the kept rows near to losing rank: their
    /// determinant fallen by [`SINGULAR_DROP`] (for the normal matrix: its square root
    /// for these rows) since the first, or singular.
    fallen: bool,
    /// Room for a solve's residual.
    residual: Vec<f64>,
}

impl ReducedRows {
    /// The run's `rows` rows with `kept` (ascending, within `rows`) kept.
    pub(super) fn new(rows: usize, kept: &[usize]) -> ReducedRows {
        let mut place = vec![u32::MAX; rows];
        for (k, &row) in kept.iter().enumerate() {
            if let Some(p) = place.get_mut(row) {
                *p = k as u32;
            }
        }
        ReducedRows {
            place,
            kept: kept.len(),
            entries: Vec::new(),
            lu: DenseLu::new(),
            first_log_det: None,
            current: false,
            fallen: false,
            residual: Vec::new(),
        }
    }

    /// Whether the factors are those of the current frame's Jacobian.
    pub(super) fn current(&self) -> bool {
        self.current
    }

    /// Factors the kept rows of `jac`; `false` where they are singular, not finite, or
    /// near to losing rank.
    fn factor(&mut self, jac: &TangentJacobian) -> bool {
        self.current = false;
        if jac.columns != self.kept {
            return false;
        }
        self.entries.clear();
        for &(r, c, v) in &jac.entries {
            if let Some(&p) = self.place.get(r as usize) {
                if p != u32::MAX {
                    self.entries.push((p, c, v));
                }
            }
        }
        // A singular (or not finite) matrix counts as fallen.
        let log_det = self
            .lu
            .factor_entries(self.kept, &self.entries)
            .then(|| self.lu.log_abs_det())
            .flatten();
        let Some(log_det) = log_det else {
            self.fallen = true;
            return false;
        };
        let first = *self.first_log_det.get_or_insert(log_det);
        self.fallen = log_det < first - 0.5 * SINGULAR_DROP.ln();
        !self.fallen
    }

    /// The values of `b` (one per row of the run) at the kept rows, in their order.
    fn kept_part(&self, b: &[f64]) -> Vec<f64> {
        let mut x = vec![0.0; self.kept];
        for (&p, &v) in self.place.iter().zip(b) {
            if let Some(x) = x.get_mut(p as usize) {
                *x = v;
            }
        }
        x
    }

    /// Solves `J x = b` by the kept rows, checked on every row as every direct solve of
    /// the rates is (`rates::exact`; `b` one value per row); `None` where the check
    /// fails.
    pub(super) fn solve(&mut self, jac: &TangentJacobian, b: &[f64]) -> Option<Vec<f64>> {
        let mut x = self.kept_part(b);
        if !self.lu.solve_in_place(&mut x) {
            return None;
        }
        exact(jac, &x, b, &mut self.residual).then_some(x)
    }

    /// A chord step's `dx` with `J dx = r` by the factors of the last frame (unchecked:
    /// the chord's own test is the next residual); `None` where they are not current.
    pub(super) fn chord_step(&self, r: &[f64]) -> Option<Vec<f64>> {
        if !self.current {
            return None;
        }
        let mut x = self.kept_part(r);
        self.lu.solve_in_place(&mut x).then_some(x)
    }

    /// Velocities and accelerations at a solved state from `jac` (the Jacobian there);
    /// `None` where the kept rows do not serve (see [`factor`](Self::factor) and
    /// [`solve`](Self::solve)): the caller takes the least-norm path.
    pub(super) fn rates(
        &mut self,
        jac: &TangentJacobian,
        (rates, work): (&RateTape, &mut RateWork),
        (state, params): (&[f64], &[f64]),
    ) -> Result<Option<Rates>, SolveError> {
        if !self.factor(jac) {
            return Ok(None);
        }
        let Some(velocity) = self.solve(jac, rates.velocity_rhs(work, (state, params))?) else {
            return Ok(None);
        };
        let rhs = rates.acceleration_rhs(work, (state, params), &velocity)?;
        let Some(acceleration) = self.solve(jac, rhs) else {
            return Ok(None);
        };
        self.current = true;
        Ok(Some((velocity, acceleration)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four rows over three columns, the last the sum of the first two.
    fn jacobian(scale: f64) -> TangentJacobian {
        let rows = [[2.0, -1.0, 0.5], [0.0, 3.0, 1.0], [1.0, 0.0, scale]];
        let mut entries = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                entries.push((i as u32, j as u32, v));
            }
        }
        for (j, (a, b)) in rows[0].iter().zip(&rows[1]).enumerate() {
            entries.push((3, j as u32, a + b));
        }
        TangentJacobian {
            rows: 4,
            columns: 3,
            entries,
        }
    }

    #[test]
    fn the_kept_rows_solve_consistent_equations_and_refuse_the_others() {
        let jac = jacobian(4.0);
        let mut reduced = ReducedRows::new(4, &[0, 1, 2]);
        assert!(
            reduced.chord_step(&[1.0; 4]).is_none(),
            "nothing factored yet"
        );
        assert!(reduced.factor(&jac));
        // x = (1, 2, 3): b on every row, the last consistent with the first two.
        let x = [1.0, 2.0, 3.0];
        let mut b = vec![0.0; 4];
        for &(r, c, v) in &jac.entries {
            b[r as usize] += v * x[c as usize];
        }
        let solved = reduced.solve(&jac, &b).expect("consistent");
        for (s, e) in solved.iter().zip(&x) {
            assert!((s - e).abs() < 1e-14, "{solved:?}");
        }
        // The dropped row disagreeing: refused, for the least-norm path to answer.
        b[3] += 1e-6;
        assert!(reduced.solve(&jac, &b).is_none());
        // A chord step uses the factors only once a frame's rates have made them current.
        assert!(reduced.chord_step(&b).is_none());
        reduced.current = true;
        let step = reduced.chord_step(&b).expect("current");
        assert!((step[0] - 1.0).abs() < 1e-14);
    }

    #[test]
    fn kept_rows_near_to_losing_rank_are_refused_and_said_fallen() {
        let mut reduced = ReducedRows::new(4, &[0, 1, 2]);
        assert!(reduced.factor(&jacobian(4.0)));
        assert!(!reduced.fallen);
        // The kept rows' determinant is 6 s - 2.5: near s = 2.5 / 6 it has fallen by
        // far more than 1e4 (the square root of the normal matrix's SINGULAR_DROP).
        let det = |s: f64| 6.0 * s - 2.5;
        let s = 2.5 / 6.0 + 1e-6;
        assert!(det(s).abs() < 1e-4 * det(4.0).abs());
        assert!(!reduced.factor(&jacobian(s)));
        assert!(reduced.fallen);
        assert!(!reduced.current());
        // Back away from it: served again.
        assert!(reduced.factor(&jacobian(3.0)));
        assert!(!reduced.fallen);
    }
}
