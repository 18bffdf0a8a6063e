//! Frames as expressions: a part's pose (unknowns for free parts, parameter expressions
//! for grounded ones), a marker's placement on it, and the marker's world frame.

use tenon_expr::{ExprGraph, ExprId, ParamId};
use tenon_model::{AngleUnit, Placement, Rotation, Scalar};

use crate::error::SystemError;

/// A frame in world coordinates: origin and the world vectors of its x, y and z axes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame {
    pub(crate) origin: [ExprId; 3],
    /// `axes[k]` is local axis `k` (x, y, z) in world coordinates.
    pub(crate) axes: [[ExprId; 3]; 3],
}

impl Frame {
    pub(crate) fn x(&self) -> [ExprId; 3] {
        self.axes[0]
    }
    pub(crate) fn y(&self) -> [ExprId; 3] {
        self.axes[1]
    }
    pub(crate) fn z(&self) -> [ExprId; 3] {
        self.axes[2]
    }
}

/// A rigid transform as expressions: `world = R * local + t`, `R` by rows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transform {
    pub(crate) rotation: [[ExprId; 3]; 3],
    pub(crate) translation: [ExprId; 3],
}

/// What a lowered value belongs to, as an error names it: `part 'crank' placement`,
/// `joint 'j1' angle`, `motion of joint 'j1'`. Written out only when an error is made
/// (a large build lowers hundreds of thousands of values and fails on none).
#[derive(Debug, Clone, Copy)]
pub(crate) struct What<'a> {
    /// Before the id: `part`, `joint`, `motion of joint`.
    kind: &'static str,
    /// The element's id.
    id: &'a str,
    /// After the id (a field's key, `placement`, `limit`), or empty.
    detail: &'a str,
}

impl<'a> What<'a> {
    /// `kind 'id'`.
    pub(crate) fn of(kind: &'static str, id: &'a str) -> Self {
        What {
            kind,
            id,
            detail: "",
        }
    }

    /// The same element, with `detail` after its id.
    pub(crate) fn with(self, detail: &'a str) -> Self {
        What { detail, ..self }
    }
}

impl std::fmt::Display for What<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} '{}'", self.kind, self.id)?;
        if !self.detail.is_empty() {
            write!(f, " {}", self.detail)?;
        }
        Ok(())
    }
}

/// Lowers scalars of the model (numbers and expression strings) into the graph, with
/// parameters as leaves so changing one needs no rebuild.
pub(crate) struct Lowering<'a> {
    pub(crate) params: &'a [(String, ParamId)],
    pub(crate) angle_unit: AngleUnit,
}

impl Lowering<'_> {
    pub(crate) fn scalar(
        &self,
        g: &mut ExprGraph,
        s: &Scalar,
        what: What<'_>,
    ) -> Result<ExprId, SystemError> {
        match s {
            Scalar::Number(x) => Ok(g.constant(*x)),
            Scalar::Expr(text) => {
                let params = self.params;
                tenon_expr::parse_into(g, text, self.angle_unit.parse_options(), &mut |name, g| {
                    params
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|&(_, p)| g.param(p))
                })
                .map_err(|e| SystemError::Expression {
                    what: what.to_string(),
                    message: format!("'{text}': {e}"),
                })
            }
        }
    }

    /// An angle in the file's unit, as radians.
    pub(crate) fn angle(
        &self,
        g: &mut ExprGraph,
        s: &Scalar,
        what: What<'_>,
    ) -> Result<ExprId, SystemError> {
        let v = self.scalar(g, s, what)?;
        Ok(g.scale(v, self.angle_unit.radians()))
    }

    fn vec3(
        &self,
        g: &mut ExprGraph,
        v: &[Scalar; 3],
        what: What<'_>,
    ) -> Result<[ExprId; 3], SystemError> {
        Ok([
            self.scalar(g, &v[0], what)?,
            self.scalar(g, &v[1], what)?,
            self.scalar(g, &v[2], what)?,
        ])
    }

    /// A placement as a transform (rotation rows and translation).
    pub(crate) fn placement(
        &self,
        g: &mut ExprGraph,
        p: &Placement,
        what: What<'_>,
    ) -> Result<Transform, SystemError> {
        if let Some(numeric) = numeric_placement(p, self.angle_unit) {
            return Ok(numeric.map(g));
        }
        let translation = self.vec3(g, &p.position, what)?;
        let rotation = match &p.rotation {
            Rotation::Identity => identity(g),
            Rotation::Quaternion(q) => {
                let raw = [
                    self.scalar(g, &q[0], what)?,
                    self.scalar(g, &q[1], what)?,
                    self.scalar(g, &q[2], what)?,
                    self.scalar(g, &q[3], what)?,
                ];
                let raw = prescale(g, raw);
                let sq: Vec<ExprId> = raw.iter().map(|&c| g.powi(c, 2)).collect();
                let sum = g.sum(&sq);
                let norm = g.sqrt(sum);
                let unit = raw.map(|c| g.div(c, norm));
                quaternion_matrix(g, unit)
            }
            Rotation::AxisAngle { axis, angle } => {
                let a = self.vec3(g, axis, what)?;
                let a = prescale(g, a);
                let sq: Vec<ExprId> = a.iter().map(|&c| g.powi(c, 2)).collect();
                let sum = g.sum(&sq);
                let norm = g.sqrt(sum);
                let n = a.map(|c| g.div(c, norm));
                let theta = self.angle(g, angle, what)?;
                let half = g.scale(theta, 0.5);
                let (s, c) = (g.sin(half), g.cos(half));
                let q = [c, g.mul(s, n[0]), g.mul(s, n[1]), g.mul(s, n[2])];
                quaternion_matrix(g, q)
            }
            Rotation::Matrix(m) => {
                let mut rows = [[g.zero(); 3]; 3];
                for (r, row) in rows.iter_mut().zip(m) {
                    *r = self.vec3(g, row, what)?;
                }
                rows
            }
        };
        Ok(Transform {
            rotation,
            translation,
        })
    }
}

pub(crate) fn identity(g: &mut ExprGraph) -> [[ExprId; 3]; 3] {
    let (o, z) = (g.one(), g.zero());
    [[o, z, z], [z, o, z], [z, z, o]]
}

/// Rotation matrix (rows) of a unit quaternion `(w, x, y, z)` given as expressions:
/// `R = I + 2 w [v]x + 2 [v]x^2`, written out.
pub(crate) fn quaternion_matrix(g: &mut ExprGraph, q: [ExprId; 4]) -> [[ExprId; 3]; 3] {
    let [w, x, y, z] = q;
    let mut two = |a: ExprId, b: ExprId| {
        let m = g.mul(a, b);
        g.scale(m, 2.0)
    };
    let (xx, yy, zz) = (two(x, x), two(y, y), two(z, z));
    let (xy, xz, yz) = (two(x, y), two(x, z), two(y, z));
    let (wx, wy, wz) = (two(w, x), two(w, y), two(w, z));
    let one = g.one();
    let mut diag = |a: ExprId, b: ExprId| {
        let s = g.add(a, b);
        g.sub(one, s)
    };
    let (d0, d1, d2) = (diag(yy, zz), diag(xx, zz), diag(xx, yy));
    [
        [d0, g.sub(xy, wz), g.add(xz, wy)],
        [g.add(xy, wz), d1, g.sub(yz, wx)],
        [g.sub(xz, wy), g.add(yz, wx), d2],
    ]
}

/// A placement written in plain numbers, computed in numbers: the same operations in
/// the same order as the expressions' constant folding (so the same values to the
/// bit), without interning the dozens of intermediate constants a marker's rotation
/// takes (most markers of most files are numbers).
struct NumericPlacement {
    rotation: [[f64; 3]; 3],
    translation: [f64; 3],
}

impl NumericPlacement {
    fn map(&self, g: &mut ExprGraph) -> Transform {
        Transform {
            rotation: self.rotation.map(|row| row.map(|x| g.constant(x))),
            translation: self.translation.map(|x| g.constant(x)),
        }
    }
}

fn numbers<const N: usize>(v: &[Scalar; N]) -> Option<[f64; N]> {
    let mut out = [0.0; N];
    for (o, s) in out.iter_mut().zip(v) {
        *o = s.as_number()?;
    }
    Some(out)
}

/// [`prescale`] and normalisation, in numbers.
fn unit_numbers<const N: usize>(v: [f64; N]) -> [f64; N] {
    let largest = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let v = if largest > 0.0 && largest.is_finite() {
        v.map(|x| x / largest)
    } else {
        v
    };
    let sum = v.iter().fold(0.0, |s, x| s + x.powi(2));
    let norm = sum.sqrt();
    v.map(|x| x / norm)
}

/// [`quaternion_matrix`] in numbers.
fn quaternion_numbers(q: [f64; 4]) -> [[f64; 3]; 3] {
    let [w, x, y, z] = q;
    let two = |a: f64, b: f64| 2.0 * (a * b);
    let (xx, yy, zz) = (two(x, x), two(y, y), two(z, z));
    let (xy, xz, yz) = (two(x, y), two(x, z), two(y, z));
    let (wx, wy, wz) = (two(w, x), two(w, y), two(w, z));
    let diag = |a: f64, b: f64| 1.0 - (a + b);
    [
        [diag(yy, zz), xy - wz, xz + wy],
        [xy + wz, diag(xx, zz), yz - wx],
        [xz - wy, yz + wx, diag(xx, yy)],
    ]
}

/// A placement given in plain numbers, as numbers: its translation and rotation rows
/// (the same values as lowering it and evaluating the constants). `None` when a value
/// is an expression.
pub(crate) fn placement_numbers(
    p: &Placement,
    unit: AngleUnit,
) -> Option<([f64; 3], [[f64; 3]; 3])> {
    numeric_placement(p, unit).map(|n| (n.translation, n.rotation))
}

fn numeric_placement(p: &Placement, unit: AngleUnit) -> Option<NumericPlacement> {
    let translation = numbers(&p.position)?;
    let rotation = match &p.rotation {
        Rotation::Identity => [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        Rotation::Quaternion(q) => quaternion_numbers(unit_numbers(numbers(q)?)),
        Rotation::AxisAngle { axis, angle } => {
            let n = unit_numbers(numbers(axis)?);
            let half = 0.5 * (unit.radians() * angle.as_number()?);
            let (s, c) = (half.sin(), half.cos());
            quaternion_numbers([c, s * n[0], s * n[1], s * n[2]])
        }
        Rotation::Matrix(m) => [numbers(&m[0])?, numbers(&m[1])?, numbers(&m[2])?],
    };
    Some(NumericPlacement {
        rotation,
        translation,
    })
}

/// `R * v` for a rotation given by rows.
pub(crate) fn rotate(g: &mut ExprGraph, r: &[[ExprId; 3]; 3], v: [ExprId; 3]) -> [ExprId; 3] {
    [g.dot(&r[0], &v), g.dot(&r[1], &v), g.dot(&r[2], &v)]
}

/// The world frame of a marker placed by `local` on a part posed by `part`.
pub(crate) fn marker_frame(g: &mut ExprGraph, part: &Transform, local: &Transform) -> Frame {
    let r_local_origin = rotate(g, &part.rotation, local.translation);
    let origin = [
        g.add(r_local_origin[0], part.translation[0]),
        g.add(r_local_origin[1], part.translation[1]),
        g.add(r_local_origin[2], part.translation[2]),
    ];
    // Local axis k of the marker is column k of its rotation.
    let mut axes = [[g.zero(); 3]; 3];
    for (k, axis) in axes.iter_mut().enumerate() {
        let col = [
            local.rotation[0][k],
            local.rotation[1][k],
            local.rotation[2][k],
        ];
        *axis = rotate(g, &part.rotation, col);
    }
    Frame { origin, axes }
}

/// `a - b` for 3-vectors.
pub(crate) fn sub3(g: &mut ExprGraph, a: [ExprId; 3], b: [ExprId; 3]) -> [ExprId; 3] {
    [g.sub(a[0], b[0]), g.sub(a[1], b[1]), g.sub(a[2], b[2])]
}

/// A direction given in numbers, scaled by its largest component (so that the norm
/// taken next neither overflows nor underflows: a file may write `[1e200, 0, 0]`);
/// a direction with expressions is left as it is.
fn prescale<const N: usize>(g: &mut ExprGraph, v: [ExprId; N]) -> [ExprId; N] {
    let numbers: Option<Vec<f64>> = v.iter().map(|&e| g.as_const(e)).collect();
    let Some(numbers) = numbers else {
        return v;
    };
    let largest = numbers.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if !(largest > 0.0 && largest.is_finite()) {
        return v;
    }
    std::array::from_fn(|k| g.constant(numbers[k] / largest))
}

#[cfg(test)]
mod tests {
    use super::What;

    #[test]
    fn what_a_value_belongs_to_is_written_as_errors_name_it() {
        let joint = What::of("joint", "j1");
        assert_eq!(joint.to_string(), "joint 'j1'");
        assert_eq!(joint.with("angle").to_string(), "joint 'j1' angle");
        assert_eq!(
            What::of("part", "crank").with("placement").to_string(),
            "part 'crank' placement"
        );
        assert_eq!(
            What::of("motion of joint", "j1").to_string(),
            "motion of joint 'j1'"
        );
    }
}
