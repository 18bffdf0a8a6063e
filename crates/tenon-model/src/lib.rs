//! Tenon's assembly model: parts, markers, joints, parameters, motions, forces and
//! simulation settings, with the readers and writers of the assembly formats.
//!
//! - [`read_json`] / [`write_json`]: assembly format v1 (`../shared/spec/assembly-format.md`);
//! - [`read_asmt`]: OndselSolver / FreeCAD `.asmt` files.
//!
//! Readers validate as they go; an error ([`ModelError`]) names the source, the place
//! (JSON path such as `joints[3].i.marker`, or line) and what is wrong. This crate
//! knows the formats but does no file IO: callers pass text.
//!
//! ```
//! # fn main() -> Result<(), tenon_model::ModelError> {
//! let text = r#"{ "format": "tenon-assembly", "version": 1,
//!   "parameters": { "L": 200 },
//!   "parts": [ { "id": "base", "grounded": true },
//!              { "id": "arm", "markers": { "pin": { "position": ["L", 0, 0] } } } ],
//!   "joints": [ { "id": "j1", "type": "hinge",
//!                 "i": { "part": "arm", "marker": "pin" },
//!                 "j": { "part": "base", "position": [0, 0, 0] } } ] }"#;
//! let assembly = tenon_model::read_json(text, Some("arm.json"))?;
//! assert_eq!(assembly.joint_count(), 1);
//! let again = tenon_model::read_json(&tenon_model::write_json(&assembly), None)?;
//! assert_eq!(tenon_model::write_json(&again), tenon_model::write_json(&assembly));
//!
//! let bad = text.replace("\"pin\" }", "\"pim\" }");
//! let err = tenon_model::read_json(&bad, Some("arm.json")).err();
//! assert_eq!(
//!     err.map(|e| e.to_string()).as_deref(),
//!     Some("arm.json: joints[0].i.marker: part 'arm' has no marker 'pim'")
//! );
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod asmt;
mod assembly;
mod error;
mod ids;
mod joint;
mod json;
mod placement;
mod scalar;
mod validate;

pub use asmt::{
    read_asmt, read_asmt_time_series, AsmtTimeSeries, PartRates, ASMT_MATRIX_TOLERANCE,
};
pub use assembly::{
    Assembly, Coordinate, Extra, Forces, JointKey, Load, Mass, Method, Motion, Part, PartKey,
    PartVelocity, Simulation, Spring,
};
pub use error::{ModelError, Place};
pub use joint::{
    CamProfile, Field, FieldUse, Joint, JointRate, JointType, Limits, MarkerRef, MarkerSpec, Range,
    Rule, MAX_PROFILE_POINTS, MEASURES,
};
pub use json::{
    read_joint_json, read_json, read_part_json, write_json, FORMAT_NAME, FORMAT_VERSION,
};
pub use placement::{
    matrix_to_quaternion, quaternion_multiply, quaternion_to_matrix, unit, Placement, Pose,
    Rotation, MATRIX_TOLERANCE,
};
pub use scalar::{
    AngleUnit, LengthUnit, MassUnit, Parameter, ParameterValues, Scalar, TimeUnit, Units,
};
