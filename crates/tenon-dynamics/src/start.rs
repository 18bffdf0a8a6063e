//! The start of a run: which equations are independent, the velocities nearest the
//! wished ones that satisfy every equation, and consistent accelerations and
//! multipliers.
//!
//! - Dependent rows: in the equations' order, a row is dependent when it lies in the
//!   span of the independent rows before it (module `dependence`; columns weighted as
//!   the solver weighs them, relative tolerance [`DEPENDENT`]). Their multipliers are 0 in every solve;
//!   the reactions reported are split by minimum norm (`Run::constraint_forces`).
//!   Above [`DEPENDENCE_ROWS`] rows the check is skipped and the regularised KKT matrix
//!   copes.
//! - Velocities: `min 1/2 (v - w)^T M (v - w)` subject to `J v = -C_t`, one KKT solve
//!   (the spec's INITIAL VELOCITIES).
//! - Accelerations: `M a + J^T lambda = f`, `J a = -gamma` (the kinematic run's
//!   right-hand side), one KKT solve refined against the unregularised matrix.

use tenon_system::TangentJacobian;

use crate::bodies::Placed;
use crate::error::DynamicsError;
use crate::kkt::Kkt;
use crate::run::{
    largest, mass_times, times, Event, EventKind, GivenRate, Inputs, Run, StartVelocities,
};

/// A row whose part outside the span of the rows before it is below this fraction of
/// its norm is dependent.
pub(crate) const DEPENDENT: f64 = 1e-8;
/// Above this many rows, dependent rows are not looked for at the start.
pub(crate) const DEPENDENCE_ROWS: usize = 200_000;
/// Refinement rounds of a start solve against the unregularised matrix.
const REFINEMENTS: usize = 3;
/// Largest violation of a velocity equation, relative to the velocities' scale,
/// accepted at the start.
const VELOCITY_CHECK: f64 = 1e-6;

pub(crate) fn start(
    run: &mut Run,
    inputs: Inputs<'_>,
    given: StartVelocities<'_>,
) -> Result<Vec<Event>, DynamicsError> {
    let problem = inputs.problem;
    let system = problem.system;
    let n = system.tangent_dimension();
    let mut events = Vec::new();
    let (residuals, jac) =
        system.tangent_jacobian_of_rows(problem.compiled, &run.state, &run.params, &run.rows)?;
    run.max_residual = largest(&residuals);
    // Compliant rows are forces (their spring's), never redundant: dependence is looked
    // for among the rigid ones.
    let rigid: Vec<usize> = (0..run.rows.len())
        .filter(|&k| run.soft[k] == 0.0)
        .collect();
    let dependent: Vec<usize> = if run.rows.len() <= DEPENDENCE_ROWS {
        crate::dependence::dependent_rows(&jac, &rigid, &run.weights, DEPENDENT)
            .into_iter()
            .map(|k| rigid[k])
            .collect()
    } else {
        Vec::new()
    };
    run.rigid = rigid
        .iter()
        .copied()
        .filter(|k| dependent.binary_search(k).is_err())
        .collect();
    run.active = (0..run.rows.len())
        .filter(|k| dependent.binary_search(k).is_err())
        .collect();
    if !dependent.is_empty() {
        events.push(Event {
            time: run.time,
            kind: EventKind::Redundant,
            equations: dependent.iter().map(|&k| run.rows[k]).collect(),
            message: format!(
                "{} equation(s) depend on the others (redundant joints): they hold with \
                 the others; the reactions are not unique there, and are reported split \
                 by minimum norm (up to {} equations; above, the dependent ones carry \
                 none)",
                dependent.len(),
                crate::run::SPLIT_ROWS
            ),
        });
    }
    if !system.limits().is_empty() {
        events.push(Event {
            time: run.time,
            kind: EventKind::LimitsIgnored,
            equations: Vec::new(),
            message: "joint limits are not enforced by dynamics yet: the run ignores them".into(),
        });
    }
    let placed = inputs.dynamics.placed(&run.state);
    check_inertia_held(&placed, &jac, &run.weights)?;
    if let Some((estimate, weak)) = conditioning(&placed, &jac, &run.rigid) {
        if estimate > crate::run::CONDITION_WARNING {
            events.push(Event {
                time: run.time,
                kind: EventKind::IllConditioned,
                equations: weak.iter().map(|&k| run.rows[k]).collect(),
                message: format!(
                    "the joints' constraint block J M^-1 J^T is ill-conditioned (estimate \
                     {estimate:.1e}, warned above {:.0e}): {} equation(s) are nearly \
                     dependent; their reactions are ill-determined",
                    crate::run::CONDITION_WARNING,
                    weak.len()
                ),
            });
        }
    }
    let mut kkt = Kkt::default();
    if !kkt.factor(
        (&placed, &[]),
        n,
        &jac,
        (&run.rigid, &run.weights, &[]),
        false,
    ) {
        return Err(DynamicsError::Start(
            "the KKT matrix could not be factored (a part whose inertia its joints do not \
             make up for?)"
                .into(),
        ));
    }
    // Velocities.
    let velocity_rhs = inputs
        .rates
        .velocity_rhs(&mut run.work, (&run.state, &run.params))?
        .to_vec();
    let wished = match given.wished {
        Some(w) if w.len() == n => w.to_vec(),
        Some(w) => {
            return Err(DynamicsError::BadInput(format!(
                "{} initial velocities for {n} tangent columns",
                w.len()
            )))
        }
        None => vec![0.0; n],
    };
    let top = mass_times(&placed, &wished);
    let velocity = if given.rates.is_empty() {
        solve_refined(
            &kkt,
            (&placed, &jac, &run.rigid, &[]),
            &top,
            &pick(&velocity_rhs, &run.rigid),
        )
        .map(|(v, _)| v)
    } else {
        with_rates(run, (&placed, &jac), (&top, &velocity_rhs), given.rates)?
    }
    .ok_or_else(|| DynamicsError::Start("the start velocities could not be solved".into()))?;
    // Compliant rows need not hold in velocity (a spring stretches).
    let violation = times(&jac, &velocity)
        .iter()
        .zip(&velocity_rhs)
        .zip(&run.soft)
        .filter(|(_, &a)| a == 0.0)
        .map(|((a, b), _)| (a - b).abs())
        .fold(0.0f64, f64::max);
    let scale = largest(&velocity_rhs).max(largest(&velocity)).max(1.0);
    if violation > VELOCITY_CHECK * scale {
        let bad: Vec<usize> = times(&jac, &velocity)
            .iter()
            .zip(&velocity_rhs)
            .enumerate()
            .filter(|&(k, (a, b))| run.soft[k] == 0.0 && (*a - *b).abs() > VELOCITY_CHECK * scale)
            .map(|(k, _)| run.rows[k])
            .collect();
        return Err(DynamicsError::Start(format!(
            "the start velocities cannot satisfy every joint and motion (largest violation \
             {violation:.3e}); equations {bad:?}"
        )));
    }
    run.velocity = velocity;
    // Accelerations and multipliers.
    let (a, lambda) = accelerations(run, inputs, &placed, (&residuals, &jac), &kkt)?;
    run.acceleration = a.clone();
    run.pseudo = a;
    run.multipliers = lambda;
    run.power = 0.0;
    let (_, power) = Run::forces(inputs, &placed, &run.state, &run.velocity, n);
    run.power = power + run.drive_power(inputs)?;
    // With compliant rows the stepping matrix has their terms too: made at the first
    // step.
    run.kkt_valid = run.rigid.len() == run.active.len();
    run.kkt = kkt;
    Ok(events)
}

/// The condition estimate of `J M^-1 J^T` over `rows` (positions of `jac`'s rows),
/// scaled to a unit diagonal (rows in different units, parts of different masses do not
/// count), and the rows that make it: those weighing at least a tenth of the largest in
/// the eigenvector of its smallest eigenvalue. `None` above [`CONDITION_ROWS`] rows or
/// where a part's mass matrix is singular (its joints make up for its inertia).
fn conditioning(
    placed: &[Placed],
    jac: &TangentJacobian,
    rows: &[usize],
) -> Option<(f64, Vec<usize>)> {
    use nalgebra::DMatrix;
    let m = rows.len();
    if !(2..=crate::run::CONDITION_ROWS).contains(&m) {
        return None;
    }
    let inverses: Vec<nalgebra::Matrix6<f64>> = placed
        .iter()
        .map(|p| p.mass_matrix().try_inverse())
        .collect::<Option<_>>()?;
    let mut position = vec![usize::MAX; jac.rows];
    for (k, &r) in rows.iter().enumerate() {
        if let Some(slot) = position.get_mut(r) {
            *slot = k;
        }
    }
    let n = jac.columns;
    let mut j = DMatrix::<f64>::zeros(m, n);
    for &(r, c, v) in &jac.entries {
        if let Some(&k) = position.get(r as usize) {
            if k != usize::MAX && (c as usize) < n {
                j[(k, c as usize)] += v;
            }
        }
    }
    // J M^-1, block by block (6 columns per part).
    let mut b = DMatrix::<f64>::zeros(m, n);
    for (p, inverse) in inverses.iter().enumerate() {
        let at = 6 * p;
        if at + 6 > n {
            break;
        }
        let block = j.view((0, at), (m, 6)) * inverse;
        b.view_mut((0, at), (m, 6)).copy_from(&block);
    }
    let mut g = &b * j.transpose();
    let scale: Vec<f64> = (0..m).map(|k| g[(k, k)].abs().sqrt()).collect();
    if scale.iter().any(|&s| !(s > 0.0 && s.is_finite())) {
        return None;
    }
    for r in 0..m {
        for c in 0..m {
            g[(r, c)] /= scale[r] * scale[c];
        }
    }
    let eigen = g.symmetric_eigen();
    let (mut low, mut high) = (0, 0);
    for k in 0..m {
        if eigen.eigenvalues[k] < eigen.eigenvalues[low] {
            low = k;
        }
        if eigen.eigenvalues[k] > eigen.eigenvalues[high] {
            high = k;
        }
    }
    let (smallest, largest) = (eigen.eigenvalues[low], eigen.eigenvalues[high]);
    let estimate = if smallest > 0.0 {
        largest / smallest
    } else {
        f64::INFINITY
    };
    let vector = eigen.eigenvectors.column(low);
    let top = vector.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    let weak = (0..m)
        .filter(|&k| vector[k].abs() >= 0.1 * top)
        .map(|k| rows[k])
        .collect();
    Some((estimate, weak))
}

/// Above this many given rates, a conflict names the rates that do not hold but not
/// the ones they conflict with (found by leaving each out in turn).
const PARTNER_SEARCH_RATES: usize = 32;

/// The start velocities with given coordinate rates as further rows of the velocity
/// equations: rates that depend on the joints' rows (a rate given for a driven
/// coordinate) are left out of the solve and checked after it, with the others; any
/// that does not hold is a `RatesConflict` naming it and the rates it conflicts with
/// (those whose leaving out lets it hold).
fn with_rates(
    run: &Run,
    (placed, jac): (&[Placed], &TangentJacobian),
    (top, velocity_rhs): (&[f64], &[f64]),
    rates: &[GivenRate],
) -> Result<Option<Vec<f64>>, DynamicsError> {
    let n = jac.columns;
    let mut all = jac.clone();
    all.rows = jac.rows + rates.len();
    let mut rhs = velocity_rhs.to_vec();
    for (k, rate) in rates.iter().enumerate() {
        for &(c, v) in &rate.row {
            if c >= n || !v.is_finite() {
                return Err(DynamicsError::BadInput(format!(
                    "a given rate's row has column {c} of {n} or a value that is not finite"
                )));
            }
            all.entries.push(((jac.rows + k) as u32, c as u32, v));
        }
        rhs.push(rate.value);
    }
    // The velocities with the joints' rows and the rates `used` (independent ones).
    let solve = |used: &[usize]| -> Option<Vec<f64>> {
        let mut active = run.rigid.clone();
        active.extend(used.iter().map(|k| jac.rows + k));
        let dependent = crate::dependence::dependent_rows(&all, &active, &run.weights, DEPENDENT);
        let active: Vec<usize> = active
            .iter()
            .enumerate()
            .filter(|(k, _)| dependent.binary_search(k).is_err())
            .map(|(_, &r)| r)
            .collect();
        let mut kkt = Kkt::default();
        if !kkt.factor((placed, &[]), n, &all, (&active, &run.weights, &[]), false) {
            return None;
        }
        solve_refined(
            &kkt,
            (placed, &all, &active, &[]),
            top,
            &pick(&rhs, &active),
        )
        .map(|(v, _)| v)
    };
    let every: Vec<usize> = (0..rates.len()).collect();
    let Some(velocity) = solve(&every) else {
        return Ok(None);
    };
    let scale = largest(&rhs).max(largest(&velocity)).max(1.0);
    let violations = |v: &[f64]| -> Vec<f64> {
        times(&all, v)
            .iter()
            .zip(&rhs)
            .map(|(a, b)| (a - b).abs())
            .collect()
    };
    let violation = violations(&velocity);
    let worst = violation.iter().fold(0.0f64, |a, &b| a.max(b));
    if worst <= VELOCITY_CHECK * scale {
        return Ok(Some(velocity));
    }
    let broken = |k: usize| violation[jac.rows + k] > VELOCITY_CHECK * scale;
    if (0..jac.rows).any(|k| run.soft[k] == 0.0 && violation[k] > VELOCITY_CHECK * scale) {
        // A joint's row gave way: every rate takes part.
        return Err(DynamicsError::RatesConflict(
            rates.iter().map(|r| r.tag).collect(),
            worst,
        ));
    }
    let mut named: Vec<usize> = (0..rates.len()).filter(|&k| broken(k)).collect();
    if rates.len() <= PARTNER_SEARCH_RATES {
        for other in (0..rates.len()).filter(|&k| !broken(k)) {
            let without: Vec<usize> = every.iter().copied().filter(|&k| k != other).collect();
            let frees = solve(&without).is_some_and(|v| {
                let w = violations(&v);
                (0..rates.len())
                    .filter(|&k| k != other && broken(k))
                    .any(|k| w[jac.rows + k] <= VELOCITY_CHECK * scale)
            });
            if frees {
                named.push(other);
            }
        }
    }
    named.sort_unstable();
    Err(DynamicsError::RatesConflict(
        named.iter().map(|&k| rates[k].tag).collect(),
        worst,
    ))
}

/// Accelerations and multipliers (per run row) at the run's state and velocity.
pub(crate) fn accelerations(
    run: &mut Run,
    inputs: Inputs<'_>,
    placed: &[Placed],
    (residuals, jac): (&[f64], &TangentJacobian),
    kkt: &Kkt,
) -> Result<(Vec<f64>, Vec<f64>), DynamicsError> {
    let n = run.velocity.len();
    let (mut f, _) = Run::forces(inputs, placed, &run.state, &run.velocity, n);
    let springs = compliant_forces(&run.soft, residuals, jac, &mut f);
    let rhs = inputs
        .rates
        .acceleration_rhs(&mut run.work, (&run.state, &run.params), &run.velocity)?
        .to_vec();
    let (a, y) = solve_refined(
        kkt,
        (placed, jac, &run.rigid, &[]),
        &f,
        &pick(&rhs, &run.rigid),
    )
    .ok_or_else(|| DynamicsError::Start("the accelerations could not be solved".into()))?;
    let mut lambda = spread(&y, &run.rigid, run.rows.len());
    for (l, s) in lambda.iter_mut().zip(springs) {
        if let Some(s) = s {
            *l = s;
        }
    }
    Ok((a, lambda))
}

/// Compliant rows as the forces of their springs: per row with compliance `a > 0` and
/// residual `C`, the multiplier `C / a`, its force `-J^T (C / a)` added to `f`. Returns
/// the multipliers (`None` for rigid rows).
pub(crate) fn compliant_forces(
    soft: &[f64],
    residuals: &[f64],
    jac: &TangentJacobian,
    f: &mut [f64],
) -> Vec<Option<f64>> {
    let lambda: Vec<Option<f64>> = soft
        .iter()
        .zip(residuals)
        .map(|(&a, &c)| (a > 0.0).then(|| c / a))
        .collect();
    for &(r, c, v) in &jac.entries {
        if let (Some(Some(l)), Some(slot)) = (lambda.get(r as usize), f.get_mut(c as usize)) {
            *slot -= v * l;
        }
    }
    lambda
}

/// Values at `positions`.
pub(crate) fn pick(x: &[f64], positions: &[usize]) -> Vec<f64> {
    positions
        .iter()
        .map(|&k| x.get(k).copied().unwrap_or(0.0))
        .collect()
}

/// Values given at `positions` spread into a vector of `len` (zeros elsewhere).
pub(crate) fn spread(y: &[f64], positions: &[usize], len: usize) -> Vec<f64> {
    let mut out = vec![0.0; len];
    for (&k, &v) in positions.iter().zip(y) {
        if let Some(slot) = out.get_mut(k) {
            *slot = v;
        }
    }
    out
}

/// Solves the KKT system and refines the solution against the unregularised matrix
/// (compliant rows keep their own term: `soft`, per row of `jac`, empty when none).
pub(crate) fn solve_refined(
    kkt: &Kkt,
    (placed, jac, active, soft): (&[Placed], &TangentJacobian, &[usize], &[f64]),
    f: &[f64],
    b: &[f64],
) -> Option<(Vec<f64>, Vec<f64>)> {
    let (mut x, mut y) = kkt.solve(f, b)?;
    for _ in 0..REFINEMENTS {
        let mut top = mass_times(placed, &x);
        jac.add_transposed(&spread(&y, active, jac.rows), &mut top);
        let rf: Vec<f64> = f.iter().zip(&top).map(|(a, b)| a - b).collect();
        let jx = pick(&times(jac, &x), active);
        let rb: Vec<f64> = b
            .iter()
            .zip(&jx)
            .zip(active.iter().zip(&y))
            .map(|((b, jx), (&row, y))| b - jx + soft.get(row).copied().unwrap_or(0.0) * y)
            .collect();
        let (dx, dy) = kkt.solve(&rf, &rb)?;
        for (a, d) in x.iter_mut().zip(&dx) {
            *a += d;
        }
        for (a, d) in y.iter_mut().zip(&dy) {
            *a += d;
        }
    }
    Some((x, y))
}

/// Every free part's rotations are either resisted by its inertia or held by a joint:
/// per part, `M_rr^T M_rr + J_r^T J_r` (its three rotation columns; `J_r` weighted as
/// the solver weighs columns) must be definite. A point mass on a distance joint is
/// not (it may spin about any axis through itself at no cost): that is an error naming
/// the part, not a singular matrix later.
fn check_inertia_held(
    placed: &[Placed],
    jac: &TangentJacobian,
    weights: &[f64],
) -> Result<(), DynamicsError> {
    use nalgebra::Matrix3;
    let mut gram = vec![Matrix3::<f64>::zeros(); placed.len()];
    for (k, p) in placed.iter().enumerate() {
        let m = p.mass_matrix();
        let rot = m.fixed_view::<6, 3>(0, 3).into_owned();
        gram[k] = rot.transpose() * rot;
    }
    // Rows' rotation entries, part by part.
    let mut rows: std::collections::HashMap<(u32, usize), [f64; 3]> =
        std::collections::HashMap::new();
    for &(r, c, v) in &jac.entries {
        let c = c as usize;
        let (k, within) = (c / 6, c % 6);
        if within < 3 || k >= placed.len() {
            continue;
        }
        let w = weights.get(c).copied().unwrap_or(1.0);
        rows.entry((r, k)).or_insert([0.0; 3])[within - 3] += v * w;
    }
    for (&(_, k), a) in &rows {
        let a = nalgebra::Vector3::from(*a);
        if let Some(g) = gram.get_mut(k) {
            *g += a * a.transpose();
        }
    }
    for (k, g) in gram.iter().enumerate() {
        let eig = g.symmetric_eigenvalues();
        let (low, high) = (eig.min(), eig.max());
        if low.is_nan() || low <= 1e-20 * high.max(f64::MIN_POSITIVE) {
            return Err(DynamicsError::SingularPart(k));
        }
    }
    Ok(())
}
