//! Frames as expressions: a part's pose (unknowns for free parts, parameter expressions
//! for grounded ones), a marker's placement on it, and the marker's world frame.

use std::cell::Cell;

use tenon_expr::{ExprGraph, ExprId, ParamId};
use tenon_model::{AngleUnit, Placement, Rotation, Scalar};

use crate::error::SystemError;

/// A marker's frame in world coordinates: its origin and the world vectors of its x, y
/// and z axes, each made in the graph when first asked for (a revolute's equations read
/// three of the six axes of its two markers, a ball's none: the rest had been a third of
/// the nodes of a small file's frames).
///
/// Architecture invariant: a frame's origin and axes are the same nodes however often
/// they are asked for (kept once made; and the graph would find them again).
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    /// The part's pose in the world.
    part: Transform,
    /// The marker's placement on the part.
    local: Transform,
    origin: Cell<Option<[ExprId; 3]>>,
    axes: [Cell<Option<[ExprId; 3]>>; 3],
}

impl Frame {
    /// The frame of a marker placed by `local` on a part posed by `part`.
    pub(crate) fn new(part: Transform, local: Transform) -> Frame {
        Frame {
            part,
            local,
            origin: Cell::new(None),
            axes: [Cell::new(None), Cell::new(None), Cell::new(None)],
        }
    }

    /// `O = R_part t_local + t_part`.
    pub(crate) fn origin(&self, g: &mut ExprGraph) -> [ExprId; 3] {
        if let Some(o) = self.origin.get() {
            return o;
        }
        let r = rotate(g, &self.part.rotation, self.local.translation);
        let t = self.part.translation;
        let o = [g.add(r[0], t[0]), g.add(r[1], t[1]), g.add(r[2], t[2])];
        self.origin.set(Some(o));
        o
    }

    /// Local axis `k` (0 x, 1 y, 2 z) in the world: `R_part` times column `k` of the
    /// marker's rotation.
    pub(crate) fn axis(&self, g: &mut ExprGraph, k: usize) -> [ExprId; 3] {
        let Some(slot) = self.axes.get(k) else {
            return [g.zero(); 3];
        };
        if let Some(a) = slot.get() {
            return a;
        }
        let m = &self.local.rotation;
        let a = rotate(g, &self.part.rotation, [m[0][k], m[1][k], m[2][k]]);
        slot.set(Some(a));
        a
    }

    pub(crate) fn x(&self, g: &mut ExprGraph) -> [ExprId; 3] {
        self.axis(g, 0)
    }
    pub(crate) fn y(&self, g: &mut ExprGraph) -> [ExprId; 3] {
        self.axis(g, 1)
    }
    pub(crate) fn z(&self, g: &mut ExprGraph) -> [ExprId; 3] {
        self.axis(g, 2)
    }

    /// `a_self . b_other`: axis `a` of this frame against axis `b` of `other`.
    pub(crate) fn axes_dot(&self, g: &mut ExprGraph, a: usize, other: &Frame, b: usize) -> ExprId {
        let (u, v) = (self.axis(g, a), other.axis(g, b));
        g.dot(&u, &v)
    }

    /// `v . a_self`: vector `v` along axis `a` of this frame.
    pub(crate) fn along(&self, g: &mut ExprGraph, v: [ExprId; 3], a: usize) -> ExprId {
        let u = self.axis(g, a);
        g.dot(&v, &u)
    }
}

/// Axis indices of a frame.
pub(crate) const X: usize = 0;
pub(crate) const Y: usize = 1;
pub(crate) const Z: usize = 2;

/// `O_i - O_j`.
pub(crate) fn offset(g: &mut ExprGraph, i: &Frame, j: &Frame) -> [ExprId; 3] {
    let (a, b) = (i.origin(g), j.origin(g));
    sub3(g, a, b)
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
    // The constant 2 looked up once (nine lookups in the table a part were a tenth of
    // this function), at the point it was first made before.
    let mut two_const = None;
    let mut two = |a: ExprId, b: ExprId| {
        let m = g.mul(a, b);
        let c = *two_const.get_or_insert_with(|| g.constant(2.0));
        g.mul(c, m)
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
