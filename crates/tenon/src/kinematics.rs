//! Kinematic runs through the facade: the motions driven over time, frame by frame, in
//! the file's units (see the solver's `kinematics` module for the method).
//!
//! A run never moves the mechanism: it starts from the current pose and works on its
//! own copy. Frames come one at a time from [`Mechanism::kinematic_frames`] (a host
//! animates while it runs) or all together from [`Mechanism::kinematics`].

use tenon_model::{Assembly, JointKey, PartKey};
use tenon_solve::{run_rows, KinematicRun};
use tenon_system::{RateTape, STATE_PER_PART, TANGENT_PER_PART};

use crate::mechanism::{Built, Mechanism};
use crate::Error;

/// When a run starts and ends, its step, and the spacing of the frames it reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSettings {
    start: f64,
    end: f64,
    step: f64,
    output_step: f64,
}

/// The end of a run when neither the file nor the caller gives one (time units).
pub const DEFAULT_END: f64 = 1.0;
/// Steps per time unit when neither the file nor the caller gives a step.
pub const DEFAULT_STEPS: f64 = 100.0;
/// At most this many steps in one run (a step too small for its span is refused).
pub const MAX_STEPS: f64 = 1e8;

impl RunSettings {
    /// A run from `start` to `end` (`end >= start`) by `step` (`> 0`), reporting every
    /// `output_step` (a multiple of `step`; `None`: every step; not a multiple: every
    /// step, as the spec says for a `--step` that changes the file's step).
    pub fn new(
        start: f64,
        end: f64,
        step: f64,
        output_step: Option<f64>,
    ) -> Result<RunSettings, Error> {
        for (what, value) in [("start", start), ("end", end), ("step", step)] {
            if !value.is_finite() {
                return Err(Error::NotFinite {
                    what: format!("run {what}"),
                    value,
                });
            }
        }
        if step <= 0.0 {
            return Err(Error::BadRun(format!(
                "the step must be positive, found {step}"
            )));
        }
        if end < start {
            return Err(Error::BadRun(format!(
                "the run ends ({end}) before it starts ({start})"
            )));
        }
        if (end - start) / step > MAX_STEPS {
            return Err(Error::BadRun(format!(
                "{} steps of {step} from {start} to {end}: more than {MAX_STEPS}",
                ((end - start) / step).ceil()
            )));
        }
        let output_step = match output_step {
            Some(o) if o.is_finite() && o > 0.0 => {
                let ratio = o / step;
                if (ratio - ratio.round()).abs() < 1e-9 * ratio.max(1.0) && ratio.round() >= 1.0 {
                    o
                } else {
                    step
                }
            }
            _ => step,
        };
        Ok(RunSettings {
            start,
            end,
            step,
            output_step,
        })
    }

    /// The file's `simulation` settings (start 0 unless it gives one), with `end` and `step` given by the
    /// caller (the command line) taking their place; defaults [`DEFAULT_END`] and
    /// `1 / DEFAULT_STEPS`.
    pub fn for_assembly(
        assembly: &Assembly,
        end: Option<f64>,
        step: Option<f64>,
    ) -> Result<RunSettings, Error> {
        let values = assembly.parameter_values();
        let number = |s: &tenon_model::Scalar| values.value_of(s);
        let sim = assembly.simulation();
        let file_end = sim.and_then(|s| number(&s.end));
        let file_step = sim.and_then(|s| number(&s.step));
        let file_output = sim.and_then(|s| s.output_step.as_ref()).and_then(number);
        let start = sim
            .and_then(|s| s.start.as_ref())
            .and_then(number)
            .unwrap_or(0.0);
        let end = end.or(file_end).unwrap_or(DEFAULT_END);
        let step = step.or(file_step).unwrap_or(1.0 / DEFAULT_STEPS);
        RunSettings::new(start, end, step, file_output)
    }

    /// Start time.
    pub fn start(&self) -> f64 {
        self.start
    }
    /// End time.
    pub fn end(&self) -> f64 {
        self.end
    }
    /// Step.
    pub fn step(&self) -> f64 {
        self.step
    }
    /// Spacing of reported frames.
    pub fn output_step(&self) -> f64 {
        self.output_step
    }

    /// The times stepped to, each with whether it is reported: `start + k step`, the
    /// last exactly `end`.
    pub(crate) fn times(&self) -> Vec<(f64, bool)> {
        let span = self.end - self.start;
        let steps = (span / self.step - 1e-9).ceil().max(0.0) as usize;
        let every = (self.output_step / self.step).round().max(1.0) as usize;
        let mut out: Vec<(f64, bool)> = (0..=steps)
            .map(|k| {
                let t = if k == steps {
                    self.end
                } else {
                    self.start + k as f64 * self.step
                };
                (t, k % every == 0 || k == steps)
            })
            .collect();
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }
}

/// One free part in a frame, world frame, in the file's units (angles in its angle
/// unit per time unit).
#[derive(Debug, Clone, PartialEq)]
pub struct PartFrame {
    /// The part.
    pub part: PartKey,
    /// Origin of the part frame.
    pub position: [f64; 3],
    /// Orientation `[w, x, y, z]`, its sign kept from the frame before.
    pub quaternion: [f64; 4],
    /// Velocity of the origin.
    pub velocity: [f64; 3],
    /// Angular velocity.
    pub angular_velocity: [f64; 3],
    /// Acceleration of the origin.
    pub acceleration: [f64; 3],
    /// Angular acceleration.
    pub angular_acceleration: [f64; 3],
}

/// A joint's remaining coordinate in a frame: an angle (revolute, cylindrical, screw:
/// the turn of `x_i` from `x_j` about `z_j`, multi-turn, starting in the turn of the
/// loaded pose; in the file's angle unit) or a distance (slider, cylindrical: `(O_i -
/// O_j) . z_j`), and its rate, computed from the parts' velocities (no differences).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointFrame {
    /// The joint.
    pub joint: JointKey,
    /// Which coordinate.
    pub coordinate: tenon_model::Coordinate,
    /// Its value.
    pub value: f64,
    /// Its rate.
    pub rate: f64,
}

/// One reported frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Time.
    pub time: f64,
    /// Every free part, in file order.
    pub parts: Vec<PartFrame>,
    /// Every joint with a remaining coordinate, in file order (a cylindrical joint has
    /// two: angle, then distance).
    pub joints: Vec<JointFrame>,
    /// Largest residual of the equations held.
    pub max_residual: f64,
}

/// What can happen in a run.
pub use tenon_solve::EventKind;

/// Something that happened in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When.
    pub time: f64,
    /// What.
    pub kind: EventKind,
    /// The joints involved.
    pub joints: Vec<JointKey>,
    /// One sentence.
    pub message: String,
}

/// A whole run: its frames (those that solved), its events, and whether it reached its
/// end.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    /// Reported frames.
    pub frames: Vec<Frame>,
    /// Events, in time order.
    pub events: Vec<Event>,
    /// Whether the run reached its end (else it stopped at a frame that did not solve:
    /// the last event says why).
    pub completed: bool,
    /// The settings it ran with.
    pub settings: RunSettings,
}

/// One frame of a run seen the same way for kinematics and dynamics: its time, parts
/// and joint coordinates (what hosts read through the C and Python layers).
pub type FrameView<'a> = (f64, &'a [PartFrame], &'a [JointFrame]);

impl Trajectory {
    /// Every frame as a [`FrameView`].
    pub fn frame_views(&self) -> Vec<FrameView<'_>> {
        self.frames
            .iter()
            .map(|f| (f.time, f.parts.as_slice(), f.joints.as_slice()))
            .collect()
    }

    /// Every event as (time, sentence).
    pub fn event_sentences(&self) -> Vec<(f64, String)> {
        self.events
            .iter()
            .map(|e| (e.time, e.message.clone()))
            .collect()
    }
}

/// Frames of a run, one at a time (see [`Mechanism::kinematic_frames`]). Yields
/// `(frame, events)` for each reported time; after a frame that does not solve, it
/// yields that frame with its event and then ends.
#[derive(Debug)]
pub struct Frames<'m> {
    mechanism: &'m Mechanism,
    coordinates: Coordinates,
    rates: &'m RateTape,
    run: KinematicRun,
    times: std::vec::IntoIter<(f64, bool)>,
    last_quaternions: Vec<[f64; 4]>,
    pending: Vec<Event>,
    stopped: bool,
}

impl Mechanism {
    /// The equations' velocity and acceleration tapes, made at the first run.
    pub(crate) fn rates(&mut self) -> Result<(), Error> {
        if self.built.rates.is_none() {
            let rows = run_rows(&self.built.system);
            let mut rates = self.built.system.rates(&rows)?;
            // A large run's frames form their Jacobians from one tape, the rotation
            // columns differentiated along the parts' turns (no fold). A small (dense)
            // one keeps the fold: its frames gained nothing measurable, and the tape
            // costs its compilation.
            // A square one (every freedom driven: solved block by block) lists only the
            // entries that are not identically zero.
            let system = &mut self.built.system;
            let dimension = system.tangent_dimension();
            if dimension > self.options.dense_columns {
                let pattern = if rows.len() == dimension {
                    tenon_system::TangentPattern::Nonzero
                } else {
                    tenon_system::TangentPattern::RowParts
                };
                let tangent = system.tangent_tape(&rows, pattern)?;
                rates.set_tangent(tangent);
            }
            // Freedoms no motion drives (found where the Jacobian is dense): their
            // accelerations need the multipliers' rates.
            let undriven = tenon_solve::undriven_freedoms(
                &self.problem(),
                &self.built.state,
                &self.built.params,
                self.run_options(),
            )?;
            if undriven.is_some_and(|n| n > 0) {
                self.built.system.add_multiplier_rates(&mut rates)?;
            }
            self.built.rates = Some(Box::new(rates));
            // The stage tapes of solves with the motions taking part.
            let options = self.run_options();
            let Built {
                system,
                compiled,
                stages,
                ..
            } = &mut self.built;
            tenon_solve::prepare(system, compiled, stages, options)?;
        }
        Ok(())
    }

    /// The options of a run's solves: the mechanism's, with the motions taking part.
    pub(crate) fn run_options(&self) -> tenon_solve::SolveOptions {
        tenon_solve::SolveOptions {
            include_motions: true,
            ..self.options
        }
    }

    /// Runs the motions from the current pose over `settings`' times, one frame at a
    /// time. The mechanism itself does not move.
    pub fn kinematic_frames(&mut self, settings: RunSettings) -> Result<Frames<'_>, Error> {
        self.rates()?;
        let this: &Mechanism = self;
        let Some(rates) = this.built.rates.as_ref() else {
            return Err(Error::BadRun("no velocity equations".into()));
        };
        let problem = this.problem();
        let run = KinematicRun::new(
            &problem,
            rates,
            (this.built.state.clone(), this.built.params.clone()),
            settings.start,
            this.options,
        )?;
        let last_quaternions = (0..this.built.system.free_parts().len())
            .map(|k| quaternion_at(&this.built.state, k))
            .collect();
        Ok(Frames {
            coordinates: Coordinates::new(this),
            mechanism: this,
            rates,
            run,
            times: settings.times().into_iter(),
            last_quaternions,
            pending: Vec::new(),
            stopped: false,
        })
    }

    /// The frame at `time` alone, on demand (a host scrubbing a timeline): the motions
    /// at `time` solved from the current pose, then the rates there. Its events say
    /// whether it solved. The mechanism itself does not move.
    pub fn kinematic_frame_at(&mut self, time: f64) -> Result<(Frame, Vec<Event>), Error> {
        let settings = RunSettings::new(time, time, 1.0, None)?;
        let mut frames = self.kinematic_frames(settings)?;
        match frames.next() {
            Some(item) => item,
            None => Err(Error::BadRun(format!("no frame at t = {time}"))),
        }
    }

    /// Runs the motions over `settings`' times and returns every reported frame. The
    /// mechanism itself does not move.
    pub fn kinematics(&mut self, settings: RunSettings) -> Result<Trajectory, Error> {
        self.kinematics_with_progress(settings, &mut |_| {})
    }

    /// [`kinematics`](Self::kinematics), calling `progress` with the number of frames
    /// kept so far after each step reported (for a progress bar).
    pub fn kinematics_with_progress(
        &mut self,
        settings: RunSettings,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Trajectory, Error> {
        let (frames, events, completed) = collect_run(
            self.kinematic_frames(settings)?,
            |e: &Event| e.kind.stops(),
            progress,
        )?;
        Ok(Trajectory {
            frames,
            events,
            completed,
            settings,
        })
    }
}

/// A run's frames gathered: those that solved, every event, and whether it reached its
/// end (a frame with an event that `stops` did not solve: its events are kept, not it).
/// `progress` hears the number of frames kept after each.
pub(crate) fn collect_run<F, E>(
    run: impl Iterator<Item = Result<(F, Vec<E>), Error>>,
    stops: impl Fn(&E) -> bool,
    progress: &mut dyn FnMut(usize),
) -> Result<(Vec<F>, Vec<E>, bool), Error> {
    let mut frames = Vec::new();
    let mut events = Vec::new();
    let mut completed = true;
    for item in run {
        let (frame, happened) = item?;
        let stop = happened.iter().any(&stops);
        events.extend(happened);
        if stop {
            completed = false;
        } else {
            frames.push(frame);
        }
        progress(frames.len());
    }
    Ok((frames, events, completed))
}

pub(crate) fn quaternion_at(state: &[f64], part: usize) -> [f64; 4] {
    let at = STATE_PER_PART * part + 3;
    std::array::from_fn(|k| state.get(at + k).copied().unwrap_or(0.0))
}

impl Iterator for Frames<'_> {
    type Item = Result<(Frame, Vec<Event>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped {
            return None;
        }
        let problem = self.mechanism.problem();
        for (time, reported) in self.times.by_ref() {
            let (frame, happened) = match self.run.frame_at((&problem, self.rates), time) {
                Ok(x) => x,
                Err(e) => {
                    self.stopped = true;
                    return Some(Err(e.into()));
                }
            };
            let stop = happened.iter().any(|e| e.kind == EventKind::NotSolved);
            self.pending.extend(happened.into_iter().map(|e| Event {
                time: e.time,
                kind: e.kind,
                joints: e.joints,
                message: e.message,
            }));
            if reported || stop {
                self.stopped = stop;
                let mut frame = client_frame(
                    (self.mechanism, &self.mechanism.built.system),
                    &mut self.last_quaternions,
                    &frame,
                );
                frame.joints = self.coordinates.at(self.mechanism, &frame);
                return Some(Ok((frame, std::mem::take(&mut self.pending))));
            }
            // Keep quaternion signs and counted turns continuous through frames not
            // reported.
            let frame = client_frame(
                (self.mechanism, &self.mechanism.built.system),
                &mut self.last_quaternions,
                &frame,
            );
            self.coordinates.track(self.mechanism, &frame);
        }
        self.stopped = true;
        None
    }
}

/// A solver frame in client terms (angles in the file's unit, quaternion signs
/// continuous with `last`).
pub(crate) fn client_frame(
    (mechanism, system): (&Mechanism, &tenon_system::System),
    last_quaternions: &mut [[f64; 4]],
    frame: &tenon_solve::KinematicFrame,
) -> Frame {
    let per_radian = 1.0 / mechanism.assembly.units().angle.radians();
    let parts = system
        .free_parts()
        .iter()
        .enumerate()
        .map(|(k, free)| {
            let p = STATE_PER_PART * k;
            let v = TANGENT_PER_PART * k;
            let at = |x: &[f64], i: usize| x.get(i).copied().unwrap_or(0.0);
            let mut quaternion = quaternion_at(&frame.state, k);
            if let Some(last) = last_quaternions.get_mut(k) {
                let dot: f64 = (0..4).map(|c| quaternion[c] * last[c]).sum();
                if dot < 0.0 {
                    quaternion = quaternion.map(|c| -c);
                }
                *last = quaternion;
            }
            PartFrame {
                part: free.part,
                position: std::array::from_fn(|c| at(&frame.state, p + c)),
                quaternion,
                velocity: std::array::from_fn(|c| at(&frame.velocity, v + c)),
                angular_velocity: std::array::from_fn(|c| {
                    at(&frame.velocity, v + 3 + c) * per_radian
                }),
                acceleration: std::array::from_fn(|c| at(&frame.acceleration, v + c)),
                angular_acceleration: std::array::from_fn(|c| {
                    at(&frame.acceleration, v + 3 + c) * per_radian
                }),
            }
        })
        .collect();
    Frame {
        time: frame.time,
        parts,
        joints: Vec::new(),
        max_residual: frame.max_residual,
    }
}

/// A joint coordinate to report: its joint, which coordinate, its markers' local poses,
/// and its last value (for counting turns).
#[derive(Debug, Clone)]
struct Tracked {
    joint: JointKey,
    coordinate: tenon_model::Coordinate,
    i: (PartKey, tenon_model::Pose),
    j: (PartKey, tenon_model::Pose),
    /// Where parts `i` and `j` are among a frame's parts (the system's free parts, in
    /// order), if they move.
    at: (Option<usize>, Option<usize>),
    last: f64,
}

/// The joints' remaining coordinates, frame by frame.
#[derive(Debug, Clone, Default)]
pub(crate) struct Coordinates {
    tracked: Vec<Tracked>,
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// A marker's world frame: origin and axes (columns of the rotation).
fn axes(pose: &tenon_model::Pose) -> ([f64; 3], [[f64; 3]; 3]) {
    let r = pose.matrix();
    let column = |c: usize| [r[0][c], r[1][c], r[2][c]];
    (pose.position, [column(0), column(1), column(2)])
}

impl Coordinates {
    pub(crate) fn new(m: &Mechanism) -> Coordinates {
        use tenon_model::{Coordinate, JointType, MarkerSpec};
        let a = &m.assembly;
        let local = |r: &tenon_model::MarkerRef| -> Option<(PartKey, tenon_model::Pose)> {
            let placement = match &r.marker {
                MarkerSpec::Named(name) => a.marker(r.part, name)?.clone(),
                MarkerSpec::Inline(p) => (**p).clone(),
            };
            Some((r.part, placement.numbers(a.parameter_values(), a.units())?))
        };
        // The parts' current poses, looked up by key (a search per joint was quadratic
        // in the parts).
        let poses = m.poses();
        let moving: std::collections::HashMap<PartKey, usize> = m
            .built
            .system
            .free_parts()
            .iter()
            .enumerate()
            .map(|(k, free)| (free.part, k))
            .collect();
        let mut tracked = Vec::new();
        for (key, joint) in a.joints().filter(|(_, j)| !j.suppressed) {
            let coordinates: &[Coordinate] = match joint.joint_type {
                JointType::Revolute | JointType::Screw => &[Coordinate::Angle],
                JointType::Cylindrical => &[Coordinate::Angle, Coordinate::Distance],
                JointType::Slider => &[Coordinate::Distance],
                _ => &[],
            };
            let (Some(i), Some(j)) = (local(&joint.i), local(&joint.j)) else {
                continue;
            };
            for &coordinate in coordinates {
                let mut t = Tracked {
                    joint: key,
                    coordinate,
                    i,
                    j,
                    at: (moving.get(&i.0).copied(), moving.get(&j.0).copied()),
                    last: 0.0,
                };
                // The loaded pose's turn: its raw angle.
                let pose = |part: PartKey| {
                    poses
                        .get(&part)
                        .copied()
                        .unwrap_or(tenon_model::Pose::IDENTITY)
                };
                t.last = raw_value(&t, pose(i.0), pose(j.0));
                tracked.push(t);
            }
        }
        Coordinates { tracked }
    }

    /// Counts the angles' turns at a frame that is not reported, as [`at`](Self::at)
    /// does, without working out the coordinates and their rates.
    pub(crate) fn track(&mut self, m: &Mechanism, frame: &Frame) {
        if !self
            .tracked
            .iter()
            .any(|t| t.coordinate == tenon_model::Coordinate::Angle)
        {
            return;
        }
        let pose = |part: PartKey, at: Option<usize>| -> tenon_model::Pose {
            match moving_part(frame, part, at) {
                Some(p) => tenon_model::Pose {
                    position: p.position,
                    quaternion: p.quaternion,
                },
                None => m.placement_of(part).unwrap_or(tenon_model::Pose::IDENTITY),
            }
        };
        for t in &mut self.tracked {
            if t.coordinate == tenon_model::Coordinate::Angle {
                let (pi, pj) = (pose(t.i.0, t.at.0), pose(t.j.0, t.at.1));
                t.last = counted_turn(t.last, raw_value(t, pi, pj));
            }
        }
    }

    /// The coordinates at a frame (turns counted from the last call).
    pub(crate) fn at(&mut self, m: &Mechanism, frame: &Frame) -> Vec<JointFrame> {
        let per_radian = 1.0 / m.assembly.units().angle.radians();
        let motion =
            |part: PartKey, at: Option<usize>| -> (tenon_model::Pose, [f64; 3], [f64; 3]) {
                match moving_part(frame, part, at) {
                    Some(p) => (
                        tenon_model::Pose {
                            position: p.position,
                            quaternion: p.quaternion,
                        },
                        p.velocity,
                        p.angular_velocity.map(|w| w / per_radian),
                    ),
                    None => (
                        m.placement_of(part).unwrap_or(tenon_model::Pose::IDENTITY),
                        [0.0; 3],
                        [0.0; 3],
                    ),
                }
            };
        self.tracked
            .iter_mut()
            .map(|t| {
                let (pi, vi, wi) = motion(t.i.0, t.at.0);
                let (pj, vj, wj) = motion(t.j.0, t.at.1);
                let ((oi, ai), (oj, aj)) = (axes(&pi.compose(&t.i.1)), axes(&pj.compose(&t.j.1)));
                let raw = raw_of(t.coordinate, (oi, ai), (oj, aj));
                let z = aj[2];
                let (value, rate) = match t.coordinate {
                    tenon_model::Coordinate::Angle => {
                        let value = counted_turn(t.last, raw);
                        t.last = value;
                        let relative: [f64; 3] = std::array::from_fn(|k| wi[k] - wj[k]);
                        (value * per_radian, dot(relative, z) * per_radian)
                    }
                    tenon_model::Coordinate::Distance => {
                        // Velocities of the marker origins, and of z_j (omega_j x z_j).
                        let arm_i: [f64; 3] = std::array::from_fn(|k| oi[k] - pi.position[k]);
                        let arm_j: [f64; 3] = std::array::from_fn(|k| oj[k] - pj.position[k]);
                        let (ci, cj) = (cross(wi, arm_i), cross(wj, arm_j));
                        let dv: [f64; 3] = std::array::from_fn(|k| vi[k] + ci[k] - vj[k] - cj[k]);
                        let d: [f64; 3] = std::array::from_fn(|k| oi[k] - oj[k]);
                        (raw, dot(dv, z) + dot(d, cross(wj, z)))
                    }
                };
                JointFrame {
                    joint: t.joint,
                    coordinate: t.coordinate,
                    value,
                    rate,
                }
            })
            .collect()
    }
}

impl Coordinates {
    /// The rate of `joint`'s `coordinate` as a row over the tangent velocity (radians
    /// for angles), at part poses `pose_of` (each part's pose and, for a free part, its
    /// index among the free parts: columns `6 k .. 6 k + 6`, origin velocity then
    /// angular velocity). `None` when the joint has no such tracked coordinate.
    pub(crate) fn rate_row(
        &self,
        joint: JointKey,
        coordinate: tenon_model::Coordinate,
        pose_of: impl Fn(PartKey) -> (tenon_model::Pose, Option<usize>),
    ) -> Option<Vec<(usize, f64)>> {
        let t = self
            .tracked
            .iter()
            .find(|t| t.joint == joint && t.coordinate == coordinate)?;
        let ((pi, ki), (pj, kj)) = (pose_of(t.i.0), pose_of(t.j.0));
        let (oi, _) = axes(&pi.compose(&t.i.1));
        let (oj, aj) = axes(&pj.compose(&t.j.1));
        let z = aj[2];
        // Per side: the coefficients of its part's origin velocity and angular velocity.
        let (linear_i, angular_i, linear_j, angular_j) = match coordinate {
            tenon_model::Coordinate::Angle => ([0.0; 3], z, [0.0; 3], z.map(|x| -x)),
            tenon_model::Coordinate::Distance => {
                // (v_i + w_i x a_i - v_j - w_j x a_j) . z + d . (w_j x z), with
                // (w x a) . z = w . (a x z) and d . (w x z) = w . (z x d).
                let arm_i: [f64; 3] = std::array::from_fn(|k| oi[k] - pi.position[k]);
                let arm_j: [f64; 3] = std::array::from_fn(|k| oj[k] - pj.position[k]);
                let d: [f64; 3] = std::array::from_fn(|k| oi[k] - oj[k]);
                let (ai, aj_z, zd) = (cross(arm_i, z), cross(arm_j, z), cross(z, d));
                (
                    z,
                    ai,
                    z.map(|x| -x),
                    std::array::from_fn(|k| zd[k] - aj_z[k]),
                )
            }
        };
        let mut row = Vec::new();
        for (k, linear, angular) in [(ki, linear_i, angular_i), (kj, linear_j, angular_j)] {
            let Some(k) = k else { continue };
            for c in 0..3 {
                row.push((TANGENT_PER_PART * k + c, linear[c]));
                row.push((TANGENT_PER_PART * k + 3 + c, angular[c]));
            }
        }
        Some(row)
    }
}

/// Part `part`'s frame in `frame`: at `at` (its place among the free parts), else
/// searched for; `None` for a part that does not move.
fn moving_part(frame: &Frame, part: PartKey, at: Option<usize>) -> Option<&PartFrame> {
    let at = at?;
    match frame.parts.get(at) {
        Some(p) if p.part == part => Some(p),
        _ => frame.parts.iter().find(|p| p.part == part),
    }
}

/// The angle `raw` (in one turn) moved by whole turns to lie within half a turn of
/// `last`: a joint's angle counted continuously from frame to frame.
fn counted_turn(last: f64, raw: f64) -> f64 {
    let tau = std::f64::consts::TAU;
    raw + ((last - raw) / tau).round() * tau
}

/// The coordinate's raw value at part poses `pi`, `pj`: the angle of `x_i` from `x_j`
/// about `z_j` in `(-pi, pi]`, or the distance `(O_i - O_j) . z_j`.
fn raw_value(t: &Tracked, pi: tenon_model::Pose, pj: tenon_model::Pose) -> f64 {
    raw_of(
        t.coordinate,
        axes(&pi.compose(&t.i.1)),
        axes(&pj.compose(&t.j.1)),
    )
}

/// [`raw_value`] from the markers' world origins and axes.
fn raw_of(
    coordinate: tenon_model::Coordinate,
    (oi, ai): ([f64; 3], [[f64; 3]; 3]),
    (oj, aj): ([f64; 3], [[f64; 3]; 3]),
) -> f64 {
    match coordinate {
        tenon_model::Coordinate::Angle => dot(ai[0], aj[1]).atan2(dot(ai[0], aj[0])),
        tenon_model::Coordinate::Distance => {
            let d: [f64; 3] = std::array::from_fn(|k| oi[k] - oj[k]);
            dot(d, aj[2])
        }
    }
}
