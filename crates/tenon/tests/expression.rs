//! `expression` joints (custom residuals over measures of marker i relative to marker
//! j): each measure written as an expression solves, counts and diagnoses like the
//! built-in joint it restates; bad residuals are refused with the joint and the place.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::{Mechanism, Status};

/// Ground and one arm placed off its solved pose; `joints` between them (ground markers
/// `o` at the origin, `p` at (80, 0, 0), `x` turned 90 degrees about y; arm markers `o`
/// at its origin, `q` at (0, 50, 0)).
fn assembly(joints: &str) -> String {
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1,
      "parts": [
        {{ "id": "ground", "grounded": true, "markers": {{
            "o": {{}}, "p": {{ "position": [80, 0, 0] }},
            "x": {{ "rotation": {{ "axis": [0, 1, 0], "angle": 90 }} }} }} }},
        {{ "id": "arm", "placement": {{ "position": [3, -2, 4],
            "rotation": {{ "axis": [0.2, 0.3, 1], "angle": 20 }} }},
          "markers": {{ "o": {{}}, "q": {{ "position": [0, 50, 0] }},
            "x": {{ "rotation": {{ "axis": [0, 1, 0], "angle": 90 }} }} }} }} ],
      "joints": [ {joints} ] }}"#
    )
}

/// Solves and diagnoses; returns the arm's pose, DOF and status.
fn solved(text: &str) -> ([f64; 3], [f64; 4], Option<usize>, Status, usize) {
    let mut m = Mechanism::from_json(text, None).unwrap();
    let report = m.solve().unwrap();
    assert!(report.converged, "{text}");
    let d = m.diagnose().unwrap();
    let c = &d.clusters[0];
    let pose = m.placement("arm").unwrap();
    let mut q = pose.quaternion;
    if q[0] < 0.0 {
        q = q.map(|x| -x);
    }
    (pose.position, q, d.dof(), c.status, c.redundant.len())
}

fn same(built_in: &str, expression: &str) {
    let (pa, qa, dof_a, status_a, red_a) = solved(&assembly(built_in));
    let (pb, qb, dof_b, status_b, red_b) = solved(&assembly(expression));
    for k in 0..3 {
        assert!(
            (pa[k] - pb[k]).abs() < 1e-9,
            "{expression}: position {pa:?} vs {pb:?}"
        );
    }
    for k in 0..4 {
        assert!(
            (qa[k] - qb[k]).abs() < 1e-12,
            "{expression}: rotation {qa:?} vs {qb:?}"
        );
    }
    assert_eq!(dof_a, dof_b, "{expression}: DOF");
    assert_eq!(status_a, status_b, "{expression}: status");
    assert_eq!(red_a, red_b, "{expression}: redundant sets");
}

/// A joint between marker `i` of the arm and marker `j` of the ground.
fn joint(id: &str, body: &str, (i, j): (&str, &str)) -> String {
    format!(
        r#"{{ "id": "{id}", {body}, "i": {{ "part": "arm", "marker": "{i}" }}, "j": {{ "part": "ground", "marker": "{j}" }} }}"#
    )
}

/// Each measure as an expression beside the built-in joint it restates, with the joints
/// that leave it the one freedom it fixes: (what, other joints, built-in, expression).
#[test]
fn every_measure_solves_counts_and_diagnoses_like_its_built_in_joint() {
    let pin = joint("pin", r#""type": "revolute""#, ("o", "o"));
    let keep = joint("keep", r#""type": "no_rotation""#, ("q", "p"));
    let slide = joint("s", r#""type": "slider""#, ("o", "o"));
    // The arm turns about ground x; the tilt of its z from ground z is the turn.
    let hinge = joint("h", r#""type": "revolute""#, ("x", "x"));
    let cases = [
        (
            "distance",
            pin.clone(),
            joint("d", r#""type": "distance", "distance": 70"#, ("q", "p")),
            joint(
                "d",
                r#""type": "expression", "residuals": ["distance - 70"]"#,
                ("q", "p"),
            ),
        ),
        (
            "dx, dy, dz",
            keep,
            joint("b", r#""type": "ball""#, ("o", "o")),
            joint(
                "b",
                r#""type": "expression", "residuals": ["dx", "dy", "dz"]"#,
                ("o", "o"),
            ),
        ),
        (
            "dz",
            slide,
            joint("z", r#""type": "point_in_plane", "offset": 5"#, ("q", "p")),
            joint(
                "z",
                r#""type": "expression", "residuals": ["dz - 5"]"#,
                ("q", "p"),
            ),
        ),
        (
            "tilt",
            hinge,
            joint("t", r#""type": "angle", "angle": 35"#, ("o", "o")),
            joint(
                "t",
                r#""type": "expression", "residuals": ["tilt - 35"]"#,
                ("o", "o"),
            ),
        ),
    ];
    for (what, others, built_in, custom) in cases {
        eprintln!("{what}");
        same(
            &format!("{others}, {built_in}"),
            &format!("{others}, {custom}"),
        );
    }
    // The angle against the revolute's own driving angle.
    let driven = joint("pin", r#""type": "revolute", "angle": 30"#, ("o", "o"));
    let custom = joint(
        "a",
        r#""type": "expression", "residuals": ["angle - 30"]"#,
        ("o", "o"),
    );
    same(&driven, &format!("{pin}, {custom}"));
}

/// A distance tied to an angle by ratios (the seed's coupled constraint): both hold at
/// the answer, and the joint removes one DOF.
#[test]
fn a_coupled_distance_and_angle() {
    let slide = r#"{ "id": "s", "type": "cylindrical", "i": { "part": "arm", "marker": "o" }, "j": { "part": "ground", "marker": "o" } }"#;
    let custom = r#"{ "id": "c", "type": "expression", "residuals": ["1.0 * (dz - 10) + 0.5 * (angle - 20)"], "i": { "part": "arm", "marker": "o" }, "j": { "part": "ground", "marker": "o" } }"#;
    let mut m = Mechanism::from_json(&assembly(&format!("{slide}, {custom}")), None).unwrap();
    assert!(m.solve().unwrap().converged);
    assert_eq!(m.diagnose().unwrap().dof(), Some(1));
    let pose = m.placement("arm").unwrap();
    let [w, _, _, z] = pose.quaternion;
    let angle = (2.0 * z.atan2(w)).to_degrees();
    let dz = pose.position[2];
    assert!(
        (1.0 * (dz - 10.0) + 0.5 * (angle - 20.0)).abs() < 1e-8,
        "dz {dz}, angle {angle}"
    );
}

#[test]
fn bad_residuals_are_refused_with_the_joint_and_the_place() {
    let cases = [
        (r#""residuals": ["distance - "]"#, "joints[0].residuals[0]"),
        (r#""residuals": ["2 * width - 1"]"#, "unknown name 'width'"),
        (r#""residuals": ["t - 1"]"#, "constrains nothing"),
        (r#""residuals": []"#, "at least one residual"),
        (r#""residuals": [3]"#, "expected an expression string"),
    ];
    for (residuals, expected) in cases {
        let joint = format!(
            r#"{{ "id": "c", "type": "expression", {residuals}, "i": {{ "part": "arm", "marker": "o" }}, "j": {{ "part": "ground", "marker": "o" }} }}"#
        );
        let err = Mechanism::from_json(&assembly(&joint), Some("custom.json"))
            .err()
            .unwrap_or_else(|| panic!("{residuals}: accepted"))
            .to_string();
        assert!(err.contains(expected), "{residuals}: {err}");
        assert!(err.contains("custom.json"), "{residuals}: {err}");
    }
    let not_custom = r#"{ "id": "r", "type": "revolute", "residuals": ["dx"], "i": { "part": "arm", "marker": "o" }, "j": { "part": "ground", "marker": "o" } }"#;
    let err = Mechanism::from_json(&assembly(not_custom), None)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("has no 'residuals'"), "{err}");
}

/// Written and read again, an expression joint keeps its residuals.
#[test]
fn residuals_round_trip() {
    let custom = r#"{ "id": "c", "type": "expression", "residuals": ["distance - 70", "angle - 2 * t"], "i": { "part": "arm", "marker": "q" }, "j": { "part": "ground", "marker": "p" } }"#;
    let a = tenon::read_json(&assembly(custom), None).unwrap();
    let text = tenon::write_json(&a);
    assert!(text.contains(r#""residuals""#), "{text}");
    let b = tenon::read_json(&text, None).unwrap();
    let (_, j) = b.joints().next().unwrap();
    assert_eq!(j.residuals, ["distance - 70", "angle - 2 * t"]);
    assert_eq!(j.dof_removed(), 2);
}

/// The seed's coupled constraint twice, with ratios (1, 0) and (1 + 1e-8, 1e-6): the two
/// rows nearly repeat each other. Both still count (the rank is 2, one DOF of the body's
/// three in its plane is left, nothing redundant), and the report warns that the two
/// joints are nearly dependent; one coupled constraint alone gives no warning.
#[test]
fn near_duplicate_couplings_are_reported_ill_conditioned() {
    let d0 = (0.65f64 * 0.65 + 0.25 * 0.25).sqrt();
    let file = |joints: &str| {
        format!(
            r#"{{ "format": "tenon-assembly", "version": 1,
          "units": {{ "length": "m", "angle": "rad" }},
          "parts": [
            {{ "id": "ground", "grounded": true, "markers": {{ "anchor": {{ "position": [-0.2, 0.1, 0] }} }} }},
            {{ "id": "body", "placement": {{ "position": [0.45, 0.35, 0], "rotation": {{ "axis": [0, 0, 1], "angle": 0.4 }} }},
              "markers": {{ "c": {{}} }} }} ],
          "joints": [
            {{ "id": "plane", "type": "planar", "i": {{ "part": "body", "marker": "c" }}, "j": {{ "part": "ground", "marker": "anchor" }} }}
            {joints} ] }}"#
        )
    };
    let coupled = |id: &str, rd: &str, ra: &str| {
        format!(
            r#", {{ "id": "{id}", "type": "expression", "residuals": ["{rd} * (distance - {d0}) + {ra} * (angle - 0.4)"],
                 "i": {{ "part": "body", "marker": "c" }}, "j": {{ "part": "ground", "marker": "anchor" }} }}"#
        )
    };
    let both = file(&format!(
        "{}{}",
        coupled("c1", "1.0", "0"),
        coupled("c2", "(1 + 1e-8)", "1e-6")
    ));
    let mut m = Mechanism::from_json(&both, None).unwrap();
    assert!(m.solve().unwrap().converged);
    let d = m.diagnose().unwrap();
    let c = &d.clusters[0];
    assert_eq!(c.dof, Some(1), "rank 2 of the three planar freedoms");
    assert!(c.redundant.is_empty());
    let cond = c.conditioning.as_ref().unwrap();
    eprintln!(
        "near-duplicate couplings: condition estimate {:.3e}",
        cond.estimate
    );
    assert!(
        cond.estimate > 1e5 && cond.estimate < 1e8,
        "{}",
        cond.estimate
    );
    let named: Vec<&str> = cond
        .nearly_dependent
        .iter()
        .map(|&j| m.joint_id(j).unwrap())
        .collect();
    assert_eq!(named, ["c1", "c2"]);
    // One coupling alone is well conditioned.
    let one = file(&coupled("c1", "1.0", "0.5"));
    let mut m = Mechanism::from_json(&one, None).unwrap();
    let d = m.diagnose().unwrap();
    let cond = d.clusters[0].conditioning.as_ref().unwrap();
    eprintln!("one coupling: condition estimate {:.3e}", cond.estimate);
    assert!(cond.estimate < 1e3, "{}", cond.estimate);
    assert!(cond.nearly_dependent.is_empty());
}
