//! Every fixture solves from its file pose and from perturbations of it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

#[path = "../../tenon-model/tests/common/mod.rs"]
mod common;

use proptest::prelude::*;
use tenon_model::read_json;
use tenon_solve::{solve, Problem, SolveOptions};
use tenon_system::System;

fn fixtures() -> Vec<(String, String)> {
    common::files("../../fixtures", "json")
}

/// Solves `name` after moving every free part by `shift` (fraction of its distance from
/// the origin, at least 1 unit) and turning it by `turn` radians about a tilted axis.
fn solve_perturbed(name: &str, text: &str, shift: f64, turn: f64, axis: [f64; 3]) {
    let a = read_json(text, Some(name)).unwrap();
    let mut system = System::build(&a).unwrap();
    let compiled = system.compile().unwrap();
    let mut state = system.initial_state();
    let mut params = system.initial_parameters();
    let n = system.free_parts().len();
    let mut delta = vec![0.0; system.tangent_dimension()];
    let norm = (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
        .sqrt()
        .max(1e-9);
    for k in 0..n {
        let vars = system.free_parts()[k].vars;
        let p: Vec<f64> = (0..3).map(|c| state[vars[c].index()]).collect();
        let scale = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt().max(1.0);
        for c in 0..3 {
            delta[6 * k + c] = shift * scale * [0.6, -0.5, 0.62][c];
            delta[6 * k + 3 + c] = turn * axis[c] / norm;
        }
    }
    let old = state.clone();
    system.retract(&mut state, &delta).unwrap();
    system
        .update_turns(&compiled, &old, &state, &mut params)
        .unwrap();
    let report = solve(
        &Problem {
            system: &system,
            compiled: &compiled,
            assembly: &a,
            stages: None,
        },
        &mut state,
        &mut params,
        SolveOptions::default(),
    )
    .unwrap();
    // Held to the tolerances the solve states (lengths scale with the model's reach:
    // a part perturbed far from the origin may end 1.02e-10 off, within them).
    let tolerance = report.tolerances.length.max(report.tolerances.angle);
    assert!(
        report.converged && report.max_residual <= tolerance,
        "{name} (shift {shift}, turn {turn}): residual {} (tolerance {tolerance}) unsatisfied {:?}",
        report.max_residual,
        &report.unsatisfied[..report.unsatisfied.len().min(3)]
    );
}

#[test]
fn every_fixture_solves_from_its_file_pose_and_a_fixed_perturbation() {
    for (name, text) in fixtures() {
        solve_perturbed(&name, &text, 0.0, 0.0, [0.0, 0.0, 1.0]);
        solve_perturbed(&name, &text, 0.05, 0.15, [0.3, -0.4, 0.86]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Up to 10 % of the size in position and 15 degrees in rotation.
    #[test]
    fn every_fixture_solves_from_random_perturbations(
        shift in -0.1f64..0.1,
        turn in -0.26f64..0.26,
        axis in prop::array::uniform3(-1.0f64..1.0),
    ) {
        for (name, text) in fixtures() {
            solve_perturbed(&name, &text, shift, turn, axis);
        }
    }
}

/// A revolute whose axes start on the + side (80 degrees apart) and a fixed joint to a
/// marker turned 180 degrees about x, whose axes start on the mirror side (100 degrees
/// apart): turning the lid on to 180 degrees changes both joints' branches (the hinge's
/// axes end reversed, the weld's aligned), and the report names both; turning it back to
/// 0 changes neither (the weld's frames end a half turn apart about x, on the mirror
/// side where they started, which its axis equations allow).
#[test]
fn a_forced_flip_is_reported() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "parts": [ { "id": "ground", "grounded": true, "markers": { "pin": {}, "dock": { "rotation": { "axis": [1, 0, 0], "angle": 180 } } } },
                 { "id": "lid", "placement": { "rotation": { "axis": [1, 0, 0], "angle": 80 } }, "markers": { "pin": {} } } ],
      "joints": [ { "id": "hinge", "type": "revolute", "i": { "part": "lid", "marker": "pin" }, "j": { "part": "ground", "marker": "pin" } },
                  { "id": "weld", "type": "fixed", "i": { "part": "lid", "marker": "pin" }, "j": { "part": "ground", "marker": "dock" } } ] }"#;
    forced_flip_is_reported(text);
}

/// [`a_forced_flip_is_reported`] with the dock's turn and the lid's pin given by
/// parameters: their frames are expressions, so the two joints' indicators are compiled
/// rather than worked out in numbers, and the report is the same.
#[test]
fn a_forced_flip_is_reported_for_frames_placed_by_parameters() {
    let text = r#"{ "format": "tenon-assembly", "version": 1,
      "parameters": { "half": 180, "none": 0 },
      "parts": [ { "id": "ground", "grounded": true, "markers": { "pin": {}, "dock": { "rotation": { "axis": [1, 0, 0], "angle": "half" } } } },
                 { "id": "lid", "placement": { "rotation": { "axis": [1, 0, 0], "angle": 80 } }, "markers": { "pin": { "rotation": { "axis": [0, 0, 1], "angle": "none" } } } } ],
      "joints": [ { "id": "hinge", "type": "revolute", "i": { "part": "lid", "marker": "pin" }, "j": { "part": "ground", "marker": "pin" } },
                  { "id": "weld", "type": "fixed", "i": { "part": "lid", "marker": "pin" }, "j": { "part": "ground", "marker": "dock" } } ] }"#;
    forced_flip_is_reported(text);
}

fn forced_flip_is_reported(text: &str) {
    let a = read_json(text, None).unwrap();
    let mut system = System::build(&a).unwrap();
    let compiled = system.compile().unwrap();
    let mut state = system.initial_state();
    let mut params = system.initial_parameters();
    let problem = Problem {
        system: &system,
        compiled: &compiled,
        assembly: &a,
        stages: None,
    };
    let report = solve(&problem, &mut state, &mut params, SolveOptions::default()).unwrap();
    assert!(report.converged, "{}", report.max_residual);
    let names: Vec<&str> = report
        .flipped
        .iter()
        .map(|k| a.joint(*k).unwrap().id.as_str())
        .collect();
    // The lid's z axis against the ground's: 1 - 2 (qx^2 + qy^2) (state: position,
    // then the quaternion w, x, y, z).
    let z_z = 1.0 - 2.0 * (state[4] * state[4] + state[5] * state[5]);
    if z_z < 0.0 {
        assert_eq!(names, vec!["hinge", "weld"], "lid ended at 180 degrees");
    } else {
        assert!(names.is_empty(), "lid ended at 0 degrees: {names:?}");
    }
    // Solving again from there flips nothing.
    let again = solve(&problem, &mut state, &mut params, SolveOptions::default()).unwrap();
    assert!(again.flipped.is_empty());
}

#[test]
fn structure_shows_the_four_bars_surplus_and_the_arms_freedom() {
    let check = |name: &str| {
        let text = std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../fixtures")
                .join(name),
        )
        .unwrap();
        let a = read_json(&text, None).unwrap();
        let mut system = System::build(&a).unwrap();
        let compiled = system.compile().unwrap();
        let problem = Problem {
            system: &system,
            compiled: &compiled,
            assembly: &a,
            stages: None,
        };
        let d = tenon_solve::structure(
            &problem,
            &system.initial_state(),
            &system.initial_parameters(),
            false,
        )
        .unwrap();
        (
            d.over.rows.len() as i64 - d.over.columns.len() as i64,
            d.under.columns.len() as i64 - d.under.rows.len() as i64,
        )
    };
    // Four revolutes (20 equations) on three parts (18 unknowns): 2 equations too many.
    let (surplus, freedom) = check("four-bar.json");
    assert_eq!((surplus, freedom), (2, 0));
    // Six revolutes and a fixed joint on seven parts: 42 unknowns, 36 equations.
    let (surplus, freedom) = check("robot-arm.json");
    assert_eq!((surplus, freedom), (0, 6));
}

/// Found by the random perturbations (CI): near its solution set (the cam's free turn)
/// the Jacobian is near-singular and undamped Gauss-Newton crawled; the solver now damps
/// after short steps.
#[test]
fn cam_follower_from_a_tilted_start() {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cam-follower.json"),
    )
    .unwrap();
    solve_perturbed(
        "cam-follower.json",
        &text,
        0.075062709251812,
        -0.19159359780273405,
        [
            -0.010928147546913531,
            -0.5714753497435417,
            -0.8140189748329185,
        ],
    );
}
