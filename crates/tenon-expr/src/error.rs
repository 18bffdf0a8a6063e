//! The crate's one error type.

use std::fmt;

use crate::node::{ExprId, VarId};

/// Errors of tenon-expr: unusable input to compilation or evaluation, and parse errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ExprError {
    /// A buffer passed to evaluation has the wrong length.
    #[error("{what}: expected {expected} values, got {got}")]
    Length {
        /// Which buffer.
        what: &'static str,
        /// Length required.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// The same unknown was listed twice as a Jacobian column.
    #[error("unknown {0:?} is listed twice as a Jacobian column")]
    DuplicateColumn(VarId),
    /// A local tape's output uses an unknown that is not one of its columns.
    #[error("unknown {0:?} is used but is not a column of this local tape")]
    NotAColumn(VarId),
    /// An id that does not belong to this graph (or this tape).
    #[error("expression {0:?} does not belong to this graph")]
    ForeignId(ExprId),
    /// An output buffer made by another tape (see `Tape::output`).
    #[error("this output buffer was made by another tape")]
    ForeignOutput,
    /// An expression string that does not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// A parse (or name-resolution) error in an expression string, with its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    column: usize,
    message: String,
}

impl ParseError {
    pub(crate) fn new(column: usize, message: impl Into<String>) -> Self {
        ParseError {
            column,
            message: message.into(),
        }
    }

    /// 1-based position in the string, in characters, where the problem is.
    pub fn column(&self) -> usize {
        self.column
    }

    /// What is wrong there (without the position).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at character {}: {}", self.column, self.message)
    }
}

impl std::error::Error for ParseError {}
