//! `tenon solve`: assemble, report (human or JSON), optionally write the solved file.

use std::path::Path;

use anyhow::anyhow;
use serde_json::{json, Value};
use tenon_model::{Assembly, Parameter, PartKey, Placement, Scalar};
use tenon_solve::{solve, Problem, SolveOptions, SolveReport};
use tenon_system::{Grounding, Owner, System};

use crate::{bad_input, load, write_atomically, Failure};

/// Applies `--set NAME=NUMBER` options (unknown names and bad numbers are usage errors).
fn apply_sets(assembly: &mut Assembly, sets: &[String], file: &Path) -> Result<(), Failure> {
    if sets.is_empty() {
        return Ok(());
    }
    let mut parameters: Vec<Parameter> = assembly.parameters().to_vec();
    for set in sets {
        let (name, value) = set
            .split_once('=')
            .ok_or_else(|| bad_input(anyhow!("--set {set}: expected NAME=NUMBER")))?;
        let value: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| bad_input(anyhow!("--set {set}: '{value}' is not a number")))?;
        let p = parameters
            .iter_mut()
            .find(|p| p.name == name.trim())
            .ok_or_else(|| {
                bad_input(anyhow!(
                    "--set {set}: {} has no parameter '{name}'",
                    file.display()
                ))
            })?;
        p.value = Scalar::Number(value);
    }
    assembly.set_parameters(parameters);
    assembly
        .parameter_values()
        .map_err(|e| bad_input(anyhow!("{}: {e}", file.display())))?;
    Ok(())
}

/// An assembly loaded, built and solved (or not).
pub(crate) struct Solved {
    pub(crate) name: String,
    pub(crate) assembly: Assembly,
    pub(crate) system: System,
    pub(crate) compiled: tenon_system::Compiled,
    pub(crate) state: Vec<f64>,
    pub(crate) params: Vec<f64>,
    pub(crate) report: SolveReport,
}

impl Solved {
    pub(crate) fn problem(&self) -> Problem<'_> {
        Problem {
            system: &self.system,
            compiled: &self.compiled,
            assembly: &self.assembly,
        }
    }
}

/// Loads `file`, applies `--set`s, builds, compiles and solves (with a progress line for
/// large assemblies).
pub(crate) fn load_and_solve(file: &Path, sets: &[String]) -> Result<Solved, Failure> {
    let mut assembly = load(file)?;
    apply_sets(&mut assembly, sets, file)?;
    let name = file.display().to_string();
    let progress = Progress::new(assembly.parts().count());
    progress.say("building the equations");
    let mut system = System::build(&assembly).map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    progress.say("compiling");
    let mut compiled = system
        .compile()
        .map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    tenon_solve::prepare(&mut system, &mut compiled, SolveOptions::default())
        .map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    let mut state = system.initial_state();
    let mut params = system.initial_parameters();
    progress.say(&format!("solving {} clusters", compiled.clusters().len()));
    let report = solve(
        &Problem {
            system: &system,
            compiled: &compiled,
            assembly: &assembly,
        },
        &mut state,
        &mut params,
        SolveOptions::default(),
    )
    .map_err(|e| Failure {
        status: 1,
        error: anyhow!("{name}: {e}"),
    })?;
    progress.done();
    Ok(Solved {
        name,
        assembly,
        system,
        compiled,
        state,
        params,
        report,
    })
}

pub(crate) fn run(
    file: &Path,
    sets: &[String],
    output: Option<&Path>,
    as_json: bool,
) -> Result<(), Failure> {
    let Solved {
        name,
        assembly,
        system,
        state,
        report,
        ..
    } = load_and_solve(file, sets)?;
    let solved = solved_assembly(&assembly, &system, &state);
    let text = if as_json {
        let mut t = serde_json::to_string_pretty(&report_json(&solved, &system, &report))
            .unwrap_or_default();
        t.push('\n');
        t
    } else {
        human(&solved, &system, &report, &name)
    };
    crate::emit(&text);
    if let Some(out) = output {
        if report.converged {
            write_atomically(out, tenon_model::write_json(&solved).as_bytes())
                .map_err(bad_input)?;
        }
    }
    if report.converged {
        Ok(())
    } else {
        Err(Failure {
            status: 1,
            error: anyhow!(
                "{name}: not solved (largest residual {:.3e})",
                report.max_residual
            ),
        })
    }
}

/// The assembly with free parts at their solved poses.
pub(crate) fn solved_assembly(assembly: &Assembly, system: &System, state: &[f64]) -> Assembly {
    let mut out = assembly.clone();
    for fp in system.free_parts() {
        let v: Vec<f64> = fp
            .vars
            .iter()
            .map(|x| state.get(x.index()).copied().unwrap_or(0.0))
            .collect();
        out.set_part_placement(
            fp.part,
            Placement::from_numbers([v[0], v[1], v[2]], [v[3], v[4], v[5], v[6]]),
        );
    }
    out
}

/// The human report lists at most this many clusters, and this many parts of each.
pub(crate) const HUMAN_CLUSTERS: usize = 20;
pub(crate) const HUMAN_PARTS: usize = 8;
/// Sentences of one kind (redundant joints, conflicts, motions) shown per cluster.
pub(crate) const HUMAN_LINES: usize = 12;

/// Up to [`HUMAN_PARTS`] part names, then how many more.
pub(crate) fn part_list(assembly: &Assembly, parts: &[PartKey]) -> String {
    let mut names: Vec<String> = parts
        .iter()
        .take(HUMAN_PARTS)
        .filter_map(|p| assembly.part(*p).map(|p| p.id.clone()))
        .collect();
    if parts.len() > HUMAN_PARTS {
        names.push(format!("and {} more parts", parts.len() - HUMAN_PARTS));
    }
    names.join(", ")
}

/// Assemblies with at least this many parts get a progress line (on a terminal).
const LARGE_ASSEMBLY_PARTS: usize = 500;

/// A spinner with the current phase on stderr, for assemblies large enough to take a
/// while; hidden when stderr is not a terminal.
struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    fn new(parts: usize) -> Progress {
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

    fn say(&self, message: &str) {
        if let Some(bar) = &self.0 {
            bar.set_message(message.to_string());
        }
    }

    fn done(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

pub(crate) fn owner_joint(assembly: &Assembly, system: &System, equation: usize) -> String {
    match system.equations().get(equation).map(|e| e.owner) {
        Some(Owner::Joint(j)) | Some(Owner::Drive(j, _)) => {
            assembly.joint(j).map_or(String::new(), |j| j.id.clone())
        }
        Some(Owner::Motion(m)) => format!("motion {m}"),
        None => String::new(),
    }
}

fn cluster_status(c: &tenon_solve::ClusterReport) -> &'static str {
    match (c.converged, c.rank, c.dof) {
        (false, _, _) => "failed",
        // Large clusters are solved sparse, without a rank (see docs/format-notes.md).
        (true, None, _) | (true, _, None) => "not_analysed",
        (true, Some(rank), _) if rank < c.equations.len() => "over_constrained",
        (true, _, Some(0)) => "well_constrained",
        (true, _, Some(_)) => "under_constrained",
    }
}

/// Total degrees of freedom, when every cluster's is known.
fn total_dof(report: &SolveReport) -> Option<usize> {
    report.clusters.iter().map(|c| c.dof).sum()
}

pub(crate) fn pose_json(assembly: &Assembly) -> Value {
    let mut parts = serde_json::Map::new();
    for (_, p) in assembly.parts() {
        let values = assembly.parameter_values().ok();
        let pose = values.and_then(|v| p.placement.numbers(&v, assembly.units()));
        if let Some(pose) = pose {
            parts.insert(
                p.id.clone(),
                json!({ "position": pose.position, "quaternion": pose.quaternion }),
            );
        }
    }
    Value::Object(parts)
}

fn coordinate_name(c: tenon_model::Coordinate) -> &'static str {
    match c {
        tenon_model::Coordinate::Angle => "angle",
        tenon_model::Coordinate::Distance => "distance",
    }
}

fn side_name(side: tenon_solve::LimitSide) -> &'static str {
    match side {
        tenon_solve::LimitSide::Min => "min",
        tenon_solve::LimitSide::Max => "max",
    }
}

pub(crate) fn messages(system: &System, assembly: &Assembly, report: &SolveReport) -> Vec<String> {
    let mut m = Vec::new();
    for l in report.clusters.iter().flat_map(|c| &c.limits) {
        let id = assembly.joint(l.joint).map_or("?", |j| j.id.as_str());
        let bound = match l.side {
            tenon_solve::LimitSide::Min => "lower",
            tenon_solve::LimitSide::Max => "upper",
        };
        let what = coordinate_name(l.coordinate);
        if l.excess > 0.0 {
            let amount = match l.coordinate {
                tenon_model::Coordinate::Angle => format!("{:.4} degrees", l.excess.to_degrees()),
                tenon_model::Coordinate::Distance => format!("{:.4e}", l.excess),
            };
            m.push(format!(
                "joint '{id}' cannot respect its {bound} {what} limit: beyond it by {amount}"
            ));
        } else {
            m.push(format!("joint '{id}' is held at its {bound} {what} limit"));
        }
    }
    for k in &report.flipped {
        let id = assembly.joint(*k).map_or("?", |j| j.id.as_str());
        m.push(format!(
            "joint '{id}' ended on its mirror branch (an axis reversed from the starting pose)"
        ));
    }
    if let Grounding::FirstPart(k) = system.grounding() {
        let id = assembly.part(k).map_or("?", |p| p.id.as_str());
        m.push(format!(
            "no part is grounded: solved relative to the first part, '{id}'"
        ));
    }
    m
}

fn report_json(assembly: &Assembly, system: &System, report: &SolveReport) -> Value {
    let clusters: Vec<Value> = report
        .clusters
        .iter()
        .map(|c| {
            let parts: Vec<String> = c
                .parts
                .iter()
                .filter_map(|k| assembly.part(*k).map(|p| p.id.clone()))
                .collect();
            let mut joints: Vec<String> = c
                .equations
                .iter()
                .map(|&e| owner_joint(assembly, system, e))
                .collect();
            joints.dedup();
            let limits: Vec<Value> = c
                .limits
                .iter()
                .map(|l| {
                    json!({
                        "joint": assembly.joint(l.joint).map_or("", |j| j.id.as_str()),
                        "coordinate": coordinate_name(l.coordinate),
                        "side": side_name(l.side),
                        "excess": l.excess,
                    })
                })
                .collect();
            json!({
                "parts": parts, "joints": joints, "status": cluster_status(c), "dof": c.dof,
                "iterations": c.iterations, "redundant": [], "conflicting": [],
                "limits": limits,
            })
        })
        .collect();
    json!({
        "status": if report.converged { "solved" } else { "failed" },
        "max_residual": report.max_residual,
        "dof": total_dof(report),
        "parts": pose_json(assembly),
        "clusters": clusters,
        "messages": messages(system, assembly, report),
    })
}

fn human(assembly: &Assembly, system: &System, report: &SolveReport, name: &str) -> String {
    let mut out = String::new();
    let status = if report.converged {
        "solved"
    } else {
        "NOT solved"
    };
    out.push_str(&format!(
        "{name}: {status}; largest residual {:.1e}; {}\n",
        report.max_residual,
        total_dof(report).map_or(
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
            cluster_status(c).replace('_', "-"),
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
    for &(e, r) in report.unsatisfied.iter().take(10) {
        out.push_str(&format!(
            "  joint '{}' does not hold: off by {r:.3e}\n",
            owner_joint(assembly, system, e)
        ));
    }
    for m in messages(system, assembly, report) {
        out.push_str(&format!("  note: {m}\n"));
    }
    if !report.converged || report.clusters.iter().any(|c| c.rank.is_none()) {
        out.push_str(
            "  `tenon check` names redundant and conflicting joints and the motions left\n",
        );
    }
    out
}
