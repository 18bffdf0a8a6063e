//! Fixture systems for the unit tests of the tangent Jacobian's fold and products: each
//! built and compiled, with its parameters, its file pose and a pose turned far from it
//! (quaternions far from identity).
#![allow(clippy::unwrap_used)]

use crate::build::System;
use crate::state::Compiled;

/// Fixtures with every kind of joint between them.
pub(crate) const EVERY_KIND: &[&str] = &[
    "four-bar.json",
    "robot-arm.json",
    "screw-jack.json",
    "cam-follower.json",
    "universal-joint.json",
    "planetary.json",
    "slider-crank.json",
    "belt-drive.json",
    "gear-pair.json",
    "rack-and-pinion.json",
    "pin-in-slot.json",
    "roller-cam.json",
    "cv-joint.json",
    "compound-joints.json",
    "coupled-carriage.json",
    "parallel-gripper.json",
    "table-mates.json",
    "rssr-four-bar.json",
];

/// A fixture's system and what the tests evaluate it at.
pub(crate) struct FixtureSystem {
    pub(crate) system: System,
    pub(crate) compiled: Compiled,
    pub(crate) params: Vec<f64>,
    /// The file's pose, and a pose turned away from it.
    pub(crate) poses: [Vec<f64>; 2],
}

/// The fixtures `names` (files under `fixtures/`), built.
pub(crate) fn fixture_systems(names: &[&str]) -> Vec<FixtureSystem> {
    names
        .iter()
        .map(|name| {
            let path = format!("{}/../../fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap();
            let assembly = tenon_model::read_json(&text, None).unwrap();
            let mut system = System::build(&assembly).unwrap();
            let compiled = system.compile().unwrap();
            let params = system.initial_parameters();
            let mut turned = system.initial_state();
            let step: Vec<f64> = (0..system.tangent_dimension())
                .map(|k| 0.3 + 0.1 * (k % 7) as f64)
                .collect();
            system.retract(&mut turned, &step).unwrap();
            FixtureSystem {
                poses: [system.initial_state(), turned],
                system,
                compiled,
                params,
            }
        })
        .collect()
}
