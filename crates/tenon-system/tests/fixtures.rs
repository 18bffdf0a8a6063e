//! The bundled fixtures: each loads, writes back unchanged, builds, and is assembled at
//! load (every joint holds); together they use every joint type.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../tenon-model/tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;

use tenon_model::{read_json, write_json, JointType};
use tenon_system::System;

#[test]
fn every_fixture_is_assembled_at_load_and_round_trips() {
    let files = common::files("../../fixtures", "json");
    assert!(files.len() >= 15, "{} fixtures", files.len());
    let mut types = BTreeSet::new();
    for (name, text) in &files {
        let a = read_json(text, Some(name)).unwrap_or_else(|e| panic!("{e}"));
        let again = read_json(&write_json(&a), Some(name)).unwrap();
        assert_eq!(write_json(&again), write_json(&a), "{name}: round trip");
        for (_, j) in a.joints() {
            types.insert(j.joint_type.name());
        }
        let mut s = System::build(&a).unwrap_or_else(|e| panic!("{name}: {e}"));
        let c = s.compile().unwrap();
        let r = s
            .residuals(&c, &s.initial_state(), &s.initial_parameters())
            .unwrap();
        for (e, v) in s.equations().iter().zip(&r) {
            assert!(v.abs() < 1e-9, "{name}: {:?} residual {v} at load", e.owner);
        }
    }
    let all: BTreeSet<&str> = JointType::ALL.iter().map(|t| t.name()).collect();
    let missing: Vec<_> = all.difference(&types).collect();
    assert!(
        missing.is_empty(),
        "joint types no fixture uses: {missing:?}"
    );
}
