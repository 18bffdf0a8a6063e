//! The diagnosis and what a host reads after a solve: degrees of freedom, cluster
//! statuses, redundant and conflicting joints (plain accessors), and the spec's JSON
//! reports.

use std::ffi::c_char;

use tenon::{Diagnosis, JointKey, Report, Status};

use crate::mechanism::{handle, TenonMechanism};
use crate::status::{guard, optional_text_in, text_out, value_out, Failure, TenonStatus};

/// How a cluster of parts stands after a solve or a diagnosis.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenonClusterStatus {
    /// No freedom left, no joint repeated.
    WellConstrained = 0,
    /// Some freedom left.
    UnderConstrained = 1,
    /// Some joints repeat others (consistently).
    OverConstrained = 2,
    /// Some joints cannot hold together.
    Conflicting = 3,
    /// The solve did not converge, and no conflict explains it.
    Failed = 4,
    /// Too large for the dense analysis (no rank taken).
    NotAnalysed = 5,
}

impl From<Status> for TenonClusterStatus {
    fn from(s: Status) -> TenonClusterStatus {
        match s {
            Status::WellConstrained => TenonClusterStatus::WellConstrained,
            Status::UnderConstrained => TenonClusterStatus::UnderConstrained,
            Status::OverConstrained => TenonClusterStatus::OverConstrained,
            Status::Conflicting => TenonClusterStatus::Conflicting,
            Status::Failed => TenonClusterStatus::Failed,
            _ => TenonClusterStatus::NotAnalysed,
        }
    }
}

fn last_report(h: &TenonMechanism) -> Result<&Report, Failure> {
    h.mechanism
        .report()
        .ok_or_else(|| Failure::bad("no solve yet: call tenon_solve or tenon_diagnose first"))
}

fn diagnosed(h: &TenonMechanism) -> Result<&Diagnosis, Failure> {
    h.diagnosis
        .as_ref()
        .ok_or_else(|| Failure::bad("no diagnosis yet: call tenon_diagnose first"))
}

/// Solves, then diagnoses at the result: degrees of freedom, redundant and conflicting
/// joints, free motions. An over- or under-constrained assembly is a result, not an
/// error: `TENON_STATUS_OK` whenever the diagnosis ran; read it with the accessors or
/// `tenon_report_json`.
///
/// # Safety
/// `mechanism` is a live handle (or null).
#[no_mangle]
pub unsafe extern "C" fn tenon_diagnose(mechanism: *mut TenonMechanism) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        h.changed();
        h.diagnosis = Some(h.mechanism.diagnose()?);
        Ok(())
    })
}

/// Degrees of freedom left after the last solve or diagnosis; -1 when not counted (a
/// cluster too large for the rank).
///
/// # Safety
/// `mechanism` is a live handle (or null); `dof` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_dof(mechanism: *mut TenonMechanism, dof: *mut i64) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let counted = match &h.diagnosis {
            Some(d) => d.dof(),
            None => last_report(h)?.dof,
        };
        let value = counted.map_or(-1, |d| i64::try_from(d).unwrap_or(i64::MAX));
        // SAFETY: the function's contract on `dof`.
        unsafe { value_out(dof, value, "dof") }
    })
}

/// The largest residual of the last solve (model units or radians).
///
/// # Safety
/// `mechanism` is a live handle (or null); `residual` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_max_residual(
    mechanism: *mut TenonMechanism,
    residual: *mut f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let r = last_report(h)?.max_residual;
        // SAFETY: the function's contract on `residual`.
        unsafe { value_out(residual, r, "residual") }
    })
}

/// How many clusters (independent groups of parts) the last solve had.
///
/// # Safety
/// `mechanism` is a live handle (or null); `count` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_cluster_count(
    mechanism: *mut TenonMechanism,
    count: *mut usize,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let n = last_report(h)?.clusters.len();
        // SAFETY: the function's contract on `count`.
        unsafe { value_out(count, n, "count") }
    })
}

/// Cluster `index`'s status and degrees of freedom (-1 when not counted), from the last
/// diagnosis, or the last solve when there was none since.
///
/// # Safety
/// `mechanism` is a live handle (or null); `status` and `dof` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_cluster_status(
    mechanism: *mut TenonMechanism,
    index: usize,
    status: *mut TenonClusterStatus,
    dof: *mut i64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let (s, d) = match &h.diagnosis {
            Some(diagnosis) => diagnosis.clusters.get(index).map(|c| (c.status, c.dof)),
            None => last_report(h)?
                .clusters
                .get(index)
                .map(|c| (c.status, c.dof)),
        }
        .ok_or_else(|| Failure::new(TenonStatus::WrongLength, format!("no cluster {index}")))?;
        let d = d.map_or(-1, |d| i64::try_from(d).unwrap_or(i64::MAX));
        // SAFETY: the function's contract on `status` and `dof`.
        unsafe {
            value_out(status, TenonClusterStatus::from(s), "status")?;
            value_out(dof, d, "dof")
        }
    })
}

/// Cluster `index`'s condition estimate from the last diagnosis (the constraint
/// Jacobian's, scaled as the solver scales columns; see `docs/diagnostics.md`), -1 when
/// the diagnosis did not estimate it (clusters diagnosed sparse). Above 1e5 the report
/// names the nearly dependent joints (`tenon_report_json`: `nearly_dependent`).
///
/// # Safety
/// `mechanism` is a live handle (or null); `estimate` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_cluster_condition(
    mechanism: *mut TenonMechanism,
    index: usize,
    estimate: *mut f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let cluster = diagnosed(h)?
            .clusters
            .get(index)
            .ok_or_else(|| Failure::new(TenonStatus::WrongLength, format!("no cluster {index}")))?;
        let value = cluster.conditioning.as_ref().map_or(-1.0, |c| c.estimate);
        // SAFETY: the function's contract on `estimate`.
        unsafe { value_out(estimate, value, "estimate") }
    })
}

/// The diagnosis's redundant joints, or conflicting ones, in file order.
fn joints(h: &TenonMechanism, conflicting: bool) -> Result<Vec<String>, Failure> {
    let d = diagnosed(h)?;
    let keys: Vec<JointKey> = d
        .clusters
        .iter()
        .flat_map(|c| {
            if conflicting {
                c.conflicts.iter().flat_map(|k| k.joints.clone()).collect()
            } else {
                c.redundant.clone()
            }
        })
        .collect();
    let mut names: Vec<String> = Vec::new();
    for k in keys {
        let name = h.mechanism.joint_id(k).unwrap_or("?").to_string();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

/// How many joints the last diagnosis found redundant (`conflicting` false) or taking
/// part in a conflict (`conflicting` true).
///
/// # Safety
/// `mechanism` is a live handle (or null); `count` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_joint_issue_count(
    mechanism: *mut TenonMechanism,
    conflicting: bool,
    count: *mut usize,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let n = joints(h, conflicting)?.len();
        // SAFETY: the function's contract on `count`.
        unsafe { value_out(count, n, "count") }
    })
}

/// The id of redundant (`conflicting` false) or conflicting joint `index` (file order)
/// into `buffer` (see `tenon_last_error` for the buffer pattern).
///
/// # Safety
/// `mechanism` is a live handle (or null); `buffer` null or `length` writable bytes;
/// `needed` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_joint_issue(
    mechanism: *mut TenonMechanism,
    conflicting: bool,
    index: usize,
    buffer: *mut c_char,
    length: usize,
    needed: *mut usize,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let names = joints(h, conflicting)?;
        let name = names.get(index).ok_or_else(|| {
            Failure::new(
                TenonStatus::WrongLength,
                format!("no joint {index} ({} listed)", names.len()),
            )
        })?;
        // SAFETY: the function's contract on `buffer`, `length` and `needed`.
        unsafe { text_out(name, buffer, length, needed) }
    })
}

/// The spec's JSON report into `buffer`: after `tenon_diagnose`, the diagnosis (as
/// `tenon check --json`); after a solve or drag, the solve report (as `tenon solve
/// --json`, without the joint analysis).
///
/// # Safety
/// `mechanism` is a live handle (or null); `buffer` null or `length` writable bytes;
/// `needed` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_report_json(
    mechanism: *mut TenonMechanism,
    buffer: *mut c_char,
    length: usize,
    needed: *mut usize,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let report = last_report(h)?;
        let assembly = h.mechanism.assembly();
        let value = match &h.diagnosis {
            Some(d) => tenon_report::check_json(&assembly, report, d),
            None => tenon_report::solve_json(&assembly, report, None),
        };
        let text = serde_json::to_string_pretty(&value)
            .map_err(|e| Failure::new(TenonStatus::InternalError, e.to_string()))?;
        // SAFETY: the function's contract on `buffer`, `length` and `needed`.
        unsafe { text_out(&text, buffer, length, needed) }
    })
}

/// The diagnosis as one self-contained HTML page into `buffer` (as `tenon check
/// --html`): the assembly's diagram to turn and zoom, the joints coloured by what
/// `tenon_diagnose` found, the free motions, the report beside it. `title` (null: the
/// assembly's name) heads the page. Added in API 1.2.
///
/// # Safety
/// `mechanism` is a live handle (or null); `title` null or a NUL-terminated string;
/// `buffer` null or `length` writable bytes; `needed` null or writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_report_html(
    mechanism: *mut TenonMechanism,
    title: *const c_char,
    buffer: *mut c_char,
    length: usize,
    needed: *mut usize,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let report = last_report(h)?;
        let diagnosis = diagnosed(h)?;
        let assembly = h.mechanism.assembly();
        // SAFETY: the function's contract on `title`.
        let title = unsafe { optional_text_in(title, "title")? }
            .map_or_else(|| assembly.name().to_string(), str::to_string);
        let page = tenon_report::check_html(&assembly, report, diagnosis, &title);
        // SAFETY: the function's contract on `buffer`, `length` and `needed`.
        unsafe { text_out(&page, buffer, length, needed) }
    })
}

/// Sets the geometric tolerance (model length units, 0 or more): repeated joints that
/// disagree by less are placed by least squares and the cluster reported
/// over-constrained (`docs/tolerances.md`); 0 goes back to the length tolerance (the
/// default, unless the file gave one). The next solve uses it. Added in API 1.1.
///
/// # Safety
/// `mechanism` is a live handle (or null).
#[no_mangle]
pub unsafe extern "C" fn tenon_set_tolerance(
    mechanism: *mut TenonMechanism,
    tolerance: f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        h.mechanism.set_tolerance(Some(tolerance))?;
        Ok(())
    })
}

/// The tolerances the last solve judged by: `length` (model units, scaled with the
/// model's reach from the origin), `angle` (radians) and `geometric` (model units).
/// Added in API 1.1.
///
/// # Safety
/// `mechanism` is a live handle (or null); `length`, `angle` and `geometric` null or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tenon_tolerances(
    mechanism: *mut TenonMechanism,
    length: *mut f64,
    angle: *mut f64,
    geometric: *mut f64,
) -> TenonStatus {
    guard(|| {
        // SAFETY: the function's contract on `mechanism`.
        let h = unsafe { handle(mechanism)? };
        let t = last_report(h)?.tolerances;
        // SAFETY: the function's contract on `length`, `angle` and `geometric`.
        unsafe {
            value_out(length, t.length, "length")?;
            value_out(angle, t.angle, "angle")?;
            value_out(geometric, t.geometric, "geometric")
        }
    })
}
