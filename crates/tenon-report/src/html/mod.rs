//! The HTML view of a diagnosis: one self-contained page (inline SVG drawn by a small
//! inline script; no request leaves the page) with the assembly's kinematic diagram,
//! the joints coloured by what the diagnosis found, the free motions drawn where they
//! act, and the check report beside it.
//!
//! The page carries its data as one JSON block: each part's pose and its points in part
//! coordinates, each joint's two marker frames in the coordinates of their parts, so the
//! script draws any pose it is given (a later animation replaces the poses only). The
//! script and style sheet are `view.js` and `view.css` beside this file.

use serde_json::{json, Value};
use tenon::{
    Assembly, CamProfile, Diagnosis, Field, JointKey, MarkerRef, MarkerSpec, Motion, PartKey, Pose,
    Report,
};

use crate::run::{plot_svg, RunView, PLOTTED_SERIES};
use crate::{cluster_sentences, messages, tolerances_json, ReportError};

/// Above this many joints the diagram is drawn at reduced detail: joints that hold
/// become dots, each cluster's parts one path (joints the diagnosis names keep their
/// glyphs), and the page says so.
pub const DETAILED_JOINTS: usize = 2_000;

/// Free motions drawn at most (all are listed in the report beside the drawing).
pub const DRAWN_MOTIONS: usize = 500;

/// Sentences listed per cluster at most, and clusters listed at most.
const LISTED_SENTENCES: usize = 200;
const LISTED_CLUSTERS: usize = 200;

const SCRIPT: &str = include_str!("view.js");
const STYLE: &str = include_str!("view.css");

/// The page of `tenon check --html`: the diagram of `assembly` at its solved pose, the
/// joints marked as `diagnosis` found them, and the report. `title` names the file.
pub fn check_html(
    assembly: &Assembly,
    report: &Report,
    diagnosis: &Diagnosis,
    title: &str,
) -> String {
    let data = check_data(assembly, report, diagnosis, title);
    page(title, &data)
}

/// The page around a data block.
fn page(title: &str, data: &Value) -> String {
    // `</` inside a script element would end it early: written `<\/` (the same string
    // to JSON).
    let data = data.to_string().replace("</", "<\\/");
    let title = escape(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n\
         <title>{title} - Tenon</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <script type=\"application/json\" id=\"tenon-data\">{data}</script>\n\
         <script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

/// Text for HTML: `&`, `<`, `>` and quotes escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number kept to 7 significant digits: the drawing needs no more, and the page of a
/// large assembly stays small.
fn short(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return 0.0;
    }
    format!("{x:.6e}").parse().unwrap_or(x)
}

fn short3(v: [f64; 3]) -> [f64; 3] {
    v.map(short)
}

/// A marker's frame in its part's coordinates: origin, x and z axes.
fn local_frame(assembly: &Assembly, end: &MarkerRef) -> Option<Value> {
    let values = assembly.parameter_values();
    let units = assembly.units();
    let pose = match &end.marker {
        MarkerSpec::Named(name) => assembly.marker(end.part, name)?.numbers(values, units)?,
        MarkerSpec::Inline(p) => p.numbers(values, units)?,
    };
    let m = pose.matrix();
    Some(json!({
        "o": short3(pose.position),
        "x": short3([m[0][0], m[1][0], m[2][0]]),
        "z": short3([m[0][2], m[1][2], m[2][2]]),
    }))
}

/// A cam profile's points in its marker's xy plane (a circle as 48 points; polar radii at
/// their angles; points as given), joined in order and closed by the script.
fn profile_points(assembly: &Assembly, profile: &CamProfile) -> Vec<[f64; 2]> {
    let values = assembly.parameter_values();
    let at = |r: f64, k: usize, n: usize| {
        let a = std::f64::consts::TAU * k as f64 / n as f64;
        [short(r * a.cos()), short(r * a.sin())]
    };
    match profile {
        CamProfile::Circle { radius } => {
            let r = values.value_of(radius).unwrap_or(0.0);
            (0..48).map(|k| at(r, k, 48)).collect()
        }
        CamProfile::Polar(radii) => {
            let n = radii.len();
            radii
                .iter()
                .enumerate()
                .map(|(k, r)| at(values.value_of(r).unwrap_or(0.0), k, n))
                .collect()
        }
        CamProfile::Points(points) => points
            .iter()
            .map(|[x, y]| {
                [
                    short(values.value_of(x).unwrap_or(0.0)),
                    short(values.value_of(y).unwrap_or(0.0)),
                ]
            })
            .collect(),
    }
}

/// The page's data: the diagram, then the report: clusters with their sentences, notes.
fn check_data(assembly: &Assembly, report: &Report, diagnosis: &Diagnosis, title: &str) -> Value {
    let mut data = diagram_data(assembly, diagnosis);
    let part_index = part_indices(assembly);
    let joint_index = joint_indices(assembly);
    let clusters: Vec<Value> = diagnosis
        .clusters
        .iter()
        .take(LISTED_CLUSTERS)
        .enumerate()
        .map(|(k, c)| {
            let sentences = cluster_sentences(assembly, c);
            let listed: Vec<Value> = sentences
                .iter()
                .take(LISTED_SENTENCES)
                .map(|s| {
                    json!({
                        "text": s.text,
                        "joints": s.joints.iter().filter_map(|j| joint_index.get(j)).collect::<Vec<_>>(),
                        "parts": s.parts.iter().filter_map(|p| part_index.get(p)).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "index": k,
                "status": c.status.name(),
                "dof": c.dof,
                "parts": c.parts.iter().filter_map(|p| part_index.get(p)).collect::<Vec<_>>(),
                "sentences": listed,
                "more": sentences.len().saturating_sub(LISTED_SENTENCES),
            })
        })
        .collect();
    if diagnosis.clusters.len() > LISTED_CLUSTERS {
        if let Some(list) = data["simplifications"].as_array_mut() {
            list.push(json!(format!(
                "the report lists the first {LISTED_CLUSTERS} of {} clusters",
                diagnosis.clusters.len()
            )));
        }
    }
    let conflicting = diagnosis.clusters.iter().any(|c| !c.conflicts.is_empty());
    for (key, value) in [
        ("title", json!(title)),
        ("name", json!(assembly.name())),
        (
            "status",
            json!(if report.converged && !conflicting {
                "solved"
            } else {
                "failed"
            }),
        ),
        ("max_residual", json!(report.max_residual)),
        ("dof", json!(diagnosis.dof())),
        ("tolerances", tolerances_json(report)),
        ("clusters", json!(clusters)),
        ("cluster_count", json!(diagnosis.clusters.len())),
        ("notes", json!(messages(assembly, report))),
    ] {
        data[key] = value;
    }
    data
}

/// Each joint's index in file order (the page names joints by it).
fn joint_indices(assembly: &Assembly) -> std::collections::HashMap<JointKey, usize> {
    assembly
        .joints()
        .enumerate()
        .map(|(k, (key, _))| (key, k))
        .collect()
}

/// Each part's index in file order (the page names parts by it).
fn part_indices(assembly: &Assembly) -> std::collections::HashMap<PartKey, usize> {
    assembly
        .parts()
        .enumerate()
        .map(|(k, (key, _))| (key, k))
        .collect()
}

/// The drawing's data: parts, joints (marked as `diagnosis` found them), conflict sets,
/// free motions, and what was simplified.
fn diagram_data(assembly: &Assembly, diagnosis: &Diagnosis) -> Value {
    let values = assembly.parameter_values();
    let units = assembly.units();
    let part_index = part_indices(assembly);
    let joint_index = joint_indices(assembly);
    let mut cluster_of: std::collections::HashMap<PartKey, usize> = Default::default();
    for (k, c) in diagnosis.clusters.iter().enumerate() {
        for &p in &c.parts {
            cluster_of.insert(p, k);
        }
    }
    let simplified = assembly.joint_count() > DETAILED_JOINTS;

    let parts: Vec<Value> = assembly
        .parts()
        .map(|(key, p)| {
            let pose = p.placement.numbers(values, units).unwrap_or(Pose::IDENTITY);
            let mut points = vec![[0.0; 3]];
            for (_, m) in &p.markers {
                if let Some(m) = m.numbers(values, units) {
                    let q = short3(m.position);
                    if !points.contains(&q) {
                        points.push(q);
                    }
                }
            }
            json!({
                "id": p.id,
                "cluster": cluster_of.get(&key),
                "grounded": p.grounded,
                "p": short3(pose.position),
                "q": pose.quaternion.map(short),
                "pts": points,
            })
        })
        .collect();

    // Joint statuses and the conflict sets each joint belongs to.
    let joints_len = assembly.joint_count();
    let mut status = vec!["ok"; joints_len];
    let mut disagreeing = vec![false; joints_len];
    let mut sets: Vec<Vec<usize>> = vec![Vec::new(); joints_len];
    let mut conflicts = Vec::new();
    for c in &diagnosis.clusters {
        for j in &c.redundant {
            if let Some(&k) = joint_index.get(j) {
                status[k] = "redundant";
            }
        }
        for (set, is_conflict) in c
            .conflicts
            .iter()
            .map(|s| (s, true))
            .chain(c.disagreements.iter().map(|s| (s, false)))
        {
            let members: Vec<usize> = set
                .joints
                .iter()
                .filter_map(|j| joint_index.get(j).copied())
                .collect();
            let n = conflicts.len();
            for &k in &members {
                sets[k].push(n);
                if is_conflict {
                    status[k] = "conflicting";
                } else {
                    disagreeing[k] = true;
                }
            }
            conflicts.push(json!({
                "joints": members,
                "violation": if set.violation.is_finite() { json!(set.violation) } else { Value::Null },
                "conflict": is_conflict,
            }));
        }
    }
    let joints: Vec<Value> = assembly
        .joints()
        .enumerate()
        .map(|(k, (_, j))| {
            let st = if j.suppressed {
                "suppressed"
            } else {
                status[k]
            };
            let mut v = json!({
                "id": j.id,
                "type": j.joint_type.name(),
                "status": st,
                "pi": part_index.get(&j.i.part),
                "pj": part_index.get(&j.j.part),
                "i": local_frame(assembly, &j.i),
                "j": local_frame(assembly, &j.j),
            });
            if disagreeing[k] {
                v["disagreeing"] = json!(true);
            }
            if !sets[k].is_empty() {
                v["sets"] = json!(sets[k]);
            }
            for (field, name) in [
                (Field::RadiusI, "radius_i"),
                (Field::RadiusJ, "radius_j"),
                (Field::Radius, "radius"),
                (Field::Pitch, "pitch"),
            ] {
                if let Some(x) = j.field(field).and_then(|s| values.value_of(s)) {
                    v[name] = json!(short(x));
                }
            }
            if let Some(p) = &j.profile {
                v["profile_j"] = json!(profile_points(assembly, p));
            }
            if let Some(p) = &j.profile_i {
                v["profile_i"] = json!(profile_points(assembly, p));
            }
            v
        })
        .collect();

    let motions: Vec<Value> = diagnosis
        .clusters
        .iter()
        .flat_map(|c| &c.free_motions)
        .map(|f| {
            let part = part_index.get(&f.part);
            match f.motion {
                Motion::Translation { direction } => json!({
                    "part": part, "kind": "translation", "axis": short3(direction), "idle": f.idle,
                }),
                Motion::Rotation { axis, point } => json!({
                    "part": part, "kind": "rotation", "axis": short3(axis),
                    "point": short3(point), "idle": f.idle,
                }),
                Motion::Screw { axis, point, pitch } => json!({
                    "part": part, "kind": "screw", "axis": short3(axis),
                    "point": short3(point), "pitch": short(pitch), "idle": f.idle,
                }),
            }
        })
        .collect();

    let mut simplifications = Vec::new();
    if simplified {
        simplifications.push(format!(
            "{} joints: joints that hold are drawn as dots and each cluster's parts as one line (above {DETAILED_JOINTS} joints); redundant and conflicting joints keep their symbols",
            assembly.joint_count()
        ));
    }
    if motions.len() > DRAWN_MOTIONS {
        simplifications.push(format!(
            "the first {DRAWN_MOTIONS} of {} free motions are drawn; the report lists them all",
            motions.len()
        ));
    }
    json!({
        "parts": parts,
        "joints": joints,
        "conflicts": conflicts,
        "motions": motions,
        "drawn_motions": DRAWN_MOTIONS,
        "simplified": simplified,
        "simplifications": simplifications,
    })
}

/// Frames a run's page animates at most: a longer run is shown every k-th frame (the
/// plots keep every frame), and the page says so.
pub const ANIMATED_FRAMES: usize = 2_000;

/// The page of a run (`tenon kinematics --html`, `tenon simulate --html`): the diagram
/// of `assembly` moving through the run's frames (play, pause, a time slider, speed),
/// the plots under it, and `summary` (the command's summary lines) beside it.
pub fn run_html(
    assembly: &Assembly,
    run: &RunView,
    summary: &str,
    title: &str,
) -> Result<String, ReportError> {
    let mut data = diagram_data(
        assembly,
        &Diagnosis {
            clusters: Vec::new(),
        },
    );
    let part_index = part_indices(assembly);
    let every = run.times.len().div_ceil(ANIMATED_FRAMES).max(1);
    let frames: Vec<usize> = (0..run.times.len()).step_by(every).collect();
    let poses: Vec<Vec<f64>> = frames
        .iter()
        .map(|&f| {
            run.poses[f]
                .iter()
                .flat_map(|(p, q)| p.iter().chain(q).copied().map(short))
                .collect()
        })
        .collect();
    if every > 1 {
        if let Some(list) = data["simplifications"].as_array_mut() {
            list.push(json!(format!(
                "the animation shows every {every}th of {} frames; the plots show them all",
                run.times.len()
            )));
        }
    }
    let mut plots = Vec::with_capacity(run.plots.len());
    for plot in &run.plots {
        let mut note = String::new();
        if plot.series.len() > PLOTTED_SERIES {
            note = format!(
                "the first {PLOTTED_SERIES} of {} series are drawn",
                plot.series.len()
            );
        }
        plots.push(json!({
            "title": plot.title,
            "svg": plot_svg(&run.times, plot, (720, 260))?,
            "note": note,
        }));
    }
    for (key, value) in [
        ("title", json!(title)),
        ("name", json!(assembly.name())),
        (
            "run",
            json!({
                "kind": run.kind,
                "times": frames.iter().map(|&f| run.times[f]).collect::<Vec<_>>(),
                "parts": run.parts.iter().map(|p| part_index.get(p)).collect::<Vec<_>>(),
                "poses": poses,
                "summary": summary,
                "plots": plots,
            }),
        ),
    ] {
        data[key] = value;
    }
    Ok(page(title, &data))
}

/// The plots of a run alone, stacked in one SVG document (`--plot OUT.svg`).
pub fn run_plots_svg(run: &RunView) -> Result<String, ReportError> {
    let (width, height) = (720u32, 260u32);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" \
         viewBox=\"0 0 {width} {}\">\n",
        height as usize * run.plots.len(),
        height as usize * run.plots.len()
    );
    for (k, plot) in run.plots.iter().enumerate() {
        let one = plot_svg(&run.times, plot, (width, height))?;
        out.push_str(&format!(
            "<g transform=\"translate(0 {})\">\n",
            k as u32 * height
        ));
        out.push_str(&one);
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    Ok(out)
}

#[cfg(test)]
mod tests;
