//! The crate's one error type: input that cannot be used, with its place.

use std::fmt;

/// Where in an input a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Place {
    /// A JSON path such as `joints[3].i.marker` (empty for the whole document).
    JsonPath(String),
    /// A 1-based line (and column, when known) of a text file.
    Line {
        /// Line, from 1.
        line: usize,
        /// Column, from 1, when known.
        column: Option<usize>,
    },
    /// An assembly built through the API: the element it concerns (e.g. `joint 'j1'`).
    Element(String),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::JsonPath(p) if p.is_empty() => write!(f, "(document)"),
            Place::JsonPath(p) => write!(f, "{p}"),
            Place::Line {
                line,
                column: Some(c),
            } => write!(f, "line {line}, column {c}"),
            Place::Line { line, column: None } => write!(f, "line {line}"),
            Place::Element(e) => write!(f, "{e}"),
        }
    }
}

/// An input Tenon cannot use: what is wrong and where. Displays as
/// `FILE: PLACE: MESSAGE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {place}: {message}", source_name.as_deref().unwrap_or("<input>"))]
pub struct ModelError {
    source_name: Option<String>,
    place: Place,
    message: String,
}

impl ModelError {
    pub(crate) fn new(place: Place, message: impl Into<String>) -> Self {
        ModelError {
            source_name: None,
            place,
            message: message.into(),
        }
    }

    pub(crate) fn at_path(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(Place::JsonPath(path.into()), message)
    }

    pub(crate) fn at_line(line: usize, message: impl Into<String>) -> Self {
        Self::new(Place::Line { line, column: None }, message)
    }

    pub(crate) fn in_source(mut self, name: Option<&str>) -> Self {
        if self.source_name.is_none() {
            self.source_name = name.map(str::to_string);
        }
        self
    }

    /// The file (or other source) name given when reading, if any.
    pub fn source_name(&self) -> Option<&str> {
        self.source_name.as_deref()
    }

    /// Where the problem is.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// What is wrong (without the place).
    pub fn message(&self) -> &str {
        &self.message
    }
}
