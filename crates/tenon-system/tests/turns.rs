//! Joints that count turns, over many turns; cams; driving values, motions and
//! parameters (changed without rebuilding).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::f64::consts::PI;

use tenon_model::{
    read_json, Assembly, Coordinate, Field, Joint, JointType, Limits, MarkerRef, MarkerSpec, Part,
    Placement, Scalar, Units,
};
use tenon_system::System;

fn named(part: tenon_model::PartKey, marker: &str) -> MarkerRef {
    MarkerRef {
        part,
        marker: MarkerSpec::Named(marker.into()),
    }
}

fn joint(id: &str, t: JointType, i: MarkerRef, j: MarkerRef, fields: &[(Field, f64)]) -> Joint {
    Joint {
        id: id.into(),
        joint_type: t,
        i,
        j,
        suppressed: false,
        fields: fields
            .iter()
            .map(|&(f, v)| (f, Scalar::Number(v)))
            .collect(),
        profile: None,
        profile_i: None,
        limits: Limits::default(),
        rate: Default::default(),
        extra: None,
        residuals: Vec::new(),
        compliance: None,
    }
}

fn rad_units() -> Units {
    Units {
        angle: tenon_model::AngleUnit::Rad,
        ..Units::default()
    }
}

/// Sets a free part's pose in the state: position and a turn `angle` about world z.
fn set_pose(system: &System, state: &mut [f64], part: usize, position: [f64; 3], angle: f64) {
    let vars = system.free_parts()[part].vars;
    let q = [(angle / 2.0).cos(), 0.0, 0.0, (angle / 2.0).sin()];
    for (k, v) in position.iter().chain(&q).enumerate() {
        state[vars[k].index()] = *v;
    }
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

#[test]
fn a_screw_turned_ten_times_advances_ten_pitches() {
    let mut a = Assembly::new("screw", rad_units());
    let mut ground = Part::new("ground", Placement::default());
    ground.grounded = true;
    ground.markers.push(("axis".into(), Placement::default()));
    let g = a.add_part(ground).unwrap();
    let mut nut = Part::new("nut", Placement::default());
    nut.markers.push(("axis".into(), Placement::default()));
    let n = a.add_part(nut).unwrap();
    let pitch = 2.5;
    a.add_joint(joint(
        "screw",
        JointType::Screw,
        named(n, "axis"),
        named(g, "axis"),
        &[(Field::Pitch, pitch)],
    ))
    .unwrap();
    let mut s = System::build(&a).unwrap();
    let c = s.compile().unwrap();
    let mut params = s.initial_parameters();
    let mut state = s.initial_state();
    let step = PI / 6.0;
    // The same moves counted with the raw angles kept between them: the same counters
    // (every tenth move starts from a state the cache has not seen).
    let mut cached_params = params.clone();
    let mut cache = tenon_system::TurnCache::default();
    for k in 1..=120 {
        let mut old = state.clone();
        if k % 10 == 0 {
            set_pose(&s, &mut old, 0, [0.0, 0.0, 0.0], step * (k - 1) as f64);
        }
        let phi = step * k as f64;
        set_pose(&s, &mut state, 0, [0.0, 0.0, pitch * phi / (2.0 * PI)], phi);
        s.update_turns(&c, &old, &state, &mut params).unwrap();
        s.update_turns_cached(&c, &mut cache, &old, &state, &mut cached_params)
            .unwrap();
        assert_eq!(params, cached_params, "after {phi} rad");
        let r = s.residuals(&c, &state, &params).unwrap();
        assert!(max_abs(&r) < 1e-10, "after {phi} rad: {r:?}");
    }
    // Ten turns on, half a pitch off is a violation of pi * pitch.
    let old = state.clone();
    set_pose(
        &s,
        &mut state,
        0,
        [0.0, 0.0, 10.0 * pitch + pitch / 2.0],
        20.0 * PI,
    );
    s.update_turns(&c, &old, &state, &mut params).unwrap();
    let r = s.residuals(&c, &state, &params).unwrap();
    assert!((max_abs(&r) - PI * pitch).abs() < 1e-9, "{r:?}");
}

/// Two gears on revolutes to ground, centres `ri + rj` apart, coupled by a gear (or
/// belt) joint.
fn gear_pair(t: JointType, ri: f64, rj: f64) -> Assembly {
    let mut a = Assembly::new("gears", rad_units());
    let mut ground = Part::new("ground", Placement::default());
    ground.grounded = true;
    ground.markers.push(("a".into(), Placement::default()));
    ground.markers.push((
        "b".into(),
        Placement::from_numbers([ri + rj, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]),
    ));
    let g = a.add_part(ground).unwrap();
    let mut p1 = Part::new("gear1", Placement::default());
    p1.markers.push(("c".into(), Placement::default()));
    let k1 = a.add_part(p1).unwrap();
    let mut p2 = Part::new(
        "gear2",
        Placement::from_numbers([ri + rj, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]),
    );
    p2.markers.push(("c".into(), Placement::default()));
    let k2 = a.add_part(p2).unwrap();
    a.add_joint(joint(
        "r1",
        JointType::Revolute,
        named(k1, "c"),
        named(g, "a"),
        &[],
    ))
    .unwrap();
    a.add_joint(joint(
        "r2",
        JointType::Revolute,
        named(k2, "c"),
        named(g, "b"),
        &[],
    ))
    .unwrap();
    a.add_joint(joint(
        "mesh",
        t,
        named(k1, "c"),
        named(k2, "c"),
        &[(Field::RadiusI, ri), (Field::RadiusJ, rj)],
    ))
    .unwrap();
    a
}

#[test]
fn gears_counter_rotate_and_belts_co_rotate_over_five_turns() {
    let (ri, rj) = (1.0, 2.5);
    for (t, sign) in [(JointType::Gear, -1.0), (JointType::Belt, 1.0)] {
        let a = gear_pair(t, ri, rj);
        let mut s = System::build(&a).unwrap();
        let c = s.compile().unwrap();
        let mut params = s.initial_parameters();
        let mut state = s.initial_state();
        for k in 1..=60 {
            let old = state.clone();
            let phi1 = k as f64 * PI / 6.0;
            let phi2 = sign * ri / rj * phi1;
            set_pose(&s, &mut state, 0, [0.0; 3], phi1);
            set_pose(&s, &mut state, 1, [ri + rj, 0.0, 0.0], phi2);
            s.update_turns(&c, &old, &state, &mut params).unwrap();
            let r = s.residuals(&c, &state, &params).unwrap();
            assert!(max_abs(&r) < 1e-10, "{t:?} at {phi1}: {r:?}");
        }
        // Gear 2 one radian off its coupled angle: a violation of r_j * 1.
        let old = state.clone();
        set_pose(
            &s,
            &mut state,
            1,
            [ri + rj, 0.0, 0.0],
            sign * ri / rj * 10.0 * PI + 1.0,
        );
        s.update_turns(&c, &old, &state, &mut params).unwrap();
        let r = s.residuals(&c, &state, &params).unwrap();
        assert!((max_abs(&r) - rj).abs() < 1e-9, "{t:?}: {r:?}");
    }
}

#[test]
fn a_pinion_rolls_along_its_rack_over_three_turns() {
    let mut a = Assembly::new("rack", rad_units());
    let mut rack = Part::new("rack", Placement::default());
    rack.grounded = true;
    rack.markers.push(("x".into(), Placement::default()));
    let r = a.add_part(rack).unwrap();
    let mut pinion = Part::new(
        "pinion",
        Placement::from_numbers([0.0, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0]),
    );
    pinion.markers.push(("c".into(), Placement::default()));
    let p = a.add_part(pinion).unwrap();
    let radius = 0.5;
    a.add_joint(joint(
        "rp",
        JointType::RackPinion,
        named(r, "x"),
        named(p, "c"),
        &[(Field::Radius, radius)],
    ))
    .unwrap();
    let mut s = System::build(&a).unwrap();
    let c = s.compile().unwrap();
    let mut params = s.initial_parameters();
    let mut state = s.initial_state();
    for k in 1..=36 {
        let old = state.clone();
        let theta = -(k as f64) * PI / 6.0; // clockwise: rolls towards +x
        set_pose(&s, &mut state, 0, [-radius * theta, 0.5, 0.0], theta);
        s.update_turns(&c, &old, &state, &mut params).unwrap();
        let res = s.residuals(&c, &state, &params).unwrap();
        assert!(max_abs(&res) < 1e-10, "at {theta}: {res:?}");
    }
}

#[test]
fn a_polar_cam_passes_through_its_radii_and_a_constant_one_is_a_circle() {
    let radii = [1.0, 1.3, 1.1, 0.8, 0.9, 1.2];
    for (k, &rk) in radii.iter().enumerate() {
        let s_k = 2.0 * PI * k as f64 / radii.len() as f64;
        let text = format!(
            r#"{{ "format": "tenon-assembly", "version": 1, "units": {{ "angle": "rad" }},
              "parts": [ {{ "id": "cam", "grounded": true }},
                         {{ "id": "follower", "placement": {{ "position": [{}, {}, 0] }} }} ],
              "joints": [ {{ "id": "c", "type": "cam", "i": {{ "part": "follower" }}, "j": {{ "part": "cam" }},
                            "profile": {{ "polar": {radii:?} }} }} ] }}"#,
            rk * s_k.cos(),
            rk * s_k.sin()
        );
        let a = read_json(&text, None).unwrap();
        let mut s = System::build(&a).unwrap();
        let c = s.compile().unwrap();
        let state = s.initial_state();
        let contact = state[s.extra_unknowns()[0].var.index()];
        assert!(
            (contact - s_k).abs() < 1e-9 || (contact - s_k).abs() > 2.0 * PI - 1e-9,
            "contact {contact} vs {s_k}"
        );
        let r = s.residuals(&c, &state, &s.initial_parameters()).unwrap();
        assert!(max_abs(&r) < 1e-9, "knot {k}: {r:?}");
    }
    // A constant profile is the circle everywhere, between the knots too.
    let text = r#"{ "format": "tenon-assembly", "version": 1, "units": { "angle": "rad" },
      "parts": [ { "id": "cam", "grounded": true }, { "id": "f", "placement": { "position": [0.5, 0.866025403784, 0] } } ],
      "joints": [ { "id": "c", "type": "cam", "i": { "part": "f" }, "j": { "part": "cam" }, "profile": { "polar": [1, 1, 1, 1, 1] } } ] }"#;
    let a = read_json(text, None).unwrap();
    let mut s = System::build(&a).unwrap();
    let c = s.compile().unwrap();
    let r = s
        .residuals(&c, &s.initial_state(), &s.initial_parameters())
        .unwrap();
    assert!(max_abs(&r) < 1e-11, "{r:?}");
}

const DRIVEN: &str = concat!(
    r#"{ "format": "tenon-assembly", "version": 1,
  "parameters": { "A": 30, "D": 12 },
  "parts": [ { "id": "g", "grounded": true },
             { "id": "crank", "placement": { "rotation": { "axis": [0, 0, 1], "angle": 30 } } },
             { "id": "slide", "placement": { "position": [0, 0, 12] } },
             { "id": "wheel", "placement": { "rotation": { "axis": [0, 0, 1], "angle": 30 } } } ],
  "joints": [ { "id": "pin", "type": "revolute", "i": { "part": "crank" }, "j": { "part": "g" }, "angle": "A" },
              { "id": "rail", "type": "slider", "i": { "part": "slide" }, "j": { "part": "g" }, "distance": "D" },
              { "id": "axle", "type": "revolute", "i": { "part": "wheel" }, "j": { "part": "g" } } ]"#,
    r#", "motions": [ { "joint": "axle", "angle": "30 + 360 * t" } ]"#,
    " }"
);
const MOTION: &str = r#", "motions": [ { "joint": "axle", "angle": "30 + 360 * t" } ]"#;

#[test]
fn driving_values_motions_and_parameters() {
    let a = read_json(DRIVEN, None).unwrap();
    let mut s = System::build(&a).unwrap();
    let c = s.compile().unwrap();
    let mut params = s.initial_parameters();
    let state = s.initial_state();
    // revolute 5 + drive 1 + slider 5 + drive 1 + revolute 5 + motion 1 (a motion
    // drives a coordinate no driving value fixes: one prescription per coordinate)
    assert_eq!(s.equations().len(), 18);
    assert!(max_abs(&s.residuals(&c, &state, &params).unwrap()) < 1e-12);
    // A parameter change shows up without rebuilding: D = 15 leaves the slide 3 short.
    params[s.parameter("D").unwrap().index()] = 15.0;
    let r = s.residuals(&c, &state, &params).unwrap();
    let drive = s
        .equations()
        .iter()
        .position(|e| matches!(e.owner, tenon_system::Owner::Drive(_, Coordinate::Distance)))
        .unwrap();
    assert!((r[drive] + 3.0).abs() < 1e-12, "{r:?}");
    // The motion at t = 1/12 asks for 60 degrees: the wheel at 30 is 30 degrees short.
    params[s.parameter("D").unwrap().index()] = 12.0;
    params[s.time().index()] = 1.0 / 12.0;
    let r = s.residuals(&c, &state, &params).unwrap();
    let motion = s
        .equations()
        .iter()
        .position(|e| matches!(e.owner, tenon_system::Owner::Motion(0)))
        .unwrap();
    assert!((r[motion] + PI / 6.0).abs() < 1e-12, "{}", r[motion]);
}

#[test]
fn a_driving_angle_of_two_turns_is_the_loaded_pose() {
    let text = DRIVEN
        .replace("\"angle\": \"A\"", "\"angle\": 750")
        .replace(MOTION, "");
    let a = read_json(&text, None).unwrap();
    let mut s = System::build(&a).unwrap();
    let c = s.compile().unwrap();
    let r = s
        .residuals(&c, &s.initial_state(), &s.initial_parameters())
        .unwrap();
    assert!(
        max_abs(&r) < 1e-12,
        "750 degrees = 30 degrees and two turns: {r:?}"
    );
}
