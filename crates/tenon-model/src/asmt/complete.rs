//! A file that ends early is an error naming where it ends, never a smaller assembly.
//!
//! Every `.asmt` file OndselSolver and FreeCAD write has the same top-level sections, in
//! the same order, down to `AnimationParameters`; a file cut short loses the last ones.
//! A `TimeSeries` block (another solver's results) follows a fixed shape: a `Number`
//! and a `Time` row, then one block per assembly, part, joint, motion and force (an
//! `...Series /path` line and its rows of numbers, each as long as the `Number` row);
//! its blocks are counted against the assembly's items. Anything else after
//! `TimeSeries` is refused with its line.

use super::{Reader, Result};
use crate::error::ModelError;

/// The sections a whole file has under `Assembly` (the first line is a banner).
const SECTIONS: [&str; 7] = [
    "Parts",
    "KinematicIJs",
    "ConstraintSets",
    "ForceTorques",
    "ConstantGravity",
    "SimulationParameters",
    "AnimationParameters",
];
/// Under `ConstraintSets`.
const CONSTRAINT_SETS: [&str; 3] = ["Joints", "Motions", "GeneralConstraintSets"];
/// Under `SimulationParameters`.
const SIMULATION: [&str; 6] = ["tstart", "tend", "hmin", "hmax", "hout", "errorTol"];
/// Under `AnimationParameters`.
const ANIMATION: [&str; 6] = [
    "nframe",
    "icurrent",
    "istart",
    "iend",
    "isForward",
    "framesPerSecond",
];

/// Rows of a `TimeSeries` block of each kind: position, Bryant angles, velocity,
/// angular velocity, acceleration and angular acceleration for the assembly and each
/// part; forces and torques for the rest (two sets for a curve contact).
fn rows_of(kind: &str) -> usize {
    match kind {
        "AssemblySeries" | "PartSeries" => 18,
        "CurveCurveContactSeries" => 12,
        _ => 6,
    }
}

impl Reader<'_, '_> {
    /// The error for a section missing where a whole file has it.
    fn ends_early(&self, missing: &str, within: &str) -> ModelError {
        ModelError::at_line(
            self.tree.last_line(),
            format!(
                "the file ends early: {within} has no '{missing}' (a truncated or damaged file?)"
            ),
        )
    }

    /// Every section of a whole file is there.
    pub(super) fn require_sections(&self, root: usize) -> Result<()> {
        for key in SECTIONS {
            if self.child(root, key).is_none() {
                return Err(self.ends_early(key, "the assembly"));
            }
        }
        let sets = self.req(root, "ConstraintSets")?;
        for key in CONSTRAINT_SETS {
            if self.child(sets, key).is_none() {
                return Err(self.ends_early(key, "'ConstraintSets'"));
            }
        }
        for (section, keys) in [
            ("SimulationParameters", &SIMULATION),
            ("AnimationParameters", &ANIMATION),
        ] {
            let n = self.req(root, section)?;
            for key in keys {
                match self.child(n, key) {
                    Some(k) if !self.kids(k).is_empty() => {}
                    _ => return Err(self.ends_early(key, &format!("'{section}'"))),
                }
            }
        }
        Ok(())
    }

    /// How many `TimeSeries` blocks a whole file has besides the assembly's: one per
    /// part, and one per joint, motion, general constraint and force.
    pub(super) fn series_expected(&self, root: usize) -> Result<(usize, usize)> {
        let parts = self.kids(self.req(root, "Parts")?).len();
        let sets = self.req(root, "ConstraintSets")?;
        let mut others = 0;
        for key in CONSTRAINT_SETS {
            others += self.kids(self.req(sets, key)?).len();
        }
        others += self.kids(self.req(root, "ForceTorques")?).len();
        Ok((parts, others))
    }
}

/// Checks the `TimeSeries` block, from its first line (`start`, 1-based) to the end of
/// `text`: its shape, and `parts` part blocks and `others` other blocks.
pub(super) fn check_time_series(
    text: &str,
    start: usize,
    (parts, others): (usize, usize),
) -> Result<()> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let last = lines.len();
    // The first cell and how many non-blank cells follow it (the cells are not kept: a
    // TimeSeries block is most of a large file, so this is one pass over the bytes;
    // blanks are ASCII white space, all these files hold).
    fn cells(line: &str) -> Option<(&str, usize)> {
        let mut head: Option<&str> = None;
        let mut count = 0;
        for cell in line.as_bytes().split(|&b| b == b'\t') {
            let Some(first) = cell.iter().position(|b| !b.is_ascii_whitespace()) else {
                continue;
            };
            if head.is_some() {
                count += 1;
                continue;
            }
            let end = cell
                .iter()
                .rposition(|b| !b.is_ascii_whitespace())
                .map_or(first, |e| e + 1);
            // ASCII positions: `trimmed` starts and ends on character boundaries.
            let trimmed = std::str::from_utf8(&cell[first..end]).ok()?;
            head = Some(trimmed);
        }
        head.map(|h| (h, count))
    }
    let mut width: Option<usize> = None;
    let mut saw_time = false;
    // The open block: its kind, its header line and the rows it has so far.
    let mut open: Option<(String, usize, usize)> = None;
    let (mut assembly_blocks, mut part_blocks, mut other_blocks) = (0, 0, 0);
    let close = |open: &mut Option<(String, usize, usize)>| -> Result<()> {
        if let Some((kind, line, rows)) = open.take() {
            if rows != rows_of(&kind) {
                return Err(ModelError::at_line(
                    line,
                    format!(
                        "'{kind}' has {rows} rows, a whole one has {} (a truncated file?)",
                        rows_of(&kind)
                    ),
                ));
            }
        }
        Ok(())
    };
    for (k, raw) in lines.iter().enumerate().skip(start) {
        let line = k + 1;
        let Some((head, values)) = cells(raw) else {
            continue;
        };
        // "PartSeries /Assembly1/Part1" or "PartSeries<tab>/Assembly1/Part1".
        let kind = head.split(' ').next().unwrap_or(head);
        if kind.ends_with("Series") {
            close(&mut open)?;
            match kind {
                "AssemblySeries" => assembly_blocks += 1,
                "PartSeries" => part_blocks += 1,
                _ => other_blocks += 1,
            }
            open = Some((kind.to_string(), line, 0));
            continue;
        }
        match (head, &mut open) {
            ("Number", None) => width = Some(values),
            ("Time", None) if width == Some(values) => saw_time = true,
            (_, Some((_, _, rows))) if width == Some(values) && saw_time => *rows += 1,
            _ => {
                return Err(ModelError::at_line(
                    line,
                    match width {
                        Some(w) => format!(
                            "a TimeSeries row of {values} values where the 'Number' row has {w} (a truncated or damaged file?)"
                        ),
                        None => "TimeSeries does not start with its 'Number' row".to_string(),
                    },
                ))
            }
        }
    }
    close(&mut open)?;
    let counts = [
        ("assembly", assembly_blocks, 1),
        ("part", part_blocks, parts),
        ("joint, motion and force", other_blocks, others),
    ];
    for (what, found, expected) in counts {
        if found != expected {
            return Err(ModelError::at_line(
                last,
                format!(
                    "the file ends early: TimeSeries has {found} {what} blocks, the assembly {expected} (a truncated file?)"
                ),
            ));
        }
    }
    Ok(())
}
