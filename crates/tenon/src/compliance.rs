//! Compliant joints in statics: where a solve fails because joints disagree and some of
//! them are compliant, the compliant ones give way.
//!
//! The pose is the least-squares one the spec asks for: the rigid equations hold and
//! the compliant ones are off by as little as their compliance allows,
//!
//! ```text
//! minimise  sum_k C_k^2 / a_k   over the compliant equations k,
//! subject to  C_r = 0            for every rigid equation r,
//! ```
//!
//! (the energy of springs of compliance `a_k` stretched by their residuals). It is found
//! by Gauss-Newton on that problem from where the failed solve ended, each step a dense
//! KKT solve `[J_s^T W J_s + mu, J_r^T; J_r, -e] [dx; nu] = [-J_s^T W C_s; -C_r]` in the
//! tangent space, retracted as the solver retracts. Only clusters up to
//! [`YIELD_COLUMNS`] unknowns are tried (dense); a solve that holds every equation never
//! comes here, so a compliant joint that can hold does.

use nalgebra::{DMatrix, DVector};
use tenon_model::{Assembly, JointKey};
use tenon_solve::SolveReport;
use tenon_system::{Compiled, Owner, Quantity, System};

/// Largest tangent dimension of the unknowns a yield is computed for.
pub const YIELD_COLUMNS: usize = 600;
/// Gauss-Newton iterations of a yield before it gives up.
const YIELD_ITERATIONS: usize = 100;
/// A step below this fraction of the model's reach (in its largest component) ends the
/// iteration.
const YIELD_STEP: f64 = 1e-13;

/// How far a compliant joint gave way in a static solve: its largest residual among the
/// equations that measure lengths (model units) and among those that measure angles
/// (radians).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Yield {
    /// The joint.
    pub joint: JointKey,
    /// Largest length residual (model units; 0 when it has none).
    pub length: f64,
    /// Largest angle residual (radians; 0 when it has none).
    pub angle: f64,
}

/// Per equation of `system`, its compliance (0: rigid), from its joint's `compliance`
/// (angle equations per radian); `None` when no equation is compliant.
pub(crate) fn compliances(assembly: &Assembly, system: &System) -> Option<Vec<f64>> {
    let values = assembly.parameter_values();
    let per_angle = assembly.units().angle.radians();
    let mut any = false;
    let out = system
        .equations()
        .iter()
        .map(|eq| {
            let (Owner::Joint(key) | Owner::Drive(key, _)) = eq.owner else {
                return 0.0;
            };
            let a = assembly
                .joint(key)
                .and_then(|j| j.compliance.as_ref())
                .and_then(|c| values.value_of(c))
                .filter(|a| a.is_finite() && *a > 0.0)
                .unwrap_or(0.0);
            any |= a > 0.0;
            match eq.quantity {
                Quantity::Length => a,
                Quantity::Angle => a * per_angle,
            }
        })
        .collect();
    any.then_some(out)
}

/// The equations a solve was asked to hold, and whether each holds within the
/// report's tolerances.
fn tolerance_of(system: &System, report: &SolveReport, row: usize) -> f64 {
    match system.equations()[row].quantity {
        Quantity::Length => report.tolerances.length,
        Quantity::Angle => report.tolerances.angle,
    }
}

/// From a failed solve's end (`state`, `params`, `report`): the pose where the rigid
/// equations hold and the compliant ones yield, `report` made that pose's (its clusters
/// with compliant joints placed: over-constrained, converged), and each compliant
/// joint's yield. `None` when the failure is not the compliant joints' (rigid equations
/// that cannot hold, a cluster too large): the caller keeps the failure.
pub(crate) fn yield_compliant(
    (system, compiled): (&System, &Compiled),
    compliance: &[f64],
    (state, params): (&mut Vec<f64>, &mut Vec<f64>),
    report: &mut SolveReport,
) -> Option<Vec<Yield>> {
    let rows: Vec<usize> = report
        .clusters
        .iter()
        .flat_map(|c| c.equations.iter().copied())
        .collect();
    if rows
        .iter()
        .all(|&r| compliance.get(r).is_none_or(|&a| a == 0.0))
    {
        return None;
    }
    let n = system.tangent_dimension();
    if n > YIELD_COLUMNS {
        return None;
    }
    let reach = report.tolerances.reach.max(1.0);
    let mut x = state.clone();
    let mut p = params.clone();
    let mut converged = false;
    for _ in 0..YIELD_ITERATIONS {
        let (residuals, jac) = system
            .tangent_jacobian_of_rows(compiled, &x, &p, &rows)
            .ok()?;
        let soft: Vec<usize> = (0..rows.len())
            .filter(|&k| compliance[rows[k]] > 0.0)
            .collect();
        let rigid: Vec<usize> = (0..rows.len())
            .filter(|&k| compliance[rows[k]] == 0.0)
            .collect();
        let dense = DMatrix::from_row_slice(rows.len(), n, &jac.to_dense());
        let m = rigid.len();
        let mut kkt = DMatrix::<f64>::zeros(n + m, n + m);
        let mut rhs = DVector::<f64>::zeros(n + m);
        for &k in &soft {
            let w = 1.0 / compliance[rows[k]];
            let row: DVector<f64> = dense.row(k).transpose();
            for (i, &ri) in row.iter().enumerate() {
                if ri == 0.0 {
                    continue;
                }
                for (j, &rj) in row.iter().enumerate() {
                    kkt[(i, j)] += w * ri * rj;
                }
                rhs[i] -= w * ri * residuals[k];
            }
        }
        let scale = (0..n).fold(0.0f64, |s, c| s.max(kkt[(c, c)].abs()));
        let jac_scale = dense.iter().fold(0.0f64, |s, v| s.max(v.abs()));
        // Levenberg's term keeps directions no equation reaches still (least change);
        // the small `e` keeps repeated rigid rows from making the matrix singular.
        let mu = 1e-12 * scale.max(jac_scale * jac_scale).max(f64::MIN_POSITIVE);
        for c in 0..n {
            kkt[(c, c)] += mu;
        }
        for (i, &k) in rigid.iter().enumerate() {
            for c in 0..n {
                kkt[(n + i, c)] = dense[(k, c)];
                kkt[(c, n + i)] = dense[(k, c)];
            }
            kkt[(n + i, n + i)] = -1e-14 * jac_scale.max(f64::MIN_POSITIVE);
            rhs[n + i] = -residuals[k];
        }
        let step = kkt.lu().solve(&rhs)?;
        if !step.iter().all(|v| v.is_finite()) {
            return None;
        }
        let delta: Vec<f64> = step.iter().take(n).copied().collect();
        let size = delta.iter().fold(0.0f64, |s, d| s.max(d.abs()));
        let before = x.clone();
        system.retract(&mut x, &delta).ok()?;
        system.update_turns(compiled, &before, &x, &mut p).ok()?;
        if size <= YIELD_STEP * reach {
            converged = true;
            break;
        }
    }
    if !converged {
        return None;
    }
    let (residuals, _) = system
        .tangent_jacobian_of_rows(compiled, &x, &p, &rows)
        .ok()?;
    // Every rigid equation must hold; the compliant ones are what yielded.
    let mut yields: Vec<Yield> = Vec::new();
    let mut rigid_worst = 0.0f64;
    for (k, &row) in rows.iter().enumerate() {
        let r = residuals[k].abs();
        if compliance[row] == 0.0 {
            if r > tolerance_of(system, report, row) {
                return None;
            }
            rigid_worst = rigid_worst.max(r);
            continue;
        }
        if r <= tolerance_of(system, report, row) {
            continue;
        }
        let Some(joint) = system.joint_of(row) else {
            continue;
        };
        let at = match yields.iter().position(|y| y.joint == joint) {
            Some(at) => at,
            None => {
                yields.push(Yield {
                    joint,
                    length: 0.0,
                    angle: 0.0,
                });
                yields.len() - 1
            }
        };
        match system.equations()[row].quantity {
            Quantity::Length => yields[at].length = yields[at].length.max(r),
            Quantity::Angle => yields[at].angle = yields[at].angle.max(r),
        }
    }
    // The report of that pose: clusters holding compliant joints placed.
    let yielded_rows = |rows: &[usize]| rows.iter().any(|&r| compliance[r] > 0.0);
    for c in &mut report.clusters {
        let worst = c
            .equations
            .iter()
            .filter_map(|&r| rows.iter().position(|&q| q == r).map(|k| (r, residuals[k])))
            .filter(|&(r, _)| compliance[r] == 0.0)
            .fold(0.0f64, |w, (_, v)| w.max(v.abs()));
        c.max_residual = worst;
        if !c.converged && yielded_rows(&c.equations) {
            c.converged = true;
        }
    }
    report.unsatisfied.retain(|&(r, _)| !rows.contains(&r));
    report.converged = report.clusters.iter().all(|c| c.converged) && report.unsatisfied.is_empty();
    report.max_residual = rigid_worst;
    *state = x;
    *params = p;
    Some(yields)
}
