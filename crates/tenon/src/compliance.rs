//! Compliant joints in statics: where a solve fails because joints disagree and some of
//! them are compliant, the compliant ones give way; and the static equilibrium under
//! the file's loads and gravity, compliant joints as springs.
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
//!
//! The equilibrium (`Mechanism::equilibrium`) minimises the same energy less the work
//! of the loads and gravity, `f` their generalized force: the right-hand side's top is
//! `f - J_s^T W C_s`, the matrix as above (the loads' change with the pose left out:
//! the iteration converges to the exact balance all the same). A direction no joint
//! holds along which a load pushes has no equilibrium: its steps grow past the model's
//! reach and the equilibrium is refused.

use nalgebra::{DMatrix, DVector};
use tenon_model::{Assembly, JointKey};
use tenon_solve::SolveReport;
use tenon_system::{Compiled, Owner, Quantity, System};

/// Largest tangent dimension (6 per moving part) of an assembly whose compliant joints
/// give way or whose equilibrium is computed: each iteration factors a dense matrix
/// of that size plus the rigid equations, a few hundred rows at most.
pub const YIELD_COLUMNS: usize = 300;
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

/// The tolerance `report` judged equation `row` by (lengths or angles).
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
    equations: (&System, &Compiled),
    compliance: &[f64],
    pose: (&mut Vec<f64>, &mut Vec<f64>),
    report: &mut SolveReport,
) -> Option<Vec<Yield>> {
    let any = report
        .clusters
        .iter()
        .flat_map(|c| c.equations.iter())
        .any(|&r| compliance.get(r).is_some_and(|&a| a > 0.0));
    if !any {
        return None;
    }
    match minimise(equations, compliance, &|_| None, pose, report) {
        Minimised::Settled(yields) => Some(yields),
        _ => None,
    }
}

/// What [`minimise`] found.
pub(crate) enum Minimised {
    /// The rigid equations hold; the compliant ones yielded this much.
    Settled(Vec<Yield>),
    /// The rigid equations cannot hold, or the problem is too large.
    Failed,
    /// A load pushes along a direction no joint holds.
    NoEquilibrium,
}

/// Minimises the compliant equations' energy less the work of `forces` (a generalized
/// force per tangent column at a state; `None`: no forces) with the rigid equations
/// held, from `state`; see the module's header.
pub(crate) fn minimise(
    (system, compiled): (&System, &Compiled),
    compliance: &[f64],
    forces: &dyn Fn(&[f64]) -> Option<Vec<f64>>,
    (state, params): (&mut Vec<f64>, &mut Vec<f64>),
    report: &mut SolveReport,
) -> Minimised {
    match minimise_inner(
        (system, compiled),
        compliance,
        forces,
        (state, params),
        report,
    ) {
        Ok(yields) => Minimised::Settled(yields),
        Err(true) => Minimised::NoEquilibrium,
        Err(false) => Minimised::Failed,
    }
}

/// [`minimise`]; `Err(true)`: no equilibrium, `Err(false)`: failed.
fn minimise_inner(
    (system, compiled): (&System, &Compiled),
    compliance: &[f64],
    forces: &dyn Fn(&[f64]) -> Option<Vec<f64>>,
    (state, params): (&mut Vec<f64>, &mut Vec<f64>),
    report: &mut SolveReport,
) -> Result<Vec<Yield>, bool> {
    let rows: Vec<usize> = report
        .clusters
        .iter()
        .flat_map(|c| c.equations.iter().copied())
        .collect();
    let n = system.tangent_dimension();
    if n > YIELD_COLUMNS {
        return Err(false);
    }
    let reach = report.tolerances.reach.max(1.0);
    let mut x = state.clone();
    let mut p = params.clone();
    let mut converged = false;
    for _ in 0..YIELD_ITERATIONS {
        let (residuals, jac) = system
            .tangent_jacobian_of_rows(compiled, &x, &p, &rows)
            .map_err(|_| false)?;
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
        if let Some(f) = forces(&x) {
            for (r, fc) in rhs.iter_mut().zip(f) {
                *r += fc;
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
        let step = kkt.lu().solve(&rhs).ok_or(false)?;
        if !step.iter().all(|v| v.is_finite()) {
            return Err(false);
        }
        let delta: Vec<f64> = step.iter().take(n).copied().collect();
        let size = delta.iter().fold(0.0f64, |s, d| s.max(d.abs()));
        if size > 10.0 * reach {
            // A load pushing along a free direction: no balance.
            return Err(true);
        }
        let before = x.clone();
        system.retract(&mut x, &delta).map_err(|_| false)?;
        system
            .update_turns(compiled, &before, &x, &mut p)
            .map_err(|_| false)?;
        if size <= YIELD_STEP * reach {
            converged = true;
            break;
        }
    }
    if !converged {
        return Err(false);
    }
    let (residuals, _) = system
        .tangent_jacobian_of_rows(compiled, &x, &p, &rows)
        .map_err(|_| false)?;
    // Every rigid equation must hold; the compliant ones are what yielded.
    let mut yields: Vec<Yield> = Vec::new();
    let mut rigid_worst = 0.0f64;
    for (k, &row) in rows.iter().enumerate() {
        let r = residuals[k].abs();
        if compliance[row] == 0.0 {
            if r > tolerance_of(system, report, row) {
                return Err(false);
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
    let position: std::collections::HashMap<usize, usize> =
        rows.iter().enumerate().map(|(k, &r)| (r, k)).collect();
    let yielded_rows = |rows: &[usize]| rows.iter().any(|&r| compliance[r] > 0.0);
    for c in &mut report.clusters {
        let worst = c
            .equations
            .iter()
            .filter_map(|&r| position.get(&r).map(|&k| (r, residuals[k])))
            .filter(|&(r, _)| compliance[r] == 0.0)
            .fold(0.0f64, |w, (_, v)| w.max(v.abs()));
        c.max_residual = worst;
        if !c.converged && yielded_rows(&c.equations) {
            c.converged = true;
        }
    }
    report
        .unsatisfied
        .retain(|&(r, _)| !position.contains_key(&r));
    report.converged = report.clusters.iter().all(|c| c.converged) && report.unsatisfied.is_empty();
    report.max_residual = rigid_worst;
    *state = x;
    *params = p;
    Ok(yields)
}

impl crate::Mechanism {
    /// The static equilibrium under the assembly's loads and gravity (on parts with
    /// `mass`), compliant joints acting as springs of their compliance: the parts are
    /// assembled as [`solve`](Self::solve) does, then moved until the loads balance the
    /// compliant joints' forces with the rigid joints held (their reactions take the
    /// rest). A compliant distance joint pulled along its line by a load `F` stretches
    /// by `F` times its compliance. Springs between markers are not counted yet. An
    /// assembly whose loads push a part along a freedom no joint holds has no
    /// equilibrium: [`Error::Equilibrium`](crate::Error::Equilibrium), the mechanism
    /// unchanged; so is one of more than [`YIELD_COLUMNS`] unknowns.
    pub fn equilibrium(&mut self) -> Result<crate::Report, crate::Error> {
        let (mut state, mut params, mut raw, yielded) = self.yielding_solve(&mut |_| {})?;
        if !raw.converged {
            let mut report = crate::Report::new(&self.built.system, raw);
            report.yielded = yielded;
            return Ok(self.settle(state, params, report));
        }
        let system = &self.built.system;
        let compliance = compliances(&self.assembly, system)
            .unwrap_or_else(|| vec![0.0; system.equations().len()]);
        let loads = StaticLoads::new(&self.assembly, system);
        let forces = |x: &[f64]| Some(loads.generalized(x));
        match minimise(
            (system, &self.built.compiled),
            &compliance,
            &forces,
            (&mut state, &mut params),
            &mut raw,
        ) {
            Minimised::Settled(mut y) => {
                let order: Vec<JointKey> = self.assembly.joints().map(|(k, _)| k).collect();
                y.sort_by_key(|y| order.iter().position(|&k| k == y.joint));
                let mut report = crate::Report::new(&self.built.system, raw);
                report.yielded = y;
                Ok(self.settle(state, params, report))
            }
            Minimised::NoEquilibrium => Err(crate::Error::Equilibrium(
                "the loads push a part along a freedom no joint holds: there is no static \
                 equilibrium"
                    .into(),
            )),
            Minimised::Failed => Err(crate::Error::Equilibrium(format!(
                "not found (the rigid joints cannot hold under the compliant ones' pull, or \
                 the assembly has more than {YIELD_COLUMNS} unknowns)"
            ))),
        }
    }
}

/// One force on a free part: `(free part index, force, torque, point in part
/// coordinates)`, model units.
type PartLoad = (usize, [f64; 3], [f64; 3], [f64; 3]);

/// The loads and gravity on free parts, in model units, for the equilibrium.
struct StaticLoads {
    loads: Vec<PartLoad>,
}

impl StaticLoads {
    fn new(assembly: &Assembly, system: &System) -> StaticLoads {
        let values = assembly.parameter_values();
        let number = |s: &tenon_model::Scalar| values.value_of(s).filter(|x| x.is_finite());
        let triple = |v: &[tenon_model::Scalar; 3]| -> Option<[f64; 3]> {
            Some([number(&v[0])?, number(&v[1])?, number(&v[2])?])
        };
        let forces = assembly.forces();
        let gravity = forces
            .gravity
            .as_ref()
            .and_then(&triple)
            .unwrap_or([0.0; 3]);
        let mut loads = Vec::new();
        for (k, free) in system.free_parts().iter().enumerate() {
            let Some(part) = assembly.part(free.part) else {
                continue;
            };
            let centre = part
                .mass
                .as_ref()
                .and_then(|m| triple(&m.center_of_mass))
                .unwrap_or([0.0; 3]);
            if let Some(m) = part.mass.as_ref().and_then(|m| number(&m.mass)) {
                loads.push((k, gravity.map(|g| g * m), [0.0; 3], centre));
            }
            for l in forces.loads.iter().filter(|l| l.part == free.part) {
                let (Some(force), Some(torque)) = (triple(&l.force), triple(&l.torque)) else {
                    continue;
                };
                let at = l.at.as_ref().and_then(&triple).unwrap_or(centre);
                loads.push((k, force, torque, at));
            }
        }
        StaticLoads { loads }
    }

    /// Generalized forces at `state`: per free part, the force, then its torque about the
    /// part's origin (world axes), as the tangent columns are laid out.
    fn generalized(&self, state: &[f64]) -> Vec<f64> {
        let parts = state.len() / tenon_system::STATE_PER_PART;
        let mut f = vec![0.0; tenon_system::TANGENT_PER_PART * parts];
        for &(k, force, torque, at) in &self.loads {
            let s = tenon_system::STATE_PER_PART * k;
            let Some(q) = state.get(s + 3..s + 7) else {
                continue;
            };
            let rotation = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
                q[0], q[1], q[2], q[3],
            ));
            let arm = rotation * nalgebra::Vector3::from(at);
            let force = nalgebra::Vector3::from(force);
            let moment = arm.cross(&force) + nalgebra::Vector3::from(torque);
            let t = tenon_system::TANGENT_PER_PART * k;
            for c in 0..3 {
                f[t + c] += force[c];
                f[t + 3 + c] += moment[c];
            }
        }
        f
    }
}
