//! Numbers at the edges of double precision keep their meaning: a direction written
//! `[1e200, 0, 0]` or `[1e-200, 0, 0]` is the x axis, a quaternion `[1e300, 0, 0, 0]` is
//! the identity (normalised without overflow or underflow), and the solve agrees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::Mechanism;

fn fixed_to_turned_frame(axis: &str, quaternion: &str) -> String {
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1,
  "parts": [
    {{ "id": "g", "grounded": true, "placement": {{ "rotation": {{ "quaternion": {quaternion} }} }} }},
    {{ "id": "b", "placement": {{ "position": [1, 2, 3] }} }}
  ],
  "joints": [
    {{ "id": "f", "type": "fixed", "i": {{ "part": "b" }},
      "j": {{ "part": "g", "rotation": {{ "axis": {axis}, "angle": 90 }} }} }}
  ] }}"#
    )
}

#[test]
fn huge_and_tiny_directions_are_normalised_without_losing_them() {
    let half = std::f64::consts::FRAC_1_SQRT_2;
    for axis in ["[1e200, 0, 0]", "[1e-200, 0, 0]", "[3, 0, 0]"] {
        for quaternion in ["[1e300, 0, 0, 0]", "[1e-300, 0, 0, 0]", "[2, 0, 0, 0]"] {
            let text = fixed_to_turned_frame(axis, quaternion);
            let mut m = Mechanism::from_json(&text, Some("extreme.json")).unwrap();
            let report = m.solve().unwrap();
            assert!(report.converged, "{axis} {quaternion}");
            let g = m.placement("g").unwrap();
            assert_eq!(g.quaternion, [1.0, 0.0, 0.0, 0.0], "{quaternion}");
            let b = m.placement("b").unwrap();
            let want = [half, half, 0.0, 0.0];
            for (got, want) in b.quaternion.iter().zip(want) {
                assert!(
                    (got - want).abs() < 1e-9,
                    "{axis} {quaternion}: {:?}",
                    b.quaternion
                );
            }
            assert!(
                b.position.iter().all(|x| x.abs() < 1e-9),
                "{axis}: {:?}",
                b.position
            );
            // Written out and read back: the same placements.
            let again = Mechanism::from_json(&m.to_json(), None).unwrap();
            assert_eq!(again.placement("g").unwrap().quaternion, g.quaternion);
        }
    }
}

#[test]
fn a_zero_direction_is_still_refused() {
    for (axis, quaternion, message) in [
        ("[0, 0, 0]", "[1, 0, 0, 0]", "the rotation axis is zero"),
        ("[1, 0, 0]", "[0, 0, 0, 0]", "the quaternion is zero"),
    ] {
        let text = fixed_to_turned_frame(axis, quaternion);
        let err = Mechanism::from_json(&text, Some("zero.json")).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }
}

#[path = "common/generate.rs"]
mod generate;

/// A cam profile of thousands of formula points (issue 12: 4,096 took 260 s) solves,
/// with the follower where the profile says; its cost is timed by the `cam_points`
/// benchmark.
#[test]
fn a_profile_of_thousands_of_formula_points_solves_where_the_profile_says() {
    for n in [8, 4096] {
        let mut m = Mechanism::from_json(&generate::expression_cam(n), Some("cam.json")).unwrap();
        let report = m.solve().unwrap();
        assert!(report.converged, "{n} points");
        let y = m.placement("follower").unwrap().position[1];
        assert!((y - 48.0).abs() < 1e-9, "{n} points: follower at {y}");
        // A parameter change moves the whole profile without a rebuild.
        m.set_parameter("R", 50.0).unwrap();
        assert!(m.solve().unwrap().converged);
        let y = m.placement("follower").unwrap().position[1];
        assert!(
            (y - 58.0).abs() < 1e-9,
            "{n} points, R = 50: follower at {y}"
        );
    }
}
