//! Solve benchmarks of issue 4, on assemblies generated here from a known solved pose
//! and then perturbed (deterministically), so every run starts from the same place:
//!
//! - `chain/N`: an open serial chain of N links, revolute to revolute (N degrees of
//!   freedom; least change decides where the links go);
//! - `four_bars/M`: M independent planar four-bars (four revolutes each: two redundant
//!   equations per loop), one cluster each;
//! - `resolve_100_parts`: 33 four-bars (100 parts with ground) whose cranks all follow
//!   one parameter; time to re-solve after the parameter changes (no rebuild).
//!
//! Sizes stop where today's dense per-cluster solver stops being useful (see the issue
//! note); the larger sizes of the issue come with the sparse block solver.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use std::fmt::Write;
use tenon::Mechanism;

/// A small deterministic wobble in [-1, 1] for perturbations.
fn wobble(k: usize, salt: f64) -> f64 {
    ((k as f64 + 1.0) * 12.9898 + salt * 78.233).sin()
}

fn quaternion_z(angle_deg: f64, tilt_deg: f64) -> String {
    // Rotation about z by `angle`, then a small tilt about x (a perturbation).
    let (sz, cz) = (angle_deg.to_radians() / 2.0).sin_cos();
    let (sx, cx) = (tilt_deg.to_radians() / 2.0).sin_cos();
    // q = qx * qz
    let w = cx * cz;
    let x = sx * cz;
    let y = sx * sz;
    let z = cx * sz;
    format!("[{w}, {x}, {y}, {z}]")
}

fn header(parameters: &str) -> String {
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1, "parameters": {{ {parameters} }}, "parts": ["#
    )
}

fn chain(n: usize) -> String {
    let mut s = header("");
    s.push_str(r#"{ "id": "ground", "grounded": true, "markers": { "m": {} } }"#);
    for k in 0..n {
        let (dx, dy, da, dt) = (
            wobble(k, 1.0),
            wobble(k, 2.0),
            wobble(k, 3.0),
            wobble(k, 4.0),
        );
        write!(
            s,
            r#", {{ "id": "link{k}", "placement": {{ "position": [{}, {}, {}],
               "rotation": {{ "quaternion": {} }} }},
               "markers": {{ "a": {{}}, "b": {{ "position": [10, 0, 0] }} }} }}"#,
            10.0 * k as f64 + dx,
            dy,
            0.5 * dx,
            quaternion_z(5.0 * da, 3.0 * dt)
        )
        .unwrap();
    }
    s.push_str(r#"], "joints": ["#);
    for k in 0..n {
        let j = if k == 0 {
            r#"{ "part": "ground", "marker": "m" }"#.to_string()
        } else {
            format!(r#"{{ "part": "link{}", "marker": "b" }}"#, k - 1)
        };
        if k > 0 {
            s.push(',');
        }
        write!(
            s,
            r#"{{ "id": "r{k}", "type": "revolute", "i": {{ "part": "link{k}", "marker": "a" }}, "j": {j} }}"#
        )
        .unwrap();
    }
    s.push_str("] }");
    s
}

/// `m` four-bars; with `driven`, every crank's revolute follows the parameter `crank`.
fn four_bars(m: usize, driven: bool) -> String {
    let crank_angle = 60.0f64;
    let (a, d) = ([0.0, 0.0], [100.0, 0.0]);
    let b = [
        30.0 * crank_angle.to_radians().cos(),
        30.0 * crank_angle.to_radians().sin(),
    ];
    let rocker_angle = 100.0f64;
    let c = [
        d[0] + 80.0 * rocker_angle.to_radians().cos(),
        d[1] + 80.0 * rocker_angle.to_radians().sin(),
    ];
    let coupler_len = ((c[0] - b[0]).powi(2) + (c[1] - b[1]).powi(2)).sqrt();
    let coupler_angle = (c[1] - b[1]).atan2(c[0] - b[0]).to_degrees();
    let mut s = header(if driven { r#""crank": 60"# } else { "" });
    s.push_str(r#"{ "id": "ground", "grounded": true, "markers": {"#);
    for i in 0..m {
        let y = 150.0 * i as f64;
        if i > 0 {
            s.push(',');
        }
        write!(
            s,
            r#""A{i}": {{ "position": [{}, {y}, 0] }}, "D{i}": {{ "position": [{}, {y}, 0] }}"#,
            a[0], d[0]
        )
        .unwrap();
    }
    s.push_str("} }");
    for i in 0..m {
        let y = 150.0 * i as f64;
        let p = |k: usize| wobble(3 * i + k, 5.0);
        let links = [
            ("crank", a, crank_angle, 30.0),
            ("coupler", b, coupler_angle, coupler_len),
            ("rocker", d, rocker_angle, 80.0),
        ];
        for (k, (name, at, angle, len)) in links.iter().enumerate() {
            write!(
                s,
                r#", {{ "id": "{name}{i}", "placement": {{ "position": [{}, {}, {}],
                   "rotation": {{ "quaternion": {} }} }},
                   "markers": {{ "p": {{}}, "q": {{ "position": [{len}, 0, 0] }} }} }}"#,
                at[0] + 2.0 * p(k),
                at[1] + y + 2.0 * p(k + 7),
                p(k + 11),
                quaternion_z(angle + 8.0 * p(k + 13), 4.0 * p(k + 17))
            )
            .unwrap();
        }
    }
    s.push_str(r#"], "joints": ["#);
    for i in 0..m {
        if i > 0 {
            s.push(',');
        }
        let drive = if driven { r#", "angle": "crank""# } else { "" };
        write!(
            s,
            r#"{{ "id": "ground_crank{i}", "type": "revolute", "i": {{ "part": "crank{i}", "marker": "p" }}, "j": {{ "part": "ground", "marker": "A{i}" }}{drive} }},
               {{ "id": "crank_coupler{i}", "type": "revolute", "i": {{ "part": "coupler{i}", "marker": "p" }}, "j": {{ "part": "crank{i}", "marker": "q" }} }},
               {{ "id": "coupler_rocker{i}", "type": "revolute", "i": {{ "part": "rocker{i}", "marker": "q" }}, "j": {{ "part": "coupler{i}", "marker": "q" }} }},
               {{ "id": "rocker_ground{i}", "type": "revolute", "i": {{ "part": "rocker{i}", "marker": "p" }}, "j": {{ "part": "ground", "marker": "D{i}" }} }}"#
        )
        .unwrap();
    }
    s.push_str("] }");
    s
}

fn solve_from(text: &str) -> impl FnMut() -> Mechanism + '_ {
    move || Mechanism::from_json(text, None).unwrap()
}

fn check_solves(text: &str) {
    let mut m = Mechanism::from_json(text, None).unwrap();
    let report = m.solve().unwrap();
    assert!(report.converged, "residual {}", report.max_residual);
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain");
    group.sample_size(10);
    for n in [10usize, 100] {
        let text = chain(n);
        check_solves(&text);
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
            b.iter_batched(
                solve_from(text),
                |mut m| m.solve().map(|r| r.converged).unwrap(),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();

    let mut group = c.benchmark_group("four_bars");
    group.sample_size(10);
    for m in [10usize, 100, 1000] {
        let text = four_bars(m, false);
        check_solves(&text);
        group.bench_with_input(BenchmarkId::from_parameter(m), &text, |b, text| {
            b.iter_batched(
                solve_from(text),
                |mut m| m.solve().map(|r| r.converged).unwrap(),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();

    let text = four_bars(33, true);
    let mut m = Mechanism::from_json(&text, None).unwrap();
    assert!(m.solve().unwrap().converged);
    let mut toggle = false;
    c.bench_function("resolve_100_parts", |b| {
        b.iter(|| {
            toggle = !toggle;
            m.set_parameter("crank", if toggle { 61.0 } else { 60.0 })
                .unwrap();
            let report = m.solve().unwrap();
            assert!(report.converged);
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
