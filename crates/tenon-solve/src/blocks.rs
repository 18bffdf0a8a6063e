//! The order in which a piece's equations are solved: its Dulmage-Mendelsohn
//! decomposition ([`crate::structure`]) read as stages.
//!
//! With rows the piece's equations and columns its tangent unknowns, the decomposition
//! is block-triangular: the over-determined part's rows use only its own columns; each
//! square block's rows use only its own columns, the over-determined part's and earlier
//! blocks'; the under-determined part's rows may use anything. So the piece is solved
//! in stages, each over its own columns with the earlier stages' columns held:
//! 1. the over-determined part (redundant or conflicting joints live here),
//! 2. the square blocks in dependency order, consecutive blocks merged until a stage
//!    has at least `min_columns` columns (merging consecutive blocks keeps the order
//!    valid; each stage has its own tape and factorization, so very small ones cost
//!    more in overhead than they save),
//! 3. the under-determined part (where freedom is left; least change applies there).
//!
//! **Invariant:** a stage's rows read no column of a later stage.

use crate::structure::{dulmage_mendelsohn, Incidence, RowLists};

/// Default of [`crate::SolveOptions::stage_columns`]: square blocks are merged until a
/// stage has at least this many tangent columns (two parts).
pub const MIN_STAGE_COLUMNS: usize = 12;

/// Clusters of at most this many tangent columns solve their stages on rows of the
/// cluster's own tape; larger ones compile a tape per stage. Compiling a stage's tape
/// costs about as much as a hundred evaluations of a small cluster's whole tape, and a
/// stage takes a few.
pub const STAGE_TAPE_COLUMNS: usize = 48;

/// One stage: local equation rows solved over local tangent columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stage {
    pub(crate) rows: Vec<usize>,
    pub(crate) cols: Vec<usize>,
}

/// The stages of a piece with equation `rows` and tangent `cols` (local indices), where
/// `row_cols.row(r)` lists the local columns row `r` depends on (indexed by row, so a
/// piece's rows are read where they are, not copied out). One stage means the
/// piece is solved whole.
pub(crate) fn stages(
    rows: &[usize],
    cols: &[usize],
    row_cols: &RowLists,
    min_columns: usize,
) -> Vec<Stage> {
    let Some(&max_col) = cols.iter().max() else {
        return vec![Stage {
            rows: rows.to_vec(),
            cols: Vec::new(),
        }];
    };
    // A piece whose columns are the first ones in order (a cluster of one piece, the
    // usual case) reads its rows' lists as they are.
    let incidence = if cols.iter().enumerate().all(|(k, &c)| c == k) {
        Incidence::from_rows(cols.len(), rows.iter().map(|&r| row_cols.row(r)))
    } else {
        let mut index_of = vec![u32::MAX; max_col + 1];
        for (k, &c) in cols.iter().enumerate() {
            index_of[c] = k as u32;
        }
        let index_of = &index_of;
        let pairs = rows.iter().enumerate().flat_map(|(k, &r)| {
            row_cols.row(r).iter().filter_map(move |&c| {
                index_of
                    .get(c as usize)
                    .copied()
                    .filter(|&i| i != u32::MAX)
                    .map(|i| (k, i))
            })
        });
        Incidence::from_pairs(rows.len(), cols.len(), pairs)
    };
    let dm = dulmage_mendelsohn(&incidence);
    let to_stage = |r: &[u32], c: &[u32]| Stage {
        rows: r.iter().map(|&k| rows[k as usize]).collect(),
        cols: c.iter().map(|&k| cols[k as usize]).collect(),
    };
    let mut out = Vec::new();
    if !dm.over.rows.is_empty() || !dm.over.columns.is_empty() {
        out.push(to_stage(&dm.over.rows, &dm.over.columns));
    }
    let mut pending = Stage {
        rows: Vec::new(),
        cols: Vec::new(),
    };
    for block in &dm.blocks {
        let s = to_stage(&block.rows, &block.columns);
        pending.rows.extend(s.rows);
        pending.cols.extend(s.cols);
        if pending.cols.len() >= min_columns.max(1) {
            out.push(std::mem::replace(
                &mut pending,
                Stage {
                    rows: Vec::new(),
                    cols: Vec::new(),
                },
            ));
        }
    }
    if !pending.cols.is_empty() {
        // A short tail of square blocks joins the under-determined part when there is
        // one (its rows may read them anyway), else it is a stage of its own.
        if dm.under.columns.is_empty() {
            out.push(pending);
        } else {
            let mut under = to_stage(&dm.under.rows, &dm.under.columns);
            under.rows.extend(pending.rows);
            under.cols.extend(pending.cols);
            out.push(under);
        }
    } else if !dm.under.rows.is_empty() || !dm.under.columns.is_empty() {
        out.push(to_stage(&dm.under.rows, &dm.under.columns));
    }
    // Rows no column reaches (equations with no unknown here) go with the last stage.
    let placed: usize = out.iter().map(|s| s.rows.len()).sum();
    if placed < rows.len() {
        let mut seen = vec![false; rows.len()];
        let position: rustc_hash::FxHashMap<usize, usize> =
            rows.iter().enumerate().map(|(k, &r)| (r, k)).collect();
        for s in &out {
            for r in &s.rows {
                if let Some(&k) = position.get(r) {
                    seen[k] = true;
                }
            }
        }
        let missing: Vec<usize> = (0..rows.len())
            .filter(|&k| !seen[k])
            .map(|k| rows[k])
            .collect();
        match out.last_mut() {
            Some(last) => last.rows.extend(missing),
            None => out.push(Stage {
                rows: missing,
                cols: Vec::new(),
            }),
        }
    }
    for s in &mut out {
        s.rows.sort_unstable();
        s.cols.sort_unstable();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Row lists from one list per row.
    fn lists(rows: &[Vec<usize>]) -> RowLists {
        let pairs = rows
            .iter()
            .enumerate()
            .flat_map(|(r, cols)| cols.iter().map(move |&c| (r, c as u32)));
        RowLists::from_pairs(rows.len(), pairs)
    }

    /// A chain of square 1x1 blocks: x0 = 1, x1 = x0, ... merged into stages of
    /// MIN_STAGE_COLUMNS, in order, each reading only earlier columns.
    #[test]
    fn square_blocks_merge_in_dependency_order() {
        let n = 30;
        let rows: Vec<usize> = (0..n).collect();
        let cols: Vec<usize> = (0..n).collect();
        let row_cols: Vec<Vec<usize>> = (0..n)
            .map(|k| if k == 0 { vec![0] } else { vec![k - 1, k] })
            .collect();
        let s = stages(&rows, &cols, &lists(&row_cols), MIN_STAGE_COLUMNS);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].cols, (0..12).collect::<Vec<_>>());
        assert_eq!(s[1].cols, (12..24).collect::<Vec<_>>());
        assert_eq!(s[2].cols, (24..30).collect::<Vec<_>>());
        let mut earlier = std::collections::HashSet::new();
        for stage in &s {
            earlier.extend(stage.cols.iter().copied());
            for &r in &stage.rows {
                assert!(row_cols[r].iter().all(|c| earlier.contains(c)));
            }
        }
    }

    /// Over-determined first, under-determined last.
    #[test]
    fn over_first_under_last() {
        // Rows 0..3 on columns 0..2 (3 equations, 2 unknowns); row 3 on columns 1, 2, 3
        // (one equation, two new unknowns).
        let rows = vec![0, 1, 2, 3];
        let cols = vec![0, 1, 2, 3];
        let row_cols = vec![vec![0, 1], vec![0, 1], vec![1], vec![1, 2, 3]];
        let s = stages(&rows, &cols, &lists(&row_cols), MIN_STAGE_COLUMNS);
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0],
            Stage {
                rows: vec![0, 1, 2],
                cols: vec![0, 1]
            }
        );
        assert_eq!(
            s[1],
            Stage {
                rows: vec![3],
                cols: vec![2, 3]
            }
        );
    }
}
