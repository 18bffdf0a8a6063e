//! Compilation by shape (`compile_local_by_shape_in`): the same pattern and the same
//! values as compiling the outputs directly, whatever the groups.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{arb_expr, assembly_shaped, build};
use proptest::strategy::{Strategy, ValueTree};
use tenon_expr::{ExprError, ExprGraph, ExprId, LocalColumns, Tape, VarId};

/// Residuals and Jacobian values of `tape` at `x` (local order) and parameters `p`.
fn run(tape: &Tape, x: &[f64], p: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut ws = tape.workspace();
    let mut r = vec![0.0; tape.pattern().rows()];
    let mut j = vec![0.0; tape.pattern().nnz()];
    tape.eval(&mut ws, x, p, &mut r, &mut j).unwrap();
    (r, j)
}

/// Compiles `outputs` directly and by shape with `groups`, and requires the same pattern
/// and values equal to rounding (a shaped group loads constants where the direct compile
/// may fold products of them).
fn same_tapes(
    g: &mut ExprGraph,
    outputs: &[ExprId],
    groups: &[u32],
    columns: &[VarId],
    x: &[f64],
    p: &[f64],
) {
    let columns = LocalColumns::new(columns).unwrap();
    let direct = g.compile_local_in(outputs, &columns).unwrap();
    let shaped = g
        .compile_local_by_shape_in(outputs, groups, &columns)
        .unwrap();
    assert_eq!(direct.pattern(), shaped.pattern());
    assert_eq!(direct.vars_needed(), shaped.vars_needed());
    let (a, b) = (run(&direct, x, p), run(&shaped, x, p));
    let close = |u: &[f64], v: &[f64]| {
        u.iter().zip(v).all(|(s, t)| {
            (s.is_nan() && t.is_nan()) || (s - t).abs() <= 1e-12 * (1.0 + s.abs().max(t.abs()))
        })
    };
    assert!(close(&a.0, &b.0), "residuals {:?} vs {:?}", a.0, b.0);
    assert!(close(&a.1, &b.1), "jacobian {:?} vs {:?}", a.1, b.1);
    // Residuals alone, through the residual stream.
    let mut ws = shaped.workspace();
    let mut out = shaped.output();
    shaped.evaluate_residuals(&mut ws, x, p, &mut out).unwrap();
    assert!(close(out.residuals(), &a.0));
}

#[test]
fn joints_of_an_assembly_compile_by_shape_to_the_same_tape() {
    let mut s = assembly_shaped(40);
    let groups: Vec<u32> = (0..s.outputs.len()).map(|k| (k / 5) as u32).collect();
    let (outputs, columns, values) = (s.outputs.clone(), s.columns.clone(), s.values.clone());
    same_tapes(&mut s.graph, &outputs, &groups, &columns, &values, &[]);
    // Groups of one row each, and everything one group: still the same tape.
    let singles: Vec<u32> = (0..outputs.len() as u32).collect();
    same_tapes(&mut s.graph, &outputs, &singles, &columns, &values, &[]);
    let one = vec![0; outputs.len()];
    same_tapes(&mut s.graph, &outputs, &one, &columns, &values, &[]);
    // Labels of the wrong length: nothing shaped, same tape.
    same_tapes(&mut s.graph, &outputs, &[0, 1], &columns, &values, &[]);
}

/// Random expressions, each built over several disjoint sets of unknowns (one shape,
/// many instances) with the unknowns listed in a scrambled column order.
#[test]
fn random_groups_compile_by_shape_to_the_same_tape() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for case in 0..120 {
        let exprs = proptest::collection::vec(arb_expr(3), 1..4)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let mut g = ExprGraph::new();
        let mut columns: Vec<VarId> = Vec::new();
        let mut outputs = Vec::new();
        let mut groups = Vec::new();
        let instances = 4;
        for i in 0..instances {
            let vars: Vec<VarId> = (0..3).map(|k| g.new_var(format!("x{i}.{k}"))).collect();
            columns.extend(&vars);
            for e in &exprs {
                outputs.push(build(e, &mut g, &vars));
                groups.push(i as u32);
            }
        }
        let turn = case % columns.len();
        columns.rotate_left(turn);
        let x: Vec<f64> = (0..columns.len())
            .map(|k| 0.3 + 0.17 * k as f64 - 0.05 * (k * k % 7) as f64)
            .collect();
        same_tapes(&mut g, &outputs, &groups, &columns, &x, &[]);
    }
}

/// Parameters and model constants are leaves: groups that differ only in them share a
/// shape and each reads its own; small integers and halves are part of the shape.
#[test]
fn parameters_and_constants_are_read_per_instance() {
    let mut g = ExprGraph::new();
    let t = g.new_param("t");
    let te = g.param(t);
    let mut columns = Vec::new();
    let mut outputs = Vec::new();
    let mut groups = Vec::new();
    for (k, offset) in [100.0, 2.0, 0.5, 37.25, 100.0].into_iter().enumerate() {
        let u = g.new_var(format!("u{k}"));
        let w = g.new_var(format!("w{k}"));
        columns.extend([u, w]);
        let (ue, we) = (g.var(u), g.var(w));
        // u - (offset + t) and w * sin(u) - 2 offset
        let offset_e = g.constant(offset);
        let moved = g.add(te, offset_e);
        outputs.push(g.sub(ue, moved));
        let s = g.sin(ue);
        let ws = g.mul(we, s);
        let c = g.constant(2.0 * offset);
        outputs.push(g.sub(ws, c));
        groups.extend([k as u32, k as u32]);
    }
    let x: Vec<f64> = (0..columns.len()).map(|k| 0.1 * k as f64 - 0.4).collect();
    same_tapes(&mut g, &outputs, &groups, &columns, &x, &[1.5]);
    let shaped = g
        .compile_local_by_shape_in(&outputs, &groups, &LocalColumns::new(&columns).unwrap())
        .unwrap();
    assert_eq!(shaped.params_needed(), 1);
    let (r, _) = run(&shaped, &x, &[1.5]);
    assert_eq!(r[0], x[0] - 101.5);
    assert_eq!(r[8], x[8] - 101.5);
    assert!((r[3] - (x[3] * x[2].sin() - 4.0)).abs() < 1e-15);
}

/// Groups holding splines are compiled directly, beside shaped ones.
#[test]
fn spline_groups_are_compiled_directly_beside_shaped_ones() {
    let mut g = ExprGraph::new();
    let mut columns = Vec::new();
    let mut outputs = Vec::new();
    let mut groups = Vec::new();
    for k in 0..3u32 {
        let u = g.new_var(format!("u{k}"));
        columns.push(u);
        let ue = g.var(u);
        let coefficients: Vec<ExprId> = [1.0, 2.0, 0.5, 3.0]
            .iter()
            .map(|&c| g.constant(c + f64::from(k)))
            .collect();
        let table = g.spline_table(&coefficients);
        let s = g.spline(table, ue, 0);
        outputs.push(g.mul(s, ue));
        groups.push(2 * k);
        let c = g.cos(ue);
        let quarter = g.constant(0.25);
        outputs.push(g.sub(c, quarter));
        groups.push(2 * k + 1);
    }
    same_tapes(&mut g, &outputs, &groups, &columns, &[0.3, 1.7, 2.9], &[]);
}

#[test]
fn an_unknown_that_is_not_a_column_is_refused() {
    let mut g = ExprGraph::new();
    let (a, b) = (g.new_var("a"), g.new_var("b"));
    let (ae, be) = (g.var(a), g.var(b));
    let out = [g.mul(ae, be)];
    let columns = LocalColumns::new(&[a]).unwrap();
    assert_eq!(
        g.compile_local_by_shape_in(&out, &[0], &columns)
            .unwrap_err(),
        ExprError::NotAColumn(b)
    );
}

/// Many instances of one shape run as a batch (side by side, in lane groups); each
/// instance computes exactly what it computes when it is the only one (its copy in the
/// stream): bit for bit, residuals and Jacobian, through both streams, for instance
/// counts that fill lane groups and that leave a last group part full.
#[test]
fn batched_instances_compute_what_their_copies_do() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for (case, instances) in [4usize, 7, 8, 9, 17, 33]
        .into_iter()
        .cycle()
        .take(36)
        .enumerate()
    {
        let exprs = proptest::collection::vec(arb_expr(3), 1..4)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let mut g = ExprGraph::new();
        let p = g.new_param("p");
        let pe = g.param(p);
        let mut columns: Vec<VarId> = Vec::new();
        let mut outputs = Vec::new();
        let mut groups = Vec::new();
        for i in 0..instances {
            let vars: Vec<VarId> = (0..3).map(|k| g.new_var(format!("x{i}.{k}"))).collect();
            columns.extend(&vars);
            // A model constant per instance (a leaf of the shape) and the parameter.
            let offset = g.constant(1.25 + 0.37 * i as f64);
            for e in &exprs {
                let body = build(e, &mut g, &vars);
                let moved = g.mul(pe, offset);
                outputs.push(g.add(body, moved));
                groups.push(i as u32);
            }
        }
        let x: Vec<f64> = (0..columns.len())
            .map(|k| 0.3 + 0.11 * k as f64 - 0.07 * (k * k % 5) as f64 + 0.01 * case as f64)
            .collect();
        let all = LocalColumns::new(&columns).unwrap();
        let batched = g
            .compile_local_by_shape_in(&outputs, &groups, &all)
            .unwrap();
        let (r, j) = run(&batched, &x, &[0.8]);
        let mut residuals_only = batched.output();
        batched
            .evaluate_residuals(&mut batched.workspace(), &x, &[0.8], &mut residuals_only)
            .unwrap();
        let rows = exprs.len();
        let mut entry = 0;
        for i in 0..instances {
            // The instance alone, over its own three columns.
            let own = &columns[3 * i..3 * i + 3];
            let one = g
                .compile_local_by_shape_in(
                    &outputs[rows * i..rows * (i + 1)],
                    &vec![0; rows],
                    &LocalColumns::new(own).unwrap(),
                )
                .unwrap();
            let (r1, j1) = run(&one, &x[3 * i..3 * i + 3], &[0.8]);
            let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            for (k, &v) in r1.iter().enumerate() {
                assert!(
                    same(r[rows * i + k], v),
                    "case {case}, instance {i}, row {k}"
                );
                assert!(same(residuals_only.residuals()[rows * i + k], v));
            }
            for &v in &j1 {
                assert!(same(j[entry], v), "case {case}, instance {i}, entry");
                entry += 1;
            }
        }
        assert_eq!(entry, j.len());
    }
}

/// Graphs made one after another on a thread, of other sizes in between, compile the
/// same assembly to the same tape, to the bit, and walk it to the same unknowns, as a
/// graph on a fresh thread does. A graph takes over the scratch lists of graphs dropped
/// before it on its thread (their per-node marks with their stamp, the shape walk's and
/// the compile's lists): none of it may reach a tape or a walk.
#[test]
fn graphs_made_in_turn_compile_the_same_tape() {
    let compile = |parts: usize| {
        let mut s = assembly_shaped(parts);
        let groups: Vec<u32> = (0..s.outputs.len()).map(|k| (k / 5) as u32).collect();
        let columns = LocalColumns::new(&s.columns).unwrap();
        let tape = s
            .graph
            .compile_local_by_shape_in(&s.outputs, &groups, &columns)
            .unwrap();
        let outputs = s.outputs.clone();
        let vars: Vec<Vec<VarId>> = outputs.iter().map(|&o| s.graph.vars_of_marked(o)).collect();
        let (r, j) = run(&tape, &s.values, &[]);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
        (tape.pattern().clone(), bits(&r), bits(&j), vars)
    };
    let fresh = |parts: usize| std::thread::spawn(move || compile(parts)).join().unwrap();
    for sizes in [[12, 40, 12], [40, 3, 12], [3, 12, 60], [12, 12, 12]] {
        let in_turn = std::thread::spawn(move || sizes.map(compile))
            .join()
            .unwrap();
        for (k, got) in in_turn.into_iter().enumerate() {
            assert!(got == fresh(sizes[k]), "sizes {sizes:?}, graph {k}");
        }
    }
}
