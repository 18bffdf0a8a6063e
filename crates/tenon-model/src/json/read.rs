//! Reading format v1: the document walked by hand (not derived), so each value is
//! read where it is and every unknown key is refused with its path. This layer checks
//! syntax and references (ids, marker names); the model's rules (field ranges,
//! profiles, limits, placements, mass) are checked by `Assembly`'s builders, whose
//! problems come back with a place inside the element that is appended to the JSON
//! path here. `extra` values are kept as their text, on every object: the document's,
//! a part's and a joint's in their own fields, any other object's (a marker, a
//! placement, a rotation, a mass, a marker reference, units, a motion, a spring, a load,
//! the simulation) with the element it sits in and its path from there.

use bumpalo::Bump;

use super::lists::{List, Lists};
use super::value::{
    array, collect_nested, describe, each_item, key_path, parse_document, parse_strict, resolved,
    At, ItemsError, Json, Obj, Result,
};
use super::{FORMAT_NAME, FORMAT_VERSION};
use crate::assembly::{
    Assembly, Coordinate, ExtraOwner, Forces, JointKey, Load, Mass, Method, Motion, NestedExtra,
    Part, PartKey, PartVelocity, Simulation, Spring,
};
use crate::error::{ModelError, Place};
use crate::joint::{
    CamProfile, Field, Joint, JointRate, JointType, Limits, MarkerRef, MarkerSpec, Range,
};
use crate::placement::{Placement, Rotation};
use crate::scalar::{
    AngleUnit, LengthUnit, MassUnit, Parameter, ParameterValues, Scalar, TimeUnit, Units,
};
use crate::validate::Invalid;

/// The problem an `Assembly` builder found, placed below `at`.
fn placed(at: At<'_>, e: Invalid) -> ModelError {
    ModelError::at_path(e.path_below(&at.to_string()), e.message)
}

pub(super) fn read(text: &str) -> Result<Assembly> {
    let (assembly, nested) = collect_nested(|| read_document(text));
    let mut assembly = assembly.map_err(|e| syntax_first(text, e))?;
    let parts: Vec<PartKey> = assembly.parts().map(|(k, _)| k).collect();
    let joints: Vec<JointKey> = assembly.joints().map(|(k, _)| k).collect();
    let owned = nested
        .into_iter()
        .map(|(path, extra)| {
            let (owner, path) = owner_of((&parts, &joints), &path);
            NestedExtra { owner, path, extra }
        })
        .collect();
    assembly.set_nested_extras(owned);
    Ok(assembly)
}

/// The first problem of a document that is not JSON is where it is not (the parts and
/// joints are read an item at a time, so a part may be refused before a syntax error
/// in a joint is met): `e`, a problem found in the document's values, gives way to
/// the syntax error if there is one.
fn syntax_first(text: &str, e: ModelError) -> ModelError {
    if matches!(e.place(), Place::Line { .. }) {
        return e;
    }
    match parse(text, &Bump::new()) {
        Err(syntax) => syntax,
        Ok(_) => e,
    }
}

/// The element an `extra` at `path` (a path as errors print it) belongs to, and the
/// path from that element: `parts[2].markers.pin` is part 2's `markers.pin`.
fn owner_of((parts, joints): (&[PartKey], &[JointKey]), path: &str) -> (ExtraOwner, String) {
    let element = |list: &str| -> Option<(usize, String)> {
        let rest = path.strip_prefix(list)?.strip_prefix('[')?;
        let (index, tail) = rest.split_once(']')?;
        let tail = tail.strip_prefix('.').unwrap_or(tail);
        Some((index.parse().ok()?, tail.to_string()))
    };
    if let Some((k, tail)) = element("parts") {
        if let Some(&key) = parts.get(k) {
            return (ExtraOwner::Part(key), tail);
        }
    }
    if let Some((k, tail)) = element("joints") {
        if let Some(&key) = joints.get(k) {
            return (ExtraOwner::Joint(key), tail);
        }
    }
    (ExtraOwner::Root, path.to_string())
}

/// One element's JSON text (a part, a joint: what a host adds to an assembly in code)
/// read by `read`. Nested `extra` objects are refused: only whole documents
/// keep them at their places, and none is dropped silently.
fn read_element<T>(
    text: &str,
    read: impl for<'a> FnOnce(&Json<'a>, &'a Bump) -> Result<T>,
) -> Result<T> {
    let arena = Bump::new();
    let value = parse(text, &arena)?;
    let (element, nested) = collect_nested(|| read(&value, &arena));
    let element = element?;
    if let Some((at, _)) = nested.first() {
        return Err(ModelError::at_path(
            at.clone(),
            "an 'extra' inside an element added on its own is not kept (give it in a file, \
             or on the element itself)",
        ));
    }
    Ok(element)
}

/// A part object (as in a file's `parts`); errors name paths below `part`.
pub(super) fn read_one_part(text: &str) -> Result<Part> {
    read_element(text, |v, arena| read_part(v, At::Root("part"), arena))
}

/// A joint object (as in a file's `joints`), its markers looked up in `assembly`;
/// errors name paths below `joint`.
pub(super) fn read_one_joint(text: &str, assembly: &Assembly) -> Result<Joint> {
    read_element(text, |v, _| read_joint(v, At::Root("joint"), assembly))
}

/// JSON text as a value (a key given twice is an error); a syntax error names the line
/// and column.
fn parse<'a>(text: &'a str, arena: &'a Bump) -> Result<Json<'a>> {
    parse_strict(text, arena).map_err(|e| not_json(&e, (1, 1)))
}

/// A syntax error as the reader reports it: "not valid JSON" at its line and column,
/// counted from `(line, column)`, where the text read starts in the file.
fn not_json(e: &serde_json::Error, (line, column): (usize, usize)) -> ModelError {
    let message = e.to_string();
    // serde_json appends " at line L column C"; the place carries that.
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or(&message)
        .to_string();
    let (at_line, at_column) = (e.line().max(1), e.column().max(1));
    ModelError::new(
        Place::Line {
            line: line + at_line - 1,
            column: Some(if at_line == 1 {
                column + at_column - 1
            } else {
                at_column
            }),
        },
        format!("not valid JSON: {message}"),
    )
}

/// The line and column (from 1) where `part`, a piece of `text`, starts in it.
fn start_of(text: &str, part: &str) -> (usize, usize) {
    let offset = (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let before = text.get(..offset).unwrap_or("");
    let line = 1 + memchr::memchr_iter(b'\n', before.as_bytes()).count();
    let column = 1 + before.len() - before.rfind('\n').map_or(0, |k| k + 1);
    (line, column)
}

/// Reads the document's list `v` (its `parts` or `joints`, at `at`) an item at a time,
/// handing each with its index to `each`: as kept as text by
/// [`parse_document`](super::value::parse_document), or as a tree.
fn each_item_of<F>(text: &str, v: &Json<'_>, at: At<'_>, mut each: F) -> Result<()>
where
    F: for<'b> FnMut(usize, &Json<'b>, &'b Bump) -> Result<()>,
{
    let arena = Bump::new();
    match v {
        Json::Raw(list) if list.starts_with('[') => each_item(list, each).map_err(|e| match e {
            ItemsError::Json(e) => not_json(&e, start_of(text, list)),
            ItemsError::Model(e) => e,
        }),
        Json::Raw(other) => {
            // Not an array: refused as a tree would be.
            let value =
                parse_strict(other, &arena).map_err(|e| not_json(&e, start_of(text, other)))?;
            array(&value, at).map(|_| ())
        }
        tree => {
            for (k, item) in array(tree, at)?.iter().enumerate() {
                each(k, item, &arena)?;
            }
            Ok(())
        }
    }
}

fn read_document(text: &str) -> Result<Assembly> {
    // The value tree lives in this arena (see `value::Json`), dropped with the reading;
    // the parts and joints are read an item at a time from their text (see
    // `parse_document`), found by a scan (module `lists`) where it can.
    let arena = Bump::new();
    let lists = super::lists::find(text).filter(Lists::any);
    let rest = lists.as_ref().map(|l| l.cut_from(text));
    let (root, lists) = match rest.as_deref().map(|rest| parse_document(rest, &arena)) {
        Some(Ok(root)) => (root, lists.unwrap_or_default()),
        // Not JSON (or lists not where the scan found them): the whole text, as one,
        // which names the problem's line and column.
        _ => (
            parse_document(text, &arena).map_err(|e| not_json(&e, (1, 1)))?,
            Lists::default(),
        ),
    };
    // A list the scan cut out is `[]` in the tree: its text is the document's.
    let list_text = |v: &Json<'_>, list: &Option<List>| -> Option<&str> {
        match v {
            Json::Raw(_) => list.as_ref().and_then(|l| text.get(l.span.clone())),
            _ => None,
        }
    };
    let mut doc = Obj::new(&root, At::Root(""))?;
    let format = doc.req_str("format")?;
    if format != FORMAT_NAME {
        return Err(ModelError::at_path(
            "format",
            format!("expected \"{FORMAT_NAME}\", found \"{format}\""),
        ));
    }
    match doc.req("version")?.as_u64() {
        Some(FORMAT_VERSION) => {}
        _ => {
            return Err(ModelError::at_path(
                "version",
                format!("this reader understands version {FORMAT_VERSION} only"),
            ))
        }
    }
    let name = doc.opt_str("name")?.unwrap_or_default();
    let units = match doc.get("units") {
        Some(v) => read_units(v)?,
        None => Units::default(),
    };
    let parameters = match doc.get("parameters") {
        Some(v) => read_parameters(v, &arena)?,
        None => Vec::new(),
    };
    // Evaluated here first, so a problem names the parameter's path.
    ParameterValues::new(&parameters, units.angle).map_err(|(k, message)| {
        let name = parameters.get(k).map_or(String::new(), |p| p.name.clone());
        ModelError::at_path(key_path("parameters", &name), message)
    })?;
    let mut assembly = Assembly::new(name, units);
    assembly
        .set_parameters(parameters)
        .map_err(|e| ModelError::at_path("parameters", e.message()))?;

    let count = |list: &Option<List>| list.as_ref().map_or(0, |l| l.items);
    assembly.reserve(count(&lists.parts), count(&lists.joints));
    if let Some(parts) = doc.get("parts") {
        let list = At::Root("parts");
        let parts = list_text(parts, &lists.parts).map_or(parts.clone(), Json::Raw);
        each_item_of(text, &parts, list, |k, v, arena| {
            let at = list.index(k);
            let part = read_part(v, at, arena)?;
            assembly.add_part_checked(part).map_err(|e| placed(at, e))?;
            Ok(())
        })?;
    }
    if let Some(joints) = doc.get("joints") {
        let list = At::Root("joints");
        let joints = list_text(joints, &lists.joints).map_or(joints.clone(), Json::Raw);
        each_item_of(text, &joints, list, |k, v, _| {
            let at = list.index(k);
            let joint = read_joint(v, at, &assembly)?;
            assembly
                .add_joint_checked(joint)
                .map_err(|e| placed(at, e))?;
            Ok(())
        })?;
    }
    if let Some(motions) = doc.get("motions") {
        let list = At::Root("motions");
        for (k, v) in array(motions, list)?.iter().enumerate() {
            let at = list.index(k);
            let motion = read_motion(v, at, &assembly)?;
            assembly
                .add_motion_checked(motion)
                .map_err(|(_, e)| placed(at, e))?;
        }
    }
    if let Some(forces) = doc.get("forces") {
        let forces = read_forces(forces, &assembly)?;
        assembly
            .set_forces_checked(forces)
            .map_err(|e| placed(At::Root("forces"), e))?;
    }
    if let Some(sim) = doc.get("simulation") {
        let sim = read_simulation(sim)?;
        assembly
            .set_simulation_checked(Some(sim))
            .map_err(|e| placed(At::Root("simulation"), e))?;
    }
    if let Some(v) = doc.get("tolerance") {
        let tolerance = v.as_f64().ok_or_else(|| {
            ModelError::at_path(
                "tolerance",
                format!("expected a length (a number), found {}", describe(v)),
            )
        })?;
        assembly
            .set_tolerance_checked(Some(tolerance))
            .map_err(|e| placed(At::Root("tolerance"), e))?;
    }
    let extra = doc.extra();
    doc.finish()?;
    assembly.set_extra(extra);
    Ok(assembly)
}

fn read_units(v: &Json<'_>) -> Result<Units> {
    let mut o = Obj::new(v, At::Root("units"))?;
    fn pick<T: Copy>(o: &mut Obj<'_, '_>, key: &str, table: &[(&str, T)], default: T) -> Result<T> {
        match o.opt_str(key)? {
            None => Ok(default),
            Some(name) => table
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, u)| u)
                .ok_or_else(|| {
                    let known: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
                    ModelError::at_path(
                        o.at(key),
                        format!("unknown {key} unit '{name}' (known: {})", known.join(", ")),
                    )
                }),
        }
    }
    let units = Units {
        length: pick(&mut o, "length", LengthUnit::NAMES, LengthUnit::default())?,
        angle: pick(&mut o, "angle", AngleUnit::NAMES, AngleUnit::default())?,
        mass: pick(&mut o, "mass", MassUnit::NAMES, MassUnit::default())?,
        time: pick(&mut o, "time", TimeUnit::NAMES, TimeUnit::default())?,
    };
    o.finish()?;
    Ok(units)
}

fn read_parameters<'a>(v: &Json<'a>, arena: &'a Bump) -> Result<Vec<Parameter>> {
    let map = v.as_object().ok_or_else(|| {
        ModelError::at_path(
            "parameters",
            format!("expected an object, found {}", describe(v)),
        )
    })?;
    map.iter()
        .map(|(name, value)| {
            Ok(Parameter {
                name: name.to_string(),
                value: scalar_syntax(&resolved(value, arena)?, At::Root("parameters").key(name))?,
            })
        })
        .collect()
}

/// A NUMBER as written (syntax only: a number, or a string that parses).
fn scalar_syntax(v: &Json<'_>, at: At<'_>) -> Result<Scalar> {
    scalar_or_message(v).map_err(|message| ModelError::at_path(at, message))
}

/// [`scalar_syntax`] with the error's message alone (its place is formatted by the
/// caller, only when there is an error).
fn scalar_or_message(v: &Json<'_>) -> std::result::Result<Scalar, String> {
    match v {
        Json::Number(n) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .map(Scalar::Number)
            .ok_or_else(|| "not a finite number".to_string()),
        Json::String(s) => {
            tenon_expr::parse(s).map_err(|e| format!("expression '{s}': {e}"))?;
            Ok(Scalar::Expr(s.to_string()))
        }
        other => Err(format!(
            "expected a number or an expression string, found {}",
            describe(other)
        )),
    }
}

fn vector<const N: usize>(v: &Json<'_>, at: At<'_>) -> Result<[Scalar; N]> {
    let items = array(v, at)?;
    if items.len() != N {
        return Err(ModelError::at_path(
            at,
            format!("expected {N} numbers, found {}", items.len()),
        ));
    }
    let mut out: [Scalar; N] = std::array::from_fn(|_| Scalar::Number(0.0));
    for (k, (o, item)) in out.iter_mut().zip(items).enumerate() {
        *o =
            scalar_or_message(item).map_err(|message| ModelError::at_path(at.index(k), message))?;
    }
    Ok(out)
}

fn read_placement(v: &Json<'_>, at: At<'_>) -> Result<Placement> {
    let mut o = Obj::new(v, at)?;
    let placement = placement_fields(&mut o)?;
    o.finish()?;
    Ok(placement)
}

/// Reads `position` and `rotation` from an object (which may hold other keys).
fn placement_fields(o: &mut Obj<'_, '_>) -> Result<Placement> {
    let position = match o.get("position") {
        Some(v) => vector::<3>(v, o.at("position"))?,
        None => Placement::default().position,
    };
    let rotation = match o.get("rotation") {
        None => Rotation::Identity,
        Some(v) => rotation(v, o.at("rotation"))?,
    };
    Ok(Placement { position, rotation })
}

fn rotation(v: &Json<'_>, at: At<'_>) -> Result<Rotation> {
    let mut o = Obj::new(v, at)?;
    let forms = ["quaternion", "axis", "matrix"];
    let given: Vec<&str> = forms
        .iter()
        .copied()
        .filter(|k| o.map.contains_key(k))
        .collect();
    let rotation =
        match given.as_slice() {
            ["quaternion"] => {
                Rotation::Quaternion(vector::<4>(o.req("quaternion")?, o.at("quaternion"))?)
            }
            ["axis"] => {
                let axis = vector::<3>(o.req("axis")?, o.at("axis"))?;
                let angle = scalar_syntax(o.req("angle")?, o.at("angle"))?;
                Rotation::AxisAngle { axis, angle }
            }
            ["matrix"] => {
                let rows = array(o.req("matrix")?, o.at("matrix"))?;
                if rows.len() != 3 {
                    return Err(ModelError::at_path(
                        o.at("matrix"),
                        format!("expected 3 rows, found {}", rows.len()),
                    ));
                }
                let mut m: [[Scalar; 3]; 3] =
                    std::array::from_fn(|_| std::array::from_fn(|_| Scalar::Number(0.0)));
                for (k, (row, v)) in m.iter_mut().zip(rows).enumerate() {
                    *row = vector::<3>(v, o.at("matrix").index(k))?;
                }
                Rotation::Matrix(m)
            }
            [] => return Err(ModelError::at_path(
                at,
                "a rotation needs one of \"quaternion\", \"axis\" with \"angle\", or \"matrix\"",
            )),
            _ => {
                return Err(ModelError::at_path(
                    at,
                    format!("a rotation takes one form, found {}", given.join(" and ")),
                ))
            }
        };
    o.finish()?;
    Ok(rotation)
}

fn read_part<'a>(v: &Json<'a>, at: At<'_>, arena: &'a Bump) -> Result<Part> {
    let mut o = Obj::new(v, at)?;
    let id = o.req_str("id")?.to_string();
    let grounded = o.opt_bool("grounded")?;
    let placement = match o.get("placement") {
        Some(v) => read_placement(v, o.at("placement"))?,
        None => Placement::default(),
    };
    let mut markers = Vec::new();
    if let Some(m) = o.get("markers") {
        let mpath = o.at("markers");
        let map = m.as_object().ok_or_else(|| {
            ModelError::at_path(mpath, format!("expected an object, found {}", describe(m)))
        })?;
        markers.reserve_exact(map.len());
        for (name, mv) in map.iter() {
            let mv = resolved(mv, arena)?;
            markers.push((name.to_string(), read_placement(&mv, mpath.key(name))?));
        }
    }
    let mass = match o.get("mass") {
        Some(v) => Some(Box::new(read_mass(v, o.at("mass"))?)),
        None => None,
    };
    let velocity = match o.get("velocity") {
        Some(v) => Some(Box::new(read_velocity(v, o.at("velocity"))?)),
        None => None,
    };
    let extra = o.extra();
    o.finish()?;
    Ok(Part {
        id,
        grounded,
        placement,
        markers,
        mass,
        velocity,
        extra,
    })
}

fn read_velocity(v: &Json<'_>, at: At<'_>) -> Result<PartVelocity> {
    let mut o = Obj::new(v, at)?;
    let zero = || std::array::from_fn(|_| Scalar::Number(0.0));
    let linear = match o.get("linear") {
        Some(v) => vector::<3>(v, o.at("linear"))?,
        None => zero(),
    };
    let angular = match o.get("angular") {
        Some(v) => vector::<3>(v, o.at("angular"))?,
        None => zero(),
    };
    o.finish()?;
    Ok(PartVelocity { linear, angular })
}

fn read_mass(v: &Json<'_>, at: At<'_>) -> Result<Mass> {
    let mut o = Obj::new(v, at)?;
    let mass = scalar_syntax(o.req("mass")?, o.at("mass"))?;
    let center_of_mass = match o.get("center_of_mass") {
        Some(v) => vector::<3>(v, o.at("center_of_mass"))?,
        None => Placement::default().position,
    };
    let inertia_value = o.req("inertia")?;
    let ipath = o.at("inertia");
    let rows = array(inertia_value, ipath)?;
    if rows.len() != 3 {
        return Err(ModelError::at_path(
            ipath,
            format!("expected 3 rows, found {}", rows.len()),
        ));
    }
    let mut inertia: [[Scalar; 3]; 3] =
        std::array::from_fn(|_| std::array::from_fn(|_| Scalar::Number(0.0)));
    for (r, (row, v)) in inertia.iter_mut().zip(rows).enumerate() {
        *row = vector::<3>(v, ipath.index(r))?;
    }
    o.finish()?;
    Ok(Mass {
        mass,
        center_of_mass,
        inertia,
    })
}

fn read_marker_ref(v: &Json<'_>, at: At<'_>, assembly: &Assembly) -> Result<MarkerRef> {
    let mut o = Obj::new(v, at)?;
    let part_id = o.req_str("part")?;
    let part_key = assembly
        .part_by_id(part_id)
        .ok_or_else(|| ModelError::at_path(o.at("part"), format!("no part has id '{part_id}'")))?;
    let marker = match o.get("marker") {
        Some(Json::String(name)) => {
            if o.map.contains_key("position") || o.map.contains_key("rotation") {
                return Err(ModelError::at_path(
                    at,
                    "give either \"marker\" or an inline \"position\"/\"rotation\", not both",
                ));
            }
            MarkerSpec::Named(name.to_string())
        }
        Some(other) => {
            return Err(ModelError::at_path(
                o.at("marker"),
                format!("expected a marker name, found {}", describe(other)),
            ))
        }
        None => MarkerSpec::Inline(Box::new(placement_fields(&mut o)?)),
    };
    o.finish()?;
    Ok(MarkerRef {
        part: part_key,
        marker,
    })
}

fn read_joint(v: &Json<'_>, at: At<'_>, assembly: &Assembly) -> Result<Joint> {
    let mut o = Obj::new(v, at)?;
    let id = o.req_str("id")?.to_string();
    let type_name = o.req_str("type")?;
    let joint_type = JointType::from_name(type_name).ok_or_else(|| {
        let known: Vec<&str> = JointType::ALL.iter().map(|t| t.name()).collect();
        ModelError::at_path(
            o.at("type"),
            format!(
                "unknown joint type '{type_name}' (known: {})",
                known.join(", ")
            ),
        )
    })?;
    let i = read_marker_ref(o.req("i")?, o.at("i"), assembly)?;
    let j = read_marker_ref(o.req("j")?, o.at("j"), assembly)?;
    let suppressed = o.opt_bool("suppressed")?;
    let mut fields = Vec::new();
    for field in Field::ALL {
        if let Some(v) = o.get(field.key()) {
            fields.push((field, scalar_syntax(v, o.at(field.key()))?));
        }
    }
    // A cam's profile is `profile` (on marker j); a curve contact names both sides.
    // Which a type takes is the model's rule; any of them given is read.
    let mut profiles: Vec<(&str, CamProfile)> = Vec::new();
    for key in ["profile", "profile_i", "profile_j"] {
        if let Some(v) = o.get(key) {
            profiles.push((key, read_profile(v, o.at(key))?));
        }
    }
    let mut profile = None;
    let mut profile_i = None;
    for (key, p) in profiles {
        let takes_j = if joint_type.takes_profile_i() {
            "profile_j"
        } else {
            "profile"
        };
        let fits = (key == takes_j && joint_type.takes_profile())
            || (key == "profile_i" && joint_type.takes_profile_i());
        if !fits {
            return Err(ModelError::at_path(
                o.at(key),
                format!("a {} joint has no '{key}'", joint_type.name()),
            ));
        }
        if key == "profile_i" {
            profile_i = Some(p);
        } else {
            profile = Some(p);
        }
    }
    let limits = match o.get("limits") {
        Some(v) => read_limits(v, o.at("limits"))?,
        None => Limits::default(),
    };
    let rate = match o.get("rate") {
        Some(v) => read_rate(v, o.at("rate"))?,
        None => JointRate::default(),
    };
    let residuals = match o.get("residuals") {
        Some(v) => {
            let rpath = o.at("residuals");
            array(v, rpath)?
                .iter()
                .enumerate()
                .map(|(k, r)| {
                    r.as_str().map(str::to_string).ok_or_else(|| {
                        ModelError::at_path(
                            rpath.index(k),
                            format!("expected an expression string, found {}", describe(r)),
                        )
                    })
                })
                .collect::<Result<Vec<String>>>()?
        }
        None => Vec::new(),
    };
    let compliance = match o.get("compliance") {
        Some(v) => Some(scalar_syntax(v, o.at("compliance"))?),
        None => None,
    };
    let extra = o.extra();
    o.finish()?;
    Ok(Joint {
        compliance,
        id,
        joint_type,
        i,
        j,
        suppressed,
        fields,
        profile,
        profile_i,
        limits,
        rate,
        extra,
        residuals,
    })
}

fn read_rate(v: &Json<'_>, at: At<'_>) -> Result<JointRate> {
    let mut o = Obj::new(v, at)?;
    let mut rate = JointRate::default();
    if let Some(v) = o.get("angle") {
        rate.angle = Some(scalar_syntax(v, o.at("angle"))?);
    }
    if let Some(v) = o.get("distance") {
        rate.distance = Some(scalar_syntax(v, o.at("distance"))?);
    }
    o.finish()?;
    Ok(rate)
}

fn read_profile(v: &Json<'_>, at: At<'_>) -> Result<CamProfile> {
    let mut o = Obj::new(v, at)?;
    let profile = if let Some(c) = o.get("circle") {
        let mut circle = Obj::new(c, o.at("circle"))?;
        let radius = scalar_syntax(circle.req("radius")?, circle.at("radius"))?;
        circle.finish()?;
        CamProfile::Circle { radius }
    } else if let Some(p) = o.get("polar") {
        let ppath = o.at("polar");
        let items = array(p, ppath)?;
        let radii = items
            .iter()
            .enumerate()
            .map(|(k, item)| scalar_syntax(item, ppath.index(k)))
            .collect::<Result<Vec<_>>>()?;
        CamProfile::Polar(radii)
    } else if let Some(p) = o.get("points") {
        let ppath = o.at("points");
        let items = array(p, ppath)?;
        let mut points = Vec::with_capacity(items.len());
        for (k, item) in items.iter().enumerate() {
            let ipath = ppath.index(k);
            let xy = array(item, ipath)?;
            let [x, y] = xy else {
                return Err(ModelError::at_path(
                    ipath,
                    format!("a profile point is [x, y], found {} numbers", xy.len()),
                ));
            };
            points.push([
                scalar_syntax(x, ipath.index(0))?,
                scalar_syntax(y, ipath.index(1))?,
            ]);
        }
        CamProfile::Points(points)
    } else {
        return Err(ModelError::at_path(
            at,
            "a profile is {\"circle\": {\"radius\": R}}, {\"polar\": [r0, r1, ...]} or \
             {\"points\": [[x0, y0], [x1, y1], ...]}",
        ));
    };
    o.finish()?;
    Ok(profile)
}

fn read_limits(v: &Json<'_>, at: At<'_>) -> Result<Limits> {
    let mut o = Obj::new(v, at)?;
    let mut limits = Limits::default();
    for field in [Field::Angle, Field::Distance] {
        let Some(range) = o.get(field.key()) else {
            continue;
        };
        let rpath = o.at(field.key());
        let items = array(range, rpath)?;
        if items.len() != 2 {
            return Err(ModelError::at_path(
                rpath,
                format!("expected [min, max], found {} values", items.len()),
            ));
        }
        let mut sides = [None, None];
        for (k, (side, item)) in sides.iter_mut().zip(items).enumerate() {
            if !item.is_null() {
                *side = Some(scalar_syntax(item, rpath.index(k))?);
            }
        }
        let [min, max] = sides;
        let range = Range { min, max };
        match field {
            Field::Angle => limits.angle = Some(range),
            _ => limits.distance = Some(range),
        }
    }
    o.finish()?;
    Ok(limits)
}

fn read_motion(v: &Json<'_>, at: At<'_>, assembly: &Assembly) -> Result<Motion> {
    let mut o = Obj::new(v, at)?;
    let joint_id = o.req_str("joint")?;
    let joint = assembly.joint_by_id(joint_id).ok_or_else(|| {
        ModelError::at_path(o.at("joint"), format!("no joint has id '{joint_id}'"))
    })?;
    let (coordinate, value) = match (o.get("angle"), o.get("distance")) {
        (Some(v), None) => (Coordinate::Angle, (v, o.at("angle"))),
        (None, Some(v)) => (Coordinate::Distance, (v, o.at("distance"))),
        (None, None) => {
            return Err(ModelError::at_path(
                at,
                "a motion needs \"angle\" or \"distance\"",
            ))
        }
        (Some(_), Some(_)) => {
            return Err(ModelError::at_path(
                at,
                "a motion drives one coordinate: \"angle\" or \"distance\", not both",
            ))
        }
    };
    let value = scalar_syntax(value.0, value.1)?;
    o.finish()?;
    Ok(Motion {
        joint,
        coordinate,
        value,
    })
}

fn read_forces(v: &Json<'_>, assembly: &Assembly) -> Result<Forces> {
    let mut o = Obj::new(v, At::Root("forces"))?;
    let mut forces = Forces::default();
    if let Some(g) = o.get("gravity") {
        forces.gravity = Some(vector::<3>(g, o.at("gravity"))?);
    }
    if let Some(springs) = o.get("springs") {
        let spath = o.at("springs");
        for (k, s) in array(springs, spath)?.iter().enumerate() {
            let mut so = Obj::new(s, spath.index(k))?;
            let id = so.req_str("id")?.to_string();
            let i = read_marker_ref(so.req("i")?, so.at("i"), assembly)?;
            let j = read_marker_ref(so.req("j")?, so.at("j"), assembly)?;
            let stiffness = scalar_syntax(so.req("stiffness")?, so.at("stiffness"))?;
            let rest_length = scalar_syntax(so.req("rest_length")?, so.at("rest_length"))?;
            let damping = match so.get("damping") {
                Some(d) => scalar_syntax(d, so.at("damping"))?,
                None => Scalar::Number(0.0),
            };
            so.finish()?;
            forces.springs.push(Spring {
                id,
                i,
                j,
                stiffness,
                rest_length,
                damping,
            });
        }
    }
    if let Some(loads) = o.get("loads") {
        let lpath = o.at("loads");
        for (k, l) in array(loads, lpath)?.iter().enumerate() {
            let mut lo = Obj::new(l, lpath.index(k))?;
            let part_id = lo.req_str("part")?;
            let part = assembly.part_by_id(part_id).ok_or_else(|| {
                ModelError::at_path(lo.at("part"), format!("no part has id '{part_id}'"))
            })?;
            let zero = || Placement::default().position;
            let force = match lo.get("force") {
                Some(f) => vector::<3>(f, lo.at("force"))?,
                None => zero(),
            };
            let torque = match lo.get("torque") {
                Some(t) => vector::<3>(t, lo.at("torque"))?,
                None => zero(),
            };
            let at = match lo.get("at") {
                Some(a) => Some(vector::<3>(a, lo.at("at"))?),
                None => None,
            };
            lo.finish()?;
            forces.loads.push(Load {
                part,
                force,
                torque,
                at,
            });
        }
    }
    o.finish()?;
    Ok(forces)
}

fn read_simulation(v: &Json<'_>) -> Result<Simulation> {
    let mut o = Obj::new(v, At::Root("simulation"))?;
    let end = scalar_syntax(o.req("end")?, o.at("end"))?;
    let step = scalar_syntax(o.req("step")?, o.at("step"))?;
    let optional = |o: &mut Obj<'_, '_>, key: &str| -> Result<Option<Scalar>> {
        match o.get(key) {
            Some(s) => Ok(Some(scalar_syntax(s, o.at(key))?)),
            None => Ok(None),
        }
    };
    let start = optional(&mut o, "start")?;
    let output_step = optional(&mut o, "output_step")?;
    let rho_inf = optional(&mut o, "rho_inf")?;
    let tolerance = optional(&mut o, "tolerance")?;
    let method = match o.opt_str("method")? {
        None => None,
        Some(name) => Some(match name.as_str() {
            "generalized_alpha" => Method::GeneralizedAlpha,
            "baumgarte" => Method::Baumgarte,
            other => {
                return Err(ModelError::at_path(
                    o.at("method"),
                    format!(
                        "unknown method '{other}' (expected 'generalized_alpha' or 'baumgarte')"
                    ),
                ))
            }
        }),
    };
    let baumgarte = match o.get("baumgarte") {
        Some(v) => {
            let mut b = Obj::new(v, o.at("baumgarte"))?;
            let alpha = scalar_syntax(b.req("alpha")?, b.at("alpha"))?;
            let beta = scalar_syntax(b.req("beta")?, b.at("beta"))?;
            b.finish()?;
            Some([alpha, beta])
        }
        None => None,
    };
    o.finish()?;
    Ok(Simulation {
        start,
        end,
        step,
        output_step,
        method,
        rho_inf,
        tolerance,
        baumgarte,
    })
}
