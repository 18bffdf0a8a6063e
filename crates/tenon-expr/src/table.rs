//! The hash-consing table of the arena: node ids by the nodes' hashes, open addressing
//! with linear probing over one array of `(hash, id)` pairs.
//!
//! Built for the arena's traffic: almost every lookup of a large build is for a new node
//! (a miss, then an insert at the same place), and the table of a 100,000-part assembly
//! is far larger than the caches. Here a miss and its insert touch one cache line (the
//! pair holds the 32 bits of hash compared first, and empty slots end a probe); a table
//! with separate control bytes touched two. Positions come from the hash by multiply and
//! shift, so the capacity need not be a power of two: it is sized to the entries
//! (at most [`LOAD`] full), not rounded up to twice as much.
//!
//! Architecture invariant: an id is in the table once, and only ids of nodes the arena
//! holds; the table never reads the nodes itself (its caller compares them).

use crate::node::ExprId;

/// A slot's content: the hash's 32 bits high, the id low; [`EMPTY`] when free.
type Slot = u64;
const EMPTY: Slot = u64::MAX;

/// Most entries per slot before the table grows (linear probing stays short below it).
const LOAD: f64 = 0.7;

/// Fewest slots a table has once it holds anything.
const MIN_SLOTS: usize = 64;

/// Entries below which a full table grows fourfold rather than by half.
const SMALL_TABLE: usize = 1 << 14;

#[derive(Debug, Clone, Default)]
pub(crate) struct NodeTable {
    slots: Vec<Slot>,
    len: usize,
}

/// Where a lookup ended: the id found, or the free slot where it would go.
pub(crate) enum Probe {
    Found(ExprId),
    Vacant(usize),
}

impl NodeTable {
    /// The home slot of `hash` among `n` slots (the high half of a 64-bit product of
    /// the mixed hash and `n`: uniform for any `n`).
    fn home(hash: u32, n: usize) -> usize {
        let mixed = u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        ((mixed * n as u64) >> 32) as usize
    }

    /// Looks `hash` up; `same(id)` tells whether the node behind `id` is the one sought
    /// (called only for entries with the same 32 bits of hash).
    pub(crate) fn find(&self, hash: u32, mut same: impl FnMut(ExprId) -> bool) -> Probe {
        let n = self.slots.len();
        if n == 0 {
            return Probe::Vacant(usize::MAX);
        }
        let mut k = Self::home(hash, n);
        loop {
            let slot = self.slots[k];
            if slot == EMPTY {
                return Probe::Vacant(k);
            }
            if (slot >> 32) as u32 == hash {
                let id = ExprId(slot as u32);
                if same(id) {
                    return Probe::Found(id);
                }
            }
            k += 1;
            if k == n {
                k = 0;
            }
        }
    }

    /// Inserts `id` (not in the table) at `at`, the vacant slot [`find`](Self::find)
    /// returned for its hash just before; grows the table when it is full enough.
    pub(crate) fn insert(&mut self, at: usize, hash: u32, id: ExprId) {
        let entry = (u64::from(hash) << 32) | u64::from(id.0);
        let room = self.len < Self::capacity(self.slots.len());
        match self.slots.get_mut(at) {
            Some(slot) if room => {
                *slot = entry;
                self.len += 1;
            }
            _ => {
                // Half as much again each time: rebuilds cost a few passes in all. A
                // small table (a CAD file's few thousand nodes) grows fourfold: its
                // memory is nothing, and each rebuild cost as much as the lookups.
                let grown = if self.len < SMALL_TABLE {
                    (self.len + 1) * 4
                } else {
                    (self.len + 1) * 3 / 2
                };
                self.grow_to(grown);
                self.place(entry);
                self.len += 1;
            }
        }
    }

    /// Room for `more` entries beyond those held, without growing.
    pub(crate) fn reserve(&mut self, more: usize) {
        let need = self.len + more;
        if need > Self::capacity(self.slots.len()) {
            self.grow_to(need);
        }
    }

    /// Entries `n` slots hold at most.
    fn capacity(n: usize) -> usize {
        (n as f64 * LOAD) as usize
    }

    /// Rebuilds the table with room for `entries`, from the stored hashes alone.
    fn grow_to(&mut self, entries: usize) {
        let n = ((entries as f64 / LOAD).ceil() as usize + 1).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; n]);
        for entry in old.into_iter().filter(|&e| e != EMPTY) {
            self.place(entry);
        }
    }

    /// Puts `entry` in the first free slot from its home (the table has room).
    fn place(&mut self, entry: Slot) {
        let n = self.slots.len();
        let mut k = Self::home((entry >> 32) as u32, n);
        while self.slots[k] != EMPTY {
            k += 1;
            if k == n {
                k = 0;
            }
        }
        self.slots[k] = entry;
    }
}

/// The home slot of `hash` among `n` slots (for tests of the hashes fed to the table).
#[cfg(test)]
pub(crate) fn home_of(hash: u32, n: usize) -> usize {
    NodeTable::home(hash, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries found after inserts and growths, with colliding hashes told apart by the
    /// caller's comparison, and a vacant answer for what is not there.
    #[test]
    fn finds_what_it_holds_through_growth_and_collisions() {
        let mut t = NodeTable::default();
        // Hash k % 97: many ids share 32 bits of hash.
        let hash = |id: u32| id % 97;
        for id in 0..10_000u32 {
            match t.find(hash(id), |e| e.0 == id) {
                Probe::Found(_) => panic!("{id} found before it was inserted"),
                Probe::Vacant(at) => t.insert(at, hash(id), ExprId(id)),
            }
        }
        for id in 0..10_000u32 {
            assert!(matches!(t.find(hash(id), |e| e.0 == id), Probe::Found(e) if e.0 == id));
        }
        assert!(matches!(
            t.find(hash(10_001), |e| e.0 == 10_001),
            Probe::Vacant(_)
        ));
        assert!(t.len as f64 <= t.slots.len() as f64 * LOAD);
    }

    /// A reserved table takes its entries without rebuilding.
    #[test]
    fn reserved_room_is_used_in_place() {
        let mut t = NodeTable::default();
        t.reserve(1000);
        let slots = t.slots.len();
        for id in 0..1000u32 {
            let h = id.wrapping_mul(2_654_435_761);
            if let Probe::Vacant(at) = t.find(h, |e| e.0 == id) {
                t.insert(at, h, ExprId(id));
            }
        }
        assert_eq!(t.slots.len(), slots);
        assert_eq!(t.len, 1000);
    }
}
