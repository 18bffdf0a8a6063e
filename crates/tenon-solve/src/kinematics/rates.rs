//! Velocities and accelerations at a solved frame: the refined least-norm solves, sparse
//! LU for large square systems, the pseudo-inverse where freedoms are undriven.

use tenon_system::{RateTape, RateWork, TangentJacobian};

use super::{
    KinematicRun, LU_FIRST_AFTER, MAX_REFINEMENTS, QUICK_REFINEMENTS, RATE_TOLERANCE, REFINE_RETRY,
    SINGULAR_DROP, SQUARE_CHECK,
};
use crate::linalg::{BlockPlan, Factored, PseudoInverse, SquareLu, StepMatrix, Steps};
use crate::{Problem, SolveError};

/// Largest block of a square Jacobian solved block by block (a link of a chain is 6
/// columns; a closed loop makes one block of all its links).
const BLOCK_COLUMNS: usize = 48;

impl KinematicRun {
    /// Velocities and accelerations at a solved state, and the Jacobian's rank where it
    /// is known (`evaluated`: the evaluator holds the Jacobian at this state).
    #[allow(clippy::type_complexity)]
    pub(super) fn rates_at(
        &mut self,
        (problem, rates): (&Problem<'_>, &RateTape),
        (state, params): (&[f64], &[f64]),
        evaluated: bool,
    ) -> Result<(Vec<f64>, Vec<f64>, Option<usize>), SolveError> {
        let system = problem.system;
        let dimension = system.tangent_dimension();
        if !evaluated {
            self.evaluate_full((problem, rates), state, params)?;
        }
        let square = dimension > self.options.dense_columns && self.rows.len() == dimension;
        if square {
            if let Some((velocity, acceleration)) = self.rates_by_blocks(rates, (state, params))? {
                return Ok((velocity, acceleration, None));
            }
        }
        // A small run whose every freedom is driven: by the LU of its independent rows,
        // where they serve; where they do not (their determinant has fallen: near a
        // singular position), the least-norm path below, which watches the rank as it
        // did before the rows were chosen.
        if let Some(reduced) = self.reduced.as_mut() {
            let jac = self.evaluator.jacobian();
            if let Some((velocity, acceleration)) =
                reduced.rates(jac, (rates, &mut self.work), (state, params))?
            {
                self.factor = None;
                return Ok((velocity, acceleration, None));
            }
        }
        let jac = self.evaluator.jacobian();
        let shape = (self.rows.len(), self.options.dense_columns);
        self.factor = None;
        let factored = filled(&mut self.matrix, shape, &self.weights, jac)?;
        let steps = factored.regularized(0.0, 1e-6)?;
        // The rank (a rank-revealing QR) where the matrix is dense: at the first frame,
        // and again only when the normal matrix's determinant has fallen by a factor
        // SINGULAR_DROP since then (a singular value going to zero); a large (sparse) run
        // is not watched for singular positions (said in the docs).
        let log_det = steps.log_det();
        // `log_det` is only at hand for a dense matrix.
        let rank = match (log_det, self.log_det) {
            (Some(_), None) => {
                self.log_det = log_det;
                factored.rank()
            }
            (Some(now), Some(first)) if now < first - SINGULAR_DROP.ln() => factored.rank(),
            _ => None,
        };
        // Every freedom driven on a small run: its independent rows chosen once, at the
        // first frame whose rank is full. They are not chosen again where their
        // determinant falls: a new choice would measure its fall from a lower start,
        // and the frames nearer a singular position would not be watched.
        if rank == Some(dimension) && self.reduced.is_none() {
            self.reduced = factored
                .independent_rows()
                .filter(|kept| kept.len() == dimension)
                .map(|kept| super::reduced::ReducedRows::new(self.rows.len(), &kept));
        }
        let weights = &self.weights;
        let lu_pattern = &self.lu_pattern;
        // Refined least-norm solves; where a few rounds do not finish and the system is
        // large and square (every freedom driven), sparse LU (made once per frame, each
        // solve checked by its residual); else refinement to the end.
        let lu: std::cell::OnceCell<Option<SquareLu>> = std::cell::OnceCell::new();
        let lu_first = &self.lu_first;
        let by_lu = |b: &[f64]| -> Option<Vec<f64>> {
            lu.get_or_init(|| SquareLu::with_pattern(jac, &mut lu_pattern.borrow_mut()))
                .as_ref()
                .and_then(|lu| lu.solve(b))
                .filter(|x| exact(jac, x, b, &mut Vec::new()))
        };
        let solve_refined = |b: &[f64]| -> Vec<f64> {
            // Where the quick rounds have not finished LU_FIRST_AFTER times running
            // (a long chain: each round gains about a digit) and LU has, LU first,
            // with the rounds tried again every REFINE_RETRY solves.
            let (failures, lu_solves) = lu_first.get();
            if square && failures >= LU_FIRST_AFTER && lu_solves < REFINE_RETRY {
                if let Some(x) = by_lu(b) {
                    lu_first.set((failures, lu_solves + 1));
                    return x;
                }
            }
            let (x, done) = refined(&steps, jac, weights, (b, QUICK_REFINEMENTS));
            if done {
                lu_first.set((0, 0));
                return x;
            }
            if square {
                if let Some(x) = by_lu(b) {
                    lu_first.set((failures.saturating_add(1), 0));
                    return x;
                }
            }
            lu_first.set((0, 0));
            refined(&steps, jac, weights, (b, MAX_REFINEMENTS)).0
        };
        // Freedoms no motion drives (the Jacobian has a null space): the rates by the
        // pseudo-inverse, exact where the regularised solve leaves rounding noise along
        // the null space.
        let undriven = rank.or(self.rank).is_some_and(|r| r < dimension);
        if undriven {
            if let Some(pinv) = factored.pseudo_inverse(rank.or(self.rank)) {
                let (velocity, acceleration) =
                    undriven_rates((rates, &mut self.work), &pinv, (state, params), weights)?;
                self.factor = Some(steps.into_factor());
                return Ok((velocity, acceleration, rank));
            }
        }
        let velocity_rhs = rates.velocity_rhs(&mut self.work, (state, params))?;
        let velocity = solve_refined(velocity_rhs);
        let acceleration_rhs =
            rates.acceleration_rhs(&mut self.work, (state, params), &velocity)?;
        let acceleration = solve_refined(acceleration_rhs);
        self.factor = Some(steps.into_factor());
        Ok((velocity, acceleration, rank))
    }
}

/// Velocities and accelerations (tangent).
pub(super) type Rates = (Vec<f64>, Vec<f64>);

impl KinematicRun {
    /// Velocities and accelerations of a large square run block by block (see
    /// `linalg::triangular`), from the Jacobian the evaluator holds; `None` where its
    /// blocks are too large, one is singular or a solve misses its residual check. The
    /// factors are kept for the next frame's chord steps.
    fn rates_by_blocks(
        &mut self,
        rates: &RateTape,
        (state, params): (&[f64], &[f64]),
    ) -> Result<Option<Rates>, SolveError> {
        let jac = self.evaluator.jacobian();
        let Some(plan) = self
            .block_plan
            .get_or_init(|| BlockPlan::new(jac, BLOCK_COLUMNS))
            .as_ref()
        else {
            return Ok(None);
        };
        // The last frame's factors lend their memory.
        let Some(factors) = plan.factor(jac, self.block_factors.take()) else {
            return Ok(None);
        };
        let solve = |b: &[f64]| factors.solve_within(plan, b, SQUARE_CHECK);
        let Some(velocity) = solve(rates.velocity_rhs(&mut self.work, (state, params))?) else {
            return Ok(None);
        };
        let rhs = rates.acceleration_rhs(&mut self.work, (state, params), &velocity)?;
        let Some(acceleration) = solve(rhs) else {
            return Ok(None);
        };
        self.block_factors = Some(factors);
        self.factor = None;
        Ok(Some((velocity, acceleration)))
    }
}

/// Whether `x` solves `J x = b` to [`SQUARE_CHECK`] of `b` (the check of every direct
/// solve of the rates; `room` holds `b - J x` after).
pub(super) fn exact(jac: &TangentJacobian, x: &[f64], b: &[f64], room: &mut Vec<f64>) -> bool {
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    residual_into(jac, x, b, room);
    let left = room.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    left <= SQUARE_CHECK * scale.max(f64::MIN_POSITIVE)
}

/// Velocities and accelerations where some freedom is driven by no motion, with `A = J
/// W^-1` (`W` the column weights, `M = W^2` the metric of least change) and its
/// pseudo-inverse: `v = W^-1 A^+ (-C_t)`, the least-norm velocity, which is `M^-1 J^T
/// mu` with `mu = (A^+)^T W v`. Along the run `dv/dt = W^-1 (A^+ (-gamma) + (I - A^+ A)
/// W^-1 (dJ/dt)^T mu)`: the least-norm acceleration plus the change of the velocities
/// along the freedoms themselves, so that the accelerations are the derivatives of the
/// velocities (and the predicted poses follow the velocities to third order). Without
/// the multipliers' rates (not made for large runs) the second term is left out.
fn undriven_rates(
    (rates, work): (&RateTape, &mut RateWork),
    pinv: &PseudoInverse,
    (state, params): (&[f64], &[f64]),
    weights: &[f64],
) -> Result<(Vec<f64>, Vec<f64>), SolveError> {
    let y = pinv.solve(rates.velocity_rhs(work, (state, params))?);
    let velocity = scaled(&y, weights);
    let mut ya = pinv.solve(rates.acceleration_rhs(work, (state, params), &velocity)?);
    let mu = pinv.transposed_solve(&y);
    if let Some(rate) = rates.multiplier_rates(work, (state, params), &velocity, &mu)? {
        let along = pinv.null_part(&scaled(rate, weights));
        for (a, n) in ya.iter_mut().zip(&along) {
            *a += n;
        }
    }
    Ok((velocity, scaled(&ya, weights)))
}

/// The least-norm solution of `J x = b` (weighted; least squares where `b` is not in
/// `J`'s range) from the regularised factorization `steps`, refined: each round solves
/// for what is left of `b`, up to `rounds`; also whether it finished (the residual at
/// [`RATE_TOLERANCE`] of `b`, or no longer halving: a least-squares residual). Where
/// the normal equations are well conditioned one or two rounds reach rounding; a long
/// chain's (1,000 links: the weighted Jacobian's condition squared) gain about a digit a
/// round, and stopping after two left the velocities 13% off.
pub(super) fn refined(
    steps: &Steps<'_>,
    jac: &TangentJacobian,
    weights: &[f64],
    (b, rounds): (&[f64], usize),
) -> (Vec<f64>, bool) {
    let mut x = vec![0.0; weights.len()];
    let mut r = b.to_vec();
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut last = f64::INFINITY;
    for _ in 0..rounds {
        let dy = steps.solve(&r);
        for ((x, d), w) in x.iter_mut().zip(&dy).zip(weights) {
            *x += d / w;
        }
        r = residual_of(jac, &x, b);
        let left = r.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if !left.is_finite() || left <= RATE_TOLERANCE * scale || left > 0.5 * last {
            return (x, true);
        }
        last = left;
    }
    (x, false)
}

/// A run's step matrix (made at first use, `rows` by `jac`'s columns, dense up to
/// `dense_columns`) filled with `jac` weighted by `weights`, ready to factor.
pub(super) fn filled<'m>(
    matrix: &'m mut Option<StepMatrix>,
    (rows, dense_columns): (usize, usize),
    weights: &[f64],
    jac: &TangentJacobian,
) -> Result<Factored<'m>, SolveError> {
    let dimension = jac.columns;
    let col_of: Vec<usize> = (0..dimension).collect();
    let matrix = matrix.get_or_insert_with(|| StepMatrix::new(rows, dimension, dense_columns));
    matrix.fill(jac, &col_of, weights);
    matrix.factor()
}

/// `x / w`, component by component.
fn scaled(x: &[f64], weights: &[f64]) -> Vec<f64> {
    x.iter().zip(weights).map(|(x, w)| x / w).collect()
}

/// `b - J x`.
fn residual_of(jac: &TangentJacobian, x: &[f64], b: &[f64]) -> Vec<f64> {
    let mut r = Vec::with_capacity(b.len());
    residual_into(jac, x, b, &mut r);
    r
}

/// `b - J x` into `r` (its memory reused).
fn residual_into(jac: &TangentJacobian, x: &[f64], b: &[f64], r: &mut Vec<f64>) {
    r.clear();
    r.extend_from_slice(b);
    for &(row, col, value) in &jac.entries {
        if let (Some(ri), Some(xc)) = (r.get_mut(row as usize), x.get(col as usize)) {
            *ri -= value * xc;
        }
    }
}
