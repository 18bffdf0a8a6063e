//! Tolerances that scale with the model (issue 16): assemblies laid out as users draw
//! them (straight, from the origin outward or far from it, in millimetres) solve to a
//! tolerance relative to their reach, checked joint by joint independently of the
//! solver's report; a real disagreement stays a conflict at any size.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/generate.rs"]
mod generate;
#[path = "common/holds.rs"]
mod holds;

use generate::scale;
use tenon::{Mechanism, Status, RELATIVE_TOLERANCE, TOLERANCE};

/// Solves `text`, requires convergence, and checks every joint from the solved
/// placements against the tolerances the report states; returns the mechanism.
fn solves_and_holds(text: &str, what: &str) -> Mechanism {
    let mut m = Mechanism::from_json(text, None).unwrap();
    let report = m.solve().unwrap();
    let t = report.tolerances;
    assert!(
        report.converged,
        "{what}: not converged (largest residual {:.3e}, length tolerance {:.3e})",
        report.max_residual, t.length
    );
    assert_eq!(
        t.length,
        TOLERANCE.max(RELATIVE_TOLERANCE * t.reach),
        "{what}"
    );
    assert_eq!(t.angle, TOLERANCE, "{what}");
    let (gap, turn) = holds::worst_joint_errors(&m);
    // The check composes poses itself: a few units in the last place beyond the solver's
    // own evaluation.
    let slack = 8.0 * f64::EPSILON * t.reach;
    assert!(
        gap <= t.length + slack,
        "{what}: a joint's markers {gap:.3e} apart"
    );
    assert!(
        turn <= t.angle,
        "{what}: a revolute's axes {turn:.3e} rad apart"
    );
    m
}

#[test]
fn a_thousand_parts_in_each_layout_hold_to_the_stated_tolerance() {
    let cases = [
        ("straight chain", scale::chain(1000, 100.0, [0.0, 0.0])),
        (
            "chain 1e5 from the origin",
            scale::chain(1000, 100.0, [1e5, 1e5]),
        ),
        ("straight ladder", scale::ladder(333, 100.0, [0.0, 0.0])),
        ("RSSR four-bars 1e5 off", scale::rssr(333, [1e5, 1e5])),
        ("mixed sizes", scale::mixed(1000, [0.0, 0.0])),
    ];
    for (what, text) in &cases {
        let m = solves_and_holds(text, what);
        assert!(m.model().part_count() >= 1000, "{what}");
    }
}

/// Parts of very different sizes (10 m frames, 0.1 mm pins, 100 mm links in turn): the
/// pins' turns are weighed at least as a thousandth of the largest part's (else each
/// least-change step turned them by tenths of a radian, and 1,000 parts took 11 Newton
/// iterations, 10,000 parts 65).
#[test]
fn mixed_sizes_converge_in_a_few_newton_iterations() {
    let mut m = Mechanism::from_json(&scale::mixed(1000, [0.0, 0.0]), None).unwrap();
    let report = m.solve().unwrap();
    assert!(report.converged);
    let most = report.clusters.iter().map(|c| c.iterations).max().unwrap();
    assert!(most <= 5, "{most} iterations");
}

/// Open chains laid out straight take one Newton iteration at any length: what the
/// step's turns leave in the point equations is removed by translation-only
/// corrections (`newton::shift`), where it took 5 iterations at 1,000 links and 9 at
/// 10,000. The joints hold to the stated tolerance all the same.
#[test]
fn straight_open_chains_take_one_newton_iteration() {
    for (what, text) in [
        ("straight chain", scale::chain(2000, 100.0, [0.0, 0.0])),
        ("chain 1e5 off", scale::chain(1000, 100.0, [1e5, 1e5])),
        ("mixed sizes", scale::mixed(1000, [0.0, 0.0])),
    ] {
        let m = solves_and_holds(&text, what);
        let report = m.report().unwrap();
        let most = report.clusters.iter().map(|c| c.iterations).max();
        assert_eq!(most, Some(1), "{what}");
    }
}

/// Straight ladders (closed cells: shifts refused) converge in two Newton iterations
/// whatever their length: when a chord stalls, stiff chords (the same Jacobian, turns
/// weighed 300 times more: `newton::stiff`) close what the step's curvature left, where
/// 1,000 parts took 3 iterations and 10,000 took 6. The joints hold to the stated
/// tolerance all the same.
#[test]
fn straight_ladders_take_two_newton_iterations() {
    for (what, text) in [
        (
            "ladder of 1,000 parts",
            scale::ladder(333, 100.0, [0.0, 0.0]),
        ),
        (
            "ladder of 3,000 parts 1e5 off",
            scale::ladder(1000, 100.0, [1e5, 1e5]),
        ),
    ] {
        let m = solves_and_holds(&text, what);
        let report = m.report().unwrap();
        let most = report.clusters.iter().map(|c| c.iterations).max();
        assert_eq!(most, Some(2), "{what}");
    }
}

/// Where translations alone do not reach what a step left (a chain coiled in space, a
/// ladder's closed cells), the first shift falls short and is refused: these keep the
/// Newton steps they took without shifts (a shift kept there had left the coiled
/// 10,000-link chain 23 iterations from its answer instead of 3).
#[test]
fn coiled_chains_and_ladders_keep_their_newton_steps() {
    for (what, text, most) in [
        ("coiled chain", generate::chain(1000), 2),
        ("coiled ladder", generate::ladder(100), 3),
    ] {
        let mut m = Mechanism::from_json(&text, None).unwrap();
        let report = m.solve().unwrap();
        assert!(report.converged, "{what}");
        let taken = report.clusters.iter().map(|c| c.iterations).max().unwrap();
        assert!(taken <= most, "{what}: {taken} iterations");
    }
}

#[test]
fn a_rounding_level_residual_on_a_300_m_assembly_is_not_a_failure() {
    // 1,000 links of 300 mm from the origin: the far end at 300,000 mm, where one unit
    // in the last place is 5.8e-11. An absolute 1e-10 was at the floor of what double
    // precision can reach; the tolerance now scales with the reach.
    let m = solves_and_holds(&scale::chain(1000, 300.0, [0.0, 0.0]), "300 m chain");
    let report = m.report().unwrap();
    assert!(
        report.tolerances.reach > 2.9e5,
        "{}",
        report.tolerances.reach
    );
    assert!(
        (report.tolerances.length - RELATIVE_TOLERANCE * report.tolerances.reach).abs() < 1e-20
    );
    assert!(report.clusters.iter().all(|c| c.status != Status::Failed));
}

/// A bar 10 m long held to the ground twice over: a revolute at its near end and a
/// distance joint from a ground marker to its far end that asks for `10,000 + extra`.
fn ten_metre_bar(extra: f64) -> String {
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1, "parts": [
  {{ "id": "ground", "grounded": true, "markers": {{ "o": {{}}, "far": {{ "position": [0, 10000, 0] }} }} }},
  {{ "id": "bar", "placement": {{ "position": [0.5, 0.2, 0] }},
    "markers": {{ "a": {{}}, "b": {{ "position": [10000, 0, 0] }} }} }} ],
  "joints": [
  {{ "id": "pivot", "type": "fixed", "i": {{ "part": "bar", "marker": "a" }}, "j": {{ "part": "ground", "marker": "o" }} }},
  {{ "id": "reach", "type": "distance", "distance": {}, "i": {{ "part": "bar", "marker": "b" }}, "j": {{ "part": "ground", "marker": "far" }} }} ] }}"#,
        (2.0f64).sqrt() * 10_000.0 + extra
    )
}

#[test]
fn a_micrometre_conflict_on_a_10_m_assembly_is_still_a_conflict() {
    // Consistent: the distance is exactly what the fixed joint leaves.
    let mut m = Mechanism::from_json(&ten_metre_bar(0.0), None).unwrap();
    assert!(m.solve().unwrap().converged);
    let d = m.diagnose().unwrap();
    assert_eq!(d.clusters[0].status, Status::OverConstrained);
    // 1e-6 mm off on a 10 m bar: conflicting, naming the joints, with its size.
    let mut m = Mechanism::from_json(&ten_metre_bar(1e-6), None).unwrap();
    let report = m.solve().unwrap();
    assert!(!report.converged, "a 1e-6 conflict called solved");
    assert!(report.tolerances.length < 1e-8);
    let d = m.diagnose().unwrap();
    let c = &d.clusters[0];
    assert_eq!(c.status, Status::Conflicting);
    let names: Vec<&str> = c.conflicts[0]
        .joints
        .iter()
        .map(|j| m.joint_id(*j).unwrap())
        .collect();
    assert_eq!(names, ["pivot", "reach"]);
    assert!(
        (c.conflicts[0].violation - 1e-6).abs() < 1e-8,
        "{}",
        c.conflicts[0].violation
    );
    // With a geometric tolerance above it, the bar is placed and the disagreement said.
    let mut m = Mechanism::from_json(&ten_metre_bar(1e-6), None).unwrap();
    m.set_options(tenon::SolveOptions {
        geometric_tolerance: Some(1e-3),
        ..m.options()
    });
    let report = m.solve().unwrap();
    assert!(report.converged && report.clusters[0].placed);
    assert_eq!(report.clusters[0].status, Status::OverConstrained);
    let d = m.diagnose().unwrap();
    assert!(d.clusters[0].conflicts.is_empty());
    assert_eq!(d.clusters[0].disagreements.len(), 1);
    assert!((d.clusters[0].disagreements[0].violation - 1e-6).abs() < 1e-8);
    // The same from the file's own `tolerance`.
    let text = ten_metre_bar(1e-6).replacen(
        r#""version": 1,"#,
        r#""version": 1, "tolerance": 0.001,"#,
        1,
    );
    let mut m = Mechanism::from_json(&text, None).unwrap();
    assert_eq!(m.options().geometric_tolerance, Some(1e-3));
    assert!(m.solve().unwrap().clusters[0].placed);
}
