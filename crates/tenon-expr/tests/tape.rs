//! The compiled tape against reference evaluation of the graph.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{arb_expr, assembly_shaped, build};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use tenon_expr::{ExprError, ExprGraph, ExprId, VarId};

fn rel_close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-14 * a.abs().max(b.abs()) || (a.is_nan() && b.is_nan())
}

/// Compiles `outputs`, evaluates the tape and the graph directly, and compares both
/// residuals and Jacobian entries.
fn tape_equals_tree(
    g: &mut ExprGraph,
    outputs: &[ExprId],
    columns: &[VarId],
    x: &[f64],
    p: &[f64],
) {
    let tape = g.compile(outputs, columns).unwrap();
    let mut ws = tape.workspace();
    let mut r = vec![0.0; outputs.len()];
    let mut jac = vec![0.0; tape.pattern().nnz()];
    tape.eval(&mut ws, x, p, &mut r, &mut jac).unwrap();
    let tree = g.evaluate(outputs, x, p).unwrap();
    for (k, (a, b)) in r.iter().zip(&tree).enumerate() {
        assert!(rel_close(*a, *b), "output {k}: tape {a} tree {b}");
    }
    let mut r2 = vec![0.0; outputs.len()];
    tape.eval_residuals(&mut ws, x, p, &mut r2).unwrap();
    assert_eq!(
        r.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        r2.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // Every pattern entry against the derivative evaluated from the graph, and every
    // entry left out of the pattern is zero.
    let pattern = tape.pattern().clone();
    let mut k = 0;
    for (row, &out) in outputs.iter().enumerate() {
        let in_row = pattern.row(row);
        for (col, &v) in columns.iter().enumerate() {
            let d = g.derivative(out, v);
            let want = g.evaluate(&[d], x, p).unwrap()[0];
            if in_row.contains(&(col as u32)) {
                assert!(
                    rel_close(jac[k], want),
                    "J[{row},{col}]: tape {} tree {want}",
                    jac[k]
                );
                k += 1;
            } else {
                assert_eq!(
                    g.as_const(d),
                    Some(0.0),
                    "J[{row},{col}] left out but not zero"
                );
            }
        }
    }
    assert_eq!(k, jac.len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn tape_evaluation_equals_tree_evaluation(
        exprs in prop::collection::vec(arb_expr(4), 1..6),
        x in prop::array::uniform4(-2.0f64..2.0),
        columns_mask in 1u8..16,
    ) {
        let mut g = ExprGraph::new();
        let vars: Vec<VarId> = (0..4).map(|k| g.new_var(format!("x{k}"))).collect();
        let outputs: Vec<ExprId> = exprs.iter().map(|e| build(e, &mut g, &vars)).collect();
        // A random subset of the unknowns are columns; the rest are read as known values.
        let columns: Vec<VarId> = vars.iter().enumerate().filter(|(k, _)| columns_mask & (1 << k) != 0).map(|(_, &v)| v).collect();
        tape_equals_tree(&mut g, &outputs, &columns, &x, &[]);
    }
}

#[test]
fn assembly_shaped_system_tape_equals_tree() {
    let mut s = assembly_shaped(20);
    let columns = s.columns.clone();
    tape_equals_tree(&mut s.graph, &s.outputs, &columns, &s.values, &[]);
    let tape = s.graph.compile(&s.outputs, &s.columns).unwrap();
    // 3 point rows of 10 unknowns and 2 axis rows of 8 quaternion unknowns per group.
    assert_eq!(tape.pattern().nnz(), 20 * (3 * 10 + 2 * 8));
    assert_eq!(tape.pattern().rows(), 100);
    assert_eq!(tape.pattern().columns(), 21 * 7);
}

#[test]
fn parameters_change_without_recompiling() {
    let mut g = ExprGraph::new();
    let v = g.new_var("x");
    let p = g.new_param("L");
    let (x, l) = (g.var(v), g.param(p));
    let xx = g.powi(x, 2);
    let ll = g.powi(l, 2);
    let e = g.sub(xx, ll);
    let tape = g.compile(&[e], &[v]).unwrap();
    let mut ws = tape.workspace();
    let (mut r, mut j) = ([0.0], [0.0]);
    for (xv, lv) in [(3.0, 2.0), (3.0, 3.0), (1.5, 0.5)] {
        tape.eval(&mut ws, &[xv], &[lv], &mut r, &mut j).unwrap();
        assert_eq!(r[0], xv * xv - lv * lv);
        assert_eq!(j[0], 2.0 * xv);
    }
}

#[test]
fn wrong_buffer_lengths_are_errors_not_panics() {
    let mut g = ExprGraph::new();
    let v = g.new_var("x");
    let w = g.new_var("y");
    let (x, y) = (g.var(v), g.var(w));
    let e = g.mul(x, y);
    let tape = g.compile(&[e], &[v, w]).unwrap();
    let mut ws = tape.workspace();
    let mut r = [0.0];
    let mut j = [0.0; 2];
    assert!(matches!(
        tape.eval(&mut ws, &[1.0], &[], &mut r, &mut j),
        Err(ExprError::Length {
            what: "unknowns",
            ..
        })
    ));
    assert!(matches!(
        tape.eval(&mut ws, &[1.0, 2.0], &[], &mut [], &mut j),
        Err(ExprError::Length {
            what: "residuals",
            ..
        })
    ));
    assert!(matches!(
        tape.eval(&mut ws, &[1.0, 2.0], &[], &mut r, &mut [0.0; 3]),
        Err(ExprError::Length { .. })
    ));
    assert!(matches!(
        g.compile(&[e], &[v, v]),
        Err(ExprError::DuplicateColumn(_))
    ));
    tape.eval(&mut ws, &[1.0, 2.0], &[], &mut r, &mut j)
        .unwrap();
    assert_eq!((r, j), ([2.0], [2.0, 1.0]));
    // An output buffer of another tape (even of the same shape) is refused.
    let mut other = ExprGraph::new();
    let (o1, o2) = (other.new_var("a"), other.new_var("b"));
    let (oe1, oe2) = (other.var(o1), other.var(o2));
    let oe = other.add(oe1, oe2);
    let other_tape = other.compile(&[oe], &[o1, o2]).unwrap();
    let mut wrong_out = other_tape.output();
    assert_eq!(
        tape.evaluate(&mut ws, &[1.0, 2.0], &[], &mut wrong_out),
        Err(ExprError::ForeignOutput)
    );
    // Constant Jacobian entries are in the output from the start (other_tape's are 1, 1).
    assert_eq!(wrong_out.jacobian(), &[1.0, 1.0]);
}

#[test]
fn structural_zeros_are_left_out_of_the_pattern() {
    let mut g = ExprGraph::new();
    let vs: Vec<VarId> = (0..3).map(|k| g.new_var(format!("x{k}"))).collect();
    let xs: Vec<ExprId> = vs.iter().map(|&v| g.var(v)).collect();
    // r0 = x0 + x2 - x2 (x2 cancels), r1 = x1 * 0 + 5, r2 = x0 * x1
    let a = g.add(xs[0], xs[2]);
    let r0 = g.sub(a, xs[2]);
    let zero = g.zero();
    let m = g.mul(xs[1], zero);
    let five = g.constant(5.0);
    let r1 = g.add(m, five);
    let r2 = g.mul(xs[0], xs[1]);
    let tape = g.compile(&[r0, r1, r2], &vs).unwrap();
    let entries: Vec<(usize, usize)> = tape.pattern().entries().collect();
    assert_eq!(entries, vec![(0, 0), (2, 0), (2, 1)]);
}

#[test]
fn local_tape_reads_its_columns_and_matches_the_global_one() {
    let mut g = ExprGraph::new();
    let x: Vec<VarId> = (0..6).map(|k| g.new_var(format!("x{k}"))).collect();
    let (a, b) = (g.var(x[4]), g.var(x[1]));
    let ab = g.mul(a, b);
    let s = g.sin(a);
    let out = [g.add(ab, s), g.sub(b, s)];
    // Columns in an order unlike the global one.
    let columns = [x[4], x[1]];
    let global = g.compile(&out, &columns).unwrap();
    let local = g.compile_local(&out, &columns).unwrap();
    assert_eq!(local.vars_needed(), 2);
    let full = [9.0, 0.7, 9.0, 9.0, -1.3, 9.0];
    let short = [-1.3, 0.7];
    let (mut rg, mut jg) = (vec![0.0; 2], vec![0.0; global.pattern().nnz()]);
    let (mut rl, mut jl) = (vec![0.0; 2], vec![0.0; local.pattern().nnz()]);
    global
        .eval(&mut global.workspace(), &full, &[], &mut rg, &mut jg)
        .unwrap();
    local
        .eval(&mut local.workspace(), &short, &[], &mut rl, &mut jl)
        .unwrap();
    assert_eq!(rg, rl);
    assert_eq!(jg, jl);
    assert_eq!(global.pattern(), local.pattern());
    // An unknown that is not a column is refused, not read from a wrong place.
    assert_eq!(
        g.compile_local(&out, &[x[4]]).unwrap_err(),
        ExprError::NotAColumn(x[1])
    );
}

/// A local tape finds its columns alike whether their unknowns lie close together
/// among the graph's (indexed by an array over their span) or far apart (a map): same
/// values, same pattern; an unknown given twice, or one between the columns that is not
/// one, is refused either way.
#[test]
fn columns_close_together_and_far_apart_are_found_alike() {
    let mut g = ExprGraph::new();
    let x: Vec<VarId> = (0..1000).map(|k| g.new_var(format!("x{k}"))).collect();
    let (a, b, c) = (g.var(x[3]), g.var(x[5]), g.var(x[999]));
    let ab = g.mul(a, b);
    let bc = g.mul(b, c);
    let out = [g.add(ab, c), g.sin(bc)];
    let values = |tape: &tenon_expr::Tape, at: &[f64]| {
        let mut r = vec![0.0; 2];
        let mut j = vec![0.0; tape.pattern().nnz()];
        tape.eval(&mut tape.workspace(), at, &[], &mut r, &mut j)
            .unwrap();
        (r, j)
    };
    // x3, x5, x999: three columns over a span of 997 ids (a map).
    let far = g.compile_local(&out, &[x[999], x[3], x[5]]).unwrap();
    let far_values = values(&far, &[0.3, 1.5, -2.0]);
    // The same expressions over unknowns 3..=5 and one more near them (an array).
    let near_out = {
        let d = g.var(x[4]);
        let dc = g.mul(b, d);
        let ad = g.mul(a, b);
        [g.add(ad, d), g.sin(dc)]
    };
    let near = g.compile_local(&near_out, &[x[4], x[3], x[5]]).unwrap();
    assert_eq!(values(&near, &[0.3, 1.5, -2.0]), far_values);
    assert_eq!(near.pattern(), far.pattern());
    for columns in [[x[3], x[5], x[3]], [x[3], x[999], x[3]]] {
        assert_eq!(
            g.compile_local(&out, &columns).unwrap_err(),
            ExprError::DuplicateColumn(x[3])
        );
    }
    // x4 lies between the columns 3 and 5 but is not one of them.
    assert_eq!(
        g.compile_local(&near_out, &[x[3], x[5]]).unwrap_err(),
        ExprError::NotAColumn(x[4])
    );
}

/// A grouped tape (`compile_grouped`) computes every value by the same operations as
/// the plain one, only in another order: residuals and Jacobian values are identical to
/// the bit, on random expressions and on an assembly-shaped system larger than one
/// reordering window.
#[test]
fn grouped_tapes_give_the_same_values_to_the_bit() {
    let check = |g: &mut ExprGraph, outputs: &[ExprId], columns: &[VarId], x: &[f64]| {
        let plain = g.compile(outputs, columns).unwrap();
        let grouped = g.compile_grouped(outputs, columns).unwrap();
        assert_eq!(plain.pattern(), grouped.pattern());
        let run = |t: &tenon_expr::Tape| {
            let mut ws = t.workspace();
            let mut r = vec![0.0; outputs.len()];
            let mut j = vec![0.0; t.pattern().nnz()];
            t.eval(&mut ws, x, &[], &mut r, &mut j).unwrap();
            (r, j)
        };
        let (a, b) = (run(&plain), run(&grouped));
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a.0), bits(&b.0));
        assert_eq!(bits(&a.1), bits(&b.1));
    };
    let mut s = assembly_shaped(60);
    let (outputs, columns, values) = (s.outputs.clone(), s.columns.clone(), s.values.clone());
    check(&mut s.graph, &outputs, &columns, &values);
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..100 {
        let exprs = prop::collection::vec(arb_expr(4), 1..6)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let mut g = ExprGraph::new();
        let vars: Vec<VarId> = (0..4).map(|k| g.new_var(format!("x{k}"))).collect();
        let outputs: Vec<ExprId> = exprs.iter().map(|e| build(e, &mut g, &vars)).collect();
        check(&mut g, &outputs, &vars, &[0.3, -1.1, 0.7, 1.9]);
    }
}
