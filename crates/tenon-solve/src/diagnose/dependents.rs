//! The one rule from dependent rows to joints, for the dense and the sparse analysis
//! alike: a dependent row that holds makes its joint redundant; one that does not makes
//! its joint conflict with the joints of its combination. Then each conflict's size is
//! measured (the first [`MEASURED_CONFLICTS`]); a measured conflict within the geometric
//! tolerance (see [`crate::Tolerances`]) is a disagreement, its last joint redundant; and
//! the cluster's status is decided.

use rustc_hash::{FxHashMap, FxHashSet};
use tenon_model::JointKey;

use super::conflict::violation_without;
use super::{ClusterAt, Conflict, Status, CONSISTENT, MEASURED_CONFLICTS};
use crate::{SolveError, TOLERANCE};

/// What the dependent rows of a cluster say about its joints.
pub(super) struct Findings {
    /// Joints that repeat what the others hold, in file order.
    pub(super) redundant: Vec<JointKey>,
    /// Sets of joints that cannot hold together.
    pub(super) conflicts: Vec<Conflict>,
}

/// Classifies dependent rows (`(k, gap)`: the cluster's `k`-th row, and how far its
/// residual disagrees with its combination's); `conflict_set(k, joint, so_far)` names
/// the joints a conflicting row's combination involves (with `joint` last). A joint
/// whose rows end a conflict is not also listed as redundant.
pub(super) fn classify(
    cx: &ClusterAt<'_>,
    dependents: impl IntoIterator<Item = (usize, f64)>,
    mut conflict_set: impl FnMut(usize, JointKey, usize) -> Vec<JointKey>,
) -> Findings {
    // Sets beside the lists: 100,000 joints on one part are 100,000 redundant ones.
    let mut redundant: Vec<JointKey> = Vec::new();
    let mut listed: FxHashSet<JointKey> = FxHashSet::default();
    let mut conflicts: Vec<Conflict> = Vec::new();
    for (k, gap) in dependents {
        let Some(joint) = cx.joint_of_row(k) else {
            continue;
        };
        // CONSISTENT is for a model near the origin; the row's tolerance scales it.
        let row_tol = cx
            .rows
            .get(k)
            .map_or(TOLERANCE, |&r| cx.tolerance.equation(r));
        if gap.abs() <= CONSISTENT * (row_tol / TOLERANCE) {
            if listed.insert(joint) {
                redundant.push(joint);
            }
            continue;
        }
        let set = conflict_set(k, joint, conflicts.len());
        add_conflict(&mut conflicts, set, gap, cx.joint_order);
    }
    let ending: FxHashSet<JointKey> = conflicts
        .iter()
        .filter_map(|c| c.joints.last().copied())
        .collect();
    redundant.retain(|j| !ending.contains(j));
    redundant.sort_by_key(|j| cx.joint_order[j]);
    Findings {
        redundant,
        conflicts,
    }
}

/// What the analysis concludes for a cluster.
pub(super) struct Settled {
    pub(super) status: Status,
    /// Joints that repeat others (disagreeing ones within the tolerance included).
    pub(super) redundant: Vec<JointKey>,
    pub(super) conflicts: Vec<Conflict>,
    /// Repeated joints that disagree within the geometric tolerance.
    pub(super) disagreements: Vec<Conflict>,
}

/// Measures the findings' conflicts, sets those within the geometric tolerance apart as
/// disagreements (their last joints redundant), and decides the status.
pub(super) fn settle(
    cx: &ClusterAt<'_>,
    findings: Findings,
    dof: usize,
    report: &crate::ClusterReport,
) -> Result<Settled, SolveError> {
    let Findings {
        mut redundant,
        mut conflicts,
    } = findings;
    let within = measure(cx, &mut conflicts)?;
    let mut disagreements = Vec::new();
    let mut kept = Vec::with_capacity(conflicts.len());
    for (conflict, tolerated) in conflicts.into_iter().zip(within) {
        if tolerated {
            if let Some(&last) = conflict.joints.last() {
                redundant.push(last);
            }
            disagreements.push(conflict);
        } else {
            kept.push(conflict);
        }
    }
    redundant.sort_by_key(|j| cx.joint_order[j]);
    redundant.dedup();
    let status = status_of(&kept, &redundant, dof, report);
    Ok(Settled {
        status,
        redundant,
        conflicts: kept,
        disagreements,
    })
}

/// The size of the first [`MEASURED_CONFLICTS`] conflicts: how far each one's last joint
/// is from holding when the cluster's other joints hold exactly (solved from the best
/// point); the disagreement of the rows stays where they cannot. Returns, per conflict,
/// whether it was measured within the geometric tolerance (lengths within it, angles
/// within it over the model's reach: no point moved by more).
fn measure(cx: &ClusterAt<'_>, conflicts: &mut [Conflict]) -> Result<Vec<bool>, SolveError> {
    let mut within = vec![false; conflicts.len()];
    let ends: FxHashSet<JointKey> = conflicts
        .iter()
        .take(MEASURED_CONFLICTS)
        .filter_map(|c| c.joints.last().copied())
        .collect();
    for (conflict, tolerated) in conflicts
        .iter_mut()
        .zip(&mut within)
        .take(MEASURED_CONFLICTS)
    {
        let Some(&last) = conflict.joints.last() else {
            continue;
        };
        // The other conflicts' last joints are let go too: with them held, the rest
        // could not hold exactly either.
        let (own, keep): (Vec<usize>, Vec<usize>) = cx
            .rows
            .iter()
            .filter(|&&r| {
                cx.joint_of(r)
                    .is_none_or(|j| j == last || !ends.contains(&j))
            })
            .partition(|&&r| cx.joint_of(r) == Some(last));
        if let Some(held) = violation_without(cx, &keep, &own)? {
            conflict.violation = held.iter().fold(0.0f64, |m, &(_, v)| m.max(v.abs()));
            // The same per-equation limits a solve places by.
            *tolerated = held.iter().all(|&(k, v)| v.abs() <= cx.tolerance.placed(k));
        }
    }
    Ok(within)
}

/// Adds a dependent row's conflict: rows of the same joint (the set's last) make one
/// conflict, whose set is the union of theirs (in file order) and whose disagreement adds
/// up in squares.
fn add_conflict(
    conflicts: &mut Vec<Conflict>,
    set: Vec<JointKey>,
    gap: f64,
    joint_order: &FxHashMap<JointKey, usize>,
) {
    match conflicts
        .iter_mut()
        .find(|c| c.joints.last().is_some() && c.joints.last() == set.last())
    {
        Some(c) => {
            c.violation = c.violation.hypot(gap);
            c.joints.extend(set);
            c.joints.sort_by_key(|j| joint_order[j]);
            c.joints.dedup();
        }
        None => conflicts.push(Conflict {
            joints: set,
            violation: gap.abs(),
        }),
    }
}

/// How a cluster stands, from what its analysis found and how its solve ended.
fn status_of(
    conflicts: &[Conflict],
    redundant: &[JointKey],
    dof: usize,
    report: &crate::ClusterReport,
) -> Status {
    if !conflicts.is_empty() {
        Status::Conflicting
    } else if !report.converged {
        Status::Failed
    } else if !redundant.is_empty() {
        Status::OverConstrained
    } else if dof == 0 {
        Status::WellConstrained
    } else {
        Status::UnderConstrained
    }
}
