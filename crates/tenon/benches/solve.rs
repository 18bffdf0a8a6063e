//! Solve benchmarks of issue 4, on assemblies generated from a known solved pose and then
//! perturbed deterministically (`tests/common/generate.rs`), so every run starts from the
//! same place. Each measurement is one solve from the perturbed start, on a copy of a
//! mechanism built beforehand (building is not measured here).
//!
//! - `chain/N`: an open serial chain of N revolute-jointed links (one cluster);
//! - `rssr/M`: M independent RSSR four-bars (M clusters, solved in parallel);
//! - `ladder/N`: a closed-loop ladder of N planar four-bar cells joined by revolutes
//!   (3 parts per cell, redundant equations in every cell, one cluster); 3334 cells is
//!   the 10,000-part ladder;
//! - `driven_chain/N` and `driven_chain_whole/N`: the chain with every revolute driven
//!   to an angle (square and block-triangular), solved in block-triangular stages (the
//!   default, to 10,000 links) and whole (to 1,000);
//! - `diagnose_rssr/M`, `diagnose_ladder/N`: `tenon check`'s diagnosis of the solved
//!   assemblies (ladders of 10 and 100 cells dense, 334 and 3334 cells (1,000 and
//!   10,000 parts) sparse);
//! - `cam_points/N`: a cam whose closed profile is N formula points (issue 12), from the
//!   file's text to the answer: read, build, compile, solve;
//! - `kinematics/four-bar`: the four-bar fixture's own run (1,001 steps, 101 frames
//!   reported) from a built mechanism; `kinematics/corpus/NAME`: the OndselSolver corpus
//!   files with motions and saved frames (when `../shared/external` is there), from the
//!   text to the trajectory over the file's own times; `kinematics/moving_chain/N`: a
//!   straight chain of N links far from the origin, every revolute moved by a motion,
//!   1,001 steps;
//! - `scale/to_answer/LAYOUT/N`, `scale/build/LAYOUT/N` (issue 16): straight chains and
//!   ladders from the origin (100 mm links, to 1e6 mm), a chain and RSSR four-bars
//!   1e5 mm off the origin, and mixed sizes (10 m frames, 0.1 mm pins), 1,000 and
//!   10,000 parts, from the text to the solved report and the build alone;
//! - `corpus_to_answer/NAME`: each OndselSolver corpus file from its text to the solved
//!   report (when `../shared/external` is there), and `fourbar.asmt` built alone;
//! - `resolve_100_parts`: 33 planar four-bars (100 parts with ground) whose cranks all
//!   follow one parameter; time to re-solve after the parameter changes (no rebuild).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../tests/common/generate.rs"]
mod generate;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use tenon::{Mechanism, SolveOptions, SolveOrder};

/// With `--features mimalloc`, this program allocates as the `tenon` command and the C
/// and Python front ends do; without, with the system's allocator (a Rust host's
/// default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn built(text: &str) -> Mechanism {
    let m = Mechanism::from_json(text, None).unwrap();
    let check = m.clone().solve().unwrap().converged;
    assert!(check, "the generated assembly does not solve");
    m
}

fn group(c: &mut Criterion, name: &str, sizes: &[usize], make: fn(usize) -> String) {
    group_with(c, name, sizes, make, SolveOptions::default());
}

fn group_with(
    c: &mut Criterion,
    name: &str,
    sizes: &[usize],
    make: fn(usize) -> String,
    options: SolveOptions,
) {
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for &n in sizes {
        let mut m = built(&make(n));
        m.set_options(options);
        group.bench_with_input(BenchmarkId::from_parameter(n), &m, |b, m| {
            b.iter_batched(
                || m.clone(),
                |mut m| m.solve().map(|r| r.converged).unwrap(),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let sizes: Vec<usize> = std::env::var("TENON_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 100, 1000, 10000]);
    group(c, "chain", &sizes, generate::chain);
    group(c, "rssr", &sizes, generate::rssr);
    let ladder: Vec<usize> = sizes
        .iter()
        .flat_map(|&n| {
            if n == 10000 {
                vec![3334, 10000]
            } else {
                vec![n]
            }
        })
        .collect();
    group(c, "ladder", &ladder, generate::ladder);
    group(c, "driven_chain", &sizes, generate::driven_chain);
    // Solved whole, the driven chain's normal equations fill in: kept to 1,000 links.
    let driven: Vec<usize> = sizes.iter().copied().filter(|&n| n <= 1000).collect();
    let whole = SolveOptions {
        order: SolveOrder::Whole,
        ..SolveOptions::default()
    };
    group_with(
        c,
        "driven_chain_whole",
        &driven,
        generate::driven_chain,
        whole,
    );

    // Diagnosis (tenon check) of solved assemblies: the solve inside finds nothing to do.
    let mut group = c.benchmark_group("diagnose_rssr");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for &n in &sizes {
        let mut m = built(&generate::rssr(n));
        m.solve().unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(n), &m, |b, m| {
            b.iter_batched(
                || m.clone(),
                |mut m| m.diagnose().unwrap().dof(),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    let mut group = c.benchmark_group("diagnose_ladder");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    // Cells: up to 200 (600 parts) dense, beyond sparse; 334 and 3334 cells are the
    // 1,000- and 10,000-part ladders.
    let cells: Vec<usize> = sizes
        .iter()
        .flat_map(|&n| match n {
            1000 => vec![334],
            10000 => vec![3334],
            n => vec![n],
        })
        .collect();
    for &n in &cells {
        let mut m = built(&generate::ladder(n));
        m.solve().unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(n), &m, |b, m| {
            b.iter_batched(
                || m.clone(),
                |mut m| m.diagnose().unwrap().dof(),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();

    let mut group = c.benchmark_group("kinematics");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    let four_bar = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/four-bar.json"
    ))
    .unwrap();
    let m = Mechanism::from_json(&four_bar, None).unwrap();
    let settings = tenon::RunSettings::for_assembly(m.model(), None, None).unwrap();
    group.bench_function("four-bar", |b| {
        b.iter_batched(
            || m.clone(),
            |mut m| assert!(m.kinematics(settings).unwrap().completed),
            BatchSize::LargeInput,
        )
    });
    // The corpus files with motions and saved frames (when ../shared/external is
    // there), each over its own times, from the file's text to the whole trajectory
    // (read, build, compile, run), as `tenon kinematics` does without the output.
    let corpus = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/external/ondsel-asmt"
    );
    for name in [
        "fourbar.asmt",
        "piston.asmt",
        "engine1.asmt",
        "Gears.asmt",
        "rackscrew.asmt",
        "camfollower.asmt",
        "00camrocker.asmt",
    ] {
        let Ok(text) = std::fs::read_to_string(format!("{corpus}/{name}")) else {
            continue;
        };
        let Some(series) = tenon::read_asmt_time_series(&text).unwrap() else {
            continue;
        };
        let times = &series.times;
        let settings =
            tenon::RunSettings::new(times[0], times[times.len() - 1], times[1] - times[0], None)
                .unwrap();
        group.bench_with_input(BenchmarkId::new("corpus", name), &text, |b, text| {
            b.iter(|| {
                let mut m = Mechanism::from_asmt(text, None).unwrap();
                assert!(m.kinematics(settings).unwrap().completed);
            })
        });
    }
    for &n in sizes.iter().filter(|&&n| n <= 1000) {
        let m = Mechanism::from_json(&generate::moving_chain(n), None).unwrap();
        let settings = tenon::RunSettings::new(0.0, 1.0, 0.001, None).unwrap();
        group.bench_with_input(BenchmarkId::new("moving_chain", n), &m, |b, m| {
            b.iter_batched(
                || m.clone(),
                |mut m| assert!(m.kinematics(settings).unwrap().completed),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();

    let mut group = c.benchmark_group("cam_points");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for n in [256, 1024, 4096] {
        let text = generate::expression_cam(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
            b.iter(|| {
                let mut m = Mechanism::from_json(text, None).unwrap();
                assert!(m.solve().unwrap().converged);
            })
        });
    }
    group.finish();

    scale_cases(c);
    corpus_to_answer(c);

    let mut m = built(&generate::four_bars(33, true));
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

/// Issue 16's scale cases, laid out as users draw them (`generate::scale`): from the
/// file's text to the solved report in-process (`to_answer`), and the build alone
/// (`build`: read, equations, compile). 1,000 and 10,000 parts; the whole process is
/// timed by `benches/whole_process.sh`.
fn scale_cases(c: &mut Criterion) {
    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    type Layout = fn(usize) -> String;
    let layouts: [(&str, Layout); 5] = [
        ("straight_chain", |n| {
            generate::scale::chain(n, 100.0, [0.0, 0.0])
        }),
        ("far_chain", |n| {
            generate::scale::chain(n, 100.0, [1e5, 1e5])
        }),
        ("straight_ladder", |n| {
            generate::scale::ladder(n / 3, 100.0, [0.0, 0.0])
        }),
        ("far_rssr", |n| generate::scale::rssr(n / 3, [1e5, 1e5])),
        ("mixed", |n| generate::scale::mixed(n, [0.0, 0.0])),
    ];
    for n in [1000, 10_000] {
        for (name, make) in layouts {
            let text = make(n);
            group.bench_with_input(
                BenchmarkId::new(format!("to_answer/{name}"), n),
                &text,
                |b, text| {
                    b.iter(|| {
                        let mut m = Mechanism::from_json(text, None).unwrap();
                        assert!(m.solve().unwrap().converged);
                    })
                },
            );
            group.bench_with_input(
                BenchmarkId::new(format!("build/{name}"), n),
                &text,
                |b, text| b.iter(|| Mechanism::from_json(text, None).unwrap()),
            );
        }
    }
    group.finish();
}

/// The OndselSolver corpus (when `../shared/external` is there): each file from its
/// text to the solved report in-process (read, build, compile, solve), as FreeCAD's
/// solver is timed from its assembly to `runPreDrag`; `fourbar.asmt` also built alone.
fn corpus_to_answer(c: &mut Criterion) {
    let corpus = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/external/ondsel-asmt"
    );
    let Ok(entries) = std::fs::read_dir(corpus) else {
        return;
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "asmt"))
        .collect();
    paths.sort();
    let mut group = c.benchmark_group("corpus_to_answer");
    group.sample_size(20);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(1));
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(&name), &text, |b, text| {
            b.iter(|| {
                let mut m = Mechanism::from_asmt(text, None).unwrap();
                m.solve().unwrap().converged
            })
        });
        if name == "fourbar.asmt" {
            group.bench_with_input(BenchmarkId::new("build", &name), &text, |b, text| {
                b.iter(|| Mechanism::from_asmt(text, None).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
