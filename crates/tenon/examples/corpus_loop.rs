//! Builds and solves one assembly file (`.asmt` or JSON) from its text many times (for
//! profilers).
//!
//! `cargo run --release -p tenon --example corpus_loop -- FILE [N] [build]` (`build`:
//! build only, no solve)
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: corpus_loop FILE [N]");
        return ExitCode::FAILURE;
    };
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let build_only = args.next().as_deref() == Some("build");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
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
