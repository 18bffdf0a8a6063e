//! Parser for the expression strings of the assembly format (spec: "NUMBER").
//!
//! Grammar (usual precedence; `^` binds tighter than unary minus and is right
//! associative, so `-2^2 = -4` and `2^3^2 = 512`):
//!
//! ```text
//! expr   := term (('+' | '-') term)*
//! term   := unary (('*' | '/') unary)*
//! unary  := ('-' | '+') unary | power
//! power  := atom ('^' unary)?
//! atom   := NUMBER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
//! NUMBER := digits ['.' digits] [('e' | 'E') ['+' | '-'] digits]   (or '.' digits ...)
//! NAME   := (letter | '_') (letter | digit | '_')*
//! ```
//!
//! Built in: the constant `pi` and the functions `sqrt sin cos tan asin acos atan atan2
//! abs sign min max exp ln` (`min`/`max` take two or more arguments; `sign` is -1, 0 or
//! 1, an extension of the spec's list that `.asmt` step functions need). Trigonometric
//! functions take and return the angle unit of [`ParseOptions`]. Every other name is
//! looked up by the caller's resolver (parameters, the time `t` in motions).
//!
//! Parsing builds a flat post-order list (children before parents) rather than a boxed
//! tree, so lowering into a graph is a loop and no input can exhaust the stack; nesting
//! (parentheses, prefix signs, powers) deeper than [`MAX_NESTING`] is refused.

use crate::error::ParseError;
use crate::graph::{pow_value, ExprGraph};
use crate::node::{Binary, ExprId, Unary};

/// Deepest nesting of parentheses, signs and powers accepted.
pub const MAX_NESTING: usize = 200;

/// Unit of angles for trigonometric functions in expression strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AngleUnit {
    /// Degrees (the assembly format's default).
    #[default]
    Degrees,
    /// Radians.
    Radians,
}

/// How expression strings are interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ParseOptions {
    /// Unit that `sin`, `cos`, `tan` take and `asin`, `acos`, `atan`, `atan2` return.
    pub angle_unit: AngleUnit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Func {
    Unary(Unary),
    Atan,
    Atan2,
    Min,
    Max,
}

impl Func {
    /// The two-argument operation `min` or `max` folds its arguments with (`max` for
    /// any other function; only called for those two).
    fn extremum(self) -> Binary {
        if self == Func::Min {
            Binary::Min
        } else {
            Binary::Max
        }
    }
}

impl ParseOptions {
    /// The factors from the angle unit to radians and back.
    fn radian_factors(self) -> (f64, f64) {
        match self.angle_unit {
            AngleUnit::Degrees => (std::f64::consts::PI / 180.0, 180.0 / std::f64::consts::PI),
            AngleUnit::Radians => (1.0, 1.0),
        }
    }
}

const FUNCTIONS: &[(&str, Func)] = &[
    ("sqrt", Func::Unary(Unary::Sqrt)),
    ("sin", Func::Unary(Unary::Sin)),
    ("cos", Func::Unary(Unary::Cos)),
    ("tan", Func::Unary(Unary::Tan)),
    ("asin", Func::Unary(Unary::Asin)),
    ("acos", Func::Unary(Unary::Acos)),
    ("atan", Func::Atan),
    ("atan2", Func::Atan2),
    ("abs", Func::Unary(Unary::Abs)),
    ("sign", Func::Unary(Unary::Sign)),
    ("min", Func::Min),
    ("max", Func::Max),
    ("exp", Func::Unary(Unary::Exp)),
    ("ln", Func::Unary(Unary::Ln)),
];

#[derive(Clone, Debug, PartialEq)]
enum Item {
    Number(f64),
    Pi,
    Name { name: String, column: usize },
    Neg(u32),
    Binary(Binary, u32, u32),
    Call { func: Func, args: Vec<u32> },
}

/// A parsed expression string, not yet tied to a graph. Lower it with
/// [`ParsedExpr::lower`]; [`ParsedExpr::names`] lists the names it uses (to order
/// parameter definitions and find cycles before lowering).
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedExpr {
    /// Post-order: every item's operands come before it; the root is last.
    items: Vec<Item>,
}

/// Parses `text`.
pub fn parse(text: &str) -> Result<ParsedExpr, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    // An item per token at most: a token is at least one character, and most formulas
    // are short (a number, `2*L`).
    let items = Vec::with_capacity(chars.len().min(64));
    let mut p = Parser {
        chars,
        pos: 0,
        depth: 0,
        items,
        word: String::new(),
    };
    p.skip_space();
    if p.pos == p.chars.len() {
        return Err(ParseError::new(1, "empty expression"));
    }
    p.expr()?;
    p.skip_space();
    if p.pos < p.chars.len() {
        return Err(p.error(format!(
            "unexpected {} after a complete expression",
            p.describe_here()
        )));
    }
    Ok(ParsedExpr { items: p.items })
}

/// Parses `text` and lowers it into `graph` in one step.
pub fn parse_into(
    graph: &mut ExprGraph,
    text: &str,
    options: ParseOptions,
    resolve: &mut dyn FnMut(&str, &mut ExprGraph) -> Option<ExprId>,
) -> Result<ExprId, ParseError> {
    parse(text)?.lower(graph, options, resolve)
}

impl ParsedExpr {
    /// Names the expression refers to, other than built-ins, in order of appearance
    /// (repeats included).
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.items.iter().filter_map(|i| match i {
            Item::Name { name, .. } => Some(name.as_str()),
            _ => None,
        })
    }

    /// The value when the expression is a plain number (possibly signed).
    pub fn as_number(&self) -> Option<f64> {
        match self.items.as_slice() {
            [Item::Number(x)] => Some(*x),
            [Item::Number(x), Item::Neg(0)] => Some(-*x),
            _ => None,
        }
    }

    /// Builds the expression in `graph`. `resolve` maps every non-built-in name to a
    /// node (or `None`: the name is unknown, which is an error at its position).
    pub fn lower(
        &self,
        graph: &mut ExprGraph,
        options: ParseOptions,
        resolve: &mut dyn FnMut(&str, &mut ExprGraph) -> Option<ExprId>,
    ) -> Result<ExprId, ParseError> {
        let (to_rad, from_rad) = options.radian_factors();
        let zero = graph.zero();
        let mut done: Vec<ExprId> = Vec::with_capacity(self.items.len());
        for item in &self.items {
            let at = |k: &u32| done.get(*k as usize).copied().unwrap_or(zero);
            let id = match item {
                Item::Number(x) => graph.constant(*x),
                Item::Pi => graph.constant(std::f64::consts::PI),
                Item::Name { name, column } => resolve(name, graph)
                    .ok_or_else(|| ParseError::new(*column, format!("unknown name '{name}'")))?,
                Item::Neg(a) => {
                    let a = at(a);
                    graph.neg(a)
                }
                Item::Binary(op, a, b) => {
                    let (a, b) = (at(a), at(b));
                    graph.binary(*op, a, b)
                }
                Item::Call { func, args } => {
                    let args: Vec<ExprId> = args.iter().map(at).collect();
                    let first = args.first().copied().unwrap_or(zero);
                    match func {
                        Func::Unary(op @ (Unary::Sin | Unary::Cos | Unary::Tan)) => {
                            let rad = graph.scale(first, to_rad);
                            graph.unary(*op, rad)
                        }
                        Func::Unary(op @ (Unary::Asin | Unary::Acos)) => {
                            let r = graph.unary(*op, first);
                            graph.scale(r, from_rad)
                        }
                        Func::Unary(op) => graph.unary(*op, first),
                        Func::Atan | Func::Atan2 => {
                            let x = match args.get(1) {
                                Some(&x) => x,
                                None => graph.one(),
                            };
                            let r = graph.atan2(first, x);
                            graph.scale(r, from_rad)
                        }
                        Func::Min | Func::Max => {
                            let op = func.extremum();
                            args.iter()
                                .skip(1)
                                .fold(first, |acc, &x| graph.binary(op, acc, x))
                        }
                    }
                }
            };
            done.push(id);
        }
        done.last()
            .copied()
            .ok_or_else(|| ParseError::new(1, "empty expression"))
    }

    /// The expression's value when every name has one: what [`lower`](Self::lower)
    /// would fold it to in a graph (every operand a constant, so each operation folds
    /// as it is built), computed without a graph. `resolve` gives a name's value (or
    /// `None`: the name is unknown, an error at its position).
    ///
    /// Architecture invariant: the same value to the bit as lowering with constant
    /// leaves and reading the constant back (a test checks it); a parameter or a
    /// constant motion is evaluated at every build, and a graph of its own cost a
    /// dozen allocations each time.
    pub fn evaluate(
        &self,
        options: ParseOptions,
        resolve: &mut dyn FnMut(&str) -> Option<f64>,
    ) -> Result<f64, ParseError> {
        let (to_rad, from_rad) = options.radian_factors();
        let mut done: Vec<f64> = Vec::with_capacity(self.items.len());
        for item in &self.items {
            let at = |k: &u32| done.get(*k as usize).copied().unwrap_or(0.0);
            let value = match item {
                Item::Number(x) => *x,
                Item::Pi => std::f64::consts::PI,
                Item::Name { name, column } => resolve(name)
                    .ok_or_else(|| ParseError::new(*column, format!("unknown name '{name}'")))?,
                Item::Neg(a) => -at(a),
                Item::Binary(Binary::Pow, a, b) => pow_value(at(a), at(b)),
                Item::Binary(op, a, b) => op.apply(at(a), at(b)),
                Item::Call { func, args } => {
                    let first = args.first().map_or(0.0, at);
                    match func {
                        Func::Unary(op @ (Unary::Sin | Unary::Cos | Unary::Tan)) => {
                            op.apply(to_rad * first)
                        }
                        Func::Unary(op @ (Unary::Asin | Unary::Acos)) => from_rad * op.apply(first),
                        Func::Unary(op) => op.apply(first),
                        Func::Atan | Func::Atan2 => {
                            let x = args.get(1).map_or(1.0, at);
                            from_rad * Binary::Atan2.apply(first, x)
                        }
                        Func::Min | Func::Max => {
                            let op = func.extremum();
                            args.iter()
                                .skip(1)
                                .fold(first, |acc, x| op.apply(acc, at(x)))
                        }
                    }
                }
            };
            done.push(value);
        }
        done.last()
            .copied()
            .ok_or_else(|| ParseError::new(1, "empty expression"))
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    items: Vec<Item>,
    /// The number or name being read (one buffer for all of them).
    word: String,
}

impl Parser {
    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError::new(self.pos + 1, message)
    }

    fn describe_here(&self) -> String {
        match self.chars.get(self.pos) {
            Some(c) => format!("'{c}'"),
            None => "end of input".to_string(),
        }
    }

    fn skip_space(&mut self) {
        while self.chars.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.chars.get(self.pos).copied()
    }

    fn push(&mut self, item: Item) -> u32 {
        self.items.push(item);
        (self.items.len() - 1) as u32
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error(format!(
                "expression nested deeper than {MAX_NESTING} levels"
            )));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<u32, ParseError> {
        let mut left = self.term()?;
        while let Some(c @ ('+' | '-')) = self.peek() {
            self.pos += 1;
            let right = self.term()?;
            let op = if c == '+' { Binary::Add } else { Binary::Sub };
            left = self.push(Item::Binary(op, left, right));
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<u32, ParseError> {
        let mut left = self.unary()?;
        while let Some(c @ ('*' | '/')) = self.peek() {
            self.pos += 1;
            let right = self.unary()?;
            let op = if c == '*' { Binary::Mul } else { Binary::Div };
            left = self.push(Item::Binary(op, left, right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<u32, ParseError> {
        match self.peek() {
            Some(c @ ('-' | '+')) => {
                self.pos += 1;
                self.enter()?;
                let inner = self.unary()?;
                self.depth -= 1;
                Ok(if c == '-' {
                    self.push(Item::Neg(inner))
                } else {
                    inner
                })
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<u32, ParseError> {
        let base = self.atom()?;
        if self.peek() == Some('^') {
            self.pos += 1;
            self.enter()?;
            let exponent = self.unary()?;
            self.depth -= 1;
            return Ok(self.push(Item::Binary(Binary::Pow, base, exponent)));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<u32, ParseError> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => self.name(),
            Some('(') => {
                let open = self.pos;
                self.pos += 1;
                self.enter()?;
                let inner = self.expr()?;
                self.depth -= 1;
                if self.peek() != Some(')') {
                    return Err(self.error(format!(
                        "expected ')' to close the '(' at character {}, found {}",
                        open + 1,
                        self.describe_here()
                    )));
                }
                self.pos += 1;
                Ok(inner)
            }
            _ => Err(self.error(format!(
                "expected a number, a name, '(' or a sign, found {}",
                self.describe_here()
            ))),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.chars.get(self.pos).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<u32, ParseError> {
        let start = self.pos;
        let int_digits = self.digits();
        let mut frac_digits = 0;
        if self.chars.get(self.pos) == Some(&'.') {
            self.pos += 1;
            frac_digits = self.digits();
        }
        if int_digits + frac_digits == 0 {
            self.pos = start;
            return Err(self.error("expected digits in a number, found '.' alone"));
        }
        if matches!(self.chars.get(self.pos), Some('e' | 'E')) {
            self.pos += 1;
            if matches!(self.chars.get(self.pos), Some('+' | '-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error(format!(
                    "expected the digits of an exponent, found {}",
                    self.describe_here()
                )));
            }
        }
        self.word.clear();
        self.word.extend(&self.chars[start..self.pos]);
        let text = &self.word;
        let value: f64 = text
            .parse()
            .map_err(|_| ParseError::new(start + 1, format!("'{text}' is not a number")))?;
        if !value.is_finite() {
            return Err(ParseError::new(
                start + 1,
                format!("number '{text}' is out of range"),
            ));
        }
        Ok(self.push(Item::Number(value)))
    }

    fn name(&mut self) -> Result<u32, ParseError> {
        let start = self.pos;
        while self
            .chars
            .get(self.pos)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            self.pos += 1;
        }
        let mut name = std::mem::take(&mut self.word);
        name.clear();
        name.extend(&self.chars[start..self.pos]);
        if self.peek() == Some('(') {
            let call = self.call(&name, start);
            self.word = name;
            return call;
        }
        if name == "pi" {
            self.word = name;
            return Ok(self.push(Item::Pi));
        }
        if FUNCTIONS.iter().any(|(f, _)| *f == name) {
            return Err(ParseError::new(
                start + 1,
                format!("function '{name}' needs its arguments in parentheses"),
            ));
        }
        // A name the caller resolves keeps its own copy; the buffer goes on.
        self.word = name.clone();
        Ok(self.push(Item::Name {
            name,
            column: start + 1,
        }))
    }

    fn call(&mut self, name: &str, start: usize) -> Result<u32, ParseError> {
        let Some(&(_, func)) = FUNCTIONS.iter().find(|(f, _)| *f == name) else {
            let known: Vec<&str> = FUNCTIONS.iter().map(|(f, _)| *f).collect();
            return Err(ParseError::new(
                start + 1,
                format!("unknown function '{name}' (known: {})", known.join(", ")),
            ));
        };
        let open = self.pos;
        self.pos += 1; // '('
        self.enter()?;
        let mut args = Vec::new();
        if self.peek() == Some(')') {
            return Err(self.error(format!("'{name}' needs an argument")));
        }
        loop {
            args.push(self.expr()?);
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    break;
                }
                _ => {
                    return Err(self.error(format!(
                        "expected ',' or ')' in the arguments of '{name}' (opened at character {}), found {}",
                        open + 1,
                        self.describe_here()
                    )))
                }
            }
        }
        self.depth -= 1;
        let arity_ok = match func {
            Func::Unary(_) | Func::Atan => args.len() == 1,
            Func::Atan2 => args.len() == 2,
            Func::Min | Func::Max => args.len() >= 2,
        };
        if !arity_ok {
            let wanted = match func {
                Func::Unary(_) | Func::Atan => "1 argument",
                Func::Atan2 => "2 arguments",
                Func::Min | Func::Max => "2 or more arguments",
            };
            return Err(ParseError::new(
                start + 1,
                format!("'{name}' takes {wanted}, got {}", args.len()),
            ));
        }
        Ok(self.push(Item::Call { func, args }))
    }
}
