//! The expression-string parser: every construct of the grammar, malformed strings with
//! their positions, and no panic on any input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use tenon_expr::{parse, parse_into, AngleUnit, ExprGraph, ExprId, ParseError, ParseOptions};

const DEG: ParseOptions = ParseOptions {
    angle_unit: AngleUnit::Degrees,
};
const RAD: ParseOptions = ParseOptions {
    angle_unit: AngleUnit::Radians,
};

/// Evaluates `text` with parameters `L = 200` and `t = 0.25`.
fn eval_with(text: &str, options: ParseOptions) -> Result<f64, ParseError> {
    let mut g = ExprGraph::new();
    let l = g.new_param("L");
    let t = g.new_param("t");
    let e = parse_into(&mut g, text, options, &mut |name, g| match name {
        "L" => Some(g.param(l)),
        "t" => Some(g.param(t)),
        _ => None,
    })?;
    Ok(g.evaluate(&[e], &[], &[200.0, 0.25]).unwrap()[0])
}

fn eval(text: &str) -> f64 {
    eval_with(text, RAD).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn assert_value(text: &str, want: f64) {
    let got = eval(text);
    assert!(
        (got - want).abs() <= 1e-12 * want.abs().max(1.0),
        "{text} = {got}, want {want}"
    );
}

#[test]
fn every_construct_of_the_grammar_parses() {
    use std::f64::consts::PI;
    assert_value("42", 42.0);
    assert_value("1.5", 1.5);
    assert_value(".5", 0.5);
    assert_value("2.", 2.0);
    assert_value("1e3", 1000.0);
    assert_value("2.5E-2", 0.025);
    assert_value("1e+2", 100.0);
    assert_value("  7  ", 7.0);
    assert_value("1 + 2 * 3", 7.0);
    assert_value("(1 + 2) * 3", 9.0);
    assert_value("10 - 4 - 3", 3.0);
    assert_value("12 / 3 / 2", 2.0);
    assert_value("2 ^ 3 ^ 2", 512.0);
    assert_value("-2 ^ 2", -4.0);
    assert_value("2 ^ -1", 0.5);
    assert_value("--3", 3.0);
    assert_value("+3 - -2", 5.0);
    assert_value("2 * L + 5", 405.0);
    assert_value("1.5 * L", 300.0);
    assert_value("360 * t", 90.0);
    assert_value("pi", PI);
    assert_value("sqrt(16)", 4.0);
    assert_value("sin(pi / 6)", 0.5);
    assert_value("cos(0)", 1.0);
    assert_value("tan(pi / 4)", 1.0);
    assert_value("asin(1)", PI / 2.0);
    assert_value("acos(-1)", PI);
    assert_value("atan(1)", PI / 4.0);
    assert_value("atan2(1, -1)", 3.0 * PI / 4.0);
    assert_value("abs(-3.5)", 3.5);
    assert_value("sign(-3.5)", -1.0);
    assert_value("sign(0)", 0.0);
    assert_value("sign(2)", 1.0);
    assert_value("min(3, 1, 2)", 1.0);
    assert_value("max(3, L, 2)", 200.0);
    assert_value("exp(ln(5))", 5.0);
    assert_value("2 ^ 0.5", 2f64.sqrt());
    assert_value("L ^ t", 200f64.powf(0.25));
    assert_value(
        "sqrt(L*L + (L/2)^2)",
        (200.0f64 * 200.0 + 100.0 * 100.0).sqrt(),
    );
}

#[test]
fn degrees_mode_converts_trigonometry() {
    let d = |text: &str| eval_with(text, DEG).unwrap();
    assert!((d("sin(30)") - 0.5).abs() < 1e-15);
    assert!((d("cos(360 * t)") - 0.0).abs() < 1e-15);
    assert!((d("tan(45)") - 1.0).abs() < 1e-15);
    assert!((d("asin(0.5)") - 30.0).abs() < 1e-12);
    assert!((d("acos(0)") - 90.0).abs() < 1e-12);
    assert!((d("atan(1)") - 45.0).abs() < 1e-12);
    assert!((d("atan2(-1, 0)") + 90.0).abs() < 1e-12);
    assert!(
        (d("sqrt(9) + pi") - (3.0 + std::f64::consts::PI)).abs() < 1e-15,
        "pi is a number in both modes"
    );
}

#[test]
fn names_are_listed_before_lowering() {
    let p = parse("2 * L + coupler - sin(L) + pi").unwrap();
    assert_eq!(p.names().collect::<Vec<_>>(), vec!["L", "coupler", "L"]);
    assert_eq!(parse("-12.5").unwrap().as_number(), Some(-12.5));
    assert_eq!(parse("12.5").unwrap().as_number(), Some(12.5));
    assert_eq!(parse("L").unwrap().as_number(), None);
}

/// Ten (and more) malformed strings: each error names its 1-based character position
/// and says what was expected.
#[test]
fn malformed_strings_give_the_position_and_what_was_expected() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "empty expression"),
        ("   ", 1, "empty expression"),
        (
            "1 +",
            4,
            "expected a number, a name, '(' or a sign, found end of input",
        ),
        (
            "(1 + 2",
            7,
            "expected ')' to close the '(' at character 1, found end of input",
        ),
        (
            "2 * * 3",
            5,
            "expected a number, a name, '(' or a sign, found '*'",
        ),
        ("foo(1)", 1, "unknown function 'foo'"),
        ("atan2(1)", 1, "'atan2' takes 2 arguments, got 1"),
        ("sin(1, 2)", 1, "'sin' takes 1 argument, got 2"),
        (
            "1e",
            3,
            "expected the digits of an exponent, found end of input",
        ),
        ("3 $ 4", 3, "unexpected '$' after a complete expression"),
        (
            "sin 30",
            1,
            "function 'sin' needs its arguments in parentheses",
        ),
        ("1 2", 3, "unexpected '2' after a complete expression"),
        ("2 * Q + 1", 5, "unknown name 'Q'"),
        (
            "max(1; 2)",
            6,
            "expected ',' or ')' in the arguments of 'max'",
        ),
        ("1e999", 1, "number '1e999' is out of range"),
        ("sqrt()", 6, "'sqrt' needs an argument"),
        (". + 1", 1, "expected digits in a number"),
        ("(1))", 4, "unexpected ')'"),
    ];
    for &(text, column, message) in cases {
        let err = eval_with(text, RAD).expect_err(text);
        assert_eq!(err.column(), column, "{text:?}: {err}");
        assert!(
            err.message().starts_with(message),
            "{text:?}: got {err}, want {message}"
        );
        assert!(err
            .to_string()
            .starts_with(&format!("at character {column}: ")));
    }
}

#[test]
fn positions_count_characters_not_bytes() {
    let err = eval_with("\u{e9}\u{e9} + ?", RAD).unwrap_err();
    // 'éé' is a name (unknown), found first at character 1; the '?' is at character 6.
    assert_eq!(err.column(), 6, "{err}");
}

#[test]
fn nesting_is_bounded_and_long_flat_expressions_are_fine() {
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    let err = eval_with(&deep, RAD).unwrap_err();
    assert!(err.message().contains("nested deeper"), "{err}");
    let signs = format!("{}1", "-".repeat(10_000));
    assert!(eval_with(&signs, RAD)
        .unwrap_err()
        .message()
        .contains("nested deeper"));
    let powers = vec!["1"; 10_000].join("^");
    assert!(eval_with(&powers, RAD)
        .unwrap_err()
        .message()
        .contains("nested deeper"));
    let fine = format!("{}1{}", "(".repeat(150), ")".repeat(150));
    assert_eq!(eval(&fine), 1.0);
    let long = vec!["1"; 100_000].join(" + ");
    assert_eq!(eval(&long), 100_000.0);
}

fn grammar_soup() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("(".to_string()),
        Just(")".to_string()),
        Just("+".to_string()),
        Just("-".to_string()),
        Just("*".to_string()),
        Just("/".to_string()),
        Just("^".to_string()),
        Just(",".to_string()),
        Just(" ".to_string()),
        Just(".".to_string()),
        Just("e".to_string()),
        Just("pi".to_string()),
        Just("L".to_string()),
        Just("t".to_string()),
        Just("sin".to_string()),
        Just("atan2".to_string()),
        Just("min".to_string()),
        Just("sqrt".to_string()),
        "[0-9]{1,3}".prop_map(|s| s),
        any::<char>().prop_map(|c| c.to_string()),
    ];
    prop::collection::vec(token, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn no_string_makes_the_parser_panic(text in any::<String>()) {
        let _ = eval_with(&text, DEG);
    }

    #[test]
    fn no_grammar_like_string_makes_the_parser_panic(text in grammar_soup()) {
        match eval_with(&text, DEG) {
            Ok(_) => {}
            Err(e) => prop_assert!(e.column() >= 1 && e.column() <= text.chars().count() + 1),
        }
    }
}

#[test]
fn parsing_shares_nodes_with_code_built_expressions() {
    let mut g = ExprGraph::new();
    let l = g.new_param("L");
    let mut resolve =
        |name: &str, g: &mut ExprGraph| -> Option<ExprId> { (name == "L").then(|| g.param(l)) };
    let a = parse_into(&mut g, "2 * L + 5", RAD, &mut resolve).unwrap();
    let b = parse_into(&mut g, "5 + L * 2", RAD, &mut resolve).unwrap();
    assert_eq!(a, b);
}

/// A well-formed expression string over every operator and function, with numbers
/// that take the folding rules' special paths (0, 1, 0.5, integers, large exponents).
fn well_formed() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("0".to_string()),
        Just("1".to_string()),
        Just("0.5".to_string()),
        Just("2".to_string()),
        Just("1100".to_string()),
        Just("pi".to_string()),
        Just("L".to_string()),
        Just("t".to_string()),
        (0u32..1000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b:03}")),
        (1u32..40).prop_map(|k| format!("{k}e-3")),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        let one = prop_oneof![
            Just("-"),
            Just("sqrt"),
            Just("sin"),
            Just("cos"),
            Just("tan"),
            Just("asin"),
            Just("acos"),
            Just("atan"),
            Just("abs"),
            Just("sign"),
            Just("exp"),
            Just("ln"),
        ];
        let two = prop_oneof![
            Just("+"),
            Just("-"),
            Just("*"),
            Just("/"),
            Just("^"),
            Just("atan2"),
            Just("min"),
            Just("max"),
        ];
        prop_oneof![
            (one, inner.clone()).prop_map(|(f, a)| if f == "-" {
                format!("-({a})")
            } else {
                format!("{f}({a})")
            }),
            (two, inner.clone(), inner.clone()).prop_map(|(f, a, b)| {
                if f.len() == 1 {
                    format!("({a}) {f} ({b})")
                } else {
                    format!("{f}({a}, {b})")
                }
            }),
            (inner.clone(), inner.clone(), inner)
                .prop_map(|(a, b, c)| format!("max({a}, {b}, {c})")),
        ]
    })
}

/// `text` lowered into a graph with `L` and `t` as constants, and the constant read
/// back (every operation folds as it is built).
fn folded(text: &str, options: ParseOptions) -> Result<f64, ParseError> {
    let mut g = ExprGraph::new();
    let e = parse_into(&mut g, text, options, &mut |name, g| match name {
        "L" => Some(g.constant(200.0)),
        "t" => Some(g.constant(0.25)),
        _ => None,
    })?;
    Ok(g.as_const(e).unwrap_or(f64::NAN))
}

fn evaluated(text: &str, options: ParseOptions) -> Result<f64, ParseError> {
    parse(text)?.evaluate(options, &mut |name| match name {
        "L" => Some(200.0),
        "t" => Some(0.25),
        _ => None,
    })
}

/// The same value to the bit, or NaN both.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn evaluating_gives_what_lowering_folds_to() {
    for text in [
        "2 * L + 5",
        "L ^ 2",
        "L ^ 0",
        "L ^ 1",
        "L ^ 0.5",
        "L ^ 1.5",
        "L ^ 2000",
        "(-8) ^ (1/3)",
        "0 * ln(0)",
        "sin(30) + cos(60) * tan(45)",
        "asin(0.5) - acos(0.5) + atan(1) + atan2(1, -1)",
        "min(L, t, 3) - max(t, -L)",
        "sign(-0) + sign(t) + abs(-L)",
        "exp(t) * ln(L) / sqrt(L)",
        "--t - +t",
        "pi * L / 180",
    ] {
        for options in [DEG, RAD] {
            let (a, b) = (folded(text, options), evaluated(text, options));
            assert!(
                matches!((&a, &b), (Ok(a), Ok(b)) if same(*a, *b)),
                "{text}: folded {a:?}, evaluated {b:?}"
            );
        }
    }
    let unknown = evaluated("2 * width", DEG).unwrap_err();
    assert_eq!(unknown, folded("2 * width", DEG).unwrap_err());
    assert_eq!(unknown.column(), 5);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn evaluating_any_expression_gives_what_lowering_folds_to(text in well_formed()) {
        for options in [DEG, RAD] {
            match (folded(&text, options), evaluated(&text, options)) {
                (Ok(a), Ok(b)) => prop_assert!(same(a, b), "{}: folded {}, evaluated {}", text, a, b),
                (a, b) => prop_assert!(false, "{}: folded {:?}, evaluated {:?}", text, a, b),
            }
        }
    }
}
