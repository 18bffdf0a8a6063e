//! A corpus of malformed files (JSON and .asmt), made by breaking a bundled fixture and
//! the project's own `.asmt` file in one place each (`tests/malformed/cases.json`): `tenon convert` exits 2 for every one, with a
//! message that names the file and the place, and writes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (name, broken text, the place the message must name), from the shared case list
/// `tests/malformed/cases.json` (each: a bundled file, the text to find in it, what to
/// put instead, the place the message names). The C and Python layers read the same
/// list.
fn corpus() -> Vec<(String, String, String)> {
    let cases: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/malformed/cases.json")).unwrap(),
    )
    .unwrap();
    let mut out = Vec::new();
    for (k, case) in cases.as_array().unwrap().iter().enumerate() {
        let field = |key: &str| case[key].as_str().unwrap().to_string();
        let base = field("base");
        let text = std::fs::read_to_string(root().join(&base)).unwrap();
        let from = field("from");
        assert!(text.contains(&from), "case {k}: {from}");
        let extension = if base.ends_with(".asmt") {
            "asmt"
        } else {
            "json"
        };
        out.push((
            format!("bad{k:02}.{extension}"),
            text.replacen(&from, &field("to"), 1),
            field("place"),
        ));
    }
    out
}

#[test]
fn every_malformed_file_exits_2_naming_the_file_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let cases = corpus();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    for (name, text, place) in cases {
        let input = dir.path().join(&name);
        std::fs::write(&input, &text).unwrap();
        let output = dir.path().join("out.json");
        let o = Command::new(env!("CARGO_BIN_EXE_tenon"))
            .arg("convert")
            .arg(&input)
            .arg(&output)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {stderr}");
        let prefix = format!("{}: {place}", input.display());
        assert!(
            stderr.contains(&prefix),
            "{name}: message {stderr:?} should start with {prefix:?}"
        );
        assert!(!output.exists(), "{name}: nothing written");
    }
}
