//! The module's exceptions, the facade's errors mapped onto them, and the guard that
//! turns a panic inside Tenon into `tenon.InternalError` (never an abort, never a
//! `BaseException` a host's `except Exception` would miss).

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    tenon,
    TenonError,
    PyException,
    "Every error Tenon raises derives from this."
);
create_exception!(
    tenon,
    InputError,
    TenonError,
    "Input that cannot be used: a file or element with a problem. Attributes: `file` \
     (or None), `place` (a JSON path such as `joints[3].i.marker`, `line 12, column 5`, \
     or None) and `message`."
);
create_exception!(
    tenon,
    UnknownNameError,
    InputError,
    "No part, joint or parameter of that name (attribute `name`)."
);
create_exception!(
    tenon,
    SolveError,
    TenonError,
    "The equations cannot be made to hold where the call needs them to: a drag step \
     refused (the parts stay where they were), a run that cannot start, an equilibrium \
     that does not exist."
);
create_exception!(
    tenon,
    InternalError,
    TenonError,
    "A failure inside Tenon (a bug); the mechanism stays usable."
);

/// An `InputError` with its attributes; `text` is its message as printed (the
/// facade's, which `tenon solve` prints too).
pub(crate) fn input_error_text(
    py: Python<'_>,
    text: String,
    (file, place): (Option<&str>, Option<String>),
    message: &str,
) -> PyErr {
    let err = InputError::new_err(text);
    let value = err.value(py);
    let _ = value.setattr("file", file);
    let _ = value.setattr("place", place);
    let _ = value.setattr("message", message);
    err
}

/// An `InputError` from a message without a file or place.
pub(crate) fn input_error(
    py: Python<'_>,
    file: Option<&str>,
    place: Option<String>,
    message: &str,
) -> PyErr {
    let text = match (file, &place) {
        (Some(f), Some(p)) => format!("{f}: {p}: {message}"),
        (Some(f), None) => format!("{f}: {message}"),
        (None, Some(p)) => format!("{p}: {message}"),
        (None, None) => message.to_string(),
    };
    input_error_text(py, text, (file, place), message)
}

/// The facade's error as the matching exception, its text the facade's.
pub(crate) fn to_py(py: Python<'_>, e: tenon::Error) -> PyErr {
    let text = e.to_string();
    match e {
        tenon::Error::Model(m) => {
            let place = m.place().to_string();
            input_error_text(
                py,
                text,
                (m.source_name(), (!place.is_empty()).then_some(place)),
                m.message(),
            )
        }
        tenon::Error::Io { path, message } => {
            input_error_text(py, text, (Some(&path), None), &message)
        }
        tenon::Error::TooLarge { ref path, .. } => {
            let message = text
                .strip_prefix(&format!("{path}: "))
                .unwrap_or(&text)
                .to_string();
            input_error_text(py, text.clone(), (Some(path), None), &message)
        }
        tenon::Error::UnknownPart(ref name)
        | tenon::Error::UnknownJoint(ref name)
        | tenon::Error::UnknownParameter(ref name) => unknown_name(py, name, &text),
        tenon::Error::Solve(_) => InternalError::new_err(text),
        tenon::Error::Equilibrium(_) => SolveError::new_err(text),
        _ => input_error_text(py, text.clone(), (None, None), &text),
    }
}

/// An `UnknownNameError` for `name`.
pub(crate) fn unknown_name(py: Python<'_>, name: &str, message: &str) -> PyErr {
    let err = UnknownNameError::new_err(message.to_string());
    let value = err.value(py);
    let _ = value.setattr("name", name);
    let _ = value.setattr("file", py.None());
    let _ = value.setattr("place", py.None());
    let _ = value.setattr("message", message);
    err
}

/// Runs `body`, a panic inside becoming `InternalError`.
pub(crate) fn guarded<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            Err(InternalError::new_err(format!("internal error: {what}")))
        }
    }
}

/// For tests of the error path: panics inside Tenon; raises `tenon.InternalError`.
#[pyfunction]
pub(crate) fn _selftest_panic() -> PyResult<()> {
    guarded(|| {
        #[allow(clippy::panic)]
        {
            panic!("_selftest_panic was called")
        }
    })
}
