//! A corpus of malformed files (JSON and .asmt), made by breaking a bundled fixture and
//! a corpus file in one place each: `tenon convert` exits 2 for every one, with a
//! message that names the file and the place, and writes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (name, broken text, the place the message must name).
fn corpus() -> Vec<(String, String, String)> {
    let four_bar = std::fs::read_to_string(root().join("fixtures/four-bar.json")).unwrap();
    // The project's own .asmt (written by hand), so a bare clone runs every case.
    let own = std::fs::read_to_string(root().join("fixtures/asmt/crank-slider.asmt")).unwrap();
    let json: Vec<(&str, &str, &str)> = vec![
        (
            "\"format\": \"tenon-assembly\"",
            "\"format\": \"tenon\"",
            "format",
        ),
        ("\"version\": 1", "\"version\": 3", "version"),
        (
            "\"length\": \"mm\"",
            "\"length\": \"furlong\"",
            "units.length",
        ),
        ("\"angle\": \"deg\"", "\"angle\": \"grad\"", "units.angle"),
        ("\"id\": \"crank\"", "\"id\": \"ground\"", "parts[1].id"),
        ("\"id\": \"crank\"", "\"id\": \"\"", "parts[1].id"),
        ("\"grounded\": true", "\"grounded\": 1", "parts[0].grounded"),
        ("\"markers\": {", "\"markerz\": {", "parts[0].markerz"),
        (
            "\"type\": \"revolute\"",
            "\"type\": \"rivet\"",
            "joints[0].type",
        ),
        (
            "\"marker\": \"a\"",
            "\"marker\": \"zz\"",
            "joints[0].i.marker",
        ),
        (
            "\"part\": \"crank\"",
            "\"part\": \"crank2\"",
            "joints[0].i.part",
        ),
        (
            "\"angle\": \"60 + 360 * t\"",
            "\"angle\": \"60 + 360 * \"",
            "motions[0].angle",
        ),
        (
            "\"angle\": \"60 + 360 * t\"",
            "\"distance\": \"t\"",
            "motions[0].distance",
        ),
        (
            "\"angle\": \"60 + 360 * t\"",
            "\"angle\": \"q * t\"",
            "motions[0].angle",
        ),
        (
            "\"joint\": \"crank-pivot\"",
            "\"joint\": \"nope\"",
            "motions[0].joint",
        ),
        ("\"gravity\": [", "\"gravity\": [1, ", "forces.gravity"),
        ("\"end\": 1", "\"end\": -1", "simulation.end"),
        ("\"end\": 1", "\"end\": 1, \"speed\": 2", "simulation.speed"),
        ("\"mass\": 0.2", "\"mass\": \"heavy\"", "parts[1].mass.mass"),
        ("\"mass\": 0.2", "\"mass\": 0", "parts[1].mass.mass"),
        ("\"parts\": [", "\"parts\": [ 7, ", "parts[0]"),
        ("\"joints\": [", "\"joints\": { ", "line "),
        ("{", "{ \"name\": 3, ", "line 4"),
        ("{", "[", "line "),
    ];
    let asmt: Vec<(&str, &str, &str)> = vec![
        ("\t\tPart\n", "\t\tPort\n", "line "),
        ("RevoluteJoint", "RivetJoint", "line "),
        (
            "/Assembly1/Part1/Marker1",
            "/Assembly1/PartX/Marker1",
            "line ",
        ),
        (
            "/Assembly1/Part1/Marker1",
            "Assembly1/Part1/Marker1",
            "line ",
        ),
        ("\t\t\t\t\t2.0d*pi*time", "\t\t\t\t\t2.0d*pi*(time", "line "),
        (
            "\tConstantGravity\n\t\t0.0 \t-9.81 \t0.0 ",
            "\tConstantGravity\n\t\t0.0 \tminus \t0.0 ",
            "line ",
        ),
        ("\tParts\n", "\tParts\n\t\t\t\tStray\n", "line "),
        ("Assembly\n", "Assemblage\n", "line 1"),
        ("\t\ttend\n", "\t\ttstop\n", "line "),
        ("\t\tJoints\n", "\t\tJoints\n\t\t\tGeneralMotion\n", "line "),
    ];
    let mut out = Vec::new();
    for (k, (from, to, place)) in json.into_iter().enumerate() {
        assert!(four_bar.contains(from), "json case {k}: {from}");
        out.push((
            format!("bad{k:02}.json"),
            four_bar.replacen(from, to, 1),
            place.to_string(),
        ));
    }
    for (k, (from, to, place)) in asmt.into_iter().enumerate() {
        assert!(own.contains(from), "asmt case {k}: {from}");
        out.push((
            format!("bad{k:02}.asmt"),
            own.replacen(from, to, 1),
            place.to_string(),
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
