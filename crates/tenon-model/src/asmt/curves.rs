//! `RefCurves` of `.asmt` parts and the `CurveCurveContact` joints between them.
//!
//! A `RefCurve` is a frame on its part with a `GeneralSpline` drawn in it (rows `s`, `x`,
//! `y`, `z` of data points) and `CurveMarkers` (a name and a spline parameter `s`). A curve
//! that a contact names becomes a marker at the curve's frame (named as the curve marker)
//! and the contact joint's profile: the data points, which must close (the last repeats
//! the first) and lie in the frame's xy plane. Tenon joins them by its periodic cubic
//! spline at equal parameter steps (`CamProfile::Points`); the file's spline order and the
//! markers' `s` are kept under the joint's `extra`. A curve no contact names is kept
//! verbatim under its part's `extra`.

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{json, Value};

use super::{pose_placement, Reader, Result};
use crate::error::ModelError;
use crate::joint::{CamProfile, MAX_PROFILE_POINTS};
use crate::placement::Placement;
use crate::scalar::Scalar;

/// How far (relative to the curve's size) a closing point may be from the first point,
/// and a data point from its frame's xy plane.
const CURVE_TOLERANCE: f64 = 1e-9;

/// A curve marker that a contact names: its profile and what the file said of it.
#[derive(Debug, Clone)]
pub(super) struct ContactCurve {
    pub(super) profile: CamProfile,
    /// The file's spline order and the marker's parameter, kept under `extra`.
    pub(super) record: Value,
}

/// Curve markers of the file, by `(part name, marker name)`.
pub(super) type Curves = FxHashMap<(String, String), ContactCurve>;

/// A part's curves read: markers at the frames of curves that contacts name, and the raw
/// lines of the others.
pub(super) struct PartCurves {
    pub(super) markers: Vec<(String, Placement)>,
    pub(super) unused: Vec<Value>,
}

impl Reader<'_, '_> {
    /// `(part, marker)` names that `CurveCurveContact` joints refer to.
    pub(super) fn contact_marker_names(&self) -> FxHashSet<(String, String)> {
        let mut names = FxHashSet::default();
        for n in 0..self.tree.nodes.len() {
            if self.key(n) != "CurveCurveContact" {
                continue;
            }
            for key in ["MarkerI", "MarkerJ"] {
                let Some(item) = self.child(n, key) else {
                    continue;
                };
                let Ok(path) = self.value(item) else { continue };
                let mut tail = path.rsplit('/');
                if let (Some(marker), Some(part)) = (tail.next(), tail.next()) {
                    names.insert((part.to_string(), marker.to_string()));
                }
            }
        }
        names
    }

    /// Reads a part's `RefCurves`: markers for curves that contacts name (their
    /// profiles go into `curves`), the raw lines of the others.
    pub(super) fn ref_curves(
        &self,
        ref_curves: usize,
        part: &str,
        used: &FxHashSet<(String, String)>,
        curves: &mut Curves,
    ) -> Result<PartCurves> {
        let mut markers = Vec::new();
        let mut unused = Vec::new();
        for rc in self.kids(ref_curves) {
            if self.key(rc) != "RefCurve" {
                return Err(ModelError::at_line(
                    self.line(rc),
                    format!("'{}' in 'RefCurves' is not understood", self.key(rc)),
                ));
            }
            self.only(
                rc,
                &[
                    "Position3D",
                    "RotationMatrix",
                    "GeneralSpline",
                    "CurveMarkers",
                ],
            )?;
            let frame = pose_placement(&self.pose(rc)?);
            let mut names = Vec::new();
            if let Some(cms) = self.child(rc, "CurveMarkers") {
                for cm in self.kids(cms) {
                    if self.key(cm) != "CurveMarker" {
                        return Err(ModelError::at_line(
                            self.line(cm),
                            format!("'{}' in 'CurveMarkers' is not understood", self.key(cm)),
                        ));
                    }
                    self.only(cm, &["Name", "s"])?;
                    let name = self.value_of(cm, "Name")?.to_string();
                    let s = self.number(cm, "s")?;
                    names.push((name, s, self.line(cm)));
                }
            }
            let is_used = names
                .iter()
                .any(|(n, _, _)| used.contains(&(part.to_string(), n.clone())));
            let spline = self.req(rc, "GeneralSpline")?;
            // The spline is read (and checked) either way: a bad curve is an error even
            // when nothing uses it.
            let (points, order) = self.general_spline(spline)?;
            if !is_used {
                unused.push(json!({ "RefCurve": self.raw_block(rc) }));
                continue;
            }
            for (name, s, line) in names {
                if markers.iter().any(|(m, _)| *m == name) {
                    return Err(ModelError::at_line(
                        line,
                        format!("part '{part}' has two curve markers named '{name}'"),
                    ));
                }
                markers.push((name.clone(), frame.clone()));
                curves.insert(
                    (part.to_string(), name),
                    ContactCurve {
                        profile: CamProfile::Points(
                            points.iter().map(|p| p.map(Scalar::Number)).collect(),
                        ),
                        record: json!({ "Order": order, "s": s }),
                    },
                );
            }
        }
        Ok(PartCurves { markers, unused })
    }

    /// The data points of a `GeneralSpline` (the closing repeat dropped) and its order.
    fn general_spline(&self, spline: usize) -> Result<(Vec<[f64; 2]>, i64)> {
        let mut rows: FxHashMap<&str, (usize, Vec<f64>)> = FxHashMap::default();
        let mut order = None;
        for c in self.kids(spline) {
            let text = self.key(c);
            let key = text.split(['\t', ' ']).next().unwrap_or("");
            match key {
                "Order" => {
                    let v = self.value(c)?;
                    order = Some(v.parse::<i64>().ok().filter(|o| *o >= 1).ok_or_else(|| {
                        ModelError::at_line(
                            self.line(c) + 1,
                            format!("a spline order is a whole number from 1, found '{v}'"),
                        )
                    })?);
                }
                "DataPoints" if self.kids(c).is_empty() => {}
                "Number" | "s" | "x" | "y" | "z" => {
                    let numbers = self.numbers_after(c, key)?;
                    rows.insert(key, (self.line(c), numbers));
                }
                _ => {
                    return Err(ModelError::at_line(
                        self.line(c),
                        format!("'{key}' in 'GeneralSpline' is not understood"),
                    ))
                }
            }
        }
        let order = order.ok_or_else(|| {
            ModelError::at_line(self.line(spline), "'GeneralSpline' has no 'Order'")
        })?;
        let row = |k: &str| {
            rows.get(k).ok_or_else(|| {
                ModelError::at_line(
                    self.line(spline),
                    format!("'GeneralSpline' has no data row '{k}'"),
                )
            })
        };
        let (s_line, s) = row("s")?;
        let (_, x) = row("x")?;
        let (_, y) = row("y")?;
        let (z_line, z) = row("z")?;
        let n = s.len();
        for (k, (line, r)) in rows.iter() {
            if r.len() != n {
                return Err(ModelError::at_line(
                    *line,
                    format!("data row '{k}' has {} values, row 's' has {n}", r.len()),
                ));
            }
        }
        if !(4..=MAX_PROFILE_POINTS + 1).contains(&n) {
            return Err(ModelError::at_line(
                *s_line,
                format!(
                    "a contact curve has 4 to {} data points (the last closing it), found {n}",
                    MAX_PROFILE_POINTS + 1
                ),
            ));
        }
        if s.windows(2).any(|w| w[1] <= w[0]) {
            return Err(ModelError::at_line(
                *s_line,
                "the spline parameters 's' must increase",
            ));
        }
        let size = x
            .iter()
            .chain(y.iter())
            .fold(0.0_f64, |m, v| m.max(v.abs()))
            .max(f64::MIN_POSITIVE);
        if let Some(k) = z.iter().position(|v| v.abs() > CURVE_TOLERANCE * size) {
            return Err(ModelError::at_line(
                *z_line,
                format!(
                    "data point {} is off its curve frame's xy plane (z = {}); only plane \
                     curves are read",
                    k + 1,
                    z[k]
                ),
            ));
        }
        let closing = (x[n - 1] - x[0]).hypot(y[n - 1] - y[0]);
        if closing > CURVE_TOLERANCE * size {
            return Err(ModelError::at_line(
                self.line(spline),
                "the curve does not close (its last data point is not its first); a \
                 contact curve must be closed",
            ));
        }
        let points: Vec<[f64; 2]> = (0..n - 1).map(|k| [x[k], y[k]]).collect();
        for k in 1..points.len() {
            let (a, b) = (points[k - 1], points[k]);
            if (a[0] - b[0]).hypot(a[1] - b[1]) <= CURVE_TOLERANCE * size {
                return Err(ModelError::at_line(
                    *s_line,
                    format!("data point {} repeats the one before it", k + 1),
                ));
            }
        }
        Ok((points, order))
    }

    /// The numbers of a table row `key v1 v2 ...`.
    fn numbers_after(&self, n: usize, key: &str) -> Result<Vec<f64>> {
        let text = self.key(n);
        let rest = text.strip_prefix(key).unwrap_or(text);
        rest.split(['\t', ' '])
            .filter(|s| !s.is_empty())
            .map(|s| {
                super::parse_number(s).ok_or_else(|| {
                    ModelError::at_line(self.line(n), format!("'{s}' is not a number"))
                })
            })
            .collect()
    }
}
