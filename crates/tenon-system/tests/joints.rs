//! Every joint type at generic and awkward poses: residuals vanish at a pose built to
//! satisfy the joint and not when it is violated; the rank of the joint's tangent
//! Jacobian equals the degrees of freedom it removes (SVD); the tangent Jacobian matches
//! central differences of the exponential-map update.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

use nalgebra::{DMatrix, Isometry3, Translation3, UnitQuaternion, Vector3};
use tenon_model::{
    Assembly, CamProfile, Field, Joint, JointType, Limits, MarkerRef, MarkerSpec, Part, Placement,
    Scalar, Units,
};
use tenon_system::System;

fn placement(iso: &Isometry3<f64>) -> Placement {
    let q = iso.rotation.quaternion();
    Placement::from_numbers(
        [iso.translation.x, iso.translation.y, iso.translation.z],
        [q.w, q.i, q.j, q.k],
    )
}

fn rot(axis: [f64; 3], angle: f64) -> UnitQuaternion<f64> {
    UnitQuaternion::from_axis_angle(&nalgebra::Unit::new_normalize(Vector3::from(axis)), angle)
}

fn iso(t: [f64; 3], r: UnitQuaternion<f64>) -> Isometry3<f64> {
    Isometry3::from_parts(Translation3::new(t[0], t[1], t[2]), r)
}

/// A pose family: where marker j sits in the world, where marker i sits on its part.
struct Poses {
    name: &'static str,
    ground_marker: Isometry3<f64>,
    part_marker: Isometry3<f64>,
}

fn poses() -> Vec<Poses> {
    vec![
        Poses {
            name: "generic",
            ground_marker: iso([0.3, -1.2, 0.7], rot([0.3, -0.5, 0.8], 0.9)),
            part_marker: iso([0.4, 0.25, -0.6], rot([-0.7, 0.2, 0.4], 1.3)),
        },
        Poses {
            name: "axes along coordinate axes",
            ground_marker: iso([0.0, 0.0, 0.0], UnitQuaternion::identity()),
            part_marker: iso([1.0, 0.0, 0.0], UnitQuaternion::identity()),
        },
        Poses {
            name: "90 degree turns",
            ground_marker: iso([0.0, 2.0, 0.0], rot([1.0, 0.0, 0.0], FRAC_PI_2)),
            part_marker: iso([0.0, 0.0, 1.5], rot([0.0, 1.0, 0.0], FRAC_PI_2)),
        },
        Poses {
            name: "180 degree turns",
            ground_marker: iso([-1.0, 0.5, 0.25], rot([0.0, 0.0, 1.0], PI)),
            part_marker: iso([0.5, -0.5, 0.0], rot([1.0, 0.0, 0.0], PI)),
        },
    ]
}

/// A relative pose of marker i in marker j's frame that satisfies the joint, and the
/// joint's fields.
fn satisfying(t: JointType) -> (Isometry3<f64>, Vec<(Field, f64)>, Option<CamProfile>) {
    let twist = |a: f64| rot([0.0, 0.0, 1.0], a);
    let tilt = |a: f64, b: f64, c: f64| twist(a) * rot([1.0, 0.0, 0.0], b) * twist(c);
    let any = tilt(0.4, 0.8, -0.3);
    match t {
        JointType::Fixed => (Isometry3::identity(), vec![], None),
        JointType::Revolute => (iso([0.0; 3], twist(0.7)), vec![], None),
        JointType::Cylindrical => (iso([0.0, 0.0, 0.8], twist(-1.1)), vec![], None),
        JointType::Slider => (iso([0.0, 0.0, -0.6], twist(0.0)), vec![], None),
        JointType::Ball => (iso([0.0; 3], any), vec![], None),
        JointType::Planar => (
            iso([0.7, -0.4, 0.25], twist(2.0)),
            vec![(Field::Offset, 0.25)],
            None,
        ),
        JointType::Universal => (iso([0.0; 3], tilt(0.5, FRAC_PI_2, 1.2)), vec![], None),
        JointType::Screw => (
            iso([0.0, 0.0, 0.3], twist(0.9)),
            vec![(Field::Pitch, 0.5)],
            None,
        ),
        JointType::ScrewCoupling => (iso([0.2, 0.1, 0.3], any), vec![(Field::Pitch, 0.5)], None),
        JointType::PointOnLine => (iso([0.0, 0.0, 1.4], any), vec![], None),
        JointType::PointInPlane => (
            iso([0.6, 0.9, -0.2], any),
            vec![(Field::Offset, -0.2)],
            None,
        ),
        JointType::LineInPlane => (
            iso([0.6, 0.9, 0.1], tilt(0.3, FRAC_PI_2, -0.7)),
            vec![(Field::Offset, 0.1)],
            None,
        ),
        JointType::Parallel => (iso([0.3, -0.8, 0.5], twist(1.7)), vec![], None),
        JointType::Perpendicular => (
            iso([0.3, -0.8, 0.5], tilt(0.3, FRAC_PI_2, 0.6)),
            vec![],
            None,
        ),
        JointType::Angle => (
            iso([0.3, 0.2, 0.1], tilt(0.3, 0.6, 0.2)),
            vec![(Field::Angle, 0.6f64.to_degrees())],
            None,
        ),
        JointType::Distance => (
            iso([0.6, -0.8, 0.0], any),
            vec![(Field::Distance, 1.0)],
            None,
        ),
        JointType::Gear | JointType::Belt => (
            iso([1.5, 0.4, 0.0], twist(0.3)),
            vec![(Field::RadiusI, 0.6), (Field::RadiusJ, 0.9)],
            None,
        ),
        JointType::RackPinion => (
            iso([0.5, 0.7, 0.0], twist(-0.4)),
            vec![(Field::Radius, 0.3)],
            None,
        ),
        JointType::Slot => (iso([0.9, 0.0, 0.0], twist(0.5)), vec![], None),
        JointType::Cam => (
            iso([0.8 * 0.6f64.cos(), 0.8 * 0.6f64.sin(), 0.0], any),
            vec![],
            Some(CamProfile::Circle {
                radius: Scalar::Number(0.8),
            }),
        ),
        JointType::PointLineDistance => (
            iso([0.6, 0.8, 0.3], any),
            vec![(Field::Distance, 1.0)],
            None,
        ),
        JointType::ParallelAtDistance => (
            iso([0.6, 0.8, 0.3], twist(0.4)),
            vec![(Field::Distance, 1.0)],
            None,
        ),
        JointType::CoplanarParallelAtDistance => (
            iso([0.6, 0.8, 0.0], twist(0.4)),
            vec![(Field::Distance, 1.0)],
            None,
        ),
        JointType::ConstantVelocity => {
            // x_i . y_j + y_i . x_j = 0 holds for a turn about z followed by a tilt about
            // the bisecting axis; test a pure symmetric pose: rotation about x by 0.7.
            (iso([0.0; 3], rot([1.0, 0.0, 0.0], 0.7)), vec![], None)
        }
        JointType::NoRotation => (
            iso([0.4, -0.2, 1.1], UnitQuaternion::identity()),
            vec![],
            None,
        ),
        // Marker i at (0.3, -0.2, 0.9) in j, turned 40 degrees about z_j and tilted 50
        // about the turned x: what `EXPRESSION_RESIDUALS` hold.
        JointType::Expression => (
            iso(
                [0.3, -0.2, 0.9],
                twist(40f64.to_radians()) * rot([1.0, 0.0, 0.0], 50f64.to_radians()),
            ),
            vec![],
            None,
        ),
        // Circle of radius 0.8 on j touching, at s_j = pi/4, a circle of radius 0.5
        // through 8 points on i at its point 5 (s_i = 5 pi / 4): the centres are 1.3
        // apart along 45 degrees. Both contact points are samples of the start search.
        JointType::CurveContact => {
            let c = 1.3 * FRAC_PI_4.cos();
            (
                iso([c, c, 0.0], UnitQuaternion::identity()),
                vec![],
                Some(CamProfile::Circle {
                    radius: Scalar::Number(0.8),
                }),
            )
        }
    }
}

/// An expression joint's residuals (degrees): every measure, five independent rows.
const EXPRESSION_RESIDUALS: [&str; 5] = [
    "dx - 0.3",
    "2 * (dy + 0.2)",
    "distance^2 - 0.94 + 0 * dz",
    "angle - 40",
    "tilt / 50 - 1",
];

/// The profile on marker i (curve contact only): 8 points on a circle of radius 0.5.
fn profile_i(t: JointType) -> Option<CamProfile> {
    (t == JointType::CurveContact).then(|| {
        CamProfile::Points(
            (0..8)
                .map(|k| {
                    let a = k as f64 * PI / 4.0;
                    [Scalar::Number(0.5 * a.cos()), Scalar::Number(0.5 * a.sin())]
                })
                .collect(),
        )
    })
}

/// A grounded part with marker j and a free part with marker i, placed so that marker
/// i sits at `relative` in marker j's frame.
fn two_parts(t: JointType, p: &Poses, relative: &Isometry3<f64>) -> Assembly {
    let (_, fields, profile) = satisfying(t);
    let units = Units {
        angle: tenon_model::AngleUnit::Deg,
        ..Units::default()
    };
    let mut a = Assembly::new("joint test", units);
    let mut ground = Part::new("ground", Placement::default());
    ground.grounded = true;
    ground
        .markers
        .push(("j".into(), placement(&p.ground_marker)));
    let g = a.add_part(ground).unwrap();
    // world_i = ground_marker * relative = part_pose * part_marker.
    let world_i = p.ground_marker * relative;
    let part_pose = world_i * p.part_marker.inverse();
    let mut part = Part::new("part", placement(&part_pose));
    part.markers.push(("i".into(), placement(&p.part_marker)));
    let k = a.add_part(part).unwrap();
    a.add_joint(Joint {
        id: "joint".into(),
        joint_type: t,
        i: MarkerRef {
            part: k,
            marker: MarkerSpec::Named("i".into()),
        },
        j: MarkerRef {
            part: g,
            marker: MarkerSpec::Named("j".into()),
        },
        suppressed: false,
        fields: fields
            .into_iter()
            .map(|(f, v)| (f, Scalar::Number(v)))
            .collect(),
        profile,
        profile_i: profile_i(t),
        limits: Limits::default(),
        rate: Default::default(),
        extra: None,
        residuals: if t == JointType::Expression {
            EXPRESSION_RESIDUALS.iter().map(|r| r.to_string()).collect()
        } else {
            Vec::new()
        },
        compliance: None,
    })
    .unwrap();
    a
}

fn rank(m: &DMatrix<f64>) -> usize {
    let svd = m.clone().svd(false, false);
    let max = svd.singular_values.iter().fold(0.0f64, |a, &b| a.max(b));
    svd.singular_values
        .iter()
        .filter(|&&s| s > 1e-9 * max.max(1.0))
        .count()
}

fn check(t: JointType, p: &Poses) {
    let (relative, _, _) = satisfying(t);
    let a = two_parts(t, p, &relative);
    let mut system = System::build(&a).unwrap();
    let compiled = system.compile().unwrap();
    let state = system.initial_state();
    let params = system.initial_parameters();
    let (r, jac) = system.tangent_jacobian(&compiled, &state, &params).unwrap();
    let equations = r.len();
    let extra = system.extra_unknowns().len();
    let removed = match t {
        JointType::Expression => EXPRESSION_RESIDUALS.len(),
        t => t.dof_removed(),
    };
    assert_eq!(
        equations - extra,
        removed,
        "{t:?}: equations minus extra unknowns = degrees of freedom removed"
    );
    let max_r = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(
        max_r < 1e-12,
        "{t:?} ({}): residual {max_r} at a satisfying pose",
        p.name
    );
    let dense = DMatrix::from_row_slice(jac.rows, jac.columns, &jac.to_dense());
    assert_eq!(
        rank(&dense),
        equations,
        "{t:?} ({}): rank of the tangent Jacobian",
        p.name
    );

    // Central differences of the exponential-map update, column by column.
    let h = 1e-6;
    for col in 0..jac.columns {
        let mut delta = vec![0.0; jac.columns];
        delta[col] = h;
        let mut plus = state.clone();
        system.retract(&mut plus, &delta).unwrap();
        delta[col] = -h;
        let mut minus = state.clone();
        system.retract(&mut minus, &delta).unwrap();
        let rp = system.residuals(&compiled, &plus, &params).unwrap();
        let rm = system.residuals(&compiled, &minus, &params).unwrap();
        for row in 0..equations {
            let fd = (rp[row] - rm[row]) / (2.0 * h);
            let an = dense[(row, col)];
            assert!(
                (fd - an).abs() <= 1e-6 * an.abs().max(1.0),
                "{t:?} ({}): J[{row},{col}] = {an}, finite difference {fd}",
                p.name
            );
        }
    }

    // Violated: a generic tangent step moves off the joint.
    let mut moved = state.clone();
    let step: Vec<f64> = (0..jac.columns)
        .map(|k| 0.05 * (1.0 + k as f64 * 0.37).sin())
        .collect();
    system.retract(&mut moved, &step).unwrap();
    let rv = system.residuals(&compiled, &moved, &params).unwrap();
    let violated = rv.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(
        violated > 1e-4,
        "{t:?} ({}): residual {violated} after a generic step",
        p.name
    );
}

#[test]
fn every_joint_type_at_every_pose_family() {
    for t in JointType::ALL {
        for p in poses() {
            check(t, &p);
        }
    }
}
