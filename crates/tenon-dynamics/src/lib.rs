//! Tenon's dynamics: the parts move under gravity, springs and loads with the joints
//! held, computed on the same compiled equations, tangent-space Jacobian and
//! acceleration right-hand sides as the static solver and the kinematic runs.
//!
//! - Coordinates: per free part the velocity of the part frame's origin and the angular
//!   velocity, world frame (the solver's tangent space); the mass matrix and inertial
//!   terms in those coordinates (`bodies`).
//! - Equations of motion: `M(q) a + J^T lambda = f(q, v, t)` with the joints, driving
//!   values and motions (drives) as constraints `C(q, t) = 0`; `-J^T lambda` is the
//!   constraint force on the parts.
//! - Integration: index-3 generalized-alpha (`alpha`, the default) or index-1 with
//!   Baumgarte stabilisation and Runge-Kutta 4 (`baumgarte`); the start made consistent
//!   by one velocity projection and one KKT solve (`start`).
//!
//! | module | what |
//! |---|---|
//! | `bodies` | mass properties, the mass matrix and inertial terms in tangent coordinates |
//! | `forces` | gravity, springs and dampers, loads; energies and powers |
//! | `kkt` | the KKT matrix and its factorization |
//! | `start` | dependent rows, start velocities and accelerations |
//! | `alpha` | the generalized-alpha step |
//! | `baumgarte` | the Baumgarte step |
//! | `run` | the run, its frames and events |

#![warn(missing_docs)]

mod alpha;
mod baumgarte;
mod bodies;
mod dependence;
mod error;
mod forces;
mod kkt;
mod run;
mod start;

pub use bodies::Body;
pub use error::DynamicsError;
pub use forces::{Anchor, Dynamics, Energy, Load, Spring};
pub use run::{
    Event, EventKind, Frame, GivenRate, Inputs, Method, Run, Settings, StartVelocities, SPLIT_ROWS,
};
