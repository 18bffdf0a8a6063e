//! The synthetic assembly-shaped system of issue 2: 10,000 groups of 5 residuals, each
//! group over 14 unknowns with rotation-matrix-from-quaternion subterms.
//!
//! Reports three things: building the expressions, compiling (symbolic Jacobian plus
//! tape), and one evaluation of residuals and Jacobian. Divide the evaluation time by the
//! printed non-zero count for the time per Jacobian non-zero.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

const GROUPS: usize = 10_000;

fn bench(c: &mut Criterion) {
    let probe = common::assembly_shaped(GROUPS);
    let mut graph = probe.graph.clone();
    let tape = graph.compile(&probe.outputs, &probe.columns).unwrap();
    eprintln!(
        "assembly_shaped: {} residuals, {} unknowns, {} Jacobian non-zeros, {} tape instructions, {} slots, {} graph nodes",
        tape.output_count(),
        probe.columns.len(),
        tape.pattern().nnz(),
        tape.instruction_count(),
        tape.slot_count(),
        graph.node_count()
    );

    let mut group = c.benchmark_group("assembly_shaped_10k");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("build", |b| {
        b.iter(|| black_box(common::assembly_shaped(GROUPS)))
    });
    group.bench_function("compile", |b| {
        b.iter_batched(
            || probe.graph.clone(),
            |mut g| black_box(g.compile(&probe.outputs, &probe.columns).unwrap()),
            BatchSize::PerIteration,
        )
    });
    group.finish();

    let mut group = c.benchmark_group("assembly_shaped_10k_eval");
    group.sample_size(50);
    let mut ws = tape.workspace();
    let mut out = tape.output();
    group.bench_function("residuals_and_jacobian", |b| {
        b.iter(|| {
            tape.evaluate(&mut ws, black_box(&probe.values), &[], &mut out)
                .unwrap()
        })
    });
    group.bench_function("residuals_only", |b| {
        b.iter(|| {
            tape.evaluate_residuals(&mut ws, black_box(&probe.values), &[], &mut out)
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
