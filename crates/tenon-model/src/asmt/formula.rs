//! OndselSolver's formula language (its `SymbolicParser`), read into Tenon's expression
//! syntax with the same meaning.
//!
//! What the files hold (FreeCAD writes motions this way):
//!
//! - whitespace and the `<n>` line tags of the file format are skipped between tokens;
//!   text in double quotes is a comment and skipped too (FreeCAD puts the template of a
//!   ramp there: `"((1/pi)*(arctan(...)...)"<n>((1/pi)*...`);
//! - numbers as C++ reads a `double`, then an optional `d` or `e` double marker with an
//!   optional integer exponent (`2.0d`, `1.5d3`, `1e-3`);
//! - `expression := ['+' | '-'] term (('+' | '-') term)*`, `term := factor (('*' | '/')
//!   factor)*`, `factor := ( '(' expression ')' | number | 'pi' | name '(' arguments ')'
//!   | 'time' ) ['^' factor]`: a power's exponent is a factor (right associative), a
//!   leading minus negates the whole term (`-2^2 = -4`), and after `*`, `/` or `^` a
//!   minus written against a number is the number's sign (`2*-3^2 = 18`); an empty
//!   formula is 0;
//! - functions `abs`, `asin` (`arcsin`), `arctan`, `sin`, `cos` (radians);
//!   `rampstep(x, x0, y0, x1, y1)` (`y0` before `x0`, `y1` after `x1`, linear between);
//!   `piecewise(x, functions(f0, ..., fn), transitions(x1, ..., xn))` (`f_i` while `x <
//!   x_{i+1}`, the last one after).
//!
//! `spline(...)` and `integral(...)` are refused by name (not yet read). Errors give the
//! character position in the formula.

/// A formula that cannot be read: what is wrong and where (a character offset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FormulaError {
    pub(super) at: usize,
    pub(super) message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Word(String),
    Symbol(char),
    End,
}

/// The tokens with their character positions, and whether a `-` or `+` symbol is
/// written against the digit that follows it.
struct Lexer {
    tokens: Vec<(Token, usize, bool)>,
}

fn lex(text: &str) -> Result<Lexer, FormulaError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut k = 0;
    loop {
        // Skip whitespace, `<n>` tags and quoted comments.
        loop {
            match chars.get(k) {
                Some(c) if c.is_whitespace() => k += 1,
                Some('<') if chars.get(k + 1) == Some(&'n') && chars.get(k + 2) == Some(&'>') => {
                    k += 3
                }
                Some('"') => {
                    let start = k;
                    k += 1;
                    loop {
                        match chars.get(k) {
                            None => {
                                return Err(FormulaError {
                                    at: start,
                                    message: "a quoted comment is not closed".into(),
                                })
                            }
                            Some('\\') => k += 2,
                            Some('"') => {
                                k += 1;
                                break;
                            }
                            Some(_) => k += 1,
                        }
                    }
                }
                _ => break,
            }
        }
        let Some(&c) = chars.get(k) else {
            tokens.push((Token::End, k, false));
            return Ok(Lexer { tokens });
        };
        let start = k;
        if c.is_ascii_alphabetic() {
            while chars
                .get(k)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
            {
                k += 1;
            }
            tokens.push((Token::Word(chars[start..k].iter().collect()), start, false));
        } else if c.is_ascii_digit() {
            let (value, next) = number(&chars, k).ok_or_else(|| FormulaError {
                at: start,
                message: "a number is malformed".into(),
            })?;
            k = next;
            tokens.push((Token::Number(value), start, false));
        } else {
            let against_digit = chars
                .get(k + 1)
                .is_some_and(|d| d.is_ascii_digit() || *d == '.');
            k += 1;
            tokens.push((Token::Symbol(c), start, against_digit));
        }
    }
}

/// A number at `k` as C++ reads a `double` (digits, fraction, exponent), then an
/// optional `d`/`e` marker with an optional integer exponent. Returns the value and the
/// position after it.
fn number(chars: &[char], mut k: usize) -> Option<(f64, usize)> {
    let start = k;
    let digits = |k: &mut usize| {
        while chars.get(*k).is_some_and(char::is_ascii_digit) {
            *k += 1;
        }
    };
    digits(&mut k);
    if chars.get(k) == Some(&'.') {
        k += 1;
        digits(&mut k);
    }
    let mut mantissa_end = k;
    // A C++ exponent: 'e' or 'E', an optional sign, at least one digit.
    if matches!(chars.get(k), Some('e' | 'E')) {
        let mut j = k + 1;
        if matches!(chars.get(j), Some('+' | '-')) {
            j += 1;
        }
        if chars.get(j).is_some_and(char::is_ascii_digit) {
            digits(&mut j);
            k = j;
            mantissa_end = k;
        }
    }
    let mantissa: f64 = chars[start..mantissa_end]
        .iter()
        .collect::<String>()
        .parse()
        .ok()?;
    let mut exponent = 0i32;
    if matches!(chars.get(k), Some('d' | 'e')) {
        k += 1;
        let mut j = k;
        let negative = match chars.get(j) {
            Some('-') => {
                j += 1;
                true
            }
            Some('+') => {
                j += 1;
                false
            }
            _ => false,
        };
        if chars.get(j).is_some_and(char::is_ascii_digit) {
            let from = j;
            digits(&mut j);
            let e: i32 = chars[from..j].iter().collect::<String>().parse().ok()?;
            exponent = if negative { -e } else { e };
            k = j;
        }
    }
    // As OndselSolver computes it.
    let value = mantissa * 10f64.powi(exponent);
    Some((value, k))
}

/// Binding levels of printed Tenon syntax, loosest first.
const SUM: u8 = 0;
const PRODUCT: u8 = 1;
const UNARY: u8 = 2;
const POWER: u8 = 3;
const ATOM: u8 = 4;

/// Tenon syntax and how tightly it binds (a sum, a product, a signed value, a power or
/// an atom), so parentheses are written only where Tenon's precedence needs them.
struct Printed {
    text: String,
    level: u8,
}

impl Printed {
    fn atom(text: String) -> Printed {
        Printed { text, level: ATOM }
    }

    /// The text, in parentheses unless it binds at least as tightly as `level`.
    fn at_least(&self, level: u8) -> String {
        if self.level >= level {
            self.text.clone()
        } else {
            format!("({})", self.text)
        }
    }
}

/// A number written so that Tenon's parser reads the same `f64` (as written when it
/// round-trips, so `2.0` stays `2.0`).
fn literal(x: f64) -> Printed {
    let text = format!("{x:?}");
    if x < 0.0 {
        Printed { text, level: UNARY }
    } else {
        Printed::atom(text)
    }
}

/// Reads an OndselSolver formula into Tenon's syntax (see the module documentation).
pub(super) fn ondsel_formula(text: &str) -> Result<String, FormulaError> {
    let lexer = lex(text)?;
    let mut p = Parser {
        tokens: &lexer.tokens,
        k: 0,
    };
    let e = p.expression()?;
    match p.peek() {
        Token::End => Ok(e),
        _ => Err(p.error("an operator or the end of the formula")),
    }
}

struct Parser<'t> {
    tokens: &'t [(Token, usize, bool)],
    k: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        self.tokens.get(self.k).map_or(&Token::End, |t| &t.0)
    }

    fn at(&self) -> usize {
        self.tokens.get(self.k).map_or(0, |t| t.1)
    }

    fn error(&self, expected: &str) -> FormulaError {
        let found = match self.peek() {
            Token::End => "the end".to_string(),
            Token::Number(x) => format!("the number {x}"),
            Token::Word(w) => format!("'{w}'"),
            Token::Symbol(c) => format!("'{c}'"),
        };
        FormulaError {
            at: self.at(),
            message: format!("expected {expected}, found {found}"),
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if *self.peek() == Token::Symbol(c) {
            self.k += 1;
            true
        } else {
            false
        }
    }

    /// The first of `symbols` that is next, taken.
    fn eat_either(&mut self, symbols: [char; 2]) -> Option<char> {
        symbols.into_iter().find(|&c| self.eat(c))
    }

    fn expect(&mut self, c: char) -> Result<(), FormulaError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error(&format!("'{c}'")))
        }
    }

    fn expression(&mut self) -> Result<String, FormulaError> {
        self.sum().map(|e| e.text)
    }

    fn sum(&mut self) -> Result<Printed, FormulaError> {
        if *self.peek() == Token::End {
            return Ok(Printed::atom("0".into()));
        }
        let mut out = if self.eat('+') {
            self.term()?
        } else if self.eat('-') {
            // `-a*b` reads as `(-a)*b` in Tenon: the same value.
            let t = self.term()?;
            Printed {
                text: format!("-{}", t.at_least(UNARY)),
                level: PRODUCT,
            }
        } else {
            self.term()?
        };
        while let Some(op) = self.eat_either(['+', '-']) {
            let right = self.term()?;
            out = Printed {
                text: format!("{} {op} {}", out.text, right.at_least(PRODUCT)),
                level: SUM,
            };
        }
        Ok(out)
    }

    fn term(&mut self) -> Result<Printed, FormulaError> {
        let mut out = self.factor()?;
        while let Some(op) = self.eat_either(['*', '/']) {
            let right = self.factor()?;
            out = Printed {
                text: format!("{}{op}{}", out.at_least(PRODUCT), right.at_least(UNARY)),
                level: PRODUCT,
            };
        }
        Ok(out)
    }

    fn factor(&mut self) -> Result<Printed, FormulaError> {
        let base = self.primary()?;
        if self.eat('^') {
            let exponent = self.factor()?;
            return Ok(Printed {
                text: format!("{}^{}", base.at_least(ATOM), exponent.at_least(UNARY)),
                level: POWER,
            });
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Printed, FormulaError> {
        let Some((token, at, against_digit)) = self.tokens.get(self.k).cloned() else {
            return Err(self.error("a number, a name or '('"));
        };
        match token {
            Token::Symbol('(') => {
                self.k += 1;
                let e = self.sum()?;
                self.expect(')')?;
                Ok(e)
            }
            // A sign written against a number (after '*', '/', '^' or at a factor).
            Token::Symbol(s @ ('-' | '+')) if against_digit => {
                self.k += 1;
                match self.peek().clone() {
                    Token::Number(x) => {
                        self.k += 1;
                        Ok(literal(if s == '-' { -x } else { x }))
                    }
                    _ => Err(self.error("a number")),
                }
            }
            Token::Number(x) => {
                self.k += 1;
                Ok(literal(x))
            }
            Token::Word(w) => {
                self.k += 1;
                let call = |name: &str, args: &[String]| {
                    Printed::atom(format!("{name}({})", args.join(", ")))
                };
                match w.as_str() {
                    "pi" => Ok(Printed::atom("pi".into())),
                    "time" => Ok(Printed::atom("t".into())),
                    "abs" | "asin" | "arcsin" | "arctan" | "sin" | "cos" => {
                        let args = self.arguments(&w, 1)?;
                        let name = match w.as_str() {
                            "arcsin" => "asin",
                            "arctan" => "atan",
                            other => other,
                        };
                        Ok(call(name, &args))
                    }
                    "rampstep" => {
                        let a = self.arguments(&w, 5)?;
                        let (x, x0, y0, x1, y1) = (&a[0], &a[1], &a[2], &a[3], &a[4]);
                        // Clamped between y0 and y1: y0 before x0, y1 after x1.
                        let line = format!("({y0}) + (({y1}) - ({y0}))*(({x}) - ({x0}))/(({x1}) - ({x0}))");
                        Ok(Printed::atom(format!(
                            "min(max({line}, min({y0}, {y1})), max({y0}, {y1}))"
                        )))
                    }
                    "piecewise" => self.piecewise(at).map(Printed::atom),
                    "functions" | "transitions" => Err(FormulaError {
                        at,
                        message: format!("'{w}(...)' is only an argument of 'piecewise'"),
                    }),
                    "spline" | "integral" => Err(FormulaError {
                        at,
                        message: format!(
                            "OndselSolver's '{w}(...)' in a formula is not read by Tenon yet"
                        ),
                    }),
                    _ => Err(FormulaError {
                        at,
                        message: format!(
                            "'{w}' is not a name OndselSolver's formulas know (time, pi, abs, asin, arcsin, arctan, sin, cos, rampstep, piecewise)"
                        ),
                    }),
                }
            }
            _ => Err(self.error("a number, a name or '('")),
        }
    }

    /// `(expression, ...)` with exactly `count` arguments.
    fn arguments(&mut self, name: &str, count: usize) -> Result<Vec<String>, FormulaError> {
        let at = self.at();
        let args = self.argument_list()?;
        if args.len() != count {
            return Err(FormulaError {
                at,
                message: format!("'{name}' takes {count} argument(s), here {}", args.len()),
            });
        }
        Ok(args)
    }

    fn argument_list(&mut self) -> Result<Vec<String>, FormulaError> {
        self.expect('(')?;
        let mut args = vec![self.expression()?];
        while self.eat(',') {
            args.push(self.expression()?);
        }
        self.expect(')')?;
        Ok(args)
    }

    /// `piecewise(x, functions(f0, ..., fn), transitions(x1, ..., xn))`: `f0 + sum_i
    /// step(x - x_i) (f_i - f_{i-1})`, `step(s) = 1 - max(sign(-s), 0)` (1 from `s = 0`
    /// on, as OndselSolver takes the next function when `x` is not below a transition).
    fn piecewise(&mut self, at: usize) -> Result<String, FormulaError> {
        self.expect('(')?;
        let x = self.expression()?;
        self.expect(',')?;
        let list = |name: &str, this: &mut Self| -> Result<Vec<String>, FormulaError> {
            match this.peek() {
                Token::Word(w) if w == name => {
                    this.k += 1;
                    this.argument_list()
                }
                _ => Err(this.error(&format!("'{name}(...)'"))),
            }
        };
        let functions = list("functions", self)?;
        self.expect(',')?;
        let transitions = list("transitions", self)?;
        self.expect(')')?;
        if functions.len() != transitions.len() + 1 {
            return Err(FormulaError {
                at,
                message: format!(
                    "'piecewise' needs one function more than transitions, here {} and {}",
                    functions.len(),
                    transitions.len()
                ),
            });
        }
        let mut out = functions[0].clone();
        for (k, xk) in transitions.iter().enumerate() {
            let step = format!("(1 - max(sign({xk} - {x}), 0))");
            out = format!(
                "({out} + {step} * ({} - {}))",
                functions[k + 1],
                functions[k]
            );
        }
        Ok(out)
    }
}

/// A short window of `text` around character `at`, for error messages.
pub(super) fn window(text: &str, at: usize) -> String {
    const SIDE: usize = 24;
    let chars: Vec<char> = text.chars().collect();
    let from = at.saturating_sub(SIDE);
    let to = (at + SIDE).min(chars.len());
    let mut s = String::new();
    if from > 0 {
        s.push_str("...");
    }
    s.extend(&chars[from..to]);
    if to < chars.len() {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::ondsel_formula;

    #[test]
    fn numbers_signs_and_powers_mean_what_ondsel_solver_reads() {
        let cases = [
            ("2.0d*pi*time", "2.0*pi*t"),
            ("1.5d3", "1500.0"),
            ("1e-3", "0.001"),
            ("-2^2", "-2.0^2.0"),
            ("2*-3^2", "2.0*(-3.0)^2.0"),
            ("2^3^2", "2.0^3.0^2.0"),
            ("(1 + 2)*(3 - 4)/(5*6)", "(1.0 + 2.0)*(3.0 - 4.0)/(5.0*6.0)"),
            ("1 - (2 - 3)", "1.0 - (2.0 - 3.0)"),
            ("", "0"),
            ("\"a comment\"<n>time<n>+<n>1", "t + 1.0"),
            ("arctan(time)", "atan(t)"),
        ];
        for (text, want) in cases {
            assert_eq!(ondsel_formula(text).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn errors_give_the_position() {
        let e = ondsel_formula("2*(time + ").err();
        assert_eq!(e.map(|e| e.at), Some(10));
        let e = ondsel_formula("2*-time").err();
        assert_eq!(e.map(|e| e.at), Some(2));
        assert!(ondsel_formula("spline(time, 3, 0, 0, 1, 1)").is_err());
        assert!(ondsel_formula("foo(time)").is_err());
        assert!(ondsel_formula("\"open").is_err());
    }
}
