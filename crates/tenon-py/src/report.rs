//! `Report` (what a solve, a drag step or a diagnosis found) and `Cluster`.

use pyo3::prelude::*;

/// One independent group of parts after a solve.
#[pyclass(module = "tenon", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Its moving parts' ids.
    pub parts: Vec<String>,
    /// Its joints' ids.
    pub joints: Vec<String>,
    /// `well_constrained`, `under_constrained`, `over_constrained`, `conflicting`,
    /// `failed` or `not_analysed`.
    pub status: String,
    /// Degrees of freedom left, None when not counted.
    pub dof: Option<usize>,
    /// Placed by least squares: repeated joints disagree within the geometric tolerance.
    pub placed: bool,
    /// The condition estimate of a diagnosis (None after a solve, and for clusters
    /// analysed sparse): see `docs/diagnostics.md`, "Nearly repeated joints".
    pub condition: Option<f64>,
    /// Joints whose equations nearly repeat one another (estimate over 1e5).
    pub nearly_dependent: Vec<String>,
}

#[pymethods]
impl Cluster {
    fn __repr__(&self) -> String {
        format!(
            "Cluster(status={:?}, dof={}, parts={:?})",
            self.status,
            python_int(self.dof),
            self.parts
        )
    }
}

/// What a solve, drag step or diagnosis found.
#[pyclass(module = "tenon", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct Report {
    /// Whether every equation holds (`status` is then `solved`).
    pub converged: bool,
    /// `solved` or `failed` (a diagnosis with conflicting joints: `failed`).
    pub status: String,
    /// Degrees of freedom left, None when a cluster was too large to count.
    pub dof: Option<usize>,
    /// Largest residual (model units or radians).
    pub max_residual: f64,
    /// The clusters.
    pub clusters: Vec<Cluster>,
    /// Joints that changed branch (a drag step with any is refused).
    pub flipped: Vec<String>,
    /// Redundant joints (a diagnosis; empty after a solve).
    pub redundant: Vec<String>,
    /// Joints taking part in a conflict (a diagnosis; empty after a solve).
    pub conflicting: Vec<String>,
    /// Repeated joints that disagree within the geometric tolerance: each set's joint
    /// ids and the size of its disagreement (a diagnosis; empty after a solve).
    pub disagreements: Vec<(Vec<String>, f64)>,
    /// The tolerances the solve judged by: `length` (model units, scaled with the
    /// model's reach from the origin), `angle` (radians), `geometric` (model units),
    /// `reach` (model units).
    pub tolerances: std::collections::BTreeMap<String, f64>,
    /// Compliant joints that gave way where joints disagree (or under loads, after
    /// `equilibrium()`): each joint's id, its largest length residual (model units) and
    /// angle residual (the file's angle unit).
    pub yielded: Vec<(String, f64, f64)>,
}

#[pymethods]
impl Report {
    fn __repr__(&self) -> String {
        format!(
            "Report(status={:?}, dof={}, max_residual={:.3e}, clusters={})",
            self.status,
            python_int(self.dof),
            self.max_residual,
            self.clusters.len()
        )
    }

    fn __bool__(&self) -> bool {
        self.converged
    }
}

/// An optional count as Python prints it.
fn python_int(x: Option<usize>) -> String {
    x.map_or("None".to_string(), |d| d.to_string())
}

/// A report for the host from the facade's report (and diagnosis).
pub(crate) fn make(
    m: &tenon::Mechanism,
    report: &tenon::Report,
    diagnosis: Option<&tenon::Diagnosis>,
) -> Report {
    let joint = |k: tenon::JointKey| m.joint_id(k).unwrap_or("?").to_string();
    let part = |k: tenon::PartKey| m.part_id(k).unwrap_or("?").to_string();
    let placed = |k: usize| report.clusters.get(k).is_some_and(|c| c.placed);
    let cluster = |parts: &[tenon::PartKey],
                   joints: &[tenon::JointKey],
                   (status, dof): (tenon::Status, Option<usize>),
                   placed: bool,
                   conditioning: Option<&tenon::Conditioning>| Cluster {
        parts: parts.iter().map(|&p| part(p)).collect(),
        joints: joints.iter().map(|&j| joint(j)).collect(),
        status: status.name().to_string(),
        dof,
        placed,
        condition: conditioning.map(|c| c.estimate),
        nearly_dependent: conditioning
            .map(|c| c.nearly_dependent.iter().map(|&j| joint(j)).collect())
            .unwrap_or_default(),
    };
    let clusters = match diagnosis {
        Some(d) => d
            .clusters
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let conditioning = c.conditioning.as_ref();
                cluster(
                    &c.parts,
                    &c.joints,
                    (c.status, c.dof),
                    placed(k),
                    conditioning,
                )
            })
            .collect(),
        None => report
            .clusters
            .iter()
            .map(|c| cluster(&c.parts, &c.joints, (c.status, c.dof), c.placed, None))
            .collect(),
    };
    let mut redundant = Vec::new();
    let mut conflicting = Vec::new();
    let mut disagreements = Vec::new();
    if let Some(d) = diagnosis {
        for c in &d.clusters {
            for &j in &c.redundant {
                push_once(&mut redundant, joint(j));
            }
            for k in &c.conflicts {
                for &j in &k.joints {
                    push_once(&mut conflicting, joint(j));
                }
            }
            for k in &c.disagreements {
                disagreements.push((k.joints.iter().map(|&j| joint(j)).collect(), k.violation));
            }
        }
    }
    let failed = !report.converged || !conflicting.is_empty();
    Report {
        converged: report.converged,
        status: if failed { "failed" } else { "solved" }.to_string(),
        dof: match diagnosis {
            Some(d) => d.dof(),
            None => report.dof,
        },
        max_residual: report.max_residual,
        clusters,
        flipped: report.flipped.iter().map(|&j| joint(j)).collect(),
        redundant,
        conflicting,
        disagreements,
        tolerances: [
            ("length", report.tolerances.length),
            ("angle", report.tolerances.angle),
            ("geometric", report.tolerances.geometric),
            ("reach", report.tolerances.reach),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
        yielded: report
            .yielded
            .iter()
            .map(|y| {
                let per_angle = m.model().units().angle.radians();
                (joint(y.joint), y.length, y.angle / per_angle)
            })
            .collect(),
    }
}

fn push_once(list: &mut Vec<String>, name: String) {
    if !list.contains(&name) {
        list.push(name);
    }
}
