//! Which parts each owner's equations tie together, found while the build makes them.
//!
//! Splitting into clusters needs, per owner (a joint's rows, a driving value, a
//! motion), the unknowns its rows read. Two things made that walk slow on large
//! assemblies, both a matter of memory, not of work:
//!
//! - Done after the build, it met every joint's nodes again long after they were made
//!   (at 10,000 parts, out of the caches). The build now records each owner's unknowns
//!   right after it makes the owner's rows ([`OwnerVars::record`]).
//! - It went down into the parts' frames (a part's rotation matrix is 30-odd nodes over
//!   its quaternion), made before any joint. Every node made while the parts are done
//!   that depends on an unknown depends on one part's unknowns alone, so the walk stops
//!   there and reads the part off the node's id ([`PartNodes`]).
//!
//! Architecture invariant: for each owner the recorded unknowns fall in the same groups
//! (parts and extra unknowns) as the exact unknowns below its rows, so the clusters are
//! the ones a full walk of every owner gives. A recorded list holds each part reached
//! through its frame by the part's first unknown.

use tenon_expr::{ExprGraph, ExprId, VarId};

use crate::build::{Equation, FreePart};

/// Graphs with at most this many unknowns are not recorded: their nodes' masks give an
/// owner's unknowns without a walk (see `ExprGraph::vars_of_marked_all_into`), so the
/// split costs the same either way and a small file's build keeps its lists empty.
const RECORD_ABOVE_UNKNOWNS: usize = 32;

/// Per free part (in [`crate::System`]'s order), the graph's node count when the build
/// made its unknowns, then the count when the last part was done: the nodes of part `k`
/// are those from its start to the next.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartNodes {
    starts: Vec<u32>,
}

impl PartNodes {
    /// From the starts and the frontier, `len + 1` node counts in increasing order (the
    /// build's); none if a count does not fit a node id (then every owner is walked).
    pub(crate) fn new(starts: Vec<usize>) -> Self {
        let starts = starts
            .into_iter()
            .map(u32::try_from)
            .collect::<Result<Vec<u32>, _>>()
            .unwrap_or_default();
        PartNodes { starts }
    }

    /// Whether an assembly of `parts` parts is worth the list: one whose parts' unknowns
    /// are at most [`RECORD_ABOVE_UNKNOWNS`] is split by masks, not walks (it may still
    /// be walked, should its joints add unknowns; then without a frontier).
    pub(crate) fn worth_keeping(parts: usize) -> bool {
        7 * parts > RECORD_ABOVE_UNKNOWNS
    }

    /// The node count when the last part was done: nodes below it are parts' nodes.
    pub(crate) fn frontier(&self) -> usize {
        self.starts.last().map_or(0, |&n| n as usize)
    }

    /// A lookup of nodes' parts that remembers the last part found.
    pub(crate) fn finder(&self) -> PartFinder<'_> {
        PartFinder {
            starts: &self.starts,
            last: [(0, 0, 0); 2],
        }
    }
}

/// Finds the part of a node below the frontier. A joint's nodes there are its two
/// parts' (in turns, as the walk goes), so the two parts found last are tried first.
pub(crate) struct PartFinder<'a> {
    starts: &'a [u32],
    /// The two parts found last, the latest first: each one's index and node range.
    last: [(usize, usize, usize); 2],
}

impl PartFinder<'_> {
    /// The index of the free part whose nodes hold `n`, if `n` is below the frontier.
    pub(crate) fn part_of(&mut self, n: ExprId) -> Option<usize> {
        let at = n.index();
        for &(k, start, end) in &self.last {
            if (start..end).contains(&at) {
                return Some(k);
            }
        }
        let after = self.starts.partition_point(|&s| s as usize <= at);
        let k = after.checked_sub(1)?;
        let end = *self.starts.get(after)? as usize;
        self.last = [(k, self.starts[k] as usize, end), self.last[0]];
        Some(k)
    }
}

/// The unknowns below `roots` into `out`, unsorted: those above the parts' nodes
/// exactly, and each part reached through its frame by the part's first unknown (the
/// walk stops at the frame; its part is read off the node's id). `older` is the walk's
/// list of the frame nodes it stopped at, kept between calls.
pub(crate) fn unknowns_of(
    graph: &mut ExprGraph,
    roots: &[ExprId],
    (parts, free_parts): (&PartNodes, &[FreePart]),
    out: &mut Vec<VarId>,
    older: &mut Vec<ExprId>,
) {
    graph.vars_of_marked_all_before_into(roots, parts.frontier(), out, older);
    let mut finder = parts.finder();
    let (mut seen, mut last) = (0, [None; 2]);
    for &n in older.iter() {
        let Some(k) = finder.part_of(n) else { continue };
        if !last.contains(&Some(k)) {
            last[seen % 2] = Some(k);
            seen += 1;
            out.extend(free_parts.get(k).map(|p| p.vars[0]));
        }
    }
}

/// Per recorded owner, its equations' range and its unknowns (a part reached through
/// its frame by the part's first unknown).
#[derive(Debug, Clone, Default)]
pub(crate) struct OwnerVars {
    /// Per recorded owner in equation order: its first equation, one past its last, and
    /// one past its last unknown in `vars` (the previous entry's end is its start).
    ends: Vec<(u32, u32, u32)>,
    vars: Vec<VarId>,
    /// Kept between owners while recording: the roots, the unknowns, the older nodes.
    roots: Vec<ExprId>,
    scratch: Vec<VarId>,
    older: Vec<ExprId>,
}

impl OwnerVars {
    /// Records the unknowns below `equations[start..]`, the rows of one owner just made
    /// (nothing when there are none, or the graph is small).
    pub(crate) fn record(
        &mut self,
        graph: &mut ExprGraph,
        equations: &[Equation],
        start: usize,
        (parts, free_parts): (&PartNodes, &[FreePart]),
    ) {
        let Some(rows) = equations.get(start..).filter(|r| !r.is_empty()) else {
            return;
        };
        if graph.var_count() <= RECORD_ABOVE_UNKNOWNS {
            return;
        }
        let (Ok(first), Ok(end)) = (u32::try_from(start), u32::try_from(equations.len())) else {
            return;
        };
        self.roots.clear();
        self.roots.extend(rows.iter().map(|e| e.residual));
        let parts_made = (parts, free_parts);
        unknowns_of(
            graph,
            &self.roots,
            parts_made,
            &mut self.scratch,
            &mut self.older,
        );
        let before = self.vars.len();
        self.vars.extend_from_slice(&self.scratch);
        let Ok(var_end) = u32::try_from(self.vars.len()) else {
            self.vars.truncate(before);
            return;
        };
        self.ends.push((first, end, var_end));
    }

    /// Lets go of the lists used only while recording.
    pub(crate) fn finish(&mut self) {
        self.roots = Vec::new();
        self.scratch = Vec::new();
        self.older = Vec::new();
    }

    /// A cursor over the recorded owners, in equation order.
    pub(crate) fn cursor(&self) -> OwnerCursor<'_> {
        OwnerCursor {
            owners: self,
            next: 0,
        }
    }
}

/// Walks the recorded owners in equation order, answering for one owner at a time.
pub(crate) struct OwnerCursor<'a> {
    owners: &'a OwnerVars,
    next: usize,
}

impl<'a> OwnerCursor<'a> {
    /// The unknowns recorded for the owner whose rows are exactly `start..end`, if it
    /// was recorded; owners must be asked for in equation order.
    pub(crate) fn take(&mut self, start: usize, end: usize) -> Option<&'a [VarId]> {
        let ends = &self.owners.ends;
        // Skip recorded owners before `start` (none, when the caller asks for every
        // owner in order).
        while ends
            .get(self.next)
            .is_some_and(|&(first, _, _)| (first as usize) < start)
        {
            self.next += 1;
        }
        let &(first, last, var_end) = ends.get(self.next)?;
        if first as usize != start || last as usize != end {
            return None;
        }
        let var_start = match self.next {
            0 => 0,
            k => ends.get(k - 1).map_or(0, |e| e.2 as usize),
        };
        self.next += 1;
        self.owners.vars.get(var_start..var_end as usize)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::build::System;
    use crate::cluster::compile_clusters;
    use crate::test_fixtures::EVERY_KIND;
    use tenon_model::{Assembly, Motion};

    /// Every fixture with every kind of joint, side by side in one assembly (parts and
    /// joints renamed, fixtures with parameters or other units left out): some 45 free
    /// parts, cams' extra unknowns, counted angles, drives and motions.
    fn fixtures_side_by_side() -> (Assembly, usize) {
        let mut all: Option<Assembly> = None;
        let mut taken = 0;
        for name in EVERY_KIND {
            let path = format!("{}/../../fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap();
            let one = tenon_model::read_json(&text, None).unwrap();
            let all = all.get_or_insert_with(|| Assembly::new("side by side", one.units()));
            if !one.parameters().is_empty() || one.units() != all.units() {
                continue;
            }
            taken += 1;
            let mut parts = std::collections::HashMap::new();
            for (key, part) in one.parts() {
                let mut part = part.clone();
                part.id = format!("{name}/{}", part.id);
                parts.insert(key, all.add_part(part).unwrap());
            }
            let mut joints = std::collections::HashMap::new();
            for (key, joint) in one.joints() {
                let mut joint = joint.clone();
                joint.id = format!("{name}/{}", joint.id);
                joint.i.part = parts[&joint.i.part];
                joint.j.part = parts[&joint.j.part];
                joints.insert(key, all.add_joint(joint).unwrap());
            }
            for motion in one.motions() {
                all.add_motion(Motion {
                    joint: joints[&motion.joint],
                    ..motion.clone()
                })
                .unwrap();
            }
        }
        (all.unwrap(), taken)
    }

    /// What a split gives: per cluster its parts, extras, equations and turn counters,
    /// then the fixed set's equations.
    type Split = (Vec<(Vec<usize>, Vec<usize>, Vec<usize>, usize)>, Vec<usize>);

    fn split(system: &mut System) -> Split {
        let (clusters, fixed) = compile_clusters(system).unwrap();
        let clusters = clusters
            .iter()
            .map(|c| {
                let turns = c.turn_parameters().len();
                (
                    c.parts().to_vec(),
                    c.extras().to_vec(),
                    c.equations().to_vec(),
                    turns,
                )
            })
            .collect();
        (clusters, fixed.equations().to_vec())
    }

    /// The clusters from the owners the build recorded, and from walks that stop at
    /// the parts' frames, are the clusters of full walks of every owner (the module's
    /// invariant), on an assembly large enough to be recorded.
    #[test]
    fn recorded_owners_split_as_full_walks() {
        let (assembly, taken) = fixtures_side_by_side();
        assert!(taken >= 12, "only {taken} fixtures side by side");
        let mut recorded = System::build(&assembly).unwrap();
        assert!(recorded.graph.var_count() > RECORD_ABOVE_UNKNOWNS);
        assert!(!recorded.owner_vars.ends.is_empty());
        assert!(recorded.part_nodes.frontier() > 0);
        // Walked, stopping at the frontier: no owner recorded.
        let mut stopped = recorded.clone();
        stopped.owner_vars = OwnerVars::default();
        // Walked in full: no owner recorded, no frontier.
        let mut full = stopped.clone();
        full.part_nodes = PartNodes::default();
        let expected = split(&mut full);
        assert!(expected.0.len() >= taken, "{} clusters", expected.0.len());
        assert!(
            expected.0.iter().any(|c| !c.1.is_empty()),
            "no extra unknowns"
        );
        assert!(expected.0.iter().any(|c| c.3 > 0), "no counted angles");
        assert_eq!(split(&mut stopped), expected);
        assert_eq!(split(&mut recorded), expected);
    }

    /// The part of each node made while the parts were done, found through the two
    /// parts remembered and by search alike; nodes past the frontier have none.
    #[test]
    fn nodes_are_found_in_their_parts() {
        // Nodes by index: 0 and 1, unknowns and distinct constants.
        let mut g = ExprGraph::new();
        let mut ids = vec![None; 61];
        for k in 0..200 {
            let v = g.new_var(format!("v{k}"));
            for id in [g.zero(), g.one(), g.var(v), g.constant(f64::from(k) + 0.5)] {
                if let Some(slot) = ids.get_mut(id.index()) {
                    *slot = Some(id);
                }
            }
        }
        let id = |n: usize| ids[n].unwrap();
        let parts = PartNodes::new(vec![3, 10, 11, 40, 52]);
        assert_eq!(parts.frontier(), 52);
        let mut finder = parts.finder();
        let expected = |n: usize| match n {
            3..=9 => Some(0),
            10 => Some(1),
            11..=39 => Some(2),
            40..=51 => Some(3),
            _ => None,
        };
        for n in [5, 45, 6, 44, 10, 11, 39, 40, 51, 3, 9, 2, 52, 60, 0, 12, 50] {
            assert_eq!(finder.part_of(id(n)), expected(n), "node {n}");
        }
        let none = PartNodes::new(Vec::new());
        assert_eq!(none.frontier(), 0);
        assert_eq!(none.finder().part_of(id(0)), None);
    }
}
