//! The joint vocabulary of assembly format v1: type names, aliases, degrees of freedom
//! removed, and the fields each type takes. The equations live in tenon-system; this
//! table is what files may say.

use crate::placement::Placement;
use crate::scalar::Scalar;
use crate::PartKey;

/// Every joint type of the spec's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // each variant is the spec row of the same name
pub enum JointType {
    Fixed,
    Revolute,
    Cylindrical,
    Slider,
    Ball,
    Planar,
    Universal,
    Screw,
    PointOnLine,
    PointInPlane,
    LineInPlane,
    Parallel,
    Perpendicular,
    Angle,
    Distance,
    Gear,
    Belt,
    RackPinion,
    Slot,
    Cam,
    PointLineDistance,
    ParallelAtDistance,
    CoplanarParallelAtDistance,
    ConstantVelocity,
    ScrewCoupling,
    NoRotation,
    CurveContact,
    /// Custom: the joint's own residual expressions (`residuals`), over measures of
    /// marker i relative to marker j.
    Expression,
}

/// A scalar field a joint may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// `offset` (planar, point_in_plane, line_in_plane).
    Offset,
    /// `pitch`: length per turn (screw, screw_coupling).
    Pitch,
    /// `angle`: the angle joint's angle, or a driving value.
    Angle,
    /// `distance`: the distance joints' distance, or a driving value.
    Distance,
    /// `radius_i` (gear, belt).
    RadiusI,
    /// `radius_j` (gear, belt).
    RadiusJ,
    /// `radius` (rack_pinion).
    Radius,
}

impl Field {
    /// Every field, in the order files are written.
    pub const ALL: [Field; 7] = [
        Field::Offset,
        Field::Pitch,
        Field::Angle,
        Field::Distance,
        Field::RadiusI,
        Field::RadiusJ,
        Field::Radius,
    ];

    /// The key in files.
    pub fn key(self) -> &'static str {
        match self {
            Field::Offset => "offset",
            Field::Pitch => "pitch",
            Field::Angle => "angle",
            Field::Distance => "distance",
            Field::RadiusI => "radius_i",
            Field::RadiusJ => "radius_j",
            Field::Radius => "radius",
        }
    }
}

/// What a field must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Any finite number.
    Any,
    /// Greater than zero.
    Positive,
    /// Zero or more.
    NonNegative,
    /// Not zero.
    NonZero,
    /// An angle from 0 to 180 degrees (in the file's unit).
    HalfTurn,
}

impl Rule {
    /// Checks a value (in the file's units) against the rule; the error says what it
    /// must be.
    pub fn check(self, x: f64, angle: crate::scalar::AngleUnit) -> Result<(), String> {
        let ok = match self {
            Rule::Any => true,
            Rule::Positive => x > 0.0,
            Rule::NonNegative => x >= 0.0,
            Rule::NonZero => x != 0.0,
            Rule::HalfTurn => (0.0..=std::f64::consts::PI).contains(&(x * angle.radians())),
        };
        if ok {
            return Ok(());
        }
        let want = match self {
            Rule::Any => "a number",
            Rule::Positive => "greater than 0",
            Rule::NonNegative => "0 or more",
            Rule::NonZero => "not 0",
            Rule::HalfTurn => "an angle from 0 to 180 degrees",
        };
        Err(format!("must be {want}, is {x}"))
    }
}

/// How a joint type uses a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldUse {
    /// The field.
    pub field: Field,
    /// Whether the file must give it (else it is absent, or defaults to 0 for offsets).
    pub required: bool,
    /// What its value must be.
    pub rule: Rule,
    /// True for a driving value (`angle`/`distance` locking a joint's free coordinate).
    pub drive: bool,
}

const fn req(field: Field, rule: Rule) -> FieldUse {
    FieldUse {
        field,
        required: true,
        rule,
        drive: false,
    }
}
const fn opt(field: Field) -> FieldUse {
    FieldUse {
        field,
        required: false,
        rule: Rule::Any,
        drive: false,
    }
}
const fn drive(field: Field) -> FieldUse {
    FieldUse {
        field,
        required: false,
        rule: Rule::Any,
        drive: true,
    }
}

impl JointType {
    /// Every type, in the spec's order.
    pub const ALL: [JointType; 28] = [
        JointType::Fixed,
        JointType::Revolute,
        JointType::Cylindrical,
        JointType::Slider,
        JointType::Ball,
        JointType::Planar,
        JointType::Universal,
        JointType::Screw,
        JointType::PointOnLine,
        JointType::PointInPlane,
        JointType::LineInPlane,
        JointType::Parallel,
        JointType::Perpendicular,
        JointType::Angle,
        JointType::Distance,
        JointType::Gear,
        JointType::Belt,
        JointType::RackPinion,
        JointType::Slot,
        JointType::Cam,
        JointType::PointLineDistance,
        JointType::ParallelAtDistance,
        JointType::CoplanarParallelAtDistance,
        JointType::ConstantVelocity,
        JointType::ScrewCoupling,
        JointType::NoRotation,
        JointType::CurveContact,
        JointType::Expression,
    ];

    /// Other names accepted on input.
    pub const ALIASES: [(&'static str, JointType); 7] = [
        ("coincident", JointType::Ball),
        ("sphere_sphere", JointType::Distance),
        ("concentric", JointType::Cylindrical),
        ("prismatic", JointType::Slider),
        ("translational", JointType::Slider),
        ("spherical", JointType::Ball),
        ("hinge", JointType::Revolute),
    ];

    /// The name in files.
    pub fn name(self) -> &'static str {
        match self {
            JointType::Fixed => "fixed",
            JointType::Revolute => "revolute",
            JointType::Cylindrical => "cylindrical",
            JointType::Slider => "slider",
            JointType::Ball => "ball",
            JointType::Planar => "planar",
            JointType::Universal => "universal",
            JointType::Screw => "screw",
            JointType::PointOnLine => "point_on_line",
            JointType::PointInPlane => "point_in_plane",
            JointType::LineInPlane => "line_in_plane",
            JointType::Parallel => "parallel",
            JointType::Perpendicular => "perpendicular",
            JointType::Angle => "angle",
            JointType::Distance => "distance",
            JointType::Gear => "gear",
            JointType::Belt => "belt",
            JointType::RackPinion => "rack_pinion",
            JointType::Slot => "slot",
            JointType::Cam => "cam",
            JointType::PointLineDistance => "point_line_distance",
            JointType::ParallelAtDistance => "parallel_at_distance",
            JointType::CoplanarParallelAtDistance => "coplanar_parallel_at_distance",
            JointType::ConstantVelocity => "constant_velocity",
            JointType::ScrewCoupling => "screw_coupling",
            JointType::NoRotation => "no_rotation",
            JointType::CurveContact => "curve_contact",
            JointType::Expression => "expression",
        }
    }

    /// The type of a name or alias.
    pub fn from_name(name: &str) -> Option<JointType> {
        JointType::ALL
            .iter()
            .copied()
            .find(|t| t.name() == name)
            .or_else(|| {
                JointType::ALIASES
                    .iter()
                    .find(|(a, _)| *a == name)
                    .map(|&(_, t)| t)
            })
    }

    /// Degrees of freedom the joint removes between its two parts (without driving
    /// values; each driving value removes one more). An `expression` joint removes one
    /// per residual ([`Joint::dof_removed`]); here 0.
    pub fn dof_removed(self) -> usize {
        match self {
            JointType::Expression => 0,
            JointType::Fixed => 6,
            JointType::Revolute | JointType::Slider | JointType::Screw => 5,
            JointType::Cylindrical
            | JointType::Universal
            | JointType::Slot
            | JointType::CoplanarParallelAtDistance
            | JointType::ConstantVelocity => 4,
            JointType::Ball
            | JointType::Planar
            | JointType::ParallelAtDistance
            | JointType::NoRotation => 3,
            JointType::PointOnLine
            | JointType::LineInPlane
            | JointType::Parallel
            | JointType::Cam => 2,
            JointType::PointInPlane
            | JointType::Perpendicular
            | JointType::Angle
            | JointType::Distance
            | JointType::Gear
            | JointType::Belt
            | JointType::RackPinion
            | JointType::PointLineDistance
            | JointType::ScrewCoupling
            | JointType::CurveContact => 1,
        }
    }

    /// The fields this type takes. Driving values: revolute (angle), cylindrical and
    /// screw (angle, distance), slider (distance), planar (angle: its translation along
    /// z is fixed by `offset`, so it has no distance to drive).
    pub fn fields(self) -> &'static [FieldUse] {
        use Field::*;
        const REVOLUTE: &[FieldUse] = &[drive(Angle)];
        const CYLINDRICAL: &[FieldUse] = &[drive(Angle), drive(Distance)];
        const SLIDER: &[FieldUse] = &[drive(Distance)];
        const PLANAR: &[FieldUse] = &[opt(Offset), drive(Angle)];
        const SCREW: &[FieldUse] = &[req(Pitch, Rule::NonZero), drive(Angle), drive(Distance)];
        const OFFSET: &[FieldUse] = &[opt(Offset)];
        const ANGLE: &[FieldUse] = &[req(Angle, Rule::HalfTurn)];
        const DISTANCE: &[FieldUse] = &[req(Distance, Rule::Positive)];
        const RADII: &[FieldUse] = &[req(RadiusI, Rule::Positive), req(RadiusJ, Rule::Positive)];
        // A negative radius reverses the rack's direction (OndselSolver files use it).
        const RADIUS: &[FieldUse] = &[req(Radius, Rule::NonZero)];
        const AT_DISTANCE: &[FieldUse] = &[req(Distance, Rule::NonNegative)];
        const PITCH: &[FieldUse] = &[req(Pitch, Rule::NonZero)];
        match self {
            JointType::Revolute => REVOLUTE,
            JointType::Cylindrical => CYLINDRICAL,
            JointType::Slider => SLIDER,
            JointType::Planar => PLANAR,
            JointType::Screw => SCREW,
            JointType::PointInPlane | JointType::LineInPlane => OFFSET,
            JointType::Angle => ANGLE,
            JointType::Distance => DISTANCE,
            JointType::Gear | JointType::Belt => RADII,
            JointType::RackPinion => RADIUS,
            JointType::PointLineDistance
            | JointType::ParallelAtDistance
            | JointType::CoplanarParallelAtDistance => AT_DISTANCE,
            JointType::ScrewCoupling => PITCH,
            JointType::Fixed
            | JointType::Ball
            | JointType::Universal
            | JointType::PointOnLine
            | JointType::Parallel
            | JointType::Perpendicular
            | JointType::Slot
            | JointType::Cam
            | JointType::ConstantVelocity
            | JointType::NoRotation
            | JointType::CurveContact
            | JointType::Expression => &[],
        }
    }

    /// How this type uses `field`, if at all.
    pub fn field_use(self, field: Field) -> Option<FieldUse> {
        self.fields().iter().copied().find(|u| u.field == field)
    }

    /// True when the type takes a profile on marker j (`profile` for a cam,
    /// `profile_j` for a curve contact).
    pub fn takes_profile(self) -> bool {
        matches!(self, JointType::Cam | JointType::CurveContact)
    }

    /// True when the type takes a profile on marker i too (`profile_i`).
    pub fn takes_profile_i(self) -> bool {
        self == JointType::CurveContact
    }

    /// True when the type has a free coordinate of this kind that a motion or a limit
    /// can act on.
    pub fn has_free(self, field: Field) -> bool {
        self.field_use(field).is_some_and(|u| u.drive)
    }
}

/// The most radii or points a profile may have: each evaluation of a profile costs a
/// term per point, and a start search samples it, so a much larger one would stall.
pub const MAX_PROFILE_POINTS: usize = 4096;

/// A closed curve drawn in a marker's xy plane (a cam's profile, either side of a curve
/// contact). Each is traced by a parameter `s` in `[0, 2 pi)`.
#[derive(Debug, Clone, PartialEq)]
pub enum CamProfile {
    /// A circle about the marker's origin: `r (cos s, sin s)`.
    Circle {
        /// Radius (> 0).
        radius: Scalar,
    },
    /// Radii at `n` equal angles from the marker's x axis, joined by a periodic cubic
    /// spline: `rho(s) (cos s, sin s)`.
    Polar(Vec<Scalar>),
    /// Points `(x, y)` in the marker's xy plane, joined in order (and back to the first)
    /// by a periodic cubic spline with the points at equal steps of `s`.
    Points(Vec<[Scalar; 2]>),
}

/// Where a joint attaches on a part: a named marker, or a frame given in place.
#[derive(Debug, Clone, PartialEq)]
pub enum MarkerSpec {
    /// A marker of the part, by name.
    Named(String),
    /// A frame in part coordinates.
    Inline(Box<Placement>),
}

/// One end of a joint (or spring).
#[derive(Debug, Clone, PartialEq)]
pub struct MarkerRef {
    /// The part.
    pub part: PartKey,
    /// The frame on it.
    pub marker: MarkerSpec,
}

/// A range `[min, max]` in file units; a side that is `None` is unbounded (written
/// `null` in files).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Range {
    /// Lower bound.
    pub min: Option<Scalar>,
    /// Upper bound.
    pub max: Option<Scalar>,
}

/// Inequalities on a joint's free coordinates.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Limits {
    /// Angle of `x_i` from `x_j` about `z_j`.
    pub angle: Option<Range>,
    /// Distance of `O_i` from `O_j` along `z_j`.
    pub distance: Option<Range>,
}

/// Initial speeds of a joint's free coordinates (dynamics; angle / time, length / time),
/// measured as their driving values are.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JointRate {
    /// Rate of the angle of `x_i` from `x_j` about `z_j`.
    pub angle: Option<Scalar>,
    /// Rate of the distance of `O_i` from `O_j` along `z_j`.
    pub distance: Option<Scalar>,
}

impl JointRate {
    /// True when no rate is given.
    pub fn is_empty(&self) -> bool {
        self.angle.is_none() && self.distance.is_none()
    }
}

/// A joint between two markers.
#[derive(Debug, Clone, PartialEq)]
pub struct Joint {
    /// Unique id (as in the file).
    pub id: String,
    /// Type.
    pub joint_type: JointType,
    /// Marker i.
    pub i: MarkerRef,
    /// Marker j.
    pub j: MarkerRef,
    /// Kept in the file, left out of the solve.
    pub suppressed: bool,
    /// Scalar fields, at most one per field, in [`Field::ALL`] order.
    pub fields: Vec<(Field, Scalar)>,
    /// The profile on marker j (cam and curve-contact joints only).
    pub profile: Option<CamProfile>,
    /// The profile on marker i (curve-contact joints only).
    pub profile_i: Option<CamProfile>,
    /// Limits on free coordinates.
    pub limits: Limits,
    /// Initial speeds of free coordinates (dynamics).
    pub rate: JointRate,
    /// Data for other programs, kept as given.
    pub extra: Option<crate::Extra>,
    /// An `expression` joint's residuals (empty for other types): expression strings
    /// over parameters, `t` and the measures of [`MEASURES`].
    pub residuals: Vec<String>,
    /// How much the joint gives (`None`: rigid): length per force for its equations
    /// that measure lengths, angle per torque for those that measure angles, in the
    /// file's units. Statics weigh its equations by it where joints disagree; dynamics
    /// hold them as a spring of that compliance.
    pub compliance: Option<Scalar>,
}

/// The measures an `expression` joint's residuals may use, of marker i relative to
/// marker j: `distance` (`|O_i - O_j|`), `dx`, `dy`, `dz` (`O_i - O_j` in marker j's
/// axes), `angle` (of `x_i` from `x_j` about `z_j`, multi-turn), `tilt` (between `z_i`
/// and `z_j`, 0 to 180 degrees). Lengths in the length unit, angles in the angle unit.
pub const MEASURES: [&str; 6] = ["distance", "dx", "dy", "dz", "angle", "tilt"];

impl Joint {
    /// Degrees of freedom the joint removes: its type's, or one per residual of an
    /// `expression` joint.
    pub fn dof_removed(&self) -> usize {
        match self.joint_type {
            JointType::Expression => self.residuals.len(),
            t => t.dof_removed(),
        }
    }

    /// The value of a field, if given.
    pub fn field(&self, field: Field) -> Option<&Scalar> {
        self.fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, s)| s)
    }
}
