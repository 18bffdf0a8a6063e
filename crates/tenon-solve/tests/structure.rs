//! Hopcroft-Karp against a simple augmenting-path matching, and the invariants of the
//! Dulmage-Mendelsohn decomposition, on random bipartite graphs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use tenon_solve::{dulmage_mendelsohn, maximum_matching, Incidence};

/// Kuhn's algorithm (one augmenting path per row, recursion on tiny graphs).
fn kuhn(rows: &[Vec<u32>], cols: usize) -> usize {
    fn augment(r: usize, rows: &[Vec<u32>], seen: &mut [bool], mate: &mut [Option<usize>]) -> bool {
        for &c in &rows[r] {
            let c = c as usize;
            if !seen[c] {
                seen[c] = true;
                if mate[c].is_none_or(|other| augment(other, rows, seen, mate)) {
                    mate[c] = Some(r);
                    return true;
                }
            }
        }
        false
    }
    let mut mate = vec![None; cols];
    (0..rows.len())
        .filter(|&r| augment(r, rows, &mut vec![false; cols], &mut mate))
        .count()
}

fn graph() -> impl Strategy<Value = (usize, Vec<Vec<u32>>)> {
    (1usize..9).prop_flat_map(|cols| {
        (
            Just(cols),
            prop::collection::vec(prop::collection::vec(0u32..cols as u32, 0..4), 0..9),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn hopcroft_karp_finds_a_maximum_matching((cols, rows) in graph()) {
        let g = Incidence::new(cols, rows.clone());
        let m = maximum_matching(&g);
        let mut clean: Vec<Vec<u32>> = rows.clone();
        for r in &mut clean { r.sort_unstable(); r.dedup(); }
        prop_assert_eq!(m.size(), kuhn(&clean, cols));
        // The matching is consistent and uses edges only.
        for (r, c) in m.row_mate.iter().enumerate() {
            if let Some(c) = c {
                prop_assert_eq!(m.column_mate[*c as usize], Some(r as u32));
                prop_assert!(clean[r].contains(c));
            }
        }
    }

    #[test]
    fn the_decomposition_partitions_and_orders((cols, rows) in graph()) {
        let g = Incidence::new(cols, rows.clone());
        let d = dulmage_mendelsohn(&g);
        let mut clean: Vec<Vec<u32>> = rows.clone();
        for r in &mut clean { r.sort_unstable(); r.dedup(); }
        // Every row and column is in exactly one of over, under, a block (or, for a
        // column no row uses, in under).
        let mut row_seen = vec![0; rows.len()];
        let mut col_seen = vec![0; cols];
        for part in [&d.over, &d.under].into_iter().chain(d.blocks.iter()) {
            for &r in &part.rows { row_seen[r as usize] += 1; }
            for &c in &part.columns { col_seen[c as usize] += 1; }
        }
        prop_assert!(row_seen.iter().all(|&n| n == 1), "rows {:?}", row_seen);
        prop_assert!(col_seen.iter().all(|&n| n == 1), "cols {:?}", col_seen);
        prop_assert!(d.over.rows.len() >= d.over.columns.len());
        prop_assert!(d.under.columns.len() >= d.under.rows.len());
        // Blocks are square and depend only on earlier blocks (or on over/under columns).
        let mut block_of = vec![usize::MAX; cols];
        for (k, b) in d.blocks.iter().enumerate() {
            prop_assert_eq!(b.rows.len(), b.columns.len());
            for &c in &b.columns { block_of[c as usize] = k; }
        }
        for (k, b) in d.blocks.iter().enumerate() {
            for &r in &b.rows {
                for &c in &clean[r as usize] {
                    let kb = block_of[c as usize];
                    prop_assert!(kb == usize::MAX || kb <= k, "row {} of block {} uses block {}", r, k, kb);
                }
            }
        }
    }
}
