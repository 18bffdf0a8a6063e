//! `tenon convert`: exit statuses, messages and atomic output.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

fn tenon() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tenon"))
}

/// The project's own `.asmt` fixture (a crank-slider written by hand).
fn own_asmt() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/asmt/crank-slider.asmt")
}

#[test]
fn converts_asmt_to_json_that_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crank-slider.json");
    let status = tenon()
        .arg("convert")
        .arg(own_asmt())
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text.matches("\"type\":").count(),
        4,
        "the crank-slider's four joints"
    );
    // Converting the JSON again gives the same file.
    let out2 = dir.path().join("again.json");
    assert!(tenon()
        .arg("convert")
        .arg(&out)
        .arg(&out2)
        .status()
        .unwrap()
        .success());
    assert_eq!(std::fs::read_to_string(&out2).unwrap(), text);
}

#[test]
fn bad_input_exits_2_and_names_the_file_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{ "format": "tenon-assembly", "version": 1, "parts": [ { "id": "a", "grounded": "no" } ] }"#).unwrap();
    let out = dir.path().join("out.json");
    let o = tenon().arg("convert").arg(&bad).arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains("bad.json: parts[0].grounded: expected true or false"),
        "{msg}"
    );
    assert!(!out.exists(), "nothing written on failure");

    let missing = tenon()
        .arg("convert")
        .arg(dir.path().join("nope.json"))
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nope.json: cannot read"));

    let directory = tenon()
        .arg("convert")
        .arg(dir.path())
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(directory.status.code(), Some(2));

    let usage = tenon().arg("convert").output().unwrap();
    assert_eq!(usage.status.code(), Some(2));

    // An .asmt file with a joint kind Tenon does not read.
    let text = std::fs::read_to_string(own_asmt()).unwrap().replacen(
        "TranslationalJoint",
        "SurfaceSurfaceContact",
        1,
    );
    let bad = dir.path().join("bad.asmt");
    std::fs::write(&bad, text).unwrap();
    let asmt = tenon().arg("convert").arg(&bad).arg(&out).output().unwrap();
    assert_eq!(asmt.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&asmt.stderr);
    assert!(
        stderr.contains("bad.asmt: line ") && stderr.contains("'SurfaceSurfaceContact'"),
        "{stderr}"
    );
}

#[test]
fn a_failed_write_leaves_no_partial_file() {
    // The output path is a directory: the temporary file is written, the rename fails.
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.json");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep.txt"), "kept").unwrap();
    let o = tenon()
        .arg("convert")
        .arg(own_asmt())
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("out.json: cannot write"));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("out.json")],
        "no temporary file left"
    );
    assert_eq!(
        std::fs::read_to_string(target.join("keep.txt")).unwrap(),
        "kept"
    );
}
