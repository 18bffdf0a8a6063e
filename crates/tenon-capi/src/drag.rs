//! Dragging, as CAD hosts do it: begin with the parts the mouse holds, step each toward
//! where the mouse puts it (the rest following on its current branch), end.

use std::ffi::c_char;

use tenon::Pose;

use crate::mechanism::{handle, not_solved_unless};
use crate::status::{doubles_in, guard, text_in, Failure, TenonStatus};
use crate::TenonMechanism;

/// Begins a drag of the `count` parts named in `parts`: each must exist and move (a
/// grounded part is refused, and nothing begins).
///
/// # Safety
/// `mechanism` is a live handle (or null); `parts` null or `count` readable pointers,
/// each null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tenon_drag_begin(
    mechanism: *mut TenonMechanism,
    parts: *const *const c_char,
    count: usize,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        if parts.is_null() && count > 0 {
            return Err(Failure::bad("parts: a null pointer"));
        }
        let mut names = Vec::with_capacity(count);
        for k in 0..count {
            // SAFETY: the function's contract: `count` readable pointers at `parts`,
            // each null or a NUL-terminated string.
            let name = unsafe { text_in(parts.add(k).read(), &format!("parts[{k}]"))? };
            moving(h, name)?;
            names.push(name.to_string());
        }
        h.dragging = Some(names);
        Ok(())
    })
}

/// `Ok` when `part` exists and moves.
fn moving(h: &TenonMechanism, part: &str) -> Result<(), Failure> {
    let key = h
        .mechanism
        .part_key(part)
        .ok_or_else(|| Failure::new(TenonStatus::UnknownName, format!("no part '{part}'")))?;
    let grounded = h.mechanism.model().part(key).is_some_and(|p| p.grounded);
    if grounded {
        return Err(Failure::bad(format!(
            "part '{part}' is grounded: it cannot be dragged"
        )));
    }
    Ok(())
}

/// One drag step: moves `part` (one of those the drag began with) toward `position`
/// (3 doubles) and `quaternion` (4 doubles, w x y z) as far as the joints allow.
/// `TENON_STATUS_NOT_SOLVED` when the step cannot be taken, or would flip a joint (an
/// aligned axis reversed): the parts stay where they were.
///
/// # Safety
/// `mechanism` is a live handle (or null); `part` null or a NUL-terminated string;
/// `position` null or 3 readable doubles; `quaternion` null or 4.
#[no_mangle]
pub unsafe extern "C" fn tenon_drag_step(
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
        let Some(dragging) = &h.dragging else {
            return Err(Failure::bad("no drag begun: call tenon_drag_begin first"));
        };
        if !dragging.iter().any(|p| p == part) {
            return Err(Failure::bad(format!(
                "part '{part}' is not among the parts this drag began with"
            )));
        }
        h.changed();
        let report = h.mechanism.drag(
            part,
            &Pose {
                position,
                quaternion,
            },
        )?;
        if !report.flipped.is_empty() {
            let names: Vec<String> = report
                .flipped
                .iter()
                .map(|&k| format!("'{}'", h.mechanism.joint_id(k).unwrap_or("?")))
                .collect();
            return Err(Failure::new(
                TenonStatus::NotSolved,
                format!(
                    "the step would flip joint(s) {}: refused, the parts stay where they were",
                    names.join(", ")
                ),
            ));
        }
        not_solved_unless(&report)
    })
}

/// Ends the drag.
///
/// # Safety
/// `mechanism` is a live handle (or null).
#[no_mangle]
pub unsafe extern "C" fn tenon_drag_end(mechanism: *mut TenonMechanism) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        if h.dragging.take().is_none() {
            return Err(Failure::bad("no drag begun"));
        }
        Ok(())
    })
}
