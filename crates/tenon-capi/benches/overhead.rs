//! The C ABI's overhead: re-solving the 100-part driven assembly (33 planar four-bars
//! whose cranks follow one parameter, as the facade's `resolve_100_parts`) after a
//! parameter change, through the Rust facade and through the C functions (called here
//! as a C host calls them: C strings, statuses, the panic guard).
//!
//! `cargo bench -p tenon-capi --bench overhead`. It also writes the assembly to
//! `target/bench-inputs/four-bars-33-driven.json` for the Python module's benchmark
//! (`crates/tenon-py/bench/overhead.py`), so the three time the same input.
#![allow(
    missing_docs,
    unsafe_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

#[path = "../../tenon/tests/common/generate.rs"]
mod generate;

use std::ffi::CString;

use criterion::{criterion_group, criterion_main, Criterion};
use tenon_capi::{
    tenon_mechanism_free, tenon_mechanism_from_json, tenon_set_parameter, tenon_solve,
    TenonMechanism, TenonStatus,
};

fn bench(c: &mut Criterion) {
    let text = generate::four_bars(33, true);
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| format!("{}/../../target", env!("CARGO_MANIFEST_DIR")));
    let dir = std::path::Path::new(&target).join("bench-inputs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("four-bars-33-driven.json"), &text).unwrap();

    let mut group = c.benchmark_group("resolve_100_parts");
    let mut m = tenon::Mechanism::from_json(&text, None).unwrap();
    assert!(m.solve().unwrap().converged);
    let mut toggle = false;
    group.bench_function("rust", |b| {
        b.iter(|| {
            toggle = !toggle;
            m.set_parameter("crank", if toggle { 61.0 } else { 60.0 })
                .unwrap();
            assert!(m.solve().unwrap().converged);
        })
    });

    let ctext = CString::new(text).unwrap();
    let name = CString::new("crank").unwrap();
    let mut handle: *mut TenonMechanism = std::ptr::null_mut();
    // SAFETY: valid C strings and a writable out pointer, as the header requires.
    let status =
        unsafe { tenon_mechanism_from_json(ctext.as_ptr(), std::ptr::null(), &mut handle) };
    assert_eq!(status, TenonStatus::Ok);
    // SAFETY: a live handle from the constructor above.
    assert_eq!(unsafe { tenon_solve(handle) }, TenonStatus::Ok);
    let mut toggle = false;
    group.bench_function("c", |b| {
        b.iter(|| {
            toggle = !toggle;
            // SAFETY: a live handle and a C string, as the header requires.
            unsafe {
                let value = if toggle { 61.0 } else { 60.0 };
                assert_eq!(
                    tenon_set_parameter(handle, name.as_ptr(), value),
                    TenonStatus::Ok
                );
                assert_eq!(tenon_solve(handle), TenonStatus::Ok);
            }
        })
    });
    group.finish();
    // SAFETY: the live handle, freed once.
    unsafe { tenon_mechanism_free(handle) };
}

criterion_group!(benches, bench);
criterion_main!(benches);
