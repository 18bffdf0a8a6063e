//! Motions (`RotationalMotion`, `TranslationalMotion`), general motions and limits of an
//! `.asmt` file, and OndselSolver's formulas in Tenon's expression syntax.

use serde_json::json;

use super::extra::ExtraMap;
use super::formula::{ondsel_formula, window};
use super::number::parse_number;
use super::{Reader, Result};
use crate::assembly::{Assembly, Coordinate, Motion};
use crate::error::ModelError;
use crate::joint::{Field, Joint, JointType, Limits, MarkerRef, MarkerSpec, Range};
use crate::placement::{matrix_to_quaternion, quaternion_to_matrix, Placement, Rotation};
use crate::scalar::Scalar;

/// An OndselSolver formula in Tenon's expression syntax: `time` becomes `t` and the
/// double-literal marker `d` goes (`2.0d*pi*time` -> `2.0*pi*t`).
pub(super) fn translate_formula(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut k = 0;
    while k < chars.len() {
        let c = chars[k];
        if c.is_ascii_digit() || (c == '.' && chars.get(k + 1).is_some_and(char::is_ascii_digit)) {
            let start = k;
            while k < chars.len() && (chars[k].is_ascii_digit() || chars[k] == '.') {
                k += 1;
            }
            out.extend(&chars[start..k]);
            if matches!(chars.get(k), Some('d' | 'e' | 'E')) {
                let exp_digits = match chars.get(k + 1) {
                    Some('+' | '-') => chars.get(k + 2).is_some_and(char::is_ascii_digit),
                    Some(d) => d.is_ascii_digit(),
                    None => false,
                };
                if exp_digits {
                    out.push('e');
                    k += 1;
                    if matches!(chars[k], '+' | '-') {
                        out.push(chars[k]);
                        k += 1;
                    }
                } else if chars[k] == 'd' {
                    k += 1; // a bare double marker
                }
            }
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = k;
            while k < chars.len() && (chars[k].is_alphanumeric() || chars[k] == '_') {
                k += 1;
            }
            let word: String = chars[start..k].iter().collect();
            out.push_str(if word == "time" { "t" } else { &word });
            continue;
        }
        out.push(c);
        k += 1;
    }
    out
}

impl<'a> Reader<'_, 'a> {
    pub(super) fn limit(&self, l: usize, assembly: &mut Assembly) -> Result<()> {
        let field = match self.key(l) {
            "RotationLimit" => Field::Angle,
            "TranslationLimit" => Field::Distance,
            other => {
                return Err(ModelError::at_line(
                    self.line(l),
                    format!("'{other}' in 'Limits' is not understood"),
                ))
            }
        };
        self.only(
            l,
            &[
                "Name",
                "MarkerI",
                "MarkerJ",
                "MotionJoint",
                "Limit",
                "Type",
                "Tol",
            ],
        )?;
        let joint_key = self.acted_joint(l, assembly)?;
        let limit_text = self.value_of(l, "Limit")?;
        let limit = match parse_number(limit_text) {
            Some(x) => Scalar::Number(x),
            None => Scalar::Expr(self.formula(l, "Limit", limit_text)?),
        };
        let kind = self.value_of(l, "Type")?;
        let Some(joint) = assembly.joint(joint_key).cloned() else {
            return Ok(());
        };
        if !joint.joint_type.has_free(field) {
            return Err(ModelError::at_line(
                self.line(l),
                format!(
                    "a {} joint has no free {} to limit",
                    joint.joint_type.name(),
                    field.key()
                ),
            ));
        }
        let mut limits = joint.limits.clone();
        let slot = match field {
            Field::Angle => &mut limits.angle,
            _ => &mut limits.distance,
        };
        let range = slot.get_or_insert_with(Range::default);
        // The limit bounds J's coordinate from I; the spec's is i's from j: the bound
        // changes sign and side.
        let limit = match limit {
            Scalar::Number(x) => Scalar::Number(-x),
            Scalar::Expr(e) => Scalar::Expr(format!("-({e})")),
        };
        match kind {
            "=<" | "<=" => range.min = Some(limit),
            "=>" | ">=" => range.max = Some(limit),
            other => {
                return Err(ModelError::at_line(
                    self.line(l),
                    format!("limit type '{other}' is not =< or =>"),
                ))
            }
        }
        assembly
            .set_joint_limits(joint_key, limits)
            .map_err(|e| ModelError::at_line(self.line(l), e.message()))
    }

    pub(super) fn motion(
        &self,
        m: usize,
        assembly: &mut Assembly,
        extra: &mut ExtraMap,
    ) -> Result<()> {
        let kind = self.key(m);
        let (coordinate, key) = match kind {
            "RotationalMotion" => (Coordinate::Angle, "RotationZ"),
            "TranslationalMotion" => (Coordinate::Distance, "TranslationZ"),
            "AllowRotation" => {
                // OndselSolver pins the joint's angle during its position initial
                // conditions and releases it afterwards; a least-change solve keeps it
                // anyway, so this adds no equation. Kept under extra.
                self.only(m, &["Name", "MarkerI", "MarkerJ", "MotionJoint"])?;
                let joint = self.value_of(m, "MotionJoint")?;
                extra.push_to_list("AllowRotation", json!(joint));
                return Ok(());
            }
            "GeneralMotion" => return self.general_motion(m, assembly),
            other => {
                return Err(ModelError::at_line(
                    self.line(m),
                    format!("'{other}' is not a motion kind Tenon reads yet"),
                ))
            }
        };
        self.only(m, &["Name", "MarkerI", "MarkerJ", "MotionJoint", key])?;
        let joint = self.acted_joint(m, assembly)?;
        let formula = self.value_of(m, key)?;
        // OndselSolver's RotationZ / TranslationZ move marker J relative to marker I; the
        // spec's coordinates are marker i's from marker j: the value changes sign.
        // The formula's value is checked once, by the assembly as it takes the motion
        // (at t = 0, in radians, as `formula` checks it); only when that fails is the
        // formula checked here again, so that its own error names its line.
        let value = match parse_number(formula) {
            Some(x) => Scalar::Number(-x),
            None => Scalar::Expr(format!("-({})", self.translated(m, key, formula)?)),
        };
        let written = matches!(value, Scalar::Expr(_));
        assembly
            .add_motion(Motion {
                joint,
                coordinate,
                value,
            })
            .map_err(|e| {
                let own = written
                    .then(|| self.formula(m, key, formula).err())
                    .flatten();
                own.unwrap_or_else(|| ModelError::at_line(self.line(m), e.message()))
            })
    }

    /// An OndselSolver formula in Tenon's syntax, checked to parse and to use no names but
    /// `t` and `pi` (the files have no parameters), and to evaluate at t = 0 in radians
    /// (the files' angle unit); `item` is the line named on error.
    pub(super) fn formula(&self, item: usize, key: &str, text: &str) -> Result<String> {
        let translated = self.translated(item, key, text)?;
        let radians = crate::ParameterValues::new(&[], crate::AngleUnit::Rad).unwrap_or_default();
        radians
            .eval(&Scalar::Expr(translated.clone()), Some(0.0))
            .map_err(|e| {
                ModelError::at_line(
                    self.formula_line(item, key),
                    format!("'{key}' formula: {}", e.message),
                )
            })?;
        Ok(translated)
    }

    /// The line of `key`'s formula (its value), else the item's.
    fn formula_line(&self, item: usize, key: &str) -> usize {
        self.child(item, key)
            .and_then(|k| self.kids(k).first())
            .map_or_else(|| self.line(item), |v| self.line(v))
    }

    /// An OndselSolver formula in Tenon's syntax, checked to parse and to use no names but
    /// `t` and `pi` (not evaluated: see [`formula`](Self::formula)).
    fn translated(&self, item: usize, key: &str, text: &str) -> Result<String> {
        ondsel_formula(text).map_err(|e| {
            ModelError::at_line(
                self.formula_line(item, key),
                format!(
                    "'{key}' formula: {} (character {}: '{}')",
                    e.message,
                    e.at + 1,
                    window(text, e.at)
                ),
            )
        })
    }

    /// `GeneralMotion`: marker J's pose relative to marker I prescribed in time (`rIJI`,
    /// J's origin in I's frame; `angIJJ`, rotations about the axes of `RotationOrder`,
    /// applied in that order to I's axes). Becomes a fixed joint from marker J to a frame
    /// that moves on marker I's part: `I * T(t)`.
    pub(super) fn general_motion(&self, m: usize, assembly: &mut Assembly) -> Result<()> {
        let keys = ["rIJI1", "rIJI2", "rIJI3", "angIJJ1", "angIJJ2", "angIJJ3"];
        let mut known = vec!["Name", "MarkerI", "MarkerJ", "RotationOrder"];
        known.extend(keys);
        self.only(m, &known)?;
        let name = self.value_of(m, "Name")?;
        let mi = self.marker_path(self.req(m, "MarkerI")?, assembly)?;
        let mj = self.marker_path(self.req(m, "MarkerJ")?, assembly)?;
        let mut f: Vec<String> = Vec::with_capacity(6);
        for key in keys {
            let text = self.value_of(m, key)?;
            f.push(self.formula(m, key, text)?);
        }
        let order_item = self.req(m, "RotationOrder")?;
        let order: Vec<usize> = self
            .numbers(self.kids(order_item).first().unwrap_or(order_item))?
            .iter()
            .map(|&x| x as usize)
            .collect();
        if order.len() != 3 || order.iter().any(|&a| !(1..=3).contains(&a)) {
            return Err(ModelError::at_line(
                self.line(order_item),
                "RotationOrder must name three axes among 1, 2, 3",
            ));
        }
        // Marker I's placement in its part, in numbers.
        let base = assembly
            .part(mi.part)
            .and_then(|p| p.marker(&mi.name))
            .and_then(|pl| {
                pl.evaluate(&crate::ParameterValues::default(), 1.0, None)
                    .ok()
            })
            .ok_or_else(|| ModelError::at_line(self.line(m), "MarkerI has no numeric placement"))?;
        let r = quaternion_to_matrix(base.quaternion);
        let position: Vec<Scalar> = (0..3)
            .map(|k| {
                let terms: Vec<(f64, &str)> = (0..3).map(|c| (r[k][c], f[c].as_str())).collect();
                Scalar::Expr(linear(base.position[k], &terms))
            })
            .collect();
        let mut rotation = r.map(|row| row.map(|x| x.to_string()));
        for (k, &axis) in order.iter().enumerate() {
            rotation = sym_mul(&rotation, &axis_rotation(axis - 1, &f[3 + k]));
        }
        let rotation = tenon_model_rotation(rotation);
        let moving = Placement {
            position: [
                position[0].clone(),
                position[1].clone(),
                position[2].clone(),
            ],
            rotation,
        };
        let id = if assembly.joint_by_id(name).is_some() || name.is_empty() {
            format!("GeneralMotion@line{}", self.line(m))
        } else {
            name.to_string()
        };
        let joint = Joint {
            id,
            joint_type: JointType::Fixed,
            i: MarkerRef {
                part: mj.part,
                marker: MarkerSpec::Named(mj.name),
            },
            j: MarkerRef {
                part: mi.part,
                marker: MarkerSpec::Inline(Box::new(moving)),
            },
            suppressed: false,
            fields: Vec::new(),
            profile: None,
            profile_i: None,
            limits: Limits::default(),
            rate: Default::default(),
            extra: {
                let mut extra = ExtraMap::new();
                extra.insert_block("GeneralMotion", self.block_lines(m));
                extra.into_extra()
            },
            residuals: Vec::new(),
            compliance: None,
        };
        assembly
            .add_joint(joint)
            .map(|_| ())
            .map_err(|e| ModelError::at_line(self.line(m), e.message()))
    }
}

/// `c + sum k * (f)` as expression text, leaving out zero terms.
fn linear(c: f64, terms: &[(f64, &str)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if c != 0.0 {
        parts.push(format!("{c:?}"));
    }
    for &(k, f) in terms {
        if k == 0.0 || f == "0" {
            continue;
        }
        parts.push(if k == 1.0 {
            format!("({f})")
        } else {
            format!("{k:?}*({f})")
        });
    }
    if parts.is_empty() {
        "0".into()
    } else {
        parts.join(" + ")
    }
}

/// Rotation about axis `axis` (0 x, 1 y, 2 z) by the angle expression `a`, as text. A
/// constant angle (the files' `0` for axes that do not turn) gives numbers, so that
/// products with it stay numbers (see [`sym_mul`]).
fn axis_rotation(axis: usize, a: &str) -> [[String; 3]; 3] {
    let (c, s, ns) = match parse_number(a) {
        Some(x) => (
            format!("{:?}", x.cos()),
            format!("{:?}", x.sin()),
            format!("{:?}", -x.sin()),
        ),
        None => (
            format!("cos({a})"),
            format!("sin({a})"),
            format!("-sin({a})"),
        ),
    };
    let (o, z) = ("1".to_string(), "0".to_string());
    match axis {
        0 => [
            [o, z.clone(), z.clone()],
            [z.clone(), c.clone(), ns],
            [z, s, c],
        ],
        1 => [
            [c.clone(), z.clone(), s],
            [z.clone(), o, z.clone()],
            [ns, z, c],
        ],
        _ => [
            [c.clone(), ns, z.clone()],
            [s, c, z.clone()],
            [z.clone(), z, o],
        ],
    }
}

/// Product of two matrices of expression text (rows), simplifying 0 and 1 factors. An
/// entry whose factors are all numbers is a number (the sum of products in the order the
/// text would add them), so a motion whose angles are constants has a numeric rotation.
fn sym_mul(a: &[[String; 3]; 3], b: &[[String; 3]; 3]) -> [[String; 3]; 3] {
    let is = |x: &str, v: f64| parse_number(x) == Some(v);
    std::array::from_fn(|i| {
        std::array::from_fn(|j| {
            let numbers: Option<Vec<(f64, f64)>> = (0..3)
                .map(|k| Some((parse_number(&a[i][k])?, parse_number(&b[k][j])?)))
                .collect();
            if let Some(pairs) = numbers {
                let sum = pairs
                    .iter()
                    .filter(|&&(x, y)| x != 0.0 && y != 0.0)
                    .map(|&(x, y)| x * y)
                    .reduce(|acc, p| acc + p)
                    .unwrap_or(0.0);
                return format!("{sum:?}");
            }
            let terms: Vec<String> = (0..3)
                .filter(|&k| !is(&a[i][k], 0.0) && !is(&b[k][j], 0.0))
                .map(|k| match (is(&a[i][k], 1.0), is(&b[k][j], 1.0)) {
                    (true, true) => "1".to_string(),
                    (true, false) => format!("({})", b[k][j]),
                    (false, true) => format!("({})", a[i][k]),
                    (false, false) => format!("({})*({})", a[i][k], b[k][j]),
                })
                .collect();
            if terms.is_empty() {
                "0".into()
            } else {
                terms.join(" + ")
            }
        })
    })
}

/// A rotation from a text matrix: plain numbers when every entry is one.
fn tenon_model_rotation(m: [[String; 3]; 3]) -> Rotation {
    let numbers: Option<Vec<f64>> = m.iter().flatten().map(|e| parse_number(e)).collect();
    match numbers {
        Some(v) => {
            let q =
                matrix_to_quaternion([[v[0], v[1], v[2]], [v[3], v[4], v[5]], [v[6], v[7], v[8]]]);
            if q == [1.0, 0.0, 0.0, 0.0] {
                Rotation::Identity
            } else {
                Rotation::Quaternion(q.map(Scalar::Number))
            }
        }
        None => Rotation::Matrix(m.map(|row| {
            row.map(|e| match parse_number(&e) {
                Some(x) => Scalar::Number(x),
                None => Scalar::Expr(e),
            })
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::{axis_rotation, sym_mul, tenon_model_rotation};
    use crate::{Rotation, Scalar};

    fn numbers(m: &[[String; 3]; 3]) -> Option<Vec<f64>> {
        m.iter().flatten().map(|e| super::parse_number(e)).collect()
    }

    /// Constant angles (the files' `0` about axes that do not turn, and a quarter turn)
    /// multiply to a numeric matrix: a motion that only slides has no rotation
    /// expressions, and a constant quarter turn is a numeric quaternion.
    #[test]
    fn constant_angles_give_a_numeric_rotation() {
        let start: [[String; 3]; 3] = std::array::from_fn(|i| {
            std::array::from_fn(|j| f64::from(u8::from(i == j)).to_string())
        });
        let mut m = start.clone();
        for axis in 0..3 {
            m = sym_mul(&m, &axis_rotation(axis, "0.0"));
        }
        assert_eq!(
            numbers(&m),
            Some(vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0])
        );
        assert!(matches!(tenon_model_rotation(m), Rotation::Identity));

        let quarter = format!("{:?}", std::f64::consts::FRAC_PI_2);
        let m = sym_mul(&start, &axis_rotation(2, &quarter));
        let v = numbers(&m).expect("numbers");
        let expected = [0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        for (got, want) in v.iter().zip(expected) {
            assert!((got - want).abs() < 1e-15, "{v:?}");
        }
        match tenon_model_rotation(m) {
            Rotation::Quaternion(q) => {
                let h = std::f64::consts::FRAC_1_SQRT_2;
                let q: Vec<f64> = q.iter().filter_map(Scalar::as_number).collect();
                let want = [h, 0.0, 0.0, h];
                for (got, want) in q.iter().zip(want) {
                    assert!((got - want).abs() < 1e-15, "{q:?}");
                }
            }
            other => panic!("expected a quaternion, got {other:?}"),
        }
    }

    /// An angle that varies in time stays an expression, with the constant factors
    /// around it simplified away.
    #[test]
    fn a_moving_angle_stays_an_expression() {
        let start: [[String; 3]; 3] = std::array::from_fn(|i| {
            std::array::from_fn(|j| f64::from(u8::from(i == j)).to_string())
        });
        let m = sym_mul(&start, &axis_rotation(2, "t"));
        assert_eq!(m[0][0], "(cos(t))");
        assert_eq!(m[0][1], "(-sin(t))");
        assert_eq!(m[2][2], "1.0");
        assert!(matches!(tenon_model_rotation(m), Rotation::Matrix(_)));
    }
}
