//! Reader for assembly format v1 (JSON), with validation. Every error names the JSON
//! path of the problem (`joints[3].i.marker`), or the line and column for text that is
//! not JSON at all.
//!
//! The document is walked by hand (not derived) so that each value is checked where it
//! is and every unknown key is refused with its path; `extra` objects are kept as given.

use serde_json::{Map, Value};

use crate::assembly::{
    Assembly, Coordinate, Extra, Forces, Load, Mass, Motion, Part, Simulation, Spring,
};
use crate::error::{ModelError, Place};
use crate::joint::{
    CamProfile, Field, Joint, JointType, Limits, MarkerRef, MarkerSpec, Range, Rule,
    MAX_PROFILE_POINTS,
};
use crate::placement::{Placement, Rotation};
use crate::scalar::{
    AngleUnit, LengthUnit, MassUnit, Parameter, ParameterValues, Scalar, TimeUnit, Units,
};

/// The `format` value of assembly files.
pub const FORMAT_NAME: &str = "tenon-assembly";
/// The format version this reader understands.
pub const FORMAT_VERSION: u64 = 1;

/// Reads an assembly from JSON text. `source_name` (a file name) is put in errors.
pub fn read_json(
    text: &str,
    source_name: Option<&str>,
) -> std::result::Result<Assembly, ModelError> {
    read(text).map_err(|e| e.in_source(source_name))
}

type Result<T> = std::result::Result<T, ModelError>;

fn read(text: &str) -> Result<Assembly> {
    let root: Value = serde_json::from_str::<Strict>(text)
        .map(|s| s.0)
        .map_err(|e| {
            let message = e.to_string();
            // serde_json appends " at line L column C"; the place carries that.
            let message = message
                .split(" at line ")
                .next()
                .unwrap_or(&message)
                .to_string();
            ModelError::new(
                Place::Line {
                    line: e.line().max(1),
                    column: Some(e.column().max(1)),
                },
                format!("not valid JSON: {message}"),
            )
        })?;
    let mut doc = Obj::new(&root, String::new())?;
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
        Some(v) => read_parameters(v)?,
        None => Vec::new(),
    };
    let values = ParameterValues::new(&parameters, units.angle).map_err(|(k, message)| {
        let name = parameters.get(k).map_or(String::new(), |p| p.name.clone());
        ModelError::at_path(key_path("parameters", &name), message)
    })?;
    let ctx = Ctx {
        values,
        units,
        time: None,
    };
    let mut assembly = Assembly::new(name, units);
    assembly.set_parameters(parameters);

    if let Some(parts) = doc.get("parts") {
        for (k, v) in array(parts, "parts")?.iter().enumerate() {
            let path = format!("parts[{k}]");
            let part = read_part(v, &path, &ctx)?;
            if assembly.part_by_id(&part.id).is_some() {
                return Err(ModelError::at_path(
                    format!("{path}.id"),
                    format!("part id '{}' is used twice", part.id),
                ));
            }
            assembly
                .add_part(part)
                .map_err(|e| ModelError::at_path(&path, e.message()))?;
        }
    }
    if let Some(joints) = doc.get("joints") {
        for (k, v) in array(joints, "joints")?.iter().enumerate() {
            let path = format!("joints[{k}]");
            let joint = read_joint(v, &path, &assembly, &ctx)?;
            if assembly.joint_by_id(&joint.id).is_some() {
                return Err(ModelError::at_path(
                    format!("{path}.id"),
                    format!("joint id '{}' is used twice", joint.id),
                ));
            }
            assembly
                .add_joint(joint)
                .map_err(|e| ModelError::at_path(&path, e.message()))?;
        }
    }
    if let Some(motions) = doc.get("motions") {
        for (k, v) in array(motions, "motions")?.iter().enumerate() {
            let path = format!("motions[{k}]");
            let motion = read_motion(v, &path, &assembly, &ctx)?;
            assembly
                .add_motion(motion)
                .map_err(|e| ModelError::at_path(&path, e.message()))?;
        }
    }
    if let Some(forces) = doc.get("forces") {
        let forces = read_forces(forces, &assembly, &ctx)?;
        assembly.set_forces(forces);
    }
    if let Some(sim) = doc.get("simulation") {
        assembly.set_simulation(Some(read_simulation(sim, &ctx)?));
    }
    let extra = doc.extra();
    doc.finish()?;
    assembly.set_extra(extra);
    Ok(assembly)
}

/// A JSON value read strictly: a key written twice in one object is an error (plain
/// `serde_json::Value` keeps the last one and drops the other without a word).
struct Strict(Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "key '{key}' appears twice"
                )));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Parameter values and units: what evaluation of scalars needs. `time` is `Some(0)`
/// where values may depend on `t` (a joint's inline marker: a moving frame).
#[derive(Clone)]
struct Ctx {
    values: ParameterValues,
    units: Units,
    time: Option<f64>,
}

/// `parent.key`, or `parent["key"]` for keys that are not plain identifiers.
fn key_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    let sep = if parent.is_empty() { "" } else { "." };
    if plain {
        format!("{parent}{sep}{key}")
    } else {
        format!("{parent}[{}]", Value::String(key.to_string()))
    }
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn array<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>> {
    v.as_array().ok_or_else(|| {
        ModelError::at_path(path, format!("expected an array, found {}", describe(v)))
    })
}

/// An object being read: tracks which keys were used so the rest can be refused.
struct Obj<'a> {
    path: String,
    map: &'a Map<String, Value>,
    used: Vec<&'a str>,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, path: String) -> Result<Self> {
        match v {
            Value::Object(map) => Ok(Obj {
                path,
                map,
                used: Vec::new(),
            }),
            other => Err(ModelError::at_path(
                path,
                format!("expected an object, found {}", describe(other)),
            )),
        }
    }

    fn at(&self, key: &str) -> String {
        key_path(&self.path, key)
    }

    fn get(&mut self, key: &str) -> Option<&'a Value> {
        let (k, v) = self.map.get_key_value(key)?;
        self.used.push(k.as_str());
        Some(v)
    }

    fn req(&mut self, key: &str) -> Result<&'a Value> {
        self.get(key)
            .ok_or_else(|| ModelError::at_path(&self.path, format!("missing '{key}'")))
    }

    fn req_str(&mut self, key: &str) -> Result<&'a str> {
        let v = self.req(key)?;
        v.as_str().ok_or_else(|| {
            ModelError::at_path(
                self.at(key),
                format!("expected a string, found {}", describe(v)),
            )
        })
    }

    fn opt_str(&mut self, key: &str) -> Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(ModelError::at_path(
                self.at(key),
                format!("expected a string, found {}", describe(v)),
            )),
        }
    }

    fn opt_bool(&mut self, key: &str) -> Result<bool> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(ModelError::at_path(
                self.at(key),
                format!("expected true or false, found {}", describe(v)),
            )),
        }
    }

    fn extra(&mut self) -> Option<Extra> {
        self.get("extra").map(|v| Extra(v.clone()))
    }

    /// Refuses every key not read.
    fn finish(self) -> Result<()> {
        for key in self.map.keys() {
            if !self.used.contains(&key.as_str()) {
                return Err(ModelError::at_path(
                    key_path(&self.path, key),
                    format!("unknown key '{key}' (a typo? unknown keys are refused; put other programs' data under \"extra\")"),
                ));
            }
        }
        Ok(())
    }
}

fn read_units(v: &Value) -> Result<Units> {
    let mut o = Obj::new(v, "units".into())?;
    fn pick<T: Copy>(o: &mut Obj<'_>, key: &str, table: &[(&str, T)], default: T) -> Result<T> {
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

fn read_parameters(v: &Value) -> Result<Vec<Parameter>> {
    let map = v.as_object().ok_or_else(|| {
        ModelError::at_path(
            "parameters",
            format!("expected an object, found {}", describe(v)),
        )
    })?;
    map.iter()
        .map(|(name, value)| {
            Ok(Parameter {
                name: name.clone(),
                value: scalar_syntax(value, &key_path("parameters", name))?,
            })
        })
        .collect()
}

/// A NUMBER as written (syntax only: a number, or a string that parses).
fn scalar_syntax(v: &Value, path: &str) -> Result<Scalar> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .map(Scalar::Number)
            .ok_or_else(|| ModelError::at_path(path, "not a finite number")),
        Value::String(s) => {
            tenon_expr::parse(s)
                .map_err(|e| ModelError::at_path(path, format!("expression '{s}': {e}")))?;
            Ok(Scalar::Expr(s.clone()))
        }
        other => Err(ModelError::at_path(
            path,
            format!(
                "expected a number or an expression string, found {}",
                describe(other)
            ),
        )),
    }
}

impl Ctx {
    /// A NUMBER, checked to evaluate (names known, finite).
    fn scalar(&self, v: &Value, path: &str) -> Result<(Scalar, f64)> {
        let s = scalar_syntax(v, path)?;
        let x = self
            .values
            .eval(&s, self.time)
            .map_err(|e| ModelError::at_path(path, e.message))?;
        Ok((s, x))
    }

    fn scalar_rule(&self, v: &Value, path: &str, rule: Rule) -> Result<Scalar> {
        let (s, x) = self.scalar(v, path)?;
        rule.check(x, self.units.angle)
            .map_err(|message| ModelError::at_path(path, message))?;
        Ok(s)
    }

    fn vector<const N: usize>(&self, v: &Value, path: &str) -> Result<[Scalar; N]> {
        let items = array(v, path)?;
        if items.len() != N {
            return Err(ModelError::at_path(
                path,
                format!("expected {N} numbers, found {}", items.len()),
            ));
        }
        let mut out: [Scalar; N] = std::array::from_fn(|_| Scalar::Number(0.0));
        for (k, (o, item)) in out.iter_mut().zip(items).enumerate() {
            *o = self.scalar(item, &format!("{path}[{k}]"))?.0;
        }
        Ok(out)
    }

    fn placement(&self, v: &Value, path: &str) -> Result<Placement> {
        let mut o = Obj::new(v, path.to_string())?;
        let placement = self.placement_fields(&mut o)?;
        o.finish()?;
        Ok(placement)
    }

    /// Reads `position` and `rotation` from an object (which may hold other keys).
    fn placement_fields(&self, o: &mut Obj<'_>) -> Result<Placement> {
        let position = match o.get("position") {
            Some(v) => self.vector::<3>(v, &o.at("position"))?,
            None => Placement::default().position,
        };
        let rotation = match o.get("rotation") {
            None => Rotation::Identity,
            Some(v) => self.rotation(v, &o.at("rotation"))?,
        };
        let placement = Placement { position, rotation };
        placement
            .evaluate(&self.values, self.units.angle.radians(), self.time)
            .map_err(|p| {
                let sep = if o.path.is_empty() { "" } else { "." };
                ModelError::at_path(format!("{}{sep}{}", o.path, p.sub_path), p.message)
            })?;
        Ok(placement)
    }

    fn rotation(&self, v: &Value, path: &str) -> Result<Rotation> {
        let mut o = Obj::new(v, path.to_string())?;
        let forms = ["quaternion", "axis", "matrix"];
        let given: Vec<&str> = forms
            .iter()
            .copied()
            .filter(|k| o.map.contains_key(*k))
            .collect();
        let rotation = match given.as_slice() {
            ["quaternion"] => {
                Rotation::Quaternion(self.vector::<4>(o.req("quaternion")?, &o.at("quaternion"))?)
            }
            ["axis"] => {
                let axis = self.vector::<3>(o.req("axis")?, &o.at("axis"))?;
                let angle = self.scalar(o.req("angle")?, &o.at("angle"))?.0;
                Rotation::AxisAngle { axis, angle }
            }
            ["matrix"] => {
                let rows = array(o.req("matrix")?, &o.at("matrix"))?;
                if rows.len() != 3 {
                    return Err(ModelError::at_path(
                        o.at("matrix"),
                        format!("expected 3 rows, found {}", rows.len()),
                    ));
                }
                let mut m: [[Scalar; 3]; 3] =
                    std::array::from_fn(|_| std::array::from_fn(|_| Scalar::Number(0.0)));
                for (k, (row, v)) in m.iter_mut().zip(rows).enumerate() {
                    *row = self.vector::<3>(v, &format!("{}[{k}]", o.at("matrix")))?;
                }
                Rotation::Matrix(m)
            }
            [] => return Err(ModelError::at_path(
                path,
                "a rotation needs one of \"quaternion\", \"axis\" with \"angle\", or \"matrix\"",
            )),
            _ => {
                return Err(ModelError::at_path(
                    path,
                    format!("a rotation takes one form, found {}", given.join(" and ")),
                ))
            }
        };
        o.finish()?;
        Ok(rotation)
    }
}

fn read_part(v: &Value, path: &str, ctx: &Ctx) -> Result<Part> {
    let mut o = Obj::new(v, path.to_string())?;
    let id = o.req_str("id")?.to_string();
    if id.is_empty() {
        return Err(ModelError::at_path(
            o.at("id"),
            "a part id must not be empty",
        ));
    }
    let grounded = o.opt_bool("grounded")?;
    let placement = match o.get("placement") {
        Some(v) => ctx.placement(v, &o.at("placement"))?,
        None => Placement::default(),
    };
    let mut markers = Vec::new();
    if let Some(m) = o.get("markers") {
        let mpath = o.at("markers");
        let map = m.as_object().ok_or_else(|| {
            ModelError::at_path(&mpath, format!("expected an object, found {}", describe(m)))
        })?;
        for (name, mv) in map {
            if name.is_empty() {
                return Err(ModelError::at_path(
                    &mpath,
                    "a marker name must not be empty",
                ));
            }
            markers.push((name.clone(), ctx.placement(mv, &key_path(&mpath, name))?));
        }
    }
    let mass = match o.get("mass") {
        Some(v) => Some(read_mass(v, &o.at("mass"), ctx)?),
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
        extra,
    })
}

fn read_mass(v: &Value, path: &str, ctx: &Ctx) -> Result<Mass> {
    let mut o = Obj::new(v, path.to_string())?;
    let mass = ctx.scalar_rule(o.req("mass")?, &o.at("mass"), Rule::Positive)?;
    let center_of_mass = match o.get("center_of_mass") {
        Some(v) => ctx.vector::<3>(v, &o.at("center_of_mass"))?,
        None => Placement::default().position,
    };
    let ipath = o.at("inertia");
    let rows = array(o.req("inertia")?, &ipath)?;
    if rows.len() != 3 {
        return Err(ModelError::at_path(
            &ipath,
            format!("expected 3 rows, found {}", rows.len()),
        ));
    }
    let mut inertia: [[Scalar; 3]; 3] =
        std::array::from_fn(|_| std::array::from_fn(|_| Scalar::Number(0.0)));
    let mut m = [[0.0; 3]; 3];
    for (r, row) in rows.iter().enumerate() {
        let items = ctx.vector::<3>(row, &format!("{ipath}[{r}]"))?;
        for (c, s) in items.into_iter().enumerate() {
            m[r][c] = ctx
                .values
                .eval(&s, None)
                .map_err(|e| ModelError::at_path(format!("{ipath}[{r}][{c}]"), e.message))?;
            inertia[r][c] = s;
        }
    }
    check_inertia(&m).map_err(|message| ModelError::at_path(&ipath, message))?;
    o.finish()?;
    Ok(Mass {
        mass,
        center_of_mass,
        inertia,
    })
}

/// Symmetric, positive definite, and the principal moments satisfy the triangle
/// inequality (a physical body).
pub(crate) fn check_inertia(m: &[[f64; 3]; 3]) -> std::result::Result<(), String> {
    let scale = m
        .iter()
        .flatten()
        .fold(0.0f64, |a, x| a.max(x.abs()))
        .max(f64::MIN_POSITIVE);
    let tol = 1e-9 * scale;
    for (r, c) in [(0, 1), (0, 2), (1, 2)] {
        if (m[r][c] - m[c][r]).abs() > tol {
            return Err(format!(
                "the inertia matrix is not symmetric ([{r}][{c}] = {}, [{c}][{r}] = {})",
                m[r][c], m[c][r]
            ));
        }
    }
    // Leading minors (Sylvester's criterion).
    let d1 = m[0][0];
    let d2 = m[0][0] * m[1][1] - m[0][1] * m[1][0];
    let d3 = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    if d1 <= 0.0 || d2 <= 0.0 || d3 <= 0.0 {
        return Err("the inertia matrix is not positive definite".into());
    }
    let [a, b, c] = symmetric_eigenvalues(m);
    if a + b < c - tol || a + c < b - tol || b + c < a - tol {
        return Err(format!(
            "the principal moments of inertia ({a}, {b}, {c}) break the triangle inequality (no real body has them)"
        ));
    }
    Ok(())
}

/// Eigenvalues of a symmetric 3x3 matrix (closed form), ascending.
fn symmetric_eigenvalues(m: &[[f64; 3]; 3]) -> [f64; 3] {
    let p1 = m[0][1].powi(2) + m[0][2].powi(2) + m[1][2].powi(2);
    if p1 == 0.0 {
        let mut d = [m[0][0], m[1][1], m[2][2]];
        d.sort_by(f64::total_cmp);
        return d;
    }
    let q = (m[0][0] + m[1][1] + m[2][2]) / 3.0;
    let p2 = (m[0][0] - q).powi(2) + (m[1][1] - q).powi(2) + (m[2][2] - q).powi(2) + 2.0 * p1;
    let p = (p2 / 6.0).sqrt();
    let b: Vec<Vec<f64>> = (0..3)
        .map(|i| {
            (0..3)
                .map(|j| (m[i][j] - if i == j { q } else { 0.0 }) / p)
                .collect()
        })
        .collect();
    let det_b = b[0][0] * (b[1][1] * b[2][2] - b[1][2] * b[2][1])
        - b[0][1] * (b[1][0] * b[2][2] - b[1][2] * b[2][0])
        + b[0][2] * (b[1][0] * b[2][1] - b[1][1] * b[2][0]);
    let r = (det_b / 2.0).clamp(-1.0, 1.0);
    let phi = r.acos() / 3.0;
    let e1 = q + 2.0 * p * phi.cos();
    let e3 = q + 2.0 * p * (phi + 2.0 * std::f64::consts::PI / 3.0).cos();
    let e2 = 3.0 * q - e1 - e3;
    let mut e = [e1, e2, e3];
    e.sort_by(f64::total_cmp);
    e
}

fn read_marker_ref(v: &Value, path: &str, assembly: &Assembly, ctx: &Ctx) -> Result<MarkerRef> {
    let mut o = Obj::new(v, path.to_string())?;
    let part_id = o.req_str("part")?;
    let part_key = assembly
        .part_by_id(part_id)
        .ok_or_else(|| ModelError::at_path(o.at("part"), format!("no part has id '{part_id}'")))?;
    let marker = match o.get("marker") {
        Some(Value::String(name)) => {
            if o.map.contains_key("position") || o.map.contains_key("rotation") {
                return Err(ModelError::at_path(
                    path,
                    "give either \"marker\" or an inline \"position\"/\"rotation\", not both",
                ));
            }
            let has = assembly
                .part(part_key)
                .is_some_and(|p| p.marker(name).is_some());
            if !has {
                return Err(ModelError::at_path(
                    o.at("marker"),
                    format!("part '{part_id}' has no marker '{name}'"),
                ));
            }
            MarkerSpec::Named(name.clone())
        }
        Some(other) => {
            return Err(ModelError::at_path(
                o.at("marker"),
                format!("expected a marker name, found {}", describe(other)),
            ))
        }
        None => MarkerSpec::Inline(Box::new(ctx.placement_fields(&mut o)?)),
    };
    o.finish()?;
    Ok(MarkerRef {
        part: part_key,
        marker,
    })
}

fn read_joint(v: &Value, path: &str, assembly: &Assembly, ctx: &Ctx) -> Result<Joint> {
    let mut o = Obj::new(v, path.to_string())?;
    let id = o.req_str("id")?.to_string();
    if id.is_empty() {
        return Err(ModelError::at_path(
            o.at("id"),
            "a joint id must not be empty",
        ));
    }
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
    // A joint's inline marker may move with time (a fixed joint to it prescribes a
    // motion): it is checked at t = 0.
    let moving = Ctx {
        time: Some(0.0),
        ..ctx.clone()
    };
    let i = read_marker_ref(o.req("i")?, &o.at("i"), assembly, &moving)?;
    let j = read_marker_ref(o.req("j")?, &o.at("j"), assembly, &moving)?;
    if i.part == j.part {
        return Err(ModelError::at_path(
            format!("{path}.j.part"),
            "the joint connects a part to itself",
        ));
    }
    let suppressed = o.opt_bool("suppressed")?;
    let mut fields = Vec::new();
    for field in Field::ALL {
        let given = o.get(field.key());
        match (joint_type.field_use(field), given) {
            (Some(usage), Some(v)) => {
                fields.push((field, ctx.scalar_rule(v, &o.at(field.key()), usage.rule)?))
            }
            (Some(usage), None) if usage.required => {
                return Err(ModelError::at_path(
                    path,
                    format!("a {} joint needs '{}'", joint_type.name(), field.key()),
                ))
            }
            (None, Some(_)) => {
                return Err(ModelError::at_path(
                    o.at(field.key()),
                    format!(
                        "a {} joint has no field '{}'",
                        joint_type.name(),
                        field.key()
                    ),
                ))
            }
            _ => {}
        }
    }
    // A cam's profile is `profile` (on marker j); a curve contact names both sides.
    let j_key = if joint_type.takes_profile_i() {
        "profile_j"
    } else {
        "profile"
    };
    let mut profiles = [None, None];
    for (slot, key, takes) in [
        (0, "profile_i", joint_type.takes_profile_i()),
        (1, j_key, joint_type.takes_profile()),
    ] {
        profiles[slot] = match (takes, o.get(key)) {
            (true, Some(v)) => Some(read_profile(v, &o.at(key), ctx)?),
            (true, None) => {
                return Err(ModelError::at_path(
                    path,
                    format!("a {} joint needs '{key}'", joint_type.name()),
                ))
            }
            (false, Some(_)) => {
                return Err(ModelError::at_path(
                    o.at(key),
                    format!("a {} joint has no '{key}'", joint_type.name()),
                ))
            }
            (false, None) => None,
        };
    }
    for stray in ["profile", "profile_i", "profile_j"] {
        let used = (stray == "profile_i" && joint_type.takes_profile_i())
            || (stray == j_key && joint_type.takes_profile());
        if !used && o.get(stray).is_some() {
            return Err(ModelError::at_path(
                o.at(stray),
                format!("a {} joint has no '{stray}'", joint_type.name()),
            ));
        }
    }
    let [profile_i, profile] = profiles;
    let limits = match o.get("limits") {
        Some(v) => read_limits(v, &o.at("limits"), joint_type, ctx)?,
        None => Limits::default(),
    };
    let extra = o.extra();
    o.finish()?;
    Ok(Joint {
        id,
        joint_type,
        i,
        j,
        suppressed,
        fields,
        profile,
        profile_i,
        limits,
        extra,
    })
}

fn read_profile(v: &Value, path: &str, ctx: &Ctx) -> Result<CamProfile> {
    let mut o = Obj::new(v, path.to_string())?;
    let profile = if let Some(c) = o.get("circle") {
        let mut circle = Obj::new(c, o.at("circle"))?;
        let radius =
            ctx.scalar_rule(circle.req("radius")?, &circle.at("radius"), Rule::Positive)?;
        circle.finish()?;
        CamProfile::Circle { radius }
    } else if let Some(p) = o.get("polar") {
        let ppath = o.at("polar");
        let items = array(p, &ppath)?;
        if !(3..=MAX_PROFILE_POINTS).contains(&items.len()) {
            return Err(ModelError::at_path(
                &ppath,
                format!(
                    "a polar profile has 3 to {MAX_PROFILE_POINTS} radii, found {}",
                    items.len()
                ),
            ));
        }
        let radii = items
            .iter()
            .enumerate()
            .map(|(k, item)| ctx.scalar_rule(item, &format!("{ppath}[{k}]"), Rule::Positive))
            .collect::<Result<Vec<_>>>()?;
        CamProfile::Polar(radii)
    } else if let Some(p) = o.get("points") {
        let ppath = o.at("points");
        let items = array(p, &ppath)?;
        if !(3..=MAX_PROFILE_POINTS).contains(&items.len()) {
            return Err(ModelError::at_path(
                &ppath,
                format!(
                    "a points profile has 3 to {MAX_PROFILE_POINTS} points, found {}",
                    items.len()
                ),
            ));
        }
        let mut points = Vec::with_capacity(items.len());
        for (k, item) in items.iter().enumerate() {
            let ipath = format!("{ppath}[{k}]");
            let xy = array(item, &ipath)?;
            let [x, y] = xy.as_slice() else {
                return Err(ModelError::at_path(
                    &ipath,
                    format!("a profile point is [x, y], found {} numbers", xy.len()),
                ));
            };
            let (sx, x) = ctx.scalar(x, &format!("{ipath}[0]"))?;
            let (sy, y) = ctx.scalar(y, &format!("{ipath}[1]"))?;
            points.push(([sx, sy], [x, y]));
        }
        // Each point must differ from the one before it (the last from the first: the
        // curve closes by itself), or the curve would stop there and lose its tangent.
        let n = points.len();
        for k in 0..n {
            let (a, b) = (points[(k + n - 1) % n].1, points[k].1);
            let scale = a[0].abs().max(a[1].abs()).max(b[0].abs()).max(b[1].abs());
            if (a[0] - b[0]).hypot(a[1] - b[1]) <= 1e-12 * scale.max(1.0) {
                let what = if k == 0 {
                    format!(
                        "the last point repeats the first (point {}); the curve closes by itself",
                        n - 1
                    )
                } else {
                    format!("point {k} repeats point {}", k - 1)
                };
                return Err(ModelError::at_path(format!("{ppath}[{k}]"), what));
            }
        }
        CamProfile::Points(points.into_iter().map(|(s, _)| s).collect())
    } else {
        return Err(ModelError::at_path(
            path,
            "a profile is {\"circle\": {\"radius\": R}}, {\"polar\": [r0, r1, ...]} or \
             {\"points\": [[x0, y0], [x1, y1], ...]}",
        ));
    };
    o.finish()?;
    Ok(profile)
}

fn read_limits(v: &Value, path: &str, joint_type: JointType, ctx: &Ctx) -> Result<Limits> {
    let mut o = Obj::new(v, path.to_string())?;
    let mut limits = Limits::default();
    for field in [Field::Angle, Field::Distance] {
        let Some(range) = o.get(field.key()) else {
            continue;
        };
        let rpath = o.at(field.key());
        if !joint_type.has_free(field) {
            return Err(ModelError::at_path(
                &rpath,
                format!(
                    "a {} joint has no free {} to limit",
                    joint_type.name(),
                    field.key()
                ),
            ));
        }
        let items = array(range, &rpath)?;
        if items.len() != 2 {
            return Err(ModelError::at_path(
                &rpath,
                format!("expected [min, max], found {} values", items.len()),
            ));
        }
        let mut sides = [None, None];
        for (k, (side, item)) in sides.iter_mut().zip(items).enumerate() {
            if !item.is_null() {
                *side = Some(ctx.scalar(item, &format!("{rpath}[{k}]"))?);
            }
        }
        let [lo, hi] = sides;
        if let (Some((_, a)), Some((_, b))) = (&lo, &hi) {
            if a > b {
                return Err(ModelError::at_path(
                    &rpath,
                    format!("the minimum {a} is above the maximum {b}"),
                ));
            }
        }
        if lo.is_none() && hi.is_none() {
            return Err(ModelError::at_path(
                &rpath,
                "a limit needs a minimum, a maximum or both (null is an open side)",
            ));
        }
        let range = Range {
            min: lo.map(|(s, _)| s),
            max: hi.map(|(s, _)| s),
        };
        match field {
            Field::Angle => limits.angle = Some(range),
            _ => limits.distance = Some(range),
        }
    }
    o.finish()?;
    Ok(limits)
}

fn read_motion(v: &Value, path: &str, assembly: &Assembly, ctx: &Ctx) -> Result<Motion> {
    let mut o = Obj::new(v, path.to_string())?;
    let joint_id = o.req_str("joint")?;
    let joint = assembly.joint_by_id(joint_id).ok_or_else(|| {
        ModelError::at_path(o.at("joint"), format!("no joint has id '{joint_id}'"))
    })?;
    let (coordinate, value) = match (o.get("angle"), o.get("distance")) {
        (Some(v), None) => (Coordinate::Angle, (v, o.at("angle"))),
        (None, Some(v)) => (Coordinate::Distance, (v, o.at("distance"))),
        (None, None) => {
            return Err(ModelError::at_path(
                path,
                "a motion needs \"angle\" or \"distance\"",
            ))
        }
        (Some(_), Some(_)) => {
            return Err(ModelError::at_path(
                path,
                "a motion drives one coordinate: \"angle\" or \"distance\", not both",
            ))
        }
    };
    let scalar = scalar_syntax(value.0, &value.1)?;
    ctx.values
        .eval(&scalar, Some(0.0))
        .map_err(|e| ModelError::at_path(&value.1, e.message))?;
    if let Some(j) = assembly.joint(joint) {
        if !j.joint_type.has_free(coordinate.field()) {
            return Err(ModelError::at_path(
                &value.1,
                format!(
                    "a {} joint has no free {} to drive",
                    j.joint_type.name(),
                    coordinate.field().key()
                ),
            ));
        }
    }
    o.finish()?;
    Ok(Motion {
        joint,
        coordinate,
        value: scalar,
    })
}

fn read_forces(v: &Value, assembly: &Assembly, ctx: &Ctx) -> Result<Forces> {
    let mut o = Obj::new(v, "forces".into())?;
    let mut forces = Forces::default();
    if let Some(g) = o.get("gravity") {
        forces.gravity = Some(ctx.vector::<3>(g, &o.at("gravity"))?);
    }
    if let Some(springs) = o.get("springs") {
        let spath = o.at("springs");
        for (k, s) in array(springs, &spath)?.iter().enumerate() {
            let path = format!("{spath}[{k}]");
            let mut so = Obj::new(s, path.clone())?;
            let id = so.req_str("id")?.to_string();
            if forces.springs.iter().any(|x| x.id == id) {
                return Err(ModelError::at_path(
                    so.at("id"),
                    format!("spring id '{id}' is used twice"),
                ));
            }
            let i = read_marker_ref(so.req("i")?, &so.at("i"), assembly, ctx)?;
            let j = read_marker_ref(so.req("j")?, &so.at("j"), assembly, ctx)?;
            let stiffness =
                ctx.scalar_rule(so.req("stiffness")?, &so.at("stiffness"), Rule::NonNegative)?;
            let rest_length = ctx.scalar_rule(
                so.req("rest_length")?,
                &so.at("rest_length"),
                Rule::NonNegative,
            )?;
            let damping = match so.get("damping") {
                Some(d) => ctx.scalar_rule(d, &so.at("damping"), Rule::NonNegative)?,
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
        for (k, l) in array(loads, &lpath)?.iter().enumerate() {
            let mut lo = Obj::new(l, format!("{lpath}[{k}]"))?;
            let part_id = lo.req_str("part")?;
            let part = assembly.part_by_id(part_id).ok_or_else(|| {
                ModelError::at_path(lo.at("part"), format!("no part has id '{part_id}'"))
            })?;
            let zero = || Placement::default().position;
            let force = match lo.get("force") {
                Some(f) => ctx.vector::<3>(f, &lo.at("force"))?,
                None => zero(),
            };
            let torque = match lo.get("torque") {
                Some(t) => ctx.vector::<3>(t, &lo.at("torque"))?,
                None => zero(),
            };
            let at = match lo.get("at") {
                Some(a) => Some(ctx.vector::<3>(a, &lo.at("at"))?),
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

fn read_simulation(v: &Value, ctx: &Ctx) -> Result<Simulation> {
    let mut o = Obj::new(v, "simulation".into())?;
    let end = ctx.scalar_rule(o.req("end")?, &o.at("end"), Rule::Positive)?;
    let step = ctx.scalar_rule(o.req("step")?, &o.at("step"), Rule::Positive)?;
    let output_step = match o.get("output_step") {
        Some(s) => Some(ctx.scalar_rule(s, &o.at("output_step"), Rule::Positive)?),
        None => None,
    };
    o.finish()?;
    Ok(Simulation {
        end,
        step,
        output_step,
    })
}
