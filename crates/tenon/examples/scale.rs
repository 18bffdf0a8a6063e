//! Times load, build and solve of the generated assemblies at a given size (a quick look;
//! the numbers that count come from `cargo bench -p tenon --bench solve`).
//!
//! `cargo run --release -p tenon --example scale -- ladder 1000 [OUT.json]`: kinds
//! `ladder`, `chain`, `driven_chain`, `rssr`, `four_bars` (`file PATH` reads one); `resolve N` re-solves 33 driven
//! four-bars N times. With `TENON_DIAGNOSE` set, also times the diagnosis; with
//! `TENON_WHOLE` set, solves every piece whole instead of in block-triangular stages;
//! `TENON_REPEAT=k` solves k times more first (to profile the solve).
#![allow(missing_docs)]

#[path = "../tests/common/generate.rs"]
mod generate;

use std::error::Error;
use std::time::Instant;
use tenon::Mechanism;

/// With `--features mimalloc`, this program allocates as the `tenon` command and the C
/// and Python front ends do; without, with the system's allocator (a Rust host's
/// default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn resolve(n: usize) -> Result<(), Box<dyn Error>> {
    let mut m = Mechanism::from_json(&generate::four_bars(33, true), None)?;
    m.solve()?;
    let t = Instant::now();
    let mut iterations = 0;
    for k in 0..n {
        m.set_parameter("crank", if k % 2 == 0 { 61.0 } else { 60.0 })?;
        let report = m.solve()?;
        if !report.converged {
            return Err("a re-solve did not converge".into());
        }
        iterations += report.clusters.iter().map(|c| c.iterations).sum::<usize>();
    }
    println!(
        "resolve x{n}: {:.3?} each, {:.1} iterations per cluster",
        t.elapsed() / n.max(1) as u32,
        iterations as f64 / (33 * n.max(1)) as f64
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map_or("ladder", |s| s.as_str());
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    if kind == "resolve" {
        return resolve(n);
    }
    let label = if kind == "file" {
        args.get(2).cloned().unwrap_or_default()
    } else {
        n.to_string()
    };
    let text = match kind {
        // `scale file PATH`: an assembly written earlier (e.g. by an older generator).
        "file" => {
            let path = args.get(2).ok_or("scale file PATH")?;
            std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?
        }
        "chain" => generate::chain(n),
        "driven_chain" => generate::driven_chain(n),
        "moving_chain" => generate::moving_chain(n),
        "rssr" => generate::rssr(n),
        "four_bars" => generate::four_bars(n, false),
        // Issue 16's scale cases, laid out straight from the origin (or 1e5 off it).
        "straight_chain" => generate::scale::chain(n, 100.0, [0.0, 0.0]),
        "far_chain" => generate::scale::chain(n, 100.0, [1e5, 1e5]),
        "straight_ladder" => generate::scale::ladder(n, 100.0, [0.0, 0.0]),
        "far_rssr" => generate::scale::rssr(n, [1e5, 1e5]),
        "mixed" => generate::scale::mixed(n, [0.0, 0.0]),
        "mixed_full_turns" => {
            generate::scale::chain_of(n, &[10_000.0, 0.1, 100.0, 0.1], [0.0, 0.0], false)
        }
        _ => generate::ladder(n),
    };
    if let Some(path) = args.get(3) {
        std::fs::write(path, &text).map_err(|e| format!("{path}: cannot write: {e}"))?;
    }
    let t = Instant::now();
    let m = Mechanism::from_json(&text, None)?;
    let build = t.elapsed();
    let mut solved = m.clone();
    // TENON_ITERATIONS=n and TENON_DENSE=n change those options (to look at a case).
    let number = |name: &str| std::env::var(name).ok().and_then(|s| s.parse().ok());
    let mut options = solved.options();
    if let Some(n) = number("TENON_ITERATIONS") {
        options.max_iterations = n;
    }
    if let Some(n) = number("TENON_DENSE") {
        options.dense_columns = n;
    }
    solved.set_options(options);
    if std::env::var_os("TENON_WHOLE").is_some() {
        solved.set_options(tenon::SolveOptions {
            order: tenon::SolveOrder::Whole,
            ..solved.options()
        });
    }
    // TENON_REPEAT=k solves k more times from the same start first (for profiling).
    let repeat: usize = std::env::var("TENON_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    for _ in 0..repeat {
        solved.clone().solve()?;
    }
    let t = Instant::now();
    let report = solved.solve()?.clone();
    let solve = t.elapsed();
    for c in report.clusters.iter().filter(|c| !c.converged) {
        println!(
            "  not converged: {} parts, residual {:.1e}, {} iterations",
            c.parts.len(),
            c.max_residual,
            c.iterations
        );
    }
    if std::env::var_os("TENON_DIAGNOSE").is_some() {
        let t = Instant::now();
        let d = solved.diagnose()?;
        println!("diagnose {:.2?}, dof {:?}", t.elapsed(), d.dof());
    }
    let iterations = report
        .clusters
        .iter()
        .map(|c| c.iterations)
        .max()
        .unwrap_or(0);
    println!(
        "{kind} {label}: build {build:.2?}, solve {solve:.2?}, converged {}, residual {:.1e}, clusters {}, max iterations {iterations}",
        report.converged,
        report.max_residual,
        report.clusters.len()
    );
    Ok(())
}
