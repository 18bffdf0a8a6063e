//! What the command reads and writes: an output that is the input (by any name), a
//! device, a directory or a symbolic link is refused before any work, with exit 2 and
//! nothing changed; `-` is standard output. An input that is not a regular file, or is
//! larger than the limit, is refused with a message naming it, never read without end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tenon(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tenon"))
        .args(args)
        .output()
        .unwrap()
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

fn refused(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains(needle), "{stderr}");
    assert!(
        stderr.contains("nothing written") || needle.contains("regular"),
        "{stderr}"
    );
}

#[test]
fn an_output_that_is_the_input_is_refused_and_the_input_kept() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("four-bar.json");
    std::fs::copy(fixture("four-bar.json"), &json).unwrap();
    let asmt = dir.path().join("crank-slider.asmt");
    std::fs::copy(fixture("asmt/crank-slider.asmt"), &asmt).unwrap();
    let before_json = std::fs::read(&json).unwrap();
    let before_asmt = std::fs::read(&asmt).unwrap();

    let solve = Path::new("solve");
    let o = tenon(&[solve, &json, Path::new("-o"), &json]);
    refused(&o, "it is the input");
    let convert = Path::new("convert");
    let o = tenon(&[convert, &asmt, &asmt]);
    refused(&o, "it is the input");
    // Through another name: a relative path with "..", a hard link, a symbolic link.
    let dotted = dir.path().join("sub/../crank-slider.asmt");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let o = tenon(&[convert, &asmt, &dotted]);
    refused(&o, "it is the input");
    let hard = dir.path().join("hard.asmt");
    std::fs::hard_link(&asmt, &hard).unwrap();
    let o = tenon(&[convert, &hard, &asmt]);
    refused(&o, "it is the input");
    #[cfg(unix)]
    {
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&json, &link).unwrap();
        let o = tenon(&[solve, &json, Path::new("-o"), &link]);
        refused(&o, "it is the input");
    }
    assert_eq!(std::fs::read(&json).unwrap(), before_json);
    assert_eq!(std::fs::read(&asmt).unwrap(), before_asmt);
}

#[test]
fn devices_directories_and_links_are_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let convert = Path::new("convert");
    let input = fixture("four-bar.json");
    #[cfg(unix)]
    {
        let o = tenon(&[convert, &input, Path::new("/dev/null")]);
        refused(&o, "not a regular file");
        let kept = std::fs::symlink_metadata("/dev/null").unwrap();
        assert!(!kept.file_type().is_file(), "/dev/null is still a device");
        let other = dir.path().join("other.json");
        std::fs::write(&other, "keep").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&other, &link).unwrap();
        let o = tenon(&[convert, &input, &link]);
        refused(&o, "symbolic link");
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "keep");
    }
    let o = tenon(&[convert, &input, dir.path()]);
    refused(&o, "it is a directory");
}

#[test]
fn a_dash_writes_to_standard_output() {
    let o = tenon(&[
        Path::new("convert"),
        &fixture("asmt/crank-slider.asmt"),
        Path::new("-"),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(tenon::read_json(&text, None).is_ok());
    assert!(o.stderr.is_empty(), "nothing said on stderr when piping");
}

#[test]
fn inputs_that_are_not_regular_files_or_too_large_are_refused() {
    #[cfg(unix)]
    {
        let o = tenon(&[Path::new("solve"), Path::new("/dev/zero")]);
        assert_eq!(o.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains("/dev/zero") && stderr.contains("not a regular file"),
            "{stderr}"
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_tenon"))
        .arg("solve")
        .arg(fixture("four-bar.json"))
        .env("TENON_MAX_INPUT_BYTES", "1000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("four-bar.json")
            && stderr.contains("larger than")
            && stderr.contains("TENON_MAX_INPUT_BYTES"),
        "{stderr}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_tenon"))
        .arg("solve")
        .arg(fixture("four-bar.json"))
        .env("TENON_MAX_INPUT_BYTES", "100000000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
}
