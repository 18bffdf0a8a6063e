//! Where a document's `parts` and `joints` arrays lie in its text, found by a scan of
//! its brackets and strings, without parsing them: the rest of the document (a few
//! hundred bytes) is then read as a tree, and the two lists an item at a time from
//! their text (`value::each_item`). serde_json's own way of passing over a value
//! (`RawValue`) reads it a byte at a time, as a parse does; this scan jumps from one
//! quote or bracket to the next.
//!
//! The scan checks nothing: it assumes JSON. When the text is not, or the scan finds
//! something it does not expect (a top-level key written with escapes, a list given
//! twice), the reader parses the whole document as one, which names the problem's line
//! and column.

use std::ops::Range;

/// The document's `parts` and `joints` arrays, each where it is given once, at the top
/// level, as an array.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Lists {
    pub(super) parts: Option<List>,
    pub(super) joints: Option<List>,
}

/// An array in the text: its bytes, and how many of its items are arrays or objects
/// (its length, in a document's lists; sizes the assembly's tables).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct List {
    pub(super) span: Range<usize>,
    pub(super) items: usize,
}

impl Lists {
    /// The text with each list found written as `[]` (the tree of the rest of the
    /// document is read from it).
    pub(super) fn cut_from(&self, text: &str) -> String {
        let mut spans: Vec<&Range<usize>> = [&self.parts, &self.joints]
            .into_iter()
            .flatten()
            .map(|l| &l.span)
            .collect();
        spans.sort_by_key(|r| r.start);
        let mut out = String::new();
        let mut from = 0;
        for span in spans {
            out.push_str(text.get(from..span.start).unwrap_or(""));
            out.push_str("[]");
            from = span.end;
        }
        out.push_str(text.get(from..).unwrap_or(""));
        out
    }

    /// Whether a list was found.
    pub(super) fn any(&self) -> bool {
        self.parts.is_some() || self.joints.is_some()
    }
}

/// The top-level `parts` and `joints` arrays of `text`, if it looks like a JSON object
/// (`None` when it does not, or gives either twice: the parse will say what is wrong).
pub(super) fn find(text: &str) -> Option<Lists> {
    let b = text.as_bytes();
    let mut i = skip_blank(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut lists = Lists::default();
    loop {
        i = skip_blank(b, i);
        match b.get(i)? {
            b'}' => return Some(lists),
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(b, i)?;
        let key = b.get(i + 1..key_end - 1)?;
        if key.contains(&b'\\') {
            // A key with escapes might be "parts" once read: left to the parse.
            return None;
        }
        i = skip_blank(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_blank(b, i + 1);
        let (end, items) = value_end(b, start)?;
        if b.get(start) == Some(&b'[') {
            let slot = match key {
                b"parts" => Some(&mut lists.parts),
                b"joints" => Some(&mut lists.joints),
                _ => None,
            };
            if let Some(slot) = slot {
                if slot
                    .replace(List {
                        span: start..end,
                        items,
                    })
                    .is_some()
                {
                    return None;
                }
            }
        }
        i = skip_blank(b, end);
        match b.get(i)? {
            b',' => i += 1,
            b'}' => return Some(lists),
            _ => return None,
        }
    }
}

/// The first byte at or after `i` that is not JSON white space.
fn skip_blank(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Past the closing quote of the string opening at `i`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut k = i + 1;
    loop {
        k += memchr::memchr2(b'"', b'\\', b.get(k..)?)?;
        if b.get(k)? == &b'"' {
            return Some(k + 1);
        }
        // An escape: the next byte is taken whatever it is.
        k += 2;
    }
}

/// Past the value starting at `i`: a string, an array or object (to its closing
/// bracket, brackets of either kind counted alike), or a number or literal (to the next
/// separator); with the number of arrays and objects directly inside it.
fn value_end(b: &[u8], i: usize) -> Option<(usize, usize)> {
    match b.get(i)? {
        b'"' => Some((string_end(b, i)?, 0)),
        b'[' | b'{' => {
            let mut brackets = Brackets::default();
            let mut k = i;
            // A chunk at a time where the CPU has AVX2 and the text no escapes
            // (strings are then what lies between two quotes); else, and in the last
            // part chunk, a byte at a time.
            if memchr::memchr(b'\\', b).is_none() {
                match wide::scan(b, k, &mut brackets) {
                    (Some(end), _) => return Some((end, brackets.items)),
                    (None, next) => k = next,
                }
            }
            while let Some(&c) = b.get(k) {
                k += 1;
                if brackets.in_string {
                    match c {
                        b'"' => brackets.in_string = false,
                        b'\\' => k += 1,
                        _ => {}
                    }
                } else if brackets.byte(c) {
                    return Some((k, brackets.items));
                }
            }
            None
        }
        _ => {
            let rest = b.get(i..)?;
            let end = rest
                .iter()
                .position(|&c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            Some((i + end, 0))
        }
    }
}

/// Bytes a chunk of the bracket scan.
const CHUNK: usize = 64;

/// The bracket scan's state: how deep it is, whether inside a string, and how many
/// arrays and objects it met at depth one.
#[derive(Default)]
struct Brackets {
    depth: usize,
    in_string: bool,
    items: usize,
}

impl Brackets {
    /// Takes in `c`, a byte outside strings; whether it closed the outermost bracket.
    fn byte(&mut self, c: u8) -> bool {
        match c {
            b'"' => self.in_string = true,
            b'[' | b'{' => {
                self.depth += 1;
                self.items += usize::from(self.depth == 2);
            }
            b']' | b'}' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }

    /// Takes in a chunk of text without escapes, as the bit masks of its quotes and of
    /// its opening and closing brackets; where the outermost bracket closed (past it),
    /// if it did. Inside strings are the bytes after an odd number of quotes (a running
    /// XOR of the quotes' mask).
    #[inline(always)]
    fn chunk(&mut self, (quote, open, close): (u64, u64, u64)) -> Option<usize> {
        // Bit k of `inside`: an odd number of quotes at or before k (counting the
        // string left open by the last chunk).
        let mut inside = quote;
        for shift in [1, 2, 4, 8, 16, 32] {
            inside ^= inside << shift;
        }
        if self.in_string {
            inside = !inside;
        }
        self.in_string = inside >> 63 != 0;
        let (open, close) = (open & !inside, close & !inside);
        // Deep enough that the chunk's closing brackets cannot bring the scan back to
        // depth one (where an item starts) or zero: only the depth changes.
        let closing = close.count_ones() as usize;
        if self.depth >= closing + 2 {
            self.depth = self.depth + open.count_ones() as usize - closing;
            return None;
        }
        let mut brackets = open | close;
        while brackets != 0 {
            let k = brackets.trailing_zeros() as usize;
            brackets &= brackets - 1;
            if open >> k & 1 != 0 {
                self.depth += 1;
                self.items += usize::from(self.depth == 2);
            } else {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    return Some(k + 1);
                }
            }
        }
        None
    }
}

/// The chunked bracket scan, with AVX2 compares for the masks.
#[cfg(target_arch = "x86_64")]
mod wide {
    use core::arch::x86_64::__m256i;

    use pulp::x86::V3;

    use super::{Brackets, CHUNK};

    /// Scans `text` from `at` a chunk at a time (text without escapes): where the
    /// outermost bracket closed, if it did, and else where the whole chunks end.
    pub(super) fn scan(text: &[u8], at: usize, brackets: &mut Brackets) -> (Option<usize>, usize) {
        match V3::try_new() {
            Some(v3) => v3.vectorize(|| chunks(v3, text, at, brackets)),
            None => (None, at),
        }
    }

    #[inline(always)]
    fn chunks(
        v3: V3,
        text: &[u8],
        mut at: usize,
        brackets: &mut Brackets,
    ) -> (Option<usize>, usize) {
        while let Some(chunk) = text.get(at..at + CHUNK) {
            let (q0, o0, c0) = masks(v3, chunk.get(..32));
            let (q1, o1, c1) = masks(v3, chunk.get(32..));
            let wide = |a: u32, b: u32| u64::from(a) | u64::from(b) << 32;
            if let Some(end) = brackets.chunk((wide(q0, q1), wide(o0, o1), wide(c0, c1))) {
                return (Some(at + end), at);
            }
            at += CHUNK;
        }
        (None, at)
    }

    /// The masks of quotes, opening and closing brackets of 32 bytes (`[` and `{` are
    /// `{` with the 0x20 bit set, `]` and `}` are `}`).
    #[inline(always)]
    fn masks(v3: V3, bytes: Option<&[u8]>) -> (u32, u32, u32) {
        let bytes: [u8; 32] = bytes.and_then(|b| b.try_into().ok()).unwrap_or([0; 32]);
        let x: __m256i = pulp::bytemuck::cast(bytes);
        let splat = |c: u8| v3.avx._mm256_set1_epi8(c as i8);
        let folded = v3.avx2._mm256_or_si256(x, splat(0x20));
        let mask = |a: __m256i, c: u8| {
            v3.avx2
                ._mm256_movemask_epi8(v3.avx2._mm256_cmpeq_epi8(a, splat(c))) as u32
        };
        (mask(x, b'"'), mask(folded, b'{'), mask(folded, b'}'))
    }
}

/// Elsewhere the bracket scan goes a byte at a time.
#[cfg(not(target_arch = "x86_64"))]
mod wide {
    use super::Brackets;

    pub(super) fn scan(
        _text: &[u8],
        at: usize,
        _brackets: &mut Brackets,
    ) -> (Option<usize>, usize) {
        (None, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str) -> Option<(Option<&str>, Option<&str>)> {
        let lists = find(text)?;
        let of = |l: &Option<List>| l.as_ref().and_then(|l| text.get(l.span.clone()));
        Some((of(&lists.parts), of(&lists.joints)))
    }

    /// The lists are found whole, past strings holding brackets, quotes and escapes,
    /// nested arrays and objects, and other keys before, between and after them.
    #[test]
    fn lists_are_found_whole() {
        let text = r#" { "format": "x", "units": {"length": "mm"}, "parts" : [{"id": "a]\"}", "m": [[1, 2], {}]}, {"id": "b\\"}] ,
            "n": -1.5e3, "joints":[], "extra": {"parts": [1]} } "#;
        assert_eq!(
            spans(text),
            Some((
                Some(r#"[{"id": "a]\"}", "m": [[1, 2], {}]}, {"id": "b\\"}]"#),
                Some("[]")
            ))
        );
        let lists = find(text).unwrap_or_default();
        assert_eq!(lists.parts.as_ref().map(|l| l.items), Some(2));
        assert_eq!(lists.joints.as_ref().map(|l| l.items), Some(0));
        let cut = lists.cut_from(text);
        assert!(cut.contains(r#""parts" : [] ,"#) && cut.contains(r#""joints":[],"#));
        assert!(cut.contains(r#""extra": {"parts": [1]}"#));
    }

    /// Lists that are not arrays, nested, or absent are not found; a list given twice,
    /// a key with escapes before a list, or text that is not an object give no answer.
    #[test]
    fn what_is_not_found() {
        assert_eq!(
            spans(r#"{"parts": {"a": 1}, "x": {"joints": []}}"#),
            Some((None, None))
        );
        assert_eq!(spans(r#"{"format": 1}"#), Some((None, None)));
        assert_eq!(spans(r#"{"parts": [], "parts": []}"#), None);
        assert_eq!(spans("[1, 2]"), None);
        assert_eq!(spans(r#"{"parts": [1, 2"#), None);
        assert_eq!(spans(r#"{"a": "unterminated}"#), None);
        // A top-level key with an escape might be "parts": no answer.
        assert_eq!(spans(r#"{"par\u0074s": [1], "joints": [2]}"#), None);
        assert_eq!(
            spans(r#"{"joints": [2], "x": {"a\"b": 1}}"#),
            Some((None, Some("[2]")))
        );
    }
}
