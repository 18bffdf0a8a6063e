//! What an `.asmt` element keeps under `extra`, written as JSON text as it is read.
//!
//! Most of what is kept is blocks of lines verbatim (a part's `FeatureOrder`, the
//! simulation settings): building them as `serde_json::Value` trees and serialising
//! those was a third of reading a small file. Blocks are written straight into JSON
//! text here; the few computed items (numbers, lists) stay values and are serialised
//! when the element's `extra` is made.
//!
//! Architecture invariant: the text is what `serde_json` would write for the same
//! object with `preserve_order` (entries in insertion order, compact, its escapes), so
//! files converted before and after read alike.

use std::fmt::Write;

use serde_json::Value;

use crate::assembly::Extra;

/// One kept item: a value, or JSON text already written (a verbatim block).
#[derive(Debug)]
enum Item {
    Value(Value),
    Text(String),
}

/// The entries of an element's `{"asmt": {...}}` extra, in insertion order.
#[derive(Debug, Default)]
pub(super) struct ExtraMap {
    entries: Vec<(String, Item)>,
}

impl ExtraMap {
    pub(super) fn new() -> Self {
        Self::default()
    }

    fn slot(&mut self, key: &str) -> Option<&mut Item> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, item)| item)
    }

    /// Sets `key` to `value` (in place when the key is there, as a map would).
    pub(super) fn insert(&mut self, key: impl Into<String>, value: Value) {
        self.set(key.into(), Item::Value(value));
    }

    /// Sets `key` to JSON text already written (a block from `Reader::raw_block_json`).
    pub(super) fn insert_json(&mut self, key: impl Into<String>, text: String) {
        self.set(key.into(), Item::Text(text));
    }

    fn set(&mut self, key: String, item: Item) {
        match self.slot(&key) {
            Some(slot) => *slot = item,
            None => self.entries.push((key, item)),
        }
    }

    /// Appends `value` to the list under `key` (made empty first when missing).
    pub(super) fn push_to_list(&mut self, key: &str, value: Value) {
        if self.slot(key).is_none() {
            self.entries
                .push((key.to_string(), Item::Value(Value::Array(Vec::new()))));
        }
        if let Some(Item::Value(Value::Array(items))) = self.slot(key) {
            items.push(value);
        }
    }

    /// The element's `extra`: `{"asmt": {entries}}`, or `None` with no entries.
    pub(super) fn into_extra(self) -> Option<Extra> {
        if self.entries.is_empty() {
            return None;
        }
        // Sized once: the verbatim blocks' lengths are known, a value's guessed.
        let room: usize = self
            .entries
            .iter()
            .map(|(key, item)| {
                key.len()
                    + 4
                    + match item {
                        Item::Text(t) => t.len(),
                        Item::Value(_) => 64,
                    }
            })
            .sum();
        let mut text = String::with_capacity(room + 12);
        text.push_str("{\"asmt\":{");
        for (k, (key, item)) in self.entries.iter().enumerate() {
            if k > 0 {
                text.push(',');
            }
            push_json_string(&mut text, "", key);
            text.push(':');
            match item {
                Item::Text(t) => text.push_str(t),
                // `Value`'s `Display` is its compact JSON, written in place.
                Item::Value(v) => {
                    let _ = write!(text, "{v}");
                }
            }
        }
        text.push_str("}}");
        Some(Extra(text.into_boxed_str()))
    }
}

/// Appends `prefix` then `s` as one JSON string, escaped as `serde_json` escapes.
pub(super) fn push_json_string(out: &mut String, prefix: &str, s: &str) {
    out.push('"');
    for part in [prefix, s] {
        let bytes = part.as_bytes();
        // Most text needs no escape: one vectorised look, then a plain copy.
        if !bytes.iter().fold(false, |any, &b| {
            any | (b < 0x20) | (b == b'"') | (b == b'\\')
        }) {
            out.push_str(part);
            continue;
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
            out.push_str(&part[from..i]);
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
        out.push_str(&part[from..]);
    }
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
            push_json_string(&mut out, "\t\t", s);
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
        map.insert_json("Block", "[\"a\",\"\\tb\"]".to_string());
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
