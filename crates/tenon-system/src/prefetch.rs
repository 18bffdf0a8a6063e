//! Asking the processor for memory the build is about to read.
//!
//! The build reads the assembly part by part, then joint by joint, and each time the
//! parts' markers: a part's size is measured from its markers, a joint's frames are two
//! of them. At 10,000 parts those lists were out of the caches each time (the reading of
//! the file, then the parts, had gone through megabytes since), and the build waited for
//! main memory at each. Each loop now asks for the markers of the next part, or of the
//! next joint's two parts, one turn ahead (a prefetch, which does not wait); one turn
//! is some microseconds, far more than the memory takes. Asking two and three turns
//! ahead for the parts' and joints' own records as well gained nothing more (their
//! lists are read in order, which the processor foresees by itself).
//!
//! Only a hint: where the processor has no such instruction nothing is asked, and
//! nothing else changes either way.

/// Bytes of one cache line.
const LINE: usize = 64;

/// Lines asked for at most per list (a chain's part has two markers: ten lines).
const MAX_LINES: usize = 24;

/// Assemblies of at most this many parts are not prefetched: their markers stay in the
/// caches from the reading of the file to the build, and the hints would only cost.
const PREFETCH_ABOVE_PARTS: usize = 256;

/// The prefetch instruction, where the processor has it.
#[derive(Clone, Copy)]
pub(crate) struct Prefetch {
    #[cfg(target_arch = "x86_64")]
    sse: Option<pulp::core_arch::x86::Sse>,
}

impl Prefetch {
    /// Finds the instruction.
    pub(crate) fn new() -> Self {
        Prefetch {
            #[cfg(target_arch = "x86_64")]
            sse: pulp::core_arch::x86::Sse::try_new(),
        }
    }

    /// For the build of an assembly of `parts` parts: none for a small one.
    pub(crate) fn for_parts(parts: usize) -> Option<Self> {
        (parts > PREFETCH_ABOVE_PARTS).then(Self::new)
    }

    /// Asks for the memory of `items` (the lines it touches, up to a limit).
    pub(crate) fn slice<T>(self, items: &[T]) {
        let bytes = std::mem::size_of_val(items);
        if bytes == 0 {
            return;
        }
        let start = items.as_ptr().cast::<u8>();
        // From the start of the line the list starts in to the line of its last byte.
        let skew = start as usize % LINE;
        let lines = (skew + bytes).div_ceil(LINE).min(MAX_LINES);
        let first = start.wrapping_sub(skew);
        for k in 0..lines {
            self.line(first.wrapping_add(k * LINE));
        }
    }

    #[inline(always)]
    fn line(self, at: *const u8) {
        #[cfg(target_arch = "x86_64")]
        if let Some(sse) = self.sse {
            sse._mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(at.cast::<i8>());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Empty lists, lists of nothing, short and long lists at every skew from a line:
    /// a hint on any of them changes nothing.
    #[test]
    fn hints_change_nothing() {
        let prefetch = Prefetch::new();
        prefetch.slice::<u64>(&[]);
        prefetch.slice(&[(); 100]);
        let long: Vec<u8> = (0..=255).cycle().take(10 * MAX_LINES * LINE).collect();
        for skew in 0..LINE {
            prefetch.slice(&long[skew..skew + 1]);
            prefetch.slice(&long[skew..]);
        }
        assert!(long.iter().enumerate().all(|(k, &b)| b == (k % 256) as u8));
    }
}
