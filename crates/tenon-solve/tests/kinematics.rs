//! Kinematic runs against closed forms: every frame of two crank turns at 1 degree steps.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon_model::read_json;
use tenon_solve::{run_rows, KinematicRun, Problem, SolveOptions};
use tenon_system::System;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The slider-crank fixture (crank 30, rod 100, crank angle `40 + 360 t` degrees):
/// piston position `x = r c + D`, `D = sqrt(L^2 - r^2 s^2)`, velocity
/// `w dx/dtheta = -w (r s + r^2 s c / D)` and acceleration
/// `w^2 d2x/dtheta2 = -w^2 (r c + r^2 (c^2 - s^2) / D + r^4 s^2 c^2 / D^3)` (the exact
/// formulas, not the small-ratio approximation), to 1e-9 relative of their scale.
#[test]
fn slider_crank_piston_follows_the_exact_formulas() {
    let a = read_json(&fixture("slider-crank.json"), None).unwrap();
    let mut system = System::build(&a).unwrap();
    let compiled = system.compile().unwrap();
    let rows = run_rows(&system);
    let rates = system.rates(&rows).unwrap();
    let problem = Problem {
        system: &system,
        compiled: &compiled,
        assembly: &a,
        stages: None,
    };
    let state = system.initial_state();
    let params = system.initial_parameters();
    let mut run = KinematicRun::new(
        &problem,
        &rates,
        (state, params),
        0.0,
        SolveOptions::default(),
    )
    .unwrap();
    let (r, l) = (30.0f64, 100.0f64);
    let w = std::f64::consts::TAU;
    let piston = 2;
    let (mut worst_x, mut worst_v, mut worst_a) = (0.0f64, 0.0f64, 0.0f64);
    for k in 0..=720 {
        let t = k as f64 / 360.0;
        let (frame, events) = run.frame_at((&problem, &rates), t).unwrap();
        assert!(events.is_empty(), "t = {t}: {events:?}");
        // Every freedom driven: after the first frame (whose rank QR chooses the rows),
        // the rates come from the independent rows' LU.
        assert!(k == 0 || run.rates_by_independent_rows(), "t = {t}");
        let theta = (40.0 + 360.0 * t).to_radians();
        let (s, c) = theta.sin_cos();
        let d = (l * l - r * r * s * s).sqrt();
        let x = r * c + d;
        let v = -w * (r * s + r * r * s * c / d);
        let acc =
            -w * w * (r * c + r * r * (c * c - s * s) / d + r.powi(4) * s * s * c * c / d.powi(3));
        worst_x = worst_x.max((frame.state[7 * piston] - x).abs() / (r + l));
        worst_v = worst_v.max((frame.velocity[6 * piston] - v).abs() / (w * r));
        worst_a = worst_a.max((frame.acceleration[6 * piston] - acc).abs() / (w * w * r));
    }
    eprintln!("slider-crank: worst relative x {worst_x:.1e}, v {worst_v:.1e}, a {worst_a:.1e}");
    assert!(worst_x < 1e-9 && worst_v < 1e-9 && worst_a < 1e-9);
}
