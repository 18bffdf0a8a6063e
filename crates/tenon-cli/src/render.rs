//! What the `solve` and `check` human reports share: part lists that fit a screen. The
//! names, placements and notes come from `tenon-report` (the JSON reports' crate).

use tenon::{Assembly, PartKey};
pub(crate) use tenon_report::{joint_name, messages, part_name};

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
        .map(|p| part_name(assembly, *p))
        .collect();
    if parts.len() > HUMAN_PARTS {
        names.push(format!("and {} more parts", parts.len() - HUMAN_PARTS));
    }
    names.join(", ")
}
