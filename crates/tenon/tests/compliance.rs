//! Compliant joints in statics: where joints disagree the compliant ones give way (the
//! rigid ones hold), by the least squares their compliances weigh; where they agree,
//! they hold like any joint; a conflict between rigid joints stays a conflict.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::Mechanism;

/// A carriage on a rail along x, held by `a` (distance 100 from the origin) and `b`
/// (distance `b_length` from an anchor at x = 210), each with its compliance (`None`:
/// rigid).
fn carriage(a: Option<f64>, b: Option<f64>, b_length: f64) -> Mechanism {
    let compliance =
        |c: Option<f64>| c.map_or(String::new(), |c| format!(r#", "compliance": {c}"#));
    let text = format!(
        r#"{{ "format": "tenon-assembly", "version": 1,
          "units": {{ "length": "mm", "angle": "deg" }},
          "parts": [
            {{ "id": "ground", "grounded": true, "markers": {{
                "origin": {{}}, "anchor": {{ "position": [210, 0, 0] }},
                "rail": {{ "rotation": {{ "axis": [0, 1, 0], "angle": 90 }} }} }} }},
            {{ "id": "carriage", "placement": {{ "position": [105, 0, 0] }}, "markers": {{
                "c": {{}}, "rail": {{ "rotation": {{ "axis": [0, 1, 0], "angle": 90 }} }} }} }} ],
          "joints": [
            {{ "id": "rail", "type": "slider", "i": {{ "part": "carriage", "marker": "rail" }},
              "j": {{ "part": "ground", "marker": "rail" }} }},
            {{ "id": "a", "type": "distance", "distance": 100{},
              "i": {{ "part": "carriage", "marker": "c" }}, "j": {{ "part": "ground", "marker": "origin" }} }},
            {{ "id": "b", "type": "distance", "distance": {b_length}{},
              "i": {{ "part": "carriage", "marker": "c" }}, "j": {{ "part": "ground", "marker": "anchor" }} }} ] }}"#,
        compliance(a),
        compliance(b)
    );
    Mechanism::from_json(&text, Some("carriage.json")).unwrap()
}

fn x_of(m: &Mechanism) -> f64 {
    m.placement("carriage").unwrap().position[0]
}

fn yield_of(m: &Mechanism, id: &str) -> Option<f64> {
    let report = m.report().unwrap();
    report
        .yielded
        .iter()
        .find(|y| m.joint_id(y.joint) == Some(id))
        .map(|y| y.length)
}

#[test]
fn a_compliant_joint_gives_way_to_a_rigid_one() {
    let mut m = carriage(None, Some(0.01), 100.0);
    let report = m.solve().unwrap();
    assert!(report.converged, "{report:?}");
    assert!((x_of(&m) - 100.0).abs() < 1e-9, "x = {}", x_of(&m));
    assert!((yield_of(&m, "b").unwrap() - 10.0).abs() < 1e-9);
    assert_eq!(yield_of(&m, "a"), None);
    assert_eq!(report.yielded.len(), 1);
    assert!(report.max_residual < 1e-9, "{}", report.max_residual);
    assert_eq!(report.clusters[0].status, tenon::Status::OverConstrained);
}

#[test]
fn two_compliant_joints_share_the_disagreement_by_their_compliances() {
    // Springs of compliance 0.01 and 0.03 pulling to 100 and 110: the carriage rests
    // where the forces balance, x = (100 / 0.01 + 110 / 0.03) / (1 / 0.01 + 1 / 0.03).
    let mut m = carriage(Some(0.01), Some(0.03), 100.0);
    let report = m.solve().unwrap();
    assert!(report.converged, "{report:?}");
    let x = (100.0 / 0.01 + 110.0 / 0.03) / (1.0 / 0.01 + 1.0 / 0.03);
    assert!((x_of(&m) - x).abs() < 1e-9, "x = {} for {x}", x_of(&m));
    assert!((yield_of(&m, "a").unwrap() - 2.5).abs() < 1e-9);
    assert!((yield_of(&m, "b").unwrap() - 7.5).abs() < 1e-9);
}

#[test]
fn compliant_joints_that_agree_hold_exactly() {
    let mut m = carriage(None, Some(0.01), 110.0);
    let report = m.solve().unwrap();
    assert!(report.converged);
    assert!(report.yielded.is_empty());
    assert!((x_of(&m) - 100.0).abs() < 1e-9);
    // Two distances fix the one freedom the rail leaves: repeated, consistent.
    assert_eq!(report.clusters[0].status, tenon::Status::OverConstrained);
    assert!(report.max_residual < 1e-9);
}

#[test]
fn rigid_joints_that_disagree_still_conflict() {
    let mut m = carriage(None, None, 100.0);
    let report = m.solve().unwrap();
    assert!(!report.converged);
    assert!(report.yielded.is_empty());
    // The failed solve left the carriage where it was.
    assert!((x_of(&m) - 105.0).abs() < 1e-12);
}

/// The carriage on its rail, held only by a compliant distance joint to the origin
/// (100 mm, `compliance` mm/N) and pushed along the rail by `push` N.
fn pushed(compliance: &str, push: f64) -> Mechanism {
    let text = format!(
        r#"{{ "format": "tenon-assembly", "version": 1,
          "units": {{ "length": "mm", "angle": "deg" }},
          "parts": [
            {{ "id": "ground", "grounded": true, "markers": {{
                "origin": {{}}, "rail": {{ "rotation": {{ "axis": [0, 1, 0], "angle": 90 }} }} }} }},
            {{ "id": "carriage", "placement": {{ "position": [100, 0, 0] }}, "markers": {{
                "c": {{}}, "rail": {{ "rotation": {{ "axis": [0, 1, 0], "angle": 90 }} }} }} }} ],
          "joints": [
            {{ "id": "rail", "type": "slider", "i": {{ "part": "carriage", "marker": "rail" }},
              "j": {{ "part": "ground", "marker": "rail" }} }},
            {{ "id": "strap", "type": "distance", "distance": 100{compliance},
              "i": {{ "part": "carriage", "marker": "c" }}, "j": {{ "part": "ground", "marker": "origin" }} }} ],
          "forces": {{ "loads": [ {{ "part": "carriage", "force": [{push}, 0, 0], "torque": [0, 0, 0] }} ] }} }}"#
    );
    Mechanism::from_json(&text, Some("pushed.json")).unwrap()
}

#[test]
fn a_compliant_joint_under_a_load_deflects_by_load_times_compliance() {
    for (push, compliance) in [(50.0, 0.002), (-30.0, 0.05), (1e4, 1e-7)] {
        let mut m = pushed(&format!(r#", "compliance": {compliance}"#), push);
        // A plain solve does not read forces: the strap holds.
        m.solve().unwrap();
        assert!((x_of(&m) - 100.0).abs() < 1e-12);
        let report = m.equilibrium().unwrap();
        assert!(report.converged);
        let stretch = push * compliance;
        assert!(
            (x_of(&m) - (100.0 + stretch)).abs() < 1e-9,
            "push {push}: x = {} for {}",
            x_of(&m),
            100.0 + stretch
        );
        assert!((yield_of(&m, "strap").unwrap() - stretch.abs()).abs() < 1e-9);
    }
}

#[test]
fn rigid_joints_take_a_load_without_moving() {
    let mut m = pushed("", 50.0);
    let report = m.equilibrium().unwrap();
    assert!(report.converged);
    assert!(report.yielded.is_empty());
    assert!((x_of(&m) - 100.0).abs() < 1e-12);
}

#[test]
fn a_load_along_a_free_motion_has_no_equilibrium() {
    // Without the strap the carriage slides freely along the rail it is pushed along.
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "parts": [
        { "id": "ground", "grounded": true, "markers": { "rail": {} } },
        { "id": "carriage", "placement": { "position": [0, 0, 100] }, "markers": { "rail": {} } } ],
      "joints": [ { "id": "rail", "type": "slider", "i": { "part": "carriage", "marker": "rail" },
                    "j": { "part": "ground", "marker": "rail" } } ],
      "forces": { "loads": [ { "part": "carriage", "force": [0, 0, 5], "torque": [0, 0, 0] } ] } }"#;
    let mut m = Mechanism::from_json(text, None).unwrap();
    let err = m.equilibrium().unwrap_err();
    assert!(matches!(err, tenon::Error::Equilibrium(_)), "{err}");
    assert!(err.to_string().contains("no static equilibrium"), "{err}");
    // Unchanged.
    assert!((m.placement("carriage").unwrap().position[2] - 100.0).abs() < 1e-12);
    // Pushed across the rail instead, the rail takes it.
    let across = text.replace("[0, 0, 5]", "[5, 0, 0]");
    let mut m = Mechanism::from_json(&across, None).unwrap();
    assert!(m.equilibrium().unwrap().converged);
    assert!((m.placement("carriage").unwrap().position[2] - 100.0).abs() < 1e-9);
}
