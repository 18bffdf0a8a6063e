//! Dynamics benchmarks (issue 14), from a built mechanism to the trajectory (the start's
//! assembly, velocity projection and KKT solve included):
//!
//! - `simulate/four-bar-a02`: IFToMM A02 (redundant revolutes in 3D), 1 s at h = 1e-3
//!   through its first singular positions;
//! - `simulate/pendulum_chain/N`: a planar pendulum chain of N rods (0.1 m, 0.1 kg),
//!   laid out straight along x from a pivot far from the origin (1000, 500, 0), released
//!   at rest under gravity: 20 steps of 1e-3 (per-step cost is the time over 20, the
//!   start included: assembly, velocity projection, first KKT solve; the rate tapes
//!   compiled by an earlier run, as a host's second run finds them);
//! - `simulate/pendulum_chain_steps/N`: the same 20 steps alone, the run started and its
//!   first frame taken outside the time measured (the per-step cost without the start).
//!
//! `TENON_BENCH_SIZES=10,100` limits the chains.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use tenon::{Mechanism, RunSettings, SimulationSettings};

/// With `--features mimalloc`, this program allocates as the `tenon` command and the C
/// and Python front ends do; without, with the system's allocator (a Rust host's
/// default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The chain's JSON text.
fn pendulum_chain(n: usize) -> String {
    let (length, mass) = (0.1, 0.1);
    let inertia = mass * length * length / 12.0;
    let origin = [1000.0, 500.0, 0.0];
    let mut parts = format!(
        r#"{{ "id": "ground", "grounded": true, "markers": {{ "o": {{ "position": [{}, {}, {}] }} }} }}"#,
        origin[0], origin[1], origin[2]
    );
    let mut joints = String::new();
    for k in 0..n {
        let x = origin[0] + k as f64 * length;
        let _ = write!(
            parts,
            r#", {{ "id": "link{k}", "placement": {{ "position": [{x}, {}, 0] }},
              "markers": {{ "a": {{}}, "b": {{ "position": [{length}, 0, 0] }} }},
              "mass": {{ "mass": {mass}, "center_of_mass": [{}, 0, 0],
                        "inertia": [[0, 0, 0], [0, {inertia}, 0], [0, 0, {inertia}]] }} }}"#,
            origin[1],
            length / 2.0
        );
        let (part, marker) = if k == 0 {
            ("ground".to_string(), "o")
        } else {
            (format!("link{}", k - 1), "b")
        };
        if k > 0 {
            joints.push_str(", ");
        }
        let _ = write!(
            joints,
            r#"{{ "id": "pin{k}", "type": "revolute", "i": {{ "part": "link{k}", "marker": "a" }},
                 "j": {{ "part": "{part}", "marker": "{marker}" }} }}"#
        );
    }
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1,
             "units": {{ "length": "m", "angle": "rad", "mass": "kg", "time": "s" }},
             "parts": [{parts}], "joints": [{joints}],
             "forces": {{ "gravity": [0, -9.81, 0] }} }}"#
    )
}

fn bench(c: &mut Criterion) {
    let sizes: Vec<usize> = std::env::var("TENON_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 100, 1000, 10000]);
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    let a02 = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/dynamics/four-bar-a02.json"
    ))
    .unwrap();
    let m = Mechanism::from_json(&a02, None).unwrap();
    let mut settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
    settings.run = RunSettings::new(0.0, 1.0, 1e-3, Some(0.01)).unwrap();
    group.bench_function("four-bar-a02", |b| {
        b.iter_batched(
            || m.clone(),
            |mut m| assert!(m.simulate(settings).unwrap().completed),
            BatchSize::LargeInput,
        )
    });
    for &n in &sizes {
        let mut m = Mechanism::from_json(&pendulum_chain(n), None).unwrap();
        let mut settings = SimulationSettings::for_assembly(m.model(), None, None).unwrap();
        // A first run compiles the rate tapes (kept by the mechanism, as a host's
        // second run would find them); the runs measured start from there.
        settings.run = RunSettings::new(0.0, 1e-3, 1e-3, None).unwrap();
        assert!(m.simulate(settings).unwrap().completed);
        settings.run = RunSettings::new(0.0, 0.02, 1e-3, Some(0.02)).unwrap();
        group.bench_with_input(BenchmarkId::new("pendulum_chain", n), &m, |b, m| {
            b.iter_batched(
                || m.clone(),
                |mut m| assert!(m.simulate(settings).unwrap().completed),
                BatchSize::LargeInput,
            )
        });
        // The 20 steps alone: the run started (and its first frame taken) untimed.
        group.bench_with_input(BenchmarkId::new("pendulum_chain_steps", n), &m, |b, m| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut m = m.clone();
                    let mut frames = m.dynamic_frames(settings).unwrap();
                    assert!(frames.next().unwrap().is_ok());
                    let began = Instant::now();
                    let (frame, _) = frames.next().unwrap().unwrap();
                    total += began.elapsed();
                    assert!((frame.time - 0.02).abs() < 1e-12);
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
