//! Diagnostics with exact expected reports: degrees of freedom, status, redundant and
//! conflicting joints, free motions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::{Diagnosis, JointKey, Mechanism, Motion, Status};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(name),
    )
    .unwrap()
}

fn diagnosed(text: &str) -> (Mechanism, Diagnosis) {
    let mut m = Mechanism::from_json(text, None).unwrap();
    let d = m.diagnose().unwrap();
    (m, d)
}

fn joint_ids(m: &Mechanism, keys: &[JointKey]) -> Vec<String> {
    keys.iter()
        .map(|k| m.joint_id(*k).unwrap().to_string())
        .collect()
}

fn close(a: [f64; 3], b: [f64; 3]) -> bool {
    (0..3).all(|k| (a[k] - b[k]).abs() < 1e-7)
}

fn one_part(joint: &str, extra_markers: &str, placement: &str) -> String {
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1,
      "parts": [ {{ "id": "ground", "grounded": true, "markers": {{
                    "m": {{ "position": [10, 20, 5], "rotation": {{ "axis": [1, 0, 0], "angle": 90 }} }} {extra_markers} }} }},
                 {{ "id": "arm", "placement": {placement}, "markers": {{
                    "m": {{ "position": [10, 20, 5], "rotation": {{ "axis": [1, 0, 0], "angle": 90 }} }} }} }} ],
      "joints": [ {joint} ] }}"#
    )
}

const IDENTITY: &str = r#"{ "position": [0, 0, 0] }"#;

#[test]
fn a_part_on_one_revolute_turns_about_the_joint_axis() {
    let text = one_part(
        r#"{ "id": "pin", "type": "revolute", "i": { "part": "arm", "marker": "m" }, "j": { "part": "ground", "marker": "m" } }"#,
        "",
        IDENTITY,
    );
    let (_, d) = diagnosed(&text);
    assert_eq!(d.clusters.len(), 1);
    let c = &d.clusters[0];
    assert_eq!((c.dof, c.status), (Some(1), Status::UnderConstrained));
    assert_eq!(c.free_motions.len(), 1);
    // The joint's z axis is the ground marker's: x turned 90 degrees about x, so -y;
    // the axis passes through (10, 20, 5), nearest the origin at (10, 0, 5).
    match c.free_motions[0].motion {
        Motion::Rotation { axis, point } => {
            assert!(close(axis, [0.0, 1.0, 0.0]), "{axis:?}");
            assert!(close(point, [10.0, 0.0, 5.0]), "{point:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!c.free_motions[0].idle);
}

#[test]
fn a_cylindrical_joint_leaves_a_slide_and_a_turn_along_its_axis() {
    let text = one_part(
        r#"{ "id": "sleeve", "type": "cylindrical", "i": { "part": "arm", "marker": "m" }, "j": { "part": "ground", "marker": "m" } }"#,
        "",
        r#"{ "position": [0, -3, 0] }"#,
    );
    let (_, d) = diagnosed(&text);
    let c = &d.clusters[0];
    assert_eq!((c.dof, c.status), (Some(2), Status::UnderConstrained));
    let mut kinds = Vec::new();
    for f in &c.free_motions {
        match f.motion {
            Motion::Translation { direction } => {
                assert!(close(direction, [0.0, 1.0, 0.0]), "{direction:?}");
                kinds.push("translation");
            }
            Motion::Rotation { axis, point } => {
                assert!(close(axis, [0.0, 1.0, 0.0]), "{axis:?}");
                assert!(close(point, [10.0, 0.0, 5.0]), "{point:?}");
                kinds.push("rotation");
            }
            other => panic!("{other:?}"),
        }
    }
    kinds.sort_unstable();
    assert_eq!(kinds, ["rotation", "translation"]);
}

#[test]
fn a_planar_four_bar_of_revolutes_is_over_constrained_with_one_freedom() {
    let (m, d) = diagnosed(&fixture("four-bar.json"));
    let c = &d.clusters[0];
    assert_eq!(c.dof, Some(1));
    assert_eq!(c.status, Status::OverConstrained);
    assert!(c.conflicts.is_empty());
    // Taken in file order, the loop closes at the last revolute: it repeats (two
    // out-of-plane equations) what the others already hold.
    assert_eq!(joint_ids(&m, &c.redundant), ["rocker-pivot"]);
}

#[test]
fn a_four_bar_that_cannot_close_names_the_conflict_and_its_size() {
    // The rocker's ground pivot 1 mm off the plane, along the joint axis: the loop
    // cannot close; its out-of-plane equations conflict.
    let mut file: serde_json::Value = serde_json::from_str(&fixture("four-bar.json")).unwrap();
    file["parts"][0]["markers"]["D"]["position"] = serde_json::json!([100.0, 0.0, 1.0]);
    let text = file.to_string();
    let (m, d) = diagnosed(&text);
    let c = &d.clusters[0];
    assert_eq!(c.status, Status::Conflicting);
    assert!(!c.conflicts.is_empty());
    let worst = c
        .conflicts
        .iter()
        .max_by(|a, b| a.violation.total_cmp(&b.violation))
        .unwrap();
    assert!(
        (worst.violation - 1.0).abs() < 1e-6,
        "violation {}",
        worst.violation
    );
    let ids = joint_ids(&m, &worst.joints);
    assert!(ids.contains(&"rocker-pivot".to_string()), "{ids:?}");
    assert!(ids.len() >= 2, "{ids:?}");
}

#[test]
fn an_rssr_four_bar_has_two_freedoms_one_the_couplers_idle_spin() {
    let (m, d) = diagnosed(&fixture("rssr-four-bar.json"));
    let c = &d.clusters[0];
    assert_eq!((c.dof, c.status), (Some(2), Status::UnderConstrained));
    let idle: Vec<_> = c.free_motions.iter().filter(|f| f.idle).collect();
    assert_eq!(idle.len(), 1, "{:?}", c.free_motions);
    assert_eq!(m.part_id(idle[0].part).unwrap(), "coupler");
    assert!(matches!(idle[0].motion, Motion::Rotation { .. }));
}

#[test]
fn a_duplicated_joint_is_redundant() {
    let text = one_part(
        r#"{ "id": "pin", "type": "revolute", "i": { "part": "arm", "marker": "m" }, "j": { "part": "ground", "marker": "m" } },
           { "id": "pin-copy", "type": "revolute", "i": { "part": "arm", "marker": "m" }, "j": { "part": "ground", "marker": "m" } }"#,
        "",
        IDENTITY,
    );
    let (m, d) = diagnosed(&text);
    let c = &d.clusters[0];
    assert_eq!((c.dof, c.status), (Some(1), Status::OverConstrained));
    assert_eq!(joint_ids(&m, &c.redundant), ["pin-copy"]);
    assert!(c.conflicts.is_empty());
}

#[test]
fn a_fully_fixed_assembly_is_well_constrained() {
    let text = one_part(
        r#"{ "id": "weld", "type": "fixed", "i": { "part": "arm", "marker": "m" }, "j": { "part": "ground", "marker": "m" } }"#,
        "",
        r#"{ "position": [1, 2, 3] }"#,
    );
    let (_, d) = diagnosed(&text);
    let c = &d.clusters[0];
    assert_eq!((c.dof, c.status), (Some(0), Status::WellConstrained));
    assert!(c.free_motions.is_empty() && c.redundant.is_empty());
}

#[test]
fn a_screw_leaves_one_screw_motion_of_its_pitch() {
    let (m, d) = diagnosed(&fixture("screw-jack.json"));
    let c = d
        .clusters
        .iter()
        .find(|c| c.parts.iter().any(|p| m.part_id(*p) == Some("screw")))
        .unwrap();
    assert_eq!(c.dof, Some(1));
    let screws: Vec<_> = c
        .free_motions
        .iter()
        .filter_map(|f| match f.motion {
            Motion::Screw { pitch, .. } => Some(pitch),
            _ => None,
        })
        .collect();
    assert_eq!(screws.len(), 1, "{:?}", c.free_motions);
    assert!((screws[0].abs() - 5.0).abs() < 1e-6, "pitch {}", screws[0]);
}

#[test]
fn structure_alone_bounds_what_the_numbers_find() {
    // Four-bar of revolutes: 20 equations on 18 unknowns.
    let (_, d) = diagnosed(&fixture("four-bar.json"));
    assert_eq!(d.clusters[0].structure.excess_equations, 2);
    assert_eq!(d.clusters[0].structure.unfixed_unknowns, 0);
    // RSSR: 16 equations on 18 unknowns.
    let (_, d) = diagnosed(&fixture("rssr-four-bar.json"));
    assert_eq!(d.clusters[0].structure.unfixed_unknowns, 2);
    assert_eq!(d.clusters[0].structure.excess_equations, 0);
}

/// Every fixture: the diagnosis counts the same degrees of freedom as the solve's rank,
/// finds nothing conflicting in an assembly that solves, and lists at least as many
/// repeated equations as the structure proves.
#[test]
fn every_fixture_diagnoses_consistently_with_its_solve() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    assert!(names.len() >= 15);
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let (m, d) = diagnosed(&text);
        let report = m.report().unwrap();
        assert!(report.converged, "{}", path.display());
        for (c, r) in d.clusters.iter().zip(&report.clusters) {
            assert_eq!(c.dof, r.dof, "{}", path.display());
            assert!(
                c.conflicts.is_empty(),
                "{}: {:?}",
                path.display(),
                c.conflicts
            );
            assert_ne!(c.status, Status::Conflicting);
            assert_ne!(c.status, Status::Failed);
            if c.structure.excess_equations > 0 {
                assert!(
                    !c.redundant.is_empty(),
                    "{}: the structure proves repetition, none named",
                    path.display()
                );
            }
            // Free motions: one per freedom of each part at most, none when DOF is 0.
            if c.dof == Some(0) {
                assert!(c.free_motions.is_empty(), "{}", path.display());
            }
        }
    }
}

/// The sparse analysis (used beyond `DIAGNOSE_COLUMNS`, forced here) on the fixtures and
/// the conflicting four-bar: the same DOF, statuses, redundant joints and conflicts (sets
/// traced in a window that here holds the whole cluster, and sizes) as the dense one.
#[test]
fn the_sparse_analysis_agrees_with_the_dense_one() {
    let mut texts: Vec<(String, String)> = Vec::new();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            texts.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
    let mut file: serde_json::Value = serde_json::from_str(&fixture("four-bar.json")).unwrap();
    file["parts"][0]["markers"]["D"]["position"] = serde_json::json!([100.0, 0.0, 1.0]);
    texts.push(("four-bar, pivot 1 mm off".into(), file.to_string()));
    texts.sort();
    let mut conflicts_seen = 0;
    for (name, text) in &texts {
        let (_, dense) = diagnosed(text);
        let mut m = Mechanism::from_json(text, None).unwrap();
        m.set_options(tenon::SolveOptions {
            diagnose_columns: 0,
            ..m.options()
        });
        let sparse = m.diagnose().unwrap();
        for (d, s) in dense.clusters.iter().zip(&sparse.clusters) {
            assert_eq!((d.dof, d.status), (s.dof, s.status), "{name}");
            assert_eq!(d.redundant, s.redundant, "{name}");
            assert_eq!(d.conflicts.len(), s.conflicts.len(), "{name}");
            for (a, b) in d.conflicts.iter().zip(&s.conflicts) {
                assert_eq!(a.joints, b.joints, "{name}");
                assert!((a.violation - b.violation).abs() < 1e-9, "{name}");
                conflicts_seen += 1;
            }
        }
    }
    assert!(conflicts_seen > 0);
}
