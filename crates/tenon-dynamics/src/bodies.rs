//! Rigid bodies in the solver's tangent coordinates: per free part the velocity `v` of
//! the part frame's origin and the angular velocity `omega`, both world frame.
//!
//! With `r = R c` the centre of mass's offset from the origin (world axes) and
//! `I = R I_c R^T` the inertia about the centre of mass in world axes, the centre of
//! mass moves at `v_c = v + omega x r = v - [r]x omega`. Newton-Euler at the centre of
//! mass (`m a_c = F`, `I alpha + omega x I omega = tau_c`), projected by virtual power
//! onto `(v, omega)`, gives `M(q) [a; alpha] + h(q, omega) = Q` with
//!
//! ```text
//! M = [ m 1        -m [r]x            ]      h = [ m omega x (omega x r)                 ]
//!     [ m [r]x      I - m [r]x [r]x   ]          [ m r x (omega x (omega x r)) + omega x I omega ]
//! ```
//!
//! and a force `F` at world offset `s` from the origin with a torque `tau` contributing
//! `Q = [F; s x F + tau]`. The kinetic energy is `1/2 m |v_c|^2 + 1/2 omega . I omega`.

use nalgebra::{Matrix3, Matrix6, Vector3, Vector6};

use crate::error::DynamicsError;

/// Mass properties of one free part, in model units (mass, length): the mass, the centre
/// of mass in part coordinates, and the inertia about the centre of mass in part axes
/// (mass times length squared).
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    mass: f64,
    center: Vector3<f64>,
    inertia: Matrix3<f64>,
}

impl Body {
    /// Checks and makes a body: a finite, positive mass; a finite centre; a symmetric
    /// positive semi-definite inertia. `name` is used in the error.
    pub fn new(
        name: &str,
        mass: f64,
        center: [f64; 3],
        inertia: [[f64; 3]; 3],
    ) -> Result<Body, DynamicsError> {
        if !(mass.is_finite() && mass > 0.0) {
            return Err(DynamicsError::BadMass(format!(
                "part '{name}': the mass must be a positive number, is {mass}"
            )));
        }
        if !center
            .iter()
            .chain(inertia.iter().flatten())
            .all(|x| x.is_finite())
        {
            return Err(DynamicsError::BadMass(format!(
                "part '{name}': the centre of mass and inertia must be finite numbers"
            )));
        }
        let inertia = Matrix3::from_fn(|r, c| inertia[r][c]);
        let scale = inertia.amax().max(f64::MIN_POSITIVE);
        if (inertia - inertia.transpose()).amax() > 1e-9 * scale {
            return Err(DynamicsError::BadMass(format!(
                "part '{name}': the inertia is not symmetric"
            )));
        }
        let smallest = inertia.symmetric_eigenvalues().min();
        if smallest < -1e-9 * scale {
            return Err(DynamicsError::BadMass(format!(
                "part '{name}': the inertia is not positive semi-definite (smallest \
                 principal moment {smallest})"
            )));
        }
        Ok(Body {
            mass,
            center: Vector3::from(center),
            inertia,
        })
    }

    /// The mass.
    pub fn mass(&self) -> f64 {
        self.mass
    }

    /// This body at orientation `rotation` (part to world).
    pub(crate) fn at(&self, rotation: &Matrix3<f64>) -> Placed {
        Placed {
            mass: self.mass,
            arm: rotation * self.center,
            inertia: rotation * self.inertia * rotation.transpose(),
        }
    }
}

/// A body at an orientation: what the equations of motion need.
#[derive(Debug, Clone)]
pub(crate) struct Placed {
    pub(crate) mass: f64,
    /// `r`: the centre of mass from the part origin, world axes.
    pub(crate) arm: Vector3<f64>,
    /// `I`: the inertia about the centre of mass, world axes.
    pub(crate) inertia: Matrix3<f64>,
}

impl Placed {
    /// The 6 x 6 mass matrix over `(v, omega)`.
    pub(crate) fn mass_matrix(&self) -> Matrix6<f64> {
        let m = self.mass;
        let rx = self.arm.cross_matrix();
        let mut out = Matrix6::zeros();
        out.fixed_view_mut::<3, 3>(0, 0)
            .copy_from(&(Matrix3::identity() * m));
        out.fixed_view_mut::<3, 3>(0, 3).copy_from(&(-m * rx));
        out.fixed_view_mut::<3, 3>(3, 0).copy_from(&(m * rx));
        out.fixed_view_mut::<3, 3>(3, 3)
            .copy_from(&(self.inertia - m * rx * rx));
        out
    }

    /// The mass matrix times `(v, omega)`, without forming it: `m (v - r x omega)` and
    /// `I omega + r x` that (the same as [`mass_matrix`](Self::mass_matrix) times it, to
    /// rounding).
    pub(crate) fn mass_times(&self, x: &Vector6<f64>) -> Vector6<f64> {
        let v = Vector3::new(x[0], x[1], x[2]);
        let w = Vector3::new(x[3], x[4], x[5]);
        let top = (v - self.arm.cross(&w)) * self.mass;
        let bottom = self.inertia * w + self.arm.cross(&top);
        Vector6::new(top.x, top.y, top.z, bottom.x, bottom.y, bottom.z)
    }

    /// `h`: the velocity-dependent inertial terms (centripetal and gyroscopic).
    pub(crate) fn inertial_terms(&self, omega: &Vector3<f64>) -> Vector6<f64> {
        let centripetal = omega.cross(&omega.cross(&self.arm)) * self.mass;
        let gyroscopic = omega.cross(&(self.inertia * omega));
        let top = centripetal;
        let bottom = self.arm.cross(&centripetal) + gyroscopic;
        Vector6::new(top.x, top.y, top.z, bottom.x, bottom.y, bottom.z)
    }

    /// Velocity of the centre of mass.
    pub(crate) fn center_velocity(&self, v: &Vector3<f64>, omega: &Vector3<f64>) -> Vector3<f64> {
        v + omega.cross(&self.arm)
    }

    /// Kinetic energy.
    pub(crate) fn kinetic(&self, v: &Vector3<f64>, omega: &Vector3<f64>) -> f64 {
        let vc = self.center_velocity(v, omega);
        0.5 * self.mass * vc.norm_squared() + 0.5 * omega.dot(&(self.inertia * omega))
    }
}

/// The generalized force of a force `force` at world offset `arm` from a part origin and
/// a torque `torque`: `[F; arm x F + tau]`.
pub(crate) fn generalized(
    force: &Vector3<f64>,
    arm: &Vector3<f64>,
    torque: &Vector3<f64>,
) -> Vector6<f64> {
    let t = arm.cross(force) + torque;
    Vector6::new(force.x, force.y, force.z, t.x, t.y, t.z)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use approx::assert_relative_eq;

    /// The kinetic energy equals `1/2 x^T M x` for any velocity: the mass matrix is the
    /// energy's Hessian.
    #[test]
    fn mass_matrix_gives_the_kinetic_energy() {
        let body = Body::new(
            "b",
            2.5,
            [0.3, -0.2, 0.7],
            [[0.4, 0.01, -0.02], [0.01, 0.5, 0.03], [-0.02, 0.03, 0.6]],
        )
        .unwrap();
        let rotation = nalgebra::Rotation3::from_scaled_axis(Vector3::new(0.3, -1.1, 0.4));
        let placed = body.at(rotation.matrix());
        let v = Vector3::new(0.2, -1.3, 0.8);
        let w = Vector3::new(-0.7, 0.4, 1.9);
        let x = Vector6::new(v.x, v.y, v.z, w.x, w.y, w.z);
        let quadratic = 0.5 * x.dot(&(placed.mass_matrix() * x));
        assert_relative_eq!(quadratic, placed.kinetic(&v, &w), max_relative = 1e-14);
        let product = placed.mass_times(&x);
        let by_matrix = placed.mass_matrix() * x;
        for k in 0..6 {
            assert_relative_eq!(product[k], by_matrix[k], epsilon = 1e-13);
        }
    }

    /// A body spinning about a principal axis through its centre of mass, at rest
    /// otherwise, has no inertial terms; off the principal axes, the gyroscopic torque
    /// `omega x I omega`.
    #[test]
    fn inertial_terms_of_a_spinning_body() {
        let body = Body::new(
            "b",
            1.0,
            [0.0; 3],
            [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]],
        )
        .unwrap();
        let placed = body.at(&Matrix3::identity());
        let h = placed.inertial_terms(&Vector3::new(0.0, 0.0, 5.0));
        assert!(h.amax() < 1e-15);
        let w = Vector3::new(1.0, 1.0, 0.0);
        let h = placed.inertial_terms(&w);
        let expected = w.cross(&(placed.inertia * w));
        assert_relative_eq!(h.fixed_rows::<3>(3).into_owned(), expected);
    }

    /// Bad mass data is refused with the part named.
    #[test]
    fn bad_mass_is_refused() {
        let good = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let e = Body::new("crank", -1.0, [0.0; 3], good).unwrap_err();
        assert!(e.to_string().contains("'crank'"), "{e}");
        let e = Body::new("crank", f64::NAN, [0.0; 3], good).unwrap_err();
        assert!(e.to_string().contains("positive"), "{e}");
        let bad = [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0]];
        let e = Body::new("rod", 1.0, [0.0; 3], bad).unwrap_err();
        assert!(e.to_string().contains("semi-definite"), "{e}");
        // A thin rod: no inertia about its own axis.
        let rod = [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        assert!(Body::new("rod", 1.0, [0.0; 3], rod).is_ok());
    }
}
