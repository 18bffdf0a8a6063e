//! What an `.asmt` element keeps under `extra`, as JSON text.
//!
//! Most of what is kept is blocks of lines verbatim (a part's `FeatureOrder`, the
//! simulation settings). Building them as `serde_json::Value` trees and serialising
//! those was a third of reading a small file; writing them as JSON text while reading
//! was still a tenth of it, for text a solve never reads. Small values are written
//! straight into JSON text, into one buffer per element; a block is kept as its lines'
//! text in the same buffer. The element's `extra` is put together as JSON text only when
//! it is first asked for (writing a file, a caller reading it).
//!
//! Architecture invariant: the text is what `serde_json` would write for the same
//! object with `preserve_order` (entries in insertion order, compact, its escapes), so
//! files converted before and after read alike; a block is the list of its lines as the
//! file's tree holds them (`Reader::raw_block`; a test holds the two equal over every
//! line of every file at hand).

use std::borrow::Cow;
use std::fmt::Write;
use std::ops::Range;
use std::sync::OnceLock;

use serde_json::Value;

use crate::assembly::{Extra, ExtraText};

/// The entries of an element's `{"asmt": {...}}` extra, in insertion order: each
/// value's JSON text is written into one buffer as it comes, and the entries name their
/// ranges of it (lists of strings, a dozen allocations an element, had been kept as
/// values and strings of their own). A block kept verbatim is held as its lines' text,
/// and written as JSON only when the extra's text is asked for ([`AsmtExtra`]).
#[derive(Clone, Debug, Default)]
pub(super) struct ExtraMap {
    /// Values' texts, end to end (a replaced value's old text stays, unused).
    values: String,
    /// Each entry's key and its value in `values`.
    entries: Vec<(Cow<'static, str>, Item)>,
}

/// Where an entry's value is in the buffer, and in what form.
#[derive(Clone, Debug)]
enum Item {
    /// JSON text.
    Json(Range<usize>),
    /// The text of a block's lines as the file has them (see [`block_json_into`]).
    Block(Range<usize>),
    /// A number (written as a JSON value writes it: `null` when not finite).
    Number(f64),
    /// An initial motion: `{"Velocity3D": [x, y, z], "Omega3D": [x, y, z]}` with the
    /// triples that are there.
    Motion([Option<[f64; 3]>; 2]),
}

/// The keys of [`Item::Motion`]'s triples.
const MOTION_KEYS: [&str; 2] = ["Velocity3D", "Omega3D"];

/// Appends `x` as a JSON value holding it is written (a number, or `null` when it is not
/// finite).
fn push_json_number(out: &mut String, x: f64) {
    match serde_json::Number::from_f64(x) {
        Some(x) => {
            let _ = write!(out, "{x}");
        }
        None => out.push_str("null"),
    }
}

/// Appends an initial motion's object (see [`Item::Motion`]).
fn push_motion(out: &mut String, state: &[Option<[f64; 3]>; 2]) {
    let mut first = true;
    for (key, v) in MOTION_KEYS.iter().zip(state) {
        let Some(v) = v else { continue };
        out.push(if first { '{' } else { ',' });
        first = false;
        push_json_string(out, 0, key);
        out.push(':');
        for (k, &x) in v.iter().enumerate() {
            out.push(if k == 0 { '[' } else { ',' });
            push_json_number(out, x);
        }
        out.push(']');
    }
    if first {
        out.push('{');
    }
    out.push('}');
}

/// Bytes the value buffer has room for at first.
const VALUES_ROOM: usize = 256;

impl ExtraMap {
    pub(super) fn new() -> Self {
        Self::default()
    }

    fn slot(&self, key: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k == key)
    }

    /// Sets `key` to `value` (in place when the key is there, as a map would).
    pub(super) fn insert(&mut self, key: impl Into<Cow<'static, str>>, value: Value) {
        // `Value`'s `Display` is its compact JSON.
        self.insert_with(key, |out| {
            let _ = write!(out, "{value}");
        });
    }

    /// Sets `key` to JSON text that `write` appends to the string it is given (numbers
    /// written in place).
    pub(super) fn insert_with(
        &mut self,
        key: impl Into<Cow<'static, str>>,
        write: impl FnOnce(&mut String),
    ) {
        let range = self.append(0, write);
        self.set(key.into(), Item::Json(range));
    }

    /// Sets `key` to the number `x` (its text written when the extra's text is asked
    /// for).
    pub(super) fn insert_number(&mut self, key: impl Into<Cow<'static, str>>, x: f64) {
        self.set(key.into(), Item::Number(x));
    }

    /// Sets `key` to an initial motion: the velocity and the angular velocity, each when
    /// given (see [`Item::Motion`]).
    pub(super) fn insert_motion(
        &mut self,
        key: impl Into<Cow<'static, str>>,
        state: [Option<[f64; 3]>; 2],
    ) {
        self.set(key.into(), Item::Motion(state));
    }

    /// Sets `key` to a block kept verbatim: `lines` is the text of its lines as the file
    /// has them, from the start of the first to the end of the last (the value is the
    /// list of the lines, each without the block's own indentation).
    pub(super) fn insert_block(&mut self, key: impl Into<Cow<'static, str>>, lines: &str) {
        let range = self.append(lines.len(), |out| out.push_str(lines));
        self.set(key.into(), Item::Block(range));
    }

    /// Appends what `write` writes (`len` bytes or about).
    fn append(&mut self, len: usize, write: impl FnOnce(&mut String)) -> Range<usize> {
        if self.values.capacity() == 0 {
            // Room for the usual small items at once, and for this one (a block's
            // lines, often the first item: a file's notes), in one allocation rather
            // than a second one and a copy.
            self.values.reserve(VALUES_ROOM + len);
        }
        let start = self.values.len();
        write(&mut self.values);
        start..self.values.len()
    }

    fn set(&mut self, key: Cow<'static, str>, item: Item) {
        match self.slot(&key) {
            Some(k) => self.entries[k].1 = item,
            None => self.entries.push((key, item)),
        }
    }

    /// Appends `value` to the list under `key` (made empty first when missing).
    pub(super) fn push_to_list(&mut self, key: &'static str, value: Value) {
        let start = self.values.len();
        match self.slot(key) {
            // The list's text again without its `]`, then the new item: the old text
            // stays unused (lists here are a few joint names).
            Some(k) => {
                let old = match &self.entries[k].1 {
                    Item::Json(range) => range.clone(),
                    Item::Block(_) | Item::Number(_) | Item::Motion(_) => 0..0,
                };
                let held = old.len() > 2;
                // A copy first (a list pushed to again is rare: a motion's joints).
                let head = self.values.get(old.start..old.end.saturating_sub(1));
                let head = head.unwrap_or("[").to_string();
                self.values.push_str(&head);
                if held {
                    self.values.push(',');
                }
                let _ = write!(self.values, "{value}]");
                self.entries[k].1 = Item::Json(start..self.values.len());
            }
            None => {
                let _ = write!(self.values, "[{value}]");
                self.entries
                    .push((key.into(), Item::Json(start..self.values.len())));
            }
        }
    }

    /// The element's `extra`: `{"asmt": {entries}}`, or `None` with no entries.
    pub(super) fn into_extra(self) -> Option<Extra> {
        if self.entries.is_empty() {
            return None;
        }
        Some(Extra(ExtraText::Asmt {
            items: Box::new(AsmtExtra(self)),
            json: OnceLock::new(),
        }))
    }
}

/// An `.asmt` element's extra before it is JSON text: what [`ExtraMap`] gathered.
#[derive(Clone, Debug)]
pub(crate) struct AsmtExtra(ExtraMap);

impl AsmtExtra {
    /// The JSON text: `{"asmt": {entries}}`, as `serde_json` writes the same map (see
    /// the module).
    pub(crate) fn json_text(&self) -> Box<str> {
        let map = &self.0;
        // Sized once: every value's text is known (a block's grows by its quotes,
        // commas and escaped tabs), keys need quotes, a colon and a comma.
        let room: usize = map
            .entries
            .iter()
            .map(|(key, item)| match item {
                Item::Json(range) => key.len() + 4 + range.len(),
                Item::Block(range) => key.len() + 6 + range.len() + range.len() / 4,
                Item::Number(_) => key.len() + 28,
                Item::Motion(_) => key.len() + 140,
            })
            .sum();
        let mut text = String::with_capacity(room + 12);
        text.push_str("{\"asmt\":{");
        for (k, (key, item)) in map.entries.iter().enumerate() {
            if k > 0 {
                text.push(',');
            }
            push_json_string(&mut text, 0, key);
            text.push(':');
            match item {
                Item::Json(range) => text.push_str(map.values.get(range.clone()).unwrap_or("null")),
                Item::Block(range) => {
                    block_json_into(&mut text, map.values.get(range.clone()).unwrap_or(""));
                }
                Item::Number(x) => push_json_number(&mut text, *x),
                Item::Motion(state) => push_motion(&mut text, state),
            }
        }
        text.push_str("}}");
        text.into_boxed_str()
    }
}

/// A block's lines as a JSON list of strings, appended to `out`: each line without the
/// indentation of the block's first line, its deeper tabs written as escapes. Lines are
/// taken as the file's tree takes them (`Tree::parse`): a `\r` before the line end is
/// not part of the line, and a line that is blank but not tabs only is skipped.
fn block_json_into(out: &mut String, lines: &str) {
    out.push('[');
    let mut base: Option<usize> = None;
    for raw in lines.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let tabs = raw.bytes().take_while(|&b| b == b'\t').count();
        // Cut at ASCII bytes, so on character boundaries.
        let content = raw.get(tabs..).unwrap_or("");
        if super::tree::trim(content).is_empty() && (tabs == 0 || !content.is_empty()) {
            continue;
        }
        if base.is_some() {
            out.push(',');
        }
        let base = *base.get_or_insert(tabs);
        push_json_string(out, tabs.saturating_sub(base), content);
    }
    out.push(']');
}

/// Appends `tabs` tab characters then `s` as one JSON string, escaped as `serde_json`
/// escapes. (The tabs are a raw block's indentation: written as their escapes at once,
/// rather than looked at byte by byte, which had been most of the cost of a block.)
pub(super) fn push_json_string(out: &mut String, tabs: usize, s: &str) {
    out.push('"');
    for _ in 0..tabs {
        out.push_str("\\t");
    }
    let bytes = s.as_bytes();
    // Most text needs no escape: one vectorised look, then a plain copy.
    if !bytes.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    }) {
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut from = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\t' => Some("\\t"),
            b'\r' => Some("\\r"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0..=0x1f => None,
            _ => continue,
        };
        // Escaped bytes are ASCII, so `from..i` and `i + 1..` are on char boundaries.
        out.push_str(&s[from..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
        }
        from = i + 1;
    }
    out.push_str(&s[from..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        for s in [
            "plain",
            "\ttab\tinside",
            "quote \" and back\\slash",
            "bell \u{7} nul \u{0} esc \u{1b} del \u{7f}",
            "\u{8}\u{c}\r\n",
            "non-ASCII: é, 角, 🦀",
            "",
        ] {
            let mut out = String::new();
            push_json_string(&mut out, 2, s);
            assert_eq!(
                out,
                serde_json::to_string(&format!("\t\t{s}")).unwrap_or_default()
            );
        }
    }

    #[test]
    fn the_extra_is_the_text_serde_json_writes_for_the_same_map() {
        let mut map = ExtraMap::new();
        let mut expected = serde_json::Map::new();
        map.insert_block("Block", "\t\ta\r\n\t\t\tb\n\t \n");
        expected.insert("Block".into(), json!(["a", "\tb"]));
        map.insert("Density", json!(7.8));
        expected.insert("Density".into(), json!(7.8));
        map.push_to_list("AllowRotation", json!("j1"));
        map.push_to_list("AllowRotation", json!("j2"));
        expected.insert("AllowRotation".into(), json!(["j1", "j2"]));
        map.insert("Density", json!(1.5));
        expected.insert("Density".into(), json!(1.5));
        // Numbers and motions kept as numbers: written as a JSON value writes them.
        for (k, x) in [0.1, -2.5e-17, 1e300, 3.0, -0.0, f64::NAN]
            .into_iter()
            .enumerate()
        {
            map.insert_number(format!("n{k}"), x);
            expected.insert(format!("n{k}"), json!(x));
        }
        map.insert_number("tstart", 7.0);
        map.insert_number("tstart", 0.25);
        expected.insert("tstart".into(), json!(0.25));
        let v = [1.0, -0.5e-9, 123_456.789];
        let w = [f64::INFINITY, 2.0, 1e-300];
        for (key, state, value) in [
            (
                "both",
                [Some(v), Some(w)],
                json!({"Velocity3D": v, "Omega3D": w}),
            ),
            ("velocity", [Some(v), None], json!({ "Velocity3D": v })),
            ("omega", [None, Some(w)], json!({ "Omega3D": w })),
            ("none", [None, None], json!({})),
        ] {
            map.insert_motion(key, state);
            expected.insert(key.into(), value);
        }
        let extra = map.into_extra().map(|e| e.to_json_text());
        let direct = Extra::from_value(&json!({ "asmt": Value::Object(expected) }));
        assert_eq!(extra, Some(direct.to_json_text()));
        assert!(ExtraMap::new().into_extra().is_none());
    }
}
