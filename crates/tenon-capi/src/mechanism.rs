//! The mechanism handle: create (from JSON or `.asmt` text, a file, or empty to build in
//! code), free, add parts, markers and joints, solve, placements in and out, parameters
//! and suppression.

use std::ffi::c_char;

use tenon::{Mechanism, Placement, Pose};

use crate::status::{
    doubles_in, doubles_out, guard, optional_text_in, text_in, text_out, value_out, Failure,
    TenonStatus,
};

/// An assembly with its equations built, ready to solve (opaque).
#[derive(Debug)]
pub struct TenonMechanism {
    pub(crate) mechanism: Mechanism,
    /// The last diagnosis (cleared by any change).
    pub(crate) diagnosis: Option<tenon::Diagnosis>,
    /// The parts a drag moves, between drag begin and end.
    pub(crate) dragging: Option<Vec<String>>,
}

impl TenonMechanism {
    fn new(mechanism: Mechanism) -> TenonMechanism {
        TenonMechanism {
            mechanism,
            diagnosis: None,
            dragging: None,
        }
    }

    /// Forgets what a change makes stale.
    pub(crate) fn changed(&mut self) {
        self.diagnosis = None;
    }
}

/// The handle behind a pointer.
///
/// # Safety
/// `p` is null or a pointer returned by one of the `tenon_mechanism_*` constructors and
/// not yet freed, used by no other thread during the call.
pub(crate) unsafe fn handle<'a>(p: *mut TenonMechanism) -> Result<&'a mut TenonMechanism, Failure> {
    // SAFETY: the caller's contract: null or a live handle used by this thread only.
    unsafe { p.as_mut() }.ok_or_else(|| Failure::bad("mechanism: a null pointer"))
}

/// Hands a new mechanism to the host through `out`.
///
/// # Safety
/// `out` is null or writable.
unsafe fn hand_out(out: *mut *mut TenonMechanism, mechanism: Mechanism) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::bad("out: a null pointer"));
    }
    let raw = Box::into_raw(Box::new(TenonMechanism::new(mechanism)));
    // SAFETY: `out` is writable (checked non-null; the caller's contract).
    unsafe { out.write(raw) };
    Ok(())
}

/// A mechanism read from `text` by `read` and handed out through `out`.
///
/// # Safety
/// `text` and `source` are null or NUL-terminated strings; `out` is null or writable.
unsafe fn from_text(
    text: *const c_char,
    source: *const c_char,
    out: *mut *mut TenonMechanism,
    read: fn(&str, Option<&str>) -> Result<Mechanism, tenon::Error>,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the caller's contract on `text` and `source`.
        let (text, source) =
            unsafe { (text_in(text, "text")?, optional_text_in(source, "source")?) };
        let m = read(text, source)?;
        // SAFETY: the caller's contract on `out`.
        unsafe { hand_out(out, m) }
    })
}

/// Builds a mechanism from assembly JSON (format v1) text; `source` (may be null) names
/// it in error messages. On success `*out` is a new handle to free with
/// [`tenon_mechanism_free`]; on failure `*out` is left as it was.
///
/// # Safety
/// `text` and `source` are null or NUL-terminated strings; `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_mechanism_from_json(
    text: *const c_char,
    source: *const c_char,
    out: *mut *mut TenonMechanism,
) -> TenonStatus {
    // SAFETY: the function's contract, passed on.
    unsafe { from_text(text, source, out, Mechanism::from_json) }
}

/// Builds a mechanism from OndselSolver / FreeCAD `.asmt` text (see
/// [`tenon_mechanism_from_json`] for `source` and `out`).
///
/// # Safety
/// As for [`tenon_mechanism_from_json`].
#[no_mangle]
pub unsafe extern "C" fn tenon_mechanism_from_asmt(
    text: *const c_char,
    source: *const c_char,
    out: *mut *mut TenonMechanism,
) -> TenonStatus {
    // SAFETY: the function's contract, passed on.
    unsafe { from_text(text, source, out, Mechanism::from_asmt) }
}

/// Reads an assembly file (`.json`, or `.asmt` by its extension) and builds it.
///
/// # Safety
/// `path` is null or a NUL-terminated string; `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_mechanism_open(
    path: *const c_char,
    out: *mut *mut TenonMechanism,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `path`.
        let path = unsafe { text_in(path, "path")? };
        let m = Mechanism::open(path)?;
        // SAFETY: the function's contract on `out`.
        unsafe { hand_out(out, m) }
    })
}

/// An empty mechanism to build in code. `units_json` (may be null: mm, deg, kg, s) is a
/// JSON object as a file's `units`, e.g. `{"length": "m", "angle": "rad"}`.
///
/// # Safety
/// `units_json` is null or a NUL-terminated string; `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_mechanism_new(
    units_json: *const c_char,
    out: *mut *mut TenonMechanism,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `units_json`.
        let units = unsafe { optional_text_in(units_json, "units")? };
        let m = empty(units)?;
        // SAFETY: the function's contract on `out`.
        unsafe { hand_out(out, m) }
    })
}

/// An empty mechanism in `units` (JSON object text, or the defaults).
pub(crate) fn empty(units: Option<&str>) -> Result<Mechanism, Failure> {
    let units: serde_json::Value = match units {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| Failure::bad(format!("units: not valid JSON: {e}")))?,
        None => serde_json::json!({}),
    };
    let document = serde_json::json!({
        "format": tenon::FORMAT_NAME,
        "version": tenon::FORMAT_VERSION,
        "units": units,
    });
    Ok(Mechanism::from_json(&document.to_string(), Some("units"))?)
}

/// Frees a handle (null is ignored). The handle must not be used afterwards.
///
/// # Safety
/// `mechanism` is null or a live handle from a `tenon_mechanism_*` constructor, not
/// used by any other thread, and not freed before.
#[no_mangle]
pub unsafe extern "C" fn tenon_mechanism_free(mechanism: *mut TenonMechanism) {
    if mechanism.is_null() {
        return;
    }
    // SAFETY: the function's contract: a live handle from `Box::into_raw`, freed once.
    let boxed = unsafe { Box::from_raw(mechanism) };
    // A panic while dropping must not unwind into the host.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(boxed)));
}

/// Adds a part from a JSON object as in a file's `parts` array (`id`, `placement`,
/// `grounded`, `markers`, `mass`, ...); the equations are rebuilt.
///
/// # Safety
/// `mechanism` is a live handle (or null); `part_json` is null or a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn tenon_add_part(
    mechanism: *mut TenonMechanism,
    part_json: *const c_char,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on both pointers.
        let (h, text) = unsafe { (handle(mechanism)?, text_in(part_json, "part")?) };
        let part = tenon::read_part_json(text)?;
        h.mechanism.add_part(part)?;
        h.changed();
        Ok(())
    })
}

/// Adds a marker named `marker` to part `part` at `position` (3 doubles, the part's
/// frame) turned by `quaternion` (4 doubles, w x y z; null: no turn).
///
/// # Safety
/// `mechanism` is a live handle (or null); `part` and `marker` are null or NUL-terminated
/// strings; `position` is null or 3 readable doubles; `quaternion` null or 4.
#[no_mangle]
pub unsafe extern "C" fn tenon_add_marker(
    mechanism: *mut TenonMechanism,
    part: *const c_char,
    marker: *const c_char,
    position: *const f64,
    quaternion: *const f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on every pointer.
        let (h, part, marker, position) = unsafe {
            (
                handle(mechanism)?,
                text_in(part, "part")?,
                text_in(marker, "marker")?,
                doubles_in::<3>(position, "position")?,
            )
        };
        let quaternion = if quaternion.is_null() {
            [1.0, 0.0, 0.0, 0.0]
        } else {
            // SAFETY: the function's contract: 4 readable doubles.
            unsafe { doubles_in::<4>(quaternion, "quaternion")? }
        };
        h.mechanism
            .add_marker(part, marker, Placement::from_numbers(position, quaternion))?;
        h.changed();
        Ok(())
    })
}

/// Adds a joint from a JSON object as in a file's `joints` array (`id`, `type`, `i`,
/// `j`, its fields, `limits`, `rate`); its markers are looked up among the parts added.
///
/// # Safety
/// `mechanism` is a live handle (or null); `joint_json` is null or a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn tenon_add_joint(
    mechanism: *mut TenonMechanism,
    joint_json: *const c_char,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on both pointers.
        let (h, text) = unsafe { (handle(mechanism)?, text_in(joint_json, "joint")?) };
        let joint = tenon::read_joint_json(text, h.mechanism.model())?;
        h.mechanism.add_joint(joint)?;
        h.changed();
        Ok(())
    })
}

/// Removes a joint (and the motions that drive it).
///
/// # Safety
/// `mechanism` is a live handle (or null); `joint` null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tenon_remove_joint(
    mechanism: *mut TenonMechanism,
    joint: *const c_char,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on both pointers.
        let (h, joint) = unsafe { (handle(mechanism)?, text_in(joint, "joint")?) };
        h.mechanism.remove_joint(joint)?;
        h.changed();
        Ok(())
    })
}

/// Suppresses a joint (`suppressed` true: kept, left out of the solve) or brings it back.
///
/// # Safety
/// `mechanism` is a live handle (or null); `joint` null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tenon_suppress_joint(
    mechanism: *mut TenonMechanism,
    joint: *const c_char,
    suppressed: bool,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on both pointers.
        let (h, joint) = unsafe { (handle(mechanism)?, text_in(joint, "joint")?) };
        h.mechanism.set_suppressed(joint, suppressed)?;
        h.changed();
        Ok(())
    })
}

/// Assembles from the current placements, moving the parts as little as possible.
/// `TENON_STATUS_NOT_SOLVED` when some equation does not hold (the parts stay where they
/// were; the message gives the largest residual, `tenon_diagnose` says why).
///
/// # Safety
/// `mechanism` is a live handle (or null).
#[no_mangle]
pub unsafe extern "C" fn tenon_solve(mechanism: *mut TenonMechanism) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        h.changed();
        let report = h.mechanism.solve()?;
        not_solved_unless(&report)
    })
}

/// `NotSolved` with the largest residual unless the report converged.
pub(crate) fn not_solved_unless(report: &tenon::Report) -> Result<(), Failure> {
    if report.converged {
        Ok(())
    } else {
        Err(Failure::new(
            TenonStatus::NotSolved,
            format!("not solved (largest residual {:.3e})", report.max_residual),
        ))
    }
}

/// A part's current placement: `position` (3 doubles) and `quaternion` (4 doubles, w x
/// y z, unit).
///
/// # Safety
/// `mechanism` is a live handle (or null); `part` null or a NUL-terminated string;
/// `position` null or 3 writable doubles; `quaternion` null or 4.
#[no_mangle]
pub unsafe extern "C" fn tenon_get_placement(
    mechanism: *mut TenonMechanism,
    part: *const c_char,
    position: *mut f64,
    quaternion: *mut f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism` and `part`.
        let (h, part) = unsafe { (handle(mechanism)?, text_in(part, "part")?) };
        let pose = h
            .mechanism
            .placement(part)
            .ok_or_else(|| Failure::new(TenonStatus::UnknownName, format!("no part '{part}'")))?;
        // SAFETY: the function's contract on `position` and `quaternion`.
        unsafe {
            doubles_out(position, pose.position, "position")?;
            doubles_out(quaternion, pose.quaternion, "quaternion")
        }
    })
}

/// Places a part by hand: a free part's next solve starts there; a grounded part is held
/// there from now on. `quaternion` (w x y z) need not be unit, but not zero.
///
/// # Safety
/// `mechanism` is a live handle (or null); `part` null or a NUL-terminated string;
/// `position` null or 3 readable doubles; `quaternion` null or 4.
#[no_mangle]
pub unsafe extern "C" fn tenon_set_placement(
    mechanism: *mut TenonMechanism,
    part: *const c_char,
    position: *const f64,
    quaternion: *const f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on every pointer.
        let (h, part, position, quaternion) = unsafe {
            (
                handle(mechanism)?,
                text_in(part, "part")?,
                doubles_in::<3>(position, "position")?,
                doubles_in::<4>(quaternion, "quaternion")?,
            )
        };
        h.mechanism.set_placement(
            part,
            &Pose {
                position,
                quaternion,
            },
        )?;
        h.changed();
        Ok(())
    })
}

/// Sets a parameter (the file's `parameters`; those defined from it follow). The next
/// solve uses it.
///
/// # Safety
/// `mechanism` is a live handle (or null); `name` null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tenon_set_parameter(
    mechanism: *mut TenonMechanism,
    name: *const c_char,
    value: f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism` and `name`.
        let (h, name) = unsafe { (handle(mechanism)?, text_in(name, "name")?) };
        h.mechanism.set_parameter(name, value)?;
        h.changed();
        Ok(())
    })
}

/// A parameter's current value.
///
/// # Safety
/// `mechanism` is a live handle (or null); `name` null or a NUL-terminated string;
/// `value` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_get_parameter(
    mechanism: *mut TenonMechanism,
    name: *const c_char,
    value: *mut f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism` and `name`.
        let (h, name) = unsafe { (handle(mechanism)?, text_in(name, "name")?) };
        let v = h.mechanism.parameter(name).ok_or_else(|| {
            Failure::new(TenonStatus::UnknownName, format!("no parameter '{name}'"))
        })?;
        // SAFETY: the function's contract on `value`.
        unsafe { value_out(value, v, "value") }
    })
}

/// The assembly as JSON (format v1) at its current placements, into `buffer` (see
/// `tenon_last_error` for the buffer pattern).
///
/// # Safety
/// `mechanism` is a live handle (or null); `buffer` null or `length` writable bytes;
/// `needed` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_to_json(
    mechanism: *mut TenonMechanism,
    buffer: *mut c_char,
    length: usize,
    needed: *mut usize,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let text = h.mechanism.to_json();
        // SAFETY: the function's contract on `buffer`, `length` and `needed`.
        unsafe { text_out(&text, buffer, length, needed) }
    })
}
