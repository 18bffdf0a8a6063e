//! JSON values read strictly (a key written twice is an error) and objects read key by
//! key, so that every key not read is refused with its path.

use std::borrow::Cow;
use std::cell::RefCell;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::assembly::Extra;
use crate::error::ModelError;
pub(super) use crate::validate::key_path;

pub(super) type Result<T> = std::result::Result<T, ModelError>;

/// A JSON value read strictly: a key written twice in one object is an error (plain
/// `serde_json::Value` keeps the last one and drops the other without a word).
pub(super) struct Strict(pub(super) Value);

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
            // Other programs' data is kept as its text: no tree of values (a 48 MB
            // `extra` array would take gigabytes as one), nothing rewritten.
            if key == "extra" {
                let raw: Box<RawValue> = map.next_value()?;
                out.insert(key, raw_marker(raw));
                continue;
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The only key of the object that stands for a raw `extra` text in a value tree (a key
/// no JSON text can make: object keys read from text that start with NUL are refused
/// nowhere, but they never reach this marker's place, see [`resolved`]).
const RAW_EXTRA: &str = "\u{0}extra";

fn raw_marker(raw: Box<RawValue>) -> Value {
    let text: Box<str> = raw.into();
    let mut m = Map::new();
    m.insert(RAW_EXTRA.to_string(), Value::String(text.into_string()));
    Value::Object(m)
}

/// The raw text behind a marker.
fn raw_text(v: &Value) -> Option<&str> {
    match v {
        Value::Object(m) if m.len() == 1 => m.get(RAW_EXTRA)?.as_str(),
        _ => None,
    }
}

/// `v` as a value tree: a map of user-chosen names (markers, parameters) may name an
/// entry "extra", which the reader kept as text; it is parsed here like any value.
pub(super) fn resolved(v: &Value) -> Result<Cow<'_, Value>> {
    match raw_text(v) {
        Some(text) => serde_json::from_str::<Strict>(text)
            .map(|s| Cow::Owned(s.0))
            .map_err(|e| ModelError::at_path("extra", format!("not valid JSON: {e}"))),
        None => Ok(Cow::Borrowed(v)),
    }
}

fn extra_of(v: &Value) -> Extra {
    match raw_text(v) {
        Some(text) => Extra(text.into()),
        None => Extra::from_value(v),
    }
}

thread_local! {
    /// `extra` values met inside sub-objects while a document is read (see
    /// [`collect_nested`]): the sub-object's path and the value.
    static NESTED: RefCell<Option<Vec<(String, Extra)>>> = const { RefCell::new(None) };
}

/// Runs a read, collecting the `extra` values of every object that does not read its
/// own (markers, placements, rotations, mass, units, marker references, motions,
/// forces, simulation): [`Obj::finish`] hands them here instead of refusing them.
pub(super) fn collect_nested<T>(read: impl FnOnce() -> T) -> (T, Vec<(String, Extra)>) {
    let outer = NESTED.with(|n| n.borrow_mut().replace(Vec::new()));
    let result = read();
    let nested = NESTED.with(|n| std::mem::replace(&mut *n.borrow_mut(), outer));
    (result, nested.unwrap_or_default())
}

pub(super) fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn array<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>> {
    v.as_array().ok_or_else(|| {
        ModelError::at_path(path, format!("expected an array, found {}", describe(v)))
    })
}

/// An object being read: tracks which keys were used so the rest can be refused.
pub(super) struct Obj<'a> {
    pub(super) path: String,
    pub(super) map: &'a Map<String, Value>,
    used: Vec<&'a str>,
}

impl<'a> Obj<'a> {
    pub(super) fn new(v: &'a Value, path: String) -> Result<Self> {
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

    pub(super) fn at(&self, key: &str) -> String {
        key_path(&self.path, key)
    }

    pub(super) fn get(&mut self, key: &str) -> Option<&'a Value> {
        let (k, v) = self.map.get_key_value(key)?;
        self.used.push(k.as_str());
        Some(v)
    }

    pub(super) fn req(&mut self, key: &str) -> Result<&'a Value> {
        self.get(key)
            .ok_or_else(|| ModelError::at_path(&self.path, format!("missing '{key}'")))
    }

    pub(super) fn req_str(&mut self, key: &str) -> Result<&'a str> {
        let v = self.req(key)?;
        v.as_str().ok_or_else(|| {
            ModelError::at_path(
                self.at(key),
                format!("expected a string, found {}", describe(v)),
            )
        })
    }

    pub(super) fn opt_str(&mut self, key: &str) -> Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(ModelError::at_path(
                self.at(key),
                format!("expected a string, found {}", describe(v)),
            )),
        }
    }

    pub(super) fn opt_bool(&mut self, key: &str) -> Result<bool> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(ModelError::at_path(
                self.at(key),
                format!("expected true or false, found {}", describe(v)),
            )),
        }
    }

    pub(super) fn extra(&mut self) -> Option<Extra> {
        self.get("extra").map(extra_of)
    }

    /// Refuses every key not read, but an `extra` (kept for the writer, see
    /// [`collect_nested`]).
    pub(super) fn finish(mut self) -> Result<()> {
        if !self.used.contains(&"extra") {
            if let Some(v) = self.get("extra") {
                let kept = NESTED.with(|n| {
                    n.borrow_mut()
                        .as_mut()
                        .map(|list| list.push((self.path.clone(), extra_of(v))))
                        .is_some()
                });
                if !kept {
                    self.used.pop();
                }
            }
        }
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
