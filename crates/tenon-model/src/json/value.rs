//! JSON values read strictly (a key written twice is an error) into a lean tree held in
//! an arena, which borrows its keys and strings from the text where it can, and objects
//! read key by key, so that every key not read is refused with its path.

use std::cell::RefCell;

use bumpalo::Bump;
use rustc_hash::FxHashSet;
use serde::de::DeserializeSeed;
use serde_json::value::RawValue;
use serde_json::Number;

use crate::assembly::Extra;
use crate::error::ModelError;
use crate::validate::is_plain_key;
pub(super) use crate::validate::key_path;

pub(super) type Result<T> = std::result::Result<T, ModelError>;

/// A JSON value as read: strings borrowed from the text (or, holding escapes, written
/// into the arena), arrays and objects as slices in the arena (objects' entries in file
/// order: a document's objects have a handful of keys; a map of markers or parameters
/// is walked, not searched), `extra` values kept as their text. A 10,000-part file makes
/// a tree of a few hundred thousand of these: one allocation each (and as many frees)
/// was a fifth of reading it; the arena is a few large blocks, freed at once. Nothing
/// in it owns memory (the arena runs no destructors).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(&'a str),
    Array(&'a [Json<'a>]),
    Object(Object<'a>),
    /// A value kept as its text: an `extra` (other programs' data: kept as written,
    /// never parsed into a tree, see [`resolved`]), or a document's `parts` or `joints`
    /// (read an item at a time, see [`each_item`]).
    Raw(&'a str),
}

/// An object's entries in file order.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Object<'a>(&'a [(&'a str, Json<'a>)]);

impl<'a> Object<'a> {
    #[cfg(test)]
    pub(super) fn get_key_value(&self, key: &str) -> Option<(&'a str, &'a Json<'a>)> {
        self.0.iter().find(|(k, _)| *k == key).map(|(k, v)| (*k, v))
    }
    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| *k == key)
    }
    pub(super) fn keys(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.0.iter().map(|(k, _)| *k)
    }
    pub(super) fn iter(&self) -> impl Iterator<Item = (&'a str, &'a Json<'a>)> + 'a {
        self.0.iter().map(|(k, v)| (*k, v))
    }
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl<'a> Json<'a> {
    pub(super) fn as_str(&self) -> Option<&'a str> {
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
    pub(super) fn as_array(&self) -> Option<&'a [Json<'a>]> {
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

/// Reads `text` strictly (see [`Json`]) into `arena`.
pub(super) fn parse_strict<'a>(
    text: &'a str,
    arena: &'a Bump,
) -> std::result::Result<Json<'a>, serde_json::Error> {
    parse_with(text, arena, false)
}

/// A document's keys whose values are kept as their text by [`parse_document`], to be
/// read an item at a time ([`each_item`]).
const ITEM_LISTS: [&str; 2] = ["parts", "joints"];

/// [`parse_strict`] for a whole document: the values of its `parts` and `joints` are
/// kept as their text (checked as JSON, not made into a tree). A 10,000-part file's
/// tree was tens of megabytes, written once and read back from memory; a part's or a
/// joint's own tree, read into an arena emptied for the next, stays in the cache.
pub(super) fn parse_document<'a>(
    text: &'a str,
    arena: &'a Bump,
) -> std::result::Result<Json<'a>, serde_json::Error> {
    parse_with(text, arena, true)
}

fn parse_with<'a>(
    text: &'a str,
    arena: &'a Bump,
    lists_as_text: bool,
) -> std::result::Result<Json<'a>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut scratch = Scratch::default();
    let value = Strict {
        arena,
        scratch: &mut scratch,
        lists_as_text,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Why [`each_item`] stopped: the text is not JSON (or repeats a key), or `each` refused
/// an item.
pub(super) enum ItemsError {
    /// Not JSON; the place is in the list's text (line 1 is the list's first).
    Json(serde_json::Error),
    /// What `each` returned.
    Model(ModelError),
}

/// Reads `text`, a JSON array, an item at a time, each read strictly into an arena that
/// is emptied for the next one and handed to `each` with its index.
pub(super) fn each_item<F>(text: &str, mut each: F) -> std::result::Result<(), ItemsError>
where
    F: for<'b> FnMut(usize, &Json<'b>, &'b Bump) -> Result<()>,
{
    let mut de = serde_json::Deserializer::from_str(text);
    let mut failed = None;
    let read = serde::Deserializer::deserialize_seq(
        &mut de,
        Items {
            each: &mut each,
            failed: &mut failed,
        },
    );
    if let Some(e) = failed {
        return Err(ItemsError::Model(e));
    }
    read.and_then(|()| de.end()).map_err(ItemsError::Json)
}

/// The array visitor of [`each_item`]: a problem `each` finds is kept in `failed` (the
/// deserialiser's own error type cannot carry it).
struct Items<'f, F> {
    each: &'f mut F,
    failed: &'f mut Option<ModelError>,
}

impl<'de, F> serde::de::Visitor<'de> for Items<'_, F>
where
    F: for<'b> FnMut(usize, &Json<'b>, &'b Bump) -> Result<()>,
{
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<(), A::Error> {
        let mut arena = Bump::new();
        // The lists' room as the last item left it (items are mostly alike).
        let mut room = (0, 0);
        let mut k = 0;
        loop {
            arena.reset();
            let mut scratch = Scratch {
                items: Vec::with_capacity(room.0),
                entries: Vec::with_capacity(room.1),
            };
            let item = seq.next_element_seed(Strict {
                arena: &arena,
                scratch: &mut scratch,
                lists_as_text: false,
            })?;
            room = (scratch.items.capacity(), scratch.entries.capacity());
            let Some(item) = item else {
                return Ok(());
            };
            if let Err(e) = (self.each)(k, &item, &arena) {
                *self.failed = Some(e);
                return Err(serde::de::Error::custom("refused"));
            }
            k += 1;
        }
    }
}

/// The deserialisation of a [`Json`] into an arena: a key written twice in one object
/// is an error (plain `serde_json::Value` keeps the last one and drops the other
/// without a word). Strings are borrowed from the text (`'de`, which outlives the
/// arena's `'a`).
struct Strict<'a, 's> {
    arena: &'a Bump,
    scratch: &'s mut Scratch<'a>,
    /// The document's own object: its [`ITEM_LISTS`] are kept as text.
    lists_as_text: bool,
}

/// The items and entries of the arrays and objects being read, innermost last: each is
/// copied into the arena at its exact length once read. Grown in the arena itself, each
/// list left its outgrown copies behind (a list is rarely the arena's last allocation
/// while it grows), and a 10,000-link chain's tree took about half as much again.
#[derive(Default)]
struct Scratch<'a> {
    items: Vec<Json<'a>>,
    entries: Vec<(&'a str, Json<'a>)>,
}

impl<'a> Strict<'a, '_> {
    /// The same reading, for a value inside the one being read.
    fn inner(&mut self) -> Strict<'a, '_> {
        Strict {
            arena: self.arena,
            scratch: &mut *self.scratch,
            lists_as_text: false,
        }
    }
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Strict<'a, '_> {
    type Value = Json<'a>;
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Json<'a>, D::Error> {
        d.deserialize_any(self)
    }
}

/// An object key: borrowed from the text, or written into the arena (a key with
/// escapes).
struct Key<'a>(&'a Bump);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Key<'a> {
    type Value = &'a str;
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<&'a str, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de: 'a, 'a> serde::de::Visitor<'de> for Key<'a> {
    type Value = &'a str;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<&'a str, E> {
        Ok(v)
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<&'a str, E> {
        Ok(self.0.alloc_str(v))
    }
}

/// Objects with more keys than this check repeated keys with a set, not a scan.
const SCANNED_KEYS: usize = 16;

impl<'de: 'a, 'a> serde::de::Visitor<'de> for Strict<'a, '_> {
    type Value = Json<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Json<'a>, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Json<'a>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Json<'a>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Json<'a>, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Json<'a>, E> {
        Ok(Json::String(v))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Json<'a>, E> {
        Ok(Json::String(self.arena.alloc_str(v)))
    }
    fn visit_unit<E>(self) -> std::result::Result<Json<'a>, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Json<'a>, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        mut self,
        mut seq: A,
    ) -> std::result::Result<Json<'a>, A::Error> {
        let base = self.scratch.items.len();
        while let Some(v) = seq.next_element_seed(self.inner())? {
            self.scratch.items.push(v);
        }
        let items = self
            .arena
            .alloc_slice_fill_iter(self.scratch.items.drain(base..));
        Ok(Json::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        mut self,
        mut map: A,
    ) -> std::result::Result<Json<'a>, A::Error> {
        let base = self.scratch.entries.len();
        let mut seen: FxHashSet<&'a str> = FxHashSet::default();
        while let Some(key) = map.next_key_seed(Key(self.arena))? {
            let out = self.scratch.entries.get(base..).unwrap_or(&[]);
            let twice = if out.len() < SCANNED_KEYS {
                out.iter().any(|(k, _)| *k == key)
            } else {
                if seen.is_empty() {
                    seen.extend(out.iter().map(|(k, _)| *k));
                }
                !seen.insert(key)
            };
            if twice {
                return Err(serde::de::Error::custom(format!(
                    "key '{key}' appears twice"
                )));
            }
            // Other programs' data is kept as its text: no tree of values (a 48 MB
            // `extra` array would take gigabytes as one), nothing rewritten. So are a
            // document's parts and joints, read an item at a time later.
            if key == "extra" || (self.lists_as_text && ITEM_LISTS.contains(&key)) {
                let raw: &'de RawValue = map.next_value()?;
                self.scratch.entries.push((key, Json::Raw(raw.get())));
                continue;
            }
            let v = map.next_value_seed(self.inner())?;
            self.scratch.entries.push((key, v));
        }
        let entries = self
            .arena
            .alloc_slice_fill_iter(self.scratch.entries.drain(base..));
        Ok(Json::Object(Object(entries)))
    }
}

/// `v` as a value tree: a map of user-chosen names (markers, parameters) may name an
/// entry "extra", which the reader kept as text; it is parsed here (into `arena`) like
/// any value.
pub(super) fn resolved<'a>(v: &Json<'a>, arena: &'a Bump) -> Result<Json<'a>> {
    match v {
        Json::Raw(text) => parse_strict(text, arena)
            .map_err(|e| ModelError::at_path("extra", format!("not valid JSON: {e}"))),
        _ => Ok(v.clone()),
    }
}

/// The `extra` under a key: always kept as text by the reader.
fn extra_of(v: &Json<'_>) -> Extra {
    match v {
        Json::Raw(text) => Extra::from_json_text((*text).into()),
        other => Extra::from_json_text(to_text(other).into()),
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

pub(super) fn array<'a>(v: &Json<'a>, at: At<'_>) -> Result<&'a [Json<'a>]> {
    v.as_array()
        .ok_or_else(|| ModelError::at_path(at, format!("expected an array, found {}", describe(v))))
}

/// Where a value sits in the document: a chain of keys and indices kept on the
/// readers' stacks, written out (as errors print paths: `parts[3].markers.pin`,
/// `parameters["a b"]`) only when an error or a kept `extra` needs it. Paths had been
/// strings formed for every object and field entered, a tenth of reading a large file.
#[derive(Debug, Clone, Copy)]
pub(super) enum At<'p> {
    /// A path given whole (the document is `Root("")`).
    Root(&'p str),
    /// A key inside the object at the parent path.
    Key(&'p At<'p>, &'p str),
    /// An item of the array at the parent path.
    Index(&'p At<'p>, usize),
}

impl<'p> At<'p> {
    /// The item `k` of the array here.
    pub(super) fn index(&'p self, k: usize) -> At<'p> {
        At::Index(self, k)
    }

    /// The key `key` of the object here.
    pub(super) fn key(&'p self, key: &'p str) -> At<'p> {
        At::Key(self, key)
    }

    fn is_empty(&self) -> bool {
        matches!(self, At::Root(""))
    }
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            At::Root(path) => f.write_str(path),
            At::Key(parent, key) => {
                parent.fmt(f)?;
                if is_plain_key(key) {
                    if !parent.is_empty() {
                        f.write_str(".")?;
                    }
                    f.write_str(key)
                } else {
                    write!(f, "[{}]", serde_json::Value::String(key.to_string()))
                }
            }
            At::Index(parent, k) => {
                parent.fmt(f)?;
                write!(f, "[{k}]")
            }
        }
    }
}

impl From<At<'_>> for String {
    fn from(at: At<'_>) -> String {
        at.to_string()
    }
}

/// An object being read: tracks which keys were used so the rest can be refused.
pub(super) struct Obj<'v, 'a> {
    pub(super) path: At<'v>,
    pub(super) map: &'v Object<'a>,
    /// Bit `k`: the object's `k`-th key was read (keys past the 64th in `used_more`).
    used: u64,
    used_more: Vec<usize>,
}

impl<'v, 'a> Obj<'v, 'a> {
    pub(super) fn new(v: &'v Json<'a>, path: At<'v>) -> Result<Self> {
        match v {
            Json::Object(map) => Ok(Obj {
                path,
                map,
                used: 0,
                used_more: Vec::new(),
            }),
            other => Err(ModelError::at_path(
                path,
                format!("expected an object, found {}", describe(other)),
            )),
        }
    }

    pub(super) fn at<'s>(&'s self, key: &'s str) -> At<'s> {
        At::Key(&self.path, key)
    }

    fn mark(&mut self, k: usize) {
        match u32::try_from(k).ok().and_then(|k| 1u64.checked_shl(k)) {
            Some(bit) => self.used |= bit,
            None => self.used_more.push(k),
        }
    }

    fn is_used(&self, k: usize) -> bool {
        match u32::try_from(k).ok().and_then(|k| 1u64.checked_shl(k)) {
            Some(bit) => self.used & bit != 0,
            None => self.used_more.contains(&k),
        }
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.map.keys().position(|k| k == key)
    }

    pub(super) fn get(&mut self, key: &str) -> Option<&'v Json<'a>> {
        let k = self.position(key)?;
        self.mark(k);
        self.map.0.get(k).map(|(_, v)| v)
    }

    pub(super) fn req(&mut self, key: &str) -> Result<&'v Json<'a>> {
        self.get(key)
            .ok_or_else(|| ModelError::at_path(self.path, format!("missing '{key}'")))
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
        if let Some(k) = self.position("extra").filter(|&k| !self.is_used(k)) {
            if let Some((_, v)) = self.map.0.get(k) {
                let kept = NESTED.with(|n| {
                    n.borrow_mut()
                        .as_mut()
                        .map(|list| list.push((self.path.to_string(), extra_of(v))))
                        .is_some()
                });
                if kept {
                    self.mark(k);
                }
            }
        }
        for (k, key) in self.map.keys().enumerate() {
            if !self.is_used(k) {
                return Err(ModelError::at_path(
                    self.at(key),
                    format!("unknown key '{key}' (a typo? unknown keys are refused; put other programs' data under \"extra\")"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys and strings with escapes are written into the arena, plain ones borrowed;
    /// arrays and objects keep their order; `extra` stays text until resolved.
    #[test]
    fn trees_in_the_arena_hold_what_the_text_says() {
        let arena = Bump::new();
        let text = r#"{"a\"b": "x\ny", "plain": [1, 2.5, -3, true, null],
                      "o": {"k": "v"}, "extra": {"any": [1, 2]}}"#;
        let root = parse_strict(text, &arena).map_err(|e| e.to_string());
        let Ok(Json::Object(o)) = root else {
            panic!("not an object: {root:?}");
        };
        let keys: Vec<&str> = o.keys().collect();
        assert_eq!(keys, ["a\"b", "plain", "o", "extra"]);
        assert_eq!(
            o.get_key_value("a\"b").map(|(_, v)| v.as_str()),
            Some(Some("x\ny"))
        );
        let plain = o.get_key_value("plain").and_then(|(_, v)| v.as_array());
        assert_eq!(plain.map(<[_]>::len), Some(5));
        assert_eq!(plain.and_then(|p| p[1].as_f64()), Some(2.5));
        assert!(plain.is_some_and(|p| p[4].is_null()));
        let extra = o.get_key_value("extra").map(|(_, v)| v.clone());
        assert_eq!(extra, Some(Json::Raw(r#"{"any": [1, 2]}"#)));
        let resolved = extra.map(|e| resolved(&e, &arena).map_err(|e| e.to_string()));
        let Some(Ok(Json::Object(inner))) = resolved else {
            panic!("extra not resolved: {resolved:?}");
        };
        assert_eq!(inner.len(), 1);
    }

    /// Arrays and objects inside one another, at several depths and between each
    /// other's items, each hold their own items in order (they are read through one
    /// list of items and one of entries, innermost last); an inner object may reuse a
    /// key of the object around it.
    #[test]
    fn nested_values_keep_their_own_items() {
        let arena = Bump::new();
        let text = r#"{"a": [1, [2, [3, 4], 5], {"a": [6], "b": {"a": 7}}, 8],
                      "b": {"a": {"a": {}}, "c": []}, "c": 9}"#;
        let root = parse_strict(text, &arena).map_err(|e| e.to_string());
        let Ok(Json::Object(o)) = root else {
            panic!("not an object: {root:?}");
        };
        assert_eq!(o.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
        let a = o.get_key_value("a").and_then(|(_, v)| v.as_array());
        let Some([one, inner, object, eight]) = a else {
            panic!("a: {a:?}");
        };
        assert_eq!((one.as_f64(), eight.as_f64()), (Some(1.0), Some(8.0)));
        let inner = inner.as_array().unwrap_or(&[]);
        let numbers: Vec<Option<f64>> = inner.iter().map(Json::as_f64).collect();
        assert_eq!(numbers, [Some(2.0), None, Some(5.0)]);
        let deepest: Vec<Option<f64>> = inner[1]
            .as_array()
            .unwrap_or(&[])
            .iter()
            .map(Json::as_f64)
            .collect();
        assert_eq!(deepest, [Some(3.0), Some(4.0)]);
        let object = object.as_object().cloned().unwrap_or_default();
        assert_eq!(object.keys().collect::<Vec<_>>(), ["a", "b"]);
        let b = o
            .get_key_value("b")
            .and_then(|(_, v)| v.as_object().cloned());
        assert_eq!(b.map(|b| b.len()), Some(2));
        assert_eq!(
            o.get_key_value("c").and_then(|(_, v)| v.as_f64()),
            Some(9.0)
        );
    }

    /// A path written out from its chain reads as the strings the readers formed
    /// before (`key_path` and `[k]`), which errors and kept `extra`s print.
    #[test]
    fn paths_are_written_as_errors_print_them() {
        let root = At::Root("");
        let parts = root.key("parts");
        let part = parts.index(3);
        let markers = part.key("markers");
        assert_eq!(markers.key("pin").to_string(), "parts[3].markers.pin");
        assert_eq!(
            markers.key("two words").to_string(),
            key_path("parts[3].markers", "two words")
        );
        assert_eq!(
            markers.key("a\"b").index(1).to_string(),
            r#"parts[3].markers["a\"b"][1]"#
        );
        let parameters = At::Root("parameters");
        assert_eq!(
            parameters.key("crank").to_string(),
            key_path("parameters", "crank")
        );
        assert_eq!(String::from(parameters), "parameters");
    }

    /// A key given twice is refused, in small objects (scanned) and large ones (a set),
    /// escaped or not, and inside an object whose items came before it; trailing text
    /// is refused.
    #[test]
    fn repeated_keys_and_trailing_text_are_refused() {
        let arena = Bump::new();
        let refused = |text: &str, key: &str| {
            let err = parse_strict(text, &arena)
                .map(|_| ())
                .map_err(|e| e.to_string());
            let wanted = format!("'{key}' appears twice");
            assert!(err.as_ref().is_err_and(|e| e.contains(&wanted)), "{err:?}");
        };
        refused(r#"{"a": 1, "b": 2, "a": 3}"#, "a");
        let mut large: Vec<String> = (0..40).map(|k| format!("\"k{k}\": {k}")).collect();
        large.push("\"k\\u0031\": 0".to_string());
        refused(&format!("{{{}}}", large.join(", ")), "k1");
        refused(r#"{"a": 1, "b": [{"c": 1, "c": 2}]}"#, "c");
        assert!(parse_strict("[1, 2] x", &arena).is_err());
    }
}
