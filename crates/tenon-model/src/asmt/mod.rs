//! Reader for OndselSolver / FreeCAD `.asmt` files (tab-indented text).
//!
//! The text is first read into a tree of lines (a line's children are the following
//! lines indented one tab deeper), then mapped onto the assembly model. Every item is
//! either mapped, kept verbatim under an `extra` object (display geometry, animation
//! settings), or refused with an error naming its line; nothing is dropped unseen.
//! `docs/asmt.md` lists the mapping.
//!
//! Units: the files carry bare numbers; they load as metres, radians, kilograms and
//! seconds (OndselSolver is unit-agnostic, and its motion formulas are in radians).
//!
//! | module | owns |
//! |---|---|
//! | `lines` | line ends found in one vectorised pass: the tree's, and the `TimeSeries` block's with their tabs |
//! | `tree` | the indentation tree of lines, and reading items from it (numbers, poses, blocks kept verbatim) |
//! | `number` | numbers: the fast path for the files' decimals, the `d` marker |
//! | `model` | the assembly: parts, markers, mass, joints, springs, gravity, simulation |
//! | `motion` | motions, general motions and limits; OndselSolver formulas in Tenon's syntax |
//! | `curves` | `RefCurves` and the curve contacts between them |
//! | `extra` | what an element keeps under `extra`: small values as JSON text, blocks as their lines, made JSON text when asked for |
//! | `series` | the `TimeSeries` block (another solver's poses per frame) |
//! | `complete` | a file that ends early is an error: the sections a whole file has, the `TimeSeries` block's shape and counts |

use std::cell::RefCell;

use rustc_hash::FxHashSet;

use crate::assembly::Assembly;
use crate::error::ModelError;

/// How far an `.asmt` rotation matrix may be from orthonormal (exporters round).
pub const ASMT_MATRIX_TOLERANCE: f64 = 1e-4;

/// Reads an `.asmt` file's text. `source_name` (a file name) is put in errors.
pub fn read_asmt(
    text: &str,
    source_name: Option<&str>,
) -> std::result::Result<Assembly, ModelError> {
    let tree = Tree::parse(text).map_err(|e| e.in_source(source_name))?;
    let mut reader = Reader {
        tree: &tree,
        contact_markers: FxHashSet::default(),
        curves: RefCell::default(),
    };
    reader.contact_markers = reader.contact_marker_names();
    let read = || -> Result<Assembly> {
        let assembly = reader.assembly()?;
        if let Some((line, offset)) = tree.time_series_start() {
            let expected = reader.series_expected(reader.root()?)?;
            let block = text.get(offset..).unwrap_or("");
            complete::check_time_series(block, line, expected)?;
        }
        Ok(assembly)
    };
    read().map_err(|e| e.in_source(source_name))
}

type Result<T> = std::result::Result<T, ModelError>;

mod complete;
mod curves;
mod extra;
mod formula;
mod lines;
mod model;
mod motion;
mod number;
mod series;
mod tree;

pub(crate) use extra::AsmtExtra;
use model::pose_placement;
use number::parse_number;
pub use series::{read_asmt_time_series, AsmtTimeSeries, PartRates};
use tree::Tree;

struct Reader<'t, 'a> {
    tree: &'t Tree<'a>,
    /// `(part, marker)` names that curve contacts refer to.
    contact_markers: FxHashSet<(String, String)>,
    /// Curves of those markers, filled as parts are read.
    curves: RefCell<curves::Curves>,
}

/// A marker path resolved: the part and the marker's name.
struct MarkerPath {
    part: crate::PartKey,
    name: String,
}

#[cfg(test)]
mod tests {
    use super::model::spring_coefficients;
    use super::motion::translate_formula;
    use super::series::bryant_quaternion;
    use super::*;
    use crate::placement::quaternion_to_matrix;

    #[test]
    fn formulas_translate_to_tenon_syntax() {
        assert_eq!(translate_formula("2.0d*pi*time"), "2.0*pi*t");
        assert_eq!(translate_formula("1.0d-3*sin(time)"), "1.0e-3*sin(t)");
        assert_eq!(
            translate_formula("(0.0d + 10.0d*(rIJ(self) + (-0.5d)))"),
            "(0.0 + 10.0*(rIJ(self) + (-0.5)))"
        );
        assert_eq!(translate_formula("timex + 3e2"), "timex + 3e2");
    }

    #[test]
    fn spring_tension_gives_its_coefficients() {
        let t = translate_formula("(0.0d + 10.0d*(rIJ(self) + (-0.5d)) + 0.25d*vrIJ(self))");
        assert_eq!(spring_coefficients(&t), Some((10.0, 0.5, 0.25)));
        assert_eq!(
            spring_coefficients("5.0 + 10.0*(rIJ(self) - 0.5)"),
            Some((10.0, 0.0, 0.0))
        );
        assert_eq!(spring_coefficients("rIJ(self)^2"), None);
    }

    /// A block's lines written as JSON when asked for ([`extra::ExtraMap::insert_block`])
    /// are the list [`Reader::raw_block`] makes from the tree, for every line of every
    /// `.asmt` file at hand (the bundled ones, the corpus beside the project when it is
    /// there), and for lines the tree skips or cuts (`\r`, blank lines, tabs only).
    #[test]
    fn deferred_blocks_are_the_trees_lists() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let mut texts = vec![(
            "inline".to_string(),
            "Assembly\r\n\tNotes\r\n\t\ta \"quoted\" \\ note \r\n\r\n\t\t  \n\t\t\t\n\t\t\tdeeper\té\n\tName\n\t\tA"
                .to_string(),
        )];
        for dir in ["fixtures/asmt", "../shared/external/ondsel-asmt"] {
            let Ok(entries) = std::fs::read_dir(format!("{root}/{dir}")) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "asmt") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    texts.push((path.display().to_string(), text));
                }
            }
        }
        let mut blocks = 0;
        for (name, text) in &texts {
            let tree = Tree::parse(text).unwrap();
            let reader = Reader {
                tree: &tree,
                contact_markers: FxHashSet::default(),
                curves: RefCell::default(),
            };
            for n in 0..tree.nodes.len() {
                if reader.kids(n).is_empty() {
                    continue;
                }
                let mut map = extra::ExtraMap::new();
                map.insert_block("B", reader.block_lines(n));
                let deferred = map.into_extra().unwrap();
                let eager = serde_json::json!({ "asmt": { "B": reader.raw_block(n) } });
                assert_eq!(
                    deferred.as_json_text(),
                    eager.to_string(),
                    "{name}, node {n}"
                );
                blocks += 1;
            }
        }
        assert!(blocks > 10, "{blocks} blocks");
        println!("{} files, {blocks} blocks compared", texts.len());
    }

    #[test]
    fn bryant_angles_compose_x_then_y_then_z() {
        let q = bryant_quaternion(0.0, 0.0, std::f64::consts::FRAC_PI_2);
        let m = quaternion_to_matrix(q);
        assert!((m[0][1] + 1.0).abs() < 1e-12 && (m[1][0] - 1.0).abs() < 1e-12);
    }
}
