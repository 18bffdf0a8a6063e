//! Assembly format v1: the spec's example, round trips, and malformed documents with the
//! exact place each error names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use proptest::prelude::*;
use tenon_model::{read_json, write_json, Field, JointType, Place, Scalar};

/// The spec's example file (`../shared/spec/examples/four-bar.json`), kept here so a bare
/// clone tests it too.
const SPEC_EXAMPLE: &str = include_str!("data/spec-four-bar.json");

#[test]
fn the_spec_example_reads() {
    let a = read_json(SPEC_EXAMPLE, Some("four-bar.json")).unwrap();
    assert_eq!(a.name(), "crank-rocker four-bar");
    assert_eq!(a.part_count(), 4);
    assert_eq!(a.joint_count(), 4);
    assert_eq!(a.motions().len(), 1);
    let values = a.parameter_values();
    assert_eq!(values.get("ground_length"), Some(100.0));
    let crank = a.part(a.part_by_id("crank").unwrap()).unwrap();
    assert_eq!(
        crank.marker("b").unwrap().position[0],
        Scalar::Expr("crank_length".into())
    );
    let (_, pivot) = a.joints().next().unwrap();
    assert_eq!(pivot.joint_type, JointType::Revolute);
    assert!(a.part(a.part_by_id("ground").unwrap()).unwrap().grounded);
}

/// Writing then reading gives the same document (compared as written text).
fn round_trips(text: &str) {
    let a = read_json(text, None).unwrap();
    let once = write_json(&a);
    let b = read_json(&once, None).unwrap_or_else(|e| panic!("re-read failed: {e}\n{once}"));
    assert_eq!(write_json(&b), once);
}

#[test]
fn writing_then_reading_gives_the_same_assembly() {
    round_trips(SPEC_EXAMPLE);
    round_trips(EVERYTHING);
}

/// A document using every construct of the format.
const EVERYTHING: &str = r#"{
  "format": "tenon-assembly", "version": 1, "name": "all of it",
  "units": { "length": "m", "angle": "rad", "mass": "g", "time": "s" },
  "parameters": { "L": 2, "half": "L / 2", "turn": "2 * pi" },
  "parts": [
    { "id": "ground", "grounded": true, "markers": { "o": {}, "top": { "position": [0, 0, "L"] } } },
    { "id": "a b/c ü", "placement": { "position": [1, 2, 3], "rotation": { "quaternion": [1, 1, 0, 0] } },
      "markers": { "m 1": { "rotation": { "axis": [0, 1, 0], "angle": "pi / 2" } },
                   "m2": { "rotation": { "matrix": [[0, -1, 0], [1, 0, 0], [0, 0, 1]] } } },
      "mass": { "mass": 3, "center_of_mass": [0, 0, "half"], "inertia": [[2, 0, 0], [0, 2, 0], [0, 0, 3]] },
      "extra": { "color": [1, 0, 0], "note": "kept" } },
    { "id": "cam", "markers": { "c": {} } }
  ],
  "joints": [
    { "id": "hinge", "type": "revolute", "i": { "part": "a b/c ü", "marker": "m 1" },
      "j": { "part": "ground", "marker": "o" }, "angle": "turn / 8",
      "limits": { "angle": [-1, 1] }, "rate": { "angle": "turn" } },
    { "id": "screw", "type": "screw", "i": { "part": "a b/c ü", "marker": "m2" },
      "j": { "part": "ground", "position": [1, 0, 0], "rotation": { "axis": [1, 0, 0], "angle": 0.5 } },
      "pitch": 0.01, "suppressed": true, "rate": { "angle": 1, "distance": "half" } },
    { "id": "gears", "type": "gear", "i": { "part": "cam", "marker": "c" }, "j": { "part": "ground", "marker": "top" },
      "radius_i": 1, "radius_j": "L" },
    { "id": "follow", "type": "cam", "i": { "part": "a b/c ü", "marker": "m2" }, "j": { "part": "cam", "marker": "c" },
      "profile": { "polar": [1, 1.2, 1.1, 0.9] } },
    { "id": "round", "type": "cam", "i": { "part": "a b/c ü", "marker": "m 1" }, "j": { "part": "cam", "marker": "c" },
      "profile": { "circle": { "radius": "half" } }, "extra": {} },
    { "id": "touch", "type": "curve_contact", "i": { "part": "cam", "marker": "c" }, "j": { "part": "ground", "marker": "o" },
      "profile_i": { "points": [[1, 0], [0, "half"], [-1, 0], [0, -1]] }, "profile_j": { "circle": { "radius": 2 } } },
    { "id": "slide", "type": "prismatic", "i": { "part": "cam", "marker": "c" }, "j": { "part": "ground", "marker": "o" },
      "limits": { "distance": [null, "L"] } }
  ],
  "motions": [ { "joint": "slide", "distance": "half * sin(turn * t)" } ],
  "forces": { "gravity": [0, 0, -9.81],
              "springs": [ { "id": "s", "i": { "part": "cam", "marker": "c" }, "j": { "part": "ground", "marker": "top" },
                             "stiffness": 100, "rest_length": "half", "damping": 0.5 } ],
              "loads": [ { "part": "cam", "force": [1, 0, 0], "torque": [0, 0, 1], "at": [0, 0, 1] } ] },
  "simulation": { "end": 2, "step": 0.001, "output_step": 0.01 },
  "extra": { "tool": "test" }
}"#;

#[test]
fn every_construct_reads_with_its_meaning() {
    let a = read_json(EVERYTHING, None).unwrap();
    assert_eq!(a.units().length, tenon_model::LengthUnit::M);
    let slide = a.joint(a.joint_by_id("slide").unwrap()).unwrap();
    assert_eq!(slide.joint_type, JointType::Slider, "alias");
    let hinge = a.joint(a.joint_by_id("hinge").unwrap()).unwrap();
    assert_eq!(
        hinge.field(Field::Angle),
        Some(&Scalar::Expr("turn / 8".into()))
    );
    assert!(a.joint(a.joint_by_id("screw").unwrap()).unwrap().suppressed);
    assert_eq!(a.forces().springs.len(), 1);
    assert_eq!(a.parameter_values().get("half"), Some(1.0));
    assert!(a.extra().unwrap().to_json_text().contains("test"));
}

/// Each malformed document: (what it is, document, place, start of the message).
fn malformed() -> Vec<(&'static str, String, &'static str, &'static str)> {
    let base = |parts: &str, joints: &str| {
        format!(
            r#"{{ "format": "tenon-assembly", "version": 1, "parameters": {{ "L": 10 }},
                 "parts": [ {{ "id": "g", "grounded": true, "markers": {{ "o": {{}} }} }}, {parts} ],
                 "joints": [ {joints} ] }}"#
        )
    };
    let part = r#"{ "id": "p", "markers": { "m": {} } }"#;
    let joint = |body: &str| format!(r#"{{ "id": "j", {body} }}"#);
    let rev = r#""type": "revolute", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }"#;
    vec![
        ("not JSON", "{ \"format\": ".to_string(), "line 1, column 12", "not valid JSON"),
        ("trailing garbage", "{} x".to_string(), "line 1, column 4", "not valid JSON"),
        ("not an object", "[1, 2]".to_string(), "(document)", "expected an object, found an array"),
        ("wrong format", r#"{ "format": "step", "version": 1 }"#.into(), "format", "expected \"tenon-assembly\""),
        ("no version", r#"{ "format": "tenon-assembly" }"#.into(), "(document)", "missing 'version'"),
        ("version 2", r#"{ "format": "tenon-assembly", "version": 2 }"#.into(), "version", "this reader understands version 1 only"),
        ("unknown top-level key", r#"{ "format": "tenon-assembly", "version": 1, "partz": [] }"#.into(), "partz", "unknown key 'partz'"),
        ("wrong length unit", r#"{ "format": "tenon-assembly", "version": 1, "units": { "length": "ft" } }"#.into(), "units.length", "unknown length unit 'ft'"),
        ("parameter cycle", r#"{ "format": "tenon-assembly", "version": 1, "parameters": { "a": "b + 1", "b": "2 * a" } }"#.into(), "parameters.", "parameters refer to each other in a cycle"),
        ("parameter unknown name", r#"{ "format": "tenon-assembly", "version": 1, "parameters": { "a": "q + 1" } }"#.into(), "parameters.a", "unknown name 'q'"),
        ("parameter bad syntax", r#"{ "format": "tenon-assembly", "version": 1, "parameters": { "a": "2 * * 3" } }"#.into(), "parameters.a", "expression '2 * * 3': at character 5"),
        ("parameter not finite", r#"{ "format": "tenon-assembly", "version": 1, "parameters": { "a": "1 / 0" } }"#.into(), "parameters.a", "parameter 'a' is not a finite number"),
        ("part without id", base(r#"{ "markers": {} }"#, ""), "parts[1]", "missing 'id'"),
        ("empty part id", base(r#"{ "id": "" }"#, ""), "parts[1].id", "a part id must not be empty"),
        ("duplicate part id", base(r#"{ "id": "g" }"#, ""), "parts[1].id", "part id 'g' is used twice"),
        ("unknown part key", base(r#"{ "id": "p", "grounded": true, "colour": 1 }"#, ""), "parts[1].colour", "unknown key 'colour'"),
        ("grounded not bool", base(r#"{ "id": "p", "grounded": "yes" }"#, ""), "parts[1].grounded", "expected true or false"),
        ("zero axis", base(r#"{ "id": "p", "placement": { "rotation": { "axis": [0, 0, 0], "angle": 1 } } }"#, ""), "parts[1].placement.rotation.axis", "the rotation axis is zero"),
        ("zero quaternion", base(r#"{ "id": "p", "markers": { "m": { "rotation": { "quaternion": [0, 0, 0, 0] } } } }"#, ""), "parts[1].markers.m.rotation.quaternion", "the quaternion is zero"),
        ("not orthonormal", base(r#"{ "id": "p", "placement": { "rotation": { "matrix": [[1, 0, 0], [0, 1, 0.1], [0, 0, 1]] } } }"#, ""), "parts[1].placement.rotation.matrix", "the rotation matrix is not orthonormal"),
        ("reflection", base(r#"{ "id": "p", "placement": { "rotation": { "matrix": [[1, 0, 0], [0, 1, 0], [0, 0, -1]] } } }"#, ""), "parts[1].placement.rotation.matrix", "the rotation matrix has determinant"),
        ("two rotation forms", base(r#"{ "id": "p", "placement": { "rotation": { "axis": [0, 0, 1], "angle": 1, "quaternion": [1, 0, 0, 0] } } }"#, ""), "parts[1].placement.rotation", "a rotation takes one form"),
        ("position of 2", base(r#"{ "id": "p", "placement": { "position": [1, 2] } }"#, ""), "parts[1].placement.position", "expected 3 numbers, found 2"),
        ("unknown name in position", base(r#"{ "id": "p", "placement": { "position": [1, "W", 0] } }"#, ""), "parts[1].placement.position[1]", "'W': at character 1: unknown name 'W'"),
        ("inertia not positive definite", base(r#"{ "id": "p", "mass": { "mass": 1, "inertia": [[1, 0, 0], [0, -1, 0], [0, 0, 1]] } }"#, ""), "parts[1].mass.inertia", "the inertia matrix is not positive semi-definite"),
        ("inertia triangle", base(r#"{ "id": "p", "mass": { "mass": 1, "inertia": [[1, 0, 0], [0, 1, 0], [0, 0, 5]] } }"#, ""), "parts[1].mass.inertia", "the principal moments of inertia"),
        ("inertia not symmetric", base(r#"{ "id": "p", "mass": { "mass": 1, "inertia": [[2, 1, 0], [0, 2, 0], [0, 0, 2]] } }"#, ""), "parts[1].mass.inertia", "the inertia matrix is not symmetric"),
        ("negative mass", base(r#"{ "id": "p", "mass": { "mass": -1, "inertia": [[1, 0, 0], [0, 1, 0], [0, 0, 1]] } }"#, ""), "parts[1].mass.mass", "must be greater than 0"),
        ("unknown joint type", base(part, &joint(r#""type": "weld", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }"#)), "joints[0].type", "unknown joint type 'weld'"),
        ("missing part", base(part, &joint(r#""type": "ball", "i": { "part": "q", "marker": "m" }, "j": { "part": "g", "marker": "o" }"#)), "joints[0].i.part", "no part has id 'q'"),
        ("missing marker", base(part, &joint(r#""type": "ball", "i": { "part": "p", "marker": "n" }, "j": { "part": "g", "marker": "o" }"#)), "joints[0].i.marker", "part 'p' has no marker 'n'"),
        ("part to itself", base(part, &joint(r#""type": "ball", "i": { "part": "p", "marker": "m" }, "j": { "part": "p", "position": [1, 0, 0] }"#)), "joints[0].j.part", "the joint connects a part to itself"),
        ("missing joint field", base(part, &joint(r#""type": "screw", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }"#)), "joints[0]", "a screw joint needs 'pitch'"),
        ("field of another type", base(part, &joint(&format!(r#"{rev}, "pitch": 2"#))), "joints[0].pitch", "a revolute joint has no field 'pitch'"),
        ("distance not positive", base(part, &joint(r#""type": "distance", "distance": 0, "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }"#)), "joints[0].distance", "must be greater than 0, is 0"),
        ("angle out of range", base(part, &joint(r#""type": "angle", "angle": 200, "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }"#)), "joints[0].angle", "must be an angle from 0 to 180 degrees"),
        ("duplicate joint id", base(part, &format!("{}, {}", joint(rev), joint(rev))), "joints[1].id", "joint id 'j' is used twice"),
        ("marker and inline", base(part, &joint(r#""type": "ball", "i": { "part": "p", "marker": "m", "position": [0, 0, 0] }, "j": { "part": "g", "marker": "o" }"#)), "joints[0].i", "give either \"marker\" or an inline"),
        ("limit on no free coordinate", base(part, &joint(&format!(r#"{rev}, "limits": {{ "distance": [0, 1] }}"#))), "joints[0].limits.distance", "a revolute joint has no free distance to limit"),
        ("limits reversed", base(part, &joint(&format!(r#"{rev}, "limits": {{ "angle": [1, -1] }}"#))), "joints[0].limits.angle", "the minimum 1 is above the maximum -1"),
        ("cam without profile", base(part, &joint(r#""type": "cam", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }"#)), "joints[0]", "a cam joint needs 'profile'"),
        ("suppressed not bool", base(part, &joint(&format!(r#"{rev}, "suppressed": 1"#))), "joints[0].suppressed", "expected true or false"),
        ("curve contact without profile_i", base(part, &joint(&format!(r#"{}, "profile_j": {{ "circle": {{ "radius": 1 }} }}"#, r#""type": "curve_contact", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }"#))), "joints[0]", "a curve_contact joint needs 'profile_i'"),
        ("curve contact with a cam's profile", base(part, &joint(&format!(r#"{}, "profile_i": {{ "circle": {{ "radius": 1 }} }}, "profile_j": {{ "circle": {{ "radius": 1 }} }}, "profile": {{ "circle": {{ "radius": 1 }} }}"#, r#""type": "curve_contact", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }"#))), "joints[0].profile", "a curve_contact joint has no 'profile'"),
        ("cam with profile_i", base(part, &joint(r#""type": "cam", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }, "profile": { "circle": { "radius": 1 } }, "profile_i": { "circle": { "radius": 1 } }"#)), "joints[0].profile_i", "a cam joint has no 'profile_i'"),
        ("two profile points", base(part, &joint(r#""type": "cam", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }, "profile": { "points": [[0, 0], [1, 0]] }"#)), "joints[0].profile.points", "a points profile has 3 to 4096 points, found 2"),
        ("profile point of 3", base(part, &joint(r#""type": "cam", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }, "profile": { "points": [[0, 0], [1, 0, 2], [1, 1]] }"#)), "joints[0].profile.points[1]", "a profile point is [x, y], found 3 numbers"),
        ("profile point repeated", base(part, &joint(r#""type": "cam", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }, "profile": { "points": [[0, 0], [1, 0], [1, 0], [0, 1]] }"#)), "joints[0].profile.points[2]", "point 2 repeats point 1"),
        ("profile closed by hand", base(part, &joint(r#""type": "cam", "i": { "part": "p", "marker": "m" }, "j": { "part": "g", "marker": "o" }, "profile": { "points": [[0, 0], [1, 0], [0, 1], [0, 0]] }"#)), "joints[0].profile.points[0]", "the last point repeats the first"),
        ("duplicate key", r#"{ "format": "tenon-assembly", "version": 1, "version": 1 }"#.into(), "line 1, column 53", "not valid JSON: key 'version' appears twice"),
        // The parts and joints are read an item at a time from their text: syntax
        // errors inside them are placed in the file, and come before other problems.
        ("duplicate key in a part", base(r#"{ "id": "p", "id": "q" }"#, ""), "line 2, column 102", "not valid JSON: key 'id' appears twice"),
        ("duplicate key in a joint", base(part, &joint(&format!(r#"{rev}, "id": "k""#))), "line 3, column 140", "not valid JSON: key 'id' appears twice"),
        ("trailing comma in a part", base(r#"{ "id": "p", }"#, ""), "line 2, column 99", "not valid JSON: trailing comma"),
        ("bad part, then bad JSON in a joint", base(r#"{ "id": "p", "colour": 1 }"#, r#"{ "id": "j" "x": 1 }"#), "line 3, column 42", "not valid JSON: expected `,` or `}`"),
        ("parts not a list", r#"{ "format": "tenon-assembly", "version": 1, "parts": {} }"#.into(), "parts", "expected an array, found an object"),
        ("joints not a list", r#"{ "format": "tenon-assembly", "version": 1, "parts": [], "joints": 5 }"#.into(), "joints", "expected an array, found a number"),
        ("parts twice", r#"{ "format": "tenon-assembly", "version": 1, "parts": [], "parts": [] }"#.into(), "line 1, column 64", "not valid JSON: key 'parts' appears twice"),
        ("brackets crossed", r#"{ "format": "tenon-assembly", "version": 1, "parts": [ { "id": "g" ] }, "joints": [] }"#.into(), "line 1, column 68", "not valid JSON: expected `,` or `}`"),
        ("parts with an escaped key", r#"{ "format": "tenon-assembly", "version": 1, "par\u0074s": [ { "id": "g", "grounded": true }, { "id": "p", "colour": 1 } ] }"#.into(), "parts[1].colour", "unknown key 'colour'"),
        ("null number", base(r#"{ "id": "p", "placement": { "position": [null, 0, 0] } }"#, ""), "parts[1].placement.position[0]", "expected a number or an expression string, found null"),
    ]
}

#[test]
fn malformed_documents_name_the_place_and_the_problem() {
    let cases = malformed();
    assert!(cases.len() >= 30);
    for (what, text, place, message) in cases {
        let err = read_json(&text, Some("bad.json")).expect_err(what);
        let got_place = err.place().to_string();
        assert!(
            got_place.starts_with(place),
            "{what}: place {got_place:?}, want {place:?} ({err})"
        );
        assert!(
            err.message().starts_with(message),
            "{what}: message {:?}, want {message:?}",
            err.message()
        );
        assert!(err.to_string().starts_with("bad.json: "), "{what}: {err}");
    }
}

#[test]
fn motions_must_drive_a_free_coordinate() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "parts": [ { "id": "g", "grounded": true }, { "id": "p" } ],
      "joints": [ { "id": "j", "type": "revolute", "i": { "part": "p" }, "j": { "part": "g" } } ],
      "motions": [ { "joint": "j", "distance": "10 * t" } ] }"#;
    let err = read_json(text, None).unwrap_err();
    assert_eq!(err.place(), &Place::JsonPath("motions[0].distance".into()));
    assert_eq!(
        err.message(),
        "a revolute joint has no free distance to drive"
    );
    let ok = text.replace("\"distance\": \"10 * t\"", "\"angle\": \"360 * t\"");
    assert_eq!(read_json(&ok, None).unwrap().motions().len(), 1);
    let unknown = text.replace("\"distance\": \"10 * t\"", "\"angle\": \"360 * s\"");
    assert!(read_json(&unknown, None)
        .unwrap_err()
        .message()
        .contains("unknown name 's'"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(text in any::<String>()) {
        let _ = read_json(&text, None);
    }

    #[test]
    fn mutated_files_never_panic(cuts in prop::collection::vec((any::<usize>(), any::<usize>(), prop::sample::select(b"{}[]\",:0-9.e x\"tn".to_vec())), 1..6)) {
        for base in [SPEC_EXAMPLE, EVERYTHING] {
            let text = common::mutate(base, &cuts);
            if let Ok(a) = read_json(&text, None) {
                // Whatever reads also writes and reads back.
                let again = write_json(&a);
                prop_assert!(read_json(&again, None).is_ok());
            }
        }
    }
}

/// `extra` on every kind of object (the spec lets any object carry it), with integers,
/// big numbers, key order and odd spacing that must come back character for character.
const EXTRAS_EVERYWHERE: &str = r#"{
  "format": "tenon-assembly", "version": 1,
  "units": { "length": "mm", "extra": {"u": 1} },
  "parameters": { "extra": 3, "L": "extra * 2" },
  "parts": [
    { "id": "g", "grounded": true,
      "placement": { "position": [0, 0, 0], "extra": {"p": 12345678901234567890} },
      "markers": {
        "o": { "extra": [1,2,  3] },
        "extra": { "position": [1, 0, 0], "rotation": { "axis": [0, 0, 1], "angle": 90, "extra": {"z": 1, "a": 2} } }
      },
      "extra": {"part": true} },
    { "id": "b", "markers": { "m": {} }, "mass": { "mass": 1, "center_of_mass": [0, 0, 0], "inertia": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "extra": "mass-extra" } },
    { "id": "c", "markers": { "m": { "extra": {"second": 2} } } }
  ],
  "joints": [
    { "id": "r", "type": "revolute", "i": { "part": "b", "marker": "m", "extra": {"ref": "i"} },
      "j": { "part": "g", "marker": "o" }, "limits": { "angle": [-90, 90], "extra": 7 }, "extra": {"joint": 1} },
    { "id": "s", "type": "revolute", "i": { "part": "c", "marker": "m" }, "j": { "part": "g", "marker": "extra" } }
  ],
  "motions": [ { "joint": "r", "angle": "30 * t", "extra": {"motion": 0} }, { "joint": "s", "angle": "10 * t", "extra": {"motion": 1} } ],
  "forces": { "gravity": [0, 0, -9810], "loads": [ { "part": "b", "force": [1, 0, 0], "torque": [0, 0, 0], "extra": {"load": 0} } ], "extra": {"forces": true} },
  "simulation": { "end": 1, "step": 0.01, "extra": {"sim": 100} },
  "extra": {"top": 1}
}"#;

#[test]
fn extra_is_kept_verbatim_on_every_object_through_a_round_trip() {
    let a = read_json(EXTRAS_EVERYWHERE, None).unwrap();
    // A parameter and a marker may be called "extra".
    assert_eq!(a.parameter_values().get("L"), Some(6.0));
    let written = write_json(&a);
    for text in [
        r#"{"u": 1}"#,
        r#"{"p": 12345678901234567890}"#,
        "[1,2,  3]",
        r#"{"z": 1, "a": 2}"#,
        r#"{"part": true}"#,
        r#""mass-extra""#,
        r#"{"second": 2}"#,
        r#"{"ref": "i"}"#,
        r#""extra": 7"#,
        r#"{"joint": 1}"#,
        r#"{"motion": 0}"#,
        r#"{"motion": 1}"#,
        r#"{"load": 0}"#,
        r#"{"forces": true}"#,
        r#"{"sim": 100}"#,
        r#"{"top": 1}"#,
    ] {
        assert!(written.contains(text), "{text} lost:\n{written}");
    }
    // Reading what was written writes the same again.
    let again = read_json(&written, None).unwrap();
    assert_eq!(write_json(&again), written);
}

#[test]
fn extra_follows_its_element_when_others_are_removed() {
    let mut a = read_json(EXTRAS_EVERYWHERE, None).unwrap();
    // Removing part b takes its mass extra, joint r (and its motion and extras), and
    // the load on b; part c's marker extra and the second motion's stay with them.
    let b = a.part_by_id("b").unwrap();
    a.remove_part(b).unwrap();
    let written = write_json(&a);
    for gone in [
        r#""mass-extra""#,
        r#"{"ref": "i"}"#,
        r#"{"motion": 0}"#,
        r#"{"load": 0}"#,
    ] {
        assert!(!written.contains(gone), "{gone} kept:\n{written}");
    }
    for kept in [r#"{"second": 2}"#, r#"{"motion": 1}"#, r#"{"part": true}"#] {
        assert!(written.contains(kept), "{kept} lost:\n{written}");
    }
    let again = read_json(&written, None).unwrap();
    assert_eq!(again.motions().len(), 1);
    assert_eq!(write_json(&again), written);
}

/// The top-level geometric `tolerance` (model length units): read, written back, and
/// refused with its path when it is not a finite length of 0 or more.
#[test]
fn the_geometric_tolerance_reads_writes_and_is_checked() {
    let doc = |t: &str| {
        format!(
            r#"{{ "format": "tenon-assembly", "version": 1, "tolerance": {t},
  "parts": [ {{ "id": "a", "grounded": true }} ] }}"#
        )
    };
    let a = read_json(&doc("0.05"), None).unwrap();
    assert_eq!(a.tolerance(), Some(0.05));
    let again = read_json(&write_json(&a), None).unwrap();
    assert_eq!(again.tolerance(), Some(0.05));
    assert_eq!(read_json(&doc("0"), None).unwrap().tolerance(), Some(0.0));
    for bad in ["-1", "\"0.05\"", "null"] {
        let err = read_json(&doc(bad), None).unwrap_err();
        assert_eq!(err.place(), &Place::JsonPath("tolerance".into()), "{bad}");
    }
    let none = r#"{ "format": "tenon-assembly", "version": 1, "parts": [] }"#;
    assert_eq!(read_json(none, None).unwrap().tolerance(), None);
}

/// A ground holding many markers (the anchors of hundreds of mechanisms): its markers are
/// found by name through the assembly's index, before and after markers are added, a
/// The parts and joints are found in the text by a scan of its brackets and quotes:
/// brackets, braces, quotes and escapes inside ids and names, keys in other orders,
/// and `parts` and `joints` inside other values do not mislead it.
#[test]
fn lists_read_past_brackets_and_quotes_in_strings() {
    let text = r#"{ "joints": [ { "id": "j[0]", "type": "revolute",
          "i": { "part": "p]}[{\"", "marker": "m{" }, "j": { "part": "g", "marker": "o" } } ],
      "extra": { "parts": [1, 2], "joints": "]" },
      "parts": [ { "id": "g", "grounded": true, "markers": { "o": {} } },
                 { "id": "p]}[{\"", "markers": { "m{": { "position": [1, 2, 3] } } } ],
      "version": 1, "format": "tenon-assembly" }"#;
    let a = read_json(text, None).unwrap();
    let ids: Vec<&str> = a.parts().map(|(_, p)| p.id.as_str()).collect();
    assert_eq!(ids, ["g", "p]}[{\""]);
    let joint = a.joint(a.joint_by_id("j[0]").unwrap()).unwrap();
    assert_eq!(a.part(joint.i.part).map(|p| p.id.as_str()), Some("p]}[{\""));
    assert!(a
        .extra()
        .unwrap()
        .to_json_text()
        .contains(r#""joints": "]""#));
    // Without escapes anywhere the scan goes a chunk at a time: strings across chunks,
    // a list ending in its last whole chunk and after it.
    for pad in [0, 1, 30, 64, 200] {
        let long = "x".repeat(pad);
        let text = format!(
            r#"{{ "format": "tenon-assembly", "version": 1, "parts": [
              {{ "id": "g", "grounded": true, "markers": {{ "o": {{}} }} }},
              {{ "id": "p]}}[{{{long}", "markers": {{ "m{{": {{ "position": [1, 2, 3] }} }} }} ],
              "joints": [ {{ "id": "[j{long}", "type": "ball",
                "i": {{ "part": "p]}}[{{{long}", "marker": "m{{" }}, "j": {{ "part": "g", "marker": "o" }} }} ] }}"#
        );
        let a = read_json(&text, None).unwrap();
        let ids: Vec<String> = a.parts().map(|(_, p)| p.id.clone()).collect();
        assert_eq!(ids, ["g".to_string(), format!("p]}}[{{{long}")]);
        assert!(a.joint_by_id(&format!("[j{long}")).is_some());
    }
}

/// name given twice is still refused, and the lookups agree with the part's own list.
#[test]
fn many_markers_on_one_part_are_found_by_name() {
    use tenon_model::{Assembly, Part, Placement, Units};
    let n = 300;
    let markers: Vec<String> = (0..n)
        .map(|k| format!(r#""m{k}": {{"position": [{k}, 0, 0]}}"#))
        .collect();
    let text = format!(
        r#"{{"format": "tenon-assembly", "version": 1, "name": "anchors",
            "parts": [{{"id": "ground", "grounded": true, "markers": {{{}}}}},
                      {{"id": "arm", "markers": {{"a": {{}}}}}}],
            "joints": [{{"id": "last", "type": "ball", "i": {{"part": "ground", "marker": "m{}"}},
                         "j": {{"part": "arm", "marker": "a"}}}}]}}"#,
        markers.join(","),
        n - 1
    );
    let mut a = read_json(&text, None).unwrap();
    let ground = a.part_by_id("ground").unwrap();
    for k in [0, 17, n - 1] {
        let p = a.marker(ground, &format!("m{k}")).unwrap();
        assert_eq!(p.position[0], Scalar::Number(k as f64));
        assert_eq!(Some(p), a.part(ground).unwrap().marker(&format!("m{k}")));
    }
    assert!(a.marker(ground, "m300").is_none());
    a.add_marker(
        ground,
        "m300",
        Placement::from_numbers([-1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]),
    )
    .unwrap();
    assert_eq!(
        a.marker(ground, "m300").unwrap().position[0],
        Scalar::Number(-1.0)
    );
    let twice = a
        .add_marker(
            ground,
            "m5",
            Placement::from_numbers([0.0; 3], [1.0, 0.0, 0.0, 0.0]),
        )
        .unwrap_err();
    assert!(
        twice.to_string().contains("marker 'm5' is defined twice"),
        "{twice}"
    );
    let dup = text.replace(
        r#""m7": {"position": [7, 0, 0]}"#,
        r#""m7": {"position": [7, 0, 0]}, "m7": {}"#,
    );
    assert!(read_json(&dup, None).is_err());
    // A part built in code with many markers, one of them twice.
    let mut b = Assembly::new("api", Units::default());
    let mut part = Part::new("plate", Placement::default());
    for k in 0..40 {
        part.markers.push((format!("h{k}"), Placement::default()));
    }
    part.markers.push(("h3".into(), Placement::default()));
    let err = b.add_part(part).unwrap_err();
    assert!(
        err.to_string().contains("marker 'h3' is defined twice"),
        "{err}"
    );
}
