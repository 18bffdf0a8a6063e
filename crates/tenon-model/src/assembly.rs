//! The assembly: parts with markers and mass properties, joints, parameters, motions,
//! forces and simulation settings. Typed keys inside; ids as the file gives them outside.

use rustc_hash::FxHashMap;
use slotmap::{new_key_type, SlotMap};

use crate::error::{ModelError, Place};
use crate::ids::IdIndex;
use crate::joint::{Field, Joint, MarkerSpec};
use crate::placement::Placement;
use crate::scalar::{Parameter, ParameterValues, Scalar, Units};
use crate::validate::{self, Invalid, Numbers};

new_key_type! {
    /// A part of an [`Assembly`].
    pub struct PartKey;
    /// A joint of an [`Assembly`].
    pub struct JointKey;
}

/// Data for other programs (an `extra` value), kept as given, character for character
/// (integers stay integers, key order and spacing stay), and written back.
#[derive(Debug, Clone)]
pub struct Extra(pub(crate) ExtraText);

/// How an [`Extra`] holds its text.
#[derive(Debug, Clone)]
pub(crate) enum ExtraText {
    /// JSON text, as read from a JSON file.
    Json(Box<str>),
    /// An `.asmt` element's items, turned into JSON text the first time it is asked for
    /// (most of an element's extra is blocks of lines kept verbatim, which a solve never
    /// reads: writing them as JSON was a tenth of reading a small file).
    Asmt {
        items: Box<crate::asmt::AsmtExtra>,
        json: std::sync::OnceLock<Box<str>>,
    },
}

impl PartialEq for Extra {
    fn eq(&self, other: &Extra) -> bool {
        self.as_json_text() == other.as_json_text()
    }
}

impl Extra {
    /// Extra data that is JSON text already.
    pub(crate) fn from_json_text(text: Box<str>) -> Extra {
        Extra(ExtraText::Json(text))
    }

    /// The data as JSON text, as it was read.
    pub fn to_json_text(&self) -> String {
        self.as_json_text().to_string()
    }

    /// The data as JSON text, as it was read.
    pub fn as_json_text(&self) -> &str {
        match &self.0 {
            ExtraText::Json(text) => text,
            ExtraText::Asmt { items, json } => json.get_or_init(|| items.json_text()),
        }
    }

    /// Extra data as `serde_json` writes `v` (the `.asmt` reader writes its own text;
    /// its tests compare the two).
    #[cfg(test)]
    pub(crate) fn from_value(v: &serde_json::Value) -> Extra {
        Extra::from_json_text(v.to_string().into_boxed_str())
    }
}

/// What an `extra` below a part, a joint or the document's top level belongs to: the
/// element and the path from it (`markers.pin.rotation`, `i`, `motions[0]`), so that
/// it is written back where it was read after the elements around it change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtraOwner {
    Root,
    Part(PartKey),
    Joint(JointKey),
}

/// An `extra` inside an element's sub-object (a marker, a placement, a rotation, a mass,
/// a marker reference, units, a motion, a spring, a load, the simulation).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NestedExtra {
    pub(crate) owner: ExtraOwner,
    /// The sub-object's path from the owner (a path as errors print it).
    pub(crate) path: String,
    pub(crate) extra: Extra,
}

/// Mass properties (needed only for dynamics).
#[derive(Debug, Clone, PartialEq)]
pub struct Mass {
    /// Mass.
    pub mass: Scalar,
    /// Centre of mass in part coordinates.
    pub center_of_mass: [Scalar; 3],
    /// Inertia about the centre of mass, in part axes (symmetric positive semi-definite).
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
    /// Mass properties, if given (boxed, as the velocity: most parts of a kinematic
    /// model have neither, and a part is then less than half the size, which a large
    /// assembly reads, copies and frees part by part).
    pub mass: Option<Box<Mass>>,
    /// Initial velocity for dynamics (world frame), if given; at rest otherwise.
    pub velocity: Option<Box<PartVelocity>>,
    /// Data for other programs.
    pub extra: Option<Extra>,
}

/// A part's initial velocity for dynamics: the linear velocity of the part frame's
/// origin and the angular velocity, world frame (length / time, angle / time).
#[derive(Debug, Clone, PartialEq)]
pub struct PartVelocity {
    /// Velocity of the part frame's origin.
    pub linear: [Scalar; 3],
    /// Angular velocity.
    pub angular: [Scalar; 3],
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
            velocity: None,
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
    /// Start time (`None`: 0).
    pub start: Option<Scalar>,
    /// End time.
    pub end: Scalar,
    /// Integration step.
    pub step: Scalar,
    /// Output interval.
    pub output_step: Option<Scalar>,
    /// Integration method of dynamics (`None`: generalized-alpha).
    pub method: Option<Method>,
    /// Spectral radius at infinite frequency of generalized-alpha, in `[0, 1]`.
    pub rho_inf: Option<Scalar>,
    /// Newton tolerance of dynamics on the residuals (model units).
    pub tolerance: Option<Scalar>,
    /// Baumgarte stabilisation `(alpha, beta)` (with `method` Baumgarte).
    pub baumgarte: Option<[Scalar; 2]>,
}

impl Simulation {
    /// Settings with an end and a step, the rest unset.
    pub fn new(end: Scalar, step: Scalar) -> Simulation {
        Simulation {
            start: None,
            end,
            step,
            output_step: None,
            method: None,
            rho_inf: None,
            tolerance: None,
            baumgarte: None,
        }
    }
}

/// How dynamics integrates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Index-3 generalized-alpha (file name `generalized_alpha`).
    GeneralizedAlpha,
    /// Index-1 with Baumgarte stabilisation (file name `baumgarte`).
    Baumgarte,
}

impl Method {
    /// The name in files.
    pub fn name(self) -> &'static str {
        match self {
            Method::GeneralizedAlpha => "generalized_alpha",
            Method::Baumgarte => "baumgarte",
        }
    }
}

/// An assembly. Build it from a file (`crate::read_json`, `crate::read_asmt`) or
/// through the methods below. **Invariant:** every element obeys the model's rules
/// (module `validate`) with the current parameter values, ids are unique and every
/// reference is valid: the builders refuse what would break that, with the message a
/// reader gives for the same problem in a file, and leave the assembly as it was.
#[derive(Debug, Clone)]
pub struct Assembly {
    name: String,
    units: Units,
    parameters: Vec<Parameter>,
    values: ParameterValues,
    parts: SlotMap<PartKey, Part>,
    part_order: Vec<PartKey>,
    part_by_id: IdIndex<PartKey>,
    joints: SlotMap<JointKey, Joint>,
    joint_order: Vec<JointKey>,
    joint_by_id: IdIndex<JointKey>,
    motions: Vec<Motion>,
    forces: Forces,
    simulation: Option<Simulation>,
    tolerance: Option<f64>,
    extra: Option<Extra>,
    nested_extras: Vec<NestedExtra>,
    /// For parts with more than [`INDEXED_MARKERS`] markers (a ground holding the
    /// anchors of thousands of mechanisms), each marker's position in the part's list by
    /// name, so that finding a joint's markers does not scan the list.
    marker_index: FxHashMap<PartKey, FxHashMap<String, usize>>,
}

/// Parts with more markers than this have them indexed by name.
const INDEXED_MARKERS: usize = 16;

/// A model error about an element built through the API: the element, the place in it,
/// and the message.
fn element_error(element: String, e: Invalid) -> ModelError {
    let place = if e.at.is_empty() {
        element
    } else {
        format!("{element} {}", e.at)
    };
    ModelError::new(Place::Element(place), e.message)
}

impl Assembly {
    /// An empty assembly.
    pub fn new(name: impl Into<String>, units: Units) -> Self {
        Assembly {
            name: name.into(),
            units,
            parameters: Vec::new(),
            values: ParameterValues::default(),
            parts: SlotMap::with_key(),
            part_order: Vec::new(),
            part_by_id: IdIndex::default(),
            joints: SlotMap::with_key(),
            joint_order: Vec::new(),
            joint_by_id: IdIndex::default(),
            motions: Vec::new(),
            forces: Forces::default(),
            simulation: None,
            tolerance: None,
            extra: None,
            nested_extras: Vec::new(),
            marker_index: FxHashMap::default(),
        }
    }

    /// The marker `name` of part `part` (by its index when the part has many).
    pub fn marker(&self, part: PartKey, name: &str) -> Option<&Placement> {
        let p = self.parts.get(part)?;
        match self.marker_index.get(&part) {
            Some(index) => index
                .get(name)
                .and_then(|&k| p.markers.get(k))
                .map(|(_, placement)| placement),
            None => p.marker(name),
        }
    }

    /// Rebuilds part `key`'s marker index after its markers changed.
    fn index_markers(&mut self, key: PartKey) {
        match self.parts.get(key) {
            Some(p) if p.markers.len() > INDEXED_MARKERS => {
                let index = p
                    .markers
                    .iter()
                    .enumerate()
                    .map(|(k, (name, _))| (name.clone(), k))
                    .collect();
                self.marker_index.insert(key, index);
            }
            _ => {
                self.marker_index.remove(&key);
            }
        }
    }

    fn numbers(&self) -> Numbers<'_> {
        Numbers {
            values: &self.values,
            units: self.units,
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
    /// The parameters' current values.
    pub fn parameter_values(&self) -> &ParameterValues {
        &self.values
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
        self.part_by_id
            .get(id, |k| self.parts.get(k).map(|p| p.id.as_str()))
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
        self.joint_by_id
            .get(id, |k| self.joints.get(k).map(|j| j.id.as_str()))
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
    /// The geometric tolerance (model length units), if given: repeated joints that
    /// disagree by less are placed and reported over-constrained with their
    /// disagreement; by more, conflicting.
    pub fn tolerance(&self) -> Option<f64> {
        self.tolerance
    }
    /// Top-level extra data.
    pub fn extra(&self) -> Option<&Extra> {
        self.extra.as_ref()
    }

    /// Replaces the parameters. They must evaluate (no cycles, unknown names or
    /// non-finite values), and every element must still obey the model's rules with the
    /// new values (a radius that became 0, an axis that became zero, a negative mass):
    /// else the error names the parameter or the element, and nothing changes.
    pub fn set_parameters(&mut self, parameters: Vec<Parameter>) -> Result<(), ModelError> {
        let values =
            ParameterValues::new(&parameters, self.units.angle).map_err(|(k, message)| {
                let name = parameters.get(k).map_or("?", |p| p.name.as_str());
                ModelError::new(Place::Element(format!("parameter '{name}'")), message)
            })?;
        let old_values = std::mem::replace(&mut self.values, values);
        if let Err(e) = self.check_all() {
            self.values = old_values;
            return Err(e);
        }
        self.parameters = parameters;
        Ok(())
    }

    /// Sets one parameter's value or expression (see
    /// [`set_parameters`](Self::set_parameters)).
    pub fn set_parameter(&mut self, name: &str, value: Scalar) -> Result<(), ModelError> {
        let mut parameters = self.parameters.clone();
        let p = parameters
            .iter_mut()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                ModelError::new(
                    Place::Element(format!("parameter '{name}'")),
                    format!("no parameter '{name}'"),
                )
            })?;
        p.value = value;
        self.set_parameters(parameters)
    }

    /// Every element against the model's rules with the current parameter values.
    fn check_all(&self) -> Result<(), ModelError> {
        let n = self.numbers();
        for (_, p) in self.parts() {
            validate::part(p, n).map_err(|e| element_error(format!("part '{}'", p.id), e))?;
        }
        for (_, j) in self.joints() {
            validate::joint(j, n).map_err(|e| element_error(format!("joint '{}'", j.id), e))?;
        }
        for m in &self.motions {
            if let Some(j) = self.joints.get(m.joint) {
                validate::motion(m, j, n)
                    .map_err(|e| element_error(format!("motion of joint '{}'", j.id), e))?;
            }
        }
        validate::forces(&self.forces, n).map_err(|e| element_error("forces".into(), e))?;
        if let Some(s) = &self.simulation {
            validate::simulation(s, n).map_err(|e| element_error("simulation".into(), e))?;
        }
        Ok(())
    }

    /// Sets the name.
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }

    /// Adds a part: its id must be new and non-empty, its marker names non-empty and
    /// unique, its placement, markers and mass valid.
    pub fn add_part(&mut self, part: Part) -> Result<PartKey, ModelError> {
        match self.check_part(&part) {
            Ok(()) => Ok(self.insert_part(part)),
            Err(e) => Err(element_error(format!("part '{}'", part.id), e)),
        }
    }

    /// [`add_part`](Self::add_part) with the problem's place inside the part (for the
    /// readers).
    pub(crate) fn add_part_checked(&mut self, part: Part) -> Result<PartKey, Invalid> {
        self.check_part(&part)?;
        Ok(self.insert_part(part))
    }

    /// The part's problem, if it cannot be added.
    fn check_part(&self, part: &Part) -> Result<(), Invalid> {
        validate::part(part, self.numbers())?;
        if self.part_by_id(&part.id).is_some() {
            return Err(Invalid {
                at: "id".into(),
                message: format!("part id '{}' is used twice", part.id),
            });
        }
        Ok(())
    }

    /// Adds a part [`check_part`](Self::check_part) accepted.
    fn insert_part(&mut self, part: Part) -> PartKey {
        let key = self.parts.insert(part);
        self.part_order.push(key);
        let parts = &self.parts;
        let id_of = |k| parts.get(k).map(|p: &Part| p.id.as_str());
        if let Some(id) = id_of(key) {
            self.part_by_id.insert(id, key, id_of);
        }
        self.index_markers(key);
        key
    }

    /// Adds a joint: its id must be new and non-empty, its markers must exist and lie on
    /// two different parts, and its fields, profiles and limits must be those its type
    /// takes, with valid values.
    pub fn add_joint(&mut self, joint: Joint) -> Result<JointKey, ModelError> {
        match self.check_joint(&joint) {
            Ok(()) => Ok(self.insert_joint(joint)),
            Err(e) => Err(element_error(format!("joint '{}'", joint.id), e)),
        }
    }

    /// Room for `parts` more parts and `joints` more joints, so that reading a large file
    /// fills its tables once instead of growing them by doubling.
    pub(crate) fn reserve(&mut self, parts: usize, joints: usize) {
        self.parts.reserve(parts);
        self.part_order.reserve(parts);
        let all = &self.parts;
        self.part_by_id
            .reserve(parts, |k| all.get(k).map(|p| p.id.as_str()));
        self.joints.reserve(joints);
        self.joint_order.reserve(joints);
        let all = &self.joints;
        self.joint_by_id
            .reserve(joints, |k| all.get(k).map(|j| j.id.as_str()));
    }

    /// [`add_joint`](Self::add_joint) with the problem's place inside the joint.
    pub(crate) fn add_joint_checked(&mut self, joint: Joint) -> Result<JointKey, Invalid> {
        self.check_joint(&joint)?;
        Ok(self.insert_joint(joint))
    }

    /// The joint's problem, if it cannot be added.
    fn check_joint(&self, joint: &Joint) -> Result<(), Invalid> {
        self.check_ends(joint)?;
        validate::joint(joint, self.numbers())?;
        if self.joint_by_id(&joint.id).is_some() {
            return Err(Invalid {
                at: "id".into(),
                message: format!("joint id '{}' is used twice", joint.id),
            });
        }
        Ok(())
    }

    /// Adds a joint [`check_joint`](Self::check_joint) accepted.
    fn insert_joint(&mut self, joint: Joint) -> JointKey {
        let key = self.joints.insert(joint);
        self.joint_order.push(key);
        let joints = &self.joints;
        let id_of = |k| joints.get(k).map(|j: &Joint| j.id.as_str());
        if let Some(id) = id_of(key) {
            self.joint_by_id.insert(id, key, id_of);
        }
        key
    }

    /// Both ends name a part of this assembly and, by name, one of its markers.
    fn check_ends(&self, joint: &Joint) -> Result<(), Invalid> {
        for (end, r) in [("i", &joint.i), ("j", &joint.j)] {
            let part = self.parts.get(r.part).ok_or_else(|| Invalid {
                at: format!("{end}.part"),
                message: "a joint end names a part of another assembly".into(),
            })?;
            if let MarkerSpec::Named(name) = &r.marker {
                if self.marker(r.part, name).is_none() {
                    return Err(Invalid {
                        at: format!("{end}.marker"),
                        message: format!("part '{}' has no marker '{name}'", part.id),
                    });
                }
            }
        }
        Ok(())
    }

    /// Adds a motion; the joint must have a free coordinate of that kind, and the value
    /// must evaluate at t = 0.
    pub fn add_motion(&mut self, motion: Motion) -> Result<(), ModelError> {
        self.add_motion_checked(motion)
            .map_err(|(element, e)| element_error(element, e))
    }

    /// [`add_motion`](Self::add_motion), the element named beside the problem.
    pub(crate) fn add_motion_checked(&mut self, motion: Motion) -> Result<(), (String, Invalid)> {
        let joint = self.joints.get(motion.joint).ok_or_else(|| {
            (
                "motion".to_string(),
                Invalid {
                    at: "joint".into(),
                    message: "the motion names a joint of another assembly".into(),
                },
            )
        })?;
        let element = || format!("motion of joint '{}'", joint.id);
        validate::motion(&motion, joint, self.numbers()).map_err(|e| (element(), e))?;
        // One coordinate takes one prescription: a second motion, or a motion on a
        // coordinate the joint's own field already fixes, contradicts it.
        let field = motion.coordinate.field();
        let twice = self
            .motions
            .iter()
            .any(|m| m.joint == motion.joint && m.coordinate == motion.coordinate);
        if twice || joint.field(field).is_some() {
            let what = if twice {
                "a motion"
            } else {
                "a driving value (its own field)"
            };
            return Err((
                element(),
                Invalid {
                    at: field.key().into(),
                    message: format!(
                        "joint '{}' already has {what} on its {}: one coordinate takes one prescription",
                        joint.id,
                        field.key()
                    ),
                },
            ));
        }
        self.motions.push(motion);
        Ok(())
    }

    /// Sets the forces (ends and parts must belong to this assembly; values valid).
    pub fn set_forces(&mut self, forces: Forces) -> Result<(), ModelError> {
        self.set_forces_checked(forces)
            .map_err(|e| element_error("forces".into(), e))
    }

    pub(crate) fn set_forces_checked(&mut self, forces: Forces) -> Result<(), Invalid> {
        for (k, s) in forces.springs.iter().enumerate() {
            for (end, r) in [("i", &s.i), ("j", &s.j)] {
                let part = self.parts.get(r.part).ok_or_else(|| Invalid {
                    at: format!("springs[{k}].{end}.part"),
                    message: "a spring end names a part of another assembly".into(),
                })?;
                if let MarkerSpec::Named(name) = &r.marker {
                    if part.marker(name).is_none() {
                        return Err(Invalid {
                            at: format!("springs[{k}].{end}.marker"),
                            message: format!("part '{}' has no marker '{name}'", part.id),
                        });
                    }
                }
            }
        }
        for (k, l) in forces.loads.iter().enumerate() {
            if !self.parts.contains_key(l.part) {
                return Err(Invalid {
                    at: format!("loads[{k}].part"),
                    message: "a load names a part of another assembly".into(),
                });
            }
        }
        validate::forces(&forces, self.numbers())?;
        self.forces = forces;
        Ok(())
    }

    /// Sets the geometric tolerance (a finite number, 0 or more, in model length units;
    /// `None`: the solver's length tolerance).
    pub fn set_tolerance(&mut self, tolerance: Option<f64>) -> Result<(), ModelError> {
        self.set_tolerance_checked(tolerance)
            .map_err(|e| element_error("tolerance".into(), e))
    }

    pub(crate) fn set_tolerance_checked(&mut self, tolerance: Option<f64>) -> Result<(), Invalid> {
        if let Some(t) = tolerance {
            if !(t.is_finite() && t >= 0.0) {
                return Err(Invalid {
                    at: String::new(),
                    message: format!("the tolerance must be a finite length of 0 or more, not {t}"),
                });
            }
        }
        self.tolerance = tolerance;
        Ok(())
    }

    /// Sets the simulation settings (positive end, step and output step).
    pub fn set_simulation(&mut self, simulation: Option<Simulation>) -> Result<(), ModelError> {
        self.set_simulation_checked(simulation)
            .map_err(|e| element_error("simulation".into(), e))
    }

    pub(crate) fn set_simulation_checked(
        &mut self,
        simulation: Option<Simulation>,
    ) -> Result<(), Invalid> {
        if let Some(s) = &simulation {
            validate::simulation(s, self.numbers())?;
        }
        self.simulation = simulation;
        Ok(())
    }

    /// `extra` values inside sub-objects, with where each belongs.
    pub(crate) fn nested_extras(&self) -> &[NestedExtra] {
        &self.nested_extras
    }

    /// Keeps `extra` values read inside sub-objects.
    pub(crate) fn set_nested_extras(&mut self, nested: Vec<NestedExtra>) {
        self.nested_extras = nested;
    }

    /// Sets the top-level extra data.
    pub(crate) fn set_extra(&mut self, extra: Option<Extra>) {
        self.extra = extra;
    }

    /// Changes a part's placement (e.g. to write a solved pose); refused when it does
    /// not evaluate.
    pub fn set_part_placement(
        &mut self,
        key: PartKey,
        placement: Placement,
    ) -> Result<(), ModelError> {
        let n = self.numbers();
        let Some(p) = self.parts.get(key) else {
            return Err(unknown_key("part"));
        };
        n.placement(&placement, None)
            .map_err(|e| element_error(format!("part '{}'", p.id), e.under("placement")))?;
        if let Some(p) = self.parts.get_mut(key) {
            p.placement = placement;
        }
        Ok(())
    }

    /// Replaces a joint's limits (checked as in a file).
    pub fn set_joint_limits(
        &mut self,
        key: JointKey,
        limits: crate::joint::Limits,
    ) -> Result<(), ModelError> {
        let Some(j) = self.joints.get(key) else {
            return Err(unknown_key("joint"));
        };
        let mut changed = j.clone();
        changed.limits = limits;
        validate::joint(&changed, self.numbers())
            .map_err(|e| element_error(format!("joint '{}'", changed.id), e))?;
        if let Some(j) = self.joints.get_mut(key) {
            *j = changed;
        }
        Ok(())
    }

    /// Suppresses a joint (kept, left out of the solve) or brings it back.
    pub fn set_joint_suppressed(
        &mut self,
        key: JointKey,
        suppressed: bool,
    ) -> Result<(), ModelError> {
        let j = self
            .joints
            .get_mut(key)
            .ok_or_else(|| unknown_key("joint"))?;
        j.suppressed = suppressed;
        Ok(())
    }

    /// Changes whether a part is grounded.
    pub fn set_grounded(&mut self, key: PartKey, grounded: bool) -> Result<(), ModelError> {
        let p = self.parts.get_mut(key).ok_or_else(|| unknown_key("part"))?;
        p.grounded = grounded;
        Ok(())
    }

    /// Adds a marker to a part (name non-empty and new on the part, placement valid).
    pub fn add_marker(
        &mut self,
        key: PartKey,
        name: impl Into<String>,
        placement: Placement,
    ) -> Result<(), ModelError> {
        let Some(p) = self.parts.get(key) else {
            return Err(unknown_key("part"));
        };
        let mut changed = p.clone();
        changed.markers.push((name.into(), placement));
        validate::part(&changed, self.numbers())
            .map_err(|e| element_error(format!("part '{}'", changed.id), e))?;
        if let Some(p) = self.parts.get_mut(key) {
            *p = changed;
        }
        self.index_markers(key);
        Ok(())
    }

    /// Removes a joint, and the motions that drive it. Returns the joint.
    pub fn remove_joint(&mut self, key: JointKey) -> Result<Joint, ModelError> {
        let joint = self
            .joints
            .remove(key)
            .ok_or_else(|| unknown_key("joint"))?;
        self.joint_order.retain(|&k| k != key);
        self.joint_by_id.remove(&joint.id, key);
        let gone = indices(&self.motions, |m| m.joint == key);
        self.motions.retain(|m| m.joint != key);
        self.renumber_extras("motions", &gone);
        self.nested_extras
            .retain(|e| e.owner != ExtraOwner::Joint(key));
        Ok(joint)
    }

    /// After the elements at `gone` (ascending) of the top-level list `list` were
    /// removed: their nested `extra` values go with them, the others follow their
    /// element's new index.
    fn renumber_extras(&mut self, list: &str, gone: &[usize]) {
        if gone.is_empty() {
            return;
        }
        self.nested_extras.retain_mut(|e| {
            if e.owner != ExtraOwner::Root {
                return true;
            }
            let Some(rest) = e.path.strip_prefix(list).and_then(|r| r.strip_prefix('[')) else {
                return true;
            };
            let Some((index, tail)) = rest.split_once(']') else {
                return true;
            };
            let Ok(k) = index.parse::<usize>() else {
                return true;
            };
            if gone.binary_search(&k).is_ok() {
                return false;
            }
            let before = gone.partition_point(|&g| g < k);
            e.path = format!("{list}[{}]{tail}", k - before);
            true
        });
    }

    /// Removes a part and everything attached to it: its joints (with their motions),
    /// the springs with an end on it and the loads on it (as a CAD program deletes a
    /// part's mates with the part). Returns the part and the ids of the joints removed.
    pub fn remove_part(&mut self, key: PartKey) -> Result<(Part, Vec<String>), ModelError> {
        if !self.parts.contains_key(key) {
            return Err(unknown_key("part"));
        }
        let attached: Vec<JointKey> = self
            .joints()
            .filter(|(_, j)| j.i.part == key || j.j.part == key)
            .map(|(k, _)| k)
            .collect();
        let mut removed = Vec::with_capacity(attached.len());
        for k in attached {
            removed.push(self.remove_joint(k)?.id);
        }
        let springs = indices(&self.forces.springs, |s| s.i.part == key || s.j.part == key);
        self.forces
            .springs
            .retain(|s| s.i.part != key && s.j.part != key);
        self.renumber_extras("forces.springs", &springs);
        let loads = indices(&self.forces.loads, |l| l.part == key);
        self.forces.loads.retain(|l| l.part != key);
        self.renumber_extras("forces.loads", &loads);
        let part = self.parts.remove(key).ok_or_else(|| unknown_key("part"))?;
        self.marker_index.remove(&key);
        self.part_order.retain(|&k| k != key);
        self.part_by_id.remove(&part.id, key);
        self.nested_extras
            .retain(|e| e.owner != ExtraOwner::Part(key));
        Ok((part, removed))
    }
}

/// The indices of the items that `gone` picks, ascending.
fn indices<T>(items: &[T], gone: impl Fn(&T) -> bool) -> Vec<usize> {
    items
        .iter()
        .enumerate()
        .filter(|(_, x)| gone(x))
        .map(|(k, _)| k)
        .collect()
}

/// A key that is not (or no longer) in this assembly.
fn unknown_key(what: &str) -> ModelError {
    ModelError::new(
        Place::Element(what.to_string()),
        format!("the {what} is not in this assembly (removed, or of another assembly)"),
    )
}
