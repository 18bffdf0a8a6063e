//! `tenon kinematics`: the motions run over time; frames written as the spec's
//! trajectory (CSV or JSON by the output's extension, atomically), a summary on stdout.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use serde_json::{json, Map, Value};
use tenon::{EventKind, Frame, Mechanism, RunSettings, Trajectory};

use crate::output;
use crate::{bad_input, emit, Failure};

/// Runs longer than this show a progress bar (on a terminal).
const PROGRESS_AFTER: Duration = Duration::from_secs(1);

/// The trajectory formats, by the output's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Csv,
    Json,
}

fn format_of(path: &Path) -> Result<Format, Failure> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("csv") => Ok(Format::Csv),
        Some("json") => Ok(Format::Json),
        _ => Err(bad_input(anyhow!(
            "-o {}: a trajectory is written as .csv or .json",
            path.display()
        ))),
    }
}

/// Where a run command writes: the trajectory (`-o`), the HTML page, the plots.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outputs<'a> {
    pub(crate) trajectory: Option<&'a Path>,
    pub(crate) html: Option<&'a Path>,
    pub(crate) plot: Option<&'a Path>,
}

pub(crate) fn run(
    file: &Path,
    (end, step): (Option<f64>, Option<f64>),
    outputs: &Outputs<'_>,
) -> Result<(), Failure> {
    run_command(file, outputs, |mechanism, name| {
        let settings = RunSettings::for_assembly(mechanism.model(), end, step)
            .map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
        let total =
            ((settings.end() - settings.start()) / settings.output_step()).ceil() as u64 + 1;
        with_progress(total, |progress| {
            mechanism.kinematics_with_progress(settings, progress)
        })
        .map_err(|e| Failure {
            status: 1,
            error: anyhow!("{name}: {e}"),
        })
    })
}

/// What a run command writes: a trajectory as CSV and JSON, a summary, and why it
/// stopped early if it did.
pub(crate) trait Written {
    /// The CSV text.
    fn csv(&self, m: &Mechanism) -> String;
    /// The JSON document.
    fn json(&self, m: &Mechanism) -> Value;
    /// The summary for stdout.
    fn summary(&self, m: &Mechanism, name: &str, took: Duration) -> String;
    /// Why the run stopped before its end, if it did.
    fn stopped(&self) -> Option<String>;
    /// The run as the HTML page and the plots show it.
    fn view(&self, m: &Mechanism) -> tenon_report::RunView;
}

impl Written for Trajectory {
    fn csv(&self, m: &Mechanism) -> String {
        csv(m, self)
    }
    fn view(&self, m: &Mechanism) -> tenon_report::RunView {
        tenon_report::kinematics_view(m, self)
    }
    fn json(&self, m: &Mechanism) -> Value {
        json_of(m, self)
    }
    fn summary(&self, m: &Mechanism, name: &str, took: Duration) -> String {
        summary(m, self, name, took)
    }
    fn stopped(&self) -> Option<String> {
        (!self.completed).then(|| {
            self.events
                .last()
                .map_or_else(String::new, |e| e.message.clone())
        })
    }
}

/// A run command: the output's format checked first, the file loaded, the run made by
/// `go`, the trajectory written atomically, the summary printed (unless the trajectory
/// went to stdout), exit 1 when the run stopped early.
pub(crate) fn run_command<T: Written>(
    file: &Path,
    outputs: &Outputs<'_>,
    go: impl FnOnce(&mut Mechanism, &str) -> Result<T, Failure>,
) -> Result<(), Failure> {
    let name = file.display().to_string();
    let output = outputs.trajectory;
    for extra in [outputs.html, outputs.plot].into_iter().flatten() {
        output::check(extra, &[file])?;
    }
    let format = match output {
        Some(out) => {
            output::check(out, &[file])?;
            Some(format_of(out)?)
        }
        None => None,
    };
    let given = crate::solve::Given {
        sets: &[],
        tolerance: None,
    };
    let (mut mechanism, progress) = crate::solve::load(file, &given)?;
    progress.done();
    let began = Instant::now();
    let trajectory = go(&mut mechanism, &name)?;
    let took = began.elapsed();
    if let (Some(out), Some(format)) = (output, format) {
        let text = match format {
            Format::Csv => trajectory.csv(&mechanism),
            Format::Json => {
                let mut t =
                    serde_json::to_string_pretty(&trajectory.json(&mechanism)).unwrap_or_default();
                t.push('\n');
                t
            }
        };
        output::write(out, text.as_bytes()).map_err(bad_input)?;
    }
    let summary = trajectory.summary(&mechanism, &name, took);
    if outputs.html.is_some() || outputs.plot.is_some() {
        let view = trajectory.view(&mechanism);
        let drawn = |e: tenon_report::ReportError| Failure {
            status: 1,
            error: anyhow!("{name}: {e}"),
        };
        if let Some(html) = outputs.html {
            let page = tenon_report::run_html(&mechanism.assembly(), &view, &summary, &name)
                .map_err(drawn)?;
            output::write(html, page.as_bytes()).map_err(bad_input)?;
        }
        if let Some(plot) = outputs.plot {
            let svg = tenon_report::run_plots_svg(&view).map_err(drawn)?;
            output::write(plot, svg.as_bytes()).map_err(bad_input)?;
        }
    }
    let to_stdout = [output, outputs.html, outputs.plot]
        .into_iter()
        .flatten()
        .any(output::is_stdout);
    if !to_stdout {
        emit(&summary);
    }
    match trajectory.stopped() {
        None => Ok(()),
        Some(reason) => Err(Failure {
            status: 1,
            error: anyhow!("{name}: the run stopped early: {reason}"),
        }),
    }
}

/// Runs `go` with a progress callback that shows a bar (stderr, hidden off a terminal)
/// once the run has taken [`PROGRESS_AFTER`], out of `total` frames.
pub(crate) fn with_progress<T>(total: u64, go: impl FnOnce(&mut dyn FnMut(usize)) -> T) -> T {
    let began = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let out = go(&mut |frames| {
        if bar.is_none() && began.elapsed() > PROGRESS_AFTER {
            let b = indicatif::ProgressBar::with_draw_target(
                Some(total),
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} frames ({elapsed}, {eta} left)",
            ) {
                b.set_style(style);
            }
            bar = Some(b);
        }
        if let Some(b) = &bar {
            b.set_position(frames as u64);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    out
}

fn part_id(m: &Mechanism, k: tenon::PartKey) -> String {
    m.part_id(k).unwrap_or("?").to_string()
}

pub(crate) fn joint_id(m: &Mechanism, k: tenon::JointKey) -> String {
    m.joint_id(k).unwrap_or("?").to_string()
}

fn coordinate_name(c: tenon::Coordinate) -> &'static str {
    match c {
        tenon::Coordinate::Angle => "angle",
        tenon::Coordinate::Distance => "distance",
    }
}

fn kind_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::NotSolved => "not_solved",
        EventKind::Limit => "limit",
        EventKind::Singular => "singular",
        EventKind::Undriven => "undriven",
        _ => "event",
    }
}

fn summary(m: &Mechanism, t: &Trajectory, name: &str, took: Duration) -> String {
    let times: Vec<f64> = t.frames.iter().map(|f| f.time).collect();
    let worst = t.frames.iter().fold(0.0f64, |w, f| w.max(f.max_residual));
    let events = t
        .events
        .iter()
        .map(|e| (e.time, e.joints.as_slice(), e.message.as_str()));
    summary_text(m, (name, t.settings), (&times, worst, ""), took, events)
}

/// A run's summary: frames and their span, step and spacing, the largest residual,
/// `extra` (with its `; `), the time taken, then one line per event.
pub(crate) fn summary_text<'e>(
    m: &Mechanism,
    (name, s): (&str, RunSettings),
    (times, worst, extra): (&[f64], f64, &str),
    took: Duration,
    events: impl Iterator<Item = (f64, &'e [tenon::JointKey], &'e str)>,
) -> String {
    let mut out = format!(
        "{name}: {} frame(s) from t = {} to {} (step {}, written every {}); largest residual \
         {worst:.1e}; {extra}{:.1} ms\n",
        times.len(),
        s.start(),
        times.last().copied().unwrap_or(s.start()),
        s.step(),
        s.output_step(),
        took.as_secs_f64() * 1e3,
    );
    for (time, joints, message) in events {
        let joints: Vec<String> = joints.iter().map(|&j| joint_id(m, j)).collect();
        let _ = write!(out, "  t = {time}: {message}");
        if !joints.is_empty() {
            let _ = write!(out, " (joints: {})", joints.join(", "));
        }
        out.push('\n');
    }
    out
}

/// CSV field quoting: a name holding a comma, a quote or a line break is quoted.
pub(crate) fn field(name: &str) -> String {
    if name.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", name.replace('"', "\"\""))
    } else {
        name.to_string()
    }
}

/// The numbers of a part in a frame, in the spec's column order.
fn part_numbers(p: &tenon::PartFrame) -> impl Iterator<Item = f64> + '_ {
    p.position
        .iter()
        .chain(&p.quaternion)
        .chain(&p.velocity)
        .chain(&p.angular_velocity)
        .chain(&p.acceleration)
        .chain(&p.angular_acceleration)
        .copied()
}

const PART_COLUMNS: [&str; 19] = [
    "x", "y", "z", "qw", "qx", "qy", "qz", "vx", "vy", "vz", "wx", "wy", "wz", "ax", "ay", "az",
    "alphax", "alphay", "alphaz",
];

fn csv(m: &Mechanism, t: &Trajectory) -> String {
    let mut out = String::from("t");
    if let Some(first) = t.frames.first() {
        header(m, (&first.parts, &first.joints), &mut out);
    }
    out.push_str(",max_residual\n");
    let mut text = zmij::Buffer::new();
    for f in &t.frames {
        out.push_str(text.format(f.time));
        row((&f.parts, &f.joints), &mut out);
        number(&mut out, f.max_residual);
        out.push('\n');
    }
    out
}

/// `,x` with `x` in its shortest text that reads back to the same double (`NaN`, `inf`
/// and `-inf` where not finite); the standard formatting took most of a large run's
/// writing.
pub(crate) fn number(out: &mut String, x: f64) {
    out.push(',');
    out.push_str(zmij::Buffer::new().format(x));
}

/// The CSV columns of a frame's parts and joint coordinates (each after a comma).
pub(crate) fn header(
    m: &Mechanism,
    (parts, joints): (&[tenon::PartFrame], &[tenon::JointFrame]),
    out: &mut String,
) {
    for p in parts {
        let id = part_id(m, p.part);
        for c in PART_COLUMNS {
            out.push(',');
            out.push_str(&field(&format!("{id}.{c}")));
        }
    }
    for j in joints {
        let name = coordinate_name(j.coordinate);
        let id = joint_id(m, j.joint);
        out.push(',');
        out.push_str(&field(&format!("{id}.{name}")));
        out.push(',');
        out.push_str(&field(&format!("{id}.{name}_rate")));
    }
}

/// A frame's parts and joint coordinates as CSV numbers (each after a comma).
pub(crate) fn row((parts, joints): (&[tenon::PartFrame], &[tenon::JointFrame]), out: &mut String) {
    for p in parts {
        for x in part_numbers(p) {
            number(out, x);
        }
    }
    for j in joints {
        number(out, j.value);
        number(out, j.rate);
    }
}

/// A frame's parts (by id) and joint coordinates (by joint id) as the spec's JSON.
pub(crate) fn parts_and_joints_json(
    m: &Mechanism,
    (parts, joints): (&[tenon::PartFrame], &[tenon::JointFrame]),
) -> (Map<String, Value>, Map<String, Value>) {
    let parts: Map<String, Value> = parts
        .iter()
        .map(|p| {
            (
                part_id(m, p.part),
                json!({
                    "position": p.position,
                    "quaternion": p.quaternion,
                    "velocity": p.velocity,
                    "angular_velocity": p.angular_velocity,
                    "acceleration": p.acceleration,
                    "angular_acceleration": p.angular_acceleration,
                }),
            )
        })
        .collect();
    let mut by_joint: Map<String, Value> = Map::new();
    for j in joints {
        let name = coordinate_name(j.coordinate);
        let entry = by_joint
            .entry(joint_id(m, j.joint))
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(o) = entry {
            o.insert(name.to_string(), json!(j.value));
            o.insert(format!("{name}_rate"), json!(j.rate));
        }
    }
    (parts, by_joint)
}

fn frame_json(m: &Mechanism, f: &Frame) -> Value {
    let (parts, joints) = parts_and_joints_json(m, (&f.parts, &f.joints));
    json!({ "t": f.time, "max_residual": f.max_residual, "parts": parts, "joints": joints })
}

fn json_of(m: &Mechanism, t: &Trajectory) -> Value {
    let events = t.events.iter().map(|e| {
        (
            e.time,
            kind_name(e.kind),
            e.joints.as_slice(),
            e.message.as_str(),
        )
    });
    trajectory_json(
        m,
        ("kinematics", t.completed),
        t.frames.iter().map(|f| frame_json(m, f)).collect(),
        events,
    )
}

/// The spec's trajectory document: units, kind, frames (already written), events
/// (time, kind name, joints, message).
pub(crate) fn trajectory_json<'e>(
    m: &Mechanism,
    (kind, completed): (&str, bool),
    frames: Vec<Value>,
    events: impl Iterator<Item = (f64, &'e str, &'e [tenon::JointKey], &'e str)>,
) -> Value {
    let units: Map<String, Value> = m
        .model()
        .units()
        .names()
        .iter()
        .map(|&(q, u)| (q.to_string(), Value::String(u.to_string())))
        .collect();
    let events: Vec<Value> = events
        .map(|(time, kind, joints, message)| {
            let joints: Vec<String> = joints.iter().map(|&j| joint_id(m, j)).collect();
            json!({ "t": time, "kind": kind, "joints": joints, "message": message })
        })
        .collect();
    json!({
        "format": "tenon-trajectory",
        "version": 1,
        "units": units,
        "kind": kind,
        "completed": completed,
        "frames": frames,
        "events": events,
    })
}
