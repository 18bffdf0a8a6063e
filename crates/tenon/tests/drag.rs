//! Dragging a crank through a full turn in 1-degree steps: every step solves, the crank
//! reaches its target, and no part jumps to a mirror pose (branch kept).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::{Mechanism, Pose};

fn fixture(name: &str) -> String {
    format!("{}/../../fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn yaw(p: &Pose) -> f64 {
    2.0 * p.quaternion[3].atan2(p.quaternion[0])
}

fn turn_between(a: &Pose, b: &Pose) -> f64 {
    let dot: f64 = a
        .quaternion
        .iter()
        .zip(&b.quaternion)
        .map(|(x, y)| x * y)
        .sum();
    2.0 * dot.abs().min(1.0).acos()
}

fn drag_a_turn(file: &str, crank: &str, others: &[&str]) {
    let mut m = Mechanism::open(fixture(file)).unwrap();
    assert!(m.solve().unwrap().converged);
    let start = yaw(&m.placement(crank).unwrap());
    for step in 1..=360 {
        let before: Vec<Pose> = others.iter().map(|p| m.placement(p).unwrap()).collect();
        let angle = start + (step as f64).to_radians();
        let (s, c) = (angle / 2.0).sin_cos();
        let pivot = m.placement(crank).unwrap().position;
        let target = Pose {
            position: pivot,
            quaternion: [c, 0.0, 0.0, s],
        };
        let report = m.drag(crank, &target).unwrap();
        assert!(
            report.converged,
            "{file}: step {step}: residual {}",
            report.max_residual
        );
        let reached = yaw(&m.placement(crank).unwrap());
        let miss = ((reached - angle + std::f64::consts::PI)
            .rem_euclid(2.0 * std::f64::consts::PI))
            - std::f64::consts::PI;
        assert!(
            miss.abs() < 1e-6,
            "{file}: step {step}: crank at {reached}, target {angle}"
        );
        for (k, p) in others.iter().enumerate() {
            let jump = turn_between(&before[k], &m.placement(p).unwrap());
            assert!(
                jump < 5f64.to_radians(),
                "{file}: step {step}: '{p}' turned {jump} rad (a flip?)"
            );
        }
    }
}

#[test]
fn four_bar_crank_drags_a_full_turn_without_flipping() {
    drag_a_turn("four-bar.json", "crank", &["coupler", "rocker"]);
}

#[test]
fn slider_crank_drags_a_full_turn_without_flipping() {
    drag_a_turn("slider-crank.json", "crank", &["rod", "piston"]);
}
