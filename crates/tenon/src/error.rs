//! The facade's one error type: input that cannot be used, or a name that does not
//! exist. An assembly that is over- or under-constrained is not an error: the report
//! says so.

use tenon_model::ModelError;

/// What can go wrong: input that cannot be used, or a name that does not exist.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file, text or element that is not usable (names the place).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The assembly cannot be turned into equations.
    #[error(transparent)]
    System(#[from] tenon_system::SystemError),
    /// The solver could not evaluate the equations (a bug if it happens).
    #[error(transparent)]
    Solve(#[from] tenon_solve::SolveError),
    /// A file could not be read.
    #[error("{path}: cannot read: {message}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// A file larger than the limit (see `LoadOptions`).
    #[error("{path}: {size} bytes, larger than the limit of {limit} bytes")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size (at least).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// No parameter of that name.
    #[error("no parameter '{0}'")]
    UnknownParameter(String),
    /// No part of that name.
    #[error("no part '{0}'")]
    UnknownPart(String),
    /// No joint of that name.
    #[error("no joint '{0}'")]
    UnknownJoint(String),
    /// The part is grounded (or held as the first part): it cannot be dragged.
    #[error("part '{0}' is grounded: it does not move")]
    GroundedPart(String),
    /// Dynamics cannot use the assembly's mass data, forces or start (the message names
    /// the part, spring or joints).
    #[error("dynamics: {0}")]
    Dynamics(String),
    /// Run settings that cannot be used (a step that is not positive, an end before
    /// the start, too many steps).
    #[error("run settings: {0}")]
    BadRun(String),
    /// A static equilibrium that does not exist (a load pushes a part along a freedom no
    /// joint holds) or cannot be computed here (the message says which).
    #[error("equilibrium: {0}")]
    Equilibrium(String),
    /// A value that must be a finite number (or a non-zero quaternion) is not.
    #[error("{what}: not a usable number ({value})")]
    NotFinite {
        /// What it is.
        what: String,
        /// The value.
        value: f64,
    },
}
