//! Tenon's equations: an assembly's joints as residual expressions over part
//! coordinates, compiled once into a tape.
//!
//! - Each free part contributes its position `p` and unit quaternion `q = (w, x, y, z)`
//!   as unknowns (7 graph variables); grounded parts and marker placements are
//!   expressions over the assembly's parameters, so changing a parameter or the time
//!   re-evaluates without rebuilding.
//! - Every joint type emits exactly as many equations as degrees of freedom it removes
//!   (`joints.rs`); driving values and motions add one each; a cam adds an unknown.
//! - Steps and velocities live in the tangent space: 6 numbers per free part,
//!   `(dp, dtheta)` with `dtheta` a world-frame rotation vector and the update
//!   `q <- exp(dtheta) * q` ([`System::retract`]). [`System::tangent_jacobian`] maps the
//!   compiled `(p, q)` Jacobian there: `J_T = [J_p, J_q G(q)]`.
//! - Angles that count turns (gear, belt, rack-and-pinion, screw, driving angles) are
//!   `atan2(...) + 2 pi k` with `k` a parameter that [`System::update_turns`] keeps
//!   continuous between states, so ten turns of a screw are ten turns.

#![warn(missing_docs)]

mod branch;
mod build;
mod cluster;
mod contact;
mod custom;
mod error;
mod fold;
mod frames;
mod joints;
mod owners;
mod prefetch;
mod rates;
mod residual;
mod rows;
mod state;
mod tangent;
mod tangent_tape;
#[cfg(test)]
mod test_fixtures;

pub use build::{Equation, ExtraUnknown, FreePart, Grounding, LimitSpec, Owner, System};
pub use cluster::{ClusterOutput, ClusterTape, LimitRow, LimitSide, Scratch};
pub use error::SystemError;
pub use rates::{RateTape, RateWork};
pub use residual::{Quantity, Role};
pub use rows::RowEvaluator;
pub use state::{Compiled, StageTape, TurnCache};
pub use tangent::{Layout, TangentColumn, TangentJacobian, STATE_PER_PART, TANGENT_PER_PART};
pub use tangent_tape::{TangentPattern, TangentTape, TangentWork};
