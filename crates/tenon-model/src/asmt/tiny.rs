//! Decimals far below one, read exactly without the library's full parser.
//!
//! Exported rotation matrices carry rounding noise such as `-4.8572257327351e-17`: a
//! mantissa of at most 15 digits times a power of ten below 10^-22, out of reach of the
//! one exact division of the fast path (`number`). A 4-part file holds dozens of them,
//! and each cost the full `str::parse` (its own scan of the digits, then the Eisel-Lemire
//! step) several times a fast token's cost.
//!
//! Here `m * 10^-n` (`m` at most 2^53, `n` from 23 to [`MAX_POWER`]) is first
//! approximated by divisions by exact powers of ten (within two units in the last place),
//! then settled exactly: the candidate is kept only if the decimal lies between the
//! midpoints to its neighbours, compared as integers (`m * 2^k` against
//! `(2M +- 1) * 10^n`, a few hundred bits), else moved one step toward it and compared
//! again. The result is the correctly rounded double (ties to even), which is what
//! `str::parse` gives: a property test holds the two equal.

use std::cmp::Ordering;
use std::sync::OnceLock;

/// Largest `n` of `10^-n` read here: 10^66 needs 220 bits, four words.
pub(super) const MAX_POWER: u32 = 66;

/// Smallest `n` read here (up to 22 the fast path's one division is exact).
const MIN_POWER: u32 = 23;

/// Words of the integers compared (384 bits: `m * 2^k` reaches about 330).
const WORDS: usize = 6;

type Big = [u64; WORDS];

/// `10^n` as integers, for `n` up to [`MAX_POWER`], worked out once.
fn powers_of_ten() -> &'static [Big] {
    static POWERS: OnceLock<Vec<Big>> = OnceLock::new();
    POWERS.get_or_init(|| {
        let mut powers = Vec::with_capacity(MAX_POWER as usize + 1);
        let mut p: Big = [0; WORDS];
        p[0] = 1;
        for _ in 0..=MAX_POWER {
            powers.push(p);
            p = times_small(&p, 10);
        }
        powers
    })
}

/// `a * k` (no overflow for the sizes used here: the top word stays clear).
fn times_small(a: &Big, k: u64) -> Big {
    let mut out: Big = [0; WORDS];
    let mut carry = 0u128;
    for (o, &w) in out.iter_mut().zip(a) {
        let x = u128::from(w) * u128::from(k) + carry;
        *o = x as u64;
        carry = x >> 64;
    }
    out
}

/// `m << shift` (the result fits: `m` below 2^54, `shift` below 320).
fn shifted(m: u64, shift: u32) -> Big {
    let mut out: Big = [0; WORDS];
    let (word, bit) = ((shift / 64) as usize, shift % 64);
    if let Some(o) = out.get_mut(word) {
        *o = m << bit;
    }
    if bit > 0 {
        if let Some(o) = out.get_mut(word + 1) {
            *o = m >> (64 - bit);
        }
    }
    out
}

fn compare(a: &Big, b: &Big) -> Ordering {
    a.iter().rev().cmp(b.iter().rev())
}

/// How `m * 10^-n` compares with `num * 2^-shift`: `m * 2^shift` against `num * 10^n`.
fn compare_with(m: u64, n: u32, num: u64, shift: u32, powers: &[Big]) -> Ordering {
    let Some(ten_n) = powers.get(n as usize) else {
        return Ordering::Equal;
    };
    compare(&shifted(m, shift), &times_small(ten_n, num))
}

/// `m * 10^-n` correctly rounded, for `m` from 1 to 2^53 and `n` from 23 to
/// [`MAX_POWER`] (`None` outside).
pub(super) fn tiny_decimal(m: u64, n: u32) -> Option<f64> {
    if m == 0 || m > 1 << 53 || !(MIN_POWER..=MAX_POWER).contains(&n) {
        return None;
    }
    // Divisions by exact powers of ten (10^22 at most): a few roundings, within two
    // units in the last place of the value.
    let mut x = m as f64;
    let mut left = n;
    while left > 0 {
        let step = left.min(22);
        x /= super::number::power_of_ten(step);
        left -= step;
    }
    let powers = powers_of_ten();
    for _ in 0..8 {
        let bits = x.to_bits();
        let biased = (bits >> 52) as u32;
        // The values here are normal doubles (at least 1e-66 in magnitude).
        if biased == 0 || biased >= 0x7ff {
            return None;
        }
        let mantissa = (bits & ((1 << 52) - 1)) | 1 << 52;
        // x = mantissa * 2^-e, and its midpoints to its neighbours are
        // (2 mantissa +- 1) * 2^-(e + 1) (below a power of two, the one down is
        // (4 mantissa - 1) * 2^-(e + 2)).
        let e = 1075 - biased;
        let even = mantissa & 1 == 0;
        let above = compare_with(m, n, 2 * mantissa + 1, e + 1, powers);
        if above == Ordering::Greater || (above == Ordering::Equal && !even) {
            x = f64::from_bits(bits + 1);
            continue;
        }
        let below = if mantissa == 1 << 52 {
            compare_with(m, n, 4 * mantissa - 1, e + 2, powers)
        } else {
            compare_with(m, n, 2 * mantissa - 1, e + 1, powers)
        };
        if below == Ordering::Less || (below == Ordering::Equal && !even) {
            x = f64::from_bits(bits - 1);
            continue;
        }
        return Some(x);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tiny_decimal` is `str::parse`'s value to the bit: for mantissas of every size
    /// (one digit to 2^53, powers of ten, numbers next to a power of two) at every
    /// power it reads.
    #[test]
    fn tiny_decimals_are_read_as_str_parse_reads_them() {
        let mut mantissas: Vec<u64> = vec![
            1,
            2,
            5,
            9,
            10,
            48572257327351,
            61629758220392,
            62444081840097,
            (1 << 53) - 1,
            1 << 53,
            1 << 52,
            (1 << 52) + 1,
            999_999_999_999_999,
            100_000_000_000_000,
        ];
        for k in 0..53 {
            mantissas.push(1 << k);
            mantissas.push((1u64 << k).saturating_sub(1).max(1));
        }
        // A fixed spread of others (a linear congruential walk).
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..400 {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            mantissas.push((s >> 11) % (1 << 53) + 1);
        }
        let mut checked = 0;
        for &m in &mantissas {
            for n in MIN_POWER..=MAX_POWER {
                let want: f64 = format!("{m}e-{n}").parse().unwrap_or(f64::NAN);
                let got = tiny_decimal(m, n);
                assert_eq!(got.map(f64::to_bits), Some(want.to_bits()), "{m}e-{n}");
                checked += 1;
            }
        }
        assert!(checked > 20_000, "{checked}");
        assert_eq!(tiny_decimal(0, 30), None);
        assert_eq!(tiny_decimal(5, 22), None);
        assert_eq!(tiny_decimal(5, MAX_POWER + 1), None);
        assert_eq!(tiny_decimal((1 << 53) + 1, 30), None);
    }

    proptest::proptest! {
        #[test]
        fn any_tiny_decimal_is_read_as_str_parse_reads_it(
            m in 1u64..=(1 << 53),
            n in MIN_POWER..=MAX_POWER,
        ) {
            let want: f64 = format!("{m}e-{n}").parse().unwrap_or(f64::NAN);
            proptest::prop_assert_eq!(tiny_decimal(m, n).map(f64::to_bits), Some(want.to_bits()));
        }
    }
}
