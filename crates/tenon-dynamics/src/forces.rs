//! What moves the parts: the bodies' inertia, gravity, springs and dampers between
//! points, and applied loads, as generalized forces over the tangent velocity (see
//! `bodies` for the convention), with their energies and powers.
//!
//! - Gravity `g` on a body of mass `m`: the force `m g` at the centre of mass; potential
//!   energy `-m g . (p + r)`.
//! - A spring-damper between points `x_i`, `x_j` (on parts or fixed): with `d = x_i -
//!   x_j`, `L = |d|`, `u = d / L` and `L' = u . (x_i' - x_j')`, the tension `T = k (L -
//!   L0) + c L'` pulls `x_i` by `-T u` and `x_j` by `T u`; potential `1/2 k (L - L0)^2`;
//!   the damper's power `-c L'^2`. At `L = 0` the direction is undefined and the spring
//!   exerts nothing.
//! - A load: a constant force at a point of a part and a torque; its power `F . x_p' +
//!   tau . omega`.

use nalgebra::{Matrix3, UnitQuaternion, Vector3, Vector6};

use crate::bodies::{generalized, Body, Placed};
use crate::error::DynamicsError;

/// Where one end of a spring is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Anchor {
    /// A point of a free part (index among the system's free parts), in part
    /// coordinates.
    Part {
        /// Free-part index.
        part: usize,
        /// The point, part coordinates.
        local: [f64; 3],
    },
    /// A fixed point in the world.
    Fixed([f64; 3]),
}

/// A spring-damper along the line between two points.
#[derive(Debug, Clone, PartialEq)]
pub struct Spring {
    /// First end.
    pub i: Anchor,
    /// Second end.
    pub j: Anchor,
    /// Stiffness (force / length).
    pub stiffness: f64,
    /// Length at which it exerts no force.
    pub rest_length: f64,
    /// Damping (force / speed).
    pub damping: f64,
}

/// A constant force at a point of a part and a torque (world frame).
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// Free-part index.
    pub part: usize,
    /// Force.
    pub force: [f64; 3],
    /// Torque.
    pub torque: [f64; 3],
    /// Point of application, part coordinates.
    pub at: [f64; 3],
}

/// Bodies and forces of a run, in model units, one body per free part in the system's
/// order.
#[derive(Debug, Clone, PartialEq)]
pub struct Dynamics {
    bodies: Vec<Body>,
    gravity: Vector3<f64>,
    springs: Vec<Spring>,
    loads: Vec<Load>,
    /// Compliant equations (indices into `System::equations`, sorted, once each) and
    /// their compliance (residual per multiplier: length per force, radian per torque).
    compliance: Vec<(usize, f64)>,
}

/// Energies of a state (model units).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Energy {
    /// Kinetic.
    pub kinetic: f64,
    /// Gravitational potential.
    pub potential: f64,
    /// Springs' potential.
    pub spring: f64,
    /// Work done on the system so far by loads, drives and dampers.
    pub work: f64,
}

/// A free part's pose and velocity, read from a state and a tangent velocity.
#[derive(Debug, Clone)]
pub(crate) struct Kinematic {
    pub(crate) position: Vector3<f64>,
    pub(crate) rotation: Matrix3<f64>,
    pub(crate) v: Vector3<f64>,
    pub(crate) omega: Vector3<f64>,
}

/// Pose and velocity of free part `k` (7 state numbers `p, q`; 6 tangent numbers).
pub(crate) fn kinematic(state: &[f64], velocity: &[f64], k: usize) -> Kinematic {
    let s = |i: usize| state.get(7 * k + i).copied().unwrap_or(0.0);
    let t = |i: usize| velocity.get(6 * k + i).copied().unwrap_or(0.0);
    let q = UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(s(3), s(4), s(5), s(6)));
    Kinematic {
        position: Vector3::new(s(0), s(1), s(2)),
        rotation: q.to_rotation_matrix().into_inner(),
        v: Vector3::new(t(0), t(1), t(2)),
        omega: Vector3::new(t(3), t(4), t(5)),
    }
}

impl Dynamics {
    /// Bodies (one per free part) under gravity `gravity` (length / time^2), no springs
    /// or loads.
    pub fn new(bodies: Vec<Body>, gravity: [f64; 3]) -> Result<Dynamics, DynamicsError> {
        if !gravity.iter().all(|g| g.is_finite()) {
            return Err(DynamicsError::BadInput(format!(
                "gravity must be finite, is {gravity:?}"
            )));
        }
        Ok(Dynamics {
            bodies,
            gravity: Vector3::from(gravity),
            springs: Vec::new(),
            loads: Vec::new(),
            compliance: Vec::new(),
        })
    }

    /// Makes equation `equation` (an index into `System::equations`) compliant: instead
    /// of holding exactly it carries the force `lambda = C / compliance` of a spring
    /// stretched by its residual `C` (model units: length per force for an equation that
    /// measures a length, radian per torque for one that measures an angle). 0 makes it
    /// rigid again. Finite and not negative.
    pub fn set_compliance(
        &mut self,
        equation: usize,
        compliance: f64,
    ) -> Result<(), DynamicsError> {
        if !(compliance.is_finite() && compliance >= 0.0) {
            return Err(DynamicsError::BadInput(format!(
                "a compliance must be 0 or more, is {compliance}"
            )));
        }
        match self.compliance.binary_search_by_key(&equation, |&(e, _)| e) {
            Ok(k) if compliance == 0.0 => {
                self.compliance.remove(k);
            }
            Ok(k) => self.compliance[k].1 = compliance,
            Err(k) if compliance > 0.0 => self.compliance.insert(k, (equation, compliance)),
            Err(_) => {}
        }
        Ok(())
    }

    /// The compliance of equation `equation` (0: rigid).
    pub fn compliance_of(&self, equation: usize) -> f64 {
        self.compliance
            .binary_search_by_key(&equation, |&(e, _)| e)
            .map_or(0.0, |k| self.compliance[k].1)
    }

    /// Adds a spring-damper (finite numbers; stiffness, damping and rest length not
    /// negative; parts in range).
    pub fn add_spring(&mut self, spring: Spring) -> Result<(), DynamicsError> {
        let numbers = [spring.stiffness, spring.rest_length, spring.damping];
        if !numbers.iter().all(|x| x.is_finite() && *x >= 0.0) {
            return Err(DynamicsError::BadInput(format!(
                "a spring's stiffness, rest length and damping must be 0 or more, are \
                 {numbers:?}"
            )));
        }
        for end in [spring.i, spring.j] {
            if let Anchor::Part { part, .. } = end {
                self.check_part(part)?;
            }
        }
        self.springs.push(spring);
        Ok(())
    }

    /// Adds a load (finite numbers, part in range).
    pub fn add_load(&mut self, load: Load) -> Result<(), DynamicsError> {
        self.check_part(load.part)?;
        if !load
            .force
            .iter()
            .chain(&load.torque)
            .chain(&load.at)
            .all(|x| x.is_finite())
        {
            return Err(DynamicsError::BadInput("a load must be finite".into()));
        }
        self.loads.push(load);
        Ok(())
    }

    fn check_part(&self, part: usize) -> Result<(), DynamicsError> {
        if part >= self.bodies.len() {
            return Err(DynamicsError::BadInput(format!(
                "no free part {part} (there are {})",
                self.bodies.len()
            )));
        }
        Ok(())
    }

    /// Changes gravity (a run carries on with it from its next step).
    pub fn set_gravity(&mut self, gravity: [f64; 3]) -> Result<(), DynamicsError> {
        if !gravity.iter().all(|g| g.is_finite()) {
            return Err(DynamicsError::BadInput(format!(
                "gravity must be finite, is {gravity:?}"
            )));
        }
        self.gravity = Vector3::from(gravity);
        Ok(())
    }

    /// Changes load `index` (in the order added) to `force` and `torque`.
    pub fn set_load(
        &mut self,
        index: usize,
        force: [f64; 3],
        torque: [f64; 3],
    ) -> Result<(), DynamicsError> {
        if !force.iter().chain(&torque).all(|x| x.is_finite()) {
            return Err(DynamicsError::BadInput("a load must be finite".into()));
        }
        let count = self.loads.len();
        let load = self.loads.get_mut(index).ok_or_else(|| {
            DynamicsError::BadInput(format!("no load {index} (there are {count})"))
        })?;
        load.force = force;
        load.torque = torque;
        Ok(())
    }

    /// The bodies.
    pub fn bodies(&self) -> &[Body] {
        &self.bodies
    }

    /// Gravity.
    pub fn gravity(&self) -> [f64; 3] {
        self.gravity.into()
    }

    /// The size of gravity (0 without it): a scale for accelerations.
    pub(crate) fn gravity_scale(&self) -> f64 {
        self.gravity.amax()
    }

    /// Placed bodies at a state.
    pub(crate) fn placed(&self, state: &[f64]) -> Vec<Placed> {
        let mut out = Vec::new();
        self.placed_into(state, &mut out);
        out
    }

    /// [`Dynamics::placed`] written into `out`.
    pub(crate) fn placed_into(&self, state: &[f64], out: &mut Vec<Placed>) {
        let zero = [0.0; 6];
        out.clear();
        out.extend(
            self.bodies
                .iter()
                .enumerate()
                .map(|(k, b)| b.at(&kinematic(state, &zero, k).rotation)),
        );
    }

    /// A spring end's world point and velocity.
    fn end(&self, anchor: Anchor, state: &[f64], velocity: &[f64]) -> End {
        match anchor {
            Anchor::Fixed(x) => End {
                part: None,
                point: Vector3::from(x),
                arm: Vector3::zeros(),
                velocity: Vector3::zeros(),
            },
            Anchor::Part { part, local } => {
                let k = kinematic(state, velocity, part);
                let arm = k.rotation * Vector3::from(local);
                End {
                    part: Some(part),
                    point: k.position + arm,
                    arm,
                    velocity: k.v + k.omega.cross(&arm),
                }
            }
        }
    }

    /// Adds the applied generalized forces (gravity, springs, loads; not the inertial
    /// terms) at `state` with `velocity` into `out` (6 per free part), and returns the
    /// power of loads and dampers.
    pub(crate) fn applied(
        &self,
        placed: &[Placed],
        state: &[f64],
        velocity: &[f64],
        out: &mut [f64],
    ) -> f64 {
        let mut add = |part: usize, q: Vector6<f64>| {
            for (c, x) in q.iter().enumerate() {
                if let Some(slot) = out.get_mut(6 * part + c) {
                    *slot += x;
                }
            }
        };
        for (k, p) in placed.iter().enumerate() {
            let f = self.gravity * p.mass;
            add(k, generalized(&f, &p.arm, &Vector3::zeros()));
        }
        let mut power = 0.0;
        for s in &self.springs {
            let (i, j) = (
                self.end(s.i, state, velocity),
                self.end(s.j, state, velocity),
            );
            let d = i.point - j.point;
            let length = d.norm();
            if length <= f64::MIN_POSITIVE {
                continue;
            }
            let u = d / length;
            let rate = u.dot(&(i.velocity - j.velocity));
            let tension = s.stiffness * (length - s.rest_length) + s.damping * rate;
            power -= s.damping * rate * rate;
            let f = -u * tension;
            if let Some(part) = i.part {
                add(part, generalized(&f, &i.arm, &Vector3::zeros()));
            }
            if let Some(part) = j.part {
                add(part, generalized(&(-f), &j.arm, &Vector3::zeros()));
            }
        }
        for l in &self.loads {
            let k = kinematic(state, velocity, l.part);
            let arm = k.rotation * Vector3::from(l.at);
            let (f, t) = (Vector3::from(l.force), Vector3::from(l.torque));
            power += f.dot(&(k.v + k.omega.cross(&arm))) + t.dot(&k.omega);
            add(l.part, generalized(&f, &arm, &t));
        }
        power
    }

    /// The springs' and dampers' part of Newton's iteration matrix, `stiffness * K +
    /// damping * C` (with `K = -dQ/dq`, `C = -dQ/dv` over the tangent coordinates),
    /// added to `out` as `(row, column, value)` entries (every entry of each coupled
    /// 6 x 6 block, zeros too, so the pattern does not change from one factorization to
    /// the next).
    ///
    /// Per spring, with `G_e = [1, -[a_e]x]` mapping a part's tangent velocity to the
    /// velocity of its end at world arm `a_e`, the blocks are `+-G_e^T S G_f` (`+` for
    /// the same end) with `S = stiffness (k u u^T + max(T, 0) / L (1 - u u^T)) + damping
    /// c u u^T`: the line's stiffness, its tension's turning stiffness when it pulls
    /// (left out when it pushes, which keeps the matrix's mass block positive), and the
    /// damper along the line. The terms of the arms turning under a force are left out
    /// (modified Newton: the residuals are exact).
    pub(crate) fn spring_tangent(
        &self,
        state: &[f64],
        velocity: &[f64],
        (stiffness, damping): (f64, f64),
        out: &mut Vec<(u32, u32, f64)>,
    ) {
        for s in &self.springs {
            let ends = [
                self.end(s.i, state, velocity),
                self.end(s.j, state, velocity),
            ];
            let d = ends[0].point - ends[1].point;
            let length = d.norm();
            if length <= f64::MIN_POSITIVE {
                continue;
            }
            let u = d / length;
            let rate = u.dot(&(ends[0].velocity - ends[1].velocity));
            let tension = s.stiffness * (length - s.rest_length) + s.damping * rate;
            let along = u * u.transpose();
            let matrix = along * (stiffness * s.stiffness + damping * s.damping)
                + (Matrix3::identity() - along) * (stiffness * tension.max(0.0) / length);
            for (a, ea) in ends.iter().enumerate() {
                for (b, eb) in ends.iter().enumerate() {
                    let (Some(pa), Some(pb)) = (ea.part, eb.part) else {
                        continue;
                    };
                    let sign = if a == b { 1.0 } else { -1.0 };
                    let (xa, xb) = (ea.arm.cross_matrix(), eb.arm.cross_matrix());
                    let blocks = [[matrix, -matrix * xb], [xa * matrix, -xa * matrix * xb]];
                    for (br, row) in blocks.iter().enumerate() {
                        for (bc, block) in row.iter().enumerate() {
                            for r in 0..3 {
                                for c in 0..3 {
                                    out.push((
                                        (6 * pa + 3 * br + r) as u32,
                                        (6 * pb + 3 * bc + c) as u32,
                                        sign * block[(r, c)],
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Kinetic, gravitational and spring energies at a state (`work` left 0).
    pub(crate) fn energy(&self, placed: &[Placed], state: &[f64], velocity: &[f64]) -> Energy {
        let mut e = Energy::default();
        for (k, p) in placed.iter().enumerate() {
            let m = kinematic(state, velocity, k);
            e.kinetic += p.kinetic(&m.v, &m.omega);
            e.potential -= p.mass * self.gravity.dot(&(m.position + p.arm));
        }
        for s in &self.springs {
            let (i, j) = (
                self.end(s.i, state, velocity),
                self.end(s.j, state, velocity),
            );
            let stretch = (i.point - j.point).norm() - s.rest_length;
            e.spring += 0.5 * s.stiffness * stretch * stretch;
        }
        e
    }
}

struct End {
    part: Option<usize>,
    point: Vector3<f64>,
    arm: Vector3<f64>,
    velocity: Vector3<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state after moving tangent column `c` by `e` (translations added, rotations
    /// applied on the left, as the integrator moves).
    fn moved(state: &[f64], c: usize, e: f64) -> Vec<f64> {
        let mut s = state.to_vec();
        let (k, w) = (c / 6, c % 6);
        if w < 3 {
            s[7 * k + w] += e;
        } else {
            let mut axis = Vector3::zeros();
            axis[w - 3] = e;
            let q = UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
                s[7 * k + 3],
                s[7 * k + 4],
                s[7 * k + 5],
                s[7 * k + 6],
            ));
            let q = UnitQuaternion::from_scaled_axis(axis) * q;
            s[7 * k + 3..7 * k + 7].copy_from_slice(&[q.w, q.i, q.j, q.k]);
        }
        s
    }

    /// The springs' iteration-matrix blocks against central differences of the applied
    /// forces: every column of the force rows (and, with the ends at the parts' origins,
    /// every row) for the stiffness; the damper's `c u u^T` against differences in the
    /// velocities. A stretched spring between two tilted parts, with off-origin ends.
    #[test]
    fn spring_tangent_matches_differences() {
        for arms in [[0.0; 3], [0.3, -0.2, 0.5]] {
            let body = Body::new(
                "b",
                2.0,
                [0.0; 3],
                [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            )
            .unwrap();
            let mut d = Dynamics::new(vec![body.clone(), body], [0.0; 3]).unwrap();
            d.add_spring(Spring {
                i: Anchor::Part {
                    part: 0,
                    local: arms,
                },
                j: Anchor::Part {
                    part: 1,
                    local: [-0.1, 0.4, 0.0],
                },
                stiffness: 300.0,
                rest_length: 0.5,
                damping: 7.0,
            })
            .unwrap();
            let q0 = UnitQuaternion::from_scaled_axis(Vector3::new(0.2, -0.4, 0.7));
            let q1 = UnitQuaternion::from_scaled_axis(Vector3::new(-0.5, 0.1, 0.3));
            let state = [
                0.1, 0.2, -0.3, q0.w, q0.i, q0.j, q0.k, 1.2, -0.4, 0.6, q1.w, q1.i, q1.j, q1.k,
            ];
            let rest = [0.0; 12];
            let forces = |s: &[f64], v: &[f64]| {
                let mut out = vec![0.0; 12];
                d.applied(&d.placed(s), s, v, &mut out);
                out
            };
            let dense = |weights: (f64, f64)| {
                let mut entries = Vec::new();
                d.spring_tangent(&state, &rest, weights, &mut entries);
                let mut m = nalgebra::DMatrix::<f64>::zeros(12, 12);
                for (r, c, v) in entries {
                    m[(r as usize, c as usize)] += v;
                }
                m
            };
            let (stiffness, damping) = (dense((1.0, 0.0)), dense((0.0, 1.0)));
            let e = 1e-6;
            for c in 0..12 {
                let (plus, minus) = (
                    forces(&moved(&state, c, e), &rest),
                    forces(&moved(&state, c, -e), &rest),
                );
                let mut vp = rest;
                vp[c] = e;
                let mut vm = rest;
                vm[c] = -e;
                let (dp, dm) = (forces(&state, &vp), forces(&state, &vm));
                for r in 0..12 {
                    let translation_row = r % 6 < 3;
                    let k = -(plus[r] - minus[r]) / (2.0 * e);
                    if translation_row || arms == [0.0; 3] && c % 6 < 3 {
                        assert!(
                            (k - stiffness[(r, c)]).abs() < 1e-5 * 300.0,
                            "arms {arms:?}: K[{r}, {c}] {} by differences {k}",
                            stiffness[(r, c)]
                        );
                    }
                    let cd = -(dp[r] - dm[r]) / (2.0 * e);
                    if translation_row {
                        assert!(
                            (cd - damping[(r, c)]).abs() < 1e-6 * 7.0,
                            "arms {arms:?}: C[{r}, {c}] {} by differences {cd}",
                            damping[(r, c)]
                        );
                    }
                }
            }
        }
    }
}
