//! The spec's JSON reports (`tenon solve --json`, `tenon check --json`), built from the
//! facade's report and diagnosis, with the names and notes they share. Used by the
//! command, the C ABI and the Python module, so each gives the same document.
//!
//! Architecture invariant: this crate only renders; it solves nothing and reads no
//! file.

#![warn(missing_docs)]

mod html;
mod run;
mod sentences;

pub use html::{
    check_html, run_html, run_plots_svg, ANIMATED_FRAMES, DETAILED_JOINTS, DRAWN_MOTIONS,
};
pub use run::{dynamics_view, kinematics_view, plot_svg, Plot, RunView, Series, PLOTTED_SERIES};

/// What can go wrong while rendering.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A plot could not be drawn.
    #[error("cannot draw the plot {0}")]
    Plot(String),
}
pub use sentences::{cluster_sentences, format_vector, Sentence, SentenceKind};

use serde_json::{json, Value};
use tenon::{
    Assembly, Coordinate, Diagnosis, Grounding, JointKey, LimitSide, Motion, PartKey, Report,
};

/// A part's id ("?" for a key the assembly does not have: never from the solver).
pub fn part_name(assembly: &Assembly, key: PartKey) -> String {
    assembly.part(key).map_or("?".into(), |p| p.id.clone())
}

/// A joint's id.
pub fn joint_name(assembly: &Assembly, key: JointKey) -> String {
    assembly.joint(key).map_or("?".into(), |j| j.id.clone())
}

/// Every part's placement, by id.
pub fn pose_json(assembly: &Assembly) -> Value {
    let mut parts = serde_json::Map::new();
    let values = assembly.parameter_values();
    for (_, p) in assembly.parts() {
        if let Some(pose) = p.placement.numbers(values, assembly.units()) {
            parts.insert(
                p.id.clone(),
                json!({ "position": pose.position, "quaternion": pose.quaternion }),
            );
        }
    }
    Value::Object(parts)
}

/// `angle` or `distance`.
pub fn coordinate_name(c: Coordinate) -> &'static str {
    match c {
        Coordinate::Angle => "angle",
        Coordinate::Distance => "distance",
    }
}

/// `min` or `max`.
pub fn side_name(side: LimitSide) -> &'static str {
    match side {
        LimitSide::Min => "min",
        LimitSide::Max => "max",
    }
}

/// The notes under a report: limits held or broken, joints that changed branch, how
/// the assembly was held.
pub fn messages(assembly: &Assembly, report: &Report) -> Vec<String> {
    let mut m = Vec::new();
    for l in report.clusters.iter().flat_map(|c| &c.limits) {
        let id = joint_name(assembly, l.joint);
        let bound = match l.side {
            LimitSide::Min => "lower",
            LimitSide::Max => "upper",
        };
        let what = coordinate_name(l.coordinate);
        // Held at the bound to the solve's tolerance is held, not broken.
        if l.excess > tenon::TOLERANCE {
            let amount = match l.coordinate {
                Coordinate::Angle => format!("{:.4} degrees", l.excess.to_degrees()),
                Coordinate::Distance => format!("{:.4e}", l.excess),
            };
            m.push(format!(
                "joint '{id}' cannot respect its {bound} {what} limit: beyond it by {amount}"
            ));
        } else {
            m.push(format!("joint '{id}' is held at its {bound} {what} limit"));
        }
    }
    let [(_, length_unit), (_, angle_unit), _, _] = assembly.units().names();
    let per_angle = assembly.units().angle.radians();
    for y in &report.yielded {
        let mut off = Vec::new();
        if y.length > 0.0 {
            off.push(format!("{:.4e} {length_unit}", y.length));
        }
        if y.angle > 0.0 {
            off.push(format!("{:.4e} {angle_unit}", y.angle / per_angle));
        }
        m.push(format!(
            "compliant joint '{}' gives way where the joints disagree: off by {}",
            joint_name(assembly, y.joint),
            off.join(" and ")
        ));
    }
    for k in &report.flipped {
        m.push(format!(
            "joint '{}' changed branch: an aligned axis ended reversed from the starting pose",
            joint_name(assembly, *k)
        ));
    }
    if let Grounding::FirstPart(k) = report.grounding {
        m.push(format!(
            "no part is grounded: solved relative to the first part, '{}'",
            part_name(assembly, k)
        ));
    }
    m
}

/// Assemblies up to this many parts get their redundant and conflicting joints named
/// in `tenon solve --json`.
pub const NAMED_JOINTS_PARTS: usize = 500;

/// The solve report (`tenon solve --json`): status, residual, DOF, every part's
/// placement, the clusters (with their redundant and conflicting joints when
/// `diagnosis` is given), the notes.
pub fn solve_json(assembly: &Assembly, report: &Report, diagnosis: Option<&Diagnosis>) -> Value {
    let names = |joints: &[tenon::JointKey]| -> Vec<String> {
        joints.iter().map(|j| joint_name(assembly, *j)).collect()
    };
    let clusters: Vec<Value> = report
        .clusters
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let limits: Vec<Value> = c
                .limits
                .iter()
                .map(|l| {
                    json!({
                        "joint": joint_name(assembly, l.joint),
                        "coordinate": coordinate_name(l.coordinate),
                        "side": side_name(l.side),
                        "excess": l.excess,
                    })
                })
                .collect();
            let mut cluster = json!({
                "parts": c.parts.iter().map(|p| part_name(assembly, *p)).collect::<Vec<_>>(),
                "joints": names(&c.joints),
                "status": c.status.name(), "dof": c.dof,
                "iterations": c.iterations,
                "limits": limits,
            });
            if let Some(d) = diagnosis.and_then(|d| d.clusters.get(k)) {
                let conflicting: Vec<String> =
                    d.conflicts.iter().flat_map(|k| names(&k.joints)).collect();
                cluster["redundant"] = json!(names(&d.redundant));
                cluster["conflicting"] = json!(conflicting);
                cluster["disagreements"] = disagreements_json(assembly, &d.disagreements);
                cluster["condition"] = json!(d.conditioning.as_ref().map(|c| c.estimate));
                cluster["nearly_dependent"] = json!(d
                    .conditioning
                    .as_ref()
                    .map(|c| names(&c.nearly_dependent))
                    .unwrap_or_default());
            }
            cluster
        })
        .collect();
    let mut notes = messages(assembly, report);
    if diagnosis.is_none() {
        notes.push(format!(
            "redundant and conflicting joints are named for assemblies of up to {NAMED_JOINTS_PARTS} parts; `tenon check` names them at any size"
        ));
    }
    json!({
        "status": if report.converged { "solved" } else { "failed" },
        "max_residual": report.max_residual,
        "tolerances": tolerances_json(report),
        "dof": report.dof,
        "parts": pose_json(assembly),
        "clusters": clusters,
        "yielded": yielded_json(assembly, report),
        "messages": notes,
    })
}

/// Compliant joints that gave way: each joint, its largest length residual (model
/// units) and angle residual (the file's angle unit).
pub fn yielded_json(assembly: &Assembly, report: &Report) -> Value {
    let per_angle = assembly.units().angle.radians();
    Value::Array(
        report
            .yielded
            .iter()
            .map(|y| {
                json!({
                    "joint": joint_name(assembly, y.joint),
                    "length": y.length,
                    "angle": y.angle / per_angle,
                })
            })
            .collect(),
    )
}

/// The tolerances a report's solve judged by: `length` (model units, scaled with the
/// model's `reach` from the origin), `angle` (radians), `geometric` (model units:
/// repeated joints disagreeing by less are placed).
pub fn tolerances_json(report: &Report) -> Value {
    let t = report.tolerances;
    json!({
        "length": t.length,
        "angle": t.angle,
        "geometric": t.geometric,
        "reach": t.reach,
    })
}

/// Disagreements within the geometric tolerance: each set's joints and its size.
fn disagreements_json(assembly: &Assembly, sets: &[tenon::Conflict]) -> Value {
    Value::Array(
        sets.iter()
            .map(|d| {
                json!({
                    "joints": d.joints.iter().map(|j| joint_name(assembly, *j)).collect::<Vec<_>>(),
                    "disagreement": d.violation,
                })
            })
            .collect(),
    )
}

/// A vector rounded to 1e-9 (no negative zeros): free motions' directions and points
/// printed without rounding noise.
pub fn round(v: [f64; 3]) -> [f64; 3] {
    v.map(|x| {
        let r = (x * 1e9).round() / 1e9;
        if r == 0.0 {
            0.0
        } else {
            r
        }
    })
}

/// A free motion as JSON.
fn motion_json(assembly: &Assembly, part: PartKey, motion: &Motion, idle: bool) -> Value {
    let part = part_name(assembly, part);
    match *motion {
        Motion::Translation { direction } => {
            json!({ "part": part, "kind": "translation", "direction": round(direction), "idle": idle })
        }
        Motion::Rotation { axis, point } => {
            json!({ "part": part, "kind": "rotation", "axis": round(axis), "point": round(point), "idle": idle })
        }
        Motion::Screw { axis, point, pitch } => {
            json!({ "part": part, "kind": "screw", "axis": round(axis), "point": round(point), "pitch": pitch, "idle": idle })
        }
    }
}

/// The diagnosis report (`tenon check --json`): the solve's status and placements,
/// per cluster its status, DOF, redundant joints, conflicts with their violations and
/// what the structure proves, the free motions, the notes. Failed when the solve did
/// not converge or joints conflict.
pub fn check_json(assembly: &Assembly, report: &Report, diagnosis: &Diagnosis) -> Value {
    let clusters: Vec<Value> = diagnosis
        .clusters
        .iter()
        .zip(&report.clusters)
        .map(|(c, r)| {
            let conflicting: Vec<Vec<String>> = c
                .conflicts
                .iter()
                .map(|k| k.joints.iter().map(|j| joint_name(assembly, *j)).collect())
                .collect();
            json!({
                "parts": c.parts.iter().map(|p| part_name(assembly, *p)).collect::<Vec<_>>(),
                "joints": c.joints.iter().map(|j| joint_name(assembly, *j)).collect::<Vec<_>>(),
                "status": c.status.name(),
                "dof": c.dof,
                "iterations": r.iterations,
                "redundant": c.redundant.iter().map(|j| joint_name(assembly, *j)).collect::<Vec<_>>(),
                "conflicting": conflicting.iter().flatten().collect::<Vec<_>>(),
                "conflicts": c.conflicts.iter().zip(&conflicting).map(|(k, names)| {
                    json!({ "joints": names, "violation": k.violation })
                }).collect::<Vec<_>>(),
                "disagreements": disagreements_json(assembly, &c.disagreements),
                "structure": {
                    "excess_equations": c.structure.excess_equations,
                    "unfixed_unknowns": c.structure.unfixed_unknowns,
                },
            })
        })
        .collect();
    let free_motions: Vec<Value> = diagnosis
        .clusters
        .iter()
        .flat_map(|c| &c.free_motions)
        .map(|f| motion_json(assembly, f.part, &f.motion, f.idle))
        .collect();
    let conflicting = diagnosis.clusters.iter().any(|c| !c.conflicts.is_empty());
    json!({
        "status": if report.converged && !conflicting { "solved" } else { "failed" },
        "max_residual": report.max_residual,
        "tolerances": tolerances_json(report),
        "dof": diagnosis.dof(),
        "parts": pose_json(assembly),
        "clusters": clusters,
        "free_motions": free_motions,
        "messages": messages(assembly, report),
    })
}
