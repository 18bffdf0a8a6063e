//! Line ends found in one vectorised pass: those of the text before `TimeSeries` (the
//! tree's lines), and those of the `TimeSeries` block with the tabs on each line.
//!
//! The tree's lines are short (26 bytes on average in `fourbar.asmt`): a search per line
//! for its end (eight bytes at a time, then `memchr`) left the next line's start waiting
//! on the search and the branch leaving it, mispredicted at most lines. The ends listed
//! first, 64 bytes a step, make the tree's loop a walk over a list.
//!
//! A `TimeSeries` block is most of a large `.asmt` file (150 kB of the 160 kB of
//! `fourbar.asmt`), and all that is checked of it is its shape: where each line ends,
//! how many tabs it holds, and whether any tab is followed by a blank or a byte that is
//! not ASCII (then the rows are counted cell by cell). Finding the three in separate
//! passes (a search for blanks after tabs, one for line ends, a tab count per line)
//! read the block three times; on CPUs with AVX2 one pass finds all three, 64 bytes a
//! step. Elsewhere the separate passes remain, and they are the reference the
//! vectorised pass is tested against.

/// The offset of every `'\n'` in `text`, in order.
pub(super) fn line_ends(text: &[u8]) -> Vec<usize> {
    pulp::Arch::new().dispatch(Ends(text))
}

/// [`line_ends`], compiled for the best instruction set [`pulp`] finds.
struct Ends<'a>(&'a [u8]);

impl pulp::WithSimd for Ends<'_> {
    type Output = Vec<usize>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Vec<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some(v3) = pulp::x86::V3::try_new() {
            return avx2::line_ends(v3, self.0);
        }
        memchr::memchr_iter(b'\n', self.0).collect()
    }
}

/// Where each line of a block ends and the tabs it holds, and whether a tab anywhere is
/// followed by a [`blank_or_not_ascii`] byte.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct BlockLines {
    /// Per line, in order: the offset of its `'\n'` (the block's length for the last
    /// line, which has none) and its tab count. A block ending in `'\n'` has an empty
    /// last line.
    pub(super) lines: Vec<(usize, usize)>,
    /// Whether a tab is followed by a byte that is [`blank_or_not_ascii`].
    pub(super) tab_then_blank: bool,
}

impl BlockLines {
    /// The lines of `block`, with the vector instructions the CPU has.
    pub(super) fn of(block: &[u8]) -> Self {
        pulp::Arch::new().dispatch(Scan(block))
    }
}

/// The scan, compiled for the best instruction set [`pulp`] finds when the program runs.
struct Scan<'a>(&'a [u8]);

impl pulp::WithSimd for Scan<'_> {
    type Output = BlockLines;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> BlockLines {
        #[cfg(target_arch = "x86_64")]
        if let Some(v3) = pulp::x86::V3::try_new() {
            return avx2::scan(v3, self.0);
        }
        separate_passes(self.0)
    }
}

/// The reference: a search for a blank after a tab, then the line ends, then each line's
/// tabs (inlined into [`Scan`]'s compilations, so the search is vectorised there).
#[inline(always)]
fn separate_passes(block: &[u8]) -> BlockLines {
    let mut lines = Vec::new();
    let mut from = 0;
    for end in memchr::memchr_iter(b'\n', block).chain(std::iter::once(block.len())) {
        lines.push((end, bytecount::count(&block[from..end], b'\t')));
        from = end + 1;
    }
    BlockLines {
        lines,
        tab_then_blank: tab_then_blank(block),
    }
}

/// A byte at or below the space (white space or another control byte) or above ASCII
/// (part of a longer character): one signed comparison. After a tab, such a byte sends
/// the block to the cell-by-cell count, which is exact for any text; the rows as the
/// files are written have a digit or a sign after each tab.
#[inline(always)]
pub(super) fn blank_or_not_ascii(b: u8) -> bool {
    b as i8 <= b' ' as i8
}

/// Whether a tab is followed by a [`blank_or_not_ascii`] byte anywhere in `bytes`. One
/// pass, branch free within a chunk, so that it is vectorised.
#[inline(always)]
fn tab_then_blank(bytes: &[u8]) -> bool {
    let Some(next) = bytes.get(1..) else {
        return false;
    };
    let this = &bytes[..next.len()];
    const CHUNK: usize = 128;
    let mut pairs = this.chunks_exact(CHUNK).zip(next.chunks_exact(CHUNK));
    for (a, b) in &mut pairs {
        let mut found = 0u8;
        for k in 0..CHUNK {
            found |= u8::from(a[k] == b'\t') & u8::from(blank_or_not_ascii(b[k]));
        }
        if found != 0 {
            return true;
        }
    }
    let tail = this.len() - this.len() % CHUNK;
    this[tail..]
        .iter()
        .zip(&next[tail..])
        .any(|(&a, &c)| a == b'\t' && blank_or_not_ascii(c))
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::__m256i;

    use pulp::bytemuck::{cast, cast_slice};
    use pulp::x86::V3;

    use super::BlockLines;

    /// 64-byte steps between folds of the per-byte tab counts: each byte lane gains at
    /// most two a step, and must stay within a byte.
    const STEPS_PER_FOLD: usize = 127;

    /// The loads of step `step`: its 64 bytes as two vectors, and the 64 bytes one on.
    #[inline(always)]
    fn load(here: &[[u8; 32]], next: &[[u8; 32]], step: usize) -> Option<[__m256i; 4]> {
        let h = here.get(2 * step..2 * step + 2)?;
        let n = next.get(2 * step..2 * step + 2)?;
        Some([cast(h[0]), cast(h[1]), cast(n[0]), cast(n[1])])
    }

    /// The bytes compared with: a tab, a line end, and the byte after the space.
    #[derive(Clone, Copy)]
    struct Splats {
        tab: __m256i,
        newline: __m256i,
        above: __m256i,
    }

    impl Splats {
        /// The three vectors, each made once and kept: passed through
        /// [`core::hint::black_box`] so that the compiler cannot make them again from
        /// their constant at every step (it did: three broadcasts a step, on the ports the
        /// compares need).
        #[inline(always)]
        fn new(v3: V3) -> Splats {
            let splat = |b: u8| core::hint::black_box(v3.avx._mm256_set1_epi8(b as i8));
            Splats {
                tab: splat(b'\t'),
                newline: splat(b'\n'),
                above: splat(b' ' + 1),
            }
        }
    }

    /// Per byte of a step: whether it is a tab, whether it is a line end, and whether
    /// it is a tab followed by a [`super::blank_or_not_ascii`] byte (`next <= ' '` as
    /// signed bytes, one comparison: `' ' + 1 > next`).
    #[inline(always)]
    fn classify(v3: V3, s: Splats, [v0, v1, w0, w1]: [__m256i; 4]) -> [[__m256i; 2]; 3] {
        let avx2 = v3.avx2;
        let t0 = avx2._mm256_cmpeq_epi8(v0, s.tab);
        let t1 = avx2._mm256_cmpeq_epi8(v1, s.tab);
        let b0 = avx2._mm256_cmpgt_epi8(s.above, w0);
        let b1 = avx2._mm256_cmpgt_epi8(s.above, w1);
        let n0 = avx2._mm256_cmpeq_epi8(v0, s.newline);
        let n1 = avx2._mm256_cmpeq_epi8(v1, s.newline);
        [
            [t0, t1],
            [n0, n1],
            [avx2._mm256_and_si256(t0, b0), avx2._mm256_and_si256(t1, b1)],
        ]
    }

    /// A bit a byte of a step's 64 bytes.
    #[inline(always)]
    fn bits(v3: V3, [lo, hi]: [__m256i; 2]) -> u64 {
        u64::from(v3.avx2._mm256_movemask_epi8(lo) as u32)
            | (u64::from(v3.avx2._mm256_movemask_epi8(hi) as u32) << 32)
    }

    /// Steps from `step` on, adding their tabs to per-byte counters (each negative: a
    /// match is -1), until one holds a line end or a tab followed by a blank (its
    /// index) or `limit` is reached (`limit`). Only the counters are carried from step
    /// to step, and the loop calls nothing, so that they stay in a register.
    #[inline(always)]
    fn until_line_end(
        v3: V3,
        (here, next): (&[[u8; 32]], &[[u8; 32]]),
        step: usize,
        limit: usize,
        counts: &mut __m256i,
    ) -> usize {
        let avx2 = v3.avx2;
        let splats = Splats::new(v3);
        let (Some(h), Some(n)) = (here.get(2 * step..2 * limit), next.get(2 * step..2 * limit))
        else {
            return step;
        };
        let mut sum = *counts;
        for (k, (h, n)) in h.chunks_exact(2).zip(n.chunks_exact(2)).enumerate() {
            let loads = [cast(h[0]), cast(h[1]), cast(n[0]), cast(n[1])];
            let [[t0, t1], [n0, n1], [f0, f1]] = classify(v3, splats, loads);
            let stop =
                avx2._mm256_or_si256(avx2._mm256_or_si256(n0, n1), avx2._mm256_or_si256(f0, f1));
            if avx2._mm256_movemask_epi8(stop) != 0 {
                *counts = sum;
                return step + k;
            }
            sum = avx2._mm256_add_epi8(sum, avx2._mm256_add_epi8(t0, t1));
        }
        *counts = sum;
        limit
    }

    /// The line ends of `text`, 64 bytes a step: each step's line ends as a bit mask,
    /// its set bits listed; the bytes after the last whole step one by one.
    #[inline(always)]
    pub(super) fn line_ends(v3: V3, text: &[u8]) -> Vec<usize> {
        let newline = v3.avx._mm256_set1_epi8(b'\n' as i8);
        let steps = text.len() / 64;
        let here: &[[u8; 32]] = cast_slice(text.get(..steps * 64).unwrap_or_default());
        // A line is rarely shorter than 8 bytes: grown past that only.
        let mut ends = Vec::with_capacity(text.len() / 8 + 8);
        for (step, h) in here.chunks_exact(2).enumerate() {
            let (v0, v1): (__m256i, __m256i) = (cast(h[0]), cast(h[1]));
            let mut found = bits(
                v3,
                [
                    v3.avx2._mm256_cmpeq_epi8(v0, newline),
                    v3.avx2._mm256_cmpeq_epi8(v1, newline),
                ],
            );
            while found != 0 {
                ends.push(step * 64 + found.trailing_zeros() as usize);
                found &= found - 1;
            }
        }
        let done = steps * 64;
        let rest = text.get(done..).unwrap_or_default();
        ends.extend(memchr::memchr_iter(b'\n', rest).map(|at| done + at));
        ends
    }

    /// The block in 64-byte steps, as two 32-byte vectors and the same two one byte on
    /// (the byte after each tab). A step without a line end only adds its tabs to
    /// per-byte counters; a step with one has its tabs split at each line end from the
    /// bit masks. The bytes after the last whole step (and the last step itself when
    /// its next byte would be past the end) are counted one by one.
    #[inline(always)]
    pub(super) fn scan(v3: V3, block: &[u8]) -> BlockLines {
        let avx2 = v3.avx2;
        let zero = v3.avx._mm256_setzero_si256();
        // The tabs held in per-byte counters.
        let fold = |counts: __m256i| -> usize {
            let sums: [u64; 4] =
                cast(avx2._mm256_sad_epu8(avx2._mm256_sub_epi8(zero, counts), zero));
            sums.iter().map(|&s| s as usize).sum()
        };
        // The whole steps whose shifted load stays inside the block.
        let steps = block.len().saturating_sub(1) / 64;
        let here: &[[u8; 32]] = cast_slice(block.get(..steps * 64).unwrap_or_default());
        let next: &[[u8; 32]] = cast_slice(block.get(1..1 + steps * 64).unwrap_or_default());
        let mut lines = Vec::with_capacity(block.len() / 1024 + 4);
        let mut counts = zero;
        let mut found = false;
        let mut tabs = 0usize;
        let mut step = 0;
        while step < steps {
            let limit = steps.min(step + STEPS_PER_FOLD);
            step = until_line_end(v3, (here, next), step, limit, &mut counts);
            tabs += fold(counts);
            counts = zero;
            // Stopped at the limit (the counters are full) or at a step to split.
            if step == limit {
                continue;
            }
            let Some(loads) = load(here, next, step) else {
                break;
            };
            let [t, n, f] = classify(v3, Splats::new(v3), loads);
            found |= bits(v3, f) != 0;
            let (mut rest, mut ends) = (bits(v3, t), bits(v3, n));
            while ends != 0 {
                let bit = ends.trailing_zeros();
                let before = (1u64 << bit) - 1;
                tabs += (rest & before).count_ones() as usize;
                rest &= !before;
                lines.push((step * 64 + bit as usize, tabs));
                tabs = 0;
                ends &= ends - 1;
            }
            tabs += rest.count_ones() as usize;
            step += 1;
        }
        let done = steps * 64;
        let mut after_tab = done
            .checked_sub(1)
            .and_then(|last| block.get(last))
            .is_some_and(|&b| b == b'\t');
        for (k, &b) in block.get(done..).unwrap_or_default().iter().enumerate() {
            found |= after_tab && super::blank_or_not_ascii(b);
            after_tab = b == b'\t';
            if b == b'\t' {
                tabs += 1;
            } else if b == b'\n' {
                lines.push((done + k, tabs));
                tabs = 0;
            }
        }
        lines.push((block.len(), tabs));
        BlockLines {
            lines,
            tab_then_blank: found,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{blank_or_not_ascii, line_ends, separate_passes, BlockLines};

    fn check(block: &[u8]) {
        let want = separate_passes(block);
        let byte_by_byte = block
            .windows(2)
            .any(|w| w[0] == b'\t' && blank_or_not_ascii(w[1]));
        assert_eq!(want.tab_then_blank, byte_by_byte);
        assert_eq!(BlockLines::of(block), want);
    }

    #[test]
    fn short_and_empty_blocks() {
        for block in ["", "\n", "\t", "\t\n", "a\tb\n\tc", "\t \n"] {
            check(block.as_bytes());
        }
    }

    #[test]
    fn long_lines_fold_their_counts() {
        // A line of 20,000 tabs and values (more than 127 steps without a line end),
        // one of tabs only, and the same with blanks after tabs.
        let values = "0.5\t".repeat(5000);
        let tabs = "\t".repeat(20_000);
        let text = format!("Number\t{values}\nTime\t{tabs}\n{values}");
        check(text.as_bytes());
        check(text.replace("\t0", "\t ").as_bytes());
    }

    proptest::proptest! {
        /// The line ends found 64 bytes a step are `memchr`'s.
        #[test]
        fn line_ends_are_the_newlines(
            text in proptest::collection::vec(
                proptest::sample::select(vec![b'\t', b' ', b'a', b'\n', b'\r', 0xC3]),
                0..700,
            ),
        ) {
            let want: Vec<usize> = memchr::memchr_iter(b'\n', &text).collect();
            proptest::prop_assert_eq!(line_ends(&text), want);
        }


        /// The one pass agrees with the separate passes (as compiled for this CPU) on
        /// blocks of every length around the step, with tabs, blanks, line ends and
        /// control bytes anywhere.
        #[test]
        fn one_pass_agrees_with_separate_passes(
            mut block in proptest::collection::vec(
                proptest::sample::select(vec![b'\t', b' ', b'0', b'.', b'\n', 1u8, b'\r', 0xC3]),
                0..700,
            ),
            clean in proptest::bool::ANY,
        ) {
            if clean {
                // Every tab followed by a value (a block as the files are written),
                // the last byte aside.
                for k in 1..block.len() {
                    if block[k - 1] == b'\t' && blank_or_not_ascii(block[k]) {
                        block[k] = b'5';
                    }
                }
            }
            let want = separate_passes(&block);
            let byte_by_byte = block.windows(2).any(|w| w[0] == b'\t' && blank_or_not_ascii(w[1]));
            proptest::prop_assert_eq!(want.tab_then_blank, byte_by_byte);
            proptest::prop_assert_eq!(super::tab_then_blank(&block), byte_by_byte);
            proptest::prop_assert_eq!(BlockLines::of(&block), want);
        }
    }
}
