//! The sentences of `tenon check` about one cluster, each with the joints and parts it
//! is about, so the command prints them and the HTML view highlights what they name.

use tenon::{Assembly, ClusterDiagnosis, JointKey, Motion, PartKey};

use crate::{joint_name, part_name, round};

/// What a sentence is about; sentences come grouped in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentenceKind {
    /// What the structure alone proves (excess equations, unfixed unknowns).
    Structure,
    /// A joint repeating what the others hold.
    Redundant,
    /// A joint that cannot hold with others.
    Conflict,
    /// A repeated joint disagreeing within the geometric tolerance.
    Disagreement,
    /// Joints whose equations nearly repeat one another (ill-conditioned).
    IllConditioned,
    /// Free motions were not listed (the cluster is too large to analyse).
    MotionsNotListed,
    /// A free motion of a part.
    FreeMotion,
}

impl SentenceKind {
    /// How a list of this kind is called ("... and 3 more redundant joints").
    pub fn plural(self) -> &'static str {
        match self {
            SentenceKind::Structure => "structural findings",
            SentenceKind::Redundant => "redundant joints",
            SentenceKind::Conflict => "conflicts",
            SentenceKind::Disagreement => "disagreements",
            SentenceKind::IllConditioned => "conditioning warnings",
            SentenceKind::MotionsNotListed => "notes",
            SentenceKind::FreeMotion => "free motions",
        }
    }
}

/// One sentence of the check report, with what it names.
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence {
    /// What it is about.
    pub kind: SentenceKind,
    /// The sentence, without indentation or line end.
    pub text: String,
    /// The joints it names.
    pub joints: Vec<JointKey>,
    /// The parts it names.
    pub parts: Vec<PartKey>,
}

/// A vector as `(x, y, z)`, rounded as the reports round.
pub fn format_vector(v: [f64; 3]) -> String {
    let r = round(v);
    format!("({}, {}, {})", r[0], r[1], r[2])
}

/// Joint names quoted and joined: `'a', 'b' and 'c'`.
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

/// Every sentence `tenon check` says about a cluster, grouped by kind in
/// [`SentenceKind`] order.
pub fn cluster_sentences(assembly: &Assembly, c: &ClusterDiagnosis) -> Vec<Sentence> {
    let mut out = Vec::new();
    let mut say = |kind, text: String, joints: Vec<JointKey>, parts: Vec<PartKey>| {
        out.push(Sentence {
            kind,
            text,
            joints,
            parts,
        });
    };
    if c.structure.excess_equations > 0 {
        say(
            SentenceKind::Structure,
            format!(
                "by structure alone, at least {} equation(s) repeat or conflict (more equations than the unknowns they involve)",
                c.structure.excess_equations
            ),
            Vec::new(),
            Vec::new(),
        );
    }
    if c.structure.unfixed_unknowns > 0 {
        say(
            SentenceKind::Structure,
            format!(
                "by structure alone, at least {} degree(s) of freedom are left (unknowns no equation reaches enough)",
                c.structure.unfixed_unknowns
            ),
            Vec::new(),
            Vec::new(),
        );
    }
    // Joints ending a disagreement get their own sentence below.
    let disagreeing: Vec<JointKey> = c
        .disagreements
        .iter()
        .filter_map(|d| d.joints.last().copied())
        .collect();
    for &j in c.redundant.iter().filter(|j| !disagreeing.contains(j)) {
        say(
            SentenceKind::Redundant,
            format!(
                "joint '{}' repeats what the other joints already hold (redundant)",
                joint_name(assembly, j)
            ),
            vec![j],
            Vec::new(),
        );
    }
    for k in &c.conflicts {
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
            say(
                SentenceKind::Conflict,
                format!("joint '{}' {sentence}", joint_name(assembly, *last)),
                k.joints.clone(),
                Vec::new(),
            );
        }
    }
    for d in &c.disagreements {
        if let Some((last, rest)) = d.joints.split_last() {
            let with = if rest.is_empty() {
                String::new()
            } else {
                format!(" with {}", names(assembly, rest))
            };
            say(
                SentenceKind::Disagreement,
                format!(
                    "joint '{}' repeats and disagrees{with} by {:.6}, within the tolerance: placed by least squares",
                    joint_name(assembly, *last),
                    d.violation
                ),
                d.joints.clone(),
                Vec::new(),
            );
        }
    }
    if let Some(cond) = c
        .conditioning
        .as_ref()
        .filter(|c| !c.nearly_dependent.is_empty())
    {
        say(
            SentenceKind::IllConditioned,
            format!(
                "ill-conditioned (estimate {:.1e}): the equations of {} nearly repeat one another; a small change can make them redundant or conflicting",
                cond.estimate,
                names(assembly, &cond.nearly_dependent)
            ),
            cond.nearly_dependent.clone(),
            Vec::new(),
        );
    }
    if c.free_motions.is_empty() && c.dof.is_some_and(|d| d > 0) {
        say(
            SentenceKind::MotionsNotListed,
            format!(
                "(free motions are listed for clusters of up to {} unknowns)",
                tenon::DIAGNOSE_COLUMNS
            ),
            Vec::new(),
            Vec::new(),
        );
    }
    for f in &c.free_motions {
        let part = part_name(assembly, f.part);
        let text = match f.motion {
            Motion::Translation { direction } => {
                format!("{part} can slide along {}", format_vector(direction))
            }
            Motion::Rotation { axis, point } if f.idle => format!(
                "{part} can spin about the axis {} through {} without moving anything else (idle)",
                format_vector(axis),
                format_vector(point)
            ),
            Motion::Rotation { axis, point } => format!(
                "{part} can turn about the axis {} through {}",
                format_vector(axis),
                format_vector(point)
            ),
            Motion::Screw { axis, point, pitch } => format!(
                "{part} can screw along the axis {} through {}, advancing {pitch:.6} per turn",
                format_vector(axis),
                format_vector(point)
            ),
        };
        say(SentenceKind::FreeMotion, text, Vec::new(), vec![f.part]);
    }
    out
}
