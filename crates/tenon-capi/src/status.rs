//! Statuses, the thread's last error, the guard every entry point runs in (panics caught,
//! failures turned into a status and a message), and pointers in and out.

use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a call did.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenonStatus {
    /// Done.
    Ok = 0,
    /// Input that cannot be used: a null pointer, text that is not UTF-8, a file or
    /// element with a problem (the message names the place), a value out of range.
    BadInput = 1,
    /// The equations do not hold (a solve that did not converge, a drag step refused);
    /// the mechanism stays as it was.
    NotSolved = 2,
    /// No part, joint or parameter of that name.
    UnknownName = 3,
    /// A buffer too small (the length needed was written), or an index past the end.
    WrongLength = 4,
    /// A failure inside Tenon (a bug): the message says what; the handle stays usable.
    InternalError = 5,
}

/// A failed call: its status and message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: TenonStatus,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: TenonStatus, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn bad(message: impl Into<String>) -> Failure {
        Failure::new(TenonStatus::BadInput, message)
    }
}

impl From<tenon::Error> for Failure {
    fn from(e: tenon::Error) -> Failure {
        let status = match &e {
            tenon::Error::UnknownParameter(_)
            | tenon::Error::UnknownPart(_)
            | tenon::Error::UnknownJoint(_) => TenonStatus::UnknownName,
            tenon::Error::Solve(_) => TenonStatus::InternalError,
            _ => TenonStatus::BadInput,
        };
        Failure::new(status, e.to_string())
    }
}

impl From<tenon::ModelError> for Failure {
    fn from(e: tenon::ModelError) -> Failure {
        Failure::bad(e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn set_last_error(message: &str) {
    LAST_ERROR.with(|e| {
        let mut e = e.borrow_mut();
        e.clear();
        e.push_str(message);
    });
}

/// Runs an entry point's body: its failure becomes a status and the thread's last
/// error; a panic is caught and becomes `InternalError`. Success clears the last error.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> TenonStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => {
            set_last_error("");
            TenonStatus::Ok
        }
        Ok(Err(f)) => {
            set_last_error(&f.message);
            f.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            set_last_error(&format!("internal error: {what}"));
            TenonStatus::InternalError
        }
    }
}

/// The text of a C string argument (`what` names it in the error).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string valid for reads until the call
/// returns.
pub(crate) unsafe fn text_in<'a>(p: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::bad(format!("{what}: a null pointer")));
    }
    // SAFETY: the caller's contract: `p` is a NUL-terminated string valid for reads.
    let bytes = unsafe { CStr::from_ptr(p) };
    bytes
        .to_str()
        .map_err(|e| Failure::bad(format!("{what}: not UTF-8 ({e})")))
}

/// Like [`text_in`], `None` for a null pointer.
///
/// # Safety
/// As for [`text_in`].
pub(crate) unsafe fn optional_text_in<'a>(
    p: *const c_char,
    what: &str,
) -> Result<Option<&'a str>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract, as for `text_in`.
    unsafe { text_in(p, what) }.map(Some)
}

/// `N` doubles read from a C array.
///
/// # Safety
/// `p` is null or points to at least `N` doubles valid for reads.
pub(crate) unsafe fn doubles_in<const N: usize>(
    p: *const f64,
    what: &str,
) -> Result<[f64; N], Failure> {
    if p.is_null() {
        return Err(Failure::bad(format!("{what}: a null pointer")));
    }
    let mut out = [0.0; N];
    for (k, slot) in out.iter_mut().enumerate() {
        // SAFETY: the caller's contract: `N` doubles are readable from `p`.
        *slot = unsafe { p.add(k).read() };
    }
    Ok(out)
}

/// Writes `N` doubles to a C array.
///
/// # Safety
/// `p` is null or points to at least `N` doubles valid for writes.
pub(crate) unsafe fn doubles_out<const N: usize>(
    p: *mut f64,
    values: [f64; N],
    what: &str,
) -> Result<(), Failure> {
    if p.is_null() {
        return Err(Failure::bad(format!("{what}: a null pointer")));
    }
    for (k, v) in values.into_iter().enumerate() {
        // SAFETY: the caller's contract: `N` doubles are writable at `p`.
        unsafe { p.add(k).write(v) };
    }
    Ok(())
}

/// Writes one value through an out pointer.
///
/// # Safety
/// `p` is null or points to a `T` valid for writes.
pub(crate) unsafe fn value_out<T>(p: *mut T, value: T, what: &str) -> Result<(), Failure> {
    if p.is_null() {
        return Err(Failure::bad(format!("{what}: a null pointer")));
    }
    // SAFETY: the caller's contract: `p` is writable for a `T`.
    unsafe { p.write(value) };
    Ok(())
}

/// Copies `text` into the caller's buffer with a terminating NUL; `needed` (when not
/// null) receives the text's length in bytes without the NUL. A buffer shorter than
/// that plus one is `WrongLength` and is left as it was.
///
/// # Safety
/// `buffer` is null or points to `length` bytes valid for writes; `needed` is null or
/// points to a `size_t` valid for writes.
pub(crate) unsafe fn text_out(
    text: &str,
    buffer: *mut c_char,
    length: usize,
    needed: *mut usize,
) -> Result<(), Failure> {
    if !needed.is_null() {
        // SAFETY: the caller's contract: `needed` is writable.
        unsafe { needed.write(text.len()) };
    }
    if text.len() >= length || buffer.is_null() {
        return Err(Failure::new(
            TenonStatus::WrongLength,
            format!(
                "the text needs a buffer of {} bytes (with its NUL); {length} given",
                text.len() + 1
            ),
        ));
    }
    // SAFETY: the caller's contract: `buffer` has `length` writable bytes, and
    // `text.len() + 1 <= length`; the regions cannot overlap (`text` is ours).
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), text.len());
        buffer.add(text.len()).write(0);
    }
    Ok(())
}

/// The API version this library implements: a host refuses a library whose major
/// version is not the one it was built against, or whose minor version is older.
///
/// # Safety
/// `major` and `minor` are null or point to writable `uint32_t`s.
#[no_mangle]
pub unsafe extern "C" fn tenon_api_version(major: *mut u32, minor: *mut u32) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract: writable or null (refused).
        unsafe { value_out(major, crate::TENON_API_MAJOR, "major")? };
        // SAFETY: as above.
        unsafe { value_out(minor, crate::TENON_API_MINOR, "minor") }
    })
}

/// Copies the calling thread's last error message (empty after a call that succeeded)
/// into `buffer` (`length` bytes, NUL-terminated); `needed` receives its length without
/// the NUL. `TENON_STATUS_WRONG_LENGTH` when it does not fit (the message is kept).
///
/// # Safety
/// `buffer` is null or has `length` writable bytes; `needed` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_last_error(
    buffer: *mut c_char,
    length: usize,
    needed: *mut usize,
) -> TenonStatus {
    let message = LAST_ERROR.with(|e| e.borrow().clone());
    // Not through `guard`: that would overwrite the message being read.
    // SAFETY: the function's contract on `buffer`, `length` and `needed`.
    match catch_unwind(AssertUnwindSafe(|| unsafe {
        text_out(&message, buffer, length, needed)
    })) {
        Ok(Ok(())) => TenonStatus::Ok,
        Ok(Err(f)) => f.status,
        Err(_) => TenonStatus::InternalError,
    }
}

/// For hosts' tests of the error path: panics inside Tenon and returns
/// `TENON_STATUS_INTERNAL_ERROR` with the panic's message as the last error (the panic
/// never reaches the host).
#[no_mangle]
pub extern "C" fn tenon_selftest_panic() -> TenonStatus {
    guard(|| {
        #[allow(clippy::panic)]
        {
            panic!("tenon_selftest_panic was called")
        }
    })
}
