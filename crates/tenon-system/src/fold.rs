//! How a cluster's compiled Jacobian entries land in its tangent Jacobian, planned once
//! from the tape's pattern.
//!
//! The tape differentiates with respect to the state (positions, quaternions, extra
//! unknowns); the solvers want the tangent Jacobian `J_T = [J_p, J_q G(q)]`. Each
//! position or extra entry is copied to its tangent column; the (up to four) quaternion
//! entries a row has for one part fold into the part's three rotation columns through
//! `G(q)`. Which entry goes where depends on the pattern alone, so it is worked out once
//! per cluster ([`FoldPlan::new`]) instead of at every evaluation: a kinematic frame or
//! a dynamic step folds the whole Jacobian at least once, and deciding per entry (which
//! part, which component, whether a run of quaternion entries ends) cost more than the
//! arithmetic.
//!
//! Architecture invariant: folding by the plan emits the same entries, in the same
//! order, with the same sums in the same order as folding entry by entry did (a test
//! checks the two against each other).

use tenon_expr::JacobianPattern;

/// One step of a row's fold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum FoldOp {
    /// The row's entry `src` (counted from its first) to tangent column `col`.
    Copy { src: u32, col: u32 },
    /// The row's entries `src..src + n`, quaternion components `ks[..n]` of part
    /// `part`, folded into its three rotation columns.
    Rotation {
        part: u32,
        src: u32,
        ks: [u8; 4],
        n: u8,
    },
}

/// The fold of every row of a pattern.
#[derive(Debug, Clone, Default)]
pub(crate) struct FoldPlan {
    /// Row `r`'s steps are `ops[row_ops[r]..row_ops[r + 1]]`.
    row_ops: Vec<u32>,
    ops: Vec<FoldOp>,
}

impl FoldPlan {
    /// The plan of `pattern` over `parts` free parts (7 state columns each, first) and
    /// extra unknowns after them.
    pub(crate) fn new(pattern: &JacobianPattern, parts: usize) -> FoldPlan {
        let n7 = 7 * parts;
        let mut row_ops = Vec::with_capacity(pattern.rows() + 1);
        let mut ops = Vec::with_capacity(pattern.nnz());
        row_ops.push(0);
        for r in 0..pattern.rows() {
            let mut run: Option<FoldOp> = None;
            for (offset, &col) in pattern.row(r).iter().enumerate() {
                let (col, src) = (col as usize, offset as u32);
                let (part, k) = (col / 7, col % 7);
                if col < n7 && k >= 3 {
                    let part = part as u32;
                    let k = (k - 3) as u8;
                    match &mut run {
                        Some(FoldOp::Rotation { part: p, ks, n, .. })
                            if *p == part && (*n as usize) < ks.len() =>
                        {
                            ks[*n as usize] = k;
                            *n += 1;
                        }
                        _ => {
                            ops.extend(run.take());
                            run = Some(FoldOp::Rotation {
                                part,
                                src,
                                ks: [k, 0, 0, 0],
                                n: 1,
                            });
                        }
                    }
                    continue;
                }
                ops.extend(run.take());
                let tangent = if col >= n7 {
                    6 * parts + col - n7
                } else {
                    6 * part + k
                };
                ops.push(FoldOp::Copy {
                    src,
                    col: tangent as u32,
                });
            }
            ops.extend(run.take());
            row_ops.push(ops.len() as u32);
        }
        FoldPlan { row_ops, ops }
    }

    /// Row `r`'s steps (none for a row out of range).
    pub(crate) fn row(&self, r: usize) -> &[FoldOp] {
        match (self.row_ops.get(r), self.row_ops.get(r + 1)) {
            (Some(&a), Some(&b)) => &self.ops[a as usize..b as usize],
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cluster::Scratch;

    /// The plan folds every fixture's Jacobian into the same entries, in the same order
    /// and to the same bits, as deciding entry by entry, at the file's pose and at a
    /// pose turned away from it (quaternions far from identity).
    #[test]
    fn folding_by_plan_equals_folding_entry_by_entry() {
        let mut checked = 0;
        for fixture in crate::test_fixtures::fixture_systems(crate::test_fixtures::EVERY_KIND) {
            let (compiled, params) = (&fixture.compiled, &fixture.params);
            for state in &fixture.poses {
                let mut scratch = Scratch::new();
                for cluster in compiled.clusters() {
                    let local = cluster.gather(state);
                    let mut out = cluster.output();
                    cluster
                        .evaluate(&mut scratch, &local, params, &mut out)
                        .unwrap();
                    let rows: Vec<usize> = (0..cluster.equations().len()).rev().collect();
                    let planned = cluster.tangent_jacobian(&local, &out, &rows);
                    let reference = cluster.tangent_jacobian_entry_by_entry(&local, &out, &rows);
                    assert_eq!(planned.entries.len(), reference.len());
                    for (a, b) in planned.entries.iter().zip(&reference) {
                        assert_eq!((a.0, a.1, a.2.to_bits()), (b.0, b.1, b.2.to_bits()));
                    }
                    checked += reference.len();
                }
            }
        }
        assert!(checked > 500, "{checked} entries checked");
    }
}
