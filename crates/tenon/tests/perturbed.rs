//! Large perturbations: every fixture, each free part moved by half the assembly's size
//! in a random direction and turned by up to 180 degrees about a random axis (20 seeded
//! variants each). Prints the counts per fixture (past the harness's capture;
//! `PERTURBED_DEBUG=1` names the joints left unsolved).
//!
//! The target (issue 12) is 95 % solved (342 of 360); 346 solve. What is left:
//! parallel-gripper 7/20 (its two fingers, each on a fully driven slider, start on
//! opposite branches of their rails, where the redundant distance between the pads cannot
//! hold: a least-squares minimum that is not a solution) and cam-follower 19/20. The
//! compound-joints nut (5/20 before) solves since a stalled piece is placed without its
//! couplings first (see `tenon_system::Role::Coupling`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;

use tenon::{Mechanism, Pose};

/// A small deterministic generator (64-bit LCG, high bits), so runs repeat exactly.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn unit(&mut self) -> [f64; 3] {
        loop {
            let v = [0, 1, 2].map(|_| 2.0 * self.next() - 1.0);
            let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            if n > 0.1 && n <= 1.0 {
                return v.map(|x| x / n);
            }
        }
    }
}

fn quaternion_multiply(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    [
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    ]
}

#[test]
fn half_size_and_half_turn_perturbations_mostly_solve() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    let (mut solved, mut total) = (0, 0);
    let mut lines = Vec::new();
    for name in &names {
        let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
        let base = Mechanism::from_json(&text, Some(name)).unwrap();
        let model = base.model();
        let any_grounded = model.parts().any(|(_, p)| p.grounded);
        let free: Vec<String> = model
            .parts()
            .enumerate()
            .filter(|(k, (_, p))| !p.grounded && (any_grounded || *k > 0))
            .map(|(_, (_, p))| p.id.clone())
            .collect();
        // The assembly's size: the largest distance between two part origins (1 at
        // least).
        let poses: Vec<Pose> = model
            .parts()
            .filter_map(|(_, p)| base.placement(&p.id))
            .collect();
        let mut size = 1.0f64;
        for a in &poses {
            for b in &poses {
                let d: f64 = (0..3)
                    .map(|k| (a.position[k] - b.position[k]).powi(2))
                    .sum();
                size = size.max(d.sqrt());
            }
        }
        let mut ok = 0;
        let mut flips = 0;
        for seed in 0..20u64 {
            let mut rng = Lcg(seed * 7919 + name.len() as u64);
            let mut m = base.clone();
            for id in &free {
                let p = m.placement(id).unwrap();
                let shift = rng.unit();
                let axis = rng.unit();
                let angle = std::f64::consts::PI * rng.next();
                let (s, c) = (angle / 2.0).sin_cos();
                let turn = [c, s * axis[0], s * axis[1], s * axis[2]];
                let moved = Pose {
                    position: [0, 1, 2].map(|k| p.position[k] + 0.5 * size * shift[k]),
                    quaternion: quaternion_multiply(turn, p.quaternion),
                };
                m.set_placement(id, &moved).unwrap();
            }
            let report = m.solve().unwrap();
            if report.converged {
                ok += 1;
            } else if std::env::var_os("PERTURBED_DEBUG").is_some() {
                let worst: Vec<String> = report
                    .unsatisfied
                    .iter()
                    .take(4)
                    .map(|u| {
                        format!(
                            "{}={:.2e}",
                            m.joint_id(u.constraint.joint()).unwrap_or("?"),
                            u.residual
                        )
                    })
                    .collect();
                let iters: Vec<usize> = report.clusters.iter().map(|c| c.iterations).collect();
                let _ = writeln!(
                    std::io::stderr(),
                    "  {name} seed {seed}: {worst:?} iterations {iters:?}"
                );
            }
            flips += report.flipped.len();
        }
        solved += ok;
        total += 20;
        lines.push(format!(
            "{name}: {ok}/20 solved, {flips} branch changes reported"
        ));
    }
    let mut err = std::io::stderr();
    for l in &lines {
        let _ = writeln!(err, "perturbed: {l}");
    }
    let _ = writeln!(err, "perturbed: {solved}/{total} solved");
    assert!(
        solved >= 346,
        "{solved}/{total} solved (346 before; 95 % is 342):\n{}",
        lines.join("\n")
    );
}
