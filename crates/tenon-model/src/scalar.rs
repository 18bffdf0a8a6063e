//! Numbers as the file writes them (a number or an expression string), units, and the
//! parameter table that gives them values.

use rustc_hash::FxHashMap;
use tenon_expr::{AngleUnit as ExprAngleUnit, ParseOptions, ParsedExpr};

/// A scalar as written: a plain number or an expression over parameters (and `t` in
/// motions). Expressions keep their text, so writing a file gives it back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// A plain number.
    Number(f64),
    /// An expression string, e.g. `"2*L + 5"`.
    Expr(String),
}

impl Scalar {
    /// The number, when this is a plain number.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Scalar::Number(x) => Some(*x),
            Scalar::Expr(_) => None,
        }
    }
}

impl From<f64> for Scalar {
    fn from(x: f64) -> Self {
        Scalar::Number(x)
    }
}

/// Length unit of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LengthUnit {
    /// Metre.
    M,
    /// Millimetre (the default).
    #[default]
    Mm,
    /// Centimetre.
    Cm,
    /// Inch.
    In,
}

/// Angle unit of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AngleUnit {
    /// Degrees (the default).
    #[default]
    Deg,
    /// Radians.
    Rad,
}

/// Mass unit of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MassUnit {
    /// Kilogram (the default).
    #[default]
    Kg,
    /// Gram.
    G,
}

/// Time unit of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeUnit {
    /// Second (the default, and the only one).
    #[default]
    S,
}

/// The units every number of a file is in. Output uses the same units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Units {
    /// Lengths.
    pub length: LengthUnit,
    /// Angles (and what trigonometric functions in expressions take and return).
    pub angle: AngleUnit,
    /// Masses.
    pub mass: MassUnit,
    /// Time.
    pub time: TimeUnit,
}

impl LengthUnit {
    /// Names accepted in files.
    pub const NAMES: &'static [(&'static str, LengthUnit)] = &[
        ("m", LengthUnit::M),
        ("mm", LengthUnit::Mm),
        ("cm", LengthUnit::Cm),
        ("in", LengthUnit::In),
    ];
    /// Metres per unit.
    pub fn metres(self) -> f64 {
        match self {
            LengthUnit::M => 1.0,
            LengthUnit::Mm => 1e-3,
            LengthUnit::Cm => 1e-2,
            LengthUnit::In => 0.0254,
        }
    }
}

impl AngleUnit {
    /// Names accepted in files.
    pub const NAMES: &'static [(&'static str, AngleUnit)] =
        &[("deg", AngleUnit::Deg), ("rad", AngleUnit::Rad)];
    /// Radians per unit.
    pub fn radians(self) -> f64 {
        match self {
            AngleUnit::Deg => std::f64::consts::PI / 180.0,
            AngleUnit::Rad => 1.0,
        }
    }
    /// How the expression parser reads trigonometric functions in this unit.
    pub fn parse_options(self) -> ParseOptions {
        ParseOptions {
            angle_unit: match self {
                AngleUnit::Deg => ExprAngleUnit::Degrees,
                AngleUnit::Rad => ExprAngleUnit::Radians,
            },
        }
    }
}

impl MassUnit {
    /// Names accepted in files.
    pub const NAMES: &'static [(&'static str, MassUnit)] =
        &[("kg", MassUnit::Kg), ("g", MassUnit::G)];
}

impl TimeUnit {
    /// Names accepted in files.
    pub const NAMES: &'static [(&'static str, TimeUnit)] = &[("s", TimeUnit::S)];
}

/// Name of a unit for writing (the first name of its table).
impl Units {
    /// The units as a file names them: `(quantity, unit)` for length, angle, mass and
    /// time.
    pub fn names(&self) -> [(&'static str, &'static str); 4] {
        [
            ("length", unit_name(LengthUnit::NAMES, self.length)),
            ("angle", unit_name(AngleUnit::NAMES, self.angle)),
            ("mass", unit_name(MassUnit::NAMES, self.mass)),
            ("time", unit_name(TimeUnit::NAMES, self.time)),
        ]
    }
}

pub(crate) fn unit_name<T: PartialEq + Copy>(table: &[(&'static str, T)], unit: T) -> &'static str {
    table
        .iter()
        .find(|(_, u)| *u == unit)
        .map_or("?", |(n, _)| n)
}

/// A named parameter, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// Name (used in expressions).
    pub name: String,
    /// Value or defining expression.
    pub value: Scalar,
}

/// Why a scalar could not be evaluated; the reader adds the place.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EvalProblem {
    pub(crate) message: String,
}

/// Parameter values, computed in dependency order, and evaluation of scalars with them.
#[derive(Debug, Clone, Default)]
pub struct ParameterValues {
    values: FxHashMap<String, f64>,
    angle: AngleUnit,
}

/// Names that expressions may not use as parameters.
pub(crate) const RESERVED_NAMES: &[&str] = &["pi", "t"];

impl ParameterValues {
    /// Evaluates the parameters (each may refer to the others). Errors name the
    /// parameter (its index into `parameters`) and the problem: a parse error, an
    /// unknown name, a cycle, or a non-finite value.
    pub(crate) fn new(parameters: &[Parameter], angle: AngleUnit) -> Result<Self, (usize, String)> {
        let mut parsed: Vec<Option<ParsedExpr>> = Vec::with_capacity(parameters.len());
        let mut index: FxHashMap<&str, usize> = FxHashMap::default();
        for (k, p) in parameters.iter().enumerate() {
            if p.name.is_empty() || RESERVED_NAMES.contains(&p.name.as_str()) {
                return Err((k, format!("'{}' cannot be a parameter name", p.name)));
            }
            let valid_name = p
                .name
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && p.name.chars().all(|c| c.is_alphanumeric() || c == '_');
            if !valid_name {
                return Err((
                    k,
                    format!(
                        "'{}' is not a usable parameter name (letters, digits and '_', not starting with a digit)",
                        p.name
                    ),
                ));
            }
            if index.insert(&p.name, k).is_some() {
                return Err((k, format!("parameter '{}' is defined twice", p.name)));
            }
            parsed.push(match &p.value {
                Scalar::Number(_) => None,
                Scalar::Expr(text) => {
                    Some(tenon_expr::parse(text).map_err(|e| (k, e.to_string()))?)
                }
            });
        }
        // Dependency order by depth-first search; a grey node met again is a cycle.
        let mut state = vec![0u8; parameters.len()]; // 0 new, 1 in progress, 2 done
        let mut order = Vec::with_capacity(parameters.len());
        for start in 0..parameters.len() {
            let mut stack: Vec<(usize, bool)> = vec![(start, false)];
            let mut path: Vec<usize> = Vec::new();
            while let Some((k, leaving)) = stack.pop() {
                if leaving {
                    state[k] = 2;
                    order.push(k);
                    path.pop();
                    continue;
                }
                match state[k] {
                    2 => continue,
                    1 => {
                        let mut cycle: Vec<&str> = path
                            .iter()
                            .skip_while(|&&p| p != k)
                            .map(|&p| parameters[p].name.as_str())
                            .collect();
                        cycle.push(&parameters[k].name);
                        return Err((
                            k,
                            format!(
                                "parameters refer to each other in a cycle: {}",
                                cycle.join(" -> ")
                            ),
                        ));
                    }
                    _ => {}
                }
                state[k] = 1;
                path.push(k);
                stack.push((k, true));
                if let Some(expr) = &parsed[k] {
                    for name in expr.names() {
                        match index.get(name) {
                            Some(&d) if state[d] == 1 => {
                                let mut cycle: Vec<&str> = path
                                    .iter()
                                    .skip_while(|&&p| p != d)
                                    .map(|&p| parameters[p].name.as_str())
                                    .collect();
                                cycle.push(name);
                                return Err((
                                    k,
                                    format!(
                                        "parameters refer to each other in a cycle: {}",
                                        cycle.join(" -> ")
                                    ),
                                ));
                            }
                            Some(&d) if state[d] == 0 => stack.push((d, false)),
                            Some(_) => {}
                            None => {
                                return Err((
                                    k,
                                    format!(
                                        "unknown name '{name}' in the value of '{}'",
                                        parameters[k].name
                                    ),
                                ))
                            }
                        }
                    }
                }
            }
        }
        let mut values = ParameterValues {
            values: FxHashMap::default(),
            angle,
        };
        for k in order {
            let v = match (&parameters[k].value, &parsed[k]) {
                (Scalar::Number(x), _) => *x,
                (_, Some(expr)) => values.eval_parsed(expr, None).map_err(|e| (k, e.message))?,
                (Scalar::Expr(_), None) => f64::NAN,
            };
            if !v.is_finite() {
                return Err((
                    k,
                    format!(
                        "parameter '{}' is not a finite number ({v})",
                        parameters[k].name
                    ),
                ));
            }
            values.values.insert(parameters[k].name.clone(), v);
        }
        Ok(values)
    }

    /// The value of a parameter.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.get(name).copied()
    }

    /// The value of a scalar that does not depend on time (a number, or an expression
    /// over the parameters), if it has one.
    pub fn value_of(&self, s: &Scalar) -> Option<f64> {
        self.eval(s, None).ok()
    }

    /// Evaluates a scalar (`t` given for motions, else `t` is an unknown name).
    pub(crate) fn eval(&self, s: &Scalar, t: Option<f64>) -> Result<f64, EvalProblem> {
        let v = match s {
            Scalar::Number(x) => *x,
            Scalar::Expr(text) => {
                let parsed = tenon_expr::parse(text).map_err(|e| EvalProblem {
                    message: format!("'{text}': {e}"),
                })?;
                self.eval_parsed(&parsed, t).map_err(|e| EvalProblem {
                    message: format!("'{text}': {}", e.message),
                })?
            }
        };
        if !v.is_finite() {
            return Err(EvalProblem {
                message: format!("not a finite number ({v})"),
            });
        }
        Ok(v)
    }

    fn eval_parsed(&self, parsed: &ParsedExpr, t: Option<f64>) -> Result<f64, EvalProblem> {
        parsed
            .evaluate(self.angle.parse_options(), &mut |name| match (name, t) {
                ("t", Some(t)) => Some(t),
                _ => self.values.get(name).copied(),
            })
            .map_err(|e| EvalProblem {
                message: e.to_string(),
            })
    }
}
