//! Joint limits are inequalities: a solve that would leave a coordinate beyond its limit
//! holds it at the bound and says so; a limit the joints cannot respect is a failure
//! that names it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::{LimitSide, Mechanism};

fn slider_at(z: f64) -> String {
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1,
      "parts": [ {{ "id": "ground", "grounded": true, "markers": {{ "m": {{}} }} }},
                 {{ "id": "block", "placement": {{ "position": [0.5, -0.25, {z}] }}, "markers": {{ "m": {{}} }} }} ],
      "joints": [ {{ "id": "rail", "type": "slider", "i": {{ "part": "block", "marker": "m" }},
                    "j": {{ "part": "ground", "marker": "m" }}, "limits": {{ "distance": [0, 50] }} }} ] }}"#
    )
}

fn hinge(start_deg: f64, drive: Option<f64>) -> String {
    let drive = drive.map_or(String::new(), |a| format!(r#", "angle": {a}"#));
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1,
      "parts": [ {{ "id": "ground", "grounded": true, "markers": {{ "m": {{}} }} }},
                 {{ "id": "door", "placement": {{ "rotation": {{ "axis": [0, 0, 1], "angle": {start_deg} }} }},
                    "markers": {{ "m": {{}}, "edge": {{ "position": [80, 0, 0] }} }} }} ],
      "joints": [ {{ "id": "hinge", "type": "revolute", "i": {{ "part": "door", "marker": "m" }},
                    "j": {{ "part": "ground", "marker": "m" }}, "limits": {{ "angle": [0, 90] }}{drive} }} ] }}"#
    )
}

fn door_angle(m: &Mechanism) -> f64 {
    let q = m.placement("door").unwrap().quaternion;
    2.0 * q[3].atan2(q[0]).to_degrees()
}

#[test]
fn a_slider_beyond_its_upper_limit_stops_at_it() {
    let mut m = Mechanism::from_json(&slider_at(60.0), None).unwrap();
    let report = m.solve().unwrap().clone();
    assert!(report.converged, "{report:?}");
    let p = m.placement("block").unwrap().position;
    assert!((p[2] - 50.0).abs() < 1e-9, "z = {}", p[2]);
    // The rail's line is the ground marker's z axis, so the block also comes onto it.
    assert!(p[0].abs() < 1e-9 && p[1].abs() < 1e-9);
    let limits: Vec<_> = report
        .clusters
        .iter()
        .flat_map(|c| c.limits.clone())
        .collect();
    assert_eq!(limits.len(), 1);
    assert_eq!(limits[0].side, LimitSide::Max);
    assert!(limits[0].excess <= 1e-10);
    // Degrees of freedom count the joint, not the limit.
    assert_eq!(report.clusters[0].dof, Some(1));
}

#[test]
fn a_slider_below_its_lower_limit_stops_at_it_and_within_limits_nothing_binds() {
    let mut m = Mechanism::from_json(&slider_at(-10.0), None).unwrap();
    let report = m.solve().unwrap().clone();
    assert!(report.converged);
    assert!(m.placement("block").unwrap().position[2].abs() < 1e-9);
    let limits: Vec<_> = report
        .clusters
        .iter()
        .flat_map(|c| c.limits.clone())
        .collect();
    assert_eq!(limits.len(), 1);
    assert_eq!(limits[0].side, LimitSide::Min);

    let mut m = Mechanism::from_json(&slider_at(20.0), None).unwrap();
    let report = m.solve().unwrap().clone();
    assert!(report.converged);
    assert!((m.placement("block").unwrap().position[2] - 20.0).abs() < 1e-9);
    assert!(report.clusters.iter().all(|c| c.limits.is_empty()));
}

#[test]
fn a_door_turned_past_its_stop_comes_back_to_it() {
    for (start, expected, side) in [(120.0, 90.0, LimitSide::Max), (-25.0, 0.0, LimitSide::Min)] {
        let mut m = Mechanism::from_json(&hinge(start, None), None).unwrap();
        let report = m.solve().unwrap().clone();
        assert!(report.converged, "start {start}: {report:?}");
        assert!(
            (door_angle(&m) - expected).abs() < 1e-7,
            "start {start}: ended at {}",
            door_angle(&m)
        );
        let limits: Vec<_> = report
            .clusters
            .iter()
            .flat_map(|c| c.limits.clone())
            .collect();
        assert_eq!(limits.len(), 1);
        assert_eq!(limits[0].side, side);
    }
}

#[test]
fn a_drive_beyond_the_limit_is_a_failure_that_names_the_limit() {
    let mut m = Mechanism::from_json(&hinge(30.0, Some(120.0)), None).unwrap();
    let before = m.placement("door").unwrap();
    let report = m.solve().unwrap().clone();
    assert!(!report.converged);
    let limits: Vec<_> = report
        .clusters
        .iter()
        .flat_map(|c| c.limits.clone())
        .collect();
    assert_eq!(limits.len(), 1);
    assert_eq!(limits[0].side, LimitSide::Max);
    assert!(limits[0].excess > 0.01, "{limits:?}");
    // A failed solve leaves the input untouched.
    assert_eq!(m.placement("door").unwrap(), before);
}
