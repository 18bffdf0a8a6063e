//! Assemblies built in code are held to the rules files are: each invalid element the
//! JSON reader refuses, `Assembly`'s builders refuse with the same message (the place
//! differs: a JSON path there, the element here).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::{
    read_json, Assembly, CamProfile, Coordinate, DrivenMotion, Field, Forces, Joint, Limits,
    MarkerSpec, Part, Placement, Rotation, Scalar, Simulation, Spring,
};

/// A valid assembly with one joint of each shape the cases break.
const BASE: &str = r#"{ "format": "tenon-assembly", "version": 1,
  "parameters": { "L": 100 },
  "parts": [
    { "id": "ground", "grounded": true, "markers": { "o": {}, "d": { "position": [100, 30, 0] } } },
    { "id": "arm", "markers": { "a": {}, "b": { "position": ["L", 0, 0] } },
      "mass": { "mass": 1, "inertia": [[1, 0, 0], [0, 1, 0], [0, 0, 1]] } },
    { "id": "wheel", "placement": { "position": [0, 0, 50] } }
  ],
  "joints": [
    { "id": "pin", "type": "revolute", "i": { "part": "arm", "marker": "a" }, "j": { "part": "ground", "marker": "o" } },
    { "id": "gap", "type": "distance", "i": { "part": "arm", "marker": "b" }, "j": { "part": "ground", "marker": "d" }, "distance": 50 },
    { "id": "mesh", "type": "gear", "i": { "part": "wheel" }, "j": { "part": "arm" }, "radius_i": 10, "radius_j": 20 },
    { "id": "tilt", "type": "angle", "i": { "part": "wheel" }, "j": { "part": "ground" }, "angle": 30 },
    { "id": "lead", "type": "screw", "i": { "part": "wheel" }, "j": { "part": "ground" }, "pitch": 2 },
    { "id": "lobe", "type": "cam", "i": { "part": "wheel" }, "j": { "part": "arm" }, "profile": { "circle": { "radius": 5 } } },
    { "id": "ball", "type": "ball", "i": { "part": "wheel" }, "j": { "part": "ground" } }
  ]
}"#;

fn base() -> Assembly {
    read_json(BASE, Some("base.json")).unwrap()
}

/// The reader's message for `BASE` with `from` replaced by `to`.
fn reader_message(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from} is not in the base file");
    let text = BASE.replacen(from, to, 1);
    read_json(&text, Some("bad.json"))
        .expect_err("the reader must refuse it")
        .message()
        .to_string()
}

/// The builder's message for joint `id` changed by `change` and added again.
fn joint_message(id: &str, change: impl FnOnce(&mut Joint)) -> String {
    let mut a = base();
    let key = a.joint_by_id(id).unwrap();
    let mut joint = a.remove_joint(key).unwrap();
    change(&mut joint);
    a.add_joint(joint)
        .expect_err("the builder must refuse it")
        .message()
        .to_string()
}

/// The builder's message for part `id` changed by `change` and added again.
fn part_message(id: &str, change: impl FnOnce(&mut Part)) -> String {
    let mut a = base();
    let key = a.part_by_id(id).unwrap();
    let (mut part, _) = a.remove_part(key).unwrap();
    change(&mut part);
    a.add_part(part)
        .expect_err("the builder must refuse it")
        .message()
        .to_string()
}

/// One case: the element's id, the text change that breaks it in the file, the same
/// change made in code, and the message both must give.
type Case<T> = (
    &'static str,
    (&'static str, &'static str),
    Box<dyn FnOnce(&mut T)>,
    &'static str,
);

fn set_field(j: &mut Joint, field: Field, value: f64) {
    j.fields.retain(|(f, _)| *f != field);
    j.fields.push((field, Scalar::Number(value)));
    j.fields.sort_by_key(|(f, _)| *f);
}

fn n(x: f64) -> Scalar {
    Scalar::Number(x)
}

#[test]
fn every_invalid_joint_is_refused_with_the_readers_message() {
    let cases: Vec<Case<Joint>> = vec![
        (
            "gap",
            (r#", "distance": 50 }"#, " }"),
            Box::new(|j| j.fields.clear()),
            "a distance joint needs 'distance'",
        ),
        (
            "gap",
            (r#""distance": 50"#, r#""distance": -5"#),
            Box::new(|j| set_field(j, Field::Distance, -5.0)),
            "must be greater than 0, is -5",
        ),
        (
            "gap",
            (r#""distance": 50"#, r#""distance": "L - 100""#),
            Box::new(|j| {
                j.fields = vec![(Field::Distance, Scalar::Expr("L - 100".into()))];
            }),
            "must be greater than 0, is 0",
        ),
        (
            "tilt",
            (r#""angle": 30"#, r#""angle": 200"#),
            Box::new(|j| set_field(j, Field::Angle, 200.0)),
            "must be an angle from 0 to 180 degrees, is 200",
        ),
        (
            "mesh",
            (r#""radius_i": 10"#, r#""radius_i": 0"#),
            Box::new(|j| set_field(j, Field::RadiusI, 0.0)),
            "must be greater than 0, is 0",
        ),
        (
            "lead",
            (r#""pitch": 2"#, r#""pitch": 0"#),
            Box::new(|j| set_field(j, Field::Pitch, 0.0)),
            "must be not 0, is 0",
        ),
        (
            "pin",
            (r#""marker": "o" } },"#, r#""marker": "o" }, "pitch": 3 },"#),
            Box::new(|j| set_field(j, Field::Pitch, 3.0)),
            "a revolute joint has no field 'pitch'",
        ),
        (
            "lobe",
            (r#", "profile": { "circle": { "radius": 5 } } }"#, " }"),
            Box::new(|j| j.profile = None),
            "a cam joint needs 'profile'",
        ),
        (
            "lobe",
            (r#""radius": 5"#, r#""radius": -1"#),
            Box::new(|j| j.profile = Some(CamProfile::Circle { radius: n(-1.0) })),
            "must be greater than 0, is -1",
        ),
        (
            "lobe",
            (r#"{ "circle": { "radius": 5 } }"#, r#"{ "polar": [5, 6] }"#),
            Box::new(|j| j.profile = Some(CamProfile::Polar(vec![n(5.0), n(6.0)]))),
            "a polar profile has 3 to 4096 radii, found 2",
        ),
        (
            "lobe",
            (
                r#"{ "circle": { "radius": 5 } }"#,
                r#"{ "points": [[0, 0], [1, 0], [1, 0], [0, 1]] }"#,
            ),
            Box::new(|j| {
                j.profile = Some(CamProfile::Points(vec![
                    [n(0.0), n(0.0)],
                    [n(1.0), n(0.0)],
                    [n(1.0), n(0.0)],
                    [n(0.0), n(1.0)],
                ]))
            }),
            "point 2 repeats point 1",
        ),
        (
            "ball",
            (
                r#""type": "ball", "i": { "part": "wheel" }, "j": { "part": "ground" } }"#,
                r#""type": "ball", "i": { "part": "wheel" }, "j": { "part": "ground" }, "limits": { "angle": [0, 10] } }"#,
            ),
            Box::new(|j| {
                j.limits = Limits {
                    angle: Some(range(Some(0.0), Some(10.0))),
                    distance: None,
                }
            }),
            "a ball joint has no free angle to limit",
        ),
        (
            "pin",
            (
                r#""marker": "o" } },"#,
                r#""marker": "o" }, "limits": { "angle": [20, 10] } },"#,
            ),
            Box::new(|j| {
                j.limits = Limits {
                    angle: Some(range(Some(20.0), Some(10.0))),
                    distance: None,
                }
            }),
            "the minimum 20 is above the maximum 10",
        ),
        (
            "pin",
            (
                r#""marker": "o" } },"#,
                r#""marker": "o" }, "limits": { "angle": [null, null] } },"#,
            ),
            Box::new(|j| {
                j.limits = Limits {
                    angle: Some(range(None, None)),
                    distance: None,
                }
            }),
            "a limit needs a minimum, a maximum or both (null is an open side)",
        ),
        (
            "pin",
            (r#"{ "id": "pin","#, r#"{ "id": "","#),
            Box::new(|j| j.id.clear()),
            "a joint id must not be empty",
        ),
        (
            "pin",
            (
                r#""j": { "part": "ground", "marker": "o" } },"#,
                r#""j": { "part": "arm", "marker": "b" } },"#,
            ),
            Box::new(|j| {
                j.j = j.i.clone();
                j.j.marker = MarkerSpec::Named("b".into());
            }),
            "the joint connects a part to itself",
        ),
        (
            "pin",
            (
                r#""marker": "o" } },"#,
                r#""marker": "o" }, "profile": { "circle": { "radius": 5 } } },"#,
            ),
            Box::new(|j| j.profile = Some(CamProfile::Circle { radius: n(5.0) })),
            "a revolute joint has no 'profile'",
        ),
        (
            "ball",
            (
                r#""type": "ball", "i": { "part": "wheel" }"#,
                r#""type": "ball", "i": { "part": "wheel", "rotation": { "axis": [0, 0, 0], "angle": 5 } }"#,
            ),
            Box::new(|j| {
                j.i.marker = MarkerSpec::Inline(Box::new(Placement {
                    position: [n(0.0), n(0.0), n(0.0)],
                    rotation: Rotation::AxisAngle {
                        axis: [n(0.0), n(0.0), n(0.0)],
                        angle: n(5.0),
                    },
                }))
            }),
            "the rotation axis is zero",
        ),
    ];
    assert!(cases.len() >= 15);
    for (id, (from, to), change, want) in cases {
        let read = reader_message(from, to);
        let built = joint_message(id, change);
        assert_eq!(read, want, "reader, {id}: {to}");
        assert_eq!(built, want, "builder, {id}: {to}");
    }
}

fn range(min: Option<f64>, max: Option<f64>) -> tenon::Range {
    tenon::Range {
        min: min.map(n),
        max: max.map(n),
    }
}

#[test]
fn every_invalid_part_and_mass_is_refused_with_the_readers_message() {
    let unit = || {
        [
            [n(1.0), n(0.0), n(0.0)],
            [n(0.0), n(1.0), n(0.0)],
            [n(0.0), n(0.0), n(1.0)],
        ]
    };
    let cases: Vec<Case<Part>> = vec![
        (
            "wheel",
            (r#"{ "id": "wheel","#, r#"{ "id": "","#),
            Box::new(|p| p.id.clear()),
            "a part id must not be empty",
        ),
        (
            "wheel",
            (
                r#""placement": { "position": [0, 0, 50] }"#,
                r#""placement": { "rotation": { "quaternion": [0, 0, 0, 0] } }"#,
            ),
            Box::new(|p| {
                p.placement.rotation = Rotation::Quaternion([n(0.0), n(0.0), n(0.0), n(0.0)])
            }),
            "the quaternion is zero",
        ),
        (
            "wheel",
            (
                r#""placement": { "position": [0, 0, 50] }"#,
                r#""placement": { "rotation": { "matrix": [[1, 0, 0], [0, 1, 0], [0, 1, 1]] } }"#,
            ),
            Box::new(move |p| {
                let mut m = unit();
                m[2][1] = n(1.0);
                p.placement.rotation = Rotation::Matrix(m)
            }),
            "the rotation matrix is not orthonormal (rows 1 and 2: dot product 1.000000000, expected 0)",
        ),
        (
            "arm",
            (r#""b": { "position": ["L", 0, 0] }"#, r#""b": { "position": ["M", 0, 0] }"#),
            Box::new(|p| p.markers[1].1.position[0] = Scalar::Expr("M".into())),
            "'M': at character 1: unknown name 'M'",
        ),
        (
            "arm",
            (r#""a": {}, "b""#, r#""": {}, "b""#),
            Box::new(|p| p.markers[0].0.clear()),
            "a marker name must not be empty",
        ),
        (
            "arm",
            (r#""mass": 1,"#, r#""mass": -1,"#),
            Box::new(|p| p.mass.as_mut().unwrap().mass = n(-1.0)),
            "must be greater than 0, is -1",
        ),
        (
            "arm",
            (
                r#""inertia": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]"#,
                r#""inertia": [[1, 0, 0], [0, -1, 0], [0, 0, 1]]"#,
            ),
            Box::new(|p| p.mass.as_mut().unwrap().inertia[1][1] = n(-1.0)),
            "the inertia matrix is not positive semi-definite",
        ),
        (
            "arm",
            (
                r#""inertia": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]"#,
                r#""inertia": [[1, 0, 0], [0, 1, 0], [0, 0, 5]]"#,
            ),
            Box::new(|p| p.mass.as_mut().unwrap().inertia[2][2] = n(5.0)),
            "the principal moments of inertia (1, 1, 5) break the triangle inequality (no real body has them)",
        ),
        (
            "arm",
            (
                r#""inertia": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]"#,
                r#""inertia": [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]"#,
            ),
            Box::new(|p| p.mass.as_mut().unwrap().inertia[0][1] = n(0.5)),
            "the inertia matrix is not symmetric ([0][1] = 0.5, [1][0] = 0)",
        ),
    ];
    for (id, (from, to), change, want) in cases {
        let read = reader_message(from, to);
        let built = part_message(id, change);
        assert_eq!(read, want, "reader, {id}: {to}");
        assert_eq!(built, want, "builder, {id}: {to}");
    }
}

#[test]
fn motions_forces_and_simulation_are_refused_with_the_readers_message() {
    // A motion on a joint with no free angle.
    let read = reader_message(
        "\n  ]\n}",
        "\n  ],\n  \"motions\": [ { \"joint\": \"ball\", \"angle\": \"t\" } ]\n}",
    );
    let mut a = base();
    let ball = a.joint_by_id("ball").unwrap();
    let built = a
        .add_motion(DrivenMotion {
            joint: ball,
            coordinate: Coordinate::Angle,
            value: Scalar::Expr("t".into()),
        })
        .unwrap_err();
    assert_eq!(read, "a ball joint has no free angle to drive");
    assert_eq!(built.message(), read);

    // A simulation step of 0.
    let read = reader_message(
        "\n  ]\n}",
        "\n  ],\n  \"simulation\": { \"end\": 1, \"step\": 0 }\n}",
    );
    let built = base()
        .set_simulation(Some(Simulation::new(n(1.0), n(0.0))))
        .unwrap_err();
    assert_eq!(read, "must be greater than 0, is 0");
    assert_eq!(built.message(), read);

    // A spring with a negative stiffness.
    let read = reader_message(
        "\n  ]\n}",
        "\n  ],\n  \"forces\": { \"springs\": [ { \"id\": \"s\", \"i\": { \"part\": \"arm\" }, \"j\": { \"part\": \"ground\" }, \"stiffness\": -1, \"rest_length\": 1 } ] }\n}",
    );
    let mut a = base();
    let (arm, ground) = (
        a.part_by_id("arm").unwrap(),
        a.part_by_id("ground").unwrap(),
    );
    let end = |part| tenon::MarkerRef {
        part,
        marker: MarkerSpec::Inline(Box::default()),
    };
    let built = a
        .set_forces(Forces {
            gravity: None,
            springs: vec![Spring {
                id: "s".into(),
                i: end(arm),
                j: end(ground),
                stiffness: n(-1.0),
                rest_length: n(1.0),
                damping: n(0.0),
            }],
            loads: vec![],
        })
        .unwrap_err();
    assert_eq!(read, "must be 0 or more, is -1");
    assert_eq!(built.message(), read);
}

#[test]
fn a_parameter_change_is_checked_like_a_load() {
    let mut a = base();
    // L = 0 makes no element invalid by itself, but a gap distance "L - 100" would be:
    // use the gear radius through a parameter instead.
    let mut m = tenon::Mechanism::new(a.clone()).unwrap();
    assert!(m.set_parameter("L", 20.0).is_ok());
    let key = a.joint_by_id("mesh").unwrap();
    let mut mesh = a.remove_joint(key).unwrap();
    mesh.fields = vec![
        (Field::RadiusI, Scalar::Expr("L / 10".into())),
        (Field::RadiusJ, n(20.0)),
    ];
    a.add_joint(mesh).unwrap();
    let mut m = tenon::Mechanism::new(a).unwrap();
    let err = m.set_parameter("L", 0.0).unwrap_err().to_string();
    assert_eq!(
        err,
        "<input>: joint 'mesh' radius_i: must be greater than 0, is 0"
    );
    assert_eq!(
        m.parameter("L"),
        Some(100.0),
        "a refused change changes nothing"
    );
    assert_eq!(
        m.model().parameters()[0].value,
        Scalar::Number(100.0),
        "nor the model's parameters"
    );
}
