//! The crate's one error type.

use tenon_solve::SolveError;
use tenon_system::SystemError;

/// Why a run could not start or go on (a run that stops at a frame it cannot solve is
/// not an error: it ends with an event).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DynamicsError {
    /// Evaluating the equations failed.
    #[error(transparent)]
    System(#[from] SystemError),
    /// The solver's machinery failed.
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// Mass data a run cannot use (the message names the part).
    #[error("{0}")]
    BadMass(String),
    /// Forces or settings a run cannot use.
    #[error("{0}")]
    BadInput(String),
    /// Something the dynamics does not handle yet (the message says what).
    #[error("{0}")]
    Unsupported(String),
    /// A free part (its index among the system's free parts) whose rotational inertia
    /// is singular in a direction no joint holds: its motion there is undetermined.
    #[error("free part {0}: its inertia is singular about an axis no joint holds (the KKT system is singular there)")]
    SingularPart(usize),
    /// The start could not be made consistent (velocities or accelerations).
    #[error("{0}")]
    Start(String),
    /// Given coordinate rates (their tags, see `GivenRate`) that cannot hold with the
    /// joints, the motions and each other; the largest violation.
    #[error(
        "the given rates cannot all hold with the joints and motions (largest violation {1:.3e})"
    )]
    RatesConflict(Vec<usize>, f64),
}
