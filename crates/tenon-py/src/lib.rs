//! Tenon's Python module, `import tenon` (this is its native part, `tenon._tenon`; the
//! package `python/tenon` re-exports it with type stubs).
//!
//! - `Mechanism`: open a file, read JSON or `.asmt` text, or build in code (parts and
//!   joints as dicts in the file format's shape); solve, diagnose, placements,
//!   parameters, suppression, drag; kinematic and dynamic runs (`Run`, numpy arrays).
//! - `Report`: what a solve, a drag step or a diagnosis found.
//! - Errors: `tenon.InputError` (file, place and message as attributes; its subclass
//!   `tenon.UnknownNameError` for a part, joint or parameter that does not exist),
//!   `tenon.SolveError` (a drag step refused, a run that cannot start), `tenon.InternalError`
//!   (a panic inside Tenon, caught here: it never aborts the interpreter). All derive
//!   from `tenon.TenonError`.
//! - Solves, diagnoses and runs release the GIL.
//!
//! | module | what |
//! |---|---|
//! | `errors` | the exceptions and the mapping from the facade's errors; the panic guard |
//! | `mechanism` | the `Mechanism` class |
//! | `report` | `Report` and `Cluster` |
//! | `runs` | `Run` |

#![warn(missing_docs)]

use pyo3::prelude::*;

/// The allocator of Tenon's own allocations in the Python process (Python's are its
/// own): as the `tenon` command's, mimalloc, which serves the many small allocations of
/// reading, building and compiling an assembly faster than the system's (a CAD file from
/// text to answer 10 to 18% sooner, `docs/performance.md`). It replaces nothing of the
/// host's: the C `malloc` is not overridden.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod errors;
mod mechanism;
mod report;
mod runs;

/// The native module.
#[pymodule]
fn _tenon(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<mechanism::Mechanism>()?;
    m.add_class::<report::Report>()?;
    m.add_class::<report::Cluster>()?;
    m.add_class::<runs::Run>()?;
    m.add("TenonError", py.get_type::<errors::TenonError>())?;
    m.add("InputError", py.get_type::<errors::InputError>())?;
    m.add(
        "UnknownNameError",
        py.get_type::<errors::UnknownNameError>(),
    )?;
    m.add("SolveError", py.get_type::<errors::SolveError>())?;
    m.add("InternalError", py.get_type::<errors::InternalError>())?;
    m.add_function(wrap_pyfunction!(errors::_selftest_panic, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
