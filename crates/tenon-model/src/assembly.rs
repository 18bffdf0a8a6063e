//! The assembly: parts with markers and mass properties, joints, parameters, motions,
//! forces and simulation settings. Typed keys inside; ids as the file gives them outside.

use rustc_hash::FxHashMap;
use slotmap::{new_key_type, SlotMap};

use crate::error::{ModelError, Place};
use crate::joint::{Field, Joint, MarkerSpec};
use crate::placement::Placement;
use crate::scalar::{Parameter, ParameterValues, Scalar, Units};

new_key_type! {
    /// A part of an [`Assembly`].
    pub struct PartKey;
    /// A joint of an [`Assembly`].
    pub struct JointKey;
}

/// Data for other programs (an `extra` object), kept as given and written back.
#[derive(Debug, Clone, PartialEq)]
pub struct Extra(pub(crate) serde_json::Value);

impl Extra {
    /// The data as JSON text.
    pub fn to_json_text(&self) -> String {
        self.0.to_string()
    }
}

/// Mass properties (needed only for dynamics).
#[derive(Debug, Clone, PartialEq)]
pub struct Mass {
    /// Mass.
    pub mass: Scalar,
    /// Centre of mass in part coordinates.
    pub center_of_mass: [Scalar; 3],
    /// Inertia about the centre of mass, in part axes (symmetric positive definite).
    pub inertia: [[Scalar; 3]; 3],
}

/// A rigid part.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// Unique, non-empty id.
    pub id: String,
    /// The part does not move.
    pub grounded: bool,
    /// Placement in the world.
    pub placement: Placement,
    /// Named frames in part coordinates, in file order.
    pub markers: Vec<(String, Placement)>,
    /// Mass properties, if given.
    pub mass: Option<Mass>,
    /// Data for other programs.
    pub extra: Option<Extra>,
}

impl Part {
    /// A free part at `placement` with no markers.
    pub fn new(id: impl Into<String>, placement: Placement) -> Self {
        Part {
            id: id.into(),
            grounded: false,
            placement,
            markers: Vec::new(),
            mass: None,
            extra: None,
        }
    }

    /// The marker of that name.
    pub fn marker(&self, name: &str) -> Option<&Placement> {
        self.markers.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }
}

/// Which free coordinate a motion drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coordinate {
    /// The rotation about `z` (joint field `angle`).
    Angle,
    /// The translation along `z` (joint field `distance`).
    Distance,
}

impl Coordinate {
    /// The joint field of the same name.
    pub fn field(self) -> Field {
        match self {
            Coordinate::Angle => Field::Angle,
            Coordinate::Distance => Field::Distance,
        }
    }
}

/// A joint coordinate driven as a function of time `t`.
#[derive(Debug, Clone, PartialEq)]
pub struct Motion {
    /// The joint driven.
    pub joint: JointKey,
    /// Its coordinate.
    pub coordinate: Coordinate,
    /// The value as a function of `t`.
    pub value: Scalar,
}

/// A spring-damper along the line between two marker origins.
#[derive(Debug, Clone, PartialEq)]
pub struct Spring {
    /// Unique id.
    pub id: String,
    /// First end.
    pub i: crate::joint::MarkerRef,
    /// Second end.
    pub j: crate::joint::MarkerRef,
    /// Stiffness (force per length).
    pub stiffness: Scalar,
    /// Length at which the spring exerts no force.
    pub rest_length: Scalar,
    /// Damping (force per speed).
    pub damping: Scalar,
}

/// A force and torque on a part (world frame).
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// The part.
    pub part: PartKey,
    /// Force.
    pub force: [Scalar; 3],
    /// Torque.
    pub torque: [Scalar; 3],
    /// Point of application in part coordinates (`None`: the centre of mass).
    pub at: Option<[Scalar; 3]>,
}

/// Forces for dynamics.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Forces {
    /// Gravity (length / time^2).
    pub gravity: Option<[Scalar; 3]>,
    /// Springs.
    pub springs: Vec<Spring>,
    /// Applied loads.
    pub loads: Vec<Load>,
}

/// Settings of time runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// End time.
    pub end: Scalar,
    /// Integration step.
    pub step: Scalar,
    /// Output interval.
    pub output_step: Option<Scalar>,
}

/// An assembly. Build it from a file (`crate::read_json`, `crate::read_asmt`) or
/// through the methods below; every method keeps ids unique and references valid.
#[derive(Debug, Clone)]
pub struct Assembly {
    name: String,
    units: Units,
    parameters: Vec<Parameter>,
    parts: SlotMap<PartKey, Part>,
    part_order: Vec<PartKey>,
    part_by_id: FxHashMap<String, PartKey>,
    joints: SlotMap<JointKey, Joint>,
    joint_order: Vec<JointKey>,
    joint_by_id: FxHashMap<String, JointKey>,
    motions: Vec<Motion>,
    forces: Forces,
    simulation: Option<Simulation>,
    extra: Option<Extra>,
}

impl Assembly {
    /// An empty assembly.
    pub fn new(name: impl Into<String>, units: Units) -> Self {
        Assembly {
            name: name.into(),
            units,
            parameters: Vec::new(),
            parts: SlotMap::with_key(),
            part_order: Vec::new(),
            part_by_id: FxHashMap::default(),
            joints: SlotMap::with_key(),
            joint_order: Vec::new(),
            joint_by_id: FxHashMap::default(),
            motions: Vec::new(),
            forces: Forces::default(),
            simulation: None,
            extra: None,
        }
    }

    /// Name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Units of every number.
    pub fn units(&self) -> Units {
        self.units
    }
    /// Parameters, in file order.
    pub fn parameters(&self) -> &[Parameter] {
        &self.parameters
    }
    /// Parts, in file order.
    pub fn parts(&self) -> impl Iterator<Item = (PartKey, &Part)> + '_ {
        self.part_order
            .iter()
            .filter_map(move |&k| self.parts.get(k).map(|p| (k, p)))
    }
    /// Number of parts.
    pub fn part_count(&self) -> usize {
        self.part_order.len()
    }
    /// A part.
    pub fn part(&self, key: PartKey) -> Option<&Part> {
        self.parts.get(key)
    }
    /// The part with this id.
    pub fn part_by_id(&self, id: &str) -> Option<PartKey> {
        self.part_by_id.get(id).copied()
    }
    /// Joints, in file order.
    pub fn joints(&self) -> impl Iterator<Item = (JointKey, &Joint)> + '_ {
        self.joint_order
            .iter()
            .filter_map(move |&k| self.joints.get(k).map(|j| (k, j)))
    }
    /// Number of joints (suppressed ones included).
    pub fn joint_count(&self) -> usize {
        self.joint_order.len()
    }
    /// A joint.
    pub fn joint(&self, key: JointKey) -> Option<&Joint> {
        self.joints.get(key)
    }
    /// The joint with this id.
    pub fn joint_by_id(&self, id: &str) -> Option<JointKey> {
        self.joint_by_id.get(id).copied()
    }
    /// Motions.
    pub fn motions(&self) -> &[Motion] {
        &self.motions
    }
    /// Forces.
    pub fn forces(&self) -> &Forces {
        &self.forces
    }
    /// Simulation settings, if given.
    pub fn simulation(&self) -> Option<&Simulation> {
        self.simulation.as_ref()
    }
    /// Top-level extra data.
    pub fn extra(&self) -> Option<&Extra> {
        self.extra.as_ref()
    }

    /// Evaluates the parameters (errors: cycles, unknown names, non-finite values).
    pub fn parameter_values(&self) -> Result<ParameterValues, ModelError> {
        ParameterValues::new(&self.parameters, self.units.angle).map_err(|(k, message)| {
            let name = self.parameters.get(k).map_or("?", |p| p.name.as_str());
            ModelError::new(Place::Element(format!("parameter '{name}'")), message)
        })
    }

    /// Sets the parameters (checked by [`parameter_values`](Self::parameter_values)).
    pub fn set_parameters(&mut self, parameters: Vec<Parameter>) {
        self.parameters = parameters;
    }

    /// Sets the name.
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }

    /// Adds a part; its id must be new and non-empty, its marker names unique.
    pub fn add_part(&mut self, part: Part) -> Result<PartKey, ModelError> {
        let place = || Place::Element(format!("part '{}'", part.id));
        if part.id.is_empty() {
            return Err(ModelError::new(place(), "a part id is empty"));
        }
        if self.part_by_id.contains_key(&part.id) {
            return Err(ModelError::new(
                place(),
                format!("part id '{}' is used twice", part.id),
            ));
        }
        for (k, (name, _)) in part.markers.iter().enumerate() {
            if part.markers[..k].iter().any(|(n, _)| n == name) {
                return Err(ModelError::new(
                    place(),
                    format!("marker '{name}' is defined twice"),
                ));
            }
        }
        let id = part.id.clone();
        let key = self.parts.insert(part);
        self.part_order.push(key);
        self.part_by_id.insert(id, key);
        Ok(key)
    }

    /// Adds a joint; its id must be new and non-empty, its markers must exist and lie
    /// on two different parts.
    pub fn add_joint(&mut self, joint: Joint) -> Result<JointKey, ModelError> {
        let place = || Place::Element(format!("joint '{}'", joint.id));
        if joint.id.is_empty() {
            return Err(ModelError::new(place(), "a joint id is empty"));
        }
        if self.joint_by_id.contains_key(&joint.id) {
            return Err(ModelError::new(
                place(),
                format!("joint id '{}' is used twice", joint.id),
            ));
        }
        if joint.i.part == joint.j.part {
            return Err(ModelError::new(
                place(),
                "the joint connects a part to itself",
            ));
        }
        for end in [&joint.i, &joint.j] {
            let part = self.parts.get(end.part).ok_or_else(|| {
                ModelError::new(place(), "a joint end names a part of another assembly")
            })?;
            if let MarkerSpec::Named(name) = &end.marker {
                if part.marker(name).is_none() {
                    return Err(ModelError::new(
                        place(),
                        format!("part '{}' has no marker '{name}'", part.id),
                    ));
                }
            }
        }
        let id = joint.id.clone();
        let key = self.joints.insert(joint);
        self.joint_order.push(key);
        self.joint_by_id.insert(id, key);
        Ok(key)
    }

    /// Adds a motion; the joint must have a free coordinate of that kind.
    pub fn add_motion(&mut self, motion: Motion) -> Result<(), ModelError> {
        let joint = self.joints.get(motion.joint).ok_or_else(|| {
            ModelError::new(
                Place::Element("motion".into()),
                "the motion names a joint of another assembly",
            )
        })?;
        if !joint.joint_type.has_free(motion.coordinate.field()) {
            return Err(ModelError::new(
                Place::Element(format!("motion of joint '{}'", joint.id)),
                format!(
                    "a {} joint has no free {} to drive",
                    joint.joint_type.name(),
                    motion.coordinate.field().key()
                ),
            ));
        }
        self.motions.push(motion);
        Ok(())
    }

    /// Sets the forces.
    pub fn set_forces(&mut self, forces: Forces) {
        self.forces = forces;
    }
    /// Sets the simulation settings.
    pub fn set_simulation(&mut self, simulation: Option<Simulation>) {
        self.simulation = simulation;
    }
    /// Sets the top-level extra data.
    pub(crate) fn set_extra(&mut self, extra: Option<Extra>) {
        self.extra = extra;
    }
    /// Changes a part's placement (e.g. to write a solved pose).
    pub fn set_part_placement(&mut self, key: PartKey, placement: Placement) -> bool {
        match self.parts.get_mut(key) {
            Some(p) => {
                p.placement = placement;
                true
            }
            None => false,
        }
    }
    /// Replaces a joint's limits.
    pub fn set_joint_limits(&mut self, key: JointKey, limits: crate::joint::Limits) -> bool {
        match self.joints.get_mut(key) {
            Some(j) => {
                j.limits = limits;
                true
            }
            None => false,
        }
    }

    /// Changes whether a part is grounded.
    pub fn set_grounded(&mut self, key: PartKey, grounded: bool) -> bool {
        match self.parts.get_mut(key) {
            Some(p) => {
                p.grounded = grounded;
                true
            }
            None => false,
        }
    }
}
