//! `tenon check`: solve, then diagnose: degrees of freedom, redundant and conflicting
//! joints, free motions; as JSON (the spec's report) or as sentences grouped by cluster.

use std::path::Path;

use anyhow::anyhow;
use tenon::{Assembly, ClusterDiagnosis, Diagnosis, JointKey, Motion, Report, Status};

use crate::render::{joint_name, messages, part_list, part_name, HUMAN_CLUSTERS, HUMAN_LINES};
use crate::Failure;

/// What a check found: the file's name, the solve's report and the diagnosis.
struct Checked<'a> {
    name: &'a str,
    report: &'a Report,
    diagnosis: &'a Diagnosis,
}

pub(crate) fn run(
    file: &Path,
    given: &crate::solve::Given<'_>,
    as_json: bool,
) -> Result<(), Failure> {
    let name = file.display().to_string();
    let (mut mechanism, progress) = crate::solve::load(file, given)?;
    let diagnosis = mechanism
        .diagnose_with_progress(&mut |p| progress.phase(p))
        .map_err(|e| Failure {
            status: 1,
            error: anyhow!("{name}: {e}"),
        })?;
    progress.done();
    crate::timings::mark("report");
    let Some(report) = mechanism.report().cloned() else {
        return Err(Failure {
            status: 1,
            error: anyhow!("{name}: the diagnosis left no solve report"),
        });
    };
    let shown = mechanism.assembly();
    let checked = Checked {
        name: &name,
        report: &report,
        diagnosis: &diagnosis,
    };
    let text = if as_json {
        let mut t =
            serde_json::to_string_pretty(&tenon_report::check_json(&shown, &report, &diagnosis))
                .unwrap_or_default();
        t.push('\n');
        t
    } else {
        human(&shown, &checked)
    };
    crate::emit(&text);
    let conflicting = diagnosis.clusters.iter().any(|c| !c.conflicts.is_empty());
    if report.converged && !conflicting {
        Ok(())
    } else {
        Err(Failure {
            status: 1,
            error: anyhow!(
                "{name}: not solved (largest residual {:.3e}{})",
                report.max_residual,
                if conflicting {
                    "; conflicting joints"
                } else {
                    ""
                }
            ),
        })
    }
}

fn fmt3(v: [f64; 3]) -> String {
    let r = tenon_report::round(v);
    format!("({}, {}, {})", r[0], r[1], r[2])
}

fn names(assembly: &Assembly, joints: &[JointKey]) -> String {
    let quoted: Vec<String> = joints
        .iter()
        .map(|j| format!("'{}'", joint_name(assembly, *j)))
        .collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

fn cluster_sentences(assembly: &Assembly, c: &ClusterDiagnosis, out: &mut String) {
    if c.structure.excess_equations > 0 {
        out.push_str(&format!(
            "    by structure alone, at least {} equation(s) repeat or conflict (more equations than the unknowns they involve)\n",
            c.structure.excess_equations
        ));
    }
    if c.structure.unfixed_unknowns > 0 {
        out.push_str(&format!(
            "    by structure alone, at least {} degree(s) of freedom are left (unknowns no equation reaches enough)\n",
            c.structure.unfixed_unknowns
        ));
    }
    // Joints ending a disagreement get their own sentence below.
    let disagreeing: Vec<JointKey> = c
        .disagreements
        .iter()
        .filter_map(|d| d.joints.last().copied())
        .collect();
    let plain: Vec<&JointKey> = c
        .redundant
        .iter()
        .filter(|j| !disagreeing.contains(j))
        .collect();
    for j in plain.iter().take(HUMAN_LINES) {
        out.push_str(&format!(
            "    joint '{}' repeats what the other joints already hold (redundant)\n",
            joint_name(assembly, **j)
        ));
    }
    more(out, plain.len(), "redundant joints");
    for k in c.conflicts.iter().take(HUMAN_LINES) {
        if let Some((last, rest)) = k.joints.split_last() {
            let by = if k.violation.is_finite() {
                format!("{:.6}", k.violation)
            } else {
                "an amount its equations cannot evaluate at this pose".to_string()
            };
            let sentence = if rest.is_empty() {
                // Its own equations disagree among themselves (or cannot be evaluated).
                format!("cannot hold at this pose: it is off by {by}")
            } else {
                format!(
                    "cannot hold together with {}: with those holding, it is off by {by}",
                    names(assembly, rest)
                )
            };
            out.push_str(&format!(
                "    joint '{}' {sentence}\n",
                joint_name(assembly, *last)
            ));
        }
    }
    more(out, c.conflicts.len(), "conflicts");
    for d in c.disagreements.iter().take(HUMAN_LINES) {
        if let Some((last, rest)) = d.joints.split_last() {
            let with = if rest.is_empty() {
                String::new()
            } else {
                format!(" with {}", names(assembly, rest))
            };
            out.push_str(&format!(
                "    joint '{}' repeats and disagrees{with} by {:.6}, within the tolerance: placed by least squares\n",
                joint_name(assembly, *last),
                d.violation
            ));
        }
    }
    more(out, c.disagreements.len(), "disagreements");
    if c.free_motions.is_empty() && c.dof.is_some_and(|d| d > 0) {
        out.push_str(&format!(
            "    (free motions are listed for clusters of up to {} unknowns)\n",
            tenon::DIAGNOSE_COLUMNS
        ));
    }
    for f in c.free_motions.iter().take(HUMAN_LINES) {
        let part = part_name(assembly, f.part);
        let sentence = match f.motion {
            Motion::Translation { direction } => {
                format!("{part} can slide along {}", fmt3(direction))
            }
            Motion::Rotation { axis, point } if f.idle => format!(
                "{part} can spin about the axis {} through {} without moving anything else (idle)",
                fmt3(axis),
                fmt3(point)
            ),
            Motion::Rotation { axis, point } => format!(
                "{part} can turn about the axis {} through {}",
                fmt3(axis),
                fmt3(point)
            ),
            Motion::Screw { axis, point, pitch } => format!(
                "{part} can screw along the axis {} through {}, advancing {pitch:.6} per turn",
                fmt3(axis),
                fmt3(point)
            ),
        };
        out.push_str(&format!("    {sentence}\n"));
    }
    more(out, c.free_motions.len(), "free motions");
}

/// "... and N more" after the first [`HUMAN_LINES`] of a list.
fn more(out: &mut String, count: usize, what: &str) {
    if count > HUMAN_LINES {
        out.push_str(&format!(
            "    ... and {} more {what} (--json lists them all)\n",
            count - HUMAN_LINES
        ));
    }
}

fn human(assembly: &Assembly, checked: &Checked<'_>) -> String {
    let Checked {
        name,
        report,
        diagnosis,
    } = *checked;
    let mut out = String::new();
    let conflicting = diagnosis.clusters.iter().any(|c| !c.conflicts.is_empty());
    let status = if report.converged && !conflicting {
        "solved"
    } else {
        "NOT solved"
    };
    out.push_str(&format!(
        "{}: {status}; largest residual {:.1e}; {}\n",
        name,
        report.max_residual,
        diagnosis.dof().map_or(
            "degrees of freedom not counted (a cluster too large to analyse)".to_string(),
            |d| format!("{d} degree(s) of freedom left")
        )
    ));
    out.push_str(&crate::solve::tolerance_line(report));
    // Clusters with something to say first (conflicting, failed, over-constrained),
    // then the rest in file order, up to a screenful.
    let rank = |c: &ClusterDiagnosis| match c.status {
        Status::Conflicting => 0,
        Status::Failed => 1,
        Status::OverConstrained => 2,
        _ => 3,
    };
    let mut order: Vec<usize> = (0..diagnosis.clusters.len()).collect();
    order.sort_by_key(|&k| rank(&diagnosis.clusters[k]));
    for &k in order.iter().take(HUMAN_CLUSTERS) {
        let c = &diagnosis.clusters[k];
        out.push_str(&format!(
            "  cluster {} ({}): {}, {}\n",
            k + 1,
            part_list(assembly, &c.parts),
            c.status.name().replace('_', "-"),
            c.dof.map_or("not analysed".to_string(), |d| format!(
                "{d} degree(s) of freedom"
            ))
        ));
        cluster_sentences(assembly, c, &mut out);
    }
    if diagnosis.clusters.len() > HUMAN_CLUSTERS {
        out.push_str(&format!(
            "  ... and {} more clusters (--json lists them all)\n",
            diagnosis.clusters.len() - HUMAN_CLUSTERS
        ));
    }
    for m in messages(assembly, report) {
        out.push_str(&format!("  note: {m}\n"));
    }
    out
}
