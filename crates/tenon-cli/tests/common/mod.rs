//! What the command-line tests share: the binary and the fixtures' paths.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The `tenon` binary built for these tests.
pub fn tenon() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tenon"))
}

/// A bundled fixture's path.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}
