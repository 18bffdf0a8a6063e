//! Numbers of `.asmt` files: decimals, now and then with an exponent or OndselSolver's
//! `d` marker (`2.0d`, `1.0d-3`).
//!
//! Almost every number of a file is a decimal of at most 15 significant digits written
//! by another solver (`0.0`, `-0.61538461538462`, `0.0044421521492699`). Such a number
//! is its digits as an integer below 2^53 times a power of ten of at most 22 either
//! way, and both are doubles exactly; one IEEE multiplication or division of two exact
//! operands rounds correctly, so that one operation gives the value `str::parse` gives,
//! to the bit (Clinger's fast path). [`scan_decimal`] reads such a token in one pass as
//! it finds the token's end; anything else goes to the full parse ([`parse_token`]).

/// Largest mantissa taken on the fast path: every integer up to it is a double.
const EXACT_MANTISSA: u64 = 1 << 53;

/// Powers of ten that are doubles exactly (5^22 < 2^53), the fast path's scales.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Exponents are read up to this size (a larger one is off the fast path anyway).
const EXPONENT_CAP: i64 = 10_000;

/// Whether `b` ends a token of a line of numbers.
fn gap(b: u8) -> bool {
    b == b'\t' || b == b' '
}

/// The digits at the start of `b` appended to `mantissa` (wrapping: the caller refuses
/// more than [`MAX_DIGITS`] of them), and how many there are.
#[inline]
fn digits(b: &[u8], mut mantissa: u64) -> (u64, usize) {
    let mut count = 0;
    while let Some(&c) = b.get(count) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(d));
        count += 1;
    }
    (mantissa, count)
}

/// Most digits a mantissa on the fast path is read from: any 19 digits are below
/// 2^64, so the integer read is the digits' (it is then held to [`EXACT_MANTISSA`]).
const MAX_DIGITS: usize = 19;

/// Where the token at `b[from..]` ends: at the first tab or space, or the end.
fn token_end(b: &[u8], from: usize) -> usize {
    let rest = b.get(from..).unwrap_or_default();
    from + rest.iter().position(|&c| gap(c)).unwrap_or(rest.len())
}

/// The token at the start of `b`, up to the first tab or space or the end: its value
/// when it is `-?d+(.d*)?([eE][+-]?d+)?` within the fast path (see the module), and
/// where it ends. `None` leaves the token to [`parse_token`].
#[inline]
pub(super) fn scan_decimal(b: &[u8]) -> (Option<f64>, usize) {
    let negative = b.first() == Some(&b'-');
    let start = usize::from(negative);
    let (mut mantissa, whole) = digits(b.get(start..).unwrap_or_default(), 0);
    let mut i = start + whole;
    let mut decimals = 0;
    if whole > 0 && b.get(i) == Some(&b'.') {
        (mantissa, decimals) = digits(b.get(i + 1..).unwrap_or_default(), mantissa);
        i += 1 + decimals;
    }
    let mut fast = whole > 0 && whole + decimals <= MAX_DIGITS && mantissa <= EXACT_MANTISSA;
    let mut exponent: i64 = 0;
    if whole > 0 && matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        let negative_exponent = b.get(j) == Some(&b'-');
        if matches!(b.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        let first = j;
        while let Some(&c) = b.get(j) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            exponent = (exponent * 10 + i64::from(d)).min(EXPONENT_CAP);
            j += 1;
        }
        let count = j - first;
        fast &= count > 0;
        if negative_exponent {
            exponent = -exponent;
        }
        i = j;
    }
    if b.get(i).is_some_and(|&c| !gap(c)) {
        return (None, token_end(b, i));
    }
    let power = exponent - decimals as i64;
    match POW10.get(power.unsigned_abs() as usize) {
        Some(&scale) if fast => {
            let m = mantissa as f64;
            let x = if power < 0 { m / scale } else { m * scale };
            (Some(if negative { -x } else { x }), i)
        }
        _ => (None, i),
    }
}

/// Number syntax of the files: decimal, possibly with an OndselSolver `d` marker
/// (`2.0d`, `1.0d-3`), white space around it allowed. Finite values only.
pub(crate) fn parse_number(text: &str) -> Option<f64> {
    let t = super::tree::trim(text);
    match scan_decimal(t.as_bytes()) {
        (Some(x), end) if end == t.len() => Some(x),
        _ => parse_token(t),
    }
}

/// [`parse_number`] of a token without white space around it, in full: what the fast
/// path leaves (a long mantissa, a scale past 10^22, the `d` marker, read as an
/// exponent marker).
pub(super) fn parse_token(t: &str) -> Option<f64> {
    let x = t.parse::<f64>().or_else(|_| {
        let t = t.strip_suffix('d').unwrap_or(t);
        if t.bytes().any(|b| b == b'd') {
            t.replace('d', "e").parse::<f64>()
        } else {
            t.parse::<f64>()
        }
    });
    x.ok().filter(|x| x.is_finite())
}

#[cfg(test)]
mod tests {
    use super::{parse_number, scan_decimal};

    /// The fast path's value, when it takes the whole of `s`.
    fn fast(s: &str) -> Option<f64> {
        match scan_decimal(s.as_bytes()) {
            (Some(x), end) if end == s.len() => Some(x),
            _ => None,
        }
    }

    /// The fast path gives `str::parse`'s value to the bit, and leaves what it does not
    /// read to it.
    #[test]
    fn fast_decimals_are_read_as_str_parse_reads_them() {
        for s in [
            "0.0",
            "1.0",
            "-0.1",
            "-0.0",
            "-0",
            "0.62831853071796",
            "-0.61538461538462",
            "0.0044421521492699",
            "0.00000000000001",
            "123456789012345",
            "9007199254740992",
            "7.",
            "3",
            "1e5",
            "1.5E-3",
            "2.5e+10",
            "1.e5",
            "6.9388939039072e-9",
            "1e22",
            "1e-22",
            "0.000000000000000001",
            "0e0",
        ] {
            let want: f64 = s.parse().expect("a number");
            assert_eq!(fast(s).map(f64::to_bits), Some(want.to_bits()), "{s}");
            assert_eq!(
                parse_number(s).map(f64::to_bits),
                Some(want.to_bits()),
                "{s}"
            );
        }
        // Left to the full parse: too many digits, a scale past 10^22, other syntax.
        for s in [
            "",
            "-",
            ".5",
            "-.5",
            "+1",
            "1.2.3",
            "9007199254740993",
            "0.12345678901234567",
            "0.0000000000000000000001",
            "6.9388939039072e-18",
            "1e23",
            "1e",
            "1e+",
            "2.0d",
            "1,5",
            "--1",
            "inf",
            "1x",
        ] {
            assert_eq!(fast(s), None, "{s}");
        }
    }

    #[test]
    fn a_token_ends_at_a_tab_or_a_space() {
        assert_eq!(scan_decimal(b"1.5 \t2.0"), (Some(1.5), 3));
        assert_eq!(scan_decimal(b"1.5\t2.0"), (Some(1.5), 3));
        assert_eq!(scan_decimal(b"2.0d-3 \t1"), (None, 6));
        assert_eq!(scan_decimal(b"x\t1"), (None, 1));
        assert_eq!(scan_decimal(b"1e400"), (None, 5));
        assert_eq!(scan_decimal(b""), (None, 0));
    }

    proptest::proptest! {
        /// Any decimal of up to 17 digits with or without an exponent, placed anywhere:
        /// the same bits as `str::parse`, whichever path reads it.
        #[test]
        fn decimals_match_str_parse(
            m in 0u64..100_000_000_000_000_000,
            point in 0usize..18,
            exponent in proptest::option::of(-30i32..30),
            zeros in 0usize..4,
            negative: bool,
        ) {
            let digits = format!("{}{m}", "0".repeat(zeros));
            let point = point.min(digits.len());
            let (a, b) = digits.split_at(digits.len() - point);
            let a = if a.is_empty() { "0" } else { a };
            let e = exponent.map(|e| format!("e{e}")).unwrap_or_default();
            let s = format!("{}{a}.{b}{e}", if negative { "-" } else { "" });
            let want: f64 = s.parse().expect("a number");
            let got = parse_number(&s).map(f64::to_bits);
            proptest::prop_assert_eq!(got, Some(want.to_bits()), "{}", s);
            if let Some(x) = fast(&s) {
                proptest::prop_assert_eq!(x.to_bits(), want.to_bits(), "{}", s);
            }
        }
    }

    #[test]
    fn numbers_plain_and_with_the_d_marker() {
        assert_eq!(parse_number("-0.5"), Some(-0.5));
        assert_eq!(parse_number(" 1e5\t"), Some(1e5));
        assert_eq!(parse_number("2.0d"), Some(2.0));
        assert_eq!(parse_number("1.0d-3"), Some(1e-3));
        assert_eq!(parse_number("1d"), Some(1.0));
        assert_eq!(parse_number("1 2"), None);
        assert_eq!(parse_number("inf"), None);
        assert_eq!(parse_number("NaN"), None);
        assert_eq!(parse_number("1e999"), None);
        assert_eq!(parse_number("1.0dd"), None);
        assert_eq!(parse_number("x"), None);
    }
}
