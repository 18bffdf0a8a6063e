//! Fill-reducing orderings found on groups of columns.
//!
//! A piece's tangent columns come six to a part, side by side, and a joint's rows read
//! a part's columns together. AMD on every column of `A^T A` spends its time finding
//! that structure out (faer's took 20 ms of a 10,000-link chain's solve, more than a
//! numeric factorization). Here the caller names the groups (a part's columns; an extra
//! unknown alone), AMD orders the graph of groups (a sixth of the nodes, about a tenth
//! of the entries) and each group is eliminated whole where its node went: block
//! elimination, as AMD does with the supervariables it finds.
//!
//! Measured on the 10,000-link chain's step matrix (60,000 columns): faer's ordering and
//! symbolic analysis 20 ms; grouped, see `docs/performance.md`.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::sparse::linalg::amd;
use faer::sparse::SymbolicSparseColMatRef;

/// A fill-reducing ordering of the symmetric matrix whose lower triangle has the
/// pattern `(col_ptr, row_idx)` (`n` columns), with column `j` in group `group[j]`
/// (groups numbered from 0 and each a run of adjacent columns): `(forward, inverse)`,
/// `forward[k]` the column eliminated `k`-th. `None` when the groups are not runs or
/// AMD fails (the caller then orders every column).
pub(super) fn grouped_amd(
    col_ptr: &[usize],
    row_idx: &[u32],
    group: &[usize],
) -> Option<(Vec<usize>, Vec<usize>)> {
    let n = group.len();
    if n == 0 || col_ptr.len() != n + 1 {
        return None;
    }
    // Each group a run: its columns `start[g]..start[g + 1]`.
    let mut start = vec![0usize];
    for j in 1..n {
        if group[j] != group[j - 1] {
            if group[j] != group[j - 1] + 1 {
                return None;
            }
            start.push(j);
        }
    }
    if group[0] != 0 {
        return None;
    }
    let groups = start.len();
    start.push(n);
    // Edges between groups, each once from the lower group (`mark` keeps a group's
    // neighbours from repeating while its columns are read).
    let mut mark = vec![usize::MAX; groups];
    let mut edges: Vec<(usize, usize)> = Vec::new();
    let mut degree = vec![0usize; groups + 1];
    for g in 0..groups {
        for j in start[g]..start[g + 1] {
            for &i in row_idx.get(col_ptr[j]..col_ptr[j + 1])? {
                let h = *group.get(i as usize)?;
                if h != g && mark[h] != g {
                    mark[h] = g;
                    edges.push((g, h));
                    degree[g + 1] += 1;
                    degree[h + 1] += 1;
                }
            }
        }
    }
    for g in 0..groups {
        degree[g + 1] += degree[g];
    }
    let mut neighbours = vec![0usize; degree[groups]];
    let mut next = degree[..groups].to_vec();
    for &(g, h) in &edges {
        neighbours[next[g]] = h;
        next[g] += 1;
        neighbours[next[h]] = g;
        next[h] += 1;
    }
    for g in 0..groups {
        neighbours[degree[g]..degree[g + 1]].sort_unstable();
    }
    let graph = SymbolicSparseColMatRef::new_checked(groups, groups, &degree, None, &neighbours);
    let mut order = vec![0usize; groups];
    let mut order_inv = vec![0usize; groups];
    let mut buffer =
        MemBuffer::try_new(amd::order_scratch::<usize>(groups, neighbours.len())).ok()?;
    amd::order(
        &mut order,
        &mut order_inv,
        graph,
        amd::Control::default(),
        MemStack::new(&mut buffer),
    )
    .ok()?;
    let mut forward = Vec::with_capacity(n);
    for &g in &order {
        forward.extend(start[g]..start[g + 1]);
    }
    let mut inverse = vec![0usize; n];
    for (k, &j) in forward.iter().enumerate() {
        inverse[j] = k;
    }
    Some((forward, inverse))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A chain of parts with six columns each, joined to the next: a permutation that
    /// keeps each part's columns together, in their order.
    #[test]
    fn a_chains_parts_are_ordered_whole() {
        let parts = 50;
        let n = 6 * parts;
        // Lower triangle: each part's 6 x 6 block and its block with the next part.
        let mut col_ptr = vec![0usize];
        let mut row_idx = Vec::new();
        for j in 0..n {
            let part = j / 6;
            let end = if part + 1 < parts {
                6 * part + 12
            } else {
                6 * part + 6
            };
            row_idx.extend(j as u32..end as u32);
            col_ptr.push(row_idx.len());
        }
        let group: Vec<usize> = (0..n).map(|j| j / 6).collect();
        let (forward, inverse) = grouped_amd(&col_ptr, &row_idx, &group).unwrap();
        let mut seen = forward.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
        for (k, &j) in forward.iter().enumerate() {
            assert_eq!(inverse[j], k);
        }
        for block in forward.chunks(6) {
            let part = block[0] / 6;
            assert_eq!(block, &(6 * part..6 * part + 6).collect::<Vec<_>>()[..]);
        }
        // Groups that are not runs: no ordering.
        let scattered: Vec<usize> = (0..n).map(|j| j % 2).collect();
        assert!(grouped_amd(&col_ptr, &row_idx, &scattered).is_none());
    }
}
