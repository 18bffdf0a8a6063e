//! What the `solve` and `check` reports share: part lists that fit a screen, placements
//! as JSON, and the notes (limits, mirror branches, grounding) under a report.

use serde_json::{json, Value};
use tenon::{Assembly, Coordinate, Grounding, JointKey, LimitSide, PartKey, Report};

/// The human report lists at most this many clusters, and this many parts of each.
pub(crate) const HUMAN_CLUSTERS: usize = 20;
pub(crate) const HUMAN_PARTS: usize = 8;
/// Sentences of one kind (redundant joints, conflicts, motions) shown per cluster.
pub(crate) const HUMAN_LINES: usize = 12;

/// A part's id ("?" for a key the assembly does not have: never from the solver).
pub(crate) fn part_name(assembly: &Assembly, key: PartKey) -> String {
    assembly.part(key).map_or("?".into(), |p| p.id.clone())
}

/// A joint's id.
pub(crate) fn joint_name(assembly: &Assembly, key: JointKey) -> String {
    assembly.joint(key).map_or("?".into(), |j| j.id.clone())
}

/// Up to [`HUMAN_PARTS`] part names, then how many more.
pub(crate) fn part_list(assembly: &Assembly, parts: &[PartKey]) -> String {
    let mut names: Vec<String> = parts
        .iter()
        .take(HUMAN_PARTS)
        .map(|p| part_name(assembly, *p))
        .collect();
    if parts.len() > HUMAN_PARTS {
        names.push(format!("and {} more parts", parts.len() - HUMAN_PARTS));
    }
    names.join(", ")
}

/// Every part's placement, by id.
pub(crate) fn pose_json(assembly: &Assembly) -> Value {
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

pub(crate) fn coordinate_name(c: Coordinate) -> &'static str {
    match c {
        Coordinate::Angle => "angle",
        Coordinate::Distance => "distance",
    }
}

pub(crate) fn side_name(side: LimitSide) -> &'static str {
    match side {
        LimitSide::Min => "min",
        LimitSide::Max => "max",
    }
}

/// The notes under a report: limits held or broken, joints that changed branch, how
/// the assembly was held.
pub(crate) fn messages(assembly: &Assembly, report: &Report) -> Vec<String> {
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
