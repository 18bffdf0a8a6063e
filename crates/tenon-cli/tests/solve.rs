//! `tenon solve`: reports, exit statuses, --set, -o.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fixture, tenon};

/// A pendulum pinned to ground whose tip must also sit `L` from the pivot's marker.
const ROD: &str = r#"{ "format": "tenon-assembly", "version": 1, "parameters": { "L": 100 },
  "parts": [ { "id": "ground", "grounded": true, "markers": { "pivot": {} } },
             { "id": "arm", "placement": { "rotation": { "axis": [0, 0, 1], "angle": 20 } },
               "markers": { "pin": {}, "tip": { "position": [100, 0, 0] } } } ],
  "joints": [ { "id": "pin", "type": "revolute", "i": { "part": "arm", "marker": "pin" }, "j": { "part": "ground", "marker": "pivot" } },
              { "id": "reach", "type": "distance", "i": { "part": "arm", "marker": "tip" }, "j": { "part": "ground", "marker": "pivot" }, "distance": "L" } ] }"#;

#[test]
fn solve_reports_json_and_writes_the_solved_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("solved.json");
    let o = tenon()
        .arg("solve")
        .arg(fixture("rssr-four-bar.json"))
        .arg("--json")
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["status"], "solved");
    assert_eq!(report["dof"], 2, "crank turn and the coupler's spin");
    assert!(report["max_residual"].as_f64().unwrap() <= 1e-10);
    assert_eq!(report["clusters"][0]["status"], "under_constrained");
    assert_eq!(
        report["parts"]["crank"]["quaternion"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let written = std::fs::read_to_string(&out).unwrap();
    tenon::read_json(&written, None).unwrap();
}

#[test]
fn a_parameter_that_cannot_hold_fails_with_exit_1_naming_the_joint() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rod.json");
    std::fs::write(&file, ROD).unwrap();
    let ok = tenon().arg("solve").arg(&file).output().unwrap();
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    let out = dir.path().join("never.json");
    let o = tenon()
        .arg("solve")
        .arg(&file)
        .args(["--set", "L=101"])
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("joint 'reach' does not hold: off by"),
        "{text}"
    );
    assert!(!out.exists(), "a failed solve writes nothing");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        ROD,
        "the input is untouched"
    );
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rod.json");
    std::fs::write(&file, ROD).unwrap();
    for args in [
        vec!["--set", "Q=1"],
        vec!["--set", "L"],
        vec!["--set", "L=abc"],
    ] {
        let o = tenon()
            .arg("solve")
            .arg(&file)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!String::from_utf8_lossy(&o.stderr).is_empty());
    }
    let missing = tenon()
        .arg("solve")
        .arg(dir.path().join("none.json"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let directory = tenon().arg("solve").arg(dir.path()).output().unwrap();
    assert_eq!(directory.status.code(), Some(2));
}

const DOOR: &str = r#"{ "format": "tenon-assembly", "version": 1, "parameters": { "open": 45 },
  "parts": [ { "id": "ground", "grounded": true, "markers": { "m": {} } },
             { "id": "door", "placement": { "rotation": { "axis": [0, 0, 1], "angle": 120 } },
               "markers": { "m": {}, "edge": { "position": [80, 0, 0] } } } ],
  "joints": [ { "id": "hinge", "type": "revolute", "i": { "part": "door", "marker": "m" },
                "j": { "part": "ground", "marker": "m" }, "limits": { "angle": [0, 90] }, "angle": "open" } ] }"#;

#[test]
fn limits_that_bind_are_reported_and_one_that_cannot_hold_fails_the_solve() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("door.json");
    // Without the drive the door swings back to its stop.
    std::fs::write(&file, DOOR.replace(r#", "angle": "open""#, "")).unwrap();
    let o = tenon()
        .arg("solve")
        .arg(&file)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let limits = &report["clusters"][0]["limits"];
    assert_eq!(limits[0]["joint"], "hinge");
    assert_eq!(limits[0]["side"], "max");
    assert_eq!(limits[0]["coordinate"], "angle");
    // Driven inside its range: nothing binds.
    std::fs::write(&file, DOOR).unwrap();
    let o = tenon()
        .arg("solve")
        .arg(&file)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["clusters"][0]["limits"], serde_json::json!([]));
    // Driven past it: not solved, exit 1, the limit named with how far it is broken.
    let o = tenon()
        .arg("solve")
        .arg(&file)
        .args(["--set", "open=105"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("joint 'hinge' cannot respect its upper angle limit"),
        "{text}"
    );
}

#[test]
fn check_reports_freedoms_redundancy_and_conflicts() {
    let o = tenon()
        .arg("check")
        .arg(fixture("four-bar.json"))
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["status"], "solved");
    assert_eq!(report["dof"], 1);
    let cluster = &report["clusters"][0];
    assert_eq!(cluster["status"], "over_constrained");
    assert_eq!(cluster["redundant"], serde_json::json!(["rocker-pivot"]));
    assert_eq!(cluster["conflicting"], serde_json::json!([]));
    let motions = report["free_motions"].as_array().unwrap();
    assert_eq!(motions.len(), 3);
    assert_eq!(motions[0]["part"], "crank");
    assert_eq!(motions[0]["kind"], "rotation");
    assert_eq!(motions[0]["axis"], serde_json::json!([0.0, 0.0, 1.0]));
    assert_eq!(motions[0]["point"], serde_json::json!([0.0, 0.0, 0.0]));
    // Human form: sentences about parts and joints.
    let o = tenon()
        .arg("check")
        .arg(fixture("four-bar.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("joint 'rocker-pivot' repeats what the other joints already hold"));
    assert!(text.contains("crank can turn about the axis (0, 0, 1) through (0, 0, 0)"));
    // A pivot 1 mm off the plane: conflicting, exit 1, the size named.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bent.json");
    let mut bent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("four-bar.json")).unwrap()).unwrap();
    bent["parts"][0]["markers"]["D"]["position"] = serde_json::json!([100.0, 0.0, 1.0]);
    std::fs::write(&file, bent.to_string()).unwrap();
    let o = tenon().arg("check").arg(&file).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("joint 'rocker-pivot' cannot hold together with 'crank-pivot', 'crank-coupler' and 'coupler-rocker': with those holding, it is off by 1.000000"),
        "{text}"
    );
    // Bad input: exit 2.
    let o = tenon().arg("check").arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// `tenon solve FILE ARGS --json`'s report, the command having exited 0.
fn solved_json(file: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let o = tenon()
        .arg("solve")
        .arg(file)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The compliant carriage: the strap (compliant) gives way 10 mm to the stop (rigid);
/// the solve succeeds and says how far, in text and JSON.
#[test]
fn a_compliant_joint_that_gives_way_is_reported() {
    let report = solved_json(&fixture("compliant/compliant-carriage.json"), &[]);
    assert_eq!(report["status"], "solved");
    assert_eq!(report["yielded"][0]["joint"], "strap");
    let length = report["yielded"][0]["length"].as_f64().unwrap();
    assert!((length - 10.0).abs() < 1e-9, "{length}");
    assert_eq!(report["yielded"].as_array().unwrap().len(), 1);
    assert!((report["parts"]["carriage"]["position"][0].as_f64().unwrap() - 100.0).abs() < 1e-9);
    let text = tenon()
        .arg("solve")
        .arg(fixture("compliant/compliant-carriage.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains(
            "compliant joint 'strap' gives way where the joints disagree: off by 1.0000e1 mm"
        ),
        "{stdout}"
    );
}

/// `--equilibrium`: a carriage on a rail held by a compliant strap (0.002 mm/N) and
/// pushed by 50 N along the rail stretches the strap by 0.1 mm; a plain solve does
/// not read the load; pushed along a freedom nothing holds, no equilibrium (exit 1).
#[test]
fn equilibrium_stretches_a_compliant_joint_by_load_times_compliance() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "units": { "length": "mm", "angle": "deg" },
      "parts": [
        { "id": "ground", "grounded": true, "markers": {
            "origin": {}, "rail": { "rotation": { "axis": [0, 1, 0], "angle": 90 } } } },
        { "id": "carriage", "placement": { "position": [100, 0, 0] }, "markers": {
            "c": {}, "rail": { "rotation": { "axis": [0, 1, 0], "angle": 90 } } } } ],
      "joints": [
        { "id": "rail", "type": "slider", "i": { "part": "carriage", "marker": "rail" },
          "j": { "part": "ground", "marker": "rail" } },
        { "id": "strap", "type": "distance", "distance": 100, "compliance": 0.002,
          "i": { "part": "carriage", "marker": "c" }, "j": { "part": "ground", "marker": "origin" } } ],
      "forces": { "loads": [ { "part": "carriage", "force": [50, 0, 0], "torque": [0, 0, 0] } ] } }"#;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pushed.json");
    std::fs::write(&file, text).unwrap();
    let x = |args: &[&str]| -> f64 {
        solved_json(&file, args)["parts"]["carriage"]["position"][0]
            .as_f64()
            .unwrap()
    };
    assert!((x(&[]) - 100.0).abs() < 1e-12);
    assert!((x(&["--equilibrium"]) - 100.1).abs() < 1e-9);
    let free = dir.path().join("free.json");
    std::fs::write(
        &free,
        text.replace(r#", "compliance": 0.002"#, "").replace(
            r#"{ "id": "strap", "type": "distance", "distance": 100,"#,
            r#"{ "id": "strap", "type": "distance", "distance": 100, "suppressed": true,"#,
        ),
    )
    .unwrap();
    let o = tenon()
        .arg("solve")
        .arg(&free)
        .arg("--equilibrium")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("no static equilibrium"), "{stderr}");
}
