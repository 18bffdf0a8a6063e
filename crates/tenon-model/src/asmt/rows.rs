//! The lines of a `TimeSeries` block in one pass: where each ends and how many tabs it
//! holds, and whether any tab is followed by a blank.
//!
//! The block is most of a large file (150 kB of a 160 kB four-bar). It had been read
//! three times over: once for a tab followed by a blank, once for its line ends, and once
//! per line for its tabs. Here 64 bytes at a time give three bit masks (tabs, line ends,
//! bytes at or below the space), and lines are cut and their tabs counted from those.
//!
//! Architecture invariant: the vector scan and the byte-by-byte one give the same rows
//! and the same flag for every input (a property test holds them to it).

/// One line of the block: its bytes are `start..end` (`end` at its `'\n'` or the block's
/// end), and it holds `tabs` tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Line {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) tabs: usize,
}

/// The lines of a block and whether a tab anywhere is followed by a byte at or below
/// the space (white space or another control byte) or ends the block.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Scan {
    pub(super) lines: Vec<Line>,
    pub(super) tab_then_blank: bool,
}

/// The scan as it goes: the open line and whether the last byte seen was a tab.
struct Open {
    start: usize,
    tabs: usize,
    after_tab: bool,
}

impl Open {
    fn new() -> Self {
        Open {
            start: 0,
            tabs: 0,
            after_tab: false,
        }
    }

    /// Ends the open line at `end` (a line end's position) and opens the next.
    fn close(&mut self, end: usize, scan: &mut Scan) {
        scan.lines.push(Line {
            start: self.start,
            end,
            tabs: self.tabs,
        });
        self.start = end + 1;
        self.tabs = 0;
    }

    /// The lines ending in the 64 bytes from `at`: `ends` marks their line ends, `tabs`
    /// the tabs (out of line: a chunk holding a line end is one in twenty).
    #[cold]
    #[inline(never)]
    fn lines_ending(&mut self, tabs: u64, ends: u64, at: usize, scan: &mut Scan) {
        let mut rest = ends;
        let mut done = 0u64;
        while rest != 0 {
            let k = rest.trailing_zeros();
            let upto = (1u64 << k) - 1;
            self.tabs += (tabs & upto & !done).count_ones() as usize;
            self.close(at + k as usize, scan);
            done = upto | 1u64 << k;
            rest &= rest - 1;
        }
        self.tabs += (tabs & !done).count_ones() as usize;
    }

    /// Bytes from `at` on, one at a time.
    fn bytes(&mut self, bytes: &[u8], at: usize, scan: &mut Scan) {
        for (k, &b) in bytes.iter().enumerate().skip(at) {
            scan.tab_then_blank |= self.after_tab && b <= b' ';
            self.after_tab = b == b'\t';
            if b == b'\t' {
                self.tabs += 1;
            } else if b == b'\n' {
                self.close(k, scan);
            }
        }
    }

    /// The last line (empty after a final line end) and a final tab.
    fn finish(mut self, len: usize, mut scan: Scan) -> Scan {
        scan.tab_then_blank |= self.after_tab;
        self.close(len, &mut scan);
        scan
    }
}

/// The lines of `bytes`, byte by byte.
pub(super) fn scan_bytewise(bytes: &[u8]) -> Scan {
    let mut scan = Scan::default();
    let mut open = Open::new();
    open.bytes(bytes, 0, &mut scan);
    open.finish(bytes.len(), scan)
}

/// The lines of `bytes`, 64 bytes at a time where the CPU has AVX2.
pub(super) fn scan(bytes: &[u8]) -> Scan {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        return pulp::Simd::vectorize(simd, Vectorised { simd, bytes });
    }
    scan_bytewise(bytes)
}

#[cfg(target_arch = "x86_64")]
struct Vectorised<'a> {
    simd: pulp::x86::V3,
    bytes: &'a [u8],
}

#[cfg(target_arch = "x86_64")]
impl pulp::WithSimd for Vectorised<'_> {
    type Output = Scan;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Scan {
        use std::arch::x86_64::__m256i;
        let Vectorised { simd, bytes } = self;
        let (avx, avx2) = (simd.avx, simd.avx2);
        let splat = |b: u8| -> __m256i { pulp::cast([b; 32]) };
        let (tab, newline, space) = (splat(b'\t'), splat(b'\n'), splat(b' '));
        let zero = splat(0);
        // 32 bytes of a window from `k` (in bounds: the window is 65 bytes long).
        let load = |window: &[u8; 65], k: usize| -> __m256i {
            let mut lanes = [0u8; 32];
            lanes.copy_from_slice(&window[k..k + 32]);
            pulp::cast(lanes)
        };
        // A 32-bit mask of the lanes a compare set (0xff) among 32.
        let bits = |v: __m256i| u64::from(avx2._mm256_movemask_epi8(v) as u32);
        let mut scan = Scan {
            lines: Vec::with_capacity(bytes.len() / 512 + 2),
            tab_then_blank: false,
        };
        let mut open = Open::new();
        // Tabs followed by a blank, gathered lane by lane without a branch.
        let mut found = zero;
        // Tabs of the open line not yet added to it, counted per lane (one at most per
        // lane and chunk, so added in before 255 chunks).
        let (mut pending, mut chunks) = (zero, 0u32);
        let flush = |pending: &mut __m256i, open: &mut Open| {
            let sums: [u64; 4] = pulp::cast(avx2._mm256_sad_epu8(*pending, zero));
            open.tabs += sums.iter().sum::<u64>() as usize;
            *pending = zero;
        };
        let mut at = 0;
        // A chunk's 64 bytes and the byte after (the blank after a last tab).
        while let Some(window) = bytes.get(at..at + 65) {
            let Ok(window) = <&[u8; 65]>::try_from(window) else {
                break;
            };
            let (v0, v1) = (load(window, 0), load(window, 32));
            let (w0, w1) = (load(window, 1), load(window, 33));
            let t0 = avx2._mm256_cmpeq_epi8(v0, tab);
            let t1 = avx2._mm256_cmpeq_epi8(v1, tab);
            // At or below the space: the unsigned minimum with it is the byte itself.
            let l0 = avx2._mm256_cmpeq_epi8(avx2._mm256_min_epu8(w0, space), w0);
            let l1 = avx2._mm256_cmpeq_epi8(avx2._mm256_min_epu8(w1, space), w1);
            found = avx2._mm256_or_si256(
                found,
                avx2._mm256_or_si256(avx2._mm256_and_si256(t0, l0), avx2._mm256_and_si256(t1, l1)),
            );
            let n0 = avx2._mm256_cmpeq_epi8(v0, newline);
            let n1 = avx2._mm256_cmpeq_epi8(v1, newline);
            if avx._mm256_testz_si256(avx2._mm256_or_si256(n0, n1), avx2._mm256_or_si256(n0, n1))
                != 0
            {
                // No line end: a compare's 0xff is -1, so subtracting counts a tab.
                pending = avx2._mm256_sub_epi8(avx2._mm256_sub_epi8(pending, t0), t1);
                chunks += 1;
                if chunks == 127 {
                    flush(&mut pending, &mut open);
                    chunks = 0;
                }
            } else {
                flush(&mut pending, &mut open);
                chunks = 0;
                let tabs = bits(t0) | bits(t1) << 32;
                open.lines_ending(tabs, bits(n0) | bits(n1) << 32, at, &mut scan);
            }
            at += 64;
        }
        flush(&mut pending, &mut open);
        scan.tab_then_blank = avx._mm256_testz_si256(found, found) == 0;
        open.after_tab = at > 0 && bytes.get(at - 1) == Some(&b'\t');
        open.bytes(bytes, at, &mut scan);
        open.finish(bytes.len(), scan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_tabs_and_the_flag_of_a_small_block() {
        let s = scan(b"Number\tInput\t1\nTime\t0.0 \t0.1 \n");
        assert_eq!(s.lines.len(), 3);
        assert_eq!(
            s.lines[0],
            Line {
                start: 0,
                end: 14,
                tabs: 2
            }
        );
        assert_eq!(s.lines[1].tabs, 2);
        assert_eq!(s.lines[2].start, s.lines[2].end);
        assert!(!s.tab_then_blank);
        assert!(scan(b"a\t b").tab_then_blank);
        assert!(scan(b"a\tb\t").tab_then_blank);
        assert!(scan(b"a\t\nb").tab_then_blank);
        // A line longer than the vector scan's lane counters hold between additions.
        let long = format!("X{}\nY\t1", "\t0.5".repeat(20_000));
        let s = scan(long.as_bytes());
        assert_eq!(s, scan_bytewise(long.as_bytes()));
        assert_eq!(s.lines[0].tabs, 20_000);
        assert!(!s.tab_then_blank);
    }

    proptest::proptest! {
        /// The vector scan agrees with the byte-by-byte one on blocks of every length
        /// around the chunk size, with tabs, blanks, line ends and control bytes
        /// anywhere (a tab at a chunk's last byte included).
        #[test]
        fn the_vector_scan_agrees_with_the_bytewise_one(
            mut block in proptest::collection::vec(
                proptest::sample::select(vec![b'\t', b' ', b'0', b'.', b'\n', 1u8, b'\r', 0xc3]),
                0..400,
            ),
            clean in proptest::bool::ANY,
        ) {
            if clean {
                // Every tab followed by a value (a block as the files are written).
                for k in 1..block.len() {
                    if block[k - 1] == b'\t' && block[k] <= b' ' {
                        block[k] = b'5';
                    }
                }
            }
            let want = block.windows(2).any(|w| w[0] == b'\t' && w[1] <= b' ')
                || block.last() == Some(&b'\t');
            let bytewise = scan_bytewise(&block);
            proptest::prop_assert_eq!(bytewise.tab_then_blank, want);
            let ends = block.iter().filter(|&&b| b == b'\n').count();
            proptest::prop_assert_eq!(bytewise.lines.len(), ends + 1);
            proptest::prop_assert_eq!(scan(&block), bytewise);
        }
    }
}
