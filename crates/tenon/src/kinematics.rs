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

    /// The file's `simulation` settings (start 0), with `end` and `step` given by the
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
        let end = end.or(file_end).unwrap_or(DEFAULT_END);
        let step = step.or(file_step).unwrap_or(1.0 / DEFAULT_STEPS);
        RunSettings::new(0.0, end, step, file_output)
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
    fn times(&self) -> Vec<(f64, bool)> {
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

/// One reported frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Time.
    pub time: f64,
    /// Every free part, in file order.
    pub parts: Vec<PartFrame>,
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

/// Frames of a run, one at a time (see [`Mechanism::kinematic_frames`]). Yields
/// `(frame, events)` for each reported time; after a frame that does not solve, it
/// yields that frame with its event and then ends.
#[derive(Debug)]
pub struct Frames<'m> {
    mechanism: &'m Mechanism,
    rates: &'m RateTape,
    run: KinematicRun,
    times: std::vec::IntoIter<(f64, bool)>,
    last_quaternions: Vec<[f64; 4]>,
    pending: Vec<Event>,
    stopped: bool,
}

impl Mechanism {
    /// The equations' velocity and acceleration tapes, made at the first run.
    fn rates(&mut self) -> Result<(), Error> {
        if self.built.rates.is_none() {
            let rows = run_rows(&self.built.system);
            self.built.rates = Some(self.built.system.rates(&rows)?);
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
    fn run_options(&self) -> tenon_solve::SolveOptions {
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
            mechanism: this,
            rates,
            run,
            times: settings.times().into_iter(),
            last_quaternions,
            pending: Vec::new(),
            stopped: false,
        })
    }

    /// Runs the motions over `settings`' times and returns every reported frame. The
    /// mechanism itself does not move.
    pub fn kinematics(&mut self, settings: RunSettings) -> Result<Trajectory, Error> {
        let mut frames = Vec::new();
        let mut events = Vec::new();
        let mut completed = true;
        for item in self.kinematic_frames(settings)? {
            let (frame, happened) = item?;
            // A frame where the run stops did not solve: its events are kept, not it.
            let stops = happened.iter().any(|e| e.kind.stops());
            events.extend(happened);
            if stops {
                completed = false;
            } else {
                frames.push(frame);
            }
        }
        Ok(Trajectory {
            frames,
            events,
            completed,
            settings,
        })
    }
}

fn quaternion_at(state: &[f64], part: usize) -> [f64; 4] {
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
                let frame = client_frame(self.mechanism, &mut self.last_quaternions, &frame);
                return Some(Ok((frame, std::mem::take(&mut self.pending))));
            }
            // Keep quaternion signs continuous through frames not reported.
            client_frame(self.mechanism, &mut self.last_quaternions, &frame);
        }
        self.stopped = true;
        None
    }
}

/// A solver frame in client terms (angles in the file's unit, quaternion signs
/// continuous with `last`).
fn client_frame(
    mechanism: &Mechanism,
    last_quaternions: &mut [[f64; 4]],
    frame: &tenon_solve::KinematicFrame,
) -> Frame {
    {
        let system = &mechanism.built.system;
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
            max_residual: frame.max_residual,
        }
    }
}
