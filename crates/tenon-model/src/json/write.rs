//! Writer for assembly format v1 (JSON). Reading what it writes gives the same assembly.

use serde_json::{json, Map, Value};

use super::{FORMAT_NAME, FORMAT_VERSION};
use rustc_hash::FxHashMap;

use crate::assembly::{Assembly, Coordinate, Extra, ExtraOwner, JointKey, Part, PartKey};
use crate::joint::{CamProfile, Joint, MarkerRef, MarkerSpec};
use crate::placement::{Placement, Rotation};
use crate::scalar::{unit_name, AngleUnit, LengthUnit, MassUnit, Scalar, TimeUnit};

/// Writes an assembly as JSON text (two-space indentation, keys in the spec's order).
/// Every `extra` is written back as the text it was read from, in the object it was
/// read in (one an edit removed goes with it).
pub fn write_json(assembly: &Assembly) -> String {
    // A placeholder string stands for each `extra` in the value tree; the text replaces
    // it after serialization. A document whose own strings contain the placeholder's
    // prefix (it starts with a control character) gets another.
    for nonce in 0u32.. {
        let prefix = format!("\u{1}tenon-extra-{nonce}:");
        let mut value = to_value(assembly);
        let texts = place_extras(assembly, &mut value, &prefix);
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        // The placeholder as serde_json writes it: the control character escaped.
        let written = format!("\"\\u0001tenon-extra-{nonce}:");
        if text.matches(&written).count() == texts.len() {
            let mut out = substitute(&text, &written, &texts);
            out.push('\n');
            return out;
        }
    }
    String::new()
}

/// Puts a placeholder `prefix` + index in every object that had an `extra`, and returns
/// the texts in index order.
fn place_extras<'a>(a: &'a Assembly, root: &mut Value, prefix: &str) -> Vec<&'a str> {
    let part_index: FxHashMap<PartKey, usize> = a
        .parts()
        .enumerate()
        .map(|(k, (key, _))| (key, k))
        .collect();
    let joint_index: FxHashMap<JointKey, usize> = a
        .joints()
        .enumerate()
        .map(|(k, (key, _))| (key, k))
        .collect();
    let mut at: Vec<(Vec<Segment>, &'a Extra)> = Vec::new();
    if let Some(e) = a.extra() {
        at.push((Vec::new(), e));
    }
    for (k, (_, p)) in a.parts().enumerate() {
        if let Some(e) = &p.extra {
            at.push((vec![Segment::Key("parts".into()), Segment::Index(k)], e));
        }
    }
    for (k, (_, j)) in a.joints().enumerate() {
        if let Some(e) = &j.extra {
            at.push((vec![Segment::Key("joints".into()), Segment::Index(k)], e));
        }
    }
    for nested in a.nested_extras() {
        let mut path = match nested.owner {
            ExtraOwner::Root => Vec::new(),
            ExtraOwner::Part(key) => match part_index.get(&key) {
                Some(&k) => vec![Segment::Key("parts".into()), Segment::Index(k)],
                None => continue,
            },
            ExtraOwner::Joint(key) => match joint_index.get(&key) {
                Some(&k) => vec![Segment::Key("joints".into()), Segment::Index(k)],
                None => continue,
            },
        };
        let Some(rest) = segments(&nested.path) else {
            continue;
        };
        path.extend(rest);
        at.push((path, &nested.extra));
    }
    let mut texts = Vec::with_capacity(at.len());
    for (path, extra) in at {
        if let Some(Value::Object(map)) = object_at(root, &path) {
            map.insert(
                "extra".into(),
                Value::String(format!("{prefix}{}", texts.len())),
            );
            texts.push(extra.as_json_text());
        }
    }
    texts
}

/// One step of a path as errors print it: `.key`, `["odd key"]` or `[3]`.
enum Segment {
    Key(String),
    Index(usize),
}

/// Parses a printed path (`parts[2].markers["a b"].rotation`).
fn segments(path: &str) -> Option<Vec<Segment>> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        rest = rest.strip_prefix('.').unwrap_or(rest);
        if let Some(inner) = rest.strip_prefix('[') {
            if inner.starts_with('"') {
                // A JSON string, then `]`.
                let mut stream = serde_json::Deserializer::from_str(inner).into_iter::<String>();
                let key = stream.next()?.ok()?;
                let used = stream.byte_offset();
                out.push(Segment::Key(key));
                rest = inner.get(used..)?.strip_prefix(']')?;
            } else {
                let (index, tail) = inner.split_once(']')?;
                out.push(Segment::Index(index.parse().ok()?));
                rest = tail;
            }
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            out.push(Segment::Key(rest.get(..end)?.to_string()));
            rest = rest.get(end..)?;
        }
    }
    Some(out)
}

/// The value at `path`; a placement the writer left out (it was the identity) is put
/// back as `{}` to hold its `extra`.
fn object_at<'v>(root: &'v mut Value, path: &[Segment]) -> Option<&'v mut Value> {
    let mut here = root;
    for segment in path {
        here = match segment {
            Segment::Index(k) => here.as_array_mut()?.get_mut(*k)?,
            Segment::Key(key) => {
                let map = here.as_object_mut()?;
                if key == "placement" && !map.contains_key("placement") {
                    map.insert(key.clone(), Value::Object(Map::new()));
                }
                map.get_mut(key.as_str())?
            }
        };
    }
    Some(here)
}

/// The text with each placeholder (`written` + index + `"`) replaced by its extra.
fn substitute(text: &str, written: &str, texts: &[&str]) -> String {
    let mut out = String::with_capacity(text.len() + texts.iter().map(|t| t.len()).sum::<usize>());
    let mut rest = text;
    while let Some(at) = rest.find(written) {
        out.push_str(&rest[..at]);
        let after = &rest[at + written.len()..];
        let digits = after.find('"').unwrap_or(0);
        match after[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|k| texts.get(k))
        {
            Some(t) => out.push_str(t),
            None => out.push_str(&rest[at..at + written.len() + digits + 1]),
        }
        rest = &after[(digits + 1).min(after.len())..];
    }
    out.push_str(rest);
    out
}

fn scalar(s: &Scalar) -> Value {
    match s {
        Scalar::Number(x) => number(*x),
        Scalar::Expr(text) => Value::String(text.clone()),
    }
}

/// A number; integral values are written without a fraction.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn vector(v: &[Scalar]) -> Value {
    Value::Array(v.iter().map(scalar).collect())
}

fn placement_into(p: &Placement, map: &mut Map<String, Value>) {
    if p.position.iter().any(|s| s.as_number() != Some(0.0)) {
        map.insert("position".into(), vector(&p.position));
    }
    let rotation = match &p.rotation {
        Rotation::Identity => None,
        Rotation::Quaternion(q) => Some(json!({ "quaternion": vector(q) })),
        Rotation::AxisAngle { axis, angle } => {
            Some(json!({ "axis": vector(axis), "angle": scalar(angle) }))
        }
        Rotation::Matrix(m) => {
            Some(json!({ "matrix": m.iter().map(|r| vector(r)).collect::<Vec<_>>() }))
        }
    };
    if let Some(r) = rotation {
        map.insert("rotation".into(), r);
    }
}

fn placement(p: &Placement) -> Value {
    let mut map = Map::new();
    placement_into(p, &mut map);
    Value::Object(map)
}

fn part_id(assembly: &Assembly, key: crate::PartKey) -> String {
    assembly
        .part(key)
        .map_or_else(String::new, |p| p.id.clone())
}

fn marker_ref(assembly: &Assembly, r: &MarkerRef) -> Value {
    let mut map = Map::new();
    map.insert("part".into(), Value::String(part_id(assembly, r.part)));
    match &r.marker {
        MarkerSpec::Named(name) => {
            map.insert("marker".into(), Value::String(name.clone()));
        }
        MarkerSpec::Inline(p) => placement_into(p, &mut map),
    }
    Value::Object(map)
}

fn part(p: &Part) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), Value::String(p.id.clone()));
    if p.grounded {
        map.insert("grounded".into(), Value::Bool(true));
    }
    let pl = placement(&p.placement);
    if pl.as_object().is_some_and(|m| !m.is_empty()) {
        map.insert("placement".into(), pl);
    }
    if !p.markers.is_empty() {
        let markers: Map<String, Value> = p
            .markers
            .iter()
            .map(|(n, pl)| (n.clone(), placement(pl)))
            .collect();
        map.insert("markers".into(), Value::Object(markers));
    }
    if let Some(m) = &p.mass {
        map.insert(
            "mass".into(),
            json!({
                "mass": scalar(&m.mass),
                "center_of_mass": vector(&m.center_of_mass),
                "inertia": m.inertia.iter().map(|r| vector(r)).collect::<Vec<_>>(),
            }),
        );
    }
    if let Some(v) = &p.velocity {
        map.insert(
            "velocity".into(),
            json!({ "linear": vector(&v.linear), "angular": vector(&v.angular) }),
        );
    }
    Value::Object(map)
}

fn profile_value(p: &CamProfile) -> Value {
    match p {
        CamProfile::Circle { radius } => json!({ "circle": { "radius": scalar(radius) } }),
        CamProfile::Polar(radii) => json!({ "polar": vector(radii) }),
        CamProfile::Points(points) => json!({
            "points": points.iter().map(|p| vector(p)).collect::<Vec<_>>()
        }),
    }
}

fn joint(assembly: &Assembly, j: &Joint) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), Value::String(j.id.clone()));
    map.insert("type".into(), Value::String(j.joint_type.name().into()));
    map.insert("i".into(), marker_ref(assembly, &j.i));
    map.insert("j".into(), marker_ref(assembly, &j.j));
    if j.suppressed {
        map.insert("suppressed".into(), Value::Bool(true));
    }
    for (field, value) in &j.fields {
        map.insert(field.key().into(), scalar(value));
    }
    let j_key = if j.joint_type.takes_profile_i() {
        "profile_j"
    } else {
        "profile"
    };
    for (key, profile) in [("profile_i", &j.profile_i), (j_key, &j.profile)] {
        if let Some(p) = profile {
            map.insert(key.into(), profile_value(p));
        }
    }
    if !j.residuals.is_empty() {
        let residuals = j.residuals.iter().cloned().map(Value::String).collect();
        map.insert("residuals".into(), Value::Array(residuals));
    }
    if let Some(c) = &j.compliance {
        map.insert("compliance".into(), scalar(c));
    }
    let mut limits = Map::new();
    let range = |r: &crate::joint::Range| {
        Value::Array(
            [&r.min, &r.max]
                .iter()
                .map(|s| s.as_ref().map_or(Value::Null, scalar))
                .collect(),
        )
    };
    if let Some(a) = &j.limits.angle {
        limits.insert("angle".into(), range(a));
    }
    if let Some(d) = &j.limits.distance {
        limits.insert("distance".into(), range(d));
    }
    if !limits.is_empty() {
        map.insert("limits".into(), Value::Object(limits));
    }
    let mut rate = Map::new();
    if let Some(a) = &j.rate.angle {
        rate.insert("angle".into(), scalar(a));
    }
    if let Some(d) = &j.rate.distance {
        rate.insert("distance".into(), scalar(d));
    }
    if !rate.is_empty() {
        map.insert("rate".into(), Value::Object(rate));
    }
    Value::Object(map)
}

fn to_value(a: &Assembly) -> Value {
    let mut root = Map::new();
    root.insert("format".into(), Value::String(FORMAT_NAME.into()));
    root.insert("version".into(), json!(FORMAT_VERSION));
    root.insert("name".into(), Value::String(a.name().into()));
    let u = a.units();
    root.insert(
        "units".into(),
        json!({
            "length": unit_name(LengthUnit::NAMES, u.length),
            "angle": unit_name(AngleUnit::NAMES, u.angle),
            "mass": unit_name(MassUnit::NAMES, u.mass),
            "time": unit_name(TimeUnit::NAMES, u.time),
        }),
    );
    if !a.parameters().is_empty() {
        let params: Map<String, Value> = a
            .parameters()
            .iter()
            .map(|p| (p.name.clone(), scalar(&p.value)))
            .collect();
        root.insert("parameters".into(), Value::Object(params));
    }
    root.insert(
        "parts".into(),
        Value::Array(a.parts().map(|(_, p)| part(p)).collect()),
    );
    root.insert(
        "joints".into(),
        Value::Array(a.joints().map(|(_, j)| joint(a, j)).collect()),
    );
    if !a.motions().is_empty() {
        let motions = a
            .motions()
            .iter()
            .map(|m| {
                let id = a.joint(m.joint).map_or_else(String::new, |j| j.id.clone());
                let key = match m.coordinate {
                    Coordinate::Angle => "angle",
                    Coordinate::Distance => "distance",
                };
                let mut map = Map::new();
                map.insert("joint".into(), Value::String(id));
                map.insert(key.into(), scalar(&m.value));
                Value::Object(map)
            })
            .collect();
        root.insert("motions".into(), Value::Array(motions));
    }
    let f = a.forces();
    if f.gravity.is_some() || !f.springs.is_empty() || !f.loads.is_empty() {
        let mut forces = Map::new();
        if let Some(g) = &f.gravity {
            forces.insert("gravity".into(), vector(g));
        }
        if !f.springs.is_empty() {
            let springs = f
                .springs
                .iter()
                .map(|s| {
                    json!({
                        "id": s.id,
                        "i": marker_ref(a, &s.i),
                        "j": marker_ref(a, &s.j),
                        "stiffness": scalar(&s.stiffness),
                        "rest_length": scalar(&s.rest_length),
                        "damping": scalar(&s.damping),
                    })
                })
                .collect();
            forces.insert("springs".into(), Value::Array(springs));
        }
        if !f.loads.is_empty() {
            let loads = f
                .loads
                .iter()
                .map(|l| {
                    let mut map = Map::new();
                    map.insert("part".into(), Value::String(part_id(a, l.part)));
                    map.insert("force".into(), vector(&l.force));
                    map.insert("torque".into(), vector(&l.torque));
                    if let Some(at) = &l.at {
                        map.insert("at".into(), vector(at));
                    }
                    Value::Object(map)
                })
                .collect();
            forces.insert("loads".into(), Value::Array(loads));
        }
        root.insert("forces".into(), Value::Object(forces));
    }
    if let Some(s) = a.simulation() {
        let mut sim = Map::new();
        if let Some(start) = &s.start {
            sim.insert("start".into(), scalar(start));
        }
        sim.insert("end".into(), scalar(&s.end));
        sim.insert("step".into(), scalar(&s.step));
        if let Some(o) = &s.output_step {
            sim.insert("output_step".into(), scalar(o));
        }
        if let Some(m) = s.method {
            sim.insert("method".into(), Value::String(m.name().into()));
        }
        if let Some(r) = &s.rho_inf {
            sim.insert("rho_inf".into(), scalar(r));
        }
        if let Some(t) = &s.tolerance {
            sim.insert("tolerance".into(), scalar(t));
        }
        if let Some([alpha, beta]) = &s.baumgarte {
            sim.insert(
                "baumgarte".into(),
                json!({ "alpha": scalar(alpha), "beta": scalar(beta) }),
            );
        }
        root.insert("simulation".into(), Value::Object(sim));
    }
    if let Some(t) = a.tolerance() {
        root.insert("tolerance".into(), json!(t));
    }
    Value::Object(root)
}
