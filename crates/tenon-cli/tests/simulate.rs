//! `tenon simulate` end to end: CSV and JSON written whole and parsed back with the
//! spec's columns (reactions, efforts, energies), exit codes as for `solve` (bad mass
//! data is bad input, exit 2, nothing written).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fixture, tenon};

#[test]
fn csv_and_json_dynamics_parse_back_with_the_spec_columns() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("run.csv");
    let out = tenon()
        .args([
            "simulate",
            fixture("dynamics/double-pendulum.json").to_str().unwrap(),
            "--end",
            "0.1",
            "--step",
            "0.001",
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
    assert!(stdout.contains("from t = 0 to 0.1"), "{stdout}");
    assert!(stdout.contains("energy balance within"), "{stdout}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[0], "t");
    assert_eq!(&header[1..4], ["link1.x", "link1.y", "link1.z"]);
    // Two parts, two revolutes' angles and rates, their reactions, no motion, four
    // energies, the residual.
    assert_eq!(header.len(), 1 + 2 * 19 + 2 * 2 + 2 * 6 + 4 + 1);
    for name in [
        "pin1.fx",
        "pin2.tz",
        "kinetic",
        "potential",
        "spring",
        "work",
    ] {
        assert!(header.contains(&name), "{name}: {header:?}");
    }
    assert_eq!(*header.last().unwrap(), "max_residual");
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert!(rows.iter().all(|r| r.len() == header.len()));
    assert_eq!(rows.last().unwrap()[0], 0.1);
    // Energy is conserved: kinetic + potential stays at its start.
    let (k, p) = (
        header.iter().position(|&h| h == "kinetic").unwrap(),
        header.iter().position(|&h| h == "potential").unwrap(),
    );
    let e0 = rows[0][k] + rows[0][p];
    for r in &rows {
        assert!((r[k] + r[p] - e0).abs() < 1e-6, "{}", r[k] + r[p] - e0);
    }

    let json = dir.path().join("run.json");
    let out = tenon()
        .args([
            "simulate",
            fixture("dynamics/conical-pendulum.json").to_str().unwrap(),
            "--end",
            "0.05",
            "-o",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["format"], "tenon-trajectory");
    assert_eq!(v["kind"], "dynamics");
    assert_eq!(v["units"]["length"], "m");
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 6);
    let ball = &frames[3]["joints"]["ball"];
    let force: Vec<f64> = ball["force"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let tension = force.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!(
        (tension - 9.81 / 30f64.to_radians().cos()).abs() < 1e-3,
        "{tension}"
    );
    for key in ["kinetic", "potential", "spring", "work"] {
        assert!(frames[3]["energy"][key].is_number(), "{key}");
    }
}

#[test]
fn bad_mass_data_is_bad_input_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("dynamics/double-pendulum.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["parts"][1].as_object_mut().unwrap().remove("mass");
    let input = dir.path().join("massless.json");
    std::fs::write(&input, v.to_string()).unwrap();
    let out_file = dir.path().join("run.csv");
    let out = tenon()
        .args([
            "simulate",
            input.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("massless.json") && stderr.contains("'link1'"),
        "{stderr}"
    );
    assert!(!out_file.exists());
    // A negative mass: the reader names the place.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["parts"][2]["mass"]["mass"] = serde_json::json!(-2);
    std::fs::write(&input, v.to_string()).unwrap();
    let out = tenon()
        .args(["simulate", input.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("parts[2].mass.mass"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
