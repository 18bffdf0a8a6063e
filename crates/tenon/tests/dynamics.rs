//! Dynamics through the facade against the reference answers of
//! `../shared/bench/REFERENCES.md` (copied into the fixtures' tests here, so the project
//! stands alone): the simple pendulum (IFToMM A01), Chrono's double pendulum, the seeds'
//! rod cases, a conical pendulum's tension; energy balance; both methods; bad mass data.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::{
    DynamicFrame, DynamicMethod, DynamicTrajectory, Mechanism, RunSettings, SimulationSettings,
};

fn fixture(name: &str) -> Mechanism {
    let path = format!(
        "{}/../../fixtures/dynamics/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    Mechanism::open(path).unwrap()
}

fn run(
    m: &mut Mechanism,
    end: f64,
    step: f64,
    output: f64,
    method: DynamicMethod,
) -> DynamicTrajectory {
    let mut settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    settings.run = RunSettings::new(0.0, end, step, Some(output)).unwrap();
    settings.integration.method = method;
    let t = m.simulate(settings).unwrap();
    assert!(t.completed, "{:?}", t.events);
    t
}

/// The angle of a part turning about z, from its quaternion.
fn z_angle(q: [f64; 4]) -> f64 {
    2.0 * q[3].atan2(q[0])
}

fn total_energy(f: &DynamicFrame) -> f64 {
    f.energy.kinetic + f.energy.potential + f.energy.spring - f.energy.work
}

/// IFToMM A01 at h = 1e-4: the period (from the returns of the angular velocity through
/// zero) and the state at t = 10 s to 1e-6; energy drifts by less than 1e-6 relative.
#[test]
fn simple_pendulum_a01() {
    let mut m = fixture("pendulum-a01.json");
    let t = run(&mut m, 10.0, 1e-4, 1e-3, DynamicMethod::GeneralizedAlpha);
    let last = t.frames.last().unwrap();
    assert_eq!(last.time, 10.0);
    // The part's frame is at the pivot; the bob is its centre of mass, 1 m along x.
    let part = &last.parts[0];
    let a = z_angle(part.quaternion);
    let (x, y) = (part.position[0] + a.cos(), part.position[1] + a.sin());
    assert!((x - 0.275087462576).abs() < 1e-6, "x {x}");
    assert!((y + 0.961419205099).abs() < 1e-6, "y {y}");
    let w = part.angular_velocity[2];
    assert!((w + 4.343160692865).abs() < 1e-6 * 4.34, "omega {w}");
    // The period: the angular velocity is zero at the far side (T / 2) and back at the
    // start (T), crossing from negative to positive at T.
    let crossings: Vec<f64> = t
        .frames
        .windows(2)
        .filter(|p| {
            p[0].parts[0].angular_velocity[2] < 0.0 && p[1].parts[0].angular_velocity[2] >= 0.0
        })
        .map(|p| {
            let (a, b) = (
                p[0].parts[0].angular_velocity[2],
                p[1].parts[0].angular_velocity[2],
            );
            p[0].time + (p[1].time - p[0].time) * (-a) / (b - a)
        })
        .collect();
    let period = crossings[1] - crossings[0];
    assert!((period - 2.367841947576237).abs() < 1e-6, "period {period}");
    // Energy.
    let e0 = total_energy(&t.frames[0]);
    let drift = t
        .frames
        .iter()
        .map(|f| (total_energy(f) - e0).abs())
        .fold(0.0, f64::max);
    let scale = t.frames[0].energy.potential.abs().max(1.0);
    assert!(drift < 1e-6 * scale, "energy drift {drift}");
    // The pivot's force on the pendulum is m (a_c - g), a_c the bob's acceleration.
    let r = &last.reactions[0];
    let alpha = part.angular_acceleration[2];
    let accel = [
        -w * w * a.cos() - alpha * a.sin(),
        -w * w * a.sin() + alpha * a.cos(),
    ];
    let expected = [accel[0], accel[1] + 9.81];
    for c in 0..2 {
        assert!(
            (r.force[c] - expected[c]).abs() < 1e-6 * 30.0,
            "force {:?} vs {expected:?}",
            r.force
        );
    }
}

/// The state of Chrono's double pendulum in a frame: both links' angles and angular
/// velocities.
fn double_pendulum_state(f: &DynamicFrame) -> [f64; 4] {
    let (l1, l2) = (&f.parts[0], &f.parts[1]);
    [
        z_angle(l1.quaternion),
        z_angle(l2.quaternion),
        l1.angular_velocity[2],
        l2.angular_velocity[2],
    ]
}

/// Chrono's double pendulum at t = 1 s, h = 1e-4, by both methods: link angles and link
/// 2's centre of mass and its velocity to 1e-6. Chrono's own thresholds at h = 2e-4 over
/// 1 s: generalized-alpha's RMS state error (angles and angular velocities, every 0.01 s,
/// against the Runge-Kutta 4 Baumgarte run at 1e-4, itself checked at 1 s above) at most
/// 1e-3 (seen 8.6e-8), its RMS constraint violation at most 1e-6 (seen 2e-16).
#[test]
fn double_pendulum_chrono() {
    let mut m = fixture("double-pendulum.json");
    let mut reference = Vec::new();
    for method in [DynamicMethod::GeneralizedAlpha, DynamicMethod::Baumgarte] {
        let t = run(&mut m, 1.0, 1e-4, 1e-2, method);
        let last = t.frames.last().unwrap();
        let [a1, a2, _, w] = double_pendulum_state(last);
        let l2 = &last.parts[1];
        let wrap = |a: f64| {
            (a + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU) - std::f64::consts::PI
        };
        assert!(
            (wrap(a1) + 2.227202839966).abs() < 1e-6,
            "{method:?}: angle 1 {a1}"
        );
        assert!(
            (wrap(a2) + 1.489687701108).abs() < 1e-6,
            "{method:?}: angle 2 {a2}"
        );
        let (s, c) = a2.sin_cos();
        let com = [l2.position[0] + 0.5 * c, l2.position[1] + 0.5 * s];
        let vel = [l2.velocity[0] - w * 0.5 * s, l2.velocity[1] + w * 0.5 * c];
        assert!(
            (com[0] + 0.569764210469).abs() < 1e-6,
            "{method:?}: com {com:?}"
        );
        assert!(
            (com[1] + 1.290546602590).abs() < 1e-6,
            "{method:?}: com {com:?}"
        );
        assert!(
            (vel[0] + 3.511984057912).abs() < 1e-6,
            "{method:?}: velocity {vel:?}"
        );
        assert!(
            (vel[1] - 1.029854116171).abs() < 1e-6,
            "{method:?}: velocity {vel:?}"
        );
        let worst = t.frames.iter().map(|f| f.max_residual).fold(0.0, f64::max);
        assert!(worst < 1e-9, "{method:?}: constraint violation {worst}");
        reference = t
            .frames
            .iter()
            .map(double_pendulum_state)
            .collect::<Vec<_>>();
    }
    let t = run(&mut m, 1.0, 2e-4, 1e-2, DynamicMethod::GeneralizedAlpha);
    assert_eq!(t.frames.len(), reference.len());
    let mut state = 0.0;
    let mut violation = 0.0;
    for (f, r) in t.frames.iter().zip(&reference) {
        let s = double_pendulum_state(f);
        state += s.iter().zip(r).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / 4.0;
        violation += f.max_residual.powi(2);
    }
    let frames = t.frames.len() as f64;
    let (state, violation) = ((state / frames).sqrt(), (violation / frames).sqrt());
    assert!(state <= 1e-3, "RMS state error {state}");
    assert!(violation <= 1e-6, "RMS constraint violation {violation}");
}

/// The seeds' section 5: a payload of 5 kg under a 1e6 kg anchor on a 2 m rod, only the
/// payload pulled by its weight: the rod holds it with 49.05 N (to 1e-4; the anchor's
/// own acceleration takes 5e-6 of it); the rod stays 2 m long; by both methods.
#[test]
fn hanging_rod_force() {
    let mut m = fixture("hanging-rod.json");
    for method in [DynamicMethod::GeneralizedAlpha, DynamicMethod::Baumgarte] {
        let t = run(&mut m, 1.0, 0.01, 0.01, method);
        for f in &t.frames {
            let force = f.reactions[0].force;
            assert!(force[0].abs() < 1e-9 && force[1].abs() < 1e-9);
            assert!(
                (force[2] - 49.05).abs() < 1e-4 * 49.05,
                "rod force {force:?}"
            );
            let (a, p) = (f.parts[0].position, f.parts[1].position);
            let length = ((a[2] - p[2]).powi(2) + (a[0] - p[0]).powi(2)).sqrt();
            assert!((length - 2.0).abs() < 1e-10, "rod length {length}");
        }
    }
}

/// Two free bodies on a horizontal rod fall freely: zero multiplier, `z = -g t^2 / 2`;
/// nothing is grounded, and none is held (dynamics lets the assembly float); by both
/// methods.
#[test]
fn free_fall_with_a_rod() {
    let path = format!(
        "{}/../../fixtures/two-body-rod.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut m = Mechanism::open(path).unwrap();
    for method in [DynamicMethod::GeneralizedAlpha, DynamicMethod::Baumgarte] {
        let t = run(&mut m, 1.0, 0.01, 0.1, method);
        let last = t.frames.last().unwrap();
        assert_eq!(last.parts.len(), 2);
        for p in &last.parts {
            assert!(
                (p.position[2] + 4.905).abs() < 1e-9,
                "{method:?}: {:?}",
                p.position
            );
            assert!(
                (p.velocity[2] + 9.81).abs() < 1e-9,
                "{method:?}: {:?}",
                p.velocity
            );
        }
        assert!(last.reactions[0].force.iter().all(|f| f.abs() < 1e-9));
    }
}

/// A conical pendulum turning steadily at 30 degrees: the rod's tension is `m g / cos
/// 30` (the acceleration right-hand side carries `-(dJ/dt) v`; without it the tension
/// would be `m g cos 30`), by both methods; the bob stays at its height.
#[test]
fn conical_pendulum_tension() {
    for method in [DynamicMethod::GeneralizedAlpha, DynamicMethod::Baumgarte] {
        let mut m = fixture("conical-pendulum.json");
        let t = run(&mut m, 1.0, 1e-3, 0.1, method);
        let expected = 9.81 / 30f64.to_radians().cos();
        for f in &t.frames {
            let force = f.reactions[0].force;
            let tension = force.iter().map(|x| x * x).sum::<f64>().sqrt();
            assert!(
                (tension - expected).abs() < 1e-4 * expected,
                "{method:?}: tension {tension}"
            );
            let z = f.parts[0].position[2];
            assert!(
                (z + 30f64.to_radians().cos()).abs() < 1e-6,
                "{method:?}: height {z}"
            );
        }
    }
}

/// Baumgarte with Runge-Kutta 4 on the pendulum at h = 1e-3: the state at t = 10 s to
/// 1e-6 (fourth order on a planar mechanism).
#[test]
fn simple_pendulum_baumgarte() {
    let mut m = fixture("pendulum-a01.json");
    let t = run(&mut m, 10.0, 1e-3, 1e-2, DynamicMethod::Baumgarte);
    let a = z_angle(t.frames.last().unwrap().parts[0].quaternion);
    assert!((a.cos() - 0.275087462576).abs() < 1e-6, "angle {a}");
    assert!((a.sin() + 0.961419205099).abs() < 1e-6, "angle {a}");
}

/// A run never moves the mechanism; frames one at a time equal the whole run's.
#[test]
fn runs_leave_the_mechanism_and_iterate_alike() {
    let mut m = fixture("double-pendulum.json");
    let before = m.placement("link2").unwrap();
    let whole = run(&mut m, 0.05, 1e-3, 1e-2, DynamicMethod::GeneralizedAlpha);
    assert_eq!(m.placement("link2").unwrap(), before);
    let mut settings = whole.settings;
    settings.run = RunSettings::new(0.0, 0.05, 1e-3, Some(1e-2)).unwrap();
    let one_by_one: Vec<DynamicFrame> = m
        .dynamic_frames(settings)
        .unwrap()
        .map(|x| x.unwrap().0)
        .collect();
    assert_eq!(one_by_one, whole.frames);
}

/// Bad mass data is an error naming the part: no mass on a moving part, a negative mass,
/// an inertia that is not positive semi-definite.
#[test]
fn bad_mass_is_an_error_naming_the_part() {
    let text = std::fs::read_to_string(format!(
        "{}/../../fixtures/dynamics/double-pendulum.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["parts"][2].as_object_mut().unwrap().remove("mass");
    let mut m = Mechanism::from_json(&v.to_string(), Some("dp.json")).unwrap();
    let settings = SimulationSettings::for_assembly(m.model(), Some(0.1), None).unwrap();
    let e = m.simulate(settings).unwrap_err().to_string();
    assert!(e.contains("'link2'") && e.contains("no mass"), "{e}");

    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["parts"][1]["mass"]["mass"] = serde_json::json!(-1.0);
    let e = Mechanism::from_json(&v.to_string(), Some("dp.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("parts[1].mass.mass"), "{e}");

    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["parts"][1]["mass"]["inertia"] = serde_json::json!([[1, 0, 0], [0, -1, 0], [0, 0, 1]]);
    let e = Mechanism::from_json(&v.to_string(), Some("dp.json"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("parts[1].mass.inertia") && e.contains("semi-definite"),
        "{e}"
    );
}

/// B0 (the first crank's tip, the first coupler's left end) and the largest energy error
/// of an A02 run.
fn a02(name: &str, step: f64) -> ([f64; 2], f64, DynamicTrajectory) {
    let mut m = fixture(name);
    let t = run(&mut m, 10.0, step, 0.01, DynamicMethod::GeneralizedAlpha);
    let e0 = total_energy(&t.frames[0]);
    let worst = t
        .frames
        .iter()
        .map(|f| (total_energy(f) - e0).abs())
        .fold(0.0, f64::max);
    (b0_at(&m, &t, 10.0), worst, t)
}

/// A02's B0 (the first coupler's left end, its frame's origin) at a reported time.
fn b0_at(m: &Mechanism, t: &DynamicTrajectory, time: f64) -> [f64; 2] {
    let f = t
        .frames
        .iter()
        .find(|f| (f.time - time).abs() < 1e-9)
        .unwrap();
    let p = f
        .parts
        .iter()
        .find(|p| m.part_id(p.part) == Some("coupler0"))
        .unwrap();
    [p.position[0], p.position[1]]
}

/// IFToMM A02 in 3D with revolutes (six redundant equations, said once), through about
/// ten singular positions in 10 s: the energy error at h = 1e-3 is at or below Exudyn's
/// (1.14e-3 J); B0 at t = 4 s and 10 s, extrapolated in h from h = 5e-4 and 2.5e-4
/// (second order), to 1e-6; the version without redundant joints gives the same B0.
#[test]
fn four_bar_a02_through_singular_positions() {
    let (b0, energy, t) = a02("four-bar-a02.json", 1e-3);
    assert!(energy <= 1.14e-3, "energy error {energy}");
    let redundant: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == tenon::DynamicEventKind::Redundant)
        .collect();
    assert_eq!(redundant.len(), 1, "{:?}", t.events);
    assert!(
        redundant[0].message.contains("6 equation"),
        "{}",
        redundant[0].message
    );
    let worst = t.frames.iter().map(|f| f.max_residual).fold(0.0, f64::max);
    assert!(worst < 1e-10, "constraint violation {worst}");
    let (plain, plain_energy, _) = a02("four-bar-a02-nonredundant.json", 1e-3);
    assert!(plain_energy <= 1.14e-3, "energy error {plain_energy}");
    for c in 0..2 {
        assert!((plain[c] - b0[c]).abs() < 1e-5, "{plain:?} vs {b0:?}");
    }
    // Richardson extrapolation at t = 4 and t = 10.
    let coarse = run(
        &mut fixture("four-bar-a02.json"),
        10.0,
        5e-4,
        0.01,
        DynamicMethod::GeneralizedAlpha,
    );
    let fine = run(
        &mut fixture("four-bar-a02.json"),
        10.0,
        2.5e-4,
        0.01,
        DynamicMethod::GeneralizedAlpha,
    );
    let m = fixture("four-bar-a02.json");
    for (time, reference) in [
        (4.0, [0.1176161024, 0.9930591385]),
        (10.0, [0.3284581115, 0.9445185382]),
    ] {
        let (c, f) = (b0_at(&m, &coarse, time), b0_at(&m, &fine, time));
        for k in 0..2 {
            let extrapolated = (4.0 * f[k] - c[k]) / 3.0;
            assert!(
                (extrapolated - reference[k]).abs() < 1e-6,
                "t = {time}: B0[{k}] {extrapolated} (h = 5e-4: {}, 2.5e-4: {})",
                c[k],
                f[k]
            );
        }
    }
}

fn from_text(text: &str) -> Mechanism {
    Mechanism::from_json(text, Some("test.json")).unwrap()
}

/// A 2 kg block on a vertical slider hanging from a spring (k = 50 N/m, rest 1 m),
/// released at the spring's rest length: `y(t) = y_eq + (m g / k) cos(omega t)` with
/// `omega = sqrt(k / m)`; with a damper, the energy lost equals the dampers' work.
#[test]
fn block_on_a_spring() {
    let text = |damping: f64| {
        format!(
            r#"{{ "format": "tenon-assembly", "version": 1,
              "units": {{ "length": "m", "angle": "rad", "mass": "kg", "time": "s" }},
              "parts": [
                {{ "id": "ground", "grounded": true,
                   "markers": {{ "top": {{}}, "rail": {{ "rotation": {{ "axis": [1, 0, 0], "angle": "-pi / 2" }} }} }} }},
                {{ "id": "block", "placement": {{ "position": [0, -1, 0] }},
                   "markers": {{ "hook": {{}}, "rail": {{ "rotation": {{ "axis": [1, 0, 0], "angle": "-pi / 2" }} }} }},
                   "mass": {{ "mass": 2, "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]] }} }} ],
              "joints": [ {{ "id": "rail", "type": "slider", "i": {{ "part": "block", "marker": "rail" }},
                            "j": {{ "part": "ground", "marker": "rail" }} }} ],
              "forces": {{ "gravity": [0, -9.81, 0],
                "springs": [ {{ "id": "s", "i": {{ "part": "block", "marker": "hook" }},
                               "j": {{ "part": "ground", "marker": "top" }},
                               "stiffness": 50, "rest_length": 1, "damping": {damping} }} ] }} }}"#
        )
    };
    let mut m = from_text(&text(0.0));
    let t = run(&mut m, 2.0, 1e-4, 0.01, DynamicMethod::GeneralizedAlpha);
    let (mass, k, g): (f64, f64, f64) = (2.0, 50.0, 9.81);
    let omega = (k / mass).sqrt();
    let amplitude = mass * g / k;
    for f in &t.frames {
        let y = f.parts[0].position[1];
        let expected = -1.0 - amplitude + amplitude * (omega * f.time).cos();
        assert!(
            (y - expected).abs() < 1e-5 * amplitude,
            "t = {}: y {y} vs {expected}",
            f.time
        );
        let v = f.parts[0].velocity[1];
        let expected_v = -amplitude * omega * (omega * f.time).sin();
        assert!(
            (v - expected_v).abs() < 1e-4 * amplitude * omega,
            "t = {}: v {v}",
            f.time
        );
    }
    let e0 = total_energy(&t.frames[0]);
    for f in &t.frames {
        assert!(
            (total_energy(f) - e0).abs() < 1e-6,
            "energy at t = {}",
            f.time
        );
    }
    // Damped: the work of the damper (negative) balances the energy lost.
    let mut m = from_text(&text(3.0));
    let t = run(&mut m, 2.0, 1e-4, 0.01, DynamicMethod::GeneralizedAlpha);
    let last = t.frames.last().unwrap();
    assert!(last.energy.work < -0.1, "damper work {}", last.energy.work);
    let e0 = total_energy(&t.frames[0]);
    assert!(
        (total_energy(last) - e0).abs() < 1e-5,
        "balance {}",
        total_energy(last) - e0
    );
}

/// A uniform rod (1 kg, 1 m) turned about a horizontal pin at a constant 2 rad/s by a
/// motion: the drive's effort is the torque that holds it against gravity, `m g L/2
/// cos(angle)` (no inertial torque at constant speed), and its work is the potential
/// energy gained.
#[test]
fn drive_effort_of_a_crank() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "units": { "length": "m", "angle": "rad", "mass": "kg", "time": "s" },
      "parts": [
        { "id": "ground", "grounded": true, "markers": { "pin": {} } },
        { "id": "crank", "markers": { "pin": {} },
          "mass": { "mass": 1, "center_of_mass": [0.5, 0, 0],
                    "inertia": [[0, 0, 0], [0, 0.0833333333333, 0], [0, 0, 0.0833333333333]] } } ],
      "joints": [ { "id": "pin", "type": "revolute", "i": { "part": "crank", "marker": "pin" },
                    "j": { "part": "ground", "marker": "pin" } } ],
      "motions": [ { "joint": "pin", "angle": "2 * t" } ],
      "forces": { "gravity": [0, -9.81, 0] } }"#;
    let mut m = from_text(text);
    let t = run(&mut m, 2.0, 1e-3, 0.05, DynamicMethod::GeneralizedAlpha);
    for f in &t.frames {
        let angle = 2.0 * f.time;
        let expected = 9.81 * 0.5 * angle.cos();
        let effort = f.efforts[0].effort;
        assert!(
            (effort - expected).abs() < 1e-6 * 9.81,
            "t = {}: effort {effort} vs {expected}",
            f.time
        );
        let w = f.parts[0].angular_velocity[2];
        assert!((w - 2.0).abs() < 1e-9, "omega {w}");
    }
    // Energy: the drive's work is the kinetic and potential energy gained.
    let (first, last) = (&t.frames[0], t.frames.last().unwrap());
    let gained = (last.energy.kinetic + last.energy.potential)
        - (first.energy.kinetic + first.energy.potential);
    assert!(
        (last.energy.work - gained).abs() < 1e-5,
        "work {} vs gained {gained}",
        last.energy.work
    );
}

/// A free body (no gravity, no joints) pushed by a constant load off its centre of mass
/// and a torque: it accelerates at `F / m` and turns at `(r x F + tau) / I` from rest.
#[test]
fn a_load_pushes_a_free_body() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "units": { "length": "m", "angle": "rad", "mass": "kg", "time": "s" },
      "parts": [
        { "id": "anchor", "grounded": true },
        { "id": "body", "placement": { "position": [5, 0, 0] },
          "mass": { "mass": 2, "inertia": [[0.5, 0, 0], [0, 0.5, 0], [0, 0, 0.5]] } } ],
      "forces": { "loads": [ { "part": "body", "force": [4, 0, 0], "torque": [0, 0, 0.25] } ] } }"#;
    let mut m = from_text(text);
    let t = run(&mut m, 0.5, 1e-3, 0.1, DynamicMethod::GeneralizedAlpha);
    for f in &t.frames {
        let p = &f.parts[0];
        let expected = 5.0 + 0.5 * 2.0 * f.time * f.time;
        assert!(
            (p.position[0] - expected).abs() < 1e-9,
            "x {}",
            p.position[0]
        );
        assert!(
            (p.angular_velocity[2] - 0.5 * f.time).abs() < 1e-9,
            "omega {}",
            p.angular_velocity[2]
        );
        assert!((p.acceleration[0] - 2.0).abs() < 1e-9);
    }
    // The loads' work is the kinetic energy gained.
    let last = t.frames.last().unwrap();
    assert!(
        (last.energy.work - last.energy.kinetic).abs() < 1e-9,
        "{:?}",
        last.energy
    );
}

/// A symmetric top on a ball joint started in steady precession (tilt 30 degrees, spin
/// 100 rad/s, `m g l = Omega I3 w3 - Omega^2 I1 cos(theta)` solved for the slow
/// precession `Omega` in the fixture): its axis keeps its tilt and turns about the
/// vertical at `Omega` (the gyroscopic terms of the equations of motion, in 3D), by
/// both methods.
#[test]
fn spinning_top_precesses_steadily() {
    for method in [DynamicMethod::GeneralizedAlpha, DynamicMethod::Baumgarte] {
        let mut m = fixture("spinning-top.json");
        let precession = m.parameter("precession").unwrap();
        // Runge-Kutta on the rotation group without the dexp correction is second order
        // for a fast spin (0.1 rad a step at h = 1e-3 leaves the tilt 1.1e-4 off): the
        // same small step for both.
        let t = run(&mut m, 1.0, 1e-4, 0.05, method);
        for f in &t.frames {
            let [w, x, y, z] = f.parts[0].quaternion;
            let axis = [
                2.0 * (x * z + w * y),
                2.0 * (y * z - w * x),
                1.0 - 2.0 * (x * x + y * y),
            ];
            let tilt = axis[2].acos();
            assert!(
                (tilt - 30f64.to_radians()).abs() < 1e-4,
                "{method:?} t = {}: tilt {tilt}",
                f.time
            );
            let azimuth = axis[1].atan2(axis[0]);
            let expected = -std::f64::consts::FRAC_PI_2 + precession * f.time;
            let off = (azimuth - expected + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
                - std::f64::consts::PI;
            assert!(
                off.abs() < 1e-4,
                "{method:?} t = {}: azimuth off by {off}",
                f.time
            );
        }
        let e0 = total_energy(&t.frames[0]);
        let last = total_energy(t.frames.last().unwrap());
        assert!(
            (last - e0).abs() < 1e-6 * e0.abs(),
            "{method:?}: energy {e0} -> {last}"
        );
    }
}

/// A 10 kg door on two hinges on the same vertical axis: the hinges are redundant along
/// the axis (either could carry the weight); the reported split is the minimum-norm one,
/// half the weight each, and the door stays put.
#[test]
fn redundant_hinges_share_the_weight_by_minimum_norm() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "units": { "length": "m", "angle": "rad", "mass": "kg", "time": "s" },
      "parts": [
        { "id": "frame", "grounded": true,
          "markers": { "low": {}, "high": { "position": [0, 0, 1] } } },
        { "id": "door", "markers": { "low": {}, "high": { "position": [0, 0, 1] } },
          "mass": { "mass": 10, "center_of_mass": [0.5, 0, 0.5],
                    "inertia": [[1, 0, 0], [0, 1.2, 0], [0, 0, 0.3]] } } ],
      "joints": [
        { "id": "low", "type": "revolute", "i": { "part": "door", "marker": "low" },
          "j": { "part": "frame", "marker": "low" } },
        { "id": "high", "type": "revolute", "i": { "part": "door", "marker": "high" },
          "j": { "part": "frame", "marker": "high" } } ],
      "forces": { "gravity": [0, 0, -9.81] } }"#;
    let mut m = from_text(text);
    let t = run(&mut m, 0.1, 1e-3, 0.05, DynamicMethod::GeneralizedAlpha);
    assert!(t.events.iter().any(
        |e| e.kind == tenon::DynamicEventKind::Redundant && e.message.contains("minimum norm")
    ));
    for f in &t.frames {
        let (low, high) = (f.reactions[0].force, f.reactions[1].force);
        assert!(
            (low[2] - 49.05).abs() < 1e-9 && (high[2] - 49.05).abs() < 1e-9,
            "{low:?} {high:?}"
        );
        assert!(f.parts[0].angular_velocity.iter().all(|w| w.abs() < 1e-12));
        // Together they hold the door: the vertical forces sum to its weight.
        assert!((low[2] + high[2] - 98.1).abs() < 1e-9);
    }
}

/// A chain of 10 masses on distance joints, released horizontal: every distance holds
/// to rounding at every frame and the energy stays (to 1e-4 of the energy exchanged at
/// h = 5e-4: the chain whips); as point masses (no inertia), the masses could spin
/// about any axis at no cost: an error naming the first such part.
#[test]
fn chain_of_masses_on_distance_joints() {
    let mut m = fixture("mass-chain.json");
    let t = run(&mut m, 1.0, 5e-4, 0.01, DynamicMethod::GeneralizedAlpha);
    for f in &t.frames {
        let mut last = [0.0, 0.0, 0.0];
        for p in &f.parts {
            let d: f64 = (0..3)
                .map(|c| (p.position[c] - last[c]).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!((d - 0.2).abs() < 1e-10, "t = {}: distance {d}", f.time);
            last = p.position;
        }
    }
    let e0 = total_energy(&t.frames[0]);
    let exchanged = t.frames.last().unwrap().energy.kinetic;
    let drift = t
        .frames
        .iter()
        .map(|f| (total_energy(f) - e0).abs())
        .fold(0.0, f64::max);
    assert!(
        drift < 1e-4 * exchanged,
        "energy drift {drift} of {exchanged}"
    );

    let text = std::fs::read_to_string(format!(
        "{}/../../fixtures/dynamics/mass-chain.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["parts"][1]["mass"]["inertia"] = serde_json::json!([[0, 0, 0], [0, 0, 0], [0, 0, 0]]);
    let mut m = Mechanism::from_json(&v.to_string(), None).unwrap();
    let settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    let e = m.simulate(settings).unwrap_err().to_string();
    assert!(e.contains("part 'm0'") && e.contains("singular"), "{e}");
}

/// A02 by Baumgarte (index 1, Runge-Kutta 4) with stabilisation alpha = beta = 20:
/// through the singular positions, B0 at 10 s within 1e-4 and the energy within
/// Exudyn's generalized-alpha error at h = 1e-3; the constraints drift but stay held to
/// 1e-6. (Unstabilised, it stops at the first singular position.)
#[test]
fn four_bar_a02_by_baumgarte() {
    let mut m = fixture("four-bar-a02.json");
    let mut settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    settings.run = RunSettings::new(0.0, 10.0, 1e-3, Some(0.01)).unwrap();
    settings.integration.method = DynamicMethod::Baumgarte;
    settings.integration.baumgarte = (20.0, 20.0);
    let t = m.simulate(settings).unwrap();
    assert!(t.completed, "{:?}", t.events.last());
    let b0 = b0_at(&m, &t, 10.0);
    assert!((b0[0] - 0.3284581115).abs() < 1e-4, "{b0:?}");
    assert!((b0[1] - 0.9445185382).abs() < 1e-4, "{b0:?}");
    let e0 = total_energy(&t.frames[0]);
    let worst = t
        .frames
        .iter()
        .map(|f| (total_energy(f) - e0).abs())
        .fold(0.0, f64::max);
    assert!(worst <= 1.14e-3, "energy error {worst}");
    let drift = t.frames.iter().map(|f| f.max_residual).fold(0.0, f64::max);
    assert!(drift < 1e-6, "constraint drift {drift}");
}

/// A host pauses a run between frames, changes a load and gravity, and carries on: a
/// free body at rest under a zero load starts accelerating at `F / m` from the step
/// after the change.
#[test]
fn a_host_changes_a_load_mid_run() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "units": { "length": "m", "angle": "rad", "mass": "kg", "time": "s" },
      "parts": [
        { "id": "anchor", "grounded": true },
        { "id": "body", "placement": { "position": [0, 0, 0] },
          "mass": { "mass": 2, "inertia": [[0.5, 0, 0], [0, 0.5, 0], [0, 0, 0.5]] } } ],
      "forces": { "loads": [ { "part": "anchor", "force": [1, 0, 0] },
                             { "part": "body", "force": [0, 0, 0] } ] } }"#;
    let mut m = from_text(text);
    let mut settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    settings.run = RunSettings::new(0.0, 1.0, 1e-3, Some(0.5)).unwrap();
    let mut frames = m.dynamic_frames(settings).unwrap();
    let (first, _) = frames.next().unwrap().unwrap();
    assert_eq!(first.parts[0].position, [0.0; 3]);
    // The load on the grounded anchor acts on nothing and cannot be changed.
    assert!(frames.set_load(0, [1.0, 0.0, 0.0], [0.0; 3]).is_err());
    let (half, _) = frames.next().unwrap().unwrap();
    assert_eq!(half.time, 0.5);
    assert_eq!(half.parts[0].position, [0.0; 3]);
    frames.set_load(1, [4.0, 0.0, 0.0], [0.0; 3]).unwrap();
    frames.set_gravity([0.0, -1.0, 0.0]).unwrap();
    let (end, _) = frames.next().unwrap().unwrap();
    assert_eq!(end.time, 1.0);
    let p = end.parts[0].position;
    // Half a second at a = (2, -1), less about one step's worth: the scheme's
    // acceleration-like variable takes a step to follow a force that jumps (seen: 0.2495
    // for 0.25 at h = 1e-3).
    assert!((p[0] - 0.5 * 2.0 * 0.25).abs() < 1e-3, "{p:?}");
    assert!((p[1] + 0.5 * 1.0 * 0.25).abs() < 1e-3, "{p:?}");
    assert!((end.parts[0].acceleration[0] - 2.0).abs() < 1e-9);
    assert!(frames.set_gravity([f64::NAN, 0.0, 0.0]).is_err());
}

/// Andrews' squeezing mechanism (REFERENCES.md section 4; the fixture is written by
/// `tools/andrews_model.py`): its joints' angles are the test set's coordinates.
const ANDREWS_ANGLES: [(&str, f64); 7] = [
    ("O", 15.81077119629904),     // beta
    ("P", -15.75637105984298),    // Theta
    ("B", 0.04082224013073101),   // gamma
    ("H45", -0.5347301163226948), // Phi
    ("A5", 0.5244099658805304),   // delta
    ("H67", 0.5347301163226948),  // Omega
    ("A7", 1.048080741042263),    // epsilon
];

/// The angles of Andrews' mechanism at the end of a run, each against the reference
/// (PSIDE at 1e-14) relative to its size, and `beta_dot`'s.
fn andrews_errors(m: &Mechanism, t: &DynamicTrajectory) -> (f64, f64) {
    let last = t.frames.last().unwrap();
    assert_eq!(last.time, 0.03);
    let mut worst = 0.0f64;
    for (id, reference) in ANDREWS_ANGLES {
        let key = m.joint_key(id).unwrap();
        let value = last.joints.iter().find(|j| j.joint == key).unwrap().value;
        worst = worst.max((value - reference).abs() / reference.abs());
    }
    let beta_dot = last.parts[0].angular_velocity[2];
    (
        worst,
        (beta_dot - 1139.920302151208).abs() / 1139.920302151208,
    )
}

/// Andrews' squeezing mechanism (seven bodies, ten revolutes with nine redundant
/// out-of-plane equations, a stiff spring, a motor torque): the t = 0 accelerations of
/// one KKT solve to 10 digits; all seven angles at t = 0.03 s to 6 significant digits,
/// by generalized-alpha at h = 1e-6 (seen 1.9e-7; second order: 4.8e-6 at 5e-6) and by
/// Baumgarte at h = 1e-5 (seen 2.7e-8); the energy balance (kinetic + spring - the
/// motor's work) holds.
#[test]
fn andrews_squeezing_mechanism() {
    let mut m = fixture("andrews.json");
    let t = run(&mut m, 0.03, 1e-6, 1e-3, DynamicMethod::GeneralizedAlpha);
    let first = &t.frames[0];
    let beta_ddot = first.parts[0].angular_acceleration[2];
    let theta_ddot = first.parts[1].angular_acceleration[2] - beta_ddot;
    assert!(
        (beta_ddot - 14_222.443_919_954_114).abs() < 1e-10 * 14222.44,
        "{beta_ddot}"
    );
    assert!(
        (theta_ddot + 10_666.832_939_965_585).abs() < 1e-10 * 10666.83,
        "{theta_ddot}"
    );
    let redundant = t
        .events
        .iter()
        .filter(|e| e.kind == tenon::DynamicEventKind::Redundant)
        .count();
    assert_eq!(redundant, 1);
    let (angles, beta_dot) = andrews_errors(&m, &t);
    assert!(angles < 5e-7, "angles off by {angles}");
    assert!(beta_dot < 5e-7, "beta_dot off by {beta_dot}");
    let e0 = total_energy(first);
    let worst = t
        .frames
        .iter()
        .map(|f| (total_energy(f) - e0).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-6 * e0, "energy balance off by {worst} of {e0}");

    let t = run(&mut m, 0.03, 1e-5, 1e-3, DynamicMethod::Baumgarte);
    let (angles, beta_dot) = andrews_errors(&m, &t);
    assert!(angles < 5e-7, "Baumgarte: angles off by {angles}");
    assert!(beta_dot < 5e-7, "Baumgarte: beta_dot off by {beta_dot}");
}

/// The dynamics issue's pendulum energy test: 1 kg at 1 m released 0.6 rad from hanging,
/// 2,500 steps of 2e-3. The energy stays within 1e-6 of the energy exchanged (seen
/// 6e-7), the swing keeps its amplitude (1e-6 rad), and the period is the exact one,
/// `4 sqrt(L / g) K(sin(0.3))` (K by the arithmetic-geometric mean), to 1e-5 (seen
/// 3.2e-6).
#[test]
fn pendulum_swing_keeps_its_energy_and_period() {
    let mut m = fixture("pendulum-swing.json");
    let t = run(&mut m, 5.0, 2e-3, 2e-3, DynamicMethod::GeneralizedAlpha);
    assert_eq!(t.frames.len(), 2501);
    let energy: Vec<f64> = t.frames.iter().map(total_energy).collect();
    let drift = energy.iter().fold(f64::MIN, |a, &b| a.max(b))
        - energy.iter().fold(f64::MAX, |a, &b| a.min(b));
    let exchanged = t
        .frames
        .iter()
        .map(|f| f.energy.kinetic)
        .fold(0.0, f64::max);
    assert!(
        drift < 1e-6 * exchanged,
        "energy drift {drift} of {exchanged}"
    );
    let swing = |f: &DynamicFrame| z_angle(f.parts[0].quaternion) + std::f64::consts::FRAC_PI_2;
    let widest = t.frames.iter().map(|f| swing(f).abs()).fold(0.0, f64::max);
    assert!((widest - 0.6).abs() < 1e-6, "amplitude {widest}");
    let crossings: Vec<f64> = t
        .frames
        .windows(2)
        .filter_map(|p| {
            let (a, b) = (
                p[0].parts[0].angular_velocity[2],
                p[1].parts[0].angular_velocity[2],
            );
            (a < 0.0 && b >= 0.0).then(|| p[0].time + (p[1].time - p[0].time) * (-a) / (b - a))
        })
        .collect();
    let (mut a, mut b) = (1.0f64, (1.0 - 0.3f64.sin().powi(2)).sqrt());
    for _ in 0..40 {
        (a, b) = ((a + b) / 2.0, (a * b).sqrt());
    }
    let period = 4.0 * (1.0f64 / 9.81).sqrt() * std::f64::consts::PI / (2.0 * a);
    let seen = crossings[1] - crossings[0];
    assert!(
        (seen - period).abs() < 1e-5 * period,
        "period {seen} for {period}"
    );
}

/// The net force (springs and weight) on each node of the crane truss, from the file's
/// springs (`v`) and the frame's positions.
fn truss_net_forces(m: &Mechanism, v: &serde_json::Value, f: &DynamicFrame) -> Vec<[f64; 2]> {
    let index = |part: &str| {
        let key = m.part_key(part).unwrap();
        f.parts.iter().position(|p| p.part == key)
    };
    let at = |end: &serde_json::Value| -> [f64; 2] {
        match index(end["part"].as_str().unwrap()) {
            Some(k) => [f.parts[k].position[0], f.parts[k].position[1]],
            None if end["marker"] == "n0l" => [0.0, 0.0],
            None => [1.0, 0.0],
        }
    };
    let mut net: Vec<[f64; 2]> = f.parts.iter().map(|_| [0.0, -9.81]).collect();
    for s in v["forces"]["springs"].as_array().unwrap() {
        let (a, b) = (at(&s["i"]), at(&s["j"]));
        let d = [a[0] - b[0], a[1] - b[1]];
        let length = d[0].hypot(d[1]);
        let tension =
            s["stiffness"].as_f64().unwrap() * (length - s["rest_length"].as_f64().unwrap());
        for (end, sign) in [(&s["i"], -1.0), (&s["j"], 1.0)] {
            if let Some(k) = index(end["part"].as_str().unwrap()) {
                net[k][0] += sign * tension * d[0] / length;
                net[k][1] += sign * tension * d[1] / length;
            }
        }
    }
    net
}

/// The dynamics issue's mass-spring crane truss, 10 floors (springs between markers, no
/// joints): released at rest it sags and rings, mirror-symmetric to rounding, with the
/// energy balance within 1e-6 of the spring energy exchanged (seen 1.4e-7); with
/// dampers (200 N s/m, h = 5e-3) it comes to rest where every node's springs carry its
/// weight (1e-3 of it).
#[test]
fn crane_truss_of_springs() {
    let mut m = fixture("crane-truss.json");
    let t = run(&mut m, 2.0, 1e-3, 1e-2, DynamicMethod::GeneralizedAlpha);
    let e0 = total_energy(&t.frames[0]);
    let drift = t
        .frames
        .iter()
        .map(|f| (total_energy(f) - e0).abs())
        .fold(0.0, f64::max);
    let exchanged = t.frames.iter().map(|f| f.energy.spring).fold(0.0, f64::max);
    assert!(exchanged > 1.0);
    assert!(
        drift < 1e-6 * exchanged,
        "energy drift {drift} of {exchanged}"
    );
    for f in &t.frames {
        for pair in f.parts.chunks(2) {
            let (l, r) = (pair[0].position, pair[1].position);
            assert!((l[0] + r[0] - 1.0).abs() < 1e-10 && (l[1] - r[1]).abs() < 1e-10);
        }
    }

    let text = std::fs::read_to_string(format!(
        "{}/../../fixtures/dynamics/crane-truss.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for s in v["forces"]["springs"].as_array_mut().unwrap() {
        s["damping"] = serde_json::json!(200.0);
    }
    let mut m = Mechanism::from_json(&v.to_string(), None).unwrap();
    let t = run(&mut m, 3.0, 5e-3, 0.5, DynamicMethod::GeneralizedAlpha);
    // The springs' stiffness and damping are in Newton's iteration matrix: no step is
    // halved (with the mass matrix alone, most were).
    assert!(t.events.is_empty(), "{:?}", t.events);
    let last = t.frames.last().unwrap();
    assert!(
        last.energy.kinetic < 1e-6,
        "kinetic {}",
        last.energy.kinetic
    );
    let worst = truss_net_forces(&m, &v, last)
        .iter()
        .flatten()
        .fold(0.0f64, |a, b| a.max(b.abs()));
    assert!(worst < 1e-3 * 9.81, "net force {worst}");
}

/// A host changes parameters mid-run: a damped 2 kg block on a vertical slider hangs
/// from a spring of stiffness `k` and drags a follower on a horizontal slider by a rod
/// of length `2 reach` (a distance joint); raising `k` from 50 to 100 N/m moves the
/// block's rest to `m g / k` below the spring's rest length; `reach` from 1 to 0.75
/// re-assembles with the rod at 1.5 m and carries on. Unknown names and refused values
/// are errors that change nothing; the mechanism keeps its own values.
#[test]
fn a_host_changes_parameters_mid_run() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "units": { "length": "m", "angle": "rad", "mass": "kg", "time": "s" },
      "parameters": { "k": 50, "reach": 1, "twice": "2 * reach" },
      "parts": [
        { "id": "ground", "grounded": true,
          "markers": { "top": {}, "rail": { "rotation": { "axis": [1, 0, 0], "angle": "-pi / 2" } },
                       "rail2": { "position": [3, -1, 0], "rotation": { "axis": [0, 1, 0], "angle": "pi / 2" } } } },
        { "id": "block", "placement": { "position": [0, -1, 0] },
          "markers": { "hook": {}, "rail": { "rotation": { "axis": [1, 0, 0], "angle": "-pi / 2" } },
                       "eye": { "position": [1, 0, 0] } },
          "mass": { "mass": 2, "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]] } },
        { "id": "follower", "placement": { "position": [3, -1, 0] },
          "markers": { "eye": {}, "rail": { "rotation": { "axis": [0, 1, 0], "angle": "pi / 2" } } },
          "mass": { "mass": 1, "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]] } } ],
      "joints": [
        { "id": "rail", "type": "slider", "i": { "part": "block", "marker": "rail" },
          "j": { "part": "ground", "marker": "rail" } },
        { "id": "rail2", "type": "slider", "i": { "part": "follower", "marker": "rail" },
          "j": { "part": "ground", "marker": "rail2" } },
        { "id": "rod", "type": "distance", "distance": "twice", "i": { "part": "follower", "marker": "eye" },
          "j": { "part": "block", "marker": "eye" } } ],
      "forces": { "gravity": [0, -9.81, 0],
        "springs": [ { "id": "s", "i": { "part": "block", "marker": "hook" },
                       "j": { "part": "ground", "marker": "top" },
                       "stiffness": "k", "rest_length": 1, "damping": 20 } ] } }"#;
    let mut m = from_text(text);
    let mut settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    settings.run = RunSettings::new(0.0, 20.0, 1e-3, Some(5.0)).unwrap();
    let mut frames = m.dynamic_frames(settings).unwrap();
    let rod = |f: &DynamicFrame| {
        let (b, w) = (f.parts[0].position, f.parts[1].position);
        (w[0] - (b[0] + 1.0)).hypot(w[1] - b[1])
    };
    let (first, _) = frames.next().unwrap().unwrap();
    assert!((rod(&first) - 2.0).abs() < 1e-12);
    let (rest, _) = frames.next().unwrap().unwrap();
    // The follower's rail carries none of the weight: 2 g / 50 below the rest length.
    let y = rest.parts[0].position[1];
    assert!((y + 1.0 + 2.0 * 9.81 / 50.0).abs() < 1e-4, "y {y}");
    assert!(frames.set_parameter("nonesuch", 1.0).is_err());
    assert!(frames.set_parameter("k", f64::NAN).is_err());
    frames.set_parameter("k", 100.0).unwrap();
    let (stiffer, _) = frames.next().unwrap().unwrap();
    let y = stiffer.parts[0].position[1];
    assert!((y + 1.0 + 2.0 * 9.81 / 100.0).abs() < 1e-4, "y {y}");
    // Refused by the model (a distance must be positive): an error, and the run goes on
    // as it was.
    let e = frames.set_parameter("reach", 0.0).unwrap_err().to_string();
    assert!(e.contains("distance"), "{e}");
    frames.set_parameter("reach", 0.75).unwrap();
    let (longer, events) = frames.next().unwrap().unwrap();
    assert!(events.is_empty(), "{events:?}");
    assert!((rod(&longer) - 1.5).abs() < 1e-10, "rod {}", rod(&longer));
    assert!(longer.max_residual < 1e-10);
    // The block's rest does not depend on the rod.
    let y = longer.parts[0].position[1];
    assert!((y + 1.0 + 2.0 * 9.81 / 100.0).abs() < 1e-4, "y {y}");
    drop(frames);
    // The mechanism keeps its own values.
    assert_eq!(m.parameter("k"), Some(50.0));
}

/// Joints' `rate` fields start a run: a pendulum hanging at rest given 90 deg/s on its
/// pin (a file in degrees) starts turning at exactly that; a block on a slider given 2
/// m/s starts at 2 m/s along the rail however its part velocity says otherwise (the
/// rate holds, the part velocity is the wish nearest to it). Rates that cannot hold
/// (two that contradict each other through the joints, or one against a motion) are an
/// error naming the joints; a rate on a joint with no such free coordinate is refused
/// when the file is read, naming the place.
#[test]
fn joint_rates_start_a_run() {
    let pendulum = r#"{ "format": "tenon-assembly", "version": 1,
      "units": { "length": "m", "angle": "deg", "mass": "kg", "time": "s" },
      "parts": [ { "id": "ground", "grounded": true, "markers": { "o": {} } },
        { "id": "bob", "placement": { "rotation": { "axis": [0, 0, 1], "angle": -90 } },
          "markers": { "o": {} },
          "mass": { "mass": 1, "center_of_mass": [1, 0, 0],
                    "inertia": [[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]] } } ],
      "joints": [ { "id": "pin", "type": "revolute", "rate": { "angle": 90 },
                    "i": { "part": "bob", "marker": "o" }, "j": { "part": "ground", "marker": "o" } } ],
      "forces": { "gravity": [0, -9.81, 0] } }"#;
    let mut m = from_text(pendulum);
    let t = run(&mut m, 0.1, 1e-3, 0.1, DynamicMethod::GeneralizedAlpha);
    let w = t.frames[0].parts[0].angular_velocity;
    assert!((w[2] - 90.0).abs() < 1e-9, "{w:?}");
    let pin = t.frames[0].joints[0];
    assert!((pin.rate - 90.0).abs() < 1e-9, "{pin:?}");

    let block = |rate: &str, motion: &str| {
        format!(
            r#"{{ "format": "tenon-assembly", "version": 1,
              "units": {{ "length": "m", "angle": "rad", "mass": "kg", "time": "s" }},
              "parts": [ {{ "id": "ground", "grounded": true,
                  "markers": {{ "rail": {{ "rotation": {{ "axis": [0, 1, 0], "angle": "pi / 2" }} }} }} }},
                {{ "id": "block", "velocity": {{ "linear": [0, 5, 0], "angular": [0, 0, 0] }},
                  "markers": {{ "rail": {{ "rotation": {{ "axis": [0, 1, 0], "angle": "pi / 2" }} }} }},
                  "mass": {{ "mass": 2, "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]] }} }} ],
              "joints": [ {{ "id": "rail", "type": "slider", {rate}
                  "i": {{ "part": "block", "marker": "rail" }}, "j": {{ "part": "ground", "marker": "rail" }} }} ],
              "motions": [ {motion} ] }}"#
        )
    };
    let mut m = from_text(&block(r#""rate": { "distance": 2 },"#, ""));
    let t = run(&mut m, 0.5, 1e-3, 0.5, DynamicMethod::GeneralizedAlpha);
    for f in &t.frames {
        let v = f.parts[0].velocity;
        assert!((v[0] - 2.0).abs() < 1e-9 && v[1].abs() < 1e-12, "{v:?}");
    }
    assert!((t.frames[1].parts[0].position[0] - 1.0).abs() < 1e-9);
    // A motion driving the rail at 3 m/s: a rate of 3 agrees, a rate of 2 cannot hold.
    let motion = r#"{ "joint": "rail", "distance": "3 * t" }"#;
    let mut m = from_text(&block(r#""rate": { "distance": 3 },"#, motion));
    run(&mut m, 0.1, 1e-3, 0.1, DynamicMethod::GeneralizedAlpha);
    let mut m = from_text(&block(r#""rate": { "distance": 2 },"#, motion));
    let settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    let e = m.simulate(settings).unwrap_err().to_string();
    assert!(e.contains("'rail'") && e.contains("cannot hold"), "{e}");
    // A slider has no free angle.
    let e = Mechanism::from_json(&block(r#""rate": { "angle": 2 },"#, ""), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("joints[0].rate.angle") && e.contains("no free angle"),
        "{e}"
    );

    // A four-bar (one freedom): rates on the crank and the rocker that disagree.
    let text = std::fs::read_to_string(format!(
        "{}/../../fixtures/dynamics/four-bar-a02-nonredundant.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["joints"][0]["rate"] = serde_json::json!({ "angle": -1.0 });
    let mut m = Mechanism::from_json(&v.to_string(), None).unwrap();
    let t = run(&mut m, 0.01, 1e-3, 0.01, DynamicMethod::GeneralizedAlpha);
    assert!((t.frames[0].parts[0].angular_velocity[2] + 1.0).abs() < 1e-9);
    v["joints"][1]["rate"] = serde_json::json!({ "angle": -2.0 });
    let mut m = Mechanism::from_json(&v.to_string(), None).unwrap();
    let settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    let e = m.simulate(settings).unwrap_err().to_string();
    assert!(e.contains("'pivot0'") && e.contains("'pivot1'"), "{e}");
}

/// The block of `block_on_a_spring` hung by a compliant distance joint instead of the
/// spring (compliance 1/50 m/N, the same stiffness). Generalized-alpha: the same closed
/// form, the joint's reaction the spring's tension `k (length - 1)`, energy kept (the
/// joint's stored energy counted as a spring's). Both methods: the frequency from the
/// velocity's returns through zero to 1e-6 relative. (Baumgarte's soft row damps by a
/// ratio of `h omega / 2`, 2.5e-4 here: its positions and energy are checked to that.)
#[test]
fn compliant_distance_joint_oscillates_at_the_spring_mass_frequency() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "units": { "length": "m", "angle": "rad", "mass": "kg", "time": "s" },
      "parts": [
        { "id": "ground", "grounded": true,
           "markers": { "top": {}, "rail": { "rotation": { "axis": [1, 0, 0], "angle": "-pi / 2" } } } },
        { "id": "block", "placement": { "position": [0, -1, 0] },
           "markers": { "hook": {}, "rail": { "rotation": { "axis": [1, 0, 0], "angle": "-pi / 2" } } },
           "mass": { "mass": 2, "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]] } } ],
      "joints": [
        { "id": "rail", "type": "slider", "i": { "part": "block", "marker": "rail" },
          "j": { "part": "ground", "marker": "rail" } },
        { "id": "hanger", "type": "distance", "distance": 1, "compliance": 0.02,
          "i": { "part": "block", "marker": "hook" }, "j": { "part": "ground", "marker": "top" } } ],
      "forces": { "gravity": [0, -9.81, 0] } }"#;
    let (mass, k, g): (f64, f64, f64) = (2.0, 50.0, 9.81);
    let omega = (k / mass).sqrt();
    let amplitude = mass * g / k;
    for method in [DynamicMethod::GeneralizedAlpha, DynamicMethod::Baumgarte] {
        let mut m = from_text(text);
        let t = run(&mut m, 4.0, 1e-4, 1e-4, method);
        let exact = method == DynamicMethod::GeneralizedAlpha;
        let (close, balance) = if exact { (1e-5, 1e-6) } else { (1e-2, 1e-2) };
        for f in t.frames.iter().step_by(50) {
            let y = f.parts[0].position[1];
            let expected = -1.0 - amplitude + amplitude * (omega * f.time).cos();
            assert!(
                (y - expected).abs() < close * amplitude,
                "{method:?} t = {}: y {y} vs {expected}",
                f.time
            );
            // The hanger pulls the block up with the spring's tension.
            let tension = k * (-y - 1.0);
            let pull = f.reactions[1].force[1];
            assert!(
                !exact || (pull - tension).abs() < 1e-6 * mass * g,
                "{method:?} t = {}: reaction {pull} vs tension {tension}",
                f.time
            );
            assert!(
                f.max_residual < 1e-9,
                "{method:?}: residual {}",
                f.max_residual
            );
        }
        let returns: Vec<f64> = t
            .frames
            .windows(2)
            .filter_map(|p| {
                let (a, b) = (p[0].parts[0].velocity[1], p[1].parts[0].velocity[1]);
                (a < 0.0 && b >= 0.0).then(|| p[0].time + (p[1].time - p[0].time) * (-a) / (b - a))
            })
            .collect();
        assert!(returns.len() >= 3, "{method:?}: {} returns", returns.len());
        let period = (returns[returns.len() - 1] - returns[0]) / (returns.len() - 1) as f64;
        let seen = 2.0 * std::f64::consts::PI / period;
        assert!(
            (seen - omega).abs() < 1e-6 * omega,
            "{method:?}: frequency {seen} for {omega} ({:.2e} relative)",
            (seen - omega) / omega
        );
        let e0 = total_energy(&t.frames[0]);
        for f in t.frames.iter().step_by(50) {
            assert!(
                (total_energy(f) - e0).abs() < balance * mass * g * amplitude,
                "{method:?}: energy at t = {} off by {}",
                f.time,
                total_energy(f) - e0
            );
        }
    }
}

/// A torsion spring made of a compliant revolute driven to 0 degrees beside a rigid pin
/// on the same axis, in degrees (compliance 2 degrees per N m, `k = 90 / pi` N m per
/// radian) on a part of inertia 0.5 kg m^2 about the axis, started turning at 30
/// degrees per second: `theta = (w0 / omega) sin(omega t)` with `omega = sqrt(k / I)`,
/// by generalized-alpha to 1e-6 of the amplitude (Baumgarte's soft row to 1e-2).
#[test]
fn compliant_revolute_is_a_torsion_spring_in_the_files_units() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "units": { "length": "m", "angle": "deg", "mass": "kg", "time": "s" },
      "parts": [
        { "id": "ground", "grounded": true, "markers": { "axis": {} } },
        { "id": "wheel", "markers": { "axis": {} },
          "mass": { "mass": 3, "inertia": [[0.4, 0, 0], [0, 0.4, 0], [0, 0, 0.5]] },
          "velocity": { "linear": [0, 0, 0], "angular": [0, 0, 30] } } ],
      "joints": [
        { "id": "pin", "type": "revolute", "i": { "part": "wheel", "marker": "axis" },
          "j": { "part": "ground", "marker": "axis" } },
        { "id": "torsion", "type": "revolute", "angle": 0, "compliance": 2,
          "i": { "part": "wheel", "marker": "axis" }, "j": { "part": "ground", "marker": "axis" } } ] }"#;
    let k = 90.0 / std::f64::consts::PI;
    let omega = (k / 0.5f64).sqrt();
    let w0 = 30f64.to_radians();
    for method in [DynamicMethod::GeneralizedAlpha, DynamicMethod::Baumgarte] {
        let mut m = from_text(text);
        let t = run(&mut m, 2.0, 1e-4, 1e-3, method);
        // Baumgarte's soft row damps by `exp(-h omega^2 t / 2)`: 6e-3 at 2 s.
        let close = if method == DynamicMethod::GeneralizedAlpha {
            1e-6
        } else {
            1e-2
        };
        for f in &t.frames {
            let theta = z_angle(f.parts[0].quaternion);
            let expected = w0 / omega * (omega * f.time).sin();
            assert!(
                (theta - expected).abs() < close * w0 / omega,
                "{method:?} t = {}: angle {theta} vs {expected}",
                f.time
            );
        }
    }
}

/// The seeds' coupled constraint (seed 003, chrono-C-all's `test_coupled_constraint`):
/// `1.0 (distance - d0) + 0.5 (angle - 0.4)` between a body (1 kg, 0.22 kg m^2, at
/// (0.45, 0.35) turned 0.4 rad, moving at (0.45, -0.35) and 0.5 rad/s) and an anchor at
/// (-0.2, 0.1), 3,400 steps of 0.0045 s, its value measured here from the frames'
/// poses (the angle unwrapped). With the seed's settings (Baumgarte 0.4 per step, its
/// softness 0.016 and 0.032 as the compliance `(0.016 + 0.5^2 0.032) h^2`) it stays
/// under the seed's 0.008; by index-3 generalized-alpha, rigid, at the Newton
/// tolerance.
#[test]
fn coupled_constraint_of_the_seeds() {
    let path = format!(
        "{}/../../fixtures/dynamics/coupled-constraint.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let d0 = 0.65f64.hypot(0.25);
    let worst = |t: &DynamicTrajectory| -> f64 {
        let mut worst = 0.0f64;
        let mut last: Option<f64> = None;
        for f in &t.frames {
            let p = &f.parts[0];
            let mut angle = z_angle(p.quaternion);
            if let Some(before) = last {
                angle += (2.0 * std::f64::consts::PI)
                    * ((before - angle) / (2.0 * std::f64::consts::PI)).round();
            }
            last = Some(angle);
            let distance = (p.position[0] + 0.2).hypot(p.position[1] - 0.1);
            worst = worst.max((1.0 * (distance - d0) + 0.5 * (angle - 0.4)).abs());
        }
        worst
    };
    let mut m = from_text(&text);
    let settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    assert_eq!(settings.integration.method, DynamicMethod::Baumgarte);
    let soft = m.simulate(settings).unwrap();
    assert!(soft.completed, "{:?}", soft.events);
    assert_eq!(soft.frames.len(), 3401);
    let soft_worst = worst(&soft);
    assert!(soft_worst < 0.008, "Baumgarte: {soft_worst}");
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["joints"][1]["compliance"] = serde_json::json!(0);
    doc["simulation"]["method"] = serde_json::json!("generalized_alpha");
    let mut m = from_text(&doc.to_string());
    let settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    let rigid = m.simulate(settings).unwrap();
    assert!(rigid.completed, "{:?}", rigid.events);
    let rigid_worst = worst(&rigid);
    assert!(rigid_worst < 1e-10, "index 3: {rigid_worst}");
    // The body has moved far (it spirals out: one equation holds 1 of its 3 freedoms);
    // both runs end near each other.
    let (a, b) = (
        &soft.frames.last().unwrap().parts[0].position,
        &rigid.frames.last().unwrap().parts[0].position,
    );
    assert!(a[1] < -5.0, "{a:?}");
    assert!((a[0] - b[0]).hypot(a[1] - b[1]) < 1e-3, "{a:?} vs {b:?}");
    eprintln!("seed 003: largest |phi| Baumgarte {soft_worst:.3e}, index 3 {rigid_worst:.3e}");
}

/// The seeds' near-duplicate equations (ratios (1, 0) and (1 + 1e-8, 1e-6)) as two
/// `expression` joints on the coupled-constraint body: the run warns once at the start
/// that `J M^-1 J^T` is ill-conditioned, naming both joints. (The pair fixes the angle
/// through a coefficient of 1e-6: Newton's steps then leave the weak row out and the
/// run stops early, with a `not_solved` event, not an error.)
#[test]
fn nearly_dependent_joints_are_named_at_the_start() {
    let path = format!(
        "{}/../../fixtures/dynamics/coupled-constraint.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let d0 = 0.65f64.hypot(0.25);
    let coupled = doc["joints"][1].clone();
    let mut a = coupled.clone();
    a["id"] = serde_json::json!("c1");
    a["residuals"] = serde_json::json!([format!("distance - {d0}")]);
    a.as_object_mut().unwrap().remove("compliance");
    let mut b = a.clone();
    b["id"] = serde_json::json!("c2");
    b["residuals"] = serde_json::json!([format!(
        "(1 + 1e-8) * (distance - {d0}) + 1e-6 * (angle - 0.4)"
    )]);
    doc["joints"] = serde_json::json!([doc["joints"][0].clone(), a, b]);
    doc["simulation"]["method"] = serde_json::json!("generalized_alpha");
    doc["simulation"]["end"] = serde_json::json!(0.045);
    let mut m = from_text(&doc.to_string());
    let settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    let t = m.simulate(settings).unwrap();
    let warned: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == tenon::DynamicEventKind::IllConditioned)
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", t.events);
    let mut names: Vec<&str> = warned[0]
        .joints
        .iter()
        .map(|&k| m.model().joint(k).unwrap().id.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["c1", "c2"], "{}", warned[0].message);
    // The rigid coupled constraint alone (the fixture's, made rigid) is well conditioned.
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    doc["joints"][1]["compliance"] = serde_json::json!(0);
    doc["simulation"]["end"] = serde_json::json!(0.045);
    let mut m = from_text(&doc.to_string());
    let settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    let t = m.simulate(settings).unwrap();
    assert!(
        t.events
            .iter()
            .all(|e| e.kind != tenon::DynamicEventKind::IllConditioned),
        "{:?}",
        t.events
    );
}
