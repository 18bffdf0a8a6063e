//! Writer for assembly format v1 (JSON). Reading what it writes gives the same assembly.

use serde_json::{json, Map, Value};

use super::{FORMAT_NAME, FORMAT_VERSION};
use crate::assembly::{Assembly, Coordinate, Part};
use crate::joint::{CamProfile, Joint, MarkerRef, MarkerSpec};
use crate::placement::{Placement, Rotation};
use crate::scalar::{unit_name, AngleUnit, LengthUnit, MassUnit, Scalar, TimeUnit};

/// Writes an assembly as JSON text (two-space indentation, keys in the spec's order).
pub fn write_json(assembly: &Assembly) -> String {
    let value = to_value(assembly);
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
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
    if let Some(e) = &p.extra {
        map.insert("extra".into(), e.0.clone());
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
    if let Some(e) = &j.extra {
        map.insert("extra".into(), e.0.clone());
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
        sim.insert("end".into(), scalar(&s.end));
        sim.insert("step".into(), scalar(&s.step));
        if let Some(o) = &s.output_step {
            sim.insert("output_step".into(), scalar(o));
        }
        root.insert("simulation".into(), Value::Object(sim));
    }
    if let Some(e) = a.extra() {
        root.insert("extra".into(), e.0.clone());
    }
    Value::Object(root)
}
