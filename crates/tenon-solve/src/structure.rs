//! Structural analysis of equations against unknowns, before any numerics: a maximum
//! matching (Hopcroft-Karp) and the Dulmage-Mendelsohn decomposition.
//!
//! The bipartite graph has a row per equation and a column per scalar unknown, with an
//! edge where the equation depends on the unknown. From a maximum matching:
//! - the **over-determined** part: rows reachable from an unmatched row by alternating
//!   paths (row, edge to a column, matching back to a row), with the columns on those
//!   paths; more equations than unknowns, so some are redundant or in conflict;
//! - the **under-determined** part: columns reachable from an unmatched column by
//!   alternating paths (column, edge to a row, matching back to a column), with the rows
//!   on those paths; more unknowns than equations, so freedom is left;
//! - the **well-determined** rest, square and perfectly matched, split into the strongly
//!   connected components of the matched dependency graph: blocks that can be solved one
//!   after another (block-triangular order), each depending only on earlier ones.
//!
//! Structural results are necessary, not sufficient: numerical redundancy (a planar
//! four-bar in 3D) shows only in the rank, which the diagnostics compute.

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;

/// Lists of numbers per row, end to end (compressed rows): a large cluster has tens of
/// thousands of rows, and a list of its own per row cost an allocation and regrowths
/// each.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RowLists {
    start: Vec<u32>,
    items: Vec<u32>,
}

impl RowLists {
    /// From `(row, item)` pairs (rows from `rows` on are dropped); each row's items in
    /// the order met. The pairs are gone through twice (counted, then placed).
    pub(crate) fn from_pairs<I>(rows: usize, pairs: I) -> RowLists
    where
        I: Iterator<Item = (usize, u32)> + Clone,
    {
        let mut start = vec![0u32; rows + 1];
        for (r, _) in pairs.clone() {
            if let Some(n) = start.get_mut(r + 1).filter(|_| r < rows) {
                *n += 1;
            }
        }
        for k in 0..rows {
            start[k + 1] += start[k];
        }
        let mut next = start.clone();
        let mut items = vec![0u32; start[rows] as usize];
        for (r, x) in pairs {
            if let Some(at) = next.get_mut(r).filter(|_| r < rows) {
                items[*at as usize] = x;
                *at += 1;
            }
        }
        RowLists { start, items }
    }

    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// Row `r`'s items (none for a row out of range).
    pub(crate) fn row(&self, r: usize) -> &[u32] {
        match (self.start.get(r), self.start.get(r + 1)) {
            (Some(&a), Some(&b)) => &self.items[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Sorts each row and keeps each item once, dropping items from `bound` on.
    fn sort_and_dedup(&mut self, bound: u32) {
        let mut write = 0usize;
        let mut from = 0usize;
        for r in 0..self.rows() {
            let end = self.start[r + 1] as usize;
            let row = &mut self.items[from..end];
            row.sort_unstable();
            let row_start = write;
            for k in from..end {
                let x = self.items[k];
                if x < bound && (write == row_start || self.items[write - 1] != x) {
                    self.items[write] = x;
                    write += 1;
                }
            }
            from = end;
            self.start[r + 1] = write as u32;
        }
        self.items.truncate(write);
    }
}

/// A bipartite incidence: row `r` lists the columns it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incidence {
    columns: usize,
    adjacency: RowLists,
}

impl Incidence {
    /// An incidence of `columns` columns and the given rows (columns out of range are
    /// dropped, repeats kept once).
    pub fn new(columns: usize, adjacency: Vec<Vec<u32>>) -> Self {
        let pairs = adjacency
            .iter()
            .enumerate()
            .flat_map(|(r, row)| row.iter().map(move |&c| (r, c)));
        Incidence::from_pairs(adjacency.len(), columns, pairs)
    }

    /// An incidence of `rows` rows and `columns` columns with an edge per `(row,
    /// column)` pair (out of range ones dropped, repeats kept once).
    pub(crate) fn from_pairs<I>(rows: usize, columns: usize, pairs: I) -> Self
    where
        I: Iterator<Item = (usize, u32)> + Clone,
    {
        let mut adjacency = RowLists::from_pairs(rows, pairs);
        adjacency.sort_and_dedup(u32::try_from(columns).unwrap_or(u32::MAX));
        Incidence { columns, adjacency }
    }

    /// An incidence of `columns` columns whose row `k` is the `k`-th list of `rows`, as
    /// [`Self::from_pairs`] would make it (columns out of range dropped, each kept once,
    /// ascending) but copied list by list: lists already ascending (the compiled
    /// patterns') are neither gone through twice nor sorted.
    pub(crate) fn from_rows<'a, I>(columns: usize, rows: I) -> Self
    where
        I: ExactSizeIterator<Item = &'a [u32]> + Clone,
    {
        let bound = u32::try_from(columns).unwrap_or(u32::MAX);
        let mut start = Vec::with_capacity(rows.len() + 1);
        start.push(0u32);
        // Room for every entry at once (the lists had grown by doubling from nothing).
        let mut items = Vec::with_capacity(rows.clone().map(<[u32]>::len).sum());
        let mut ascending = true;
        for row in rows {
            let row_start = items.len();
            for &c in row.iter().filter(|&&c| c < bound) {
                ascending &= items.len() == row_start || items[items.len() - 1] < c;
                items.push(c);
            }
            start.push(items.len() as u32);
        }
        let mut adjacency = RowLists { start, items };
        // Lists not ascending (not a compiled pattern's) are sorted as pairs' rows are.
        if !ascending {
            adjacency.sort_and_dedup(bound);
        }
        Incidence { columns, adjacency }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.adjacency.rows()
    }

    /// The columns row `r` depends on, ascending.
    fn row(&self, r: usize) -> &[u32] {
        self.adjacency.row(r)
    }

    /// Number of columns.
    pub fn columns(&self) -> usize {
        self.columns
    }
}

/// A maximum matching: `row_mate[r]` is the column matched to row `r`, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matching {
    /// Column of each row.
    pub row_mate: Vec<Option<u32>>,
    /// Row of each column.
    pub column_mate: Vec<Option<u32>>,
}

impl Matching {
    /// Number of matched pairs.
    pub fn size(&self) -> usize {
        self.row_mate.iter().filter(|m| m.is_some()).count()
    }
}

/// Hopcroft-Karp: a maximum matching in `O(E sqrt(V))`, iterative (no recursion on path
/// length).
pub fn maximum_matching(g: &Incidence) -> Matching {
    const FREE: u32 = u32::MAX;
    let (n_rows, n_cols) = (g.rows(), g.columns);
    let mut row_mate = vec![FREE; n_rows];
    let mut col_mate = vec![FREE; n_cols];
    let mut dist = vec![u32::MAX; n_rows];
    let mut queue = Vec::with_capacity(n_rows);
    let mut next_edge = vec![0usize; n_rows];
    let mut stack: Vec<u32> = Vec::new();
    loop {
        // Breadth-first layers from the free rows.
        queue.clear();
        for r in 0..n_rows {
            if row_mate[r] == FREE {
                dist[r] = 0;
                queue.push(r as u32);
            } else {
                dist[r] = u32::MAX;
            }
        }
        let mut found = false;
        let mut head = 0;
        while head < queue.len() {
            let r = queue[head] as usize;
            head += 1;
            for &c in g.row(r) {
                let m = col_mate[c as usize];
                if m == FREE {
                    found = true;
                } else if dist[m as usize] == u32::MAX {
                    dist[m as usize] = dist[r] + 1;
                    queue.push(m);
                }
            }
        }
        if !found {
            break;
        }
        // Depth-first augmenting paths along the layers, with an explicit stack.
        next_edge.iter_mut().for_each(|e| *e = 0);
        for start in 0..n_rows {
            if row_mate[start] != FREE {
                continue;
            }
            stack.clear();
            stack.push(start as u32);
            while let Some(&r) = stack.last() {
                let r = r as usize;
                let mut advanced = false;
                let row = g.row(r);
                while next_edge[r] < row.len() {
                    let c = row[next_edge[r]];
                    next_edge[r] += 1;
                    let m = col_mate[c as usize];
                    if m == FREE {
                        // Augment along the stack: each row takes the column that leads
                        // on from it.
                        let mut col = c;
                        while let Some(row) = stack.pop() {
                            let previous = row_mate[row as usize];
                            row_mate[row as usize] = col;
                            col_mate[col as usize] = row;
                            col = previous;
                        }
                        advanced = true;
                        break;
                    } else if dist[m as usize] == dist[r] + 1 {
                        stack.push(m);
                        advanced = true;
                        break;
                    }
                }
                if !advanced {
                    dist[r] = u32::MAX; // dead end for this phase
                    stack.pop();
                }
            }
        }
    }
    let opt = |x: u32| (x != FREE).then_some(x);
    Matching {
        row_mate: row_mate.into_iter().map(opt).collect(),
        column_mate: col_mate.into_iter().map(opt).collect(),
    }
}

/// A set of rows and columns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subset {
    /// Rows (equations), ascending.
    pub rows: Vec<u32>,
    /// Columns (unknowns), ascending.
    pub columns: Vec<u32>,
}

/// The Dulmage-Mendelsohn decomposition (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decomposition {
    /// More equations than unknowns.
    pub over: Subset,
    /// More unknowns than equations.
    pub under: Subset,
    /// Square blocks of the well-determined part, in an order in which each depends only
    /// on blocks before it.
    pub blocks: Vec<Subset>,
    /// The matching it was built from.
    pub matching: Matching,
}

/// Decomposes `g` (structure only).
pub fn dulmage_mendelsohn(g: &Incidence) -> Decomposition {
    let m = maximum_matching(g);
    let (n_rows, n_cols) = (g.rows(), g.columns);
    // Over-determined: alternate from unmatched rows.
    let mut row_over = vec![false; n_rows];
    let mut col_over = vec![false; n_cols];
    let mut stack: Vec<u32> = (0..n_rows as u32)
        .filter(|&r| m.row_mate[r as usize].is_none())
        .collect();
    for &r in &stack {
        row_over[r as usize] = true;
    }
    while let Some(r) = stack.pop() {
        for &c in g.row(r as usize) {
            if !col_over[c as usize] {
                col_over[c as usize] = true;
                if let Some(next) = m.column_mate[c as usize] {
                    if !row_over[next as usize] {
                        row_over[next as usize] = true;
                        stack.push(next);
                    }
                }
            }
        }
    }
    // Everything over-determined (a loop of redundant joints, such as a planar
    // four-bar's): no column is reached from an unmatched one, as that would make an
    // augmenting path, so the rest of the decomposition is empty.
    if row_over.iter().all(|&f| f) && col_over.iter().all(|&f| f) {
        return Decomposition {
            over: Subset {
                rows: (0..n_rows as u32).collect(),
                columns: (0..n_cols as u32).collect(),
            },
            under: Subset::default(),
            blocks: Vec::new(),
            matching: m,
        };
    }
    // Columns' rows (transpose of the adjacency).
    let col_rows = RowLists::from_pairs(
        n_cols,
        (0..n_rows).flat_map(|r| g.row(r).iter().map(move |&c| (c as usize, r as u32))),
    );
    // Under-determined: alternate from unmatched columns.
    let mut row_under = vec![false; n_rows];
    let mut col_under = vec![false; n_cols];
    let mut stack: Vec<u32> = (0..n_cols as u32)
        .filter(|&c| m.column_mate[c as usize].is_none())
        .collect();
    for &c in &stack {
        col_under[c as usize] = true;
    }
    while let Some(c) = stack.pop() {
        for &r in col_rows.row(c as usize) {
            if !row_under[r as usize] {
                row_under[r as usize] = true;
                if let Some(next) = m.row_mate[r as usize] {
                    if !col_under[next as usize] {
                        col_under[next as usize] = true;
                        stack.push(next);
                    }
                }
            }
        }
    }
    let collect = |flags: &[bool]| -> Vec<u32> {
        flags
            .iter()
            .enumerate()
            .filter(|(_, &f)| f)
            .map(|(k, _)| k as u32)
            .collect()
    };
    let over = Subset {
        rows: collect(&row_over),
        columns: collect(&col_over),
    };
    let under = Subset {
        rows: collect(&row_under),
        columns: collect(&col_under),
    };
    // Well-determined: matched rows in neither part. Node = row; edge r -> r' when r
    // depends on the column matched to r' (r' must be solved before r).
    let square: Vec<u32> = (0..n_rows as u32)
        .filter(|&r| {
            !row_over[r as usize] && !row_under[r as usize] && m.row_mate[r as usize].is_some()
        })
        .collect();
    let mut index = vec![u32::MAX; n_rows];
    let mut graph: DiGraph<u32, ()> = DiGraph::with_capacity(square.len(), 0);
    for &r in &square {
        index[r as usize] = graph.add_node(r).index() as u32;
    }
    for &r in &square {
        for &c in g.row(r as usize) {
            if let Some(other) = m.column_mate[c as usize] {
                if other != r && index[other as usize] != u32::MAX {
                    graph.add_edge(
                        petgraph::graph::NodeIndex::new(index[r as usize] as usize),
                        petgraph::graph::NodeIndex::new(index[other as usize] as usize),
                        (),
                    );
                }
            }
        }
    }
    // Tarjan yields components in reverse topological order of the edges r -> r', that
    // is, dependencies first: the solve order.
    let blocks = tarjan_scc(&graph)
        .into_iter()
        .map(|component| {
            let mut rows: Vec<u32> = component.iter().map(|n| graph[*n]).collect();
            rows.sort_unstable();
            let mut columns: Vec<u32> = rows
                .iter()
                .filter_map(|&r| m.row_mate[r as usize])
                .collect();
            columns.sort_unstable();
            Subset { rows, columns }
        })
        .collect();
    Decomposition {
        over,
        under,
        blocks,
        matching: m,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(cols: usize, rows: &[&[u32]]) -> Incidence {
        Incidence::new(cols, rows.iter().map(|r| r.to_vec()).collect())
    }

    /// Pairs land in their rows in the order met; out-of-range rows are dropped; an
    /// incidence sorts its rows, keeps each column once and drops columns out of range.
    #[test]
    fn row_lists_from_pairs_and_an_incidence_from_them() {
        let pairs = [(2, 5), (0, 3), (2, 1), (7, 9), (0, 3), (2, 1), (0, 4)];
        let lists = RowLists::from_pairs(3, pairs.iter().copied());
        assert_eq!(lists.rows(), 3);
        assert_eq!(lists.row(0), &[3, 3, 4]);
        assert_eq!(lists.row(1), &[] as &[u32]);
        assert_eq!(lists.row(2), &[5, 1, 1]);
        assert_eq!(lists.row(3), &[] as &[u32]);
        let g = Incidence::from_pairs(3, 5, pairs.iter().copied());
        assert_eq!(g.rows(), 3);
        assert_eq!(g.row(0), &[3, 4]);
        assert_eq!(g.row(1), &[] as &[u32]);
        assert_eq!(g.row(2), &[1]);
        assert_eq!(g, inc(5, &[&[4, 3, 3], &[], &[1, 5, 1]]));
        // Copied row by row: the same incidence, whether a row is ascending or not.
        let rows: [&[u32]; 3] = [&[3, 3, 4], &[], &[5, 1, 1]];
        assert_eq!(Incidence::from_rows(5, rows.iter().copied()), g);
        let ascending: [&[u32]; 3] = [&[0, 2, 7], &[1], &[]];
        let copied = Incidence::from_rows(5, ascending.iter().copied());
        assert_eq!(copied, inc(5, &[&[0, 2, 7], &[1], &[]]));
        assert_eq!(copied.row(0), &[0, 2]);
    }

    proptest::proptest! {
        /// The three parts partition the rows and the columns, and the under-determined
        /// part is what an alternating search from the unmatched columns reaches (done
        /// here on its own): also where everything is over-determined and the search is
        /// skipped (an unmatched column reached from an unmatched row would make an
        /// augmenting path).
        #[test]
        fn the_parts_partition_and_the_under_part_is_the_search_from_unmatched_columns(
            rows in proptest::collection::vec(proptest::collection::vec(0u32..8, 0..4), 1..14),
            cols in 1usize..8,
        ) {
            let refs: Vec<&[u32]> = rows.iter().map(Vec::as_slice).collect();
            let g = inc(cols, &refs);
            let d = dulmage_mendelsohn(&g);
            let (n_rows, n_cols) = (g.rows(), g.columns());
            // Rows and columns each in exactly one part.
            let mut row_parts = vec![0; n_rows];
            let mut col_parts = vec![0; n_cols];
            let parts = std::iter::once(&d.over).chain(std::iter::once(&d.under)).chain(&d.blocks);
            for part in parts {
                part.rows.iter().for_each(|&r| row_parts[r as usize] += 1);
                part.columns.iter().for_each(|&c| col_parts[c as usize] += 1);
            }
            proptest::prop_assert!(row_parts.iter().all(|&n| n == 1), "{row_parts:?}");
            proptest::prop_assert!(col_parts.iter().all(|&n| n == 1), "{col_parts:?}");
            // The under-determined part by its own search.
            let (mut row_under, mut col_under) = (vec![false; n_rows], vec![false; n_cols]);
            let mut stack: Vec<u32> = (0..n_cols as u32)
                .filter(|&c| d.matching.column_mate[c as usize].is_none())
                .collect();
            stack.iter().for_each(|&c| col_under[c as usize] = true);
            while let Some(c) = stack.pop() {
                for r in (0..n_rows).filter(|&r| g.row(r).contains(&c)) {
                    if !row_under[r] {
                        row_under[r] = true;
                        if let Some(next) = d.matching.row_mate[r] {
                            if !col_under[next as usize] {
                                col_under[next as usize] = true;
                                stack.push(next);
                            }
                        }
                    }
                }
            }
            let listed = |flags: &[bool]| -> Vec<u32> {
                (0..flags.len() as u32).filter(|&k| flags[k as usize]).collect()
            };
            proptest::prop_assert_eq!(&d.under.rows, &listed(&row_under));
            proptest::prop_assert_eq!(&d.under.columns, &listed(&col_under));
        }
    }

    /// A planar four-bar's rows in 3D, structurally: more equations than unknowns in
    /// one loop, every row and column over-determined, nothing else.
    #[test]
    fn a_loop_with_more_equations_than_unknowns_is_over_determined_whole() {
        let d = dulmage_mendelsohn(&inc(3, &[&[0, 1], &[1, 2], &[2, 0], &[0, 2]]));
        assert_eq!(d.over.rows, vec![0, 1, 2, 3]);
        assert_eq!(d.over.columns, vec![0, 1, 2]);
        assert!(d.under.rows.is_empty() && d.under.columns.is_empty() && d.blocks.is_empty());
    }

    #[test]
    fn a_lower_triangular_system_splits_into_ordered_singletons() {
        // x0 = a; x1 = f(x0); x2 = g(x0, x1).
        let d = dulmage_mendelsohn(&inc(3, &[&[0], &[0, 1], &[0, 1, 2]]));
        assert!(d.over.rows.is_empty() && d.under.columns.is_empty());
        let order: Vec<Vec<u32>> = d.blocks.iter().map(|b| b.rows.clone()).collect();
        assert_eq!(order, vec![vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn a_coupled_pair_is_one_block_after_what_it_depends_on() {
        // r0 fixes x0; r1, r2 couple x1 and x2 and use x0.
        let d = dulmage_mendelsohn(&inc(3, &[&[0], &[0, 1, 2], &[1, 2]]));
        let order: Vec<Vec<u32>> = d.blocks.iter().map(|b| b.rows.clone()).collect();
        assert_eq!(order, vec![vec![0], vec![1, 2]]);
    }

    #[test]
    fn a_repeated_equation_is_over_determined_and_a_free_unknown_under() {
        // r0 and r1 both constrain only x0 (one too many); x1 appears in r2 with x2 (one
        // equation, two unknowns).
        let d = dulmage_mendelsohn(&inc(3, &[&[0], &[0], &[1, 2]]));
        assert_eq!(
            d.over,
            Subset {
                rows: vec![0, 1],
                columns: vec![0]
            }
        );
        assert_eq!(
            d.under,
            Subset {
                rows: vec![2],
                columns: vec![1, 2]
            }
        );
        assert!(d.blocks.is_empty());
        assert_eq!(d.matching.size(), 2);
    }
}
