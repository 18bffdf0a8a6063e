//! `tenon check`: solve, then diagnose: degrees of freedom, redundant and conflicting
//! joints, free motions; as JSON (the spec's report) or as sentences grouped by cluster.

use std::path::Path;

use anyhow::anyhow;
use tenon::{Assembly, ClusterDiagnosis, Diagnosis, Report, Status};

use crate::render::{messages, part_list, HUMAN_CLUSTERS, HUMAN_LINES};
use crate::Failure;

/// What a check found: the file's name, the solve's report and the diagnosis.
struct Checked<'a> {
    name: &'a str,
    report: &'a Report,
    diagnosis: &'a Diagnosis,
}

/// How the check is shown: the report as text or JSON, and the HTML page if asked.
pub(crate) struct Shown<'a> {
    pub(crate) json: bool,
    pub(crate) html: Option<&'a Path>,
}

pub(crate) fn run(
    file: &Path,
    given: &crate::solve::Given<'_>,
    shown_as: Shown<'_>,
) -> Result<(), Failure> {
    let as_json = shown_as.json;
    if let Some(html) = shown_as.html {
        crate::output::check(html, &[file])?;
    }
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
    if let Some(html) = shown_as.html {
        let page = tenon_report::check_html(&shown, &report, &diagnosis, &name);
        crate::output::write(html, page.as_bytes()).map_err(crate::bad_input)?;
    }
    let text = if shown_as.html.is_some_and(crate::output::is_stdout) {
        String::new()
    } else if as_json {
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

/// The cluster's sentences, at most [`HUMAN_LINES`] of each kind, then how many more.
fn cluster_sentences(assembly: &Assembly, c: &ClusterDiagnosis, out: &mut String) {
    let sentences = tenon_report::cluster_sentences(assembly, c);
    let mut k = 0;
    while let Some(first) = sentences.get(k) {
        let kind = first.kind;
        let count = sentences[k..].iter().take_while(|s| s.kind == kind).count();
        for s in &sentences[k..k + count.min(HUMAN_LINES)] {
            out.push_str(&format!("    {}\n", s.text));
        }
        if count > HUMAN_LINES {
            out.push_str(&format!(
                "    ... and {} more {} (--json lists them all)\n",
                count - HUMAN_LINES,
                kind.plural()
            ));
        }
        k += count;
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
