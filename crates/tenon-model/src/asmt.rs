//! Reader for OndselSolver / FreeCAD `.asmt` files (tab-indented text).
//!
//! The text is first read into a tree of lines (a line's children are the following
//! lines indented one tab deeper), then mapped onto the assembly model. Every item is
//! either mapped, kept verbatim under an `extra` object (display geometry, animation
//! settings), or refused with an error naming its line; nothing is dropped unseen.
//! `docs/asmt.md` lists the mapping.
//!
//! Units: the files carry bare numbers; they load as metres, radians, kilograms and
//! seconds (OndselSolver is unit-agnostic, and its motion formulas are in radians).

use std::cell::RefCell;

use rustc_hash::FxHashSet;
use serde_json::{json, Value};

use crate::assembly::{
    Assembly, Coordinate, Extra, Forces, Mass, Motion, Part, PartKey, Simulation, Spring,
};
use crate::error::ModelError;
use crate::joint::{Field, Joint, JointType, Limits, MarkerRef, MarkerSpec, Range};
use crate::placement::{matrix_to_quaternion, quaternion_to_matrix, Placement, Pose, Rotation};
use crate::scalar::{AngleUnit, LengthUnit, MassUnit, Scalar, TimeUnit, Units};

/// How far an `.asmt` rotation matrix may be from orthonormal (exporters round).
pub const ASMT_MATRIX_TOLERANCE: f64 = 1e-4;

/// Reads an `.asmt` file's text. `source_name` (a file name) is put in errors.
pub fn read_asmt(
    text: &str,
    source_name: Option<&str>,
) -> std::result::Result<Assembly, ModelError> {
    let tree = Tree::parse(text).map_err(|e| e.in_source(source_name))?;
    let mut reader = Reader {
        tree: &tree,
        contact_markers: FxHashSet::default(),
        curves: RefCell::default(),
    };
    reader.contact_markers = reader.contact_marker_names();
    reader.assembly().map_err(|e| e.in_source(source_name))
}

type Result<T> = std::result::Result<T, ModelError>;

mod curves;

/// One line of the file in the tree.
#[derive(Debug)]
struct Node<'a> {
    line: usize,
    text: &'a str,
    children: Vec<usize>,
}

/// The indentation tree of the part of the file before `TimeSeries`.
#[derive(Debug)]
struct Tree<'a> {
    nodes: Vec<Node<'a>>,
}

const ROOT: usize = 0;

impl<'a> Tree<'a> {
    fn parse(text: &'a str) -> Result<Self> {
        let mut nodes = vec![Node {
            line: 0,
            text: "",
            children: Vec::new(),
        }];
        // (node, depth) of the open ancestors; the root has depth -1.
        let mut stack: Vec<(usize, isize)> = vec![(ROOT, -1)];
        for (k, raw) in text.split('\n').enumerate() {
            let line = k + 1;
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            let content = raw.trim_start_matches('\t');
            let depth = (raw.len() - content.len()) as isize;
            // A line of tabs only is an empty value (e.g. a joint with no name); a
            // line with nothing at all is skipped.
            if content.trim().is_empty() && (depth == 0 || !content.is_empty()) {
                continue;
            }
            if depth == 0 && content.starts_with("TimeSeries") {
                break;
            }
            if content.starts_with(' ') {
                return Err(ModelError::at_line(line, "indentation must be tabs"));
            }
            while stack.last().is_some_and(|&(_, d)| d >= depth) {
                stack.pop();
            }
            let Some(&(parent, parent_depth)) = stack.last() else {
                return Err(ModelError::at_line(line, "indentation out of place"));
            };
            if depth != parent_depth + 1 {
                return Err(ModelError::at_line(
                    line,
                    format!(
                        "indented {} tabs deeper than the line it belongs to",
                        depth - parent_depth
                    ),
                ));
            }
            let id = nodes.len();
            nodes.push(Node {
                line,
                text: content,
                children: Vec::new(),
            });
            nodes[parent].children.push(id);
            stack.push((id, depth));
        }
        Ok(Tree { nodes })
    }

    fn node(&self, n: usize) -> &Node<'a> {
        &self.nodes[n]
    }
}

/// Number syntax of the files: decimal, possibly with an OndselSolver `d` marker
/// (`2.0d`, `1.0d-3`).
fn parse_number(text: &str) -> Option<f64> {
    let t = text.trim();
    let t = t.strip_suffix('d').unwrap_or(t);
    let t = t.replace('d', "e");
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// An OndselSolver formula in Tenon's expression syntax: `time` becomes `t` and the
/// double-literal marker `d` goes (`2.0d*pi*time` -> `2.0*pi*t`).
fn translate_formula(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut k = 0;
    while k < chars.len() {
        let c = chars[k];
        if c.is_ascii_digit() || (c == '.' && chars.get(k + 1).is_some_and(char::is_ascii_digit)) {
            let start = k;
            while k < chars.len() && (chars[k].is_ascii_digit() || chars[k] == '.') {
                k += 1;
            }
            out.extend(&chars[start..k]);
            if matches!(chars.get(k), Some('d' | 'e' | 'E')) {
                let exp_digits = match chars.get(k + 1) {
                    Some('+' | '-') => chars.get(k + 2).is_some_and(char::is_ascii_digit),
                    Some(d) => d.is_ascii_digit(),
                    None => false,
                };
                if exp_digits {
                    out.push('e');
                    k += 1;
                    if matches!(chars[k], '+' | '-') {
                        out.push(chars[k]);
                        k += 1;
                    }
                } else if chars[k] == 'd' {
                    k += 1; // a bare double marker
                }
            }
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = k;
            while k < chars.len() && (chars[k].is_alphanumeric() || chars[k] == '_') {
                k += 1;
            }
            let word: String = chars[start..k].iter().collect();
            out.push_str(if word == "time" { "t" } else { &word });
            continue;
        }
        out.push(c);
        k += 1;
    }
    out
}

struct Reader<'t, 'a> {
    tree: &'t Tree<'a>,
    /// `(part, marker)` names that curve contacts refer to.
    contact_markers: FxHashSet<(String, String)>,
    /// Curves of those markers, filled as parts are read.
    curves: RefCell<curves::Curves>,
}

/// A marker path resolved: the part and the marker's name.
struct MarkerPath {
    part: PartKey,
    name: String,
}

impl<'a> Reader<'_, 'a> {
    fn text(&self, n: usize) -> &'a str {
        self.tree.node(n).text
    }

    fn line(&self, n: usize) -> usize {
        self.tree.node(n).line
    }

    fn kids(&self, n: usize) -> &[usize] {
        &self.tree.node(n).children
    }

    fn child(&self, n: usize, key: &str) -> Option<usize> {
        self.kids(n)
            .iter()
            .copied()
            .find(|&c| self.text(c).trim() == key)
    }

    fn req(&self, n: usize, key: &str) -> Result<usize> {
        self.child(n, key).ok_or_else(|| {
            ModelError::at_line(
                self.line(n),
                format!("'{}' has no '{key}'", self.text(n).trim()),
            )
        })
    }

    /// Refuses children other than `known`.
    fn only(&self, n: usize, known: &[&str]) -> Result<()> {
        for &c in self.kids(n) {
            let key = self.text(c).trim();
            if !known.contains(&key) {
                return Err(ModelError::at_line(
                    self.line(c),
                    format!("'{key}' in '{}' is not understood", self.text(n).trim()),
                ));
            }
        }
        Ok(())
    }

    /// The one value line under item `n`.
    fn value(&self, n: usize) -> Result<&'a str> {
        match self.kids(n) {
            [v] => Ok(self.text(*v).trim()),
            [] => Err(ModelError::at_line(
                self.line(n),
                format!("'{}' has no value", self.text(n).trim()),
            )),
            [_, extra, ..] => Err(ModelError::at_line(
                self.line(*extra),
                format!("'{}' has more than one value line", self.text(n).trim()),
            )),
        }
    }

    fn value_of(&self, n: usize, key: &str) -> Result<&'a str> {
        self.value(self.req(n, key)?)
    }

    fn numbers(&self, line_node: usize) -> Result<Vec<f64>> {
        self.text(line_node)
            .split(['\t', ' '])
            .filter(|s| !s.is_empty())
            .map(|s| {
                parse_number(s).ok_or_else(|| {
                    ModelError::at_line(self.line(line_node), format!("'{s}' is not a number"))
                })
            })
            .collect()
    }

    fn number(&self, n: usize, key: &str) -> Result<f64> {
        let item = self.req(n, key)?;
        let text = self.value(item)?;
        parse_number(text).ok_or_else(|| {
            ModelError::at_line(self.line(item) + 1, format!("'{text}' is not a number"))
        })
    }

    fn vec3(&self, n: usize) -> Result<[f64; 3]> {
        let [line] = self.kids(n) else {
            return Err(ModelError::at_line(
                self.line(n),
                format!("'{}' needs one line of 3 numbers", self.text(n).trim()),
            ));
        };
        match self.numbers(*line)?.as_slice() {
            [a, b, c] => Ok([*a, *b, *c]),
            other => Err(ModelError::at_line(
                self.line(*line),
                format!("expected 3 numbers, found {}", other.len()),
            )),
        }
    }

    fn pose(&self, n: usize) -> Result<Pose> {
        let position = self.vec3(self.req(n, "Position3D")?)?;
        let rm = self.req(n, "RotationMatrix")?;
        let rows = self.kids(rm);
        if rows.len() != 3 {
            return Err(ModelError::at_line(
                self.line(rm),
                format!("a rotation matrix has 3 rows, found {}", rows.len()),
            ));
        }
        let mut m = [[0.0; 3]; 3];
        for (r, &row) in rows.iter().enumerate() {
            match self.numbers(row)?.as_slice() {
                [a, b, c] => m[r] = [*a, *b, *c],
                other => {
                    return Err(ModelError::at_line(
                        self.line(row),
                        format!("expected 3 numbers, found {}", other.len()),
                    ))
                }
            }
        }
        // Exported matrices carry rounding (seen: 1e-6 in cirpendu.asmt); they must be
        // rotations within ASMT_MATRIX_TOLERANCE and are made exact through the quaternion.
        crate::placement::check_rotation_matrix_within(&m, ASMT_MATRIX_TOLERANCE)
            .map_err(|e| ModelError::at_line(self.line(rm), e))?;
        Ok(Pose {
            position,
            quaternion: matrix_to_quaternion(m),
        })
    }

    /// Every line below `n`, indented relative to it: kept verbatim in `extra`.
    fn raw_block(&self, n: usize) -> Value {
        let mut out = Vec::new();
        let mut stack: Vec<(usize, usize)> = self.kids(n).iter().rev().map(|&c| (c, 0)).collect();
        while let Some((c, depth)) = stack.pop() {
            out.push(Value::String(format!(
                "{}{}",
                "\t".repeat(depth),
                self.text(c)
            )));
            stack.extend(self.kids(c).iter().rev().map(|&g| (g, depth + 1)));
        }
        Value::Array(out)
    }

    /// Markers of a `RefPoints` item, each placed in the owner's frame.
    fn markers(&self, ref_points: usize) -> Result<Vec<(String, Placement)>> {
        let mut markers = Vec::new();
        for &rp in self.kids(ref_points) {
            if self.text(rp).trim() != "RefPoint" {
                return Err(ModelError::at_line(
                    self.line(rp),
                    format!(
                        "'{}' in 'RefPoints' is not understood",
                        self.text(rp).trim()
                    ),
                ));
            }
            self.only(rp, &["Position3D", "RotationMatrix", "Markers"])?;
            let point = self.pose(rp)?;
            if let Some(ms) = self.child(rp, "Markers") {
                for &m in self.kids(ms) {
                    if self.text(m).trim() != "Marker" {
                        return Err(ModelError::at_line(
                            self.line(m),
                            format!("'{}' in 'Markers' is not understood", self.text(m).trim()),
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

    fn assembly(&self) -> Result<Assembly> {
        let top = self.kids(ROOT);
        let Some(&root) = top.iter().find(|&&n| self.text(n).trim() == "Assembly") else {
            return Err(ModelError::at_line(
                1,
                "no 'Assembly' item at the top level (not an .asmt file?)",
            ));
        };
        for &n in top {
            // The first line is a banner ("OndselSolver", "freeCAD: ..."); nothing else may
            // stand at the top level.
            if n != root && n != top[0] {
                return Err(ModelError::at_line(
                    self.line(n),
                    format!(
                        "'{}' at the top level is not understood",
                        self.text(n).trim()
                    ),
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
        let units = Units {
            length: LengthUnit::M,
            angle: AngleUnit::Rad,
            mass: MassUnit::Kg,
            time: TimeUnit::S,
        };
        let name = self.value_of(root, "Name")?.to_string();
        let mut assembly = Assembly::new(name.clone(), units);
        let mut extra = serde_json::Map::new();
        if let Some(notes) = self.child(root, "Notes") {
            extra.insert("Notes".into(), self.raw_block(notes));
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
        for &p in self.kids(parts) {
            if self.text(p).trim() != "Part" {
                return Err(ModelError::at_line(
                    self.line(p),
                    format!("'{}' in 'Parts' is not understood", self.text(p).trim()),
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
            for &j in self.kids(joints) {
                let joint = self.joint(j, &assembly)?;
                if joint.i.part == joint.j.part {
                    // Both markers on one part: nothing to move or hold. Recorded, not
                    // made a joint (Tenon refuses joints from a part to itself).
                    let list = extra
                        .entry("joints_within_one_part")
                        .or_insert_with(|| json!([]));
                    if let Value::Array(items) = list {
                        items.push(json!({ "name": joint.id, "kind": self.text(j).trim(), "line": self.line(j) }));
                    }
                    continue;
                }
                assembly
                    .add_joint(joint)
                    .map_err(|e| ModelError::at_line(self.line(j), e.message()))?;
            }
        }
        if let Some(limits) = self.child(sets, "Limits") {
            for &l in self.kids(limits) {
                self.limit(l, &mut assembly)?;
            }
        }
        if let Some(motions) = self.child(sets, "Motions") {
            for &m in self.kids(motions) {
                self.motion(m, &mut assembly, &mut extra)?;
            }
        }

        let mut forces = Forces::default();
        if let Some(g) = self.child(root, "ConstantGravity") {
            forces.gravity = Some(self.vec3(g)?.map(Scalar::Number));
        }
        if let Some(ft) = self.child(root, "ForceTorques") {
            for &f in self.kids(ft) {
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
                        end: Scalar::Number(tend),
                        step: Scalar::Number(hmax.min(hout)),
                        output_step: Some(Scalar::Number(hout)),
                    }))
                    .map_err(|e| ModelError::at_line(self.line(sim), e.message()))?;
            }
            if tstart != 0.0 {
                extra.insert("tstart".into(), json!(tstart));
            }
            extra.insert("SimulationParameters".into(), self.raw_block(sim));
        }
        if let Some(anim) = self.child(root, "AnimationParameters") {
            extra.insert("AnimationParameters".into(), self.raw_block(anim));
        }
        assembly.set_extra(Some(Extra(json!({ "asmt": Value::Object(extra) }))));
        Ok(assembly)
    }

    fn require_empty(&self, n: usize, key: &str) -> Result<()> {
        match self.child(n, key) {
            Some(item) if !self.kids(item).is_empty() => Err(ModelError::at_line(
                self.line(self.kids(item)[0]),
                format!(
                    "'{}' under '{key}' is not supported yet",
                    self.text(self.kids(item)[0]).trim()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Initial velocities: kept under `extra` when not zero.
    fn motion_state(
        &self,
        n: usize,
        extra: &mut serde_json::Map<String, Value>,
        key: &str,
    ) -> Result<()> {
        let mut state = serde_json::Map::new();
        for item in ["Velocity3D", "Omega3D"] {
            if let Some(v) = self.child(n, item) {
                let v = self.vec3(v)?;
                if v != [0.0; 3] {
                    state.insert(item.into(), json!(v));
                }
            }
        }
        if !state.is_empty() {
            extra.insert(key.into(), Value::Object(state));
        }
        Ok(())
    }

    fn part(&self, p: usize) -> Result<Part> {
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
        let mut extra = serde_json::Map::new();
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
                extra.insert("RefCurves".into(), Value::Array(unused));
            }
        }
        self.require_empty(p, "RefSurfaces")?;
        self.motion_state(p, &mut extra, "initial_velocity")?;
        if let Some(f) = self.child(p, "FeatureOrder") {
            if !self.kids(f).is_empty() {
                extra.insert("FeatureOrder".into(), self.raw_block(f));
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
            extra.insert("Density".into(), json!(density));
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
                part.mass = Some(Mass {
                    mass: Scalar::Number(mass),
                    center_of_mass: frame.position.map(Scalar::Number),
                    inertia: inertia.map(|row| row.map(Scalar::Number)),
                });
            } else {
                // Massless or degenerate parts (common in kinematic exports) keep their
                // numbers here; dynamics will refuse them with this reason.
                extra.insert("PrincipalMassMarker".into(), self.raw_block(m));
            }
        }
        if !extra.is_empty() {
            part.extra = Some(Extra(json!({ "asmt": Value::Object(extra) })));
        }
        Ok(part)
    }

    /// `/Assembly/Part/Marker` or `/Assembly/Marker`.
    fn marker_path(&self, n: usize, assembly: &Assembly) -> Result<MarkerPath> {
        let path = self.value(n)?;
        let err = |msg: String| ModelError::at_line(self.line(n) + 1, msg);
        let trimmed = path
            .strip_prefix('/')
            .ok_or_else(|| err(format!("marker path '{path}' does not start with '/'")))?;
        let parts: Vec<&str> = trimmed.split('/').collect();
        let (part_id, marker) = match parts.as_slice() {
            [asm, marker] => (*asm, *marker),
            [_, part, marker] => (*part, *marker),
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
    fn acted_joint(&self, item: usize, assembly: &Assembly) -> Result<crate::JointKey> {
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

    fn joint(&self, j: usize, assembly: &Assembly) -> Result<Joint> {
        let kind = self.text(j).trim();
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
        let i_path = (part_name(i.part), i.name.clone());
        let j_path = (part_name(jm.part), jm.name.clone());
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
            extra: None,
        };
        let mut extra = serde_json::Map::new();
        if joint_type == JointType::CurveContact {
            let curves = self.curves.borrow();
            for (side, key, path) in [("i", "MarkerI", &i_path), ("j", "MarkerJ", &j_path)] {
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
                    extra.insert(key.into(), json!(text));
                }
            }
        }
        joint.fields.sort_by_key(|(f, _)| *f);
        if !extra.is_empty() {
            joint.extra = Some(Extra(json!({ "asmt": Value::Object(extra) })));
        }
        Ok(joint)
    }

    fn limit(&self, l: usize, assembly: &mut Assembly) -> Result<()> {
        let field = match self.text(l).trim() {
            "RotationLimit" => Field::Angle,
            "TranslationLimit" => Field::Distance,
            other => {
                return Err(ModelError::at_line(
                    self.line(l),
                    format!("'{other}' in 'Limits' is not understood"),
                ))
            }
        };
        self.only(
            l,
            &[
                "Name",
                "MarkerI",
                "MarkerJ",
                "MotionJoint",
                "Limit",
                "Type",
                "Tol",
            ],
        )?;
        let joint_key = self.acted_joint(l, assembly)?;
        let limit_text = self.value_of(l, "Limit")?;
        let limit = match parse_number(limit_text) {
            Some(x) => Scalar::Number(x),
            None => Scalar::Expr(self.formula(l, "Limit", limit_text)?),
        };
        let kind = self.value_of(l, "Type")?;
        let Some(joint) = assembly.joint(joint_key).cloned() else {
            return Ok(());
        };
        if !joint.joint_type.has_free(field) {
            return Err(ModelError::at_line(
                self.line(l),
                format!(
                    "a {} joint has no free {} to limit",
                    joint.joint_type.name(),
                    field.key()
                ),
            ));
        }
        let mut limits = joint.limits.clone();
        let slot = match field {
            Field::Angle => &mut limits.angle,
            _ => &mut limits.distance,
        };
        let range = slot.get_or_insert_with(Range::default);
        // The limit bounds J's coordinate from I; the spec's is i's from j: the bound
        // changes sign and side.
        let limit = match limit {
            Scalar::Number(x) => Scalar::Number(-x),
            Scalar::Expr(e) => Scalar::Expr(format!("-({e})")),
        };
        match kind {
            "=<" | "<=" => range.min = Some(limit),
            "=>" | ">=" => range.max = Some(limit),
            other => {
                return Err(ModelError::at_line(
                    self.line(l),
                    format!("limit type '{other}' is not =< or =>"),
                ))
            }
        }
        assembly
            .set_joint_limits(joint_key, limits)
            .map_err(|e| ModelError::at_line(self.line(l), e.message()))
    }

    fn motion(
        &self,
        m: usize,
        assembly: &mut Assembly,
        extra: &mut serde_json::Map<String, Value>,
    ) -> Result<()> {
        let kind = self.text(m).trim();
        let (coordinate, key) = match kind {
            "RotationalMotion" => (Coordinate::Angle, "RotationZ"),
            "TranslationalMotion" => (Coordinate::Distance, "TranslationZ"),
            "AllowRotation" => {
                // OndselSolver pins the joint's angle during its position initial
                // conditions and releases it afterwards; a least-change solve keeps it
                // anyway, so this adds no equation. Kept under extra.
                self.only(m, &["Name", "MarkerI", "MarkerJ", "MotionJoint"])?;
                let joint = self.value_of(m, "MotionJoint")?;
                let list = extra.entry("AllowRotation").or_insert_with(|| json!([]));
                if let Value::Array(items) = list {
                    items.push(json!(joint));
                }
                return Ok(());
            }
            "GeneralMotion" => return self.general_motion(m, assembly),
            other => {
                return Err(ModelError::at_line(
                    self.line(m),
                    format!("'{other}' is not a motion kind Tenon reads yet"),
                ))
            }
        };
        self.only(m, &["Name", "MarkerI", "MarkerJ", "MotionJoint", key])?;
        let joint = self.acted_joint(m, assembly)?;
        let formula = self.value_of(m, key)?;
        // OndselSolver's RotationZ / TranslationZ move marker J relative to marker I; the
        // spec's coordinates are marker i's from marker j: the value changes sign.
        let value = match parse_number(formula) {
            Some(x) => Scalar::Number(-x),
            None => Scalar::Expr(format!("-({})", self.formula(m, key, formula)?)),
        };
        assembly
            .add_motion(Motion {
                joint,
                coordinate,
                value,
            })
            .map_err(|e| ModelError::at_line(self.line(m), e.message()))
    }

    /// An OndselSolver formula in Tenon's syntax, checked to parse and to use no names but
    /// `t` and `pi` (the files have no parameters); `item` is the line named on error.
    fn formula(&self, item: usize, key: &str, text: &str) -> Result<String> {
        let translated = translate_formula(text);
        crate::ParameterValues::default()
            .eval(&Scalar::Expr(translated.clone()), Some(0.0))
            .map_err(|e| {
                ModelError::at_line(
                    self.line(item),
                    format!("'{key}' formula '{text}': {}", e.message),
                )
            })?;
        Ok(translated)
    }

    /// `GeneralMotion`: marker J's pose relative to marker I prescribed in time (`rIJI`,
    /// J's origin in I's frame; `angIJJ`, rotations about the axes of `RotationOrder`,
    /// applied in that order to I's axes). Becomes a fixed joint from marker J to a frame
    /// that moves on marker I's part: `I * T(t)`.
    fn general_motion(&self, m: usize, assembly: &mut Assembly) -> Result<()> {
        let keys = ["rIJI1", "rIJI2", "rIJI3", "angIJJ1", "angIJJ2", "angIJJ3"];
        let mut known = vec!["Name", "MarkerI", "MarkerJ", "RotationOrder"];
        known.extend(keys);
        self.only(m, &known)?;
        let name = self.value_of(m, "Name")?;
        let mi = self.marker_path(self.req(m, "MarkerI")?, assembly)?;
        let mj = self.marker_path(self.req(m, "MarkerJ")?, assembly)?;
        let mut f: Vec<String> = Vec::with_capacity(6);
        for key in keys {
            let text = self.value_of(m, key)?;
            f.push(self.formula(m, key, text)?);
        }
        let order_item = self.req(m, "RotationOrder")?;
        let order: Vec<usize> = self
            .numbers(self.kids(order_item).first().copied().unwrap_or(order_item))?
            .iter()
            .map(|&x| x as usize)
            .collect();
        if order.len() != 3 || order.iter().any(|&a| !(1..=3).contains(&a)) {
            return Err(ModelError::at_line(
                self.line(order_item),
                "RotationOrder must name three axes among 1, 2, 3",
            ));
        }
        // Marker I's placement in its part, in numbers.
        let base = assembly
            .part(mi.part)
            .and_then(|p| p.marker(&mi.name))
            .and_then(|pl| {
                pl.evaluate(&crate::ParameterValues::default(), 1.0, None)
                    .ok()
            })
            .ok_or_else(|| ModelError::at_line(self.line(m), "MarkerI has no numeric placement"))?;
        let r = quaternion_to_matrix(base.quaternion);
        let position: Vec<Scalar> = (0..3)
            .map(|k| {
                let terms: Vec<(f64, &str)> = (0..3).map(|c| (r[k][c], f[c].as_str())).collect();
                Scalar::Expr(linear(base.position[k], &terms))
            })
            .collect();
        let mut rotation = r.map(|row| row.map(|x| x.to_string()));
        for (k, &axis) in order.iter().enumerate() {
            rotation = sym_mul(&rotation, &axis_rotation(axis - 1, &f[3 + k]));
        }
        let rotation = tenon_model_rotation(rotation);
        let moving = Placement {
            position: [
                position[0].clone(),
                position[1].clone(),
                position[2].clone(),
            ],
            rotation,
        };
        let id = if assembly.joint_by_id(name).is_some() || name.is_empty() {
            format!("GeneralMotion@line{}", self.line(m))
        } else {
            name.to_string()
        };
        let joint = Joint {
            id,
            joint_type: JointType::Fixed,
            i: MarkerRef {
                part: mj.part,
                marker: MarkerSpec::Named(mj.name),
            },
            j: MarkerRef {
                part: mi.part,
                marker: MarkerSpec::Inline(Box::new(moving)),
            },
            suppressed: false,
            fields: Vec::new(),
            profile: None,
            profile_i: None,
            limits: Limits::default(),
            extra: Some(Extra(
                json!({ "asmt": { "GeneralMotion": self.raw_block(m) } }),
            )),
        };
        assembly
            .add_joint(joint)
            .map(|_| ())
            .map_err(|e| ModelError::at_line(self.line(m), e.message()))
    }

    /// `InLineForceTorque` whose tension is `F0 + k*(rIJ(self) - L0) + c*vrIJ(self)` with
    /// `F0 = 0` and no twist: a spring-damper.
    fn spring(&self, f: usize, assembly: &Assembly) -> Result<Spring> {
        if self.text(f).trim() != "InLineForceTorque" {
            return Err(ModelError::at_line(
                self.line(f),
                format!(
                    "'{}' is not a force kind Tenon reads yet",
                    self.text(f).trim()
                ),
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
fn spring_coefficients(tension: &str) -> Option<(f64, f64, f64)> {
    let parsed =
        tenon_expr::parse(&tension.replace("vrIJ(self)", "v").replace("rIJ(self)", "r")).ok()?;
    let eval = |r: f64, v: f64| -> Option<f64> {
        let mut g = tenon_expr::ExprGraph::new();
        let e = parsed
            .lower(
                &mut g,
                AngleUnit::Rad.parse_options(),
                &mut |name, g| match name {
                    "r" => Some(g.constant(r)),
                    "v" => Some(g.constant(v)),
                    _ => None,
                },
            )
            .ok()?;
        g.as_const(e)
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

/// `c + sum k * (f)` as expression text, leaving out zero terms.
fn linear(c: f64, terms: &[(f64, &str)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if c != 0.0 {
        parts.push(format!("{c:?}"));
    }
    for &(k, f) in terms {
        if k == 0.0 || f == "0" {
            continue;
        }
        parts.push(if k == 1.0 {
            format!("({f})")
        } else {
            format!("{k:?}*({f})")
        });
    }
    if parts.is_empty() {
        "0".into()
    } else {
        parts.join(" + ")
    }
}

/// Rotation about axis `axis` (0 x, 1 y, 2 z) by the angle expression `a`, as text.
fn axis_rotation(axis: usize, a: &str) -> [[String; 3]; 3] {
    let (c, s, ns) = (
        format!("cos({a})"),
        format!("sin({a})"),
        format!("-sin({a})"),
    );
    let (o, z) = ("1".to_string(), "0".to_string());
    match axis {
        0 => [
            [o, z.clone(), z.clone()],
            [z.clone(), c.clone(), ns],
            [z, s, c],
        ],
        1 => [
            [c.clone(), z.clone(), s],
            [z.clone(), o, z.clone()],
            [ns, z, c],
        ],
        _ => [
            [c.clone(), ns, z.clone()],
            [s, c, z.clone()],
            [z.clone(), z, o],
        ],
    }
}

/// Product of two matrices of expression text (rows), simplifying 0 and 1 factors.
fn sym_mul(a: &[[String; 3]; 3], b: &[[String; 3]; 3]) -> [[String; 3]; 3] {
    let is = |x: &str, v: f64| parse_number(x) == Some(v);
    std::array::from_fn(|i| {
        std::array::from_fn(|j| {
            let terms: Vec<String> = (0..3)
                .filter(|&k| !is(&a[i][k], 0.0) && !is(&b[k][j], 0.0))
                .map(|k| match (is(&a[i][k], 1.0), is(&b[k][j], 1.0)) {
                    (true, true) => "1".to_string(),
                    (true, false) => format!("({})", b[k][j]),
                    (false, true) => format!("({})", a[i][k]),
                    (false, false) => format!("({})*({})", a[i][k], b[k][j]),
                })
                .collect();
            if terms.is_empty() {
                "0".into()
            } else {
                terms.join(" + ")
            }
        })
    })
}

/// A rotation from a text matrix: plain numbers when every entry is one.
fn tenon_model_rotation(m: [[String; 3]; 3]) -> Rotation {
    let numbers: Option<Vec<f64>> = m.iter().flatten().map(|e| parse_number(e)).collect();
    match numbers {
        Some(v) => {
            let q =
                matrix_to_quaternion([[v[0], v[1], v[2]], [v[3], v[4], v[5]], [v[6], v[7], v[8]]]);
            if q == [1.0, 0.0, 0.0, 0.0] {
                Rotation::Identity
            } else {
                Rotation::Quaternion(q.map(Scalar::Number))
            }
        }
        None => Rotation::Matrix(m.map(|row| {
            row.map(|e| match parse_number(&e) {
                Some(x) => Scalar::Number(x),
                None => Scalar::Expr(e),
            })
        })),
    }
}

fn pose_placement(p: &Pose) -> Placement {
    Placement {
        position: p.position.map(Scalar::Number),
        rotation: if p.quaternion == [1.0, 0.0, 0.0, 0.0] {
            Rotation::Identity
        } else {
            Rotation::Quaternion(p.quaternion.map(Scalar::Number))
        },
    }
}

/// The `TimeSeries` block of an `.asmt` file: the poses another solver computed.
#[derive(Debug, Clone, PartialEq)]
pub struct AsmtTimeSeries {
    /// Times of the output frames.
    pub times: Vec<f64>,
    /// Per part (by name): the input pose and one pose per output frame.
    pub parts: Vec<(String, Vec<Pose>)>,
}

/// Reads the `TimeSeries` block, if the file has one: for each part, the pose as loaded
/// (`Input` column) and at each frame, from the `X Y Z` and Bryant angle rows
/// (`R = Rx(a) Ry(b) Rz(c)`).
pub fn read_asmt_time_series(text: &str) -> Result<Option<AsmtTimeSeries>> {
    let mut lines = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .enumerate();
    if !lines.any(|(_, l)| l.starts_with("TimeSeries")) {
        return Ok(None);
    }
    let mut times = Vec::new();
    let mut parts: Vec<(String, Vec<Pose>)> = Vec::new();
    let mut current: Option<PartRows> = None;
    let finish = |current: Option<PartRows>, parts: &mut Vec<(String, Vec<Pose>)>| {
        let Some((name, rows)) = current else { return };
        let row = |key: &str| {
            rows.iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let (x, y, z) = (row("X"), row("Y"), row("Z"));
        let (a, b, c) = (row("Bryantx"), row("Bryanty"), row("Bryantz"));
        let n = [&x, &y, &z, &a, &b, &c]
            .iter()
            .map(|v| v.len())
            .min()
            .unwrap_or(0);
        let poses = (0..n)
            .map(|k| Pose {
                position: [x[k], y[k], z[k]],
                quaternion: bryant_quaternion(a[k], b[k], c[k]),
            })
            .collect();
        parts.push((name, poses));
    };
    for (k, line) in lines {
        let cells: Vec<&str> = line
            .split('\t')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let Some(&first) = cells.first() else {
            continue;
        };
        // "PartSeries /Assembly1/Part1" (one cell) or "PartSeries<tab>/Assembly1/Part1".
        let joined;
        let head = if first.ends_with("Series") && cells.len() == 2 && cells[1].starts_with('/') {
            joined = format!("{first} {}", cells[1]);
            joined.as_str()
        } else {
            first
        };
        if head == "Time" {
            times = cells
                .iter()
                .skip(2)
                .map(|c| {
                    parse_number(c)
                        .ok_or_else(|| ModelError::at_line(k + 1, format!("'{c}' is not a number")))
                })
                .collect::<Result<_>>()?;
        } else if let Some(name) = head.strip_prefix("PartSeries ") {
            finish(current.take(), &mut parts);
            let short = name.rsplit('/').next().unwrap_or(name).to_string();
            current = Some((short, Vec::new()));
        } else if head.ends_with("Series") || head.contains("Series ") {
            finish(current.take(), &mut parts);
        } else if let Some((_, rows)) = current.as_mut() {
            let values = cells
                .iter()
                .skip(1)
                .map(|c| {
                    parse_number(c)
                        .ok_or_else(|| ModelError::at_line(k + 1, format!("'{c}' is not a number")))
                })
                .collect::<Result<Vec<f64>>>()?;
            rows.push((head.to_string(), values));
        }
    }
    finish(current, &mut parts);
    Ok(Some(AsmtTimeSeries { times, parts }))
}

/// A part's name and its named rows of numbers in a `TimeSeries` block.
type PartRows = (String, Vec<(String, Vec<f64>)>);

/// Quaternion of Bryant angles: `R = Rx(a) * Ry(b) * Rz(c)`.
fn bryant_quaternion(a: f64, b: f64, c: f64) -> [f64; 4] {
    let axis = |k: usize, angle: f64| {
        let (s, co) = (angle / 2.0).sin_cos();
        let mut q = [co, 0.0, 0.0, 0.0];
        q[k + 1] = s;
        q
    };
    let q = crate::placement::quaternion_multiply(
        crate::placement::quaternion_multiply(axis(0, a), axis(1, b)),
        axis(2, c),
    );
    if q[0] < 0.0 {
        q.map(|x| -x)
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_translate_to_tenon_syntax() {
        assert_eq!(translate_formula("2.0d*pi*time"), "2.0*pi*t");
        assert_eq!(translate_formula("1.0d-3*sin(time)"), "1.0e-3*sin(t)");
        assert_eq!(
            translate_formula("(0.0d + 10.0d*(rIJ(self) + (-0.5d)))"),
            "(0.0 + 10.0*(rIJ(self) + (-0.5)))"
        );
        assert_eq!(translate_formula("timex + 3e2"), "timex + 3e2");
    }

    #[test]
    fn spring_tension_gives_its_coefficients() {
        let t = translate_formula("(0.0d + 10.0d*(rIJ(self) + (-0.5d)) + 0.25d*vrIJ(self))");
        assert_eq!(spring_coefficients(&t), Some((10.0, 0.5, 0.25)));
        assert_eq!(
            spring_coefficients("5.0 + 10.0*(rIJ(self) - 0.5)"),
            Some((10.0, 0.0, 0.0))
        );
        assert_eq!(spring_coefficients("rIJ(self)^2"), None);
    }

    #[test]
    fn bryant_angles_compose_x_then_y_then_z() {
        let q = bryant_quaternion(0.0, 0.0, std::f64::consts::FRAC_PI_2);
        let m = quaternion_to_matrix(q);
        assert!((m[0][1] + 1.0).abs() < 1e-12 && (m[1][0] - 1.0).abs() < 1e-12);
    }
}
