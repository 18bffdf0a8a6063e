//! What a solve reports, in the client's terms: parts and joints by their keys (ids
//! through [`Mechanism::part_id`](crate::Mechanism::part_id) and
//! [`Mechanism::joint_id`](crate::Mechanism::joint_id)), never equation indices.

use tenon_model::{Coordinate, JointKey, PartKey};
use tenon_solve::{LimitReport, Status, Tolerances};
use tenon_system::{Owner, System};

/// How the assembly is held in space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grounding {
    /// At least one part is grounded.
    Explicit,
    /// No part is grounded: this one (the first) was held in place.
    FirstPart(PartKey),
}

/// What an equation comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Constraint {
    /// A joint's own equations.
    Joint(JointKey),
    /// A joint's driving value (its `angle` or `distance` field).
    Drive(JointKey, Coordinate),
    /// A motion (time function) on this joint.
    Motion(JointKey),
}

impl Constraint {
    /// The joint it belongs to.
    pub fn joint(self) -> JointKey {
        match self {
            Constraint::Joint(j) | Constraint::Drive(j, _) | Constraint::Motion(j) => j,
        }
    }
}

/// An equation that does not hold at the end of a solve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unsatisfied {
    /// Where it comes from.
    pub constraint: Constraint,
    /// Its residual (model units or radians).
    pub residual: f64,
}

/// What became of one cluster (parts that share equations, solved together).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterReport {
    /// Its free parts, in file order.
    pub parts: Vec<PartKey>,
    /// The joints whose equations it holds, in file order.
    pub joints: Vec<JointKey>,
    /// Well-, under- or over-constrained, failed, or not analysed (too large for the
    /// rank; `Mechanism::diagnose` analyses any size).
    pub status: Status,
    /// Degrees of freedom left, when the rank was taken.
    pub dof: Option<usize>,
    /// Newton iterations taken.
    pub iterations: usize,
    /// Largest residual at the end.
    pub max_residual: f64,
    /// Whether every equation holds within the tolerance (or, `placed`, repeated joints
    /// disagree within the geometric tolerance).
    pub converged: bool,
    /// Placed by least squares: repeated joints disagree by less than the geometric
    /// tolerance (`Mechanism::diagnose` gives each disagreement's joints and size).
    pub placed: bool,
    /// Joint limits active at the end, or violated.
    pub limits: Vec<LimitReport>,
    /// Stages it was solved in (1: whole).
    pub stages: usize,
}

/// The report of a solve or a drag step.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Whether every equation holds within the tolerance.
    pub converged: bool,
    /// Largest residual over the equations the solve was asked to satisfy.
    pub max_residual: f64,
    /// Degrees of freedom left, when every cluster's rank was taken.
    pub dof: Option<usize>,
    /// Cluster by cluster.
    pub clusters: Vec<ClusterReport>,
    /// Equations that do not hold, largest residual first.
    pub unsatisfied: Vec<Unsatisfied>,
    /// Joints that changed branch: an aligned axis (or a locked twist) ended reversed
    /// from the start, from the aligned side to the mirror side or back (a start more
    /// than 90 degrees off is on the mirror side). Never silent.
    pub flipped: Vec<JointKey>,
    /// How the assembly was held.
    pub grounding: Grounding,
    /// The tolerances the equations were judged by.
    pub tolerances: Tolerances,
    /// Compliant joints that gave way where joints disagree (file order; see
    /// `docs/format-notes.md`): the rigid joints hold and these are off by this much.
    pub yielded: Vec<crate::compliance::Yield>,
}

/// What equation `row` of `system` comes from.
pub(crate) fn constraint_of(system: &System, row: usize) -> Option<Constraint> {
    let joint = system.joint_of(row)?;
    Some(match system.equations()[row].owner {
        Owner::Joint(_) => Constraint::Joint(joint),
        Owner::Drive(_, c) => Constraint::Drive(joint, c),
        Owner::Motion(_) => Constraint::Motion(joint),
    })
}

/// The one rule for a cluster's status after a solve.
fn status(c: &tenon_solve::ClusterReport) -> Status {
    match (c.converged, c.rank, c.dof) {
        (false, _, _) => Status::Failed,
        (true, _, _) if c.placed => Status::OverConstrained,
        // Large clusters are solved sparse, without a rank.
        (true, None, _) | (true, _, None) => Status::NotAnalysed,
        (true, Some(rank), _) if rank < c.equations.len() => Status::OverConstrained,
        (true, _, Some(0)) => Status::WellConstrained,
        (true, _, Some(_)) => Status::UnderConstrained,
    }
}

impl Report {
    /// The solver's report, translated.
    pub(crate) fn new(system: &System, r: tenon_solve::SolveReport) -> Report {
        let clusters: Vec<ClusterReport> = r
            .clusters
            .into_iter()
            .map(|c| {
                // Equations come joint by joint in file order, then motions: a joint's
                // rows are consecutive, and only a motion can name a joint again.
                let mut joints: Vec<JointKey> = Vec::new();
                for &e in &c.equations {
                    match constraint_of(system, e) {
                        Some(Constraint::Motion(j)) if joints.contains(&j) => {}
                        Some(k) if joints.last() != Some(&k.joint()) => joints.push(k.joint()),
                        _ => {}
                    }
                }
                ClusterReport {
                    status: status(&c),
                    parts: c.parts,
                    joints,
                    dof: c.dof,
                    iterations: c.iterations,
                    max_residual: c.max_residual,
                    converged: c.converged,
                    placed: c.placed,
                    limits: c.limits,
                    stages: c.stages,
                }
            })
            .collect();
        let unsatisfied = r
            .unsatisfied
            .iter()
            .filter_map(|&(e, residual)| {
                constraint_of(system, e).map(|constraint| Unsatisfied {
                    constraint,
                    residual,
                })
            })
            .collect();
        Report {
            converged: r.converged,
            max_residual: r.max_residual,
            dof: clusters.iter().map(|c| c.dof).sum(),
            clusters,
            unsatisfied,
            flipped: r.flipped,
            tolerances: r.tolerances,
            yielded: Vec::new(),
            grounding: match system.grounding() {
                tenon_system::Grounding::Explicit | tenon_system::Grounding::Floating => {
                    Grounding::Explicit
                }
                tenon_system::Grounding::FirstPart(p) => Grounding::FirstPart(p),
            },
        }
    }
}

/// A step of a long build or solve, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Turning joints into equations.
    Building,
    /// Compiling the equations into tapes.
    Compiling,
    /// Solving this many clusters.
    Solving {
        /// How many.
        clusters: usize,
    },
    /// Diagnosing (rank, redundant and conflicting joints, free motions).
    Diagnosing,
}
