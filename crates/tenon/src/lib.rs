//! Tenon, a parametric assembly solver for CAD: the small, stable API a plugin calls.
//!
//! Load an assembly (a file, or JSON v1 / `.asmt` text), build its equations once, then
//! solve, change parameters and re-solve, drag parts, and read placements and reports.
//! Everything else (`tenon-model`, `tenon-system`, `tenon-solve`) is internal and may
//! change.
//!
//! ```
//! # fn main() -> Result<(), tenon::Error> {
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/slider-crank.json");
//! let mut mechanism = tenon::Mechanism::open(path)?;
//! let report = mechanism.solve()?;
//! assert!(report.converged);
//! let piston = mechanism.placement("piston").expect("the fixture has a piston");
//! assert!(piston.position[0] > 100.0);
//! # Ok(())
//! # }
//! ```
//!
//! Changing a dimension re-evaluates the same compiled equations:
//!
//! ```
//! # fn main() -> Result<(), tenon::Error> {
//! let text = r#"{ "format": "tenon-assembly", "version": 1, "parameters": { "L": 100 },
//!   "parts": [ { "id": "ground", "grounded": true },
//!              { "id": "slide", "placement": { "position": [0, 0, 100] } } ],
//!   "joints": [ { "id": "rail", "type": "slider", "i": { "part": "slide" },
//!                 "j": { "part": "ground" }, "distance": "L" } ] }"#;
//! let mut m = tenon::Mechanism::from_json(text, Some("rail.json"))?;
//! m.set_parameter("L", 120.0)?;
//! let report = m.solve()?;
//! assert!(report.converged);
//! let z = m.placement("slide").expect("part exists").position[2];
//! assert!((z - 120.0).abs() < 1e-9);
//! // Reports name joints and parts by key; the mechanism turns keys into ids.
//! assert_eq!(report.dof, Some(0));
//! # Ok(())
//! # }
//! ```
//!
//! A CAD host edits between solves; each edit is checked as a file would be:
//!
//! ```
//! # fn main() -> Result<(), tenon::Error> {
//! # let text = r#"{ "format": "tenon-assembly", "version": 1, "parameters": { "L": 100 },
//! #   "parts": [ { "id": "ground", "grounded": true },
//! #              { "id": "slide", "placement": { "position": [0, 0, 100] } } ],
//! #   "joints": [ { "id": "rail", "type": "slider", "i": { "part": "slide" },
//! #                 "j": { "part": "ground" }, "distance": "L" } ] }"#;
//! let mut m = tenon::Mechanism::from_json(text, None)?;
//! m.set_suppressed("rail", true)?;
//! assert_eq!(m.solve()?.dof, Some(6));
//! m.set_suppressed("rail", false)?;
//! assert_eq!(m.solve()?.dof, Some(0));
//! // A distance joint without its distance is refused, as the reader refuses it.
//! let ground = m.part_key("ground").expect("part exists");
//! let slide = m.part_key("slide").expect("part exists");
//! let end = |part| tenon::MarkerRef { part, marker: tenon::MarkerSpec::Inline(Default::default()) };
//! let joint = tenon::Joint {
//!     id: "d".into(), joint_type: tenon::JointType::Distance, i: end(slide), j: end(ground),
//!     suppressed: false, fields: vec![], profile: None, profile_i: None,
//!     limits: Default::default(), rate: Default::default(), extra: None,
//!     residuals: vec![],
//!     compliance: None,
//! };
//! let err = m.add_joint(joint).unwrap_err();
//! assert_eq!(err.to_string(), "<input>: joint 'd': a distance joint needs 'distance'");
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod compliance;
mod dynamics;
mod edit;
mod error;
mod kinematics;
mod mechanism;
mod report;

pub use compliance::{Yield, YIELD_COLUMNS};
pub use dynamics::{
    DynamicEvent, DynamicEventKind, DynamicFrame, DynamicFrames, DynamicMethod, DynamicTrajectory,
    Effort, Energy, IntegrationSettings, Reaction, SimulationSettings,
};
pub use error::Error;
pub use kinematics::{
    Event, EventKind, Frame, FrameView, Frames, JointFrame, PartFrame, RunSettings, Trajectory,
    DEFAULT_END, DEFAULT_STEPS, MAX_STEPS,
};
pub use mechanism::{load, load_with, LoadOptions, Mechanism, MAX_INPUT_BYTES};
pub use report::{ClusterReport, Constraint, Grounding, Phase, Report, Unsatisfied};

// The model: what a host builds in code, and what reports refer to.
pub use tenon_model::{
    read_asmt, read_asmt_time_series, read_joint_json, read_json, read_part_json, write_json,
    AsmtTimeSeries, Assembly, CamProfile, Coordinate, Field, Forces, Joint, JointKey, JointRate,
    JointType, Limits, Load, MarkerRef, MarkerSpec, Mass, ModelError, Motion as DrivenMotion,
    Parameter, Part, PartKey, PartRates, Place, Placement, Pose, Range, Rotation, Scalar,
    Simulation, Spring, Units, FORMAT_NAME, FORMAT_VERSION,
};
// The solver's options and diagnosis types.
pub use tenon_solve::{
    ClusterDiagnosis, Conditioning, Conflict, Diagnosis, FreeMotion, LimitReport, LimitSide,
    Motion, SolveOptions, SolveOrder, Status, Structure, Tolerances, CONDITION_WARNING,
    DIAGNOSE_COLUMNS, RANK_COLUMNS, RELATIVE_TOLERANCE, TOLERANCE,
};
