//! Kinematic and dynamic runs: the whole run computed once, then read frame by index
//! (time, placements, joint coordinates), with its events.

use std::collections::HashMap;
use std::ffi::c_char;

use tenon::{Coordinate, RunSettings, SimulationSettings};

use crate::mechanism::handle;
use crate::status::{doubles_out, guard, text_in, text_out, value_out, Failure, TenonStatus};
use crate::TenonMechanism;

/// Which coordinate of a joint.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenonCoordinate {
    /// The angle of `x_i` from `x_j` about `z_j` (multi-turn), in the file's angle unit.
    Angle = 0,
    /// The distance of `O_i` from `O_j` along `z_j`.
    Distance = 1,
}

/// One frame as the host reads it.
#[derive(Debug)]
struct RunFrame {
    time: f64,
    /// Per moving part (the run's order): position and quaternion.
    poses: Vec<([f64; 3], [f64; 4])>,
    /// Per joint coordinate: (joint id index, coordinate, value, rate).
    joints: Vec<(usize, Coordinate, f64, f64)>,
}

/// A finished run, read frame by index (opaque).
#[derive(Debug)]
pub struct TenonRun {
    parts: HashMap<String, usize>,
    joints: Vec<String>,
    frames: Vec<RunFrame>,
    events: Vec<(f64, String)>,
    completed: bool,
}

/// The run behind a pointer.
///
/// # Safety
/// `p` is null or a live run from `tenon_kinematics` / `tenon_simulate`, used by this
/// thread only during the call.
unsafe fn run_handle<'a>(p: *mut TenonRun) -> Result<&'a TenonRun, Failure> {
    // SAFETY: the caller's contract: null or a live run.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::bad("run: a null pointer"))
}

/// The run's settings from the file, with `end` and `step` where positive.
fn settings(m: &tenon::Mechanism, end: f64, step: f64) -> Result<RunSettings, Failure> {
    let given = |x: f64| (x > 0.0).then_some(x);
    Ok(RunSettings::for_assembly(
        m.model(),
        given(end),
        given(step),
    )?)
}

struct Collected {
    frames: Vec<RunFrame>,
    events: Vec<(f64, String)>,
    completed: bool,
}

fn finish(m: &tenon::Mechanism, collected: Collected, ids: Vec<tenon::PartKey>) -> TenonRun {
    let parts = ids
        .iter()
        .enumerate()
        .filter_map(|(k, &p)| m.part_id(p).map(|id| (id.to_string(), k)))
        .collect();
    let joints = m.model().joints().map(|(_, j)| j.id.clone()).collect();
    TenonRun {
        parts,
        joints,
        frames: collected.frames,
        events: collected.events,
        completed: collected.completed,
    }
}

/// Per joint key, its position in the model's joints.
fn joint_index(m: &tenon::Mechanism) -> HashMap<tenon::JointKey, usize> {
    m.model()
        .joints()
        .enumerate()
        .map(|(k, (key, _))| (key, k))
        .collect()
}

fn frame_of(
    index: &HashMap<tenon::JointKey, usize>,
    time: f64,
    parts: &[tenon::PartFrame],
    joints: &[tenon::JointFrame],
) -> RunFrame {
    RunFrame {
        time,
        poses: parts.iter().map(|p| (p.position, p.quaternion)).collect(),
        joints: joints
            .iter()
            .filter_map(|j| Some((*index.get(&j.joint)?, j.coordinate, j.value, j.rate)))
            .collect(),
    }
}

/// A run for the host from the facade's frames and its events as (time, sentence).
fn collect(
    m: &tenon::Mechanism,
    frames: &[tenon::FrameView<'_>],
    events: Vec<(f64, String)>,
    completed: bool,
) -> TenonRun {
    let index = joint_index(m);
    let ids = frames
        .first()
        .map(|(_, parts, _)| parts.iter().map(|p| p.part).collect())
        .unwrap_or_default();
    let collected = Collected {
        frames: frames
            .iter()
            .map(|(time, parts, joints)| frame_of(&index, *time, parts, joints))
            .collect(),
        events,
        completed,
    };
    finish(m, collected, ids)
}

/// Hands a run to the host.
///
/// # Safety
/// `out` is null or writable.
unsafe fn hand_out(out: *mut *mut TenonRun, run: TenonRun) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::bad("out: a null pointer"));
    }
    // SAFETY: `out` is writable (checked non-null; the caller's contract).
    unsafe { out.write(Box::into_raw(Box::new(run))) };
    Ok(())
}

/// Runs the kinematics (the file's motions drive the joints) to `end` in steps of
/// `step` (either 0 or less: the file's `simulation` value). A run that stops at a frame
/// it cannot solve is still a run: `tenon_run_completed` says false and the events say
/// why. `*out` is a new run to free with [`tenon_run_free`].
///
/// # Safety
/// `mechanism` is a live handle (or null); `out` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_kinematics(
    mechanism: *mut TenonMechanism,
    end: f64,
    step: f64,
    out: *mut *mut TenonRun,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let m = &mut h.mechanism;
        let run = settings(m, end, step)?;
        let t = m.kinematics(run)?;
        let (frames, events) = (t.frame_views(), t.event_sentences());
        let run = collect(m, &frames, events, t.completed);
        // SAFETY: the function's contract on `out`.
        unsafe { hand_out(out, run) }
    })
}

/// Runs the dynamics (gravity, springs, loads, drives; the file's `simulation`
/// settings) to `end` in steps of `step` (0 or less: the file's). See
/// [`tenon_kinematics`] for stopped runs and `out`.
///
/// # Safety
/// `mechanism` is a live handle (or null); `out` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_simulate(
    mechanism: *mut TenonMechanism,
    end: f64,
    step: f64,
    out: *mut *mut TenonRun,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let m = &mut h.mechanism;
        let given = |x: f64| (x > 0.0).then_some(x);
        let s = SimulationSettings::for_assembly(m.model(), given(end), given(step))?;
        let t = m.simulate(s)?;
        let (frames, events) = (t.frame_views(), t.event_sentences());
        let run = collect(m, &frames, events, t.completed);
        // SAFETY: the function's contract on `out`.
        unsafe { hand_out(out, run) }
    })
}

/// Frees a run (null is ignored).
///
/// # Safety
/// `run` is null or a live run, not used by another thread, not freed before.
#[no_mangle]
pub unsafe extern "C" fn tenon_run_free(run: *mut TenonRun) {
    if run.is_null() {
        return;
    }
    // SAFETY: the function's contract: a live run from `Box::into_raw`, freed once.
    let boxed = unsafe { Box::from_raw(run) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(boxed)));
}

/// How many frames the run has, and whether it reached its end.
///
/// # Safety
/// `run` is a live run (or null); `count` and `completed` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_run_frame_count(
    run: *mut TenonRun,
    count: *mut usize,
    completed: *mut bool,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `run`.
        let r = unsafe { run_handle(run)? };
        // SAFETY: the function's contract on `count` and `completed`.
        unsafe {
            value_out(count, r.frames.len(), "count")?;
            value_out(completed, r.completed, "completed")
        }
    })
}

fn frame(r: &TenonRun, index: usize) -> Result<&RunFrame, Failure> {
    r.frames.get(index).ok_or_else(|| {
        Failure::new(
            TenonStatus::WrongLength,
            format!("no frame {index} ({} frames)", r.frames.len()),
        )
    })
}

/// Frame `index`'s time.
///
/// # Safety
/// `run` is a live run (or null); `time` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_run_time(
    run: *mut TenonRun,
    index: usize,
    time: *mut f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `run`.
        let r = unsafe { run_handle(run)? };
        let t = frame(r, index)?.time;
        // SAFETY: the function's contract on `time`.
        unsafe { value_out(time, t, "time") }
    })
}

/// A moving part's placement at frame `index`: `position` (3 doubles), `quaternion` (4,
/// w x y z). A grounded part is `TENON_STATUS_UNKNOWN_NAME` (it is not in the frames).
///
/// # Safety
/// `run` is a live run (or null); `part` null or a NUL-terminated string; `position`
/// null or 3 writable doubles; `quaternion` null or 4.
#[no_mangle]
pub unsafe extern "C" fn tenon_run_placement(
    run: *mut TenonRun,
    index: usize,
    part: *const c_char,
    position: *mut f64,
    quaternion: *mut f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `run` and `part`.
        let (r, part) = unsafe { (run_handle(run)?, text_in(part, "part")?) };
        let f = frame(r, index)?;
        let &(p, q) = r
            .parts
            .get(part)
            .and_then(|&k| f.poses.get(k))
            .ok_or_else(|| {
                Failure::new(
                    TenonStatus::UnknownName,
                    format!("no moving part '{part}' in the run"),
                )
            })?;
        // SAFETY: the function's contract on `position` and `quaternion`.
        unsafe {
            doubles_out(position, p, "position")?;
            doubles_out(quaternion, q, "quaternion")
        }
    })
}

/// A joint coordinate's value and rate at frame `index` (file units: angles in the
/// file's angle unit, multi-turn). `coordinate` is a `TenonCoordinate` value (taken as
/// an integer: any other is bad input, not undefined behaviour).
///
/// # Safety
/// `run` is a live run (or null); `joint` null or a NUL-terminated string; `value` and
/// `rate` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_run_joint(
    run: *mut TenonRun,
    index: usize,
    joint: *const c_char,
    coordinate: u32,
    value: *mut f64,
    rate: *mut f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `run` and `joint`.
        let (r, joint) = unsafe { (run_handle(run)?, text_in(joint, "joint")?) };
        let f = frame(r, index)?;
        let wanted = match coordinate {
            c if c == TenonCoordinate::Angle as u32 => Coordinate::Angle,
            c if c == TenonCoordinate::Distance as u32 => Coordinate::Distance,
            c => {
                return Err(Failure::bad(format!(
                    "coordinate: {c} is neither angle (0) nor distance (1)"
                )))
            }
        };
        let &(_, _, v, d) = f
            .joints
            .iter()
            .find(|(j, c, _, _)| *c == wanted && r.joints.get(*j).is_some_and(|id| id == joint))
            .ok_or_else(|| {
                Failure::new(
                    TenonStatus::UnknownName,
                    format!("joint '{joint}' has no such coordinate in the run"),
                )
            })?;
        // SAFETY: the function's contract on `value` and `rate`.
        unsafe {
            value_out(value, v, "value")?;
            value_out(rate, d, "rate")
        }
    })
}

/// How many events the run had (singular positions, refined steps, a stop and why).
///
/// # Safety
/// `run` is a live run (or null); `count` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_run_event_count(
    run: *mut TenonRun,
    count: *mut usize,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `run`.
        let r = unsafe { run_handle(run)? };
        // SAFETY: the function's contract on `count`.
        unsafe { value_out(count, r.events.len(), "count") }
    })
}

/// Event `index`: its time and its sentence into `buffer` (see `tenon_last_error` for the
/// buffer pattern).
///
/// # Safety
/// `run` is a live run (or null); `time` null or writable; `buffer` null or `length`
/// writable bytes; `needed` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_run_event(
    run: *mut TenonRun,
    index: usize,
    time: *mut f64,
    buffer: *mut c_char,
    length: usize,
    needed: *mut usize,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `run`.
        let r = unsafe { run_handle(run)? };
        let (t, message) = r.events.get(index).ok_or_else(|| {
            Failure::new(
                TenonStatus::WrongLength,
                format!("no event {index} ({} events)", r.events.len()),
            )
        })?;
        // SAFETY: the function's contract on `time`, `buffer`, `length` and `needed`.
        unsafe {
            value_out(time, *t, "time")?;
            text_out(message, buffer, length, needed)
        }
    })
}
