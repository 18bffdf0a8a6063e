//! Tenon's C ABI (`include/tenon.h`): the facade (`tenon::Mechanism`) behind opaque
//! handles, for CAD hosts written in C or C++.
//!
//! The error model, one rule for every function:
//! - each returns a [`TenonStatus`]; on anything but `TENON_STATUS_OK` the thread's last
//!   error message says why, copied out by [`tenon_last_error`];
//! - an over- or under-constrained assembly is not an error: the solve returns
//!   `TENON_STATUS_NOT_SOLVED` when equations do not hold, and the diagnosis accessors
//!   say which joints are redundant or conflicting;
//! - null pointers and text that is not UTF-8 are `TENON_STATUS_BAD_INPUT`, a buffer too
//!   small is `TENON_STATUS_WRONG_LENGTH` (with the length needed), never a crash;
//! - a panic inside is caught at the boundary and becomes
//!   `TENON_STATUS_INTERNAL_ERROR` (it never unwinds into the host);
//! - a call that fails changes nothing (the mechanism stays as it was).
//!
//! Strings out follow one pattern: the caller's buffer and its length; the length the
//! text needs (without the terminating NUL) is written to `needed` whether or not it
//! fits, so a host can ask with a zero-length buffer first.
//!
//! Threads: a handle belongs to one thread at a time (no call on the same handle from
//! two threads at once); different handles are independent. Last errors are per thread.
//!
//! | module | what |
//! |---|---|
//! | `status` | statuses, the last error, the panic guard, pointers in and out |
//! | `mechanism` | create, free, build in code, solve, placements, parameters, suppression |
//! | `diagnosis` | the diagnosis, its accessors and the JSON reports |
//! | `drag` | drag begin / step / end |
//! | `runs` | kinematic and dynamic runs, frame by index |
//!
//! Architecture invariant: `unsafe` lives in this crate only (the workspace denies it
//! elsewhere); every block says why it is sound, and the pointer contracts are in the
//! header's comments.

// The C ABI needs `#[no_mangle]` and raw pointers: the workspace's `unsafe_code = deny`
// is lifted here, and here only; every block carries its safety comment.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

/// The allocator of Tenon's own allocations in the host's process (the host's are its
/// own): as the `tenon` command's, mimalloc, which serves the many small allocations of
/// reading, building and compiling an assembly faster than the system's (a CAD file from
/// text to answer 10 to 18% sooner, `docs/performance.md`). It replaces nothing of the
/// host's: the C `malloc` is not overridden.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod diagnosis;
mod drag;
mod mechanism;
mod runs;
mod status;

pub use diagnosis::*;
pub use drag::*;
pub use mechanism::*;
pub use runs::*;
pub use status::*;

/// The C API's major version: a host built against another major version must not use
/// this library.
pub const TENON_API_MAJOR: u32 = 1;
/// The C API's minor version: functions added without changing existing ones.
pub const TENON_API_MINOR: u32 = 3;
