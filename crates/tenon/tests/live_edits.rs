//! A CAD host edits a live mechanism between solves. After each change, the degrees of
//! freedom and the placements equal those of a mechanism loaded fresh from the
//! equivalent file (the same edit made in the JSON text), and the least-change choice
//! does not depend on whether a marker's position is written as a number or an
//! expression.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use tenon::{
    Assembly, Joint, JointType, Limits, MarkerRef, MarkerSpec, Mechanism, Parameter, Part,
    Placement, Pose, Rotation, Scalar, Units,
};

fn fixture() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/four-bar.json");
    std::fs::read_to_string(path).unwrap()
}

/// `m` solved against a fresh mechanism from `file` solved: same DOF, same placements.
fn same_as_fresh(m: &mut Mechanism, file: &Value, what: &str) {
    let live = m.solve().unwrap();
    let mut fresh = Mechanism::from_json(&file.to_string(), Some("fresh.json")).unwrap();
    let again = fresh.solve().unwrap();
    assert!(live.converged && again.converged, "{what}");
    assert_eq!(live.dof, again.dof, "{what}: DOF");
    let ids: Vec<String> = fresh.model().parts().map(|(_, p)| p.id.clone()).collect();
    let live_ids: Vec<String> = m.model().parts().map(|(_, p)| p.id.clone()).collect();
    assert_eq!(ids, live_ids, "{what}: parts");
    for id in ids {
        let (a, b) = (m.placement(&id).unwrap(), fresh.placement(&id).unwrap());
        for k in 0..3 {
            assert!((a.position[k] - b.position[k]).abs() < 1e-9, "{what}: {id}");
        }
        for k in 0..4 {
            assert!(
                (a.quaternion[k] - b.quaternion[k]).abs() < 1e-9,
                "{what}: {id}"
            );
        }
    }
}

/// The live mechanism's current state as a JSON value (the file an edit starts from).
fn current(m: &Mechanism) -> Value {
    serde_json::from_str(&m.to_json()).unwrap()
}

fn joint_index(file: &Value, id: &str) -> usize {
    file["joints"]
        .as_array()
        .unwrap()
        .iter()
        .position(|j| j["id"] == id)
        .unwrap()
}

#[test]
fn edits_on_a_live_mechanism_match_the_same_edits_made_in_the_file() {
    let mut m = Mechanism::from_json(&fixture(), Some("four-bar.json")).unwrap();
    m.solve().unwrap();
    assert_eq!(m.report().unwrap().dof, Some(1));

    // Suppress the rocker pivot: an open chain of three turning links.
    let mut file = current(&m);
    let k = joint_index(&file, "rocker-pivot");
    file["joints"][k]["suppressed"] = json!(true);
    m.set_suppressed("rocker-pivot", true).unwrap();
    same_as_fresh(&mut m, &file, "suppressed");
    assert_eq!(m.report().unwrap().dof, Some(3));

    // And back.
    let mut file = current(&m);
    file["joints"][k]
        .as_object_mut()
        .unwrap()
        .remove("suppressed");
    m.set_suppressed("rocker-pivot", false).unwrap();
    same_as_fresh(&mut m, &file, "unsuppressed");
    assert_eq!(m.report().unwrap().dof, Some(1));

    // A new part pinned to the rocker's tip, built in code.
    let mut file = current(&m);
    let tip = m.placement("rocker").unwrap();
    file["parts"].as_array_mut().unwrap().push(json!({
        "id": "flag",
        "placement": { "position": [tip.position[0] + 3.0, tip.position[1], 0.0] },
        "markers": { "pin": {} }
    }));
    file["joints"].as_array_mut().unwrap().push(json!({
        "id": "flag-pin", "type": "revolute",
        "i": { "part": "flag", "marker": "pin" }, "j": { "part": "rocker", "marker": "a" }
    }));
    let mut flag = Part::new(
        "flag",
        Placement::from_numbers(
            [tip.position[0] + 3.0, tip.position[1], 0.0],
            [1.0, 0.0, 0.0, 0.0],
        ),
    );
    flag.markers.push(("pin".into(), Placement::default()));
    let flag = m.add_part(flag).unwrap();
    let rocker = m.part_key("rocker").unwrap();
    m.add_joint(Joint {
        id: "flag-pin".into(),
        joint_type: JointType::Revolute,
        i: MarkerRef {
            part: flag,
            marker: MarkerSpec::Named("pin".into()),
        },
        j: MarkerRef {
            part: rocker,
            marker: MarkerSpec::Named("a".into()),
        },
        suppressed: false,
        fields: vec![],
        profile: None,
        profile_i: None,
        limits: Limits::default(),
        rate: Default::default(),
        extra: None,
        residuals: Vec::new(),
        compliance: None,
    })
    .unwrap();
    same_as_fresh(&mut m, &file, "part and joint added");
    assert_eq!(m.report().unwrap().dof, Some(2));

    // Remove the new joint: the flag floats free (6 in place of its 1).
    let mut file = current(&m);
    let k = joint_index(&file, "flag-pin");
    file["joints"].as_array_mut().unwrap().remove(k);
    let removed = m.remove_joint("flag-pin").unwrap();
    assert_eq!(removed.id, "flag-pin");
    same_as_fresh(&mut m, &file, "joint removed");
    assert_eq!(m.report().unwrap().dof, Some(7));

    // Remove the coupler: its two joints go with it.
    let mut file = current(&m);
    let parts = file["parts"].as_array_mut().unwrap();
    parts.retain(|p| p["id"] != "coupler");
    let joints = file["joints"].as_array_mut().unwrap();
    joints.retain(|j| j["i"]["part"] != "coupler" && j["j"]["part"] != "coupler");
    let gone = m.remove_part("coupler").unwrap();
    assert_eq!(
        gone,
        vec!["crank-coupler".to_string(), "coupler-rocker".to_string()]
    );
    same_as_fresh(&mut m, &file, "part removed");
    assert_eq!(m.report().unwrap().dof, Some(8));

    // An edit the model refuses changes nothing.
    let before = m.to_json();
    assert!(m.remove_joint("no-such-joint").is_err());
    assert!(m
        .add_part(Part::new("crank", Placement::default()))
        .is_err());
    assert_eq!(m.to_json(), before);
}

#[test]
fn moving_a_part_by_hand_starts_the_next_solve_there() {
    let mut m = Mechanism::from_json(&fixture(), None).unwrap();
    m.solve().unwrap();
    let start = m.placement("rocker").unwrap();
    let moved = Pose {
        position: [
            start.position[0] + 5.0,
            start.position[1],
            start.position[2],
        ],
        quaternion: start.quaternion,
    };
    m.set_placement("rocker", &moved).unwrap();
    assert_eq!(m.placement("rocker").unwrap().position, moved.position);
    assert!(m.solve().unwrap().converged);
    // The pivot pulls it back onto ground's D at (100, 0, 0).
    let back = m.placement("rocker").unwrap();
    assert!((back.position[0] - 100.0).abs() < 1e-9);
    assert!(m
        .set_placement(
            "rocker",
            &Pose {
                position: [f64::NAN, 0.0, 0.0],
                quaternion: [1.0, 0.0, 0.0, 0.0]
            }
        )
        .is_err());
}

/// A link of size about `L / 2` pinned by a ball joint, started off its joint: the
/// least-change step weighs its rotation by its size.
fn link(tip: Scalar) -> Assembly {
    let mut a = Assembly::new("link", Units::default());
    a.set_parameters(vec![Parameter {
        name: "L".into(),
        value: Scalar::Number(500.0),
    }])
    .unwrap();
    let mut ground = Part::new("ground", Placement::default());
    ground.grounded = true;
    let ground = a.add_part(ground).unwrap();
    let mut arm = Part::new(
        "arm",
        Placement::from_numbers([40.0, -30.0, 20.0], [0.9, 0.1, -0.2, 0.3]),
    );
    let zero = || Scalar::Number(0.0);
    arm.markers.push((
        "tip".into(),
        Placement {
            position: [tip, zero(), zero()],
            rotation: Rotation::Identity,
        },
    ));
    let arm = a.add_part(arm).unwrap();
    let at = Placement::from_numbers([300.0, 10.0, 0.0], [1.0, 0.0, 0.0, 0.0]);
    a.add_joint(Joint {
        id: "socket".into(),
        joint_type: JointType::Ball,
        i: MarkerRef {
            part: arm,
            marker: MarkerSpec::Named("tip".into()),
        },
        j: MarkerRef {
            part: ground,
            marker: MarkerSpec::Inline(Box::new(at)),
        },
        suppressed: false,
        fields: vec![],
        profile: None,
        profile_i: None,
        limits: Limits::default(),
        rate: Default::default(),
        extra: None,
        residuals: Vec::new(),
        compliance: None,
    })
    .unwrap();
    a
}

#[test]
fn a_marker_written_as_an_expression_weighs_as_its_value() {
    let mut by_expr = Mechanism::new(link(Scalar::Expr("L / 2".into()))).unwrap();
    let mut by_number = Mechanism::new(link(Scalar::Number(250.0))).unwrap();
    assert!(by_expr.solve().unwrap().converged);
    assert!(by_number.solve().unwrap().converged);
    let (a, b) = (
        by_expr.placement("arm").unwrap(),
        by_number.placement("arm").unwrap(),
    );
    for k in 0..3 {
        assert!((a.position[k] - b.position[k]).abs() < 1e-12, "{a:?} {b:?}");
    }
    for k in 0..4 {
        assert!(
            (a.quaternion[k] - b.quaternion[k]).abs() < 1e-12,
            "{a:?} {b:?}"
        );
    }
}
