//! The indentation tree of an `.asmt` file (a line's children are the following lines
//! indented one tab deeper), and reading items from it: values, numbers, poses, blocks
//! kept verbatim, the keys an item may have.

use serde_json::Value;

use super::{Reader, Result, ASMT_MATRIX_TOLERANCE};
use crate::error::ModelError;
use crate::placement::{matrix_to_quaternion, Pose};

/// One line of the file in the tree.
#[derive(Debug)]
pub(super) struct Node<'a> {
    line: usize,
    text: &'a str,
    children: Vec<usize>,
}

/// The indentation tree of the part of the file before `TimeSeries`.
#[derive(Debug)]
pub(super) struct Tree<'a> {
    pub(super) nodes: Vec<Node<'a>>,
    /// The line of `TimeSeries`, when the file has the block.
    time_series: Option<usize>,
    /// The whole text (its last line is counted only for an error).
    text: &'a str,
}

pub(super) const ROOT: usize = 0;

impl<'a> Tree<'a> {
    pub(super) fn parse(text: &'a str) -> Result<Self> {
        let mut nodes = vec![Node {
            line: 0,
            text: "",
            children: Vec::new(),
        }];
        // (node, depth) of the open ancestors; the root has depth -1.
        let mut stack: Vec<(usize, isize)> = vec![(ROOT, -1)];
        let mut time_series = None;
        for (k, raw) in text.split('\n').enumerate() {
            let line = k + 1;
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            let content = raw.trim_start_matches('\t');
            let depth = (raw.len() - content.len()) as isize;
            // A line of tabs only is an empty value (e.g. a joint with no name); a
            // line with nothing at all is skipped.
            if content.trim().is_empty() && (depth == 0 || !content.is_empty()) {
                continue;
            }
            if depth == 0 && content.starts_with("TimeSeries") {
                time_series = Some(line);
                break;
            }
            if content.starts_with(' ') {
                return Err(ModelError::at_line(line, "indentation must be tabs"));
            }
            while stack.last().is_some_and(|&(_, d)| d >= depth) {
                stack.pop();
            }
            let Some(&(parent, parent_depth)) = stack.last() else {
                return Err(ModelError::at_line(line, "indentation out of place"));
            };
            if depth != parent_depth + 1 {
                return Err(ModelError::at_line(
                    line,
                    format!(
                        "indented {} tabs deeper than the line it belongs to",
                        depth - parent_depth
                    ),
                ));
            }
            let id = nodes.len();
            nodes.push(Node {
                line,
                text: content,
                children: Vec::new(),
            });
            nodes[parent].children.push(id);
            stack.push((id, depth));
        }
        Ok(Tree {
            nodes,
            time_series,
            text,
        })
    }

    /// The line of `TimeSeries`, if the file has the block.
    pub(super) fn time_series_line(&self) -> Option<usize> {
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

/// Number syntax of the files: decimal, possibly with an OndselSolver `d` marker
/// (`2.0d`, `1.0d-3`).
pub(super) fn parse_number(text: &str) -> Option<f64> {
    let t = text.trim();
    let t = t.strip_suffix('d').unwrap_or(t);
    let x = if t.contains('d') {
        t.replace('d', "e").parse::<f64>()
    } else {
        t.parse::<f64>()
    };
    x.ok().filter(|x| x.is_finite())
}

impl<'a> Reader<'_, 'a> {
    pub(super) fn text(&self, n: usize) -> &'a str {
        self.tree.node(n).text
    }

    pub(super) fn line(&self, n: usize) -> usize {
        self.tree.node(n).line
    }

    pub(super) fn kids(&self, n: usize) -> &[usize] {
        &self.tree.node(n).children
    }

    pub(super) fn child(&self, n: usize, key: &str) -> Option<usize> {
        self.kids(n)
            .iter()
            .copied()
            .find(|&c| self.text(c).trim() == key)
    }

    pub(super) fn req(&self, n: usize, key: &str) -> Result<usize> {
        self.child(n, key).ok_or_else(|| {
            ModelError::at_line(
                self.line(n),
                format!("'{}' has no '{key}'", self.text(n).trim()),
            )
        })
    }

    /// Refuses children other than `known`.
    pub(super) fn only(&self, n: usize, known: &[&str]) -> Result<()> {
        for &c in self.kids(n) {
            let key = self.text(c).trim();
            if !known.contains(&key) {
                return Err(ModelError::at_line(
                    self.line(c),
                    format!("'{key}' in '{}' is not understood", self.text(n).trim()),
                ));
            }
        }
        Ok(())
    }

    /// The one value line under item `n`.
    pub(super) fn value(&self, n: usize) -> Result<&'a str> {
        match self.kids(n) {
            [v] => Ok(self.text(*v).trim()),
            [] => Err(ModelError::at_line(
                self.line(n),
                format!("'{}' has no value", self.text(n).trim()),
            )),
            [_, extra, ..] => Err(ModelError::at_line(
                self.line(*extra),
                format!("'{}' has more than one value line", self.text(n).trim()),
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

    pub(super) fn number(&self, n: usize, key: &str) -> Result<f64> {
        let item = self.req(n, key)?;
        let text = self.value(item)?;
        parse_number(text).ok_or_else(|| {
            ModelError::at_line(self.line(item) + 1, format!("'{text}' is not a number"))
        })
    }

    pub(super) fn vec3(&self, n: usize) -> Result<[f64; 3]> {
        let [line] = self.kids(n) else {
            return Err(ModelError::at_line(
                self.line(n),
                format!("'{}' needs one line of 3 numbers", self.text(n).trim()),
            ));
        };
        match self.numbers(*line)?.as_slice() {
            [a, b, c] => Ok([*a, *b, *c]),
            other => Err(ModelError::at_line(
                self.line(*line),
                format!("expected 3 numbers, found {}", other.len()),
            )),
        }
    }

    pub(super) fn pose(&self, n: usize) -> Result<Pose> {
        let position = self.vec3(self.req(n, "Position3D")?)?;
        let rm = self.req(n, "RotationMatrix")?;
        let rows = self.kids(rm);
        if rows.len() != 3 {
            return Err(ModelError::at_line(
                self.line(rm),
                format!("a rotation matrix has 3 rows, found {}", rows.len()),
            ));
        }
        let mut m = [[0.0; 3]; 3];
        for (r, &row) in rows.iter().enumerate() {
            match self.numbers(row)?.as_slice() {
                [a, b, c] => m[r] = [*a, *b, *c],
                other => {
                    return Err(ModelError::at_line(
                        self.line(row),
                        format!("expected 3 numbers, found {}", other.len()),
                    ))
                }
            }
        }
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
        let mut stack: Vec<(usize, usize)> = self.kids(n).iter().rev().map(|&c| (c, 0)).collect();
        while let Some((c, depth)) = stack.pop() {
            out.push(Value::String(format!(
                "{}{}",
                "\t".repeat(depth),
                self.text(c)
            )));
            stack.extend(self.kids(c).iter().rev().map(|&g| (g, depth + 1)));
        }
        Value::Array(out)
    }

    pub(super) fn require_empty(&self, n: usize, key: &str) -> Result<()> {
        match self.child(n, key) {
            Some(item) if !self.kids(item).is_empty() => Err(ModelError::at_line(
                self.line(self.kids(item)[0]),
                format!(
                    "'{}' under '{key}' is not supported yet",
                    self.text(self.kids(item)[0]).trim()
                ),
            )),
            _ => Ok(()),
        }
    }
}
