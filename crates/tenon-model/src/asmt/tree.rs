//! The indentation tree of an `.asmt` file (a line's children are the following lines
//! indented one tab deeper), and reading items from it: values, numbers, poses, blocks
//! kept verbatim, the keys an item may have.

use serde_json::Value;

use super::lines::line_ends;
use super::number::{parse_number, parse_token, scan_decimal};
use super::{Reader, Result, ASMT_MATRIX_TOLERANCE};
use crate::error::ModelError;
use crate::placement::{matrix_to_quaternion, Pose};

/// One line of the file in the tree.
#[derive(Debug)]
pub(super) struct Node<'a> {
    line: usize,
    text: &'a str,
    /// `text` without white space around it (what keys are compared with).
    trimmed: &'a str,
    /// The node after this one's last descendant: nodes are in file order, so a node's
    /// descendants are the nodes up to `end`, its first child (if any) is the next node,
    /// and each next child is where the one before ends.
    end: usize,
}

/// The indentation tree of the part of the file before `TimeSeries`.
///
/// Architecture invariant: nodes are in file order (a pre-order of the tree), and each
/// node's `end` is one past its last descendant; a node's children are reached by
/// jumping from one child's `end` to the next ([`Kids`]), with no lists of children (the
/// lists had cost two zeroed arrays and a counting sort per read).
#[derive(Debug)]
pub(super) struct Tree<'a> {
    pub(super) nodes: Vec<Node<'a>>,
    /// The line of `TimeSeries` and where it starts in the text, when the file has the
    /// block.
    time_series: Option<(usize, usize)>,
    /// The whole text (its last line is counted only for an error).
    text: &'a str,
}

pub(super) const ROOT: usize = 0;

impl<'a> Tree<'a> {
    pub(super) fn parse(text: &'a str) -> Result<Self> {
        let bytes = text.as_bytes();
        // Where each line ends, up to the `TimeSeries` line's end (the loop stops at
        // that line), or the text's end without it.
        let series_at = memchr::memmem::find(bytes, b"\nTimeSeries");
        let mut ends = line_ends(series_at.map_or(bytes, |at| &bytes[..at]));
        if let Some(at) = series_at {
            ends.push(at);
            let rest = bytes.get(at + 1..).unwrap_or_default();
            ends.push(memchr::memchr(b'\n', rest).map_or(bytes.len(), |end| at + 1 + end));
        } else {
            ends.push(bytes.len());
        }
        // A node per line at most (counted at once: the list had grown by copying
        // itself several times in a large file).
        let mut nodes = Vec::with_capacity(ends.len() + 1);
        nodes.push(Node {
            line: 0,
            text: "",
            trimmed: "",
            end: usize::MAX,
        });
        // The open ancestors: `open[d]` is the last line of depth `d - 1` (the root's
        // depth is -1), as each line is one tab deeper than its parent.
        let mut open: Vec<usize> = vec![ROOT];
        let mut time_series = None;
        let mut from = 0;
        let mut line = 0;
        for &end in &ends {
            line += 1;
            let rest = bytes.get(from..).unwrap_or_default();
            let len = end.saturating_sub(from).min(rest.len());
            let line_start = from;
            let raw = &rest[..len];
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            // Counted in the rest of the text: its line end is no tab.
            let tabs = leading_tabs(rest);
            // Cut at ASCII bytes, so on character boundaries.
            let content = text.get(from + tabs..from + raw.len()).unwrap_or("");
            from += len + 1;
            // A line of tabs only is an empty value (e.g. a joint with no name); a
            // line with nothing at all is skipped.
            let trimmed = trim(content);
            if trimmed.is_empty() && (tabs == 0 || !content.is_empty()) {
                if from > bytes.len() {
                    break;
                }
                continue;
            }
            if tabs == 0 && content.starts_with("TimeSeries") {
                time_series = Some((line, line_start));
                break;
            }
            if content.starts_with(' ') {
                return Err(ModelError::at_line(line, "indentation must be tabs"));
            }
            // A child of the last line has `open.len() - 1` tabs; no line is deeper.
            let deepest = open.len() - 1;
            if tabs > deepest {
                return Err(ModelError::at_line(
                    line,
                    format!(
                        "indented {} tabs deeper than the line it belongs to",
                        tabs - deepest + 1
                    ),
                ));
            }
            let id = nodes.len();
            // The lines left open deeper than this one's parent end here.
            for &done in open.get(tabs + 1..).unwrap_or_default() {
                if let Some(node) = nodes.get_mut(done) {
                    node.end = id;
                }
            }
            open.truncate(tabs + 1);
            nodes.push(Node {
                line,
                text: content,
                trimmed,
                end: usize::MAX,
            });
            open.push(id);
            if from > bytes.len() {
                break;
            }
        }
        // The lines still open end with the tree.
        let count = nodes.len();
        for &done in &open {
            if let Some(node) = nodes.get_mut(done) {
                node.end = count;
            }
        }
        Ok(Tree {
            nodes,
            time_series,
            text,
        })
    }

    /// The line of `TimeSeries` and where it starts in the text, if the file has the
    /// block.
    pub(super) fn time_series_start(&self) -> Option<(usize, usize)> {
        self.time_series
    }

    /// The last line of the file (where a truncated file ends).
    pub(super) fn last_line(&self) -> usize {
        let body = self.text.trim_end_matches(['\n', '\r']);
        memchr::memchr_iter(b'\n', body.as_bytes()).count() + 1
    }

    pub(super) fn node(&self, n: usize) -> &Node<'a> {
        &self.nodes[n]
    }
}

/// The children of a node, in file order: from the node after it, each next one where
/// the one before ends, up to where the node itself ends.
#[derive(Clone)]
pub(super) struct Kids<'t, 'a> {
    nodes: &'t [Node<'a>],
    next: usize,
    end: usize,
}

impl Kids<'_, '_> {
    pub(super) fn is_empty(&self) -> bool {
        self.next >= self.end
    }

    /// The first child.
    pub(super) fn first(&self) -> Option<usize> {
        (!self.is_empty()).then_some(self.next)
    }
}

impl Iterator for Kids<'_, '_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        let child = self.next;
        // A child ends no later than its parent (the parse sets every `end`); the jump
        // is held to the parent's end so that the walk stops whatever a node holds.
        self.next = self
            .nodes
            .get(child)
            .map_or(self.end, |c| c.end.clamp(child + 1, self.end));
        Some(child)
    }
}

/// Eight bytes of `bytes` from `at` as a little-endian word, if there are eight.
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let chunk: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(chunk))
}

/// Tabs at the start of `bytes`, eight bytes at a time.
#[inline]
fn leading_tabs(bytes: &[u8]) -> usize {
    let mut at = 0;
    while let Some(word) = word_at(bytes, at) {
        let other = word ^ 0x0909_0909_0909_0909;
        if other != 0 {
            return at + (other.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + bytes[at..].iter().take_while(|&&b| b == b'\t').count()
}

/// The numbers of a line written `a.0 \tb.0 \tc.0 ` with single digits `a`, `b`, `c`:
/// the rows of identity rotation matrices and of zero or unit positions, more than
/// half the three-number lines of the corpus (each is its digit, as [`scan_decimal`]
/// reads it). `None` for any other line.
#[inline]
fn three_whole_digits(line: &[u8]) -> Option<[f64; 3]> {
    let &[a, b'.', b'0', b' ', b'\t', b, b'.', b'0', b' ', b'\t', c, b'.', b'0', b' '] = line
    else {
        return None;
    };
    let digit = |d: u8| {
        let v = d.wrapping_sub(b'0');
        (v <= 9).then_some(f64::from(v))
    };
    Some([digit(a)?, digit(b)?, digit(c)?])
}

/// Whether two keys are equal. Keys are short (`Name`, `Position3D`, `RotationMatrix`):
/// those of 4 to 16 bytes are compared as their first and last word (4 or 8 bytes,
/// overlapping) inline, rather than by a call to the library's `memcmp` (a file's read
/// made some 400 such calls, each costing more than the comparison).
#[inline]
fn same_key(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    match a.len() {
        8..=16 => {
            a.first_chunk::<8>() == b.first_chunk::<8>()
                && a.last_chunk::<8>() == b.last_chunk::<8>()
        }
        4..=7 => {
            a.first_chunk::<4>() == b.first_chunk::<4>()
                && a.last_chunk::<4>() == b.last_chunk::<4>()
        }
        _ => a == b,
    }
}

/// Whether a byte left at an end by ASCII trimming is the end `str::trim` leaves too: not
/// a non-ASCII character's and not a vertical tab (white space to `str::trim`, not to
/// `trim_ascii`).
fn plain(b: u8) -> bool {
    b.is_ascii() && b != 0x0b
}

/// `s` without white space at its end: ASCII trimming where the end is ASCII, Unicode
/// trimming otherwise (as [`trim`]).
pub(super) fn trim_end(s: &str) -> &str {
    let t = s.trim_ascii_end();
    match t.as_bytes().last() {
        Some(&b) if !plain(b) => t.trim_end(),
        _ => t,
    }
}

/// `s` without white space around it: ASCII trimming where the ends are ASCII (every
/// line of these files), Unicode trimming otherwise.
pub(super) fn trim(s: &str) -> &str {
    let t = s.trim_ascii();
    match (t.as_bytes().first(), t.as_bytes().last()) {
        (Some(&a), Some(&b)) if !(plain(a) && plain(b)) => t.trim(),
        _ => t,
    }
}

impl<'t, 'a> Reader<'t, 'a> {
    pub(super) fn text(&self, n: usize) -> &'a str {
        self.tree.node(n).text
    }

    /// The line's text without white space around it.
    pub(super) fn key(&self, n: usize) -> &'a str {
        self.tree.node(n).trimmed
    }

    pub(super) fn line(&self, n: usize) -> usize {
        self.tree.node(n).line
    }

    pub(super) fn kids(&self, n: usize) -> Kids<'t, 'a> {
        let nodes = &self.tree.nodes[..];
        Kids {
            nodes,
            next: n + 1,
            end: nodes.get(n).map_or(0, |node| node.end.min(nodes.len())),
        }
    }

    pub(super) fn child(&self, n: usize, key: &str) -> Option<usize> {
        self.kids(n).find(|&c| same_key(self.key(c), key))
    }

    pub(super) fn req(&self, n: usize, key: &str) -> Result<usize> {
        self.child(n, key).ok_or_else(|| {
            ModelError::at_line(self.line(n), format!("'{}' has no '{key}'", self.key(n)))
        })
    }

    /// Refuses children other than `known`.
    pub(super) fn only(&self, n: usize, known: &[&str]) -> Result<()> {
        for c in self.kids(n) {
            let key = self.key(c);
            if !known.iter().any(|k| same_key(k, key)) {
                return Err(ModelError::at_line(
                    self.line(c),
                    format!("'{key}' in '{}' is not understood", self.key(n)),
                ));
            }
        }
        Ok(())
    }

    /// The one value line under item `n`.
    pub(super) fn value(&self, n: usize) -> Result<&'a str> {
        let mut kids = self.kids(n);
        match (kids.next(), kids.next()) {
            (Some(v), None) => Ok(self.key(v)),
            (None, _) => Err(ModelError::at_line(
                self.line(n),
                format!("'{}' has no value", self.key(n)),
            )),
            (Some(_), Some(extra)) => Err(ModelError::at_line(
                self.line(extra),
                format!("'{}' has more than one value line", self.key(n)),
            )),
        }
    }

    pub(super) fn value_of(&self, n: usize, key: &str) -> Result<&'a str> {
        self.value(self.req(n, key)?)
    }

    pub(super) fn numbers(&self, line_node: usize) -> Result<Vec<f64>> {
        self.text(line_node)
            .split(['\t', ' '])
            .filter(|s| !s.is_empty())
            .map(|s| {
                parse_number(s).ok_or_else(|| {
                    ModelError::at_line(self.line(line_node), format!("'{s}' is not a number"))
                })
            })
            .collect()
    }

    /// The three numbers on line `line_node` (without a list: poses are most of a file).
    fn three_numbers(&self, line_node: usize) -> Result<[f64; 3]> {
        let mut out = [0.0; 3];
        let mut count = 0;
        let text = self.text(line_node);
        let bytes = text.as_bytes();
        if let Some(whole) = three_whole_digits(bytes) {
            return Ok(whole);
        }
        // Tokens between tabs and spaces (ASCII cuts, so on character boundaries), each
        // read as its end is found ([`scan_decimal`]), or in full when it is not a
        // decimal of the fast path ([`parse_token`]).
        let mut at = 0;
        while let Some(&b) = bytes.get(at) {
            if b == b'\t' || b == b' ' {
                at += 1;
                continue;
            }
            let (fast, len) = scan_decimal(bytes.get(at..).unwrap_or_default());
            let x = match fast {
                Some(x) => x,
                None => {
                    let s = text.get(at..at + len).unwrap_or("");
                    // (White space other than tabs and spaces is trimmed by the
                    // slower `parse_number`, as before.)
                    parse_token(s).or_else(|| parse_number(s)).ok_or_else(|| {
                        ModelError::at_line(self.line(line_node), format!("'{s}' is not a number"))
                    })?
                }
            };
            at += len;
            if let Some(slot) = out.get_mut(count) {
                *slot = x;
            }
            count += 1;
        }
        if count != 3 {
            return Err(ModelError::at_line(
                self.line(line_node),
                format!("expected 3 numbers, found {count}"),
            ));
        }
        Ok(out)
    }

    pub(super) fn number(&self, n: usize, key: &str) -> Result<f64> {
        let item = self.req(n, key)?;
        let text = self.value(item)?;
        parse_number(text).ok_or_else(|| {
            ModelError::at_line(self.line(item) + 1, format!("'{text}' is not a number"))
        })
    }

    pub(super) fn vec3(&self, n: usize) -> Result<[f64; 3]> {
        let mut kids = self.kids(n);
        let (Some(line), None) = (kids.next(), kids.next()) else {
            return Err(ModelError::at_line(
                self.line(n),
                format!("'{}' needs one line of 3 numbers", self.key(n)),
            ));
        };
        self.three_numbers(line)
    }

    pub(super) fn pose(&self, n: usize) -> Result<Pose> {
        let position = self.vec3(self.req(n, "Position3D")?)?;
        let rm = self.req(n, "RotationMatrix")?;
        let mut rows = self.kids(rm);
        let (Some(r0), Some(r1), Some(r2), None) =
            (rows.next(), rows.next(), rows.next(), rows.next())
        else {
            return Err(ModelError::at_line(
                self.line(rm),
                format!(
                    "a rotation matrix has 3 rows, found {}",
                    self.kids(rm).count()
                ),
            ));
        };
        let m = [
            self.three_numbers(r0)?,
            self.three_numbers(r1)?,
            self.three_numbers(r2)?,
        ];
        // Exported matrices carry rounding (seen: 1e-6 in cirpendu.asmt); they must be
        // rotations within ASMT_MATRIX_TOLERANCE and are made exact through the quaternion.
        crate::placement::check_rotation_matrix_within(&m, ASMT_MATRIX_TOLERANCE)
            .map_err(|e| ModelError::at_line(self.line(rm), e))?;
        Ok(Pose {
            position,
            quaternion: matrix_to_quaternion(m),
        })
    }

    /// Every line below `n`, indented relative to it: kept verbatim in `extra`.
    pub(super) fn raw_block(&self, n: usize) -> Value {
        let mut out = Vec::new();
        let reversed = |n: usize, depth: usize| {
            let mut kids: Vec<(usize, usize)> = self.kids(n).map(|c| (c, depth)).collect();
            kids.reverse();
            kids
        };
        let mut stack = reversed(n, 0);
        while let Some((c, depth)) = stack.pop() {
            out.push(Value::String(format!(
                "{}{}",
                "\t".repeat(depth),
                self.text(c)
            )));
            stack.extend(reversed(c, depth + 1));
        }
        Value::Array(out)
    }

    /// The text of the lines below `n` as the file has them, from the start of the first
    /// to the end of the last (empty without any): a block kept verbatim, which
    /// [`ExtraMap::insert_block`](super::extra::ExtraMap::insert_block) writes as
    /// [`Self::raw_block`]'s list when it is asked for.
    pub(super) fn block_lines(&self, n: usize) -> &'a str {
        let kids = self.kids(n);
        let Some(first) = kids.first() else {
            return "";
        };
        // The last line of the block: the node before where `n` ends (its last
        // descendant, the nodes being in file order).
        let last = kids.end - 1;
        let whole = self.tree.text;
        let offset = |s: &str| (s.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize);
        // The first line's start: before its tabs.
        let first_text = offset(self.text(first));
        let start = memchr::memrchr(
            b'\n',
            whole.as_bytes().get(..first_text).unwrap_or_default(),
        )
        .map_or(0, |k| k + 1);
        let end = offset(self.text(last)) + self.text(last).len();
        whole.get(start..end).unwrap_or("")
    }

    pub(super) fn require_empty(&self, n: usize, key: &str) -> Result<()> {
        match self.child(n, key) {
            Some(item) if !self.kids(item).is_empty() => {
                let first = self.kids(item).first().unwrap_or(item);
                Err(ModelError::at_line(
                    self.line(first),
                    format!("'{}' under '{key}' is not supported yet", self.key(first)),
                ))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{leading_tabs, same_key, three_whole_digits, trim, Tree, ROOT};
    use crate::asmt::number::parse_number;
    use crate::asmt::Reader;

    /// Children found by jumping over subtrees ([`super::Kids`]) are the lines one tab
    /// deeper than their parent that follow it until a line as shallow as the parent
    /// (found here from the tabs before each line's text), in file order: over the
    /// bundled `.asmt` files, the corpus beside the project when it is there, and a text
    /// with blank lines, tab-only lines and `\r`.
    #[test]
    fn children_are_the_lines_one_tab_deeper_until_the_subtree_ends() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let mut texts = vec![
            "Assembly\r\n\tA\r\n\t\ta1\n\n\t\ta2\n\t\t\n\tB\n\t\tb1\n\t\t\tb11\n\tC\nX".to_string(),
        ];
        for dir in ["fixtures/asmt", "../shared/external/ondsel-asmt"] {
            let Ok(entries) = std::fs::read_dir(format!("{root}/{dir}")) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry.path().extension().is_some_and(|e| e == "asmt") {
                    texts.push(std::fs::read_to_string(entry.path()).unwrap_or_default());
                }
            }
        }
        // The inline text and the bundled file at least (the corpus when it is there).
        assert!(texts.len() >= 2, "{} texts", texts.len());
        let mut checked = 0;
        for text in &texts {
            let Ok(tree) = Tree::parse(text) else {
                continue;
            };
            let reader = Reader {
                tree: &tree,
                contact_markers: Default::default(),
                curves: Default::default(),
            };
            // Each node's depth: the tabs before its text on its line (the root's -1).
            let depth = |n: usize| -> i64 {
                if n == ROOT {
                    return -1;
                }
                let at = tree.nodes[n].text.as_ptr() as usize - text.as_ptr() as usize;
                let start = text[..at].rfind('\n').map_or(0, |k| k + 1);
                (at - start) as i64
            };
            for n in 0..tree.nodes.len() {
                let mut expected = Vec::new();
                for c in n + 1..tree.nodes.len() {
                    if depth(c) <= depth(n) {
                        break;
                    }
                    if depth(c) == depth(n) + 1 {
                        expected.push(c);
                    }
                }
                let found: Vec<usize> = reader.kids(n).collect();
                assert_eq!(found, expected, "node {n} (line {})", reader.line(n));
                assert_eq!(reader.kids(n).first(), expected.first().copied());
                assert_eq!(reader.kids(n).is_empty(), expected.is_empty());
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked} nodes");
        println!("{} texts, {checked} nodes' children compared", texts.len());
    }

    /// Trimming the end is `str::trim_end`, ASCII or not.
    #[test]
    fn trimming_the_end_is_the_library_s() {
        for s in [
            "",
            " ",
            "a",
            "a \t\r\n",
            "a\u{b}",
            "a\u{a0}",
            "\u{b} \u{2003}",
            "é ",
            " a",
        ] {
            assert_eq!(super::trim_end(s), s.trim_end(), "{s:?}");
        }
    }

    /// The tree stops at the first unindented `TimeSeries` line, wherever it is (the
    /// first line, after `\r\n`, the last line without a line end), and only there.
    #[test]
    fn the_tree_ends_at_the_time_series_line() {
        let cases = [
            ("TimeSeries\nNumber", Some((1, 0)), 1),
            ("A\n\tB\nTimeSeries\nNumber\t1", Some((3, 5)), 3),
            ("A\r\n\tB\r\nTimeSeries\r\n", Some((3, 7)), 3),
            ("A\n\tTimeSeries\nTimeSeries", Some((3, 14)), 3),
            ("A\n\tB\n", None, 3),
            ("A\nTimeSeriesX\n\tB", Some((2, 2)), 2),
            ("", None, 1),
        ];
        for (text, start, nodes) in cases {
            let Ok(tree) = Tree::parse(text) else {
                panic!("{text:?} does not parse");
            };
            assert_eq!(tree.time_series_start(), start, "{text:?}");
            assert_eq!(tree.nodes.len(), nodes, "{text:?}");
        }
    }

    proptest::proptest! {
        /// The word-at-a-time leading tabs are a byte-by-byte search's, on texts of
        /// every length around the word, with line ends, tabs, `\r`, spaces and bytes
        /// with the high bit set anywhere.
        #[test]
        fn leading_tabs_are_a_byte_by_byte_search(
            text in proptest::collection::vec(
                proptest::sample::select(vec![b'\t', b'\n', b'\r', b' ', b'a', 0x0a ^ 0x80, 0x89, 0]),
                0..80,
            ),
            tabs in 0usize..20,
        ) {
            let mut bytes = vec![b'\t'; tabs];
            bytes.extend(&text);
            let leading = bytes.iter().take_while(|&&b| b == b'\t').count();
            proptest::prop_assert_eq!(leading_tabs(&bytes), leading);
        }
    }

    /// The whole-digit lines are read as the general path reads them, for every three
    /// digits; any other line (a sign, a second digit, a fraction, a missing or extra
    /// blank, a letter) is left to it.
    #[test]
    fn whole_digit_lines_are_the_general_reading() {
        for n in 0..1000 {
            let d = [n / 100, n / 10 % 10, n % 10];
            let line = format!("{}.0 \t{}.0 \t{}.0 ", d[0], d[1], d[2]);
            let general: Vec<f64> = line
                .split(['\t', ' '])
                .filter(|s| !s.is_empty())
                .map(|s| parse_number(s).unwrap())
                .collect();
            let whole = three_whole_digits(line.as_bytes()).unwrap();
            assert_eq!(
                whole.map(f64::to_bits).to_vec(),
                general.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "{line:?}"
            );
        }
        for line in [
            "-1.0 \t0.0 \t0.0 ",
            "1.0 \t0.0 \t0.0",
            "1.0 \t0.0 \t0.0  ",
            "1.0\t0.0 \t0.0 ",
            "1.0 \t0.5 \t0.0 ",
            "10.0 \t0.0 \t0.0 ",
            "1.0 \t0.0 \ta.0 ",
            "1.0 \t/.0 \t0.0 ",
            "1.0 \t:.0 \t0.0 ",
            "1.0 \t0.0 \t0.0 \t0.0 ",
            "",
        ] {
            assert_eq!(three_whole_digits(line.as_bytes()), None, "{line:?}");
        }
    }

    /// The word comparison is string equality, for keys of every length to 20 bytes
    /// differing at any one byte (first, last, inside either word), or in length.
    #[test]
    fn keys_compare_as_strings() {
        let base = "RotationMatrix3D_xyz";
        for len in 0..=base.len() {
            let a = &base[..len];
            assert!(same_key(a, a), "{a:?}");
            for at in 0..len {
                // The key is ASCII: a byte with its 0x20 bit flipped stays ASCII.
                let b: String = a
                    .bytes()
                    .enumerate()
                    .map(|(k, c)| char::from(if k == at { c ^ 0x20 } else { c }))
                    .collect();
                assert_eq!(same_key(a, &b), a == b, "{a:?} {b:?}");
            }
            if len > 0 {
                assert!(!same_key(a, &base[..len - 1]), "{a:?}");
            }
        }
    }

    #[test]
    fn trimming_is_str_trim() {
        for s in [
            "",
            "  ",
            "\tName \r",
            "Name",
            " a b ",
            "\u{b}vt\u{b}",
            "\u{a0}nbsp\u{2003}",
            " \u{3000}wide ",
            "é",
            " é ",
        ] {
            assert_eq!(trim(s), s.trim(), "{s:?}");
        }
    }
}
