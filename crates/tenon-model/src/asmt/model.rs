//! The assembly an `.asmt` file describes: the assembly frame as a grounded part, parts
//! with their markers and mass, joints, springs, gravity and simulation settings.

use serde_json::{json, Value};

use super::extra::ExtraMap;
use super::motion::translate_formula;
use super::number::parse_number;
use super::tree::ROOT;
use super::{curves, MarkerPath, Reader, Result};
use crate::assembly::{Assembly, Forces, Mass, Part, PartKey, Simulation, Spring};
use crate::error::ModelError;
use crate::joint::{Field, Joint, JointType, Limits, MarkerRef, MarkerSpec};
use crate::placement::{quaternion_to_matrix, Placement, Pose, Rotation};
use crate::scalar::{AngleUnit, LengthUnit, MassUnit, Scalar, TimeUnit, Units};

impl<'a> Reader<'_, 'a> {
    /// Markers of a `RefPoints` item, each placed in the owner's frame.
    pub(super) fn markers(&self, ref_points: usize) -> Result<Vec<(String, Placement)>> {
        let mut markers = Vec::new();
        for rp in self.kids(ref_points) {
            if self.key(rp) != "RefPoint" {
                return Err(ModelError::at_line(
                    self.line(rp),
                    format!("'{}' in 'RefPoints' is not understood", self.key(rp)),
                ));
            }
            self.only(rp, &["Position3D", "RotationMatrix", "Markers"])?;
            let point = self.pose(rp)?;
            if let Some(ms) = self.child(rp, "Markers") {
                for m in self.kids(ms) {
                    if self.key(m) != "Marker" {
                        return Err(ModelError::at_line(
                            self.line(m),
                            format!("'{}' in 'Markers' is not understood", self.key(m)),
                        ));
                    }
                    self.only(m, &["Name", "Position3D", "RotationMatrix"])?;
                    let name = self.value_of(m, "Name")?.to_string();
                    let pose = point.compose(&self.pose(m)?);
                    markers.push((name, pose_placement(&pose)));
                }
            }
        }
        Ok(markers)
    }

    /// The `Assembly` item.
    pub(super) fn root(&self) -> Result<usize> {
        self.kids(ROOT)
            .find(|&n| self.key(n) == "Assembly")
            .ok_or_else(|| {
                ModelError::at_line(
                    1,
                    "no 'Assembly' item at the top level (not an .asmt file?)",
                )
            })
    }

    pub(super) fn assembly(&self) -> Result<Assembly> {
        let top = self.kids(ROOT);
        let banner = top.first();
        let root = self.root()?;
        for n in top {
            // The first line is a banner ("OndselSolver", "freeCAD: ..."); nothing else may
            // stand at the top level.
            if n != root && Some(n) != banner {
                return Err(ModelError::at_line(
                    self.line(n),
                    format!("'{}' at the top level is not understood", self.key(n)),
                ));
            }
        }
        self.only(
            root,
            &[
                "Notes",
                "Name",
                "Position3D",
                "RotationMatrix",
                "Velocity3D",
                "Omega3D",
                "RefPoints",
                "RefCurves",
                "RefSurfaces",
                "Parts",
                "KinematicIJs",
                "ConstraintSets",
                "ForceTorques",
                "ConstantGravity",
                "SimulationParameters",
                "AnimationParameters",
            ],
        )?;
        self.require_sections(root)?;
        let units = Units {
            length: LengthUnit::M,
            angle: AngleUnit::Rad,
            mass: MassUnit::Kg,
            time: TimeUnit::S,
        };
        let name = self.value_of(root, "Name")?.to_string();
        let mut assembly = Assembly::new(name.clone(), units);
        let mut extra = ExtraMap::new();
        if let Some(notes) = self.child(root, "Notes") {
            extra.insert_block("Notes", self.block_lines(notes));
        }
        for empty in ["RefCurves", "RefSurfaces", "KinematicIJs"] {
            self.require_empty(root, empty)?;
        }

        // The assembly frame is the grounded part holding the assembly-level markers.
        let mut ground = Part::new(name.clone(), pose_placement(&self.pose(root)?));
        ground.grounded = true;
        if let Some(rp) = self.child(root, "RefPoints") {
            ground.markers = self.markers(rp)?;
        }
        self.motion_state(root, &mut extra, "assembly")?;
        assembly
            .add_part(ground)
            .map_err(|e| ModelError::at_line(self.line(root), e.message()))?;

        let parts = self.req(root, "Parts")?;
        for p in self.kids(parts) {
            if self.key(p) != "Part" {
                return Err(ModelError::at_line(
                    self.line(p),
                    format!("'{}' in 'Parts' is not understood", self.key(p)),
                ));
            }
            let part = self.part(p)?;
            assembly
                .add_part(part)
                .map_err(|e| ModelError::at_line(self.line(p), e.message()))?;
        }

        let sets = self.req(root, "ConstraintSets")?;
        self.only(
            sets,
            &["Joints", "Motions", "GeneralConstraintSets", "Limits"],
        )?;
        self.require_empty(sets, "GeneralConstraintSets")?;
        if let Some(joints) = self.child(sets, "Joints") {
            for j in self.kids(joints) {
                let joint = self.joint(j, &assembly)?;
                if joint.i.part == joint.j.part {
                    // Both markers on one part: nothing to move or hold. Recorded, not
                    // made a joint (Tenon refuses joints from a part to itself).
                    extra.push_to_list(
                        "joints_within_one_part",
                        json!({ "name": joint.id, "kind": self.key(j), "line": self.line(j) }),
                    );
                    continue;
                }
                assembly
                    .add_joint(joint)
                    .map_err(|e| ModelError::at_line(self.line(j), e.message()))?;
            }
        }
        if let Some(limits) = self.child(sets, "Limits") {
            for l in self.kids(limits) {
                self.limit(l, &mut assembly)?;
            }
        }
        if let Some(motions) = self.child(sets, "Motions") {
            for m in self.kids(motions) {
                self.motion(m, &mut assembly, &mut extra)?;
            }
        }

        let mut forces = Forces::default();
        if let Some(g) = self.child(root, "ConstantGravity") {
            forces.gravity = Some(self.vec3(g)?.map(Scalar::Number));
        }
        if let Some(ft) = self.child(root, "ForceTorques") {
            for f in self.kids(ft) {
                forces.springs.push(self.spring(f, &assembly)?);
            }
        }
        let forces_line = self
            .child(root, "ForceTorques")
            .map_or(self.line(root), |f| self.line(f));
        assembly
            .set_forces(forces)
            .map_err(|e| ModelError::at_line(forces_line, e.message()))?;

        if let Some(sim) = self.child(root, "SimulationParameters") {
            self.only(sim, &["tstart", "tend", "hmin", "hmax", "hout", "errorTol"])?;
            let tstart = self.number(sim, "tstart")?;
            let tend = self.number(sim, "tend")?;
            let hmax = self.number(sim, "hmax")?;
            let hout = self.number(sim, "hout")?;
            // A run that ends where it starts (a static assembly) sets no simulation;
            // the block is kept under extra either way.
            if tend > tstart {
                for (k, v) in [("hmax", hmax), ("hout", hout)] {
                    if v <= 0.0 {
                        return Err(ModelError::at_line(
                            self.line(sim),
                            format!("'{k}' must be greater than 0, is {v}"),
                        ));
                    }
                }
                assembly
                    .set_simulation(Some(Simulation {
                        output_step: Some(Scalar::Number(hout)),
                        ..Simulation::new(Scalar::Number(tend), Scalar::Number(hmax.min(hout)))
                    }))
                    .map_err(|e| ModelError::at_line(self.line(sim), e.message()))?;
            }
            if tstart != 0.0 {
                extra.insert_number("tstart", tstart);
            }
            extra.insert_block("SimulationParameters", self.block_lines(sim));
        }
        if let Some(anim) = self.child(root, "AnimationParameters") {
            extra.insert_block("AnimationParameters", self.block_lines(anim));
        }
        assembly.set_extra(extra.into_extra());
        Ok(assembly)
    }

    /// Initial velocities: kept under `extra` when not zero, as numbers (their JSON text,
    /// `{"Velocity3D":[..],"Omega3D":[..]}`, is written only when the extra's text is
    /// asked for).
    pub(super) fn motion_state(
        &self,
        n: usize,
        extra: &mut ExtraMap,
        key: &'static str,
    ) -> Result<()> {
        let mut state = [("Velocity3D", None), ("Omega3D", None)];
        for (item, value) in &mut state {
            if let Some(v) = self.child(n, item) {
                let v = self.vec3(v)?;
                if v != [0.0; 3] {
                    *value = Some(v);
                }
            }
        }
        if state.iter().all(|(_, v)| v.is_none()) {
            return Ok(());
        }
        extra.insert_motion(key, state.map(|(_, v)| v));
        Ok(())
    }

    pub(super) fn part(&self, p: usize) -> Result<Part> {
        self.only(
            p,
            &[
                "Name",
                "Position3D",
                "RotationMatrix",
                "Velocity3D",
                "Omega3D",
                "FeatureOrder",
                "PrincipalMassMarker",
                "RefPoints",
                "RefCurves",
                "RefSurfaces",
            ],
        )?;
        let name = self.value_of(p, "Name")?.to_string();
        let mut part = Part::new(name, pose_placement(&self.pose(p)?));
        if let Some(rp) = self.child(p, "RefPoints") {
            part.markers = self.markers(rp)?;
        }
        let mut extra = ExtraMap::new();
        if let Some(rc) = self.child(p, "RefCurves") {
            let curves::PartCurves { markers, unused } = self.ref_curves(
                rc,
                &part.id,
                &self.contact_markers,
                &mut self.curves.borrow_mut(),
            )?;
            for (name, placement) in markers {
                if part.marker(&name).is_some() {
                    return Err(ModelError::at_line(
                        self.line(rc),
                        format!(
                            "part '{}' has a marker and a curve marker both named '{name}'",
                            part.id
                        ),
                    ));
                }
                part.markers.push((name, placement));
            }
            if !unused.is_empty() {
                extra.insert("RefCurves", Value::Array(unused));
            }
        }
        self.require_empty(p, "RefSurfaces")?;
        self.motion_state(p, &mut extra, "initial_velocity")?;
        if let Some(f) = self.child(p, "FeatureOrder") {
            if !self.kids(f).is_empty() {
                extra.insert_block("FeatureOrder", self.block_lines(f));
            }
        }
        if let Some(m) = self.child(p, "PrincipalMassMarker") {
            self.only(
                m,
                &[
                    "Name",
                    "Position3D",
                    "RotationMatrix",
                    "Mass",
                    "MomentOfInertias",
                    "Density",
                ],
            )?;
            let frame = self.pose(m)?;
            // The mass frame can be a joint's or motion's marker (OndselSolver allows it).
            let mass_name = self.value_of(m, "Name")?.to_string();
            if part.marker(&mass_name).is_none() {
                part.markers.push((mass_name, pose_placement(&frame)));
            }
            let mass = self.number(m, "Mass")?;
            let moments = self.vec3(self.req(m, "MomentOfInertias")?)?;
            let density = self.number(m, "Density")?;
            extra.insert_number("Density", density);
            // Inertia in part axes: R diag(moments) R^T.
            let r = quaternion_to_matrix(frame.quaternion);
            let mut inertia = [[0.0; 3]; 3];
            for (i, row) in inertia.iter_mut().enumerate() {
                for (j, x) in row.iter_mut().enumerate() {
                    *x = (0..3).map(|k| r[i][k] * moments[k] * r[j][k]).sum();
                }
            }
            let physical = mass > 0.0 && crate::validate::check_inertia(&inertia).is_ok();
            if physical {
                part.mass = Some(Box::new(Mass {
                    mass: Scalar::Number(mass),
                    center_of_mass: frame.position.map(Scalar::Number),
                    inertia: inertia.map(|row| row.map(Scalar::Number)),
                }));
            } else {
                // Massless or degenerate parts (common in kinematic exports) keep their
                // numbers here; dynamics will refuse them with this reason.
                extra.insert_block("PrincipalMassMarker", self.block_lines(m));
            }
        }
        part.extra = extra.into_extra();
        Ok(part)
    }

    /// `/Assembly/Part/Marker` or `/Assembly/Marker`.
    pub(super) fn marker_path(&self, n: usize, assembly: &Assembly) -> Result<MarkerPath> {
        let path = self.value(n)?;
        let err = |msg: String| ModelError::at_line(self.line(n) + 1, msg);
        let trimmed = path
            .strip_prefix('/')
            .ok_or_else(|| err(format!("marker path '{path}' does not start with '/'")))?;
        // Split at '/' (ASCII, so at character boundaries) by a look at each byte: the
        // paths are short, and the library's pattern search set up for each piece cost
        // more than the search.
        let cut = |s: &'a str| {
            let at = s.bytes().position(|b| b == b'/')?;
            Some((s.get(..at)?, s.get(at + 1..)?))
        };
        let pieces = cut(trimmed).map(|(first, rest)| (first, rest, cut(rest)));
        let (part_id, marker) = match pieces {
            Some((asm, marker, None)) => (asm, marker),
            Some((_, _, Some((part, marker)))) if cut(marker).is_none() => (part, marker),
            _ => {
                return Err(err(format!(
                    "marker path '{path}' is not /Assembly/Part/Marker or /Assembly/Marker"
                )))
            }
        };
        let part = assembly
            .part_by_id(part_id)
            .ok_or_else(|| err(format!("marker path '{path}': no part '{part_id}'")))?;
        if assembly
            .part(part)
            .is_some_and(|p| p.marker(marker).is_none())
        {
            return Err(err(format!(
                "marker path '{path}': part '{part_id}' has no marker '{marker}'"
            )));
        }
        Ok(MarkerPath {
            part,
            name: marker.to_string(),
        })
    }

    /// The joint an item acts on: named by `MotionJoint`, or, when that is empty, the
    /// joint between the item's `MarkerI` and `MarkerJ` (in either order).
    pub(super) fn acted_joint(&self, item: usize, assembly: &Assembly) -> Result<crate::JointKey> {
        let n = self.req(item, "MotionJoint")?;
        let path = self.value(n)?;
        if !path.is_empty() {
            let name = path.rsplit('/').next().unwrap_or(path);
            return assembly.joint_by_id(name).ok_or_else(|| {
                ModelError::at_line(self.line(n) + 1, format!("no joint '{path}'"))
            });
        }
        let (Some(mi), Some(mj)) = (self.child(item, "MarkerI"), self.child(item, "MarkerJ"))
        else {
            return Err(ModelError::at_line(
                self.line(n),
                "no 'MotionJoint' and no markers to find the joint by",
            ));
        };
        let (a, b) = (
            self.marker_path(mi, assembly)?,
            self.marker_path(mj, assembly)?,
        );
        let same = |r: &MarkerRef, m: &MarkerPath| {
            r.part == m.part && r.marker == MarkerSpec::Named(m.name.clone())
        };
        assembly
            .joints()
            .find(|(_, j)| (same(&j.i, &a) && same(&j.j, &b)) || (same(&j.i, &b) && same(&j.j, &a)))
            .map(|(k, _)| k)
            .ok_or_else(|| {
                ModelError::at_line(self.line(item), "no joint joins its MarkerI and MarkerJ")
            })
    }

    pub(super) fn joint(&self, j: usize, assembly: &Assembly) -> Result<Joint> {
        let kind = self.key(j);
        let (joint_type, fields): (JointType, &[(&str, Option<Field>)]) = match kind {
            "RevoluteJoint" => (JointType::Revolute, &[]),
            "CylindricalJoint" => (JointType::Cylindrical, &[]),
            "TranslationalJoint" => (JointType::Slider, &[]),
            "FixedJoint" => (JointType::Fixed, &[]),
            "SphericalJoint" => (JointType::Ball, &[]),
            "PlanarJoint" => (JointType::Planar, &[("offset", Some(Field::Offset))]),
            "UniversalJoint" => (JointType::Universal, &[]),
            "PointInPlaneJoint" => (JointType::PointInPlane, &[("offset", Some(Field::Offset))]),
            "PointInLineJoint" => (JointType::PointOnLine, &[]),
            "LineInPlaneJoint" => (JointType::LineInPlane, &[("offset", Some(Field::Offset))]),
            "ParallelAxesJoint" | "ParallelJoint" => (JointType::Parallel, &[]),
            "PerpendicularJoint" => (JointType::Perpendicular, &[]),
            "AngleJoint" => (JointType::Angle, &[("theIzJz", Some(Field::Angle))]),
            "RackPinionJoint" => (
                JointType::RackPinion,
                &[("pitchRadius", Some(Field::Radius)), ("offset", None)],
            ),
            "ScrewJoint" => (
                JointType::ScrewCoupling,
                &[("pitch", Some(Field::Pitch)), ("offset", None)],
            ),
            "GearJoint" => (
                JointType::Gear,
                &[
                    ("radiusI", Some(Field::RadiusI)),
                    ("radiusJ", Some(Field::RadiusJ)),
                    ("offset", None),
                ],
            ),
            "ConstantVelocityJoint" => (JointType::ConstantVelocity, &[]),
            "RevRevJoint" => (
                JointType::CoplanarParallelAtDistance,
                &[("distanceIJ", Some(Field::Distance))],
            ),
            "RevCylJoint" => (
                JointType::ParallelAtDistance,
                &[("distanceIJ", Some(Field::Distance))],
            ),
            "CylSphJoint" => (
                JointType::PointLineDistance,
                &[("distanceIJ", Some(Field::Distance))],
            ),
            "SphSphJoint" => (
                JointType::Distance,
                &[("distanceIJ", Some(Field::Distance))],
            ),
            "NoRotationJoint" => (JointType::NoRotation, &[]),
            "CurveCurveContact" => (JointType::CurveContact, &[("coeffRestitution", None)]),
            other => {
                return Err(ModelError::at_line(
                    self.line(j),
                    format!("'{other}' is not a joint kind Tenon reads yet"),
                ))
            }
        };
        let mut known = vec!["Name", "MarkerI", "MarkerJ"];
        known.extend(fields.iter().map(|(k, _)| *k));
        self.only(j, &known)?;
        let name = self.value_of(j, "Name")?;
        // Unnamed joints (OndselSolver allows them) get an id that says where they are.
        let id = if name.is_empty() {
            format!("{kind}@line{}", self.line(j))
        } else {
            name.to_string()
        };
        let i = self.marker_path(self.req(j, "MarkerI")?, assembly)?;
        let jm = self.marker_path(self.req(j, "MarkerJ")?, assembly)?;
        let part_name = |k: PartKey| assembly.part(k).map(|p| p.id.clone()).unwrap_or_default();
        // The curve markers' paths, named only for a curve contact.
        let paths = (joint_type == JointType::CurveContact).then(|| {
            (
                (part_name(i.part), i.name.clone()),
                (part_name(jm.part), jm.name.clone()),
            )
        });
        let mut joint = Joint {
            id,
            joint_type,
            i: MarkerRef {
                part: i.part,
                marker: MarkerSpec::Named(i.name),
            },
            j: MarkerRef {
                part: jm.part,
                marker: MarkerSpec::Named(jm.name),
            },
            suppressed: false,
            fields: Vec::new(),
            profile: None,
            profile_i: None,
            limits: Limits::default(),
            rate: Default::default(),
            extra: None,
            residuals: Vec::new(),
            compliance: None,
        };
        let mut extra = ExtraMap::new();
        if let Some((i_path, j_path)) = &paths {
            let curves = self.curves.borrow();
            for (side, key, path) in [("i", "MarkerI", i_path), ("j", "MarkerJ", j_path)] {
                let curve = curves.get(path).ok_or_else(|| {
                    let item = self.child(j, key).unwrap_or(j);
                    ModelError::at_line(
                        self.line(item) + 1,
                        format!(
                            "'{}' of part '{}' is not a curve marker (a curve contact \
                             joins two curves)",
                            path.1, path.0
                        ),
                    )
                })?;
                if side == "i" {
                    joint.profile_i = Some(curve.profile.clone());
                } else {
                    joint.profile = Some(curve.profile.clone());
                }
                extra.insert(format!("curve_{side}"), curve.record.clone());
            }
        }
        for &(key, field) in fields {
            let Some(item) = self.child(j, key) else {
                if field.is_some_and(|f| joint_type.field_use(f).is_some_and(|u| u.required)) {
                    return Err(ModelError::at_line(
                        self.line(j),
                        format!("'{kind}' has no '{key}'"),
                    ));
                }
                continue;
            };
            let text = self.value(item)?;
            let value = match parse_number(text) {
                Some(x) => {
                    if let Some(usage) = field.and_then(|f| joint_type.field_use(f)) {
                        usage.rule.check(x, AngleUnit::Rad).map_err(|m| {
                            ModelError::at_line(self.line(item) + 1, format!("'{key}' {m}"))
                        })?;
                    }
                    Scalar::Number(x)
                }
                None => Scalar::Expr(self.formula(item, key, text)?),
            };
            match field {
                Some(f) => joint.fields.push((f, value)),
                None => {
                    extra.insert(key, json!(text));
                }
            }
        }
        joint.fields.sort_by_key(|(f, _)| *f);
        joint.extra = extra.into_extra();
        Ok(joint)
    }

    /// `InLineForceTorque` whose tension is `F0 + k*(rIJ(self) - L0) + c*vrIJ(self)` with
    /// `F0 = 0` and no twist: a spring-damper.
    pub(super) fn spring(&self, f: usize, assembly: &Assembly) -> Result<Spring> {
        if self.key(f) != "InLineForceTorque" {
            return Err(ModelError::at_line(
                self.line(f),
                format!("'{}' is not a force kind Tenon reads yet", self.key(f)),
            ));
        }
        self.only(f, &["Name", "MarkerI", "MarkerJ", "tension", "twist"])?;
        let id = self.value_of(f, "Name")?.to_string();
        let i = self.marker_path(self.req(f, "MarkerI")?, assembly)?;
        let j = self.marker_path(self.req(f, "MarkerJ")?, assembly)?;
        let tension = translate_formula(self.value_of(f, "tension")?);
        let twist = self.value_of(f, "twist")?;
        if parse_number(twist) != Some(0.0) {
            return Err(ModelError::at_line(
                self.line(f),
                format!("a twisting torque '{twist}' is not supported yet"),
            ));
        }
        let (k, rest, c) = spring_coefficients(&tension).ok_or_else(|| {
            ModelError::at_line(
                self.line(f),
                format!("tension '{tension}' is not of the spring-damper form F0 + k*(rIJ(self) - L0) + c*vrIJ(self) with F0 = 0"),
            )
        })?;
        Ok(Spring {
            id,
            i: MarkerRef {
                part: i.part,
                marker: MarkerSpec::Named(i.name),
            },
            j: MarkerRef {
                part: j.part,
                marker: MarkerSpec::Named(j.name),
            },
            stiffness: Scalar::Number(k),
            rest_length: Scalar::Number(rest),
            damping: Scalar::Number(c),
        })
    }
}

/// Stiffness, rest length and damping of `(F0 + k*(rIJ(self) + (-L0)) + c*vrIJ(self))`,
/// found by evaluating the formula at three points (it is affine in `rIJ` and `vrIJ`).
pub(super) fn spring_coefficients(tension: &str) -> Option<(f64, f64, f64)> {
    let parsed =
        tenon_expr::parse(&tension.replace("vrIJ(self)", "v").replace("rIJ(self)", "r")).ok()?;
    let eval = |r: f64, v: f64| -> Option<f64> {
        parsed
            .evaluate(AngleUnit::Rad.parse_options(), &mut |name| match name {
                "r" => Some(r),
                "v" => Some(v),
                _ => None,
            })
            .ok()
    };
    let f00 = eval(0.0, 0.0)?;
    let k = eval(1.0, 0.0)? - f00;
    let c = eval(0.0, 1.0)? - f00;
    // Affine check: a fourth point must agree.
    let f = eval(2.0, 3.0)?;
    if (f - (f00 + 2.0 * k + 3.0 * c)).abs() > 1e-9 * (1.0 + f.abs()) || k <= 0.0 {
        return None;
    }
    let rest = -f00 / k;
    // F0 is the force at the rest length: must be zero for a plain spring.
    (rest >= 0.0 && c >= 0.0).then_some((k, rest, c))
}

pub(super) fn pose_placement(p: &Pose) -> Placement {
    Placement {
        position: p.position.map(Scalar::Number),
        rotation: if p.quaternion == [1.0, 0.0, 0.0, 0.0] {
            Rotation::Identity
        } else {
            Rotation::Quaternion(p.quaternion.map(Scalar::Number))
        },
    }
}
