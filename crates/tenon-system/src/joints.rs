//! Every joint type as equations. Notation: `O_i, x_i, y_i, z_i` are marker i's world
//! origin and axes (likewise j), `d = O_i - O_j`. Each function documents its equations;
//! each emits exactly as many equations as degrees of freedom it removes, independent at
//! every non-degenerate pose (tests in `tests/joints.rs` check the rank).
//!
//! Axis alignment is written as projections onto the other marker's x and y axes
//! (`z_i . x_j = 0`, `z_i . y_j = 0`): two independent equations wherever the axes are
//! (neither three cross-product components, which are rank-deficient, nor two fixed
//! world components, which are singular in coordinate planes). These also hold at
//! `z_i = -z_j`; the solver keeps the loaded branch.

use tenon_expr::{ExprGraph, ExprId};
use tenon_model::{Field, JointType};

use crate::contact::{cam, curve_contact, Profiles};
use crate::frames::{offset, Frame, X, Y, Z};
pub(crate) use crate::residual::{angle, length, AngleRequest, JointBuilder, Quantity, Residual};

/// The joint's fields, lowered (angles in radians).
pub(crate) struct Fields {
    pub(crate) values: Vec<(Field, ExprId)>,
}

impl Fields {
    pub(crate) fn get(&self, f: Field) -> Option<ExprId> {
        self.values.iter().find(|(k, _)| *k == f).map(|&(_, e)| e)
    }
}

/// `O_i = O_j`: `d = 0` (3 equations).
fn coincident(g: &mut ExprGraph, i: &Frame, j: &Frame) -> Vec<Residual> {
    // With room for the joint's other equations (a fixed joint has six), which are
    // appended to these.
    let mut r = Vec::with_capacity(6);
    r.extend(offset(g, i, j).map(length));
    r
}

/// `z_i = +-z_j`: `z_i . x_j = 0`, `z_i . y_j = 0` (2 equations).
fn aligned(g: &mut ExprGraph, i: &Frame, j: &Frame) -> Vec<Residual> {
    vec![angle(i.axes_dot(g, Z, j, X)), angle(i.axes_dot(g, Z, j, Y))]
}

/// `O_i` on the line `(O_j, z_j)`: `d . x_j = 0`, `d . y_j = 0` (2 equations).
fn on_z_line(g: &mut ExprGraph, i: &Frame, j: &Frame) -> Vec<Residual> {
    let d = offset(g, i, j);
    vec![length(j.along(g, d, X)), length(j.along(g, d, Y))]
}

/// `(O_i - O_j) . z_j = offset` (1 equation).
fn in_plane(g: &mut ExprGraph, i: &Frame, j: &Frame, distance: ExprId) -> Residual {
    let d = offset(g, i, j);
    let h = j.along(g, d, Z);
    length(g.sub(h, distance))
}

/// `x_i . y_j = 0`: no turn about the common z (with aligned axes; 1 equation).
fn no_twist(g: &mut ExprGraph, i: &Frame, j: &Frame) -> Residual {
    angle(i.axes_dot(g, X, j, Y))
}

/// `z_i . z_j = 0` (1 equation).
fn perpendicular(g: &mut ExprGraph, i: &Frame, j: &Frame) -> Residual {
    angle(i.axes_dot(g, Z, j, Z))
}

/// The angle between `z_i` and `z_j` is `theta` (2 equations, 1 extra unknown).
///
/// `z_i . z_j = cos(theta)` alone has a zero gradient where the axes are parallel or
/// opposite, the usual starting poses in CAD, so Newton cannot leave them. An extra
/// unknown `phi`, an azimuth about `z_j` (from `x_j`), picks the plane through `z_j` and
/// `u = cos(phi) x_j + sin(phi) y_j` in which `z_i` must lie, and in that plane the
/// cosine condition is tilted so that its gradient does not vanish at 0 or 180 degrees:
///
/// - `z_i . (-sin(phi) x_j + cos(phi) y_j) = 0`
/// - `(z_i . z_j - cos(theta)) (1 + k z_i . u) = 0`, `k = ANGLE_TILT` (< 1, so the
///   second factor is positive and adds no solutions).
///
/// The solutions are exactly the poses with the requested angle (`phi` then the azimuth
/// of `z_i`, or that plus 180 degrees). `phi` starts at the azimuth of `z_i` in the
/// loaded pose (0 when the axes are parallel).
///
/// A constant angle of 0 or 180 degrees leaves `phi` undetermined and the cosine
/// condition flat at its solution; there the joint is lowered as a parallel joint (2
/// equations, no extra unknown), which like every axis-aligning joint also holds with
/// the axis reversed.
fn angle_between(b: &mut dyn JointBuilder, i: &Frame, j: &Frame, theta: ExprId) -> Vec<Residual> {
    const ANGLE_TILT: f64 = 0.5;
    if let Some(value) = b.graph().as_const(theta) {
        let turns = value / std::f64::consts::PI;
        if (turns - turns.round()).abs() < 1e-12 {
            return aligned(b.graph(), i, j);
        }
    }
    let start = {
        let g = b.graph();
        let (y, x) = (i.axes_dot(g, Z, j, Y), i.axes_dot(g, Z, j, X));
        g.atan2(y, x)
    };
    let phi = b.extra_unknown("angle azimuth", start);
    let g = b.graph();
    let (cp, sp) = (g.cos(phi), g.sin(phi));
    let (zx, zy, zz) = (
        i.axes_dot(g, Z, j, X),
        i.axes_dot(g, Z, j, Y),
        i.axes_dot(g, Z, j, Z),
    );
    let in_plane = {
        let a = g.mul(cp, zy);
        let c = g.mul(sp, zx);
        g.sub(a, c)
    };
    let along_u = {
        let a = g.mul(cp, zx);
        let c = g.mul(sp, zy);
        g.add(a, c)
    };
    let ct = g.cos(theta);
    let cosine = g.sub(zz, ct);
    let tilt = g.scale(along_u, ANGLE_TILT);
    let one = g.one();
    let factor = g.add(one, tilt);
    let tilted = g.mul(cosine, factor);
    vec![angle(in_plane), angle(tilted)]
}

/// Distance of `O_i` from the line `(O_j, z_j)`: `sqrt((d . x_j)^2 + (d . y_j)^2)`.
fn distance_from_z_line(g: &mut ExprGraph, i: &Frame, j: &Frame) -> ExprId {
    let d = offset(g, i, j);
    let (a, b) = (j.along(g, d, X), j.along(g, d, Y));
    let (a2, b2) = (g.powi(a, 2), g.powi(b, 2));
    let s = g.add(a2, b2);
    g.sqrt(s)
}

/// The angle of `x_i` from `x_j` about `z_j`: `atan2(x_i . y_j, x_i . x_j)` (raw).
pub(crate) fn twist_angle(g: &mut ExprGraph, i: &Frame, j: &Frame) -> ExprId {
    let s = i.axes_dot(g, X, j, Y);
    let c = i.axes_dot(g, X, j, X);
    g.atan2(s, c)
}

/// The distance of `O_i` from `O_j` along `z_j`: `d . z_j`.
pub(crate) fn slide_distance(g: &mut ExprGraph, i: &Frame, j: &Frame) -> ExprId {
    let d = offset(g, i, j);
    j.along(g, d, Z)
}

/// Equations of a joint type (without driving values).
pub(crate) fn equations(
    b: &mut dyn JointBuilder,
    joint_type: JointType,
    i: &Frame,
    j: &Frame,
    fields: &Fields,
    profiles: Profiles<'_>,
) -> Vec<Residual> {
    let zero = b.graph().zero();
    let field = |f: Field| fields.get(f).unwrap_or(zero);
    match joint_type {
        // Frames coincide: O_i = O_j, z_i . x_j = z_i . y_j = x_i . y_j = 0 (6).
        JointType::Fixed => {
            let g = b.graph();
            let mut r = coincident(g, i, j);
            r.extend(aligned(g, i, j));
            r.push(no_twist(g, i, j));
            r
        }
        // O_i = O_j and z_i = +-z_j (5).
        JointType::Revolute => {
            let g = b.graph();
            let mut r = coincident(g, i, j);
            r.extend(aligned(g, i, j));
            r
        }
        // O_i on the line (O_j, z_j), z_i = +-z_j (4).
        JointType::Cylindrical => {
            let g = b.graph();
            let mut r = on_z_line(g, i, j);
            r.extend(aligned(g, i, j));
            r
        }
        // Cylindrical and x_i . y_j = 0 (5).
        JointType::Slider => {
            let g = b.graph();
            let mut r = on_z_line(g, i, j);
            r.extend(aligned(g, i, j));
            r.push(no_twist(g, i, j));
            r
        }
        // O_i = O_j (3).
        JointType::Ball => coincident(b.graph(), i, j),
        // z_i = +-z_j and (O_i - O_j) . z_j = offset (3).
        JointType::Planar => {
            let g = b.graph();
            let mut r = aligned(g, i, j);
            r.push(in_plane(g, i, j, field(Field::Offset)));
            r
        }
        // O_i = O_j and z_i . z_j = 0 (4).
        JointType::Universal => {
            let g = b.graph();
            let mut r = coincident(g, i, j);
            r.push(perpendicular(g, i, j));
            r
        }
        // Cylindrical and 2 pi (s - s0) = pitch (a - a0), with s = d . z_j the slide and
        // a the continuous twist angle of x_i from x_j about z_j (5).
        JointType::Screw => {
            let g = b.graph();
            let mut r = on_z_line(g, i, j);
            r.extend(aligned(g, i, j));
            r.push(screw_relation(b, i, j, field(Field::Pitch)));
            r
        }
        // Only the screw relation (1).
        JointType::ScrewCoupling => vec![screw_relation(b, i, j, field(Field::Pitch))],
        // O_i on the line (O_j, z_j) (2).
        JointType::PointOnLine => on_z_line(b.graph(), i, j),
        // (O_i - O_j) . z_j = offset (1).
        JointType::PointInPlane => vec![in_plane(b.graph(), i, j, field(Field::Offset))],
        // z_i . z_j = 0 and (O_i - O_j) . z_j = offset (2).
        JointType::LineInPlane => {
            let g = b.graph();
            vec![
                perpendicular(g, i, j),
                in_plane(g, i, j, field(Field::Offset)),
            ]
        }
        // z_i = +-z_j (2).
        JointType::Parallel => aligned(b.graph(), i, j),
        // z_i . z_j = 0 (1).
        JointType::Perpendicular => vec![perpendicular(b.graph(), i, j)],
        // The angle between z_i and z_j is `angle` (1): see [`angle_between`].
        JointType::Angle => angle_between(b, i, j, field(Field::Angle)),
        // |O_i - O_j| = distance (1).
        JointType::Distance => {
            let g = b.graph();
            let d = offset(g, i, j);
            let sq: Vec<ExprId> = d.iter().map(|&c| g.powi(c, 2)).collect();
            let s = g.sum(&sq);
            let n = g.sqrt(s);
            vec![length(g.sub(n, field(Field::Distance)))]
        }
        // r_i (a_i - a_i0) + r_j (a_j - a_j0) = 0 (gear) or r_i (a_i - a_i0) - r_j (a_j - a_j0)
        // = 0 (belt), with a_i the continuous angle of the line of centres O_j - O_i seen
        // in marker i's xy plane and a_j that of O_i - O_j in marker j's (1).
        JointType::Gear | JointType::Belt => {
            let (ai, aj) = centre_line_angles(b, i, j);
            let (ri, rj) = (field(Field::RadiusI), field(Field::RadiusJ));
            let (ai0, aj0) = (b.load_value(ai), b.load_value(aj));
            let g = b.graph();
            let dai = g.sub(ai, ai0);
            let daj = g.sub(aj, aj0);
            let ti = g.mul(ri, dai);
            let tj = g.mul(rj, daj);
            let e = if joint_type == JointType::Gear {
                g.add(ti, tj)
            } else {
                g.sub(ti, tj)
            };
            vec![length(e).coupling()]
        }
        // (x - x0) + radius (a - a0) = 0 with x = (O_j - O_i) . x_i the pinion centre's
        // travel along the rack and a the continuous angle of x_j from x_i about z (1).
        JointType::RackPinion => {
            let (dx, da) = travel_and_turn(b, i, j, 0);
            let g = b.graph();
            let turn = g.mul(field(Field::Radius), da);
            vec![length(g.add(dx, turn)).coupling()]
        }
        // O_i on the line (O_j, x_j): d . y_j = d . z_j = 0; z_i = +-z_j (4).
        JointType::Slot => {
            let g = b.graph();
            let d = offset(g, i, j);
            let mut r = vec![length(j.along(g, d, Y)), length(j.along(g, d, Z))];
            r.extend(aligned(g, i, j));
            r
        }
        // O_i = profile point c(s) in marker j's xy plane, s an extra unknown:
        // d . x_j = rho(s) cos s, d . y_j = rho(s) sin s, d . z_j = 0 (3 equations, one
        // unknown: 2 degrees of freedom removed).
        JointType::Cam => cam(b, i, j, profiles.j),
        // Two closed curves, c_i(s_i) in marker i's xy plane and c_j(s_j) in marker j's,
        // touch: their points coincide in marker j's plane and their tangents are
        // parallel there (3 equations, two unknowns: 1 degree of freedom removed).
        JointType::CurveContact => curve_contact(b, i, j, profiles),
        // Built from the joint's own texts (module `custom`).
        JointType::Expression => Vec::new(),
        // Distance of O_i from the line (O_j, z_j) = distance (1).
        JointType::PointLineDistance => {
            let g = b.graph();
            let r = distance_from_z_line(g, i, j);
            vec![length(g.sub(r, field(Field::Distance)))]
        }
        // z_i = +-z_j and point_line_distance (3).
        JointType::ParallelAtDistance => {
            let g = b.graph();
            let mut r = aligned(g, i, j);
            let dist = distance_from_z_line(g, i, j);
            r.push(length(g.sub(dist, field(Field::Distance))));
            r
        }
        // parallel_at_distance and O_i in the plane (O_j, z_j) (4).
        JointType::CoplanarParallelAtDistance => {
            let g = b.graph();
            let mut r = aligned(g, i, j);
            r.push(in_plane(g, i, j, zero));
            let dist = distance_from_z_line(g, i, j);
            r.push(length(g.sub(dist, field(Field::Distance))));
            r
        }
        // O_i = O_j and x_i . y_j + y_i . x_j = 0 (4).
        JointType::ConstantVelocity => {
            let g = b.graph();
            let mut r = coincident(g, i, j);
            let a = i.axes_dot(g, X, j, Y);
            let c = i.axes_dot(g, Y, j, X);
            r.push(angle(g.add(a, c)));
            r
        }
        // Same orientation: y_i . x_j = z_i . x_j = z_i . y_j = 0 (3).
        JointType::NoRotation => {
            let g = b.graph();
            vec![
                angle(i.axes_dot(g, Y, j, X)),
                angle(i.axes_dot(g, Z, j, X)),
                angle(i.axes_dot(g, Z, j, Y)),
            ]
        }
    }
}

/// The local axes (0 x, 2 z) whose dot product `a_i . a_j` tells a joint's branch (see
/// module `branch`): `z` for joints that align axes (their equations also hold at
/// `z_i = -z_j`), and `x` as well for those that also lock the twist. A sign change
/// between two states is a flip to the mirror pose.
pub(crate) fn branch_axes(joint_type: JointType) -> &'static [usize] {
    let aligns = matches!(
        joint_type,
        JointType::Fixed
            | JointType::Revolute
            | JointType::Cylindrical
            | JointType::Slider
            | JointType::Planar
            | JointType::Screw
            | JointType::Parallel
            | JointType::Slot
            | JointType::ParallelAtDistance
            | JointType::CoplanarParallelAtDistance
    );
    let locks_twist = matches!(joint_type, JointType::Fixed | JointType::Slider);
    match (aligns, locks_twist) {
        (true, true) => &[2, 0],
        (true, false) => &[2],
        _ => &[],
    }
}

/// `2 pi (s - s0) - pitch (a - a0)`: `s = (O_j - O_i) . z_i` the advance of `O_j` along
/// marker i's axis, `a` the continuous angle of `x_j` from `x_i` about `z_i`.
fn screw_relation(b: &mut dyn JointBuilder, i: &Frame, j: &Frame, pitch: ExprId) -> Residual {
    let (ds, da) = travel_and_turn(b, i, j, 2);
    let g = b.graph();
    let advance = g.scale(ds, 2.0 * std::f64::consts::PI);
    let turn = g.mul(pitch, da);
    length(g.sub(advance, turn)).coupling()
}

/// The changes since load of `(O_j - O_i) . axis_i` (marker i's axis `axis`: 0 for x, 2
/// for z) and of the continuous angle of `x_j` from `x_i` about `z_i`: what rack-and-pinion
/// and screw couplings relate.
fn travel_and_turn(
    b: &mut dyn JointBuilder,
    i: &Frame,
    j: &Frame,
    axis: usize,
) -> (ExprId, ExprId) {
    let raw = {
        let g = b.graph();
        let s = j.axes_dot(g, X, i, Y);
        let c = j.axes_dot(g, X, i, X);
        g.atan2(s, c)
    };
    let a = b.continuous_angle(AngleRequest { raw, target: None });
    let a0 = b.load_value(a);
    let travel = {
        let g = b.graph();
        let d = offset(g, j, i);
        i.along(g, d, axis)
    };
    let t0 = b.load_value(travel);
    let g = b.graph();
    (g.sub(travel, t0), g.sub(a, a0))
}

/// Continuous angles of the line of centres in each gear's plane.
fn centre_line_angles(b: &mut dyn JointBuilder, i: &Frame, j: &Frame) -> (ExprId, ExprId) {
    let (raw_i, raw_j) = {
        let g = b.graph();
        let dij = offset(g, j, i);
        let dji = offset(g, i, j);
        let yi = i.along(g, dij, Y);
        let xi = i.along(g, dij, X);
        let yj = j.along(g, dji, Y);
        let xj = j.along(g, dji, X);
        (g.atan2(yi, xi), g.atan2(yj, xj))
    };
    let ai = b.continuous_angle(AngleRequest {
        raw: raw_i,
        target: None,
    });
    let aj = b.continuous_angle(AngleRequest {
        raw: raw_j,
        target: None,
    });
    (ai, aj)
}
