//! A file that ends early is an error naming where it ends, never a smaller assembly.
//!
//! Every `.asmt` file OndselSolver and FreeCAD write has the same top-level sections, in
//! the same order, down to `AnimationParameters`; a file cut short loses the last ones.
//! A `TimeSeries` block (another solver's results) follows a fixed shape: a `Number`
//! and a `Time` row, then one block per assembly, part, joint, motion and force (an
//! `...Series /path` line and its rows of numbers, each as long as the `Number` row);
//! its blocks are counted against the assembly's items. Anything else after
//! `TimeSeries` is refused with its line.

use super::lines::BlockLines;
use super::tree::trim_end;
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
        let parts = self.kids(self.req(root, "Parts")?).count();
        let sets = self.req(root, "ConstraintSets")?;
        let mut others = 0;
        for key in CONSTRAINT_SETS {
            others += self.kids(self.req(sets, key)?).count();
        }
        others += self.kids(self.req(root, "ForceTorques")?).count();
        Ok((parts, others))
    }
}

/// Checks the `TimeSeries` block: `text` from its `TimeSeries` line (line `start`,
/// 1-based, of the file) to the end of the file. Its shape, and `parts` part blocks and
/// `others` other blocks.
pub(super) fn check_time_series(
    text: &str,
    start: usize,
    (parts, others): (usize, usize),
) -> Result<()> {
    // The first cell of a line and how many non-blank cells follow it (the cells are
    // not kept: a TimeSeries block is most of a large file). Blanks are ASCII white
    // space, all these files hold. When no cell of the block starts with a blank, control
    // or non-ASCII byte (`clean`, as the files are written) a row's cells are its tabs
    // plus one, counted in the one pass over the block; other rows cell by cell.
    fn blank(b: u8) -> bool {
        b.is_ascii_whitespace()
    }
    /// The first cell of a line and the non-blank cells after it: `tabs` (the line's
    /// tab count) when the block is clean, else counted cell by cell.
    fn cells(line: &str, tabs: usize, clean: bool) -> Option<(&str, usize)> {
        let bytes = line.as_bytes();
        if clean && bytes.first().is_some_and(|&b| !blank(b)) {
            let first = memchr::memchr(b'\t', bytes).unwrap_or(bytes.len());
            // Cut at a tab (ASCII), so on a character boundary: the line's own text,
            // not validated again as UTF-8 byte by byte.
            let head = line.get(..first)?;
            return Some((trim_end(head), tabs));
        }
        let mut head: Option<&str> = None;
        let mut count = 0;
        for cell in bytes.split(|&b| b == b'\t') {
            if cell.iter().all(|&b| blank(b)) {
                continue;
            }
            if head.is_some() {
                count += 1;
            } else {
                // ASCII trimming: the cell's ends are character boundaries.
                head = std::str::from_utf8(cell).ok().map(str::trim);
            }
        }
        head.map(|h| (h, count))
    }
    // The rows, after the `TimeSeries` line: their ends and tabs in one pass.
    let block = memchr::memchr(b'\n', text.as_bytes())
        .and_then(|end| text.get(end + 1..))
        .unwrap_or("");
    let scan = BlockLines::of(block.as_bytes());
    let clean = !scan.tab_then_blank && !block.ends_with('\t');
    // The lines from `start` on (numbered from 1), without their '\r', and their tabs;
    // `last` is the number of the file's last line.
    let last = start + scan.lines.len();
    let mut from = 0;
    let lines = scan
        .lines
        .iter()
        .zip(start + 1..)
        .map(|(&(end, tabs), line)| {
            let raw = block.get(from..end).unwrap_or("");
            from = end + 1;
            (line, raw.strip_suffix('\r').unwrap_or(raw), tabs)
        });
    let mut width: Option<usize> = None;
    let mut saw_time = false;
    // The open block: its kind, its header line and the rows it has so far.
    let mut open: Option<(&str, usize, usize)> = None;
    let (mut assembly_blocks, mut part_blocks, mut other_blocks) = (0, 0, 0);
    let close = |open: &mut Option<(&str, usize, usize)>| -> Result<()> {
        if let Some((kind, line, rows)) = open.take() {
            if rows != rows_of(kind) {
                return Err(ModelError::at_line(
                    line,
                    format!(
                        "'{kind}' has {rows} rows, a whole one has {} (a truncated file?)",
                        rows_of(kind)
                    ),
                ));
            }
        }
        Ok(())
    };
    for (line, raw, tabs) in lines {
        let Some((head, values)) = cells(raw, tabs, clean) else {
            continue;
        };
        // "PartSeries /Assembly1/Part1" or "PartSeries<tab>/Assembly1/Part1".
        // (The first space found byte by byte: heads are short.)
        let kind = head
            .bytes()
            .position(|b| b == b' ')
            .and_then(|at| head.get(..at))
            .unwrap_or(head);
        if kind.ends_with("Series") {
            close(&mut open)?;
            match kind {
                "AssemblySeries" => assembly_blocks += 1,
                "PartSeries" => part_blocks += 1,
                _ => other_blocks += 1,
            }
            open = Some((kind, line, 0));
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

#[cfg(test)]
mod tests {
    /// The block from its `TimeSeries` line (line 2 of the texts here).
    fn check_time_series(text: &str, start: usize, expected: (usize, usize)) -> super::Result<()> {
        let at = text.find("TimeSeries").unwrap_or(text.len());
        super::check_time_series(&text[at..], start, expected)
    }

    /// A TimeSeries of one assembly block (no parts, no joints) with `frames` values per
    /// row, each row written by `row(name, frame)`.
    fn series(frames: usize, row: impl Fn(&str, usize) -> String) -> String {
        let numbers: Vec<String> = (1..=frames).map(|k| k.to_string()).collect();
        let mut text = format!(
            "Assembly\nTimeSeries\nNumber\tInput\t{}\n",
            numbers.join("\t")
        );
        let times: Vec<String> = (0..=frames).map(|k| format!("{k}.0 ")).collect();
        text += &format!("Time\t{}\n", times.join("\t"));
        text += "AssemblySeries /Assembly1\n";
        for name in ["X", "Y", "Z", "Bx", "By", "Bz", "VX", "VY", "VZ"] {
            text += &row(name, frames);
        }
        for name in ["WX", "WY", "WZ", "AX", "AY", "AZ", "Ax", "Ay", "Az"] {
            text += &row(name, frames);
        }
        text
    }

    fn plain(name: &str, frames: usize) -> String {
        let cells: Vec<&str> = (0..=frames).map(|_| "0.5 ").collect();
        format!("{name}\t{}\n", cells.join("\t"))
    }

    #[test]
    fn rows_as_written_and_rows_with_blank_cells_are_counted_alike() {
        assert!(check_time_series(&series(40, plain), 2, (0, 0)).is_ok());
        // Cells starting blank (the careful count) that still hold 41 values.
        let padded = |name: &str, frames: usize| {
            let cells: Vec<&str> = (0..=frames).map(|_| " 0.5").collect();
            format!("{name}\t{}\t \n", cells.join("\t"))
        };
        assert!(check_time_series(&series(40, padded), 2, (0, 0)).is_ok());
        // Windows line ends.
        let crlf = series(40, plain).replace('\n', "\r\n");
        assert!(check_time_series(&crlf, 2, (0, 0)).is_ok());
        // A cell starting with a control byte that is not white space, or with a
        // character beyond ASCII, sends the block to the careful count, which still
        // takes it for a value (and finds a row one value short).
        for start in ["\u{1}", "é"] {
            let cell = format!("{start}0.5");
            let odd = |name: &str, frames: usize| {
                let cells: Vec<&str> = (0..=frames).map(|_| cell.as_str()).collect();
                format!("{name}\t{}\n", cells.join("\t"))
            };
            assert!(check_time_series(&series(40, odd), 2, (0, 0)).is_ok());
            // The value emptied, or taken out with its tab.
            for damage in ["\t\t", "\t"] {
                let short = series(40, |name, frames| {
                    let row = odd(name, frames);
                    if name == "VY" {
                        row.replacen(&format!("\t{cell}\t"), damage, 1)
                    } else {
                        row
                    }
                });
                let err = check_time_series(&short, 2, (0, 0));
                assert!(err.is_err(), "{start:?} {damage:?}");
            }
        }
    }

    #[test]
    fn a_row_short_of_a_value_is_refused_naming_its_line() {
        for damage in ["\t\t", "\t \t", "\t"] {
            let text = series(40, |name, frames| {
                let row = plain(name, frames);
                if name == "VY" {
                    // One value gone: its cell emptied, or it and its tab removed.
                    row.replacen("\t0.5 \t", damage, 1)
                } else {
                    row
                }
            });
            let err = check_time_series(&text, 2, (0, 0)).unwrap_err();
            assert!(
                matches!(err.place(), crate::Place::Line { line: 13, .. }),
                "{damage:?}: {err}"
            );
            assert!(err.message().contains("40 values"), "{err}");
        }
    }
}
