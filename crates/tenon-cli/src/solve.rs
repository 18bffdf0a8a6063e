//! `tenon solve`: assemble, report (human or JSON), optionally write the solved file.

use std::path::Path;

use anyhow::anyhow;
use tenon::{Assembly, Mechanism, Phase, Report, Scalar};

use crate::render::{joint_name, messages, part_list, HUMAN_CLUSTERS};
use crate::{bad_input, output as out_file, Failure};

/// Applies `--set NAME=NUMBER` options (unknown names and bad numbers are usage errors;
/// a value the assembly cannot take, such as a radius of 0, is bad input naming the
/// element).
fn apply_sets(assembly: &mut Assembly, sets: &[String], file: &Path) -> Result<(), Failure> {
    for set in sets {
        let (name, value) = set
            .split_once('=')
            .ok_or_else(|| bad_input(anyhow!("--set {set}: expected NAME=NUMBER")))?;
        let name = name.trim();
        let value: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| bad_input(anyhow!("--set {set}: '{value}' is not a number")))?;
        if assembly.parameters().iter().all(|p| p.name != name) {
            return Err(bad_input(anyhow!(
                "--set {set}: {} has no parameter '{name}'",
                file.display()
            )));
        }
        assembly
            .set_parameter(name, Scalar::Number(value))
            .map_err(|e| {
                bad_input(anyhow!(
                    "--set {set}: {}: {}: {}",
                    file.display(),
                    e.place(),
                    e.message()
                ))
            })?;
    }
    Ok(())
}

/// Assemblies with at least this many parts get a progress line (on a terminal).
const LARGE_ASSEMBLY_PARTS: usize = 500;

/// A spinner with the current phase on stderr, for assemblies large enough to take a
/// while; hidden when stderr is not a terminal.
pub(crate) struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    pub(crate) fn new(parts: usize) -> Progress {
        if parts < LARGE_ASSEMBLY_PARTS {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Progress(Some(bar))
    }

    pub(crate) fn phase(&self, phase: Phase) {
        if let Some(bar) = &self.0 {
            let message = match phase {
                Phase::Building => "building the equations".to_string(),
                Phase::Compiling => "compiling".to_string(),
                Phase::Solving { clusters } => format!("solving {clusters} clusters"),
                Phase::Diagnosing => "diagnosing".to_string(),
                _ => "working".to_string(),
            };
            bar.set_message(message);
        }
    }

    pub(crate) fn done(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// Loads `file`, applies `--set`s and builds, with a progress line for large
/// assemblies (returned, for the solve to go on with).
pub(crate) fn load(file: &Path, sets: &[String]) -> Result<(Mechanism, Progress), Failure> {
    let mut assembly = crate::read(file)?;
    apply_sets(&mut assembly, sets, file)?;
    let name = file.display().to_string();
    let progress = Progress::new(assembly.part_count());
    let mechanism = Mechanism::new_with_progress(assembly, &mut |p| progress.phase(p))
        .map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    Ok((mechanism, progress))
}

pub(crate) fn run(
    file: &Path,
    sets: &[String],
    output: Option<&Path>,
    as_json: bool,
) -> Result<(), Failure> {
    let name = file.display().to_string();
    if let Some(out) = output {
        out_file::check(out, &[file])?;
    }
    let (mut mechanism, progress) = load(file, sets)?;
    let report = mechanism
        .solve_with_progress(&mut |p| progress.phase(p))
        .map_err(|e| Failure {
            status: 1,
            error: anyhow!("{name}: {e}"),
        })?;
    // The JSON report names redundant and conflicting joints (the spec's solve report
    // has them) where the analysis costs about what the solve did: up to
    // NAMED_JOINTS_PARTS parts; beyond, `tenon check` names them.
    let diagnosis = if as_json && mechanism.model().part_count() <= tenon_report::NAMED_JOINTS_PARTS
    {
        Some(mechanism.diagnose().map_err(|e| Failure {
            status: 1,
            error: anyhow!("{name}: {e}"),
        })?)
    } else {
        None
    };
    progress.done();
    let shown = mechanism.assembly();
    let text = if as_json {
        let mut t = serde_json::to_string_pretty(&tenon_report::solve_json(
            &shown,
            &report,
            diagnosis.as_ref(),
        ))
        .unwrap_or_default();
        t.push('\n');
        t
    } else {
        human(&shown, &report, &name)
    };
    crate::emit(&text);
    if let Some(out) = output {
        if report.converged {
            out_file::write(out, tenon::write_json(&shown).as_bytes()).map_err(bad_input)?;
        }
    }
    if report.converged {
        Ok(())
    } else {
        Err(Failure {
            status: 1,
            error: anyhow!(
                "{}: not solved (largest residual {:.3e})",
                name,
                report.max_residual
            ),
        })
    }
}

fn human(assembly: &Assembly, report: &Report, name: &str) -> String {
    let mut out = String::new();
    let status = if report.converged {
        "solved"
    } else {
        "NOT solved"
    };
    out.push_str(&format!(
        "{name}: {status}; largest residual {:.1e}; {}\n",
        report.max_residual,
        report.dof.map_or(
            "degrees of freedom not counted (a cluster too large for the rank)".to_string(),
            |d| format!("{d} degree(s) of freedom left")
        )
    ));
    // Failed clusters first, then the rest in file order, up to a screenful.
    let mut order: Vec<usize> = (0..report.clusters.len()).collect();
    order.sort_by_key(|&k| report.clusters[k].converged);
    for &k in order.iter().take(HUMAN_CLUSTERS) {
        let c = &report.clusters[k];
        out.push_str(&format!(
            "  cluster {}: {} ({}); {} iteration(s), {} degree(s) of freedom\n",
            k + 1,
            part_list(assembly, &c.parts),
            c.status.name().replace('_', "-"),
            c.iterations,
            c.dof.map_or("uncounted".to_string(), |d| d.to_string())
        ));
    }
    if report.clusters.len() > HUMAN_CLUSTERS {
        let rest = &order[HUMAN_CLUSTERS..];
        let failed = rest
            .iter()
            .filter(|&&k| !report.clusters[k].converged)
            .count();
        out.push_str(&format!(
            "  ... and {} more clusters ({} of them failed; --json lists them all)\n",
            rest.len(),
            failed
        ));
    }
    for u in report.unsatisfied.iter().take(10) {
        out.push_str(&format!(
            "  joint '{}' does not hold: off by {:.3e}\n",
            joint_name(assembly, u.constraint.joint()),
            u.residual
        ));
    }
    for m in messages(assembly, report) {
        out.push_str(&format!("  note: {m}\n"));
    }
    if !report.converged || report.dof.is_none() {
        out.push_str(
            "  `tenon check` names redundant and conflicting joints and the motions left\n",
        );
    }
    out
}
