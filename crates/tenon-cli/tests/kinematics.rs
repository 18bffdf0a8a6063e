//! `tenon kinematics` end to end: CSV and JSON written whole and parsed back, columns as
//! the spec says, exit codes as for `solve`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fixture, tenon};

#[test]
fn csv_and_json_trajectories_parse_back_with_the_spec_columns() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("run.csv");
    let out = tenon()
        .args([
            "kinematics",
            fixture("slider-crank.json").to_str().unwrap(),
            "--end",
            "0.5",
            "--step",
            "0.05",
            "-o",
            csv.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("11 frame(s) from t = 0 to 0.5"), "{stdout}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[0], "t");
    assert_eq!(&header[1..4], ["crank.x", "crank.y", "crank.z"]);
    assert_eq!(header[19], "crank.alphaz");
    assert_eq!(*header.last().unwrap(), "max_residual");
    // Parts, then joints with a coordinate: three revolutes' angles and the bore's
    // distance, each with its rate.
    assert_eq!(header.len(), 1 + 3 * 19 + 2 * 4 + 1);
    assert!(header.contains(&"main-bearing.angle_rate") && header.contains(&"bore.distance"));
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 11);
    assert!(rows.iter().all(|r| r.len() == header.len()));
    assert_eq!(rows[10][0], 0.5);
    // The crank turns at 360 degrees per second about z (angle unit: degrees).
    let wz = header.iter().position(|&h| h == "crank.wz").unwrap();
    assert!((rows[3][wz] - 360.0).abs() < 1e-6, "{}", rows[3][wz]);

    let json = dir.path().join("run.json");
    let out = tenon()
        .args([
            "kinematics",
            fixture("four-bar.json").to_str().unwrap(),
            "-o",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["format"], "tenon-trajectory");
    assert_eq!(v["kind"], "kinematics");
    assert_eq!(v["units"]["angle"], "deg");
    let frames = v["frames"].as_array().unwrap();
    assert!(frames.len() > 10);
    let rocker = &frames[5]["parts"]["rocker"];
    for key in [
        "position",
        "quaternion",
        "velocity",
        "angular_velocity",
        "acceleration",
        "angular_acceleration",
    ] {
        assert!(rocker[key].is_array(), "{key}");
    }
}

#[test]
fn a_run_answers_bad_input_with_exit_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("run.txt");
    let out = tenon()
        .args([
            "kinematics",
            fixture("slider-crank.json").to_str().unwrap(),
            "-o",
            bad.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(".csv or .json"));
    assert!(!bad.exists());
    let out = tenon()
        .args([
            "kinematics",
            fixture("slider-crank.json").to_str().unwrap(),
            "--step",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("step must be positive"));
}
