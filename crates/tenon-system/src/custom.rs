//! `expression` joints: residuals the user writes, over measures of marker i relative to
//! marker j, lowered into the same graph as every other joint's equations and
//! differentiated the same way.
//!
//! With `d = O_i - O_j` and marker j's axes `x_j, y_j, z_j` (world coordinates):
//!
//! | measure | expression |
//! |---|---|
//! | `distance` | `sqrt(d . d)` (its derivative is infinite where the origins meet: use `dx`, `dy`, `dz` there) |
//! | `dx`, `dy`, `dz` | `d . x_j`, `d . y_j`, `d . z_j` |
//! | `angle` | the continuous angle of `x_i` from `x_j` about `z_j`, `atan2(x_i . y_j, x_i . x_j)` plus whole turns, as a driving angle is measured |
//! | `tilt` | `atan2(|z_i x z_j|, z_i . z_j)`, 0 to 180 degrees (its derivative is infinite where the axes are parallel: `parallel` or an expression in `dz`-like dot products holds there) |
//!
//! Angles are in the file's angle unit, lengths in its length unit, so `angle - 30`
//! means 30 degrees in a file in degrees. A residual is a length when it uses a length
//! measure, else an angle (for tolerances and reports).

use tenon_expr::{ExprGraph, ExprId, ParamId};
use tenon_model::{AngleUnit, MEASURES};

use crate::error::SystemError;
use crate::frames::{offset, Frame, Z};
use crate::joints::{self, angle, length, AngleRequest, JointBuilder, Residual};

/// The measures of one joint, each built when a residual first uses it.
struct Measures<'f> {
    i: &'f Frame,
    j: &'f Frame,
    unit: AngleUnit,
    built: [Option<ExprId>; MEASURES.len()],
}

impl Measures<'_> {
    fn get(&mut self, b: &mut dyn JointBuilder, name: &str) -> Option<ExprId> {
        let k = MEASURES.iter().position(|&m| m == name)?;
        if let Some(e) = self.built[k] {
            return Some(e);
        }
        let (i, j) = (self.i, self.j);
        let to_unit = 1.0 / self.unit.radians();
        let e = match name {
            "distance" => {
                let g = b.graph();
                let d = offset(g, i, j);
                let dd = g.dot(&d, &d);
                g.sqrt(dd)
            }
            "dx" | "dy" | "dz" => {
                let axis = match name {
                    "dx" => 0,
                    "dy" => 1,
                    _ => 2,
                };
                let g = b.graph();
                let d = offset(g, i, j);
                j.along(g, d, axis)
            }
            "angle" => {
                let raw = joints::twist_angle(b.graph(), i, j);
                let a = b.continuous_angle(AngleRequest { raw, target: None });
                b.graph().scale(a, to_unit)
            }
            _ => {
                let g = b.graph();
                let (zi, zj) = (i.z(g), j.z(g));
                let c = cross(g, zi, zj);
                let cc = g.dot(&c, &c);
                let s = g.sqrt(cc);
                let cos = i.axes_dot(g, Z, j, Z);
                let t = g.atan2(s, cos);
                g.scale(t, to_unit)
            }
        };
        self.built[k] = Some(e);
        Some(e)
    }
}

fn cross(g: &mut ExprGraph, a: [ExprId; 3], b: [ExprId; 3]) -> [ExprId; 3] {
    let term = |g: &mut ExprGraph, p: usize, q: usize| {
        let l = g.mul(a[p], b[q]);
        let r = g.mul(a[q], b[p]);
        g.sub(l, r)
    };
    [term(g, 1, 2), term(g, 2, 0), term(g, 0, 1)]
}

/// The residuals of an `expression` joint between frames `i` and `j`: each text parsed
/// and lowered with the measures, the parameters `params` (with `t`) and the file's
/// angle unit; `what` names the joint in errors.
pub(crate) fn residuals(
    b: &mut dyn JointBuilder,
    texts: &[String],
    (i, j): (&Frame, &Frame),
    params: &[(String, ParamId)],
    unit: AngleUnit,
    what: &str,
) -> Result<Vec<Residual>, SystemError> {
    let mut measures = Measures {
        i,
        j,
        unit,
        built: [None; MEASURES.len()],
    };
    let mut out = Vec::with_capacity(texts.len());
    for (k, text) in texts.iter().enumerate() {
        let problem = |message: String| SystemError::Expression {
            what: format!("{what} residuals[{k}]"),
            message,
        };
        let parsed = tenon_expr::parse(text).map_err(|e| problem(format!("'{text}': {e}")))?;
        // Measures first (built outside the parser's borrow of the graph), then lowered.
        let names: Vec<String> = parsed.names().map(str::to_string).collect();
        let mut known: Vec<(String, ExprId)> = Vec::new();
        let mut lengths = false;
        for name in &names {
            if let Some(e) = measures.get(b, name) {
                lengths |= !matches!(name.as_str(), "angle" | "tilt");
                known.push((name.clone(), e));
            }
        }
        if known.is_empty() {
            return Err(problem(format!(
                "'{text}' constrains nothing: it uses no measure of the joint's markers ({})",
                MEASURES.join(", ")
            )));
        }
        let expr = parsed
            .lower(b.graph(), unit.parse_options(), &mut |name, g| {
                known
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|&(_, e)| e)
                    .or_else(|| {
                        params
                            .iter()
                            .find(|(n, _)| n == name)
                            .map(|&(_, p)| g.param(p))
                    })
            })
            .map_err(|e| problem(format!("'{text}': {e}")))?;
        out.push(if lengths { length(expr) } else { angle(expr) });
    }
    Ok(out)
}
