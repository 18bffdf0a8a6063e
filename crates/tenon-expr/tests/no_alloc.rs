//! Tape evaluation allocates nothing: a counting global allocator watches it.
//! This file holds one test so no other test thread allocates while it counts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn tape_evaluation_allocates_nothing() {
    let mut s = common::assembly_shaped(50);
    let p = s.graph.new_param("scale");
    let pe = s.graph.param(p);
    let mut outputs = s.outputs.clone();
    let first = outputs[0];
    outputs[0] = s.graph.mul(first, pe);
    let tape = s.graph.compile(&outputs, &s.columns).unwrap();
    let mut ws = tape.workspace();
    let mut r = vec![0.0; outputs.len()];
    let mut jac = vec![0.0; tape.pattern().nnz()];
    let mut out = tape.output();
    let params = [1.5];
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for step in 0..100 {
        s.values[0] = step as f64 * 0.01;
        tape.eval(&mut ws, &s.values, &params, &mut r, &mut jac)
            .unwrap();
        tape.eval_residuals(&mut ws, &s.values, &params, &mut r)
            .unwrap();
        tape.evaluate(&mut ws, &s.values, &params, &mut out)
            .unwrap();
        tape.evaluate_residuals(&mut ws, &s.values, &params, &mut out)
            .unwrap();
    }
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(after - before, 0, "tape evaluation allocated");
    assert!(jac.iter().all(|v| v.is_finite()));
    assert_eq!(out.jacobian(), &jac[..]);
}
