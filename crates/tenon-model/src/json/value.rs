//! JSON values read strictly (a key written twice is an error) into a lean tree that
//! borrows its keys and strings from the text where it can, and objects read key by key,
//! so that every key not read is refused with its path.

use std::borrow::Cow;
use std::cell::RefCell;

use rustc_hash::FxHashSet;
use serde_json::value::RawValue;
use serde_json::Number;

use crate::assembly::Extra;
use crate::error::ModelError;
pub(super) use crate::validate::key_path;

pub(super) type Result<T> = std::result::Result<T, ModelError>;

/// A JSON value as read: strings borrowed from the text unless they hold escapes,
/// objects as their entries in file order (a document's objects have a handful of keys;
/// a map of markers or parameters is walked, not searched), `extra` values kept as their
/// text. A 10,000-part file makes a tree of a few hundred thousand of these; a tree of
/// `serde_json::Value`s (an index map per object, every key and string owned) took
/// several times the memory and most of the reading time.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
    /// The text of an `extra` value (other programs' data: kept as written, never
    /// parsed into a tree, see [`resolved`]).
    Raw(&'a str),
}

/// An object's entries in file order.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Object<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> Object<'a> {
    pub(super) fn get_key_value(&self, key: &str) -> Option<(&str, &Json<'a>)> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(k, v)| (k.as_ref(), v))
    }
    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }
    pub(super) fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.iter().map(|(k, _)| k.as_ref())
    }
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &Json<'a>)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl<'a> Json<'a> {
    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }
    pub(super) fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Number(n) => n.as_f64(),
            _ => None,
        }
    }
    pub(super) fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.as_u64(),
            _ => None,
        }
    }
    pub(super) fn as_array(&self) -> Option<&Vec<Json<'a>>> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }
    pub(super) fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Json::Object(o) => Some(o),
            _ => None,
        }
    }
    pub(super) fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }
}

/// Reads `text` strictly (see [`Json`]).
pub(super) fn parse_strict(text: &str) -> std::result::Result<Json<'_>, serde_json::Error> {
    serde_json::from_str::<Strict<'_>>(text).map(|s| s.0)
}

/// The deserialisation of a [`Json`]: a key written twice in one object is an error
/// (plain `serde_json::Value` keeps the last one and drops the other without a word).
struct Strict<'a>(Json<'a>);

impl<'de> serde::Deserialize<'de> for Strict<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

/// An object key, borrowed when the text allows.
struct Key<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> serde::de::Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

struct StrictVisitor;

/// Objects with more keys than this check repeated keys with a set, not a scan.
const SCANNED_KEYS: usize = 16;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Json<'de>, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v)))
    }
    fn visit_unit<E>(self) -> std::result::Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Json<'de>, A::Error> {
        let mut out: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        let mut seen: FxHashSet<Cow<'de, str>> = FxHashSet::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let twice = if out.len() < SCANNED_KEYS {
                out.iter().any(|(k, _)| *k == key)
            } else {
                if seen.is_empty() {
                    seen.extend(out.iter().map(|(k, _)| k.clone()));
                }
                !seen.insert(key.clone())
            };
            if twice {
                return Err(serde::de::Error::custom(format!(
                    "key '{key}' appears twice"
                )));
            }
            // Other programs' data is kept as its text: no tree of values (a 48 MB
            // `extra` array would take gigabytes as one), nothing rewritten.
            if key == "extra" {
                let raw: &'de RawValue = map.next_value()?;
                out.push((key, Json::Raw(raw.get())));
                continue;
            }
            let Strict(v) = map.next_value()?;
            out.push((key, v));
        }
        Ok(Json::Object(Object(out)))
    }
}

/// `v` as a value tree: a map of user-chosen names (markers, parameters) may name an
/// entry "extra", which the reader kept as text; it is parsed here like any value.
pub(super) fn resolved<'v, 'a: 'v>(v: &'v Json<'a>) -> Result<Cow<'v, Json<'a>>> {
    match v {
        Json::Raw(text) => parse_strict(text)
            .map(Cow::Owned)
            .map_err(|e| ModelError::at_path("extra", format!("not valid JSON: {e}"))),
        _ => Ok(Cow::Borrowed(v)),
    }
}

/// The `extra` under a key: always kept as text by the reader.
fn extra_of(v: &Json<'_>) -> Extra {
    match v {
        Json::Raw(text) => Extra((*text).into()),
        other => Extra(to_text(other).into()),
    }
}

/// A tree written back as compact JSON text (only for a value the reader did not keep
/// as text, which it always does under `extra`).
fn to_text(v: &Json<'_>) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => serde_json::Value::String(s.to_string()).to_string(),
        Json::Raw(text) => (*text).to_string(),
        Json::Array(items) => {
            let inner: Vec<String> = items.iter().map(to_text).collect();
            format!("[{}]", inner.join(","))
        }
        Json::Object(o) => {
            let inner: Vec<String> = o
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        serde_json::Value::String(k.to_string()),
                        to_text(v)
                    )
                })
                .collect();
            format!("{{{}}}", inner.join(","))
        }
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

pub(super) fn describe(v: &Json<'_>) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) | Json::Raw(_) => "an object",
    }
}

pub(super) fn array<'v, 'a>(v: &'v Json<'a>, path: &str) -> Result<&'v Vec<Json<'a>>> {
    v.as_array().ok_or_else(|| {
        ModelError::at_path(path, format!("expected an array, found {}", describe(v)))
    })
}

/// An object being read: tracks which keys were used so the rest can be refused.
pub(super) struct Obj<'v, 'a> {
    pub(super) path: String,
    pub(super) map: &'v Object<'a>,
    used: Vec<&'v str>,
}

impl<'v, 'a> Obj<'v, 'a> {
    pub(super) fn new(v: &'v Json<'a>, path: String) -> Result<Self> {
        match v {
            Json::Object(map) => Ok(Obj {
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

    pub(super) fn get(&mut self, key: &str) -> Option<&'v Json<'a>> {
        let (k, v) = self.map.get_key_value(key)?;
        self.used.push(k);
        Some(v)
    }

    pub(super) fn req(&mut self, key: &str) -> Result<&'v Json<'a>> {
        self.get(key)
            .ok_or_else(|| ModelError::at_path(&self.path, format!("missing '{key}'")))
    }

    pub(super) fn req_str(&mut self, key: &str) -> Result<&'v str> {
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
            Some(Json::String(s)) => Ok(Some(s.to_string())),
            Some(v) => Err(ModelError::at_path(
                self.at(key),
                format!("expected a string, found {}", describe(v)),
            )),
        }
    }

    pub(super) fn opt_bool(&mut self, key: &str) -> Result<bool> {
        match self.get(key) {
            None => Ok(false),
            Some(Json::Bool(b)) => Ok(*b),
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
            if !self.used.contains(&key) {
                return Err(ModelError::at_path(
                    key_path(&self.path, key),
                    format!("unknown key '{key}' (a typo? unknown keys are refused; put other programs' data under \"extra\")"),
                ));
            }
        }
        Ok(())
    }
}
