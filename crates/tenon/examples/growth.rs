//! How the time from text to a built and to a solved assembly grows with its size: two
//! files of one layout (say 1,000 and 10,000 parts), timed in turns in one process.
//!
//! `cargo run --release -p tenon --example growth -- SMALL LARGE [ROUNDS] [REPEATS] [cold]`
//!
//! Each round reads and builds, then solves, the small file `REPEATS` times (10 by
//! default) and the large one once, each after one untimed run of the same file (so
//! both sizes are timed warm, as a host solving the same assembly again sees them: a
//! run right after the other size's finds its memory and caches cold, which costs the
//! large file more); rounds alternate, so a machine whose speed drifts (a shared VM)
//! slows both sizes alike. Per phase it prints the median over the rounds of each
//! size's time per run and their ratio, and the median and spread of each round's own
//! ratio. (Separate processes for each size had put minutes of drift between the two
//! figures.) `cold` as a fifth argument times the first run after the other size too.
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// With `--features mimalloc`, this program allocates as the `tenon` command and the C
/// and Python front ends do; without, with the system's allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(small), Some(large)) = (args.first(), args.get(1)) else {
        eprintln!("usage: growth SMALL LARGE [ROUNDS] [REPEATS] [cold]");
        return ExitCode::FAILURE;
    };
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let repeats: u32 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
    let cold = args.get(4).is_some_and(|a| a == "cold");
    let texts = match (
        std::fs::read_to_string(small),
        std::fs::read_to_string(large),
    ) {
        (Ok(a), Ok(b)) => [a, b],
        (Err(e), _) => {
            eprintln!("{small}: {e}");
            return ExitCode::FAILURE;
        }
        (_, Err(e)) => {
            eprintln!("{large}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let paths = [small.as_str(), large.as_str()];
    // Per size, per round: (build, solve) time per run.
    let mut times: [Vec<(Duration, Duration)>; 2] = [Vec::new(), Vec::new()];
    // One unmeasured round first (the process's first allocations, cold caches).
    for round in 0..=rounds {
        for size in 0..2 {
            let runs = if size == 0 { repeats } else { 1 };
            let (mut build, mut solve) = (Duration::ZERO, Duration::ZERO);
            for run in 0..runs + u32::from(!cold) {
                match time_once(paths[size], &texts[size]) {
                    Ok(_) if run == 0 && !cold => {}
                    Ok((b, s)) => {
                        build += b;
                        solve += s;
                    }
                    Err(e) => {
                        eprintln!("{}: {e}", paths[size]);
                        return ExitCode::FAILURE;
                    }
                }
            }
            if round > 0 {
                times[size].push((build / runs, solve / runs));
            }
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{} vs {}: {rounds} rounds, {}",
        paths[1],
        paths[0],
        if cold { "cold" } else { "warm" }
    );
    for (phase, pick) in [
        (
            "read + build",
            (|t: &(Duration, Duration)| t.0) as fn(&_) -> Duration,
        ),
        ("solve", |t| t.1),
    ] {
        let [a, b] = [&times[0], &times[1]].map(|v| median(v.iter().map(pick).map(ms).collect()));
        let per_round: Vec<f64> = times[0]
            .iter()
            .zip(&times[1])
            .map(|(s, l)| ms(pick(l)) / ms(pick(s)).max(f64::MIN_POSITIVE))
            .collect();
        let (lo, hi) = per_round
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        println!(
            "  {phase}: {a:.3} ms -> {b:.3} ms, {:.2}x (median of the rounds' own ratios {:.2}x, {lo:.2}x-{hi:.2}x)",
            b / a,
            median(per_round)
        );
    }
    ExitCode::SUCCESS
}

/// One read and build, and one solve, of the file: how long each took.
fn time_once(path: &str, text: &str) -> Result<(Duration, Duration), String> {
    let t0 = Instant::now();
    let built = if path.ends_with(".json") {
        tenon::Mechanism::from_json(text, None)
    } else {
        tenon::Mechanism::from_asmt(text, None)
    };
    let mut m = built.map_err(|e| e.to_string())?;
    let t1 = Instant::now();
    let report = m.solve().map_err(|e| e.to_string())?;
    let t2 = Instant::now();
    if !report.converged {
        return Err("not solved".into());
    }
    drop(m);
    Ok((t1 - t0, t2 - t1))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
