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
        crate::timings::mark(match phase {
            Phase::Building => "equations",
            Phase::Compiling => "compile",
            Phase::Solving { .. } => "solve",
            Phase::Diagnosing => "diagnose",
            _ => "other",
        });
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

/// What the command line gives a solve or check besides the file.
pub(crate) struct Given<'a> {
    /// `--set NAME=NUMBER`s.
    pub(crate) sets: &'a [String],
    /// `--tolerance TOL` (model length units).
    pub(crate) tolerance: Option<f64>,
}

/// Loads `file`, applies `--set`s and builds, with a progress line for large
/// assemblies (returned, for the solve to go on with); `--tolerance` replaces the
/// file's geometric tolerance for this solve (the assembly, and a file written from it,
/// keep their own).
pub(crate) fn load(file: &Path, given: &Given<'_>) -> Result<(Mechanism, Progress), Failure> {
    crate::timings::mark("read");
    let mut assembly = crate::read(file)?;
    apply_sets(&mut assembly, given.sets, file)?;
    let name = file.display().to_string();
    let progress = Progress::new(assembly.part_count());
    let mut mechanism = Mechanism::new_with_progress(assembly, &mut |p| progress.phase(p))
        .map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    if let Some(t) = given.tolerance {
        mechanism
            .set_tolerance(Some(t))
            .map_err(|e| bad_input(anyhow!("--tolerance {t}: {e}")))?;
    }
    // The command's report counts every cluster's degrees of freedom (a host
    // re-solving through the API counts large ones only when asked).
    mechanism.set_options(tenon::SolveOptions {
        rank_columns: usize::MAX,
        ..mechanism.options()
    });
    Ok((mechanism, progress))
}

/// What `tenon solve` computes and how it prints it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Show {
    /// `--json`.
    pub(crate) json: bool,
    /// `--equilibrium`: the static equilibrium under the file's forces.
    pub(crate) equilibrium: bool,
}

pub(crate) fn run(
    file: &Path,
    given: &Given<'_>,
    output: Option<&Path>,
    show: Show,
) -> Result<(), Failure> {
    let as_json = show.json;
    let name = file.display().to_string();
    if let Some(out) = output {
        out_file::check(out, &[file])?;
    }
    let (mut mechanism, progress) = load(file, given)?;
    let report = if show.equilibrium {
        mechanism.equilibrium()
    } else {
        mechanism.solve_with_progress(&mut |p| progress.phase(p))
    }
    .map_err(|e| Failure {
        status: 1,
        error: anyhow!("{name}: {e}"),
    })?;
    // The JSON report names redundant and conflicting joints (the spec's solve report
    // has them) where the analysis costs about what the solve did: up to
    // NAMED_JOINTS_PARTS parts; beyond, `tenon check` names them.
    // (Not after an equilibrium: the diagnosis solves again, without the forces.)
    let diagnosis = if as_json
        && !show.equilibrium
        && mechanism.model().part_count() <= tenon_report::NAMED_JOINTS_PARTS
    {
        Some(mechanism.diagnose().map_err(|e| Failure {
            status: 1,
            error: anyhow!("{name}: {e}"),
        })?)
    } else {
        None
    };
    progress.done();
    crate::timings::mark("report");
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

/// The tolerances a report was judged by, as a line of the human report.
pub(crate) fn tolerance_line(report: &Report) -> String {
    let t = report.tolerances;
    let mut line = format!(
        "  tolerance: lengths {:.1e} (the model reaches {:.1} from the origin), angles {:.1e} rad",
        t.length, t.reach, t.angle
    );
    if t.geometric > t.length {
        line.push_str(&format!(
            "; repeated joints placed when they disagree by less than {}",
            t.geometric
        ));
    }
    line.push('\n');
    line
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
    out.push_str(&tolerance_line(report));
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
    if report.clusters.iter().any(|c| c.placed) {
        out.push_str(&format!(
            "  note: repeated joints disagree by less than the tolerance ({}): placed by least squares; `tenon check` gives each disagreement\n",
            report.tolerances.geometric
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
