//! Kinematic runs through the facade: on every fixture with motions, velocities equal
//! central differences of positions and accelerations those of velocities (angular ones
//! from the quaternions); a run leaves the mechanism where it was; frames come one at a
//! time as they come all together.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

#[path = "common/differences.rs"]
mod differences;

use differences::worst_against_differences;
use tenon::{Frame, Mechanism, RunSettings};

fn fixtures_with_motions() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .filter(|(_, text)| text.contains("\"motions\""))
        .collect();
    out.sort();
    out
}

/// Where part `id` is among a frame's parts (the parts that are not grounded, in file
/// order).
fn moving_index(m: &Mechanism, id: &str) -> usize {
    m.model()
        .parts()
        .filter(|(_, p)| !p.grounded)
        .position(|(_, p)| p.id == id)
        .unwrap()
}

#[test]
fn rates_match_central_differences_on_every_fixture_with_motions() {
    let fixtures = fixtures_with_motions();
    assert!(
        fixtures.len() >= 10,
        "{} fixtures with motions",
        fixtures.len()
    );
    let h = 2e-5;
    let mut lines = Vec::new();
    for (name, text) in &fixtures {
        let mut m = Mechanism::from_json(text, Some(name)).unwrap();
        let per_radian = 1.0 / m.model().units().angle.radians();
        let (mut worst_v, mut worst_a) = (0.0f64, 0.0f64);
        for t0 in [0.1, 0.37] {
            let settings = RunSettings::new(t0 - h, t0 + h, h, None).unwrap();
            let run = m.kinematics(settings).unwrap();
            assert!(run.completed, "{name} at {t0}: {:?}", run.events);
            assert_eq!(run.frames.len(), 3, "{name}");
            let (v, a) = worst_against_differences(
                &run.frames[0],
                &run.frames[1],
                &run.frames[2],
                h,
                per_radian,
            );
            worst_v = worst_v.max(v);
            worst_a = worst_a.max(a);
        }
        lines.push(format!(
            "{name}: velocity {worst_v:.1e}, acceleration {worst_a:.1e}"
        ));
        // Freedoms that no motion drives (robot-arm: 5, rssr-four-bar: the coupler's
        // spin) are held like the rest: their rates are the least-norm ones and their
        // accelerations carry the change of those along the freedoms.
        let bound = (1e-6, 1e-6);
        assert!(
            worst_v < bound.0 && worst_a < bound.1,
            "{name}: velocity {worst_v:.1e}, acceleration {worst_a:.1e}"
        );
    }
    use std::io::Write;
    let mut err = std::io::stderr();
    for l in &lines {
        let _ = writeln!(err, "kinematics: {l}");
    }
}

#[test]
fn a_run_leaves_the_mechanism_where_it_was_and_frames_come_one_at_a_time_too() {
    let text = fixtures_with_motions()
        .into_iter()
        .find(|(n, _)| n == "slider-crank.json")
        .unwrap()
        .1;
    let mut m = Mechanism::from_json(&text, Some("slider-crank.json")).unwrap();
    let before = m.placement("piston").unwrap();
    let settings = RunSettings::new(0.0, 0.5, 0.01, Some(0.05)).unwrap();
    let whole = m.kinematics(settings).unwrap();
    assert_eq!(whole.frames.len(), 11);
    assert!((whole.frames[10].time - 0.5).abs() < 1e-15);
    assert_eq!(m.placement("piston").unwrap(), before);
    let one_by_one: Vec<Frame> = m
        .kinematic_frames(settings)
        .unwrap()
        .map(|item| item.unwrap().0)
        .collect();
    assert_eq!(one_by_one, whole.frames);
}

#[test]
fn run_settings_refuse_what_cannot_run() {
    assert!(RunSettings::new(0.0, 1.0, 0.0, None).is_err());
    assert!(RunSettings::new(0.0, 1.0, -0.1, None).is_err());
    assert!(RunSettings::new(1.0, 0.0, 0.1, None).is_err());
    assert!(RunSettings::new(0.0, f64::NAN, 0.1, None).is_err());
    assert!(RunSettings::new(0.0, 1e9, 1e-9, None).is_err());
    // An output step that is not a multiple of the step: every step is written.
    let s = RunSettings::new(0.0, 1.0, 0.03, Some(0.05)).unwrap();
    assert_eq!(s.output_step(), 0.03);
}

fn fixture_text(name: &str) -> String {
    fixtures_with_motions()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap()
        .1
}

/// A run that must stop early: the mechanism, the run and the event it stopped at.
fn stopped_run(text: &str, settings: RunSettings) -> (Mechanism, tenon::Trajectory, tenon::Event) {
    let mut m = Mechanism::from_json(text, Some("run.json")).unwrap();
    let run = m.kinematics(settings).unwrap();
    assert!(!run.completed, "{:?}", run.events);
    let stop = run.events.iter().find(|e| e.kind.stops()).unwrap().clone();
    (m, run, stop)
}

/// The slider-crank driven by its piston (100 mm/s outward from 121.1 mm): the piston
/// reaches the crank and rod end to end (130 mm) near t = 0.089, where the crank's turn
/// is no longer determined; past it nothing can hold. The run stops there with an
/// event naming the joints, and the frames before it are kept.
#[test]
fn a_piston_driven_past_dead_centre_stops_the_run_with_an_event() {
    let text = fixture_text("slider-crank.json").replace(
        r#""joint": "main-bearing",
      "angle": "40 + 360 * t""#,
        r#""joint": "bore",
      "distance": "121.10442782258488 + 100 * t""#,
    );
    assert!(
        text.contains(r#""joint": "bore""#),
        "the fixture changed shape"
    );
    let (m, run, stop) = stopped_run(&text, RunSettings::new(0.0, 0.2, 0.001, None).unwrap());
    assert!(stop.time > 0.085 && stop.time < 0.1, "{stop:?}");
    let named: Vec<&str> = stop
        .joints
        .iter()
        .map(|&j| m.joint_id(j).unwrap())
        .collect();
    assert!(!named.is_empty(), "{stop:?}");
    let last = run.frames.last().unwrap();
    assert!(last.time < stop.time);
    assert!(run.frames.iter().all(|f| f.max_residual < 1e-9));
}

/// The four-bar fixture run two crank turns at 1 degree steps.
fn four_bar_two_turns() -> (Mechanism, tenon::Trajectory) {
    let mut m =
        Mechanism::from_json(&fixture_text("four-bar.json"), Some("four-bar.json")).unwrap();
    let run = m
        .kinematics(RunSettings::new(0.0, 2.0, 1.0 / 360.0, None).unwrap())
        .unwrap();
    (m, run)
}

/// The crank-rocker driven by its crank runs two whole turns through the rocker's
/// extremes (where the rocker stops and turns back) without an event that stops it.
#[test]
fn a_crank_rocker_runs_through_the_rockers_extremes() {
    let (m, run) = four_bar_two_turns();
    assert!(run.completed, "{:?}", run.events);
    assert_eq!(run.frames.len(), 721);
    // The rocker's angular velocity changes sign (its extremes) four times in two turns.
    let rocker = moving_index(&m, "rocker");
    let w: Vec<f64> = run
        .frames
        .iter()
        .map(|f| f.parts[rocker].angular_velocity[2])
        .collect();
    let reversals = w.windows(2).filter(|p| p[0] * p[1] < 0.0).count();
    assert_eq!(reversals, 4, "{w:?}");
}

/// A limit on the crank's angle that the motion would pass stops the run at it.
#[test]
fn a_joint_limit_reached_stops_the_run() {
    let text = fixture_text("four-bar.json").replacen(
        r#""id": "crank-pivot","#,
        r#""id": "crank-pivot", "limits": { "angle": [0, 150] },"#,
        1,
    );
    let (m, _, stop) = stopped_run(&text, RunSettings::new(0.0, 1.0, 0.01, None).unwrap());
    assert_eq!(stop.kind, tenon::EventKind::Limit, "{stop:?}");
    assert_eq!(m.joint_id(stop.joints[0]), Some("crank-pivot"));
    // 60 + 360 t passes 150 degrees at t = 0.25.
    assert!((stop.time - 0.26).abs() < 0.011, "{stop:?}");
}

/// The four-bar fixture (ground pivots 100 apart, crank 40, coupler 120, rocker 80,
/// crank at `60 + 360 t` degrees) against an independent loop closure written here: the
/// coupler's far end on the circles about its crank pin and about the rocker pivot (the
/// branch nearest the frame before), and the velocity and acceleration loop equations
/// solved as 2 by 2 systems. Every frame of two turns at 1 degree steps: rocker angle,
/// angular velocity and angular acceleration to 1e-9 relative of their scales.
#[test]
fn four_bar_rocker_follows_an_independent_loop_closure() {
    let (m, run) = four_bar_two_turns();
    assert!(run.completed);
    let rocker = moving_index(&m, "rocker");
    let (l1, l2, l3, d) = (40.0f64, 120.0f64, 80.0f64, [100.0f64, 0.0f64]);
    let w1 = std::f64::consts::TAU;
    let perp = |a: f64| [-a.sin(), a.cos()];
    let along = |a: f64| [a.cos(), a.sin()];
    let solve2 = |m: [[f64; 2]; 2], r: [f64; 2]| {
        let det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
        [
            (r[0] * m[1][1] - m[0][1] * r[1]) / det,
            (m[0][0] * r[1] - m[1][0] * r[0]) / det,
        ]
    };
    let mut phi_prev = 2.0 * 0.5368835651467548f64.atan2(0.8436563503437345);
    let (mut worst_phi, mut worst_w, mut worst_a) = (0.0f64, 0.0f64, 0.0f64);
    let mut turns_prev = phi_prev;
    for f in &run.frames {
        let theta = (60.0 + 360.0 * f.time).to_radians();
        let b = [l1 * theta.cos(), l1 * theta.sin()];
        // C on both circles: about B (l2) and about D (l3).
        let bd = [d[0] - b[0], d[1] - b[1]];
        let dist = bd[0].hypot(bd[1]);
        let a = (l2 * l2 - l3 * l3 + dist * dist) / (2.0 * dist);
        let h = (l2 * l2 - a * a).sqrt();
        let mid = [b[0] + a * bd[0] / dist, b[1] + a * bd[1] / dist];
        let candidates = [1.0, -1.0].map(|s| {
            let c = [mid[0] - s * h * bd[1] / dist, mid[1] + s * h * bd[0] / dist];
            (c[1] - d[1]).atan2(c[0] - d[0])
        });
        let prev = phi_prev;
        let gap = |x: f64| {
            (x - prev + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
                - std::f64::consts::PI
        };
        let phi = if gap(candidates[0]).abs() < gap(candidates[1]).abs() {
            candidates[0]
        } else {
            candidates[1]
        };
        phi_prev = phi;
        let c = [d[0] + l3 * phi.cos(), d[1] + l3 * phi.sin()];
        let psi = (c[1] - b[1]).atan2(c[0] - b[0]);
        // l1 w1 perp(theta) + l2 w2 perp(psi) = l3 w3 perp(phi).
        let (p1, p2, p3) = (perp(theta), perp(psi), perp(phi));
        let [w2, w3] = solve2(
            [[l2 * p2[0], -l3 * p3[0]], [l2 * p2[1], -l3 * p3[1]]],
            [-l1 * w1 * p1[0], -l1 * w1 * p1[1]],
        );
        // l2 a2 perp(psi) - l3 a3 perp(phi) = l1 w1^2 e(theta) + l2 w2^2 e(psi) - l3 w3^2 e(phi).
        let (e1, e2, e3) = (along(theta), along(psi), along(phi));
        let rhs: [f64; 2] = std::array::from_fn(|k| {
            l1 * w1 * w1 * e1[k] + l2 * w2 * w2 * e2[k] - l3 * w3 * w3 * e3[k]
        });
        let [_, a3] = solve2([[l2 * p2[0], -l3 * p3[0]], [l2 * p2[1], -l3 * p3[1]]], rhs);
        let part = &f.parts[rocker];
        let q = part.quaternion;
        let mut tenon_phi = 2.0 * q[3].atan2(q[0]);
        tenon_phi += (turns_prev - tenon_phi + std::f64::consts::PI)
            .div_euclid(std::f64::consts::TAU)
            * std::f64::consts::TAU;
        turns_prev = tenon_phi;
        let off = (tenon_phi - phi + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
            - std::f64::consts::PI;
        worst_phi = worst_phi.max(off.abs());
        worst_w = worst_w.max((part.angular_velocity[2].to_radians() - w3).abs() / w1);
        worst_a = worst_a.max((part.angular_acceleration[2].to_radians() - a3).abs() / (w1 * w1));
    }
    eprintln!("four-bar rocker: angle {worst_phi:.1e} rad, velocity {worst_w:.1e}, acceleration {worst_a:.1e}");
    assert!(worst_phi < 1e-9 && worst_w < 1e-9 && worst_a < 1e-9);
}

/// Speed ratios of the couplings, every frame of a second's run: gear (20 to 40:
/// the wheel turns at minus half the pinion's speed), belt (25 to 50: half, same sense),
/// rack and pinion (radius 20: the rack moves 20 per radian), screw (pitch 5: 5 per
/// turn), exact to 1e-12 relative.
#[test]
fn coupling_speed_ratios_are_exact() {
    let cases: [(&str, &str, &str, f64); 4] = [
        ("gear-pair.json", "pinion", "wheel", -0.5),
        ("belt-drive.json", "driver", "driven", 0.5),
        ("rack-and-pinion.json", "pinion", "rack", 20.0),
        (
            "screw-jack.json",
            "screw",
            "screw",
            5.0 / std::f64::consts::TAU,
        ),
    ];
    for (name, driver, driven, ratio) in cases {
        let mut m = Mechanism::from_json(&fixture_text(name), Some(name)).unwrap();
        let (a, b) = (moving_index(&m, driver), moving_index(&m, driven));
        let run = m
            .kinematics(RunSettings::new(0.0, 1.0, 0.01, None).unwrap())
            .unwrap();
        assert!(run.completed, "{name}");
        let mut worst = 0.0f64;
        for f in &run.frames {
            let w = f.parts[a].angular_velocity;
            let axis_speed = w.iter().map(|x| x * x).sum::<f64>().sqrt().to_radians()
                * w.iter()
                    .copied()
                    .fold(0.0, |s: f64, x| if x.abs() > s.abs() { x } else { s })
                    .signum();
            let out = if ratio.abs() < 1.0 && driven != driver && name != "rack-and-pinion.json" {
                let v = f.parts[b].angular_velocity;
                let s = v
                    .iter()
                    .copied()
                    .fold(0.0, |s: f64, x| if x.abs() > s.abs() { x } else { s });
                v.iter().map(|x| x * x).sum::<f64>().sqrt().to_radians() * s.signum()
            } else {
                let v = f.parts[b].velocity;
                let s = v
                    .iter()
                    .copied()
                    .fold(0.0, |s: f64, x| if x.abs() > s.abs() { x } else { s });
                v.iter().map(|x| x * x).sum::<f64>().sqrt() * s.signum()
            };
            worst = worst.max(((out / axis_speed).abs() - ratio.abs()).abs() / ratio.abs());
            if ratio < 0.0 {
                assert!(
                    out * axis_speed < 0.0,
                    "{name}: the gear turns the same way"
                );
            }
        }
        eprintln!("{name}: ratio off by {worst:.1e} relative");
        assert!(worst < 1e-12, "{name}: {worst:.1e}");
    }
}

/// Joint coordinates in frames: the crank's angle is its motion (40 + 360 t degrees,
/// rate 360), the bore's distance is the piston's x with the piston's speed as its rate,
/// and a screw's angle counts its ten turns.
#[test]
fn joint_coordinates_and_rates_follow_the_parts() {
    let mut m = Mechanism::from_json(&fixture_text("slider-crank.json"), Some("s.json")).unwrap();
    let run = m
        .kinematics(RunSettings::new(0.0, 1.0, 0.01, None).unwrap())
        .unwrap();
    let piston = moving_index(&m, "piston");
    for f in &run.frames {
        let find = |id: &str| {
            *f.joints
                .iter()
                .find(|j| m.joint_id(j.joint) == Some(id))
                .unwrap()
        };
        let crank = find("main-bearing");
        assert!(
            (crank.value - (40.0 + 360.0 * f.time)).abs() < 1e-8,
            "{crank:?} at {}",
            f.time
        );
        assert!((crank.rate - 360.0).abs() < 1e-7, "{crank:?}");
        let bore = find("bore");
        assert!((bore.value - f.parts[piston].position[0]).abs() < 1e-9);
        assert!((bore.rate - f.parts[piston].velocity[0]).abs() < 1e-9 * (1.0 + bore.rate.abs()));
    }
    let mut m = Mechanism::from_json(&fixture_text("screw-jack.json"), Some("j.json")).unwrap();
    let run = m
        .kinematics(RunSettings::new(0.0, 1.0, 0.001, Some(0.01)).unwrap())
        .unwrap();
    let last = run.frames.last().unwrap();
    let thread = last
        .joints
        .iter()
        .find(|j| j.coordinate == tenon::Coordinate::Angle)
        .unwrap();
    let first = run.frames[0]
        .joints
        .iter()
        .find(|j| j.coordinate == tenon::Coordinate::Angle)
        .unwrap();
    assert!(
        (thread.value - first.value - 3600.0).abs() < 1e-6,
        "{first:?} -> {thread:?}"
    );
}

/// The 6-axis arm with every joint driven at its own constant rate: the gripper's
/// velocity, acceleration, angular velocity and angular acceleration against the
/// serial-chain formulas, evaluated from the frame's joint axes and pivots (world `z_k`
/// and `p_k` from the parts' poses):
/// `omega = sum_k w_k z_k`, `v = sum_k w_k z_k x (p - p_k)`,
/// `alpha = sum_k w_k (Omega_(k-1) x z_k)`,
/// `a = sum_k w_k [(Omega_(k-1) x z_k) x (p - p_k) + z_k x (v - v_k)]`, with
/// `Omega_(k-1)` the angular velocity of the link before joint k and `v_k` the velocity
/// of its pivot. Every frame to 1e-9 relative.
#[test]
fn a_six_axis_arm_matches_the_serial_chain_formulas() {
    let text = fixture_text("robot-arm.json");
    let mut m = Mechanism::from_json(&text, Some("robot-arm.json")).unwrap();
    let start = m
        .kinematics(RunSettings::new(0.0, 0.0, 0.1, None).unwrap())
        .unwrap();
    let angle = |id: &str| {
        start.frames[0]
            .joints
            .iter()
            .find(|j| m.joint_id(j.joint) == Some(id))
            .unwrap()
            .value
    };
    let rates = [90.0, -60.0, 45.0, 120.0, -30.0, 75.0];
    let motions: Vec<String> = (0..6)
        .map(|k| {
            let id = format!("axis{}", k + 1);
            format!(
                r#"{{ "joint": "{id}", "angle": "{} + {} * t" }}"#,
                angle(&id),
                rates[k]
            )
        })
        .collect();
    let cut = text.find("\"motions\"").unwrap();
    let end = cut + text[cut..].find(']').unwrap() + 1;
    let driven = format!(
        "{}\"motions\": [{}]{}",
        &text[..cut],
        motions.join(", "),
        &text[end..]
    );
    let mut m = Mechanism::from_json(&driven, Some("arm.json")).unwrap();
    let run = m
        .kinematics(RunSettings::new(0.0, 1.0, 0.01, None).unwrap())
        .unwrap();
    assert!(run.completed, "{:?}", run.events);
    assert!(run
        .events
        .iter()
        .all(|e| e.kind != tenon::EventKind::Undriven));
    let model = m.model().clone();
    let free: Vec<String> = model
        .parts()
        .filter(|(_, p)| !p.grounded)
        .map(|(_, p)| p.id.clone())
        .collect();
    let index = |id: &str| free.iter().position(|p| p == id).unwrap();
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let w: Vec<f64> = rates.iter().map(|r: &f64| r.to_radians()).collect();
    let (mut worst_v, mut worst_a) = (0.0f64, 0.0f64);
    for f in &run.frames {
        // Joint k's axis and pivot: marker j of axis k on the link before, in the world.
        let pose_of = |id: &str| -> tenon::Pose {
            match free.iter().position(|p| p == id) {
                Some(k) => tenon::Pose {
                    position: f.parts[k].position,
                    quaternion: f.parts[k].quaternion,
                },
                None => m.placement(id).unwrap(),
            }
        };
        let mut z = Vec::new();
        let mut p = Vec::new();
        for k in 0..6 {
            let joint = model
                .joint(model.joint_by_id(&format!("axis{}", k + 1)).unwrap())
                .unwrap();
            let parent = model.part(joint.j.part).unwrap();
            let tenon::MarkerSpec::Named(name) = &joint.j.marker else {
                panic!()
            };
            let local = parent
                .marker(name)
                .unwrap()
                .numbers(model.parameter_values(), model.units())
                .unwrap();
            let world = pose_of(&parent.id).compose(&local);
            let r = world.matrix();
            z.push([r[0][2], r[1][2], r[2][2]]);
            p.push(world.position);
        }
        let tool = &f.parts[index("gripper")];
        let at = tool.position;
        let mut omega = [0.0; 3];
        let mut v = [0.0; 3];
        let mut pivot_v: Vec<[f64; 3]> = Vec::new();
        let mut omega_before: Vec<[f64; 3]> = Vec::new();
        for k in 0..6 {
            // The pivot's velocity and the link's angular velocity before joint k.
            let mut vk = [0.0; 3];
            for mm in 0..k {
                let arm: [f64; 3] = std::array::from_fn(|c| p[k][c] - p[mm][c]);
                let t = cross(z[mm], arm);
                for c in 0..3 {
                    vk[c] += w[mm] * t[c];
                }
            }
            pivot_v.push(vk);
            omega_before.push(omega);
            let arm: [f64; 3] = std::array::from_fn(|c| at[c] - p[k][c]);
            let t = cross(z[k], arm);
            for c in 0..3 {
                v[c] += w[k] * t[c];
                omega[c] += w[k] * z[k][c];
            }
        }
        let mut a = [0.0; 3];
        let mut alpha = [0.0; 3];
        for k in 0..6 {
            let dz = cross(omega_before[k], z[k]);
            let arm: [f64; 3] = std::array::from_fn(|c| at[c] - p[k][c]);
            let rel: [f64; 3] = std::array::from_fn(|c| v[c] - pivot_v[k][c]);
            let (t1, t2) = (cross(dz, arm), cross(z[k], rel));
            for c in 0..3 {
                a[c] += w[k] * (t1[c] + t2[c]);
                alpha[c] += w[k] * dz[c];
            }
        }
        let norm = |x: [f64; 3]| x.iter().map(|c| c * c).sum::<f64>().sqrt();
        let (vs, as_) = (norm(v).max(1.0), norm(a).max(1.0));
        for c in 0..3 {
            worst_v = worst_v
                .max((tool.velocity[c] - v[c]).abs() / vs)
                .max((tool.angular_velocity[c].to_radians() - omega[c]).abs() / norm(omega));
            worst_a = worst_a.max((tool.acceleration[c] - a[c]).abs() / as_).max(
                (tool.angular_acceleration[c].to_radians() - alpha[c]).abs()
                    / norm(alpha).max(1e-9),
            );
        }
    }
    eprintln!("six-axis arm: velocity {worst_v:.1e}, acceleration {worst_a:.1e}");
    assert!(
        worst_v < 1e-9 && worst_a < 1e-9,
        "velocity {worst_v:.1e}, acceleration {worst_a:.1e}"
    );
}

/// One frame on demand (a host scrubbing a timeline) equals the same time's frame of a
/// run, to the solver's tolerance.
#[test]
fn a_frame_on_demand_matches_the_runs() {
    let mut m = Mechanism::from_json(&fixture_text("slider-crank.json"), Some("s.json")).unwrap();
    let run = m
        .kinematics(RunSettings::new(0.0, 0.5, 0.01, None).unwrap())
        .unwrap();
    let (alone, events) = m.kinematic_frame_at(0.37).unwrap();
    assert!(events.iter().all(|e| !e.kind.stops()), "{events:?}");
    let in_run = run
        .frames
        .iter()
        .find(|f| (f.time - 0.37).abs() < 1e-12)
        .unwrap();
    for (a, b) in alone.parts.iter().zip(&in_run.parts) {
        for k in 0..3 {
            assert!((a.position[k] - b.position[k]).abs() < 1e-8);
            assert!((a.velocity[k] - b.velocity[k]).abs() < 1e-6);
            assert!((a.acceleration[k] - b.acceleration[k]).abs() < 1e-4);
        }
    }
}

/// A motion written as FreeCAD writes them into `.asmt` files (a quoted comment, `<n>`
/// line tags, a ramp of `arctan` steps, `d` double markers) and with OndselSolver's
/// `rampstep` and `piecewise`: a frame at time `t` is where the same mechanism with the
/// formula's value at `t` as a constant motion solves to.
#[test]
fn ondsel_solver_formulas_drive_as_their_values() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/asmt/crank-slider.asmt"
    ))
    .unwrap();
    let original = "2.0d*pi*time";
    assert!(text.contains(original));
    let formula = "\"((1/pi)*(arctan(1000*(time - T1)) - arctan(1000*(time - T2))))*H\"<n>((1/pi)*(arctan(1000d*(time - 0)) - arctan(1000*(time - 2))))*(2.0d*pi*time)<n>+<n>rampstep(time, 0.2, 0, 0.6d, 0.5)<n>-<n>piecewise(time, functions(0, 0.1*time, 0.3e0), transitions(0.25, 0.75))";
    let value = |t: f64| {
        let steps = (1.0 / std::f64::consts::PI)
            * ((1000.0 * t).atan() - (1000.0 * (t - 2.0)).atan())
            * (2.0 * std::f64::consts::PI * t);
        let ramp = (0.5 * (t - 0.2) / 0.4).clamp(0.0, 0.5);
        let piece = if t < 0.25 {
            0.0
        } else if t < 0.75 {
            0.1 * t
        } else {
            0.3
        };
        steps + ramp - piece
    };
    let mut driven = Mechanism::from_asmt(&text.replace(original, formula), None).unwrap();
    for t in [0.1, 0.25, 0.4, 0.75, 0.9] {
        let (frame, events) = driven.kinematic_frame_at(t).unwrap();
        assert!(events.iter().all(|e| !e.kind.stops()), "{events:?}");
        let constant = text.replace(original, &format!("{:e}", value(t)));
        let mut held = Mechanism::from_asmt(&constant, None).unwrap();
        let (still, _) = held.kinematic_frame_at(0.0).unwrap();
        for (p, q) in frame.parts.iter().zip(&still.parts) {
            for c in 0..3 {
                assert!(
                    (p.position[c] - q.position[c]).abs() < 1e-9,
                    "t = {t}: {:?} vs {:?}",
                    p.position,
                    q.position
                );
            }
        }
    }
}
