//! The crate's one error type.

/// An assembly that cannot be turned into equations (its model validates, but a value
/// cannot be used here), or a failure to compile.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SystemError {
    /// The model is invalid (e.g. a parameter cycle).
    #[error(transparent)]
    Model(#[from] tenon_model::ModelError),
    /// An expression in the assembly does not lower (unknown name, bad syntax).
    #[error("{what}: {message}")]
    Expression {
        /// Which value.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// An element Tenon cannot build equations for.
    #[error("{what}: {message}")]
    Unsupported {
        /// Which element.
        what: String,
        /// Why.
        message: String,
    },
    /// A state, parameter or step vector of the wrong length was passed in.
    #[error("{what}: expected {expected} values, got {actual}")]
    WrongLength {
        /// Which vector (`state`, `parameters`, `step`).
        what: &'static str,
        /// The length the system has.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// Compilation or evaluation failed (a bug if it happens: the builder controls the
    /// expressions).
    #[error("expression engine: {0}")]
    Engine(#[from] tenon_expr::ExprError),
}
