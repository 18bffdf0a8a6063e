//! Builds and solves one assembly file (`.asmt` or JSON) from its text many times (for
//! profilers).
//!
//! `cargo run --release -p tenon --example corpus_loop -- FILE [N] [read|build|kinematics|phases] [END]`
//! (`read`: the file's text read into an assembly only; `build`: build only, no solve; `kinematics`: an `.asmt` file's kinematic run over the
//! times of its own TimeSeries, from the text, as the `kinematics` benchmark does (a JSON
//! file's from 0 to `END`, 1 by default, at steps of 0.001, as the benchmark's moving
//! chains);
//! `phases`: read, build and solve timed apart, microseconds per run each, the mean and
//! the fastest run's (the fastest is what a noisy machine's growth figures compare))
use std::process::ExitCode;

/// With `--features mimalloc`, this program allocates as the `tenon` command and the C
/// and Python front ends do; without, with the system's allocator (a Rust host's
/// default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: corpus_loop FILE [N]");
        return ExitCode::FAILURE;
    };
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let mode = args.next();
    let end: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let build_only = mode.as_deref() == Some("build");
    let kinematics = mode.as_deref() == Some("kinematics");
    let phases = mode.as_deref() == Some("phases");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A kinematic run's times, read once (outside the timed loop, as the benchmark).
    let settings = match kinematics.then(|| {
        if path.ends_with(".json") {
            tenon::RunSettings::new(0.0, end, 0.001, None).map_err(|e| e.to_string())
        } else {
            run_settings(&text)
        }
    }) {
        Some(Err(e)) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
        Some(Ok(s)) => Some(s),
        None => None,
    };
    if phases {
        return time_phases(&path, &text, n);
    }
    if mode.as_deref() == Some("read") {
        return time_reading(&path, &text, n);
    }
    let start = std::time::Instant::now();
    let mut converged = 0;
    for _ in 0..n {
        let built = if path.ends_with(".json") {
            tenon::Mechanism::from_json(&text, None)
        } else {
            tenon::Mechanism::from_asmt(&text, None)
        };
        let mut m = match built {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if build_only {
            continue;
        }
        if let Some(settings) = settings {
            match m.kinematics(settings) {
                Ok(run) => converged += usize::from(run.completed),
                Err(e) => {
                    eprintln!("{path}: {e}");
                    return ExitCode::FAILURE;
                }
            }
            continue;
        }
        if m.solve().is_ok_and(|r| r.converged) {
            converged += 1;
        }
    }
    let each = start.elapsed().as_secs_f64() / n as f64;
    println!(
        "{path}: {n} runs, {converged} converged, {:.1} us each",
        each * 1e6
    );
    ExitCode::SUCCESS
}

/// Reading, building and solving timed apart (the sum is a little over a whole run's
/// time: the clock is read between phases).
fn time_phases(path: &str, text: &str, n: usize) -> ExitCode {
    use std::time::{Duration, Instant};
    let mut spent = [Duration::ZERO; 4];
    let mut fastest = [Duration::MAX; 4];
    let mut converged = 0;
    for _ in 0..n {
        let t0 = Instant::now();
        let read = read(path, text);
        let t1 = Instant::now();
        let built = read
            .map_err(tenon::Error::from)
            .and_then(tenon::Mechanism::new);
        let t2 = Instant::now();
        let mut m = match built {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if m.solve().is_ok_and(|r| r.converged) {
            converged += 1;
        }
        let t3 = Instant::now();
        drop(m);
        let t4 = Instant::now();
        let took = [t1 - t0, t2 - t1, t3 - t2, t4 - t3];
        for ((s, f), d) in spent.iter_mut().zip(&mut fastest).zip(took) {
            *s += d;
            *f = (*f).min(d);
        }
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    let fast = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{path}: {n} runs, {converged} converged; us each: read {:.1}, build {:.1}, solve {:.1}, drop {:.1}; fastest: read {:.1}, build {:.1}, solve {:.1}",
        us(spent[0]),
        us(spent[1]),
        us(spent[2]),
        us(spent[3]),
        fast(fastest[0]),
        fast(fastest[1]),
        fast(fastest[2])
    );
    ExitCode::SUCCESS
}

/// The file's text read into an assembly, by the reader its extension names.
fn read(path: &str, text: &str) -> Result<tenon::Assembly, tenon::ModelError> {
    if path.ends_with(".json") {
        tenon::read_json(text, None)
    } else {
        tenon::read_asmt(text, None)
    }
}

/// The reading alone: text to assembly, `n` times.
fn time_reading(path: &str, text: &str, n: usize) -> ExitCode {
    let start = std::time::Instant::now();
    for _ in 0..n {
        let read = read(path, text);
        if let Err(e) = read {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    let each = start.elapsed().as_secs_f64() / n as f64;
    println!("{path}: {n} reads, {:.1} us each", each * 1e6);
    ExitCode::SUCCESS
}

/// The settings of a kinematic run over the file's own TimeSeries times.
fn run_settings(text: &str) -> Result<tenon::RunSettings, String> {
    let series = tenon::read_asmt_time_series(text)
        .map_err(|e| e.to_string())?
        .ok_or("the file has no TimeSeries")?;
    let times = &series.times;
    let (Some(&first), Some(&second), Some(&last)) = (times.first(), times.get(1), times.last())
    else {
        return Err("the TimeSeries has fewer than two times".to_string());
    };
    tenon::RunSettings::new(first, last, second - first, None).map_err(|e| e.to_string())
}
