//! Every public entry that takes a state or a parameter vector checks its length once
//! and says what it expected: a typed error, never a misleading failure further in.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon_model::read_json;
use tenon_solve::{diagnose, drag, solve, structure, Problem, SolveError, SolveOptions};
use tenon_system::{System, SystemError};

const FOUR_BAR: &str = include_str!("../../../fixtures/four-bar.json");

fn wrong(e: SolveError) -> (&'static str, usize, usize) {
    match e {
        SolveError::System(SystemError::WrongLength {
            what,
            expected,
            actual,
        }) => (what, expected, actual),
        other => panic!("expected a wrong-length error, got {other:?}"),
    }
}

fn system_wrong(e: SystemError) -> (&'static str, usize, usize) {
    wrong(SolveError::System(e))
}

#[test]
fn wrong_lengths_are_named_at_every_entry() {
    let a = read_json(FOUR_BAR, None).unwrap();
    let mut system = System::build(&a).unwrap();
    let compiled = system.compile().unwrap();
    let problem = Problem {
        system: &system,
        compiled: &compiled,
        assembly: &a,
        stages: None,
    };
    let state = system.initial_state();
    let params = system.initial_parameters();
    let (n, p) = (state.len(), params.len());
    assert_eq!(n, 21, "three free parts, seven unknowns each");
    let options = SolveOptions::default();

    let mut short = state[..n - 1].to_vec();
    let mut ps = params.clone();
    let e = solve(&problem, &mut short, &mut ps, options).unwrap_err();
    assert_eq!(wrong(e), ("state", n, n - 1));
    let e = e_to_string(solve(&problem, &mut short, &mut ps, options).unwrap_err());
    assert_eq!(e, format!("state: expected {n} values, got {}", n - 1));

    let mut long_params = params.clone();
    long_params.push(1.0);
    let mut s = state.clone();
    let e = solve(&problem, &mut s, &mut long_params, options).unwrap_err();
    assert_eq!(wrong(e), ("parameters", p, p + 1));

    let report = solve(&problem, &mut s, &mut ps, options).unwrap();
    let e = diagnose(&problem, &short, &params, &report, options).unwrap_err();
    assert_eq!(wrong(e), ("state", n, n - 1));

    let target = tenon_model::Pose {
        position: [0.0; 3],
        quaternion: [1.0, 0.0, 0.0, 0.0],
    };
    let e = drag(&problem, &mut short, &mut ps, 0, &target, options).unwrap_err();
    assert_eq!(wrong(e), ("state", n, n - 1));
    let e = drag(&problem, &mut s, &mut ps, 7, &target, options).unwrap_err();
    assert!(matches!(e, SolveError::UnknownPart { index: 7, parts: 3 }));

    let e = structure(&problem, &state, &params[..1], false).unwrap_err();
    assert_eq!(wrong(e), ("parameters", p, 1));

    let e = system.residuals(&compiled, &short, &params).unwrap_err();
    assert_eq!(system_wrong(e), ("state", n, n - 1));
    let e = system
        .tangent_jacobian(&compiled, &state, &params[..p - 1])
        .unwrap_err();
    assert_eq!(system_wrong(e), ("parameters", p, p - 1));
    let mut s2 = state.clone();
    let e = system.retract(&mut s2, &[0.0; 5]).unwrap_err();
    assert_eq!(system_wrong(e), ("step", 18, 5));
    let e = system
        .flipped(&compiled, &state, &short, &params)
        .unwrap_err();
    assert_eq!(system_wrong(e), ("state", n, n - 1));
    let mut ps2 = params.clone();
    let e = system
        .update_turns(&compiled, &short, &state, &mut ps2)
        .unwrap_err();
    assert_eq!(system_wrong(e), ("state", n, n - 1));
    // Nothing was touched by the refused calls.
    assert_eq!(s2, state);
    system.compile().unwrap();
}

fn e_to_string(e: SolveError) -> String {
    e.to_string()
}
