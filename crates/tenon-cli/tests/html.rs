//! `--html` and `--plot` end to end: pages written whole (even for a failed check), the
//! input never overwritten, `-` printing the page instead of the report. The pages'
//! behaviour in a browser is tested by `tools/browser/view-test.mjs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fixture, tenon};

#[test]
fn check_writes_the_page_even_when_joints_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bent.html");
    let file = fixture("conflicting/bent-four-bar.json");
    let out = tenon()
        .args([
            "check",
            file.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // The report still goes to stdout.
    assert!(String::from_utf8_lossy(&out.stdout).contains("cannot hold together"));
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>"));
    assert!(text.contains("\"status\":\"conflicting\""));

    // `-`: the page on stdout, no report.
    let out = tenon()
        .args(["check", file.to_str().unwrap(), "--html", "-"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("<!DOCTYPE html>"));
    assert!(!stdout.contains("cluster 1 ("));
}

#[test]
fn a_page_never_replaces_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("four-bar.json");
    std::fs::copy(fixture("four-bar.json"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    for args in [
        vec![
            "check",
            input.to_str().unwrap(),
            "--html",
            input.to_str().unwrap(),
        ],
        vec![
            "kinematics",
            input.to_str().unwrap(),
            "--plot",
            input.to_str().unwrap(),
        ],
    ] {
        let out = tenon().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("it is the input"));
    }
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

#[test]
fn runs_write_their_page_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let (page, plot) = (dir.path().join("run.html"), dir.path().join("run.svg"));
    let out = tenon()
        .args([
            "simulate",
            fixture("dynamics/pendulum-swing.json").to_str().unwrap(),
            "--end",
            "0.2",
            "--html",
            page.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("frame(s)"));
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.contains("\"kind\":\"dynamics\""));
    let svg = std::fs::read_to_string(&plot).unwrap();
    for title in [
        "energy",
        "joint reaction forces (magnitude)",
        "largest residual",
    ] {
        assert!(svg.contains(title), "{title}");
    }
}
