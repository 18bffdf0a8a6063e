//! Assembly format v1 (JSON): reading with validation, and writing. Every error names the
//! JSON path of the problem (`joints[3].i.marker`), or the line and column for text that
//! is not JSON at all.
//!
//! | module | owns |
//! |---|---|
//! | `value` | strict JSON values (a key twice is an error), objects read key by key, lists an item at a time |
//! | `lists` | where a document's `parts` and `joints` lie in its text, found without parsing them |
//! | `read` | the document: syntax and references; the model's rules via the builders |
//! | `write` | the document in the spec's key order |

mod lists;
mod read;
mod value;
mod write;

pub use write::write_json;

use crate::error::ModelError;
use crate::Assembly;

/// The `format` value of assembly files.
pub const FORMAT_NAME: &str = "tenon-assembly";
/// The format version this reader understands.
pub const FORMAT_VERSION: u64 = 1;

/// Reads one part object, as in a file's `parts` array (a host adding a part in code);
/// errors name their place below `part` (`part.markers.pin.position[2]`). Check it
/// against an assembly by adding it.
pub fn read_part_json(text: &str) -> Result<crate::Part, ModelError> {
    read::read_one_part(text)
}

/// Reads one joint object, as in a file's `joints` array, its marker references looked
/// up in `assembly`; errors name their place below `joint` (`joint.i.marker`).
pub fn read_joint_json(text: &str, assembly: &Assembly) -> Result<crate::Joint, ModelError> {
    read::read_one_joint(text, assembly)
}

/// Reads an assembly from JSON text. `source_name` (a file name) is put in errors.
pub fn read_json(text: &str, source_name: Option<&str>) -> Result<Assembly, ModelError> {
    read::read(text).map_err(|e| e.in_source(source_name))
}
