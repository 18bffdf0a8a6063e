//! Builds and solves one assembly file (`.asmt` or JSON) from its text many times (for
//! profilers).
//!
//! `cargo run --release -p tenon --example corpus_loop -- FILE [N] [build|kinematics]`
//! (`build`: build only, no solve; `kinematics`: an `.asmt` file's kinematic run over the
//! times of its own TimeSeries, from the text, as the `kinematics` benchmark does)
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: corpus_loop FILE [N]");
        return ExitCode::FAILURE;
    };
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let mode = args.next();
    let build_only = mode.as_deref() == Some("build");
    let kinematics = mode.as_deref() == Some("kinematics");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A kinematic run's times, read once (outside the timed loop, as the benchmark).
    let settings = match kinematics.then(|| run_settings(&text)) {
        Some(Err(e)) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
        Some(Ok(s)) => Some(s),
        None => None,
    };
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
