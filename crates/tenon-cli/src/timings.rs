//! `TENON_TIMINGS=1`: where the time of a command went, phase by phase (read, equations,
//! compile, solve, diagnose, report), printed on stderr at the end. For people timing
//! Tenon on their assemblies; the phases are the ones the progress line shows.

use std::sync::Mutex;
use std::time::Instant;

/// The environment variable that turns the timings on.
const VARIABLE: &str = "TENON_TIMINGS";

/// The phases entered so far, with when.
static MARKS: Mutex<Vec<(&'static str, Instant)>> = Mutex::new(Vec::new());

fn enabled() -> bool {
    std::env::var_os(VARIABLE).is_some_and(|v| !v.is_empty() && v != "0")
}

/// A phase begins (the one before ends).
pub(crate) fn mark(phase: &'static str) {
    if !enabled() {
        return;
    }
    if let Ok(mut marks) = MARKS.lock() {
        marks.push((phase, Instant::now()));
    }
}

/// Prints each phase's time on stderr (the last ends now).
pub(crate) fn report() {
    if !enabled() {
        return;
    }
    let Ok(marks) = MARKS.lock() else {
        return;
    };
    let end = Instant::now();
    let mut parts = Vec::new();
    for (k, (phase, at)) in marks.iter().enumerate() {
        let until = marks.get(k + 1).map_or(end, |m| m.1);
        let ms = until.duration_since(*at).as_secs_f64() * 1e3;
        parts.push(format!("{phase} {ms:.1} ms"));
    }
    eprintln!("timings: {}", parts.join(", "));
}
