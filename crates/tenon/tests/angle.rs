//! The angle joint reaches its angle from the starting poses CAD hands it: axes
//! parallel, opposite, or anywhere between, for acute, right and obtuse targets. The
//! solved angle is measured from the placements, not from Tenon's own equations.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::Mechanism;

/// Ground plus one free box; `start` tilts the box's z axis by that many degrees about
/// x (and yaws it a little so the tilt plane is not a coordinate plane).
fn assembly(target: f64, start: f64) -> String {
    let half = start.to_radians() / 2.0;
    let (s, c) = half.sin_cos();
    format!(
        r#"{{
  "format": "tenon-assembly", "version": 1,
  "parts": [
    {{ "id": "ground", "grounded": true, "markers": {{ "m": {{}} }} }},
    {{ "id": "box", "placement": {{ "position": [10, 20, 30],
        "rotation": {{ "quaternion": [{c}, {s}, 0, 0] }} }},
      "markers": {{ "m": {{ "rotation": {{ "axis": [0, 0, 1], "angle": 25 }} }} }} }}
  ],
  "joints": [ {{ "id": "tilt", "type": "angle", "i": {{ "part": "box", "marker": "m" }}, "j": {{ "part": "ground", "marker": "m" }}, "angle": {target} }} ]
}}"#
    )
}

/// Angle between the box's z axis (the marker's z is the part's z) and the world z.
fn solved_angle(m: &Mechanism) -> f64 {
    let q = m.placement("box").unwrap().quaternion;
    // z component of R(q) e_z: 1 - 2 (x^2 + y^2).
    let zz = 1.0 - 2.0 * (q[1] * q[1] + q[2] * q[2]);
    zz.clamp(-1.0, 1.0).acos().to_degrees()
}

#[test]
fn angle_joint_reaches_its_angle_from_parallel_opposite_and_generic_starts() {
    for target in [10.0, 45.0, 90.0, 135.0, 170.0] {
        for start in [0.0, 180.0, 30.0, 100.0, 179.0, 1e-9] {
            let mut m = Mechanism::from_json(&assembly(target, start), None).unwrap();
            let report = m.solve().unwrap().clone();
            assert!(
                report.converged,
                "target {target}, start {start}: residual {}",
                report.max_residual
            );
            let got = solved_angle(&m);
            assert!(
                (got - target).abs() < 1e-7,
                "target {target}, start {start}: solved at {got} degrees"
            );
            assert_eq!(
                report.clusters.iter().map(|c| c.dof).sum::<Option<usize>>(),
                Some(5),
                "target {target}, start {start}"
            );
        }
    }
}

#[test]
fn angle_joint_already_at_its_angle_does_not_move() {
    let mut m = Mechanism::from_json(&assembly(40.0, 40.0), None).unwrap();
    let before = m.placement("box").unwrap();
    assert!(m.solve().unwrap().converged);
    let after = m.placement("box").unwrap();
    for k in 0..4 {
        assert!((before.quaternion[k] - after.quaternion[k]).abs() < 1e-12);
    }
}

#[test]
fn a_zero_angle_is_a_parallel_joint() {
    let mut m = Mechanism::from_json(&assembly(0.0, 30.0), None).unwrap();
    let report = m.solve().unwrap().clone();
    assert!(report.converged);
    assert!(solved_angle(&m) < 1e-7);
    assert_eq!(
        report.clusters.iter().map(|c| c.dof).sum::<Option<usize>>(),
        Some(4)
    );
}
