//! What an `.asmt` element keeps under `extra`, written as JSON text as it is read.
//!
//! Most of what is kept is blocks of lines verbatim (a part's `FeatureOrder`, the
//! simulation settings): building them as `serde_json::Value` trees and serialising
//! those was a third of reading a small file. Every value is written straight into JSON
//! text here, into one buffer per element, and the element's `extra` is put together
//! from it once.
//!
//! Architecture invariant: the text is what `serde_json` would write for the same
//! object with `preserve_order` (entries in insertion order, compact, its escapes), so
//! files converted before and after read alike.

use std::borrow::Cow;
use std::fmt::Write;
use std::ops::Range;

use serde_json::Value;

use crate::assembly::Extra;

/// The entries of an element's `{"asmt": {...}}` extra, in insertion order: each
/// value's JSON text is written into one buffer as it comes, and the entries name their
/// ranges of it (lists of strings, a dozen allocations an element, had been kept as
/// values and strings of their own).
#[derive(Debug, Default)]
pub(super) struct ExtraMap {
    /// Values' JSON texts, end to end (a replaced value's old text stays, unused).
    values: String,
    /// Each entry's key and the range of its value in `values`.
    entries: Vec<(Cow<'static, str>, Range<usize>)>,
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

    /// Sets `key` to JSON text that `write` appends to the string it is given (a
    /// verbatim block from `Reader::raw_block_json_into`, numbers written in place).
    pub(super) fn insert_with(
        &mut self,
        key: impl Into<Cow<'static, str>>,
        write: impl FnOnce(&mut String),
    ) {
        if self.values.capacity() == 0 {
            // Room for the usual small items at once (a verbatim block reserves its own).
            self.values.reserve(VALUES_ROOM);
        }
        let start = self.values.len();
        write(&mut self.values);
        let range = start..self.values.len();
        let key = key.into();
        match self.slot(&key) {
            Some(k) => self.entries[k].1 = range,
            None => self.entries.push((key, range)),
        }
    }

    /// Appends `value` to the list under `key` (made empty first when missing).
    pub(super) fn push_to_list(&mut self, key: &'static str, value: Value) {
        let start = self.values.len();
        match self.slot(key) {
            // The list's text again without its `]`, then the new item: the old text
            // stays unused (lists here are a few joint names).
            Some(k) => {
                let old = self.entries[k].1.clone();
                let held = old.len() > 2;
                // A copy first (a list pushed to again is rare: a motion's joints).
                let head = self.values.get(old.start..old.end - 1).unwrap_or("[");
                let head = head.to_string();
                self.values.push_str(&head);
                if held {
                    self.values.push(',');
                }
                let _ = write!(self.values, "{value}]");
                self.entries[k].1 = start..self.values.len();
            }
            None => {
                let _ = write!(self.values, "[{value}]");
                self.entries.push((key.into(), start..self.values.len()));
            }
        }
    }

    /// The element's `extra`: `{"asmt": {entries}}`, or `None` with no entries.
    pub(super) fn into_extra(self) -> Option<Extra> {
        if self.entries.is_empty() {
            return None;
        }
        // Sized once: every value's text is known, keys need quotes, a colon and a
        // comma (and escapes, rarely).
        let room: usize = self
            .entries
            .iter()
            .map(|(key, range)| key.len() + 4 + range.len())
            .sum();
        let mut text = String::with_capacity(room + 12);
        text.push_str("{\"asmt\":{");
        for (k, (key, range)) in self.entries.iter().enumerate() {
            if k > 0 {
                text.push(',');
            }
            push_json_string(&mut text, 0, key);
            text.push(':');
            text.push_str(self.values.get(range.clone()).unwrap_or("null"));
        }
        text.push_str("}}");
        Some(Extra(text.into_boxed_str()))
    }
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
        map.insert_with("Block", |out| out.push_str("[\"a\",\"\\tb\"]"));
        expected.insert("Block".into(), json!(["a", "\tb"]));
        map.insert("Density", json!(7.8));
        expected.insert("Density".into(), json!(7.8));
        map.push_to_list("AllowRotation", json!("j1"));
        map.push_to_list("AllowRotation", json!("j2"));
        expected.insert("AllowRotation".into(), json!(["j1", "j2"]));
        map.insert("Density", json!(1.5));
        expected.insert("Density".into(), json!(1.5));
        let extra = map.into_extra().map(|e| e.to_json_text());
        let direct = Extra::from_value(&json!({ "asmt": Value::Object(expected) }));
        assert_eq!(extra, Some(direct.to_json_text()));
        assert!(ExtraMap::new().into_extra().is_none());
    }
}
