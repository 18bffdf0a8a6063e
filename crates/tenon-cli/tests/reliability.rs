//! Nothing lost, nothing silent: what a careless host or a hostile file does gets a
//! clear answer. A parameter that breaks a rule is bad input (exit 2) naming the element
//! and the field, and nothing is written; a coordinate prescribed twice is refused; a
//! limit held exactly is "held", not "broken by 0"; `solve --json` names redundant and
//! conflicting joints; a branch change is reported either way; `extra` comes back verbatim.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

mod common;

use common::{fixture, tenon};

/// A gear pair whose pinion radius is a parameter.
fn gears_with_parameter(dir: &std::path::Path) -> PathBuf {
    let text = std::fs::read_to_string(fixture("gear-pair.json")).unwrap();
    let text = text
        .replacen(r#""radius_i": 20.0"#, r#""radius_i": "r""#, 1)
        .replacen(
            r#""version": 1,"#,
            r#""version": 1, "parameters": { "r": 20 },"#,
            1,
        );
    let file = dir.join("gears.json");
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn a_parameter_that_breaks_a_rule_is_bad_input_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = gears_with_parameter(dir.path());
    let out = dir.path().join("out.json");
    for (value, want) in [
        ("0", "joint 'mesh' radius_i: must be greater than 0, is 0"),
        ("-3", "joint 'mesh' radius_i: must be greater than 0, is -3"),
    ] {
        let o = tenon()
            .arg("solve")
            .arg(&file)
            .args(["--set", &format!("r={value}"), "-o"])
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
        assert!(stderr.contains("gears.json"), "{stderr}");
        assert!(!out.exists(), "nothing written");
    }
    // A good value solves and writes a file that reads back.
    let o = tenon()
        .arg("solve")
        .arg(&file)
        .args(["--set", "r=25", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let back = tenon().arg("check").arg(&out).output().unwrap();
    assert_eq!(back.status.code(), Some(0), "{back:?}");
}

#[test]
fn a_coordinate_prescribed_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("four-bar.json")).unwrap();
    let two = text.replacen(
        r#""motions": ["#,
        r#""motions": [ { "joint": "crank-pivot", "angle": "2 * t" },"#,
        1,
    );
    let file = dir.path().join("two.json");
    std::fs::write(&file, two).unwrap();
    let o = tenon().arg("check").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("motions[1].angle")
            && stderr.contains("joint 'crank-pivot' already has a motion on its angle"),
        "{stderr}"
    );
    // A driving value and a motion on the same coordinate.
    let driven = text.replacen(
        r#""marker": "A"
      }
    },"#,
        r#""marker": "A"
      },
      "angle": 60
    },"#,
        1,
    );
    assert_ne!(driven, text, "the fixture's layout changed");
    std::fs::write(&file, driven).unwrap();
    let o = tenon().arg("check").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("already has a driving value"), "{stderr}");
}

#[test]
fn a_limit_held_exactly_is_held_not_broken() {
    let dir = tempfile::tempdir().unwrap();
    let door = r#"{ "format": "tenon-assembly", "version": 1,
  "parts": [ { "id": "ground", "grounded": true, "markers": { "m": {} } },
             { "id": "door", "placement": { "rotation": { "axis": [0, 0, 1], "angle": 90 } },
               "markers": { "m": {} } } ],
  "joints": [ { "id": "hinge", "type": "revolute", "i": { "part": "door", "marker": "m" },
                "j": { "part": "ground", "marker": "m" }, "limits": { "angle": [0, 90] }, "angle": 90 } ] }"#;
    let file = dir.path().join("door.json");
    std::fs::write(&file, door).unwrap();
    let o = tenon().arg("solve").arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(!text.contains("cannot respect"), "{text}");
}

#[test]
fn solve_json_names_redundant_and_conflicting_joints() {
    let o = tenon()
        .arg("solve")
        .arg(fixture("four-bar.json"))
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        report["clusters"][0]["redundant"],
        serde_json::json!(["rocker-pivot"])
    );
    let o = tenon()
        .arg("solve")
        .arg(fixture("conflicting/bent-four-bar.json"))
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        report["clusters"][0]["conflicting"],
        serde_json::json!([
            "crank-pivot",
            "crank-coupler",
            "coupler-rocker",
            "rocker-pivot"
        ])
    );
}

/// Profiles of extreme sizes never panic (a dependency's panic is ours): the command
/// answers with a report or an error, exit 0, 1 or 2.
#[test]
fn extreme_profiles_answer_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("roller-cam.json")).unwrap();
    let file = dir.path().join("cam.json");
    for radius in ["1e300", "1e-300", "1e200", "1e-200"] {
        let bent = text.replacen(r#""radius": 40.0"#, &format!(r#""radius": {radius}"#), 1);
        assert_ne!(bent, text);
        std::fs::write(&file, bent).unwrap();
        for command in ["solve", "check"] {
            let o = tenon().arg(command).arg(&file).output().unwrap();
            let code = o.status.code();
            assert!(
                matches!(code, Some(0..=2)),
                "{command} with radius {radius}: {code:?} {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"));
        }
    }
}

/// `extra` on markers, placements, rotations, marker references, motions and the
/// simulation comes back from `solve -o` as it was written (integers stay integers).
#[test]
fn solve_writes_every_extra_back_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("four-bar.json")).unwrap();
    let marked = text
        .replacen(
            r#""markers": {"#,
            r#""markers": { "tag": { "extra": {"id": 9007199254740993} },"#,
            1,
        )
        .replacen(r#""marker": "#, r#""extra": [1, 2], "marker": "#, 1);
    assert_ne!(marked, text, "the fixture changed shape");
    let input = dir.path().join("in.json");
    std::fs::write(&input, &marked).unwrap();
    let output = dir.path().join("out.json");
    let run = tenon()
        .args([
            "solve",
            input.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let written = std::fs::read_to_string(&output).unwrap();
    assert!(written.contains(r#"{"id": 9007199254740993}"#), "{written}");
    assert!(written.contains(r#""extra": [1, 2]"#), "{written}");
}

/// A weld started on its mirror branch (its axes 100 degrees apart) that ends aligned,
/// because the hinge beside it turns the lid through 180 degrees, has changed branch as
/// surely as the hinge has, and `solve` names both (a part never flips silently, either
/// way).
#[test]
fn leaving_the_mirror_branch_is_reported_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lid.json");
    std::fs::write(
        &file,
        r#"{ "format": "tenon-assembly", "version": 1,
      "parts": [ { "id": "ground", "grounded": true, "markers": { "pin": {}, "dock": { "rotation": { "axis": [1, 0, 0], "angle": 180 } } } },
                 { "id": "lid", "placement": { "rotation": { "axis": [1, 0, 0], "angle": 80 } }, "markers": { "pin": {} } } ],
      "joints": [ { "id": "hinge", "type": "revolute", "i": { "part": "lid", "marker": "pin" }, "j": { "part": "ground", "marker": "pin" } },
                  { "id": "weld", "type": "fixed", "i": { "part": "lid", "marker": "pin" }, "j": { "part": "ground", "marker": "dock" } } ] }"#,
    )
    .unwrap();
    let run = tenon()
        .args(["solve", file.to_str().unwrap()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{out}");
    for joint in ["hinge", "weld"] {
        let line = format!(
            "joint '{joint}' changed branch: an aligned axis ended reversed from the starting pose"
        );
        assert!(out.contains(&line), "{out}");
    }
}
