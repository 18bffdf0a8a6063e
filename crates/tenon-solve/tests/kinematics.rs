//! Driven sweeps against closed-form answers: each fixture's motion is stepped through a
//! full turn (1 degree at a time), solving from the previous pose; positions are compared
//! with closed forms to 1e-9 and no part may jump (a branch flip) between steps.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::f64::consts::PI;
use std::path::PathBuf;

use tenon_model::{read_json, Assembly};
use tenon_solve::{solve, Problem, SolveOptions};
use tenon_system::{Compiled, System};

struct Sweep {
    assembly: Assembly,
    system: System,
    compiled: Compiled,
    staging: tenon_solve::Stages,
    state: Vec<f64>,
    params: Vec<f64>,
    /// Most stages any cluster was solved in at the last step.
    stages: usize,
}

impl Sweep {
    fn new(name: &str) -> Sweep {
        Sweep::from_text(&fixture(name))
    }

    fn from_text(text: &str) -> Sweep {
        let assembly = read_json(text, None).unwrap();
        let mut system = System::build(&assembly).unwrap();
        let compiled = system.compile().unwrap();
        // Motions included, small stages: the sweeps run through the block-triangular
        // stages wherever a fixture has them.
        let mut staging = tenon_solve::Stages::new();
        tenon_solve::prepare(&mut system, &compiled, &mut staging, options()).unwrap();
        let state = system.initial_state();
        let params = system.initial_parameters();
        Sweep {
            assembly,
            system,
            compiled,
            staging,
            state,
            params,
            stages: 0,
        }
    }

    /// Solves at time `t` from the current pose; returns the largest turn of any part
    /// (radians) from the previous pose.
    fn at(&mut self, t: f64) -> f64 {
        let before = self.state.clone();
        self.params[self.system.time().index()] = t;
        let options = options();
        let report = solve(
            &Problem {
                system: &self.system,
                compiled: &self.compiled,
                assembly: &self.assembly,
                stages: Some(&self.staging),
            },
            &mut self.state,
            &mut self.params,
            options,
        )
        .unwrap();
        assert!(
            report.converged,
            "t = {t}: residual {}",
            report.max_residual
        );
        self.stages = report.clusters.iter().map(|c| c.stages).max().unwrap_or(0);
        self.system
            .free_parts()
            .iter()
            .map(|fp| {
                let q0: Vec<f64> = fp.vars[3..].iter().map(|v| before[v.index()]).collect();
                let q1: Vec<f64> = fp.vars[3..].iter().map(|v| self.state[v.index()]).collect();
                let dot: f64 = q0.iter().zip(&q1).map(|(a, b)| a * b).sum();
                2.0 * dot.abs().min(1.0).acos()
            })
            .fold(0.0, f64::max)
    }

    fn position(&self, part: &str) -> [f64; 3] {
        let key = self.assembly.part_by_id(part).unwrap();
        let fp = self
            .system
            .free_parts()
            .iter()
            .find(|f| f.part == key)
            .unwrap();
        [0, 1, 2].map(|k| self.state[fp.vars[k].index()])
    }

    /// The part's turn about world z (radians, in (-pi, pi]).
    fn yaw(&self, part: &str) -> f64 {
        let key = self.assembly.part_by_id(part).unwrap();
        let fp = self
            .system
            .free_parts()
            .iter()
            .find(|f| f.part == key)
            .unwrap();
        let q: Vec<f64> = fp.vars[3..].iter().map(|v| self.state[v.index()]).collect();
        2.0 * q[3].atan2(q[0])
    }
}

fn options() -> SolveOptions {
    SolveOptions {
        include_motions: true,
        stage_columns: 1,
        ..SolveOptions::default()
    }
}

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn wrap(a: f64) -> f64 {
    (a + PI).rem_euclid(2.0 * PI) - PI
}

#[test]
fn slider_crank_piston_follows_the_closed_form_through_a_turn() {
    let mut s = Sweep::new("slider-crank.json");
    let (r, l) = (30.0, 100.0);
    for step in 0..=360 {
        let t = step as f64 / 360.0;
        let jump = s.at(t);
        assert!(
            jump < 5f64.to_radians(),
            "a part jumped {jump} rad at step {step}"
        );
        let theta = (40.0 + 360.0 * t).to_radians();
        let x = r * theta.cos() + (l * l - (r * theta.sin()).powi(2)).sqrt();
        let p = s.position("piston");
        assert!(
            (p[0] - x).abs() < 1e-9 && p[1].abs() < 1e-9,
            "step {step}: piston {p:?}, closed form {x}"
        );
    }
}

#[test]
fn gear_pair_turns_at_half_speed_over_four_turns() {
    let mut s = Sweep::new("gear-pair.json");
    for step in 0..=720 {
        let t = step as f64 / 360.0; // pinion at 720 degrees per second: 4 turns
        let jump = s.at(t);
        assert!(jump < 5f64.to_radians(), "step {step}");
        let pinion = (720.0 * t).to_radians();
        let wheel = s.yaw("wheel");
        assert!(
            wrap(wheel + pinion / 2.0).abs() < 1e-9,
            "step {step}: wheel {wheel}, pinion {pinion}"
        );
        assert!(wrap(s.yaw("pinion") - pinion).abs() < 1e-9);
        // Driven, the pair is square and block-triangular: solved in stages.
        assert!(s.stages > 1, "step {step}: {} stage(s)", s.stages);
    }
}

#[test]
fn screw_jack_rises_one_pitch_per_turn_over_ten_turns() {
    let mut s = Sweep::new("screw-jack.json");
    for step in 0..=400 {
        let t = step as f64 / 400.0; // 10 turns over t in [0, 1], 9 degrees a step
        s.at(t);
        let z = s.position("screw")[2];
        assert!((z - 5.0 * 10.0 * t).abs() < 1e-9, "step {step}: z {z}");
    }
}

#[test]
fn four_bar_rocker_follows_the_loop_closure_without_flipping() {
    let mut s = Sweep::new("four-bar.json");
    let (l1, l2, l3, l4) = (100.0, 40.0, 120.0, 80.0);
    // Independent reference: Newton on the planar loop closure, continued step by step.
    let mut reference = [s.yaw("coupler"), s.yaw("rocker")];
    for step in 0..=360 {
        let t = step as f64 / 360.0;
        let jump = s.at(t);
        assert!(
            jump < 5f64.to_radians(),
            "a part jumped {jump} rad at step {step}"
        );
        let th2 = (60.0 + 360.0 * t).to_radians();
        for _ in 0..50 {
            let [t3, t4] = reference;
            let f = [
                l2 * th2.cos() + l3 * t3.cos() - l4 * t4.cos() - l1,
                l2 * th2.sin() + l3 * t3.sin() - l4 * t4.sin(),
            ];
            let j = [
                [-l3 * t3.sin(), l4 * t4.sin()],
                [l3 * t3.cos(), -l4 * t4.cos()],
            ];
            let det = j[0][0] * j[1][1] - j[0][1] * j[1][0];
            reference[0] -= (f[0] * j[1][1] - f[1] * j[0][1]) / det;
            reference[1] -= (j[0][0] * f[1] - j[1][0] * f[0]) / det;
        }
        assert!(
            wrap(s.yaw("rocker") - reference[1]).abs() < 1e-9,
            "step {step}: rocker {} vs {}",
            s.yaw("rocker"),
            reference[1]
        );
        assert!(
            wrap(s.yaw("coupler") - reference[0]).abs() < 1e-9,
            "step {step}"
        );
    }
}

#[test]
fn roller_cam_follower_rides_the_eccentric_disc_over_two_turns() {
    let mut s = Sweep::new("roller-cam.json");
    let (e, big, small) = (10.0f64, 40.0f64, 10.0f64);
    for step in 0..=720 {
        let t = step as f64 / 360.0; // the cam at 360 degrees per second: 2 turns
        let jump = s.at(t);
        assert!(jump < 5f64.to_radians(), "step {step}: jump {jump}");
        let theta = (360.0 * t).to_radians();
        let y = e * theta.sin() + ((big + small).powi(2) - (e * theta.cos()).powi(2)).sqrt();
        let p = s.position("follower");
        assert!(
            (p[1] - y).abs() < 1e-9 && p[0].abs() < 1e-9,
            "step {step}: follower {p:?}, closed form {y}"
        );
        assert!(wrap(s.yaw("cam") - theta).abs() < 1e-9, "step {step}");
    }
}

/// The same cam with its disc given as 2,000 points on the circle: a points profile of
/// thousands of points keeps full precision (its spline terms are clamped to their
/// support) and follows the circle to the spline's interpolation error.
#[test]
fn a_disc_of_two_thousand_points_follows_the_circle() {
    let n = 2000;
    let points: Vec<String> = (0..n)
        .map(|k| {
            let a = 2.0 * PI * k as f64 / n as f64;
            format!("[{}, {}]", 40.0 * a.cos(), 40.0 * a.sin())
        })
        .collect();
    let text = fixture("roller-cam.json").replacen(
        r#""profile_j": {
        "circle": {
          "radius": 40.0
        }
      }"#,
        &format!(r#""profile_j": {{ "points": [{}] }}"#, points.join(", ")),
        1,
    );
    assert!(
        text.contains("\"points\""),
        "the fixture's profile_j changed form"
    );
    let mut s = Sweep::from_text(&text);
    let (e, big, small) = (10.0f64, 40.0f64, 10.0f64);
    for step in 0..=72 {
        let t = step as f64 / 72.0;
        s.at(t);
        let theta = (360.0 * t).to_radians();
        let y = e * theta.sin() + ((big + small).powi(2) - (e * theta.cos()).powi(2)).sqrt();
        let p = s.position("follower");
        assert!(
            (p[1] - y).abs() < 1e-6,
            "step {step}: follower {p:?}, closed form {y}"
        );
    }
}
