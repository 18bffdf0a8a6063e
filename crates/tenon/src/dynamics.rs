//! Dynamic runs through the facade: the parts moving under gravity, springs, loads and
//! drives, frame by frame, in the file's units (see the `tenon-dynamics` crate for the
//! method).
//!
//! A run never moves the mechanism: it assembles its own copy at the start time (the
//! motions taking part), projects the parts' initial velocities onto the joints, and
//! integrates from there. Forces, torques and energies are in the units derived from the
//! file's (with mm and kg: kg mm/s^2 and kg mm^2/s^2); nothing is converted to SI.

use tenon_dynamics::{
    Anchor, Body, Dynamics, GivenRate, Inputs, Method, Run, Settings, StartVelocities,
};
use tenon_model::{Assembly, Coordinate, JointKey, MarkerSpec, PartKey};
use tenon_solve::Problem;
use tenon_system::{Compiled, Owner, RateTape, System, STATE_PER_PART, TANGENT_PER_PART};

use crate::kinematics::{
    client_frame, collect_run, quaternion_at, Coordinates, JointFrame, PartFrame,
};
use crate::mechanism::Mechanism;
use crate::{Error, RunSettings};

pub use tenon_dynamics::{
    Energy, EventKind as DynamicEventKind, Method as DynamicMethod, Settings as IntegrationSettings,
};

/// A dynamic run's settings: its times, and how it integrates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulationSettings {
    /// Start, end, step and output step.
    pub run: RunSettings,
    /// Method, `rho_inf`, Newton tolerance, Baumgarte's coefficients.
    pub integration: Settings,
}

impl SimulationSettings {
    /// The file's `simulation` settings, with `end` and `step` given by the caller (the
    /// command line) taking their place.
    pub fn for_assembly(
        assembly: &Assembly,
        end: Option<f64>,
        step: Option<f64>,
    ) -> Result<SimulationSettings, Error> {
        let run = RunSettings::for_assembly(assembly, end, step)?;
        let mut integration = Settings::default();
        if let Some(sim) = assembly.simulation() {
            let values = assembly.parameter_values();
            let number = |s: &tenon_model::Scalar| values.value_of(s);
            if let Some(m) = sim.method {
                integration.method = match m {
                    tenon_model::Method::GeneralizedAlpha => Method::GeneralizedAlpha,
                    tenon_model::Method::Baumgarte => Method::Baumgarte,
                };
            }
            if let Some(r) = sim.rho_inf.as_ref().and_then(number) {
                integration.rho_inf = r;
            }
            if let Some(t) = sim.tolerance.as_ref().and_then(number) {
                integration.tolerance = t;
            }
            if let Some([a, b]) = &sim.baumgarte {
                integration.baumgarte = (number(a).unwrap_or(0.0), number(b).unwrap_or(0.0));
            }
        }
        Ok(SimulationSettings { run, integration })
    }
}

/// The reaction at a joint: the force and torque part j exerts on part i, world frame,
/// the torque about marker i's origin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reaction {
    /// The joint.
    pub joint: JointKey,
    /// Force.
    pub force: [f64; 3],
    /// Torque about marker i's origin.
    pub torque: [f64; 3],
}

/// The effort a motion's drive supplies: the generalized force along its coordinate (a
/// force for a distance, a torque for an angle).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effort {
    /// The driven joint.
    pub joint: JointKey,
    /// Its coordinate.
    pub coordinate: Coordinate,
    /// The effort.
    pub effort: f64,
}

/// One reported frame of a dynamic run.
#[derive(Debug, Clone, PartialEq)]
pub struct DynamicFrame {
    /// Time.
    pub time: f64,
    /// Every free part, in file order.
    pub parts: Vec<PartFrame>,
    /// Every joint with a remaining coordinate (as in kinematic frames).
    pub joints: Vec<JointFrame>,
    /// Every joint's reaction, in file order.
    pub reactions: Vec<Reaction>,
    /// Every motion's effort, in file order.
    pub efforts: Vec<Effort>,
    /// Energies and the work done so far by loads, drives and dampers.
    pub energy: Energy,
    /// Largest residual of the equations held.
    pub max_residual: f64,
    /// Newton iterations and factorizations of the iteration matrix since the start.
    pub effort: (u64, u64),
}

/// Something that happened in a dynamic run.
#[derive(Debug, Clone, PartialEq)]
pub struct DynamicEvent {
    /// When.
    pub time: f64,
    /// What.
    pub kind: DynamicEventKind,
    /// The joints involved.
    pub joints: Vec<JointKey>,
    /// One sentence.
    pub message: String,
}

/// A whole dynamic run.
#[derive(Debug, Clone, PartialEq)]
pub struct DynamicTrajectory {
    /// Reported frames.
    pub frames: Vec<DynamicFrame>,
    /// Events, in time order.
    pub events: Vec<DynamicEvent>,
    /// Whether the run reached its end.
    pub completed: bool,
    /// The settings it ran with.
    pub settings: SimulationSettings,
}

impl DynamicTrajectory {
    /// Every frame as a [`crate::FrameView`] (time, parts, joint coordinates).
    pub fn frame_views(&self) -> Vec<crate::FrameView<'_>> {
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

/// Frames of a dynamic run, one at a time (see [`Mechanism::dynamic_frames`]).
#[derive(Debug)]
pub struct DynamicFrames<'m> {
    mechanism: &'m Mechanism,
    /// The run's own equations where the mechanism's hold its first part (no part is
    /// grounded: dynamics lets the whole float); else the mechanism's are used.
    own: Option<Box<Equations>>,
    dynamics: Dynamics,
    /// Per load of the assembly, its index among the run's loads.
    load_index: Vec<Option<usize>>,
    /// The assembly with the parameters changed during the run (`None`: none was).
    changed: Option<Box<Assembly>>,
    /// Gravity as the host set it during the run.
    gravity_set: Option<[f64; 3]>,
    /// Per run load, the force and torque the host set during the run.
    loads_set: Vec<Option<([f64; 3], [f64; 3])>>,
    run: Run,
    coordinates: Coordinates,
    times: std::vec::IntoIter<(f64, bool)>,
    last_quaternions: Vec<[f64; 4]>,
    /// Per joint, its equations' positions among the run's rows.
    joint_rows: Vec<(JointKey, Vec<usize>)>,
    /// Per motion, its joint, coordinate and row position.
    motion_rows: Vec<(JointKey, Coordinate, Option<usize>)>,
    pending: Vec<DynamicEvent>,
    first: bool,
    stopped: bool,
}

/// Equations built for a run alone.
#[derive(Debug)]
struct Equations {
    system: System,
    compiled: Compiled,
    rates: RateTape,
}

impl Equations {
    /// The equations of `m`'s assembly with every part free (none grounded), at `m`'s
    /// current poses.
    fn floating(m: &Mechanism) -> Result<Equations, Error> {
        let mut system = System::build_floating(&m.assembly)?;
        let compiled = system.compile()?;
        let rates = system.rates(&tenon_solve::run_rows(&system))?;
        Ok(Equations {
            system,
            compiled,
            rates,
        })
    }
}

/// The equations a run works on, borrowed from the mechanism or its own.
fn equations<'a>(
    m: &'a Mechanism,
    own: Option<&'a Equations>,
) -> Result<(Problem<'a>, &'a RateTape), Error> {
    match own {
        Some(e) => Ok((
            Problem {
                system: &e.system,
                compiled: &e.compiled,
                assembly: &m.assembly,
                stages: None,
            },
            &e.rates,
        )),
        None => {
            let rates = m
                .built
                .rates
                .as_ref()
                .ok_or_else(|| Error::BadRun("no velocity equations".into()))?;
            Ok((m.problem(), rates))
        }
    }
}

/// The state of `system` at `m`'s current poses (parameters as the mechanism's where
/// the systems are the same).
fn state_at(m: &Mechanism, system: &System) -> Vec<f64> {
    let mut state = system.initial_state();
    for (k, free) in system.free_parts().iter().enumerate() {
        if let Some(pose) = m.placement_of(free.part) {
            let at = STATE_PER_PART * k;
            if let Some(slot) = state.get_mut(at..at + 7) {
                slot[..3].copy_from_slice(&pose.position);
                slot[3..].copy_from_slice(&pose.quaternion);
            }
        }
    }
    state
}

impl Mechanism {
    /// Bodies and forces of the assembly, in model units, one body per free part of
    /// `system`; and per load of the assembly (file order) its index among the run's
    /// loads (`None`: on a part that does not move).
    fn dynamics_model(
        &self,
        a: &Assembly,
        system: &System,
    ) -> Result<(Dynamics, Vec<Option<usize>>), Error> {
        let values = a.parameter_values();
        let units = a.units();
        let number = |s: &tenon_model::Scalar, what: &str| -> Result<f64, Error> {
            values.value_of(s).ok_or_else(|| Error::NotFinite {
                what: what.to_string(),
                value: f64::NAN,
            })
        };
        let mut bodies = Vec::new();
        let mut free_index = std::collections::HashMap::new();
        for (k, free) in system.free_parts().iter().enumerate() {
            let part = a
                .part(free.part)
                .ok_or(Error::Dynamics("a part is missing".into()))?;
            free_index.insert(free.part, k);
            let Some(mass) = &part.mass else {
                return Err(Error::Dynamics(format!(
                    "part '{}' moves but has no mass: dynamics needs 'mass' on every moving part",
                    part.id
                )));
            };
            let m = number(&mass.mass, &format!("part '{}' mass", part.id))?;
            let mut center = [0.0; 3];
            for (c, s) in center.iter_mut().zip(&mass.center_of_mass) {
                *c = number(s, &format!("part '{}' centre of mass", part.id))?;
            }
            let mut inertia = [[0.0; 3]; 3];
            for (row, srow) in inertia.iter_mut().zip(&mass.inertia) {
                for (x, s) in row.iter_mut().zip(srow) {
                    *x = number(s, &format!("part '{}' inertia", part.id))?;
                }
            }
            bodies.push(
                Body::new(&part.id, m, center, inertia)
                    .map_err(|e| Error::Dynamics(e.to_string()))?,
            );
        }
        let forces = a.forces();
        let mut gravity = [0.0; 3];
        if let Some(g) = &forces.gravity {
            for (x, s) in gravity.iter_mut().zip(g) {
                *x = number(s, "gravity")?;
            }
        }
        let mut dynamics =
            Dynamics::new(bodies, gravity).map_err(|e| Error::Dynamics(e.to_string()))?;
        let anchor = |r: &tenon_model::MarkerRef| -> Result<Anchor, Error> {
            let part = a
                .part(r.part)
                .ok_or(Error::Dynamics("a part is missing".into()))?;
            let placement = match &r.marker {
                MarkerSpec::Named(name) => a
                    .marker(r.part, name)
                    .cloned()
                    .ok_or_else(|| Error::Dynamics(format!("no marker '{name}'")))?,
                MarkerSpec::Inline(p) => (**p).clone(),
            };
            let local = placement
                .numbers(values, units)
                .ok_or_else(|| {
                    Error::Dynamics(format!("part '{}': a marker does not evaluate", part.id))
                })?
                .position;
            Ok(match free_index.get(&r.part) {
                Some(&k) => Anchor::Part { part: k, local },
                None => {
                    let pose = self
                        .placement_of(r.part)
                        .unwrap_or(tenon_model::Pose::IDENTITY);
                    let world = pose.compose(&tenon_model::Pose {
                        position: local,
                        quaternion: [1.0, 0.0, 0.0, 0.0],
                    });
                    Anchor::Fixed(world.position)
                }
            })
        };
        for s in &forces.springs {
            dynamics
                .add_spring(tenon_dynamics::Spring {
                    i: anchor(&s.i)?,
                    j: anchor(&s.j)?,
                    stiffness: number(&s.stiffness, &format!("spring '{}' stiffness", s.id))?,
                    rest_length: number(&s.rest_length, &format!("spring '{}' rest length", s.id))?,
                    damping: number(&s.damping, &format!("spring '{}' damping", s.id))?,
                })
                .map_err(|e| Error::Dynamics(format!("spring '{}': {e}", s.id)))?;
        }
        let mut load_index = Vec::new();
        for l in &forces.loads {
            let Some(&k) = free_index.get(&l.part) else {
                load_index.push(None); // a load on a grounded part moves nothing
                continue;
            };
            load_index.push(Some(load_index.iter().flatten().count()));
            let mut force = [0.0; 3];
            let mut torque = [0.0; 3];
            for (x, s) in force.iter_mut().zip(&l.force) {
                *x = number(s, "load force")?;
            }
            for (x, s) in torque.iter_mut().zip(&l.torque) {
                *x = number(s, "load torque")?;
            }
            let at = match &l.at {
                Some(p) => {
                    let mut at = [0.0; 3];
                    for (x, s) in at.iter_mut().zip(p) {
                        *x = number(s, "load point")?;
                    }
                    at
                }
                None => a
                    .part(l.part)
                    .and_then(|p| p.mass.as_ref())
                    .map(|m| {
                        m.center_of_mass
                            .each_ref()
                            .map(|s| values.value_of(s).unwrap_or(0.0))
                    })
                    .unwrap_or([0.0; 3]),
            };
            dynamics
                .add_load(tenon_dynamics::Load {
                    part: k,
                    force,
                    torque,
                    at,
                })
                .map_err(|e| Error::Dynamics(e.to_string()))?;
        }
        // Compliant joints: each of their equations (and driving values) a spring of
        // that compliance, as statics weigh them (angle equations per radian).
        let compliance = crate::compliance::compliances(a, system).unwrap_or_default();
        for (e, &c) in compliance.iter().enumerate().filter(|(_, c)| **c > 0.0) {
            dynamics.set_compliance(e, c).map_err(|err| {
                let joint = system.joint_of(e).and_then(|k| a.joint(k));
                let id = joint.map_or("?", |j| j.id.as_str());
                Error::Dynamics(format!("joint '{id}': {err}"))
            })?;
        }
        Ok((dynamics, load_index))
    }

    /// The parts' wished initial velocities (tangent, radians), `None` when all rest.
    fn initial_velocities(&self, system: &System) -> Option<Vec<f64>> {
        let a = &self.assembly;
        let values = a.parameter_values();
        let per_angle = a.units().angle.radians();
        let mut out = vec![0.0; system.tangent_dimension()];
        let mut any = false;
        for (k, free) in system.free_parts().iter().enumerate() {
            let Some(v) = a.part(free.part).and_then(|p| p.velocity.as_ref()) else {
                continue;
            };
            any = true;
            for c in 0..3 {
                out[TANGENT_PER_PART * k + c] = values.value_of(&v.linear[c]).unwrap_or(0.0);
                out[TANGENT_PER_PART * k + 3 + c] =
                    values.value_of(&v.angular[c]).unwrap_or(0.0) * per_angle;
            }
        }
        any.then_some(out)
    }

    /// The joints' given start rates (`rate` fields) as rows over `system`'s tangent
    /// velocity at `state`, each tagged with its position in the joints returned.
    fn given_rates(
        &self,
        system: &System,
        state: &[f64],
        coordinates: &Coordinates,
    ) -> Result<(Vec<GivenRate>, Vec<JointKey>), Error> {
        let a = &self.assembly;
        let values = a.parameter_values();
        let free: std::collections::HashMap<PartKey, usize> = system
            .free_parts()
            .iter()
            .enumerate()
            .map(|(k, f)| (f.part, k))
            .collect();
        let pose_of = |part: PartKey| match free.get(&part) {
            Some(&k) => {
                let q = quaternion_at(state, k);
                let at = STATE_PER_PART * k;
                let position = [0, 1, 2].map(|c| state.get(at + c).copied().unwrap_or(0.0));
                (
                    tenon_model::Pose {
                        position,
                        quaternion: q,
                    },
                    Some(k),
                )
            }
            None => (
                self.placement_of(part)
                    .unwrap_or(tenon_model::Pose::IDENTITY),
                None,
            ),
        };
        let mut given = Vec::new();
        let mut joints = Vec::new();
        for (key, joint) in a
            .joints()
            .filter(|(_, j)| !j.suppressed && !j.rate.is_empty())
        {
            for (coordinate, scalar, per_unit) in [
                (
                    Coordinate::Angle,
                    &joint.rate.angle,
                    a.units().angle.radians(),
                ),
                (Coordinate::Distance, &joint.rate.distance, 1.0),
            ] {
                let Some(scalar) = scalar else { continue };
                let value = values.value_of(scalar).ok_or_else(|| Error::NotFinite {
                    what: format!("joint '{}' rate", joint.id),
                    value: f64::NAN,
                })?;
                let row = coordinates
                    .rate_row(key, coordinate, pose_of)
                    .ok_or_else(|| {
                        Error::Dynamics(format!(
                            "joint '{}': no free {} to give a rate for",
                            joint.id,
                            coordinate.field().key()
                        ))
                    })?;
                given.push(GivenRate {
                    row,
                    value: value * per_unit,
                    tag: joints.len(),
                });
            }
            joints.push(key);
        }
        Ok((given, joints))
    }

    /// Runs the dynamics from the current pose over `settings`, one frame at a time. The
    /// mechanism itself does not move.
    pub fn dynamic_frames(
        &mut self,
        settings: SimulationSettings,
    ) -> Result<DynamicFrames<'_>, Error> {
        self.rates()?;
        let this: &Mechanism = self;
        let own = match this.built.system.grounding() {
            tenon_system::Grounding::FirstPart(_) => Some(Box::new(Equations::floating(this)?)),
            _ => None,
        };
        let (problem, rates) = equations(this, own.as_deref())?;
        let system = problem.system;
        let (dynamics, load_index) = this.dynamics_model(&this.assembly, system)?;
        let wished = this.initial_velocities(system);
        // Assemble at the start time, the motions taking part.
        let (mut state, mut params) = match own {
            Some(_) => (state_at(this, system), system.initial_parameters()),
            None => (this.built.state.clone(), this.built.params.clone()),
        };
        if let Some(t) = params.get_mut(system.time().index()) {
            *t = settings.run.start();
        }
        let report = tenon_solve::solve(&problem, &mut state, &mut params, this.run_options())?;
        if !report.converged {
            return Err(Error::BadRun(format!(
                "the joints and motions cannot all hold at the start (t = {}; largest residual \
                 {:.3e})",
                settings.run.start(),
                report.max_residual
            )));
        }
        let last_quaternions = (0..system.free_parts().len())
            .map(|k| quaternion_at(&state, k))
            .collect();
        let inputs = Inputs {
            problem: &problem,
            rates,
            dynamics: &dynamics,
        };
        let coordinates = Coordinates::new(this);
        let (given, given_joints) = this.given_rates(system, &state, &coordinates)?;
        let (run, events) = Run::new(
            inputs,
            (state, params),
            StartVelocities {
                wished: wished.as_deref(),
                rates: &given,
            },
            settings.run.start(),
            settings.integration,
        )
        .map_err(|e| match e {
            tenon_dynamics::DynamicsError::RatesConflict(tags, worst) => {
                let mut names: Vec<String> = tags
                    .iter()
                    .filter_map(|&t| given_joints.get(t))
                    .filter_map(|&j| this.joint_id(j))
                    .map(|id| format!("'{id}'"))
                    .collect();
                names.dedup();
                Error::Dynamics(format!(
                    "the rates given for joint(s) {} cannot hold with the other joints, \
                     motions and rates (largest violation {worst:.3e})",
                    names.join(", ")
                ))
            }
            tenon_dynamics::DynamicsError::SingularPart(k) => {
                let id = system
                    .free_parts()
                    .get(k)
                    .and_then(|f| this.part_id(f.part))
                    .unwrap_or("?");
                Error::Dynamics(format!(
                    "part '{id}': its inertia is singular about an axis no joint holds (a \
                     point mass on a distance joint spins freely): give it inertia, or a \
                     joint that holds that rotation"
                ))
            }
            e => Error::Dynamics(e.to_string()),
        })?;
        let rows = run.rows();
        let mut joint_rows: Vec<(JointKey, Vec<usize>)> = this
            .assembly
            .joints()
            .filter(|(_, j)| !j.suppressed)
            .map(|(k, _)| (k, Vec::new()))
            .collect();
        let mut motion_rows: Vec<(JointKey, Coordinate, Option<usize>)> = this
            .assembly
            .motions()
            .iter()
            .map(|m| (m.joint, m.coordinate, None))
            .collect();
        let joint_index: std::collections::HashMap<JointKey, usize> = joint_rows
            .iter()
            .enumerate()
            .map(|(k, (j, _))| (*j, k))
            .collect();
        for (position, &r) in rows.iter().enumerate() {
            match system.equations().get(r).map(|e| e.owner) {
                Some(Owner::Joint(j)) | Some(Owner::Drive(j, _)) => {
                    if let Some(list) = joint_index.get(&j).and_then(|&k| joint_rows.get_mut(k)) {
                        list.1.push(position);
                    }
                }
                Some(Owner::Motion(m)) => {
                    if let Some(slot) = motion_rows.get_mut(m) {
                        slot.2 = Some(position);
                    }
                }
                None => {}
            }
        }
        let pending = events
            .into_iter()
            .map(|e| client_event(system, e))
            .collect();
        Ok(DynamicFrames {
            coordinates,
            mechanism: this,
            own,
            dynamics,
            loads_set: vec![None; load_index.iter().flatten().count()],
            load_index,
            changed: None,
            gravity_set: None,
            run,
            times: settings.run.times().into_iter(),
            last_quaternions,
            joint_rows,
            motion_rows,
            pending,
            first: true,
            stopped: false,
        })
    }

    /// Runs the dynamics over `settings` and returns every reported frame. The mechanism
    /// itself does not move.
    pub fn simulate(&mut self, settings: SimulationSettings) -> Result<DynamicTrajectory, Error> {
        self.simulate_with_progress(settings, &mut |_| {})
    }

    /// [`simulate`](Self::simulate), calling `progress` with the number of frames kept
    /// so far after each one.
    pub fn simulate_with_progress(
        &mut self,
        settings: SimulationSettings,
        progress: &mut dyn FnMut(usize),
    ) -> Result<DynamicTrajectory, Error> {
        let (frames, events, completed) = collect_run(
            self.dynamic_frames(settings)?,
            |e: &DynamicEvent| e.kind.stops(),
            progress,
        )?;
        Ok(DynamicTrajectory {
            frames,
            events,
            completed,
            settings,
        })
    }
}

fn client_event(system: &tenon_system::System, e: tenon_dynamics::Event) -> DynamicEvent {
    let mut joints: Vec<JointKey> = e
        .equations
        .iter()
        .filter_map(|&k| system.joint_of(k))
        .collect();
    joints.sort_unstable();
    joints.dedup();
    DynamicEvent {
        time: e.time,
        kind: e.kind,
        joints,
        message: e.message,
    }
}

impl DynamicFrames<'_> {
    /// Changes gravity (length / time^2) from the next step on: a host pauses between
    /// frames, changes it, and carries on. The work done so far is integrated with the
    /// forces in effect at each step's ends.
    pub fn set_gravity(&mut self, gravity: [f64; 3]) -> Result<(), Error> {
        self.dynamics
            .set_gravity(gravity)
            .map_err(|e| Error::Dynamics(e.to_string()))?;
        self.gravity_set = Some(gravity);
        Ok(())
    }

    /// Changes parameter `name` to `value` (file units) between frames, as
    /// [`Mechanism::set_parameter`] does for a solve: every equation, motion, mass,
    /// spring and load that reads it (directly or through other parameters) takes the
    /// new value; gravity and loads the host has set in this run keep the host's values.
    /// The mechanism re-assembles at the current time (least change from where it is),
    /// keeps its velocities as far as the joints now allow (projected in the
    /// kinetic-energy norm, as at a start) and carries on; the energy balance does not
    /// count the change. The mechanism itself is not changed. An unknown name, a value
    /// the model refuses (a negative radius) or one the joints cannot hold is an error
    /// and changes nothing.
    pub fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), Error> {
        let m = self.mechanism;
        if m.assembly.parameters().iter().all(|p| p.name != name) {
            return Err(Error::UnknownParameter(name.to_string()));
        }
        if !value.is_finite() {
            return Err(Error::NotFinite {
                what: format!("parameter '{name}'"),
                value,
            });
        }
        let mut changed = match &self.changed {
            Some(a) => a.clone(),
            None => Box::new(m.assembly.clone()),
        };
        changed.set_parameter(name, tenon_model::Scalar::Number(value))?;
        let (problem, rates) = equations(m, self.own.as_deref())?;
        let system = problem.system;
        let (mut dynamics, _) = m.dynamics_model(&changed, system)?;
        let dynamics_error = |e: tenon_dynamics::DynamicsError| Error::Dynamics(e.to_string());
        if let Some(g) = self.gravity_set {
            dynamics.set_gravity(g).map_err(dynamics_error)?;
        }
        for (k, set) in self.loads_set.iter().enumerate() {
            if let Some((force, torque)) = set {
                dynamics
                    .set_load(k, *force, *torque)
                    .map_err(dynamics_error)?;
            }
        }
        let mut params = self.run.params().to_vec();
        let values = changed.parameter_values();
        for p in changed.parameters() {
            if let (Some(id), Some(v)) = (system.parameter(&p.name), values.get(&p.name)) {
                if let Some(slot) = params.get_mut(id.index()) {
                    *slot = v;
                }
            }
        }
        let mut state = self.run.state().to_vec();
        let report = tenon_solve::solve(&problem, &mut state, &mut params, m.run_options())?;
        if !report.converged {
            return Err(Error::BadRun(format!(
                "with parameter '{name}' = {value} the joints and motions cannot all hold at \
                 t = {} (largest residual {:.3e}); the run goes on as it was",
                self.run.time(),
                report.max_residual
            )));
        }
        let inputs = Inputs {
            problem: &problem,
            rates,
            dynamics: &dynamics,
        };
        let (run, events) = self
            .run
            .restart(inputs, (state, params))
            .map_err(dynamics_error)?;
        // The redundant joints were said at the start.
        self.pending.extend(
            events
                .into_iter()
                .filter(|e| e.kind != DynamicEventKind::Redundant)
                .map(|e| client_event(system, e)),
        );
        self.run = run;
        self.dynamics = dynamics;
        self.changed = Some(changed);
        Ok(())
    }

    /// Changes the assembly's load `index` (file order of `forces.loads`) to `force` and
    /// `torque` (world frame, file units) from the next step on. A load on a part that
    /// does not move cannot be changed (it acts on nothing).
    pub fn set_load(
        &mut self,
        index: usize,
        force: [f64; 3],
        torque: [f64; 3],
    ) -> Result<(), Error> {
        let Some(&Some(k)) = self.load_index.get(index) else {
            return Err(Error::Dynamics(format!(
                "load {index}: no such load on a moving part"
            )));
        };
        self.dynamics
            .set_load(k, force, torque)
            .map_err(|e| Error::Dynamics(e.to_string()))?;
        if let Some(slot) = self.loads_set.get_mut(k) {
            *slot = Some((force, torque));
        }
        Ok(())
    }

    /// The current run frame in client terms.
    fn frame(&mut self) -> Result<DynamicFrame, Error> {
        let m = self.mechanism;
        let (problem, rates) = equations(m, self.own.as_deref())?;
        let inputs = Inputs {
            problem: &problem,
            rates,
            dynamics: &self.dynamics,
        };
        let frame = self.run.frame(inputs);
        let solver_frame = tenon_solve::KinematicFrame {
            time: frame.time,
            state: frame.state.clone(),
            velocity: frame.velocity.clone(),
            acceleration: frame.acceleration.clone(),
            max_residual: frame.max_residual,
        };
        let mut client = client_frame(
            (m, problem.system),
            &mut self.last_quaternions,
            &solver_frame,
        );
        client.joints = self.coordinates.at(m, &client);
        let groups: Vec<Vec<usize>> = self.joint_rows.iter().map(|(_, r)| r.clone()).collect();
        let forces = self
            .run
            .constraint_forces(inputs, &groups)
            .map_err(|e| Error::Dynamics(e.to_string()))?;
        let system = problem.system;
        let free: std::collections::HashMap<PartKey, usize> = system
            .free_parts()
            .iter()
            .enumerate()
            .map(|(k, f)| (f.part, k))
            .collect();
        let index_of = |part: PartKey| free.get(&part).copied();
        let reactions = self
            .joint_rows
            .iter()
            .zip(&forces)
            .map(|((joint, _), g)| reaction(m, &frame.state, *joint, g, &index_of))
            .collect();
        let efforts = self
            .motion_rows
            .iter()
            .map(|&(joint, coordinate, row)| Effort {
                joint,
                coordinate,
                effort: row
                    .and_then(|r| frame.multipliers.get(r))
                    .map_or(0.0, |l| -l),
            })
            .collect();
        Ok(DynamicFrame {
            time: frame.time,
            parts: client.parts,
            joints: client.joints,
            reactions,
            efforts,
            energy: frame.energy,
            max_residual: frame.max_residual,
            effort: frame.effort,
        })
    }
}

/// The reaction part j exerts on part i at a joint, from the constraint force's terms
/// `(tangent column, value)` of the joint's equations: part i's share (force, torque moved from its
/// origin to marker i), or, where part i does not move, the opposite of part j's.
fn reaction(
    m: &Mechanism,
    state: &[f64],
    joint: JointKey,
    terms: &[(u32, f64)],
    index_of: &dyn Fn(PartKey) -> Option<usize>,
) -> Reaction {
    let none = Reaction {
        joint,
        force: [0.0; 3],
        torque: [0.0; 3],
    };
    let a = &m.assembly;
    let Some(j) = a.joint(joint) else {
        return none;
    };
    let values = a.parameter_values();
    let marker = match &j.i.marker {
        MarkerSpec::Named(name) => a.marker(j.i.part, name).cloned(),
        MarkerSpec::Inline(p) => Some((**p).clone()),
    };
    let Some(local) = marker.and_then(|p| p.numbers(values, a.units())) else {
        return none;
    };
    let pose_of = |part: PartKey| -> tenon_model::Pose {
        match index_of(part) {
            Some(k) => tenon_model::Pose {
                position: std::array::from_fn(|c| state[STATE_PER_PART * k + c]),
                quaternion: quaternion_at(state, k),
            },
            None => m
                .assembly
                .part(part)
                .and_then(|p| p.placement.numbers(values, a.units()))
                .unwrap_or(tenon_model::Pose::IDENTITY),
        }
    };
    let at = pose_of(j.i.part).compose(&local).position;
    let (k, sign, origin) = match (index_of(j.i.part), index_of(j.j.part)) {
        (Some(k), _) => (k, 1.0, pose_of(j.i.part).position),
        (None, Some(k)) => (k, -1.0, pose_of(j.j.part).position),
        (None, None) => return none,
    };
    let base = TANGENT_PER_PART * k;
    let mut g = [0.0; TANGENT_PER_PART];
    for &(c, v) in terms {
        if let Some(slot) = (c as usize).checked_sub(base).and_then(|i| g.get_mut(i)) {
            *slot += v;
        }
    }
    let f: [f64; 3] = std::array::from_fn(|c| g[c]);
    let t: [f64; 3] = std::array::from_fn(|c| g[3 + c]);
    // Torque about `at`: t - (at - origin) x f.
    let d: [f64; 3] = std::array::from_fn(|c| at[c] - origin[c]);
    let dxf = [
        d[1] * f[2] - d[2] * f[1],
        d[2] * f[0] - d[0] * f[2],
        d[0] * f[1] - d[1] * f[0],
    ];
    Reaction {
        joint,
        force: f.map(|x| sign * x),
        torque: std::array::from_fn(|c| sign * (t[c] - dxf[c])),
    }
}

impl Iterator for DynamicFrames<'_> {
    type Item = Result<(DynamicFrame, Vec<DynamicEvent>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped {
            return None;
        }
        for (time, reported) in self.times.by_ref() {
            let happened = if self.first {
                self.first = false;
                Vec::new()
            } else {
                let m = self.mechanism;
                let (problem, rates) = match equations(m, self.own.as_deref()) {
                    Ok(x) => x,
                    Err(e) => {
                        self.stopped = true;
                        return Some(Err(e));
                    }
                };
                let inputs = Inputs {
                    problem: &problem,
                    rates,
                    dynamics: &self.dynamics,
                };
                match self.run.step_to(inputs, time) {
                    Ok(events) => events,
                    Err(e) => {
                        self.stopped = true;
                        return Some(Err(Error::Dynamics(e.to_string())));
                    }
                }
            };
            let stop = happened.iter().any(|e| e.kind.stops());
            let system = match &self.own {
                Some(e) => &e.system,
                None => &self.mechanism.built.system,
            };
            self.pending
                .extend(happened.into_iter().map(|e| client_event(system, e)));
            if reported || stop {
                self.stopped = stop;
                let frame = match self.frame() {
                    Ok(f) => f,
                    Err(e) => {
                        self.stopped = true;
                        return Some(Err(e));
                    }
                };
                return Some(Ok((frame, std::mem::take(&mut self.pending))));
            }
            // Keep quaternion signs and counted turns continuous through frames not
            // reported.
            let m = self.mechanism;
            let solver_frame = tenon_solve::KinematicFrame {
                time,
                state: self.run.state().to_vec(),
                velocity: Vec::new(),
                acceleration: Vec::new(),
                max_residual: 0.0,
            };
            let system = match &self.own {
                Some(e) => &e.system,
                None => &m.built.system,
            };
            let client = client_frame((m, system), &mut self.last_quaternions, &solver_frame);
            self.coordinates.track(m, &client);
        }
        self.stopped = true;
        None
    }
}
