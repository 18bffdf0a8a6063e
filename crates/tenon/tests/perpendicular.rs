//! A part inserted world-aligned and mated to a perpendicular face: every joint type
//! with an axis solves from axes exactly 90 degrees apart (a stationary point of the
//! axis equations), about each of the three axes, and ends with its joint holding.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::Mechanism;

const TYPES: [(&str, &str); 9] = [
    ("revolute", ""),
    ("cylindrical", ""),
    ("slider", ""),
    ("parallel", ""),
    ("planar", ""),
    ("fixed", ""),
    ("screw", r#", "pitch": 5"#),
    ("line_in_plane", ""),
    ("universal", ""),
];

fn assembly(joint: &str, fields: &str, axis: &str) -> String {
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1,
  "parts": [
    {{ "id": "base", "grounded": true, "markers": {{ "face": {{ "position": [10, 20, 0] }} }} }},
    {{ "id": "block", "placement": {{ "position": [12, 18, 3], "rotation": {{ "axis": {axis}, "angle": 90 }} }},
      "markers": {{ "m": {{ "position": [5, 0, 0] }} }} }}
  ],
  "joints": [ {{ "id": "mate", "type": "{joint}", "i": {{ "part": "block", "marker": "m" }},
                "j": {{ "part": "base", "marker": "face" }}{fields} }} ] }}"#
    )
}

#[test]
fn every_joint_with_an_axis_solves_from_exactly_perpendicular_axes() {
    let mut failed = Vec::new();
    for (joint, fields) in TYPES {
        for axis in ["[1, 0, 0]", "[0, 1, 0]", "[0, 0, 1]"] {
            let text = assembly(joint, fields, axis);
            let mut m = Mechanism::from_json(&text, Some("perpendicular.json")).unwrap();
            let report = m.solve().unwrap();
            if !report.converged {
                failed.push(format!("{joint} about {axis}: {:.3e}", report.max_residual));
                continue;
            }
            // The joint holds, checked apart from the solver: read back, solve again,
            // nothing moves.
            let mut again = Mechanism::from_json(&m.to_json(), None).unwrap();
            let r = again.solve().unwrap();
            assert!(r.converged && r.max_residual <= 1e-9, "{joint} {axis}");
            assert!(
                r.clusters.iter().all(|c| c.iterations == 0),
                "{joint} {axis}"
            );
        }
    }
    assert!(failed.is_empty(), "not solved: {failed:#?}");
}
