//! Square Jacobians solved block by block: the Dulmage-Mendelsohn blocks of a
//! structurally nonsingular square pattern, in dependency order, each factored densely.
//!
//! A kinematic run with every freedom driven solves `J x = b` with the same square `J`
//! twice per frame (velocities and accelerations). A chain's `J` permutes to block lower
//! triangular form with one small block per link (a revolute's five rows and a motion's
//! one over the link's six columns): forward substitution over those blocks costs a
//! few hundred operations per link, where a general sparse LU of the whole matrix paid
//! thousands per column for its pivoting and fill bookkeeping, and the regularised normal
//! equations squared the chain's condition.
//!
//! Architecture invariant: the plan ([`BlockPlan`]) is a function of the pattern alone
//! and is made once; each frame's numbers are factored into [`BlockFactors`], whose
//! solves are exact to rounding or refused (a pivot that vanishes relative to its block
//! is reported as `None`, and the caller falls back to a general method).

use tenon_system::TangentJacobian;

use crate::structure::{dulmage_mendelsohn, Incidence};

/// A pivot smaller than this, relative to the largest entry of its block, makes the
/// block singular (the caller then solves another way).
const BLOCK_PIVOT: f64 = 1e-13;

/// The blocks of a square pattern, in the order they are solved.
#[derive(Debug, Clone)]
pub(crate) struct BlockPlan {
    n: usize,
    /// Per block, its rows and columns (equally many), ascending.
    blocks: Vec<(Vec<u32>, Vec<u32>)>,
    /// Per row and per column: its block and its position in the block.
    row_at: Vec<(u32, u32)>,
    col_at: Vec<(u32, u32)>,
    /// Where the entries of the Jacobian the plan was made from go, in their order (a
    /// run's Jacobians list their entries in the same order every frame).
    scatter: Scatter,
}

/// The destination of each entry of one entry order: its `(row, column)` pattern, per
/// entry its index in the blocks' dense storage or ([`COUPLED`] set) its place among
/// the coupling entries, and the coupling entries `(row block, row in block, column)`
/// grouped by row block.
#[derive(Debug, Clone, Default)]
struct Scatter {
    pattern: Vec<(u32, u32)>,
    target: Vec<u32>,
    coupling: Vec<(u32, u32, u32)>,
    coupling_start: Vec<u32>,
    offset: Vec<usize>,
}

/// Marks a [`Scatter`] target as a coupling entry.
const COUPLED: u32 = 1 << 31;

impl BlockPlan {
    /// The plan of `jac`'s pattern, if it is square and structurally nonsingular with no
    /// block of more than `max_block` columns.
    pub(crate) fn new(jac: &TangentJacobian, max_block: usize) -> Option<BlockPlan> {
        let n = jac.columns;
        if jac.rows != n || n == 0 {
            return None;
        }
        let pairs = jac.entries.iter().map(|&(r, c, _)| (r as usize, c));
        let dm = dulmage_mendelsohn(&Incidence::from_pairs(n, n, pairs));
        let square = dm.over.rows.is_empty()
            && dm.over.columns.is_empty()
            && dm.under.rows.is_empty()
            && dm.under.columns.is_empty();
        let sized = dm
            .blocks
            .iter()
            .all(|b| b.rows.len() == b.columns.len() && b.columns.len() <= max_block);
        let covered: usize = dm.blocks.iter().map(|b| b.columns.len()).sum();
        if !square || !sized || covered != n {
            return None;
        }
        let mut row_at = vec![(u32::MAX, 0); n];
        let mut col_at = vec![(u32::MAX, 0); n];
        let mut blocks = Vec::with_capacity(dm.blocks.len());
        for (k, b) in dm.blocks.into_iter().enumerate() {
            for (i, &r) in b.rows.iter().enumerate() {
                row_at[r as usize] = (k as u32, i as u32);
            }
            for (j, &c) in b.columns.iter().enumerate() {
                col_at[c as usize] = (k as u32, j as u32);
            }
            blocks.push((b.rows, b.columns));
        }
        let mut plan = BlockPlan {
            n,
            blocks,
            row_at,
            col_at,
            scatter: Scatter::default(),
        };
        plan.scatter = plan.scatter_of(jac).unwrap_or_default();
        Some(plan)
    }

    /// Each block's place in dense storage (row-major, end to end) and the total.
    fn offsets(&self) -> Vec<usize> {
        let mut offset = Vec::with_capacity(self.blocks.len() + 1);
        let mut total = 0usize;
        for (_, cols) in &self.blocks {
            offset.push(total);
            total += cols.len() * cols.len();
        }
        offset.push(total);
        offset
    }

    /// Where `jac`'s entries go, in its order; `None` where an entry is outside the
    /// plan or above the block diagonal.
    fn scatter_of(&self, jac: &TangentJacobian) -> Option<Scatter> {
        let offset = self.offsets();
        let mut target = Vec::with_capacity(jac.entries.len());
        // (row block, row in block, column, entry), grouped by row block below.
        let mut coupled: Vec<(u32, u32, u32, u32)> = Vec::new();
        for (e, &(r, c, _)) in jac.entries.iter().enumerate() {
            let (&(rb, ri), &(cb, ci)) =
                (self.row_at.get(r as usize)?, self.col_at.get(c as usize)?);
            if rb as usize >= self.blocks.len() || cb as usize >= self.blocks.len() {
                return None;
            }
            if rb == cb {
                let m = self.blocks[rb as usize].1.len();
                let at = offset[rb as usize] + ri as usize * m + ci as usize;
                target.push(u32::try_from(at).ok().filter(|&t| t < COUPLED)?);
            } else if cb < rb {
                coupled.push((rb, ri, c, e as u32));
                target.push(COUPLED);
            } else {
                return None;
            }
        }
        coupled.sort_by_key(|&(rb, ..)| rb);
        let mut coupling_start = vec![0u32; self.blocks.len() + 1];
        let mut coupling = Vec::with_capacity(coupled.len());
        for (k, &(rb, ri, c, e)) in coupled.iter().enumerate() {
            coupling_start[rb as usize + 1] += 1;
            coupling.push((rb, ri, c));
            if let Some(t) = target.get_mut(e as usize) {
                *t = COUPLED | u32::try_from(k).ok().filter(|&k| k < COUPLED)?;
            }
        }
        for k in 0..self.blocks.len() {
            coupling_start[k + 1] += coupling_start[k];
        }
        Some(Scatter {
            pattern: jac.entries.iter().map(|&(r, c, _)| (r, c)).collect(),
            target,
            coupling,
            coupling_start,
            offset,
        })
    }

    /// Factors `jac` (of the plan's pattern; entries summed where repeated), or `None`
    /// where it does not fit the plan or a block is singular. `reuse` (an earlier
    /// factorization, of any plan) lends its memory.
    pub(crate) fn factor(
        &self,
        jac: &TangentJacobian,
        reuse: Option<BlockFactors>,
    ) -> Option<BlockFactors> {
        if jac.rows != self.n || jac.columns != self.n {
            return None;
        }
        let same_order = self.scatter.pattern.len() == jac.entries.len()
            && self
                .scatter
                .pattern
                .iter()
                .zip(&jac.entries)
                .all(|(&(r, c), &(s, d, _))| r == s && c == d);
        let fresh = if same_order {
            None
        } else {
            Some(Box::new(self.scatter_of(jac)?))
        };
        let mut factors = reuse.unwrap_or_default();
        factors.n = self.n;
        factors.fresh = fresh;
        let BlockFactors {
            fresh,
            dense,
            original,
            pivots,
            coupling,
            ..
        } = &mut factors;
        let scatter = fresh.as_deref().unwrap_or(&self.scatter);
        let total = scatter.offset.last().copied().unwrap_or(0);
        dense.clear();
        dense.resize(total, 0.0);
        // Every coupling value is set below (one entry each): no clearing.
        coupling.resize(scatter.coupling.len(), 0.0);
        for (&(_, _, v), &t) in jac.entries.iter().zip(&scatter.target) {
            let k = (t & !COUPLED) as usize;
            if t & COUPLED == 0 {
                *dense.get_mut(k)? += v;
            } else {
                *coupling.get_mut(k)? = v;
            }
        }
        original.clone_from(dense);
        pivots.clear();
        pivots.resize(self.n, 0);
        let mut first_pivot = 0;
        for (k, (_, cols)) in self.blocks.iter().enumerate() {
            let m = cols.len();
            if m == 1 {
                // A lone entry (a chain's position rows): its own pivot.
                let v = *dense.get(*scatter.offset.get(k)?)?;
                if !(v.is_finite() && v != 0.0) {
                    return None;
                }
                first_pivot += 1;
                continue;
            }
            let block = dense.get_mut(*scatter.offset.get(k)?..*scatter.offset.get(k + 1)?)?;
            if !lu_in_place(block, m, pivots.get_mut(first_pivot..first_pivot + m)?) {
                return None;
            }
            first_pivot += m;
        }
        Some(factors)
    }
}

/// One matrix of a plan's pattern, each block LU-factored (solved with that plan).
#[derive(Debug, Default)]
pub(crate) struct BlockFactors {
    n: usize,
    /// The placement of a Jacobian whose entries came in another order than the plan's
    /// (else the plan's own is used).
    fresh: Option<Box<Scatter>>,
    /// The blocks' LU factors, row-major, end to end (at the placement's offsets).
    dense: Vec<f64>,
    /// The blocks as placed, before factoring (for the residuals of
    /// [`BlockFactors::solve_within`]).
    original: Vec<f64>,
    /// Per block, its row pivots (positions in the block), blocks end to end.
    pivots: Vec<u32>,
    /// The values of the placement's coupling entries, in its order.
    coupling: Vec<f64>,
}

impl BlockFactors {
    /// `J^-1 b` by forward substitution over `plan`'s blocks (the plan that factored
    /// it), or `None` if it is not finite.
    pub(crate) fn solve(&self, plan: &BlockPlan, b: &[f64]) -> Option<Vec<f64>> {
        self.solve_with_residual(plan, b).map(|(x, _)| x)
    }

    /// [`solve`](Self::solve), kept only where the residual `b - J x` is within
    /// `relative` of `b` (largest magnitudes). The residual is taken block by block as
    /// the solve goes: each block's rows less the coupling already subtracted, less the
    /// block as placed times its solution; the same terms as `b - J x` over the whole
    /// matrix, summed in another order, without a second pass over the entries.
    pub(crate) fn solve_within(
        &self,
        plan: &BlockPlan,
        b: &[f64],
        relative: f64,
    ) -> Option<Vec<f64>> {
        let (x, residual) = self.solve_with_residual(plan, b)?;
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        (residual <= relative * scale.max(f64::MIN_POSITIVE)).then_some(x)
    }

    /// The solution and the largest magnitude of its residual.
    fn solve_with_residual(&self, plan: &BlockPlan, b: &[f64]) -> Option<(Vec<f64>, f64)> {
        let scatter = self.fresh.as_deref().unwrap_or(&plan.scatter);
        if b.len() != plan.n
            || self.n != plan.n
            || scatter.offset.len() != plan.blocks.len() + 1
            || scatter.coupling.len() != self.coupling.len()
        {
            return None;
        }
        let mut x = vec![0.0; plan.n];
        let mut rhs = Vec::new();
        let mut placed_rhs = Vec::new();
        let mut residual = 0.0f64;
        let mut first_pivot = 0;
        for (k, (rows, cols)) in plan.blocks.iter().enumerate() {
            let m = cols.len();
            let from = scatter.coupling_start[k] as usize;
            let to = scatter.coupling_start[k + 1] as usize;
            if let ([row], [col]) = (rows.as_slice(), cols.as_slice()) {
                // A lone entry: divided by, with no pivoting.
                let mut r = b[*row as usize];
                for (&(_, _, c), &v) in scatter.coupling[from..to]
                    .iter()
                    .zip(&self.coupling[from..to])
                {
                    r -= v * x[c as usize];
                }
                let d = self.dense[scatter.offset[k]];
                let xc = r / d;
                x[*col as usize] = xc;
                residual = residual.max((r - d * xc).abs());
                first_pivot += 1;
                continue;
            }
            rhs.clear();
            rhs.extend(rows.iter().map(|&r| b[r as usize]));
            for (&(_, ri, c), &v) in scatter.coupling[from..to]
                .iter()
                .zip(&self.coupling[from..to])
            {
                rhs[ri as usize] -= v * x[c as usize];
            }
            placed_rhs.clone_from(&rhs);
            let (from, to) = (scatter.offset[k], scatter.offset[k + 1]);
            lu_solve(
                &self.dense[from..to],
                m,
                &self.pivots[first_pivot..first_pivot + m],
                &mut rhs,
            );
            first_pivot += m;
            for (&c, &value) in cols.iter().zip(&rhs) {
                x[c as usize] = value;
            }
            // The block's rows: what was left of b less the block times its solution.
            let placed = self.original.get(from..to)?;
            let worst = match m {
                2 => block_residual(placed, 2, &placed_rhs, &rhs),
                3 => block_residual(placed, 3, &placed_rhs, &rhs),
                _ => block_residual(placed, m, &placed_rhs, &rhs),
            };
            residual = residual.max(worst);
        }
        (x.iter().all(|v| v.is_finite()) && residual.is_finite()).then_some((x, residual))
    }
}

/// The largest magnitude of `left - A x` for the `m` by `m` row-major `a` (inlined where
/// `m` is a constant).
#[inline(always)]
fn block_residual(a: &[f64], m: usize, left: &[f64], x: &[f64]) -> f64 {
    let mut worst = 0.0f64;
    for (row, &l) in a.chunks_exact(m).zip(left) {
        let taken: f64 = row.iter().zip(x).map(|(a, v)| a * v).sum();
        worst = worst.max((l - taken).abs());
    }
    worst
}

/// LU with partial pivoting of the `m` by `m` row-major `a` in place (`L` unit lower,
/// `U` upper); `pivots[i]` is the row swapped into row `i`. False when a pivot is below
/// [`BLOCK_PIVOT`] of the block's largest entry. Blocks of 2 and 3 (a link's rotation
/// and its motion) go through copies of the same code with the size fixed, which the
/// compiler unrolls.
fn lu_in_place(a: &mut [f64], m: usize, pivots: &mut [u32]) -> bool {
    match (m, a.len(), pivots.len()) {
        (2, 4, 2..) => lu_in_place_sized(a, 2, pivots),
        (3, 9, 3..) => lu_in_place_sized(a, 3, pivots),
        _ => lu_in_place_sized(a, m, pivots),
    }
}

/// [`lu_in_place`]'s body, inlined where `m` is a constant.
#[inline(always)]
fn lu_in_place_sized(a: &mut [f64], m: usize, pivots: &mut [u32]) -> bool {
    let largest = a.iter().fold(0.0f64, |s, v| s.max(v.abs()));
    if !(largest.is_finite() && largest > 0.0) {
        return false;
    }
    for k in 0..m {
        let (p, top) = (k..m)
            .map(|i| (i, a[i * m + k].abs()))
            .fold((k, -1.0), |best, x| if x.1 > best.1 { x } else { best });
        if top <= BLOCK_PIVOT * largest {
            return false;
        }
        pivots[k] = p as u32;
        if p != k {
            for j in 0..m {
                a.swap(k * m + j, p * m + j);
            }
        }
        let pivot = a[k * m + k];
        for i in k + 1..m {
            let f = a[i * m + k] / pivot;
            a[i * m + k] = f;
            if f != 0.0 {
                for j in k + 1..m {
                    a[i * m + j] -= f * a[k * m + j];
                }
            }
        }
    }
    true
}

/// Solves `A x = b` in place from [`lu_in_place`]'s factors (sizes 2 and 3 unrolled).
fn lu_solve(lu: &[f64], m: usize, pivots: &[u32], b: &mut [f64]) {
    match (m, lu.len(), pivots.len(), b.len()) {
        (2, 4, 2.., 2..) => lu_solve_sized(lu, 2, pivots, b),
        (3, 9, 3.., 3..) => lu_solve_sized(lu, 3, pivots, b),
        _ => lu_solve_sized(lu, m, pivots, b),
    }
}

/// [`lu_solve`]'s body, inlined where `m` is a constant.
#[inline(always)]
fn lu_solve_sized(lu: &[f64], m: usize, pivots: &[u32], b: &mut [f64]) {
    for (k, &p) in pivots.iter().enumerate().take(m) {
        b.swap(k, p as usize);
    }
    for i in 0..m {
        let s: f64 = (0..i).map(|j| lu[i * m + j] * b[j]).sum();
        b[i] -= s;
    }
    for i in (0..m).rev() {
        let s: f64 = (i + 1..m).map(|j| lu[i * m + j] * b[j]).sum();
        b[i] = (b[i] - s) / lu[i * m + i];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `n` by `n` Jacobian of `entries`.
    fn square(n: usize, entries: Vec<(u32, u32, f64)>) -> TangentJacobian {
        TangentJacobian {
            rows: n,
            columns: n,
            entries,
        }
    }

    /// `b - J x`, largest magnitude.
    fn residual(jac: &TangentJacobian, x: &[f64], b: &[f64]) -> f64 {
        let mut r = b.to_vec();
        for &(row, col, v) in &jac.entries {
            r[row as usize] -= v * x[col as usize];
        }
        r.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    /// The residual a checked solve measures block by block is `b - J x` to rounding:
    /// a well-conditioned system passes a tight check with the plain solve's answer; a
    /// block nearly singular (a pivot of 1e-10 of its block, above the pivot floor) is
    /// solved, but its residual misses the check and the solve is refused.
    #[test]
    fn a_checked_solve_measures_the_residual_block_by_block() {
        let mut entries = Vec::new();
        // Three 2 by 2 blocks, each coupled to the one before.
        for b in 0..3u32 {
            let (r, c) = (2 * b, 2 * b);
            let t = f64::from(b);
            entries.extend([
                (r, c, 3.0 + t),
                (r, c + 1, 1.0),
                (r + 1, c, 0.5),
                (r + 1, c + 1, 2.0 - 0.3 * t),
            ]);
            if b > 0 {
                entries.push((r, c - 1, 0.75));
                entries.push((r + 1, c - 2, -1.25));
            }
        }
        let jac = square(6, entries);
        let plan = BlockPlan::new(&jac, 6).unwrap();
        let b = [1.0, -2.0, 0.5, 0.25, -1.5, 3.0];
        let factors = plan.factor(&jac, None).unwrap();
        let x = factors.solve(&plan, &b).unwrap();
        let (y, measured) = factors.solve_with_residual(&plan, &b).unwrap();
        assert_eq!(x, y);
        assert!(
            (measured - residual(&jac, &x, &b)).abs() < 1e-15,
            "{measured}"
        );
        assert_eq!(factors.solve_within(&plan, &b, 1e-13), Some(x));
        // The middle block's rows made nearly equal.
        let mut near = jac.clone();
        for e in &mut near.entries {
            match (e.0, e.1) {
                (3, 2) => e.2 = 4.0,
                (3, 3) => e.2 = 1.0 + 1e-10,
                _ => {}
            }
        }
        let factors = plan.factor(&near, None).unwrap();
        assert!(factors.solve(&plan, &b).is_some());
        assert_eq!(factors.solve_within(&plan, &b, 1e-11), None);
    }

    /// Blocks of one entry (lower bidiagonal, rows listed backwards): solved to
    /// rounding; a zero on the diagonal is refused.
    #[test]
    fn blocks_of_one_entry_solve_and_a_zero_one_is_refused() {
        let n = 20u32;
        let mut entries = Vec::new();
        for k in (0..n).rev() {
            entries.push((k, k, 2.0 + f64::from(k).sin()));
            if k > 0 {
                entries.push((k, k - 1, -1.5));
            }
        }
        let jac = square(n as usize, entries);
        let plan = BlockPlan::new(&jac, 6).unwrap();
        assert_eq!(plan.blocks.len(), n as usize);
        let b: Vec<f64> = (0..n).map(|k| (f64::from(k) * 0.7).cos()).collect();
        let x = plan.factor(&jac, None).unwrap().solve(&plan, &b).unwrap();
        assert!(residual(&jac, &x, &b) < 1e-13);
        // The first row solved by hand.
        assert_eq!(x[0], b[0] / 2.0);
        let mut zero = jac.clone();
        for e in &mut zero.entries {
            if e.0 == 7 && e.1 == 7 {
                e.2 = 0.0;
            }
        }
        assert!(plan.factor(&zero, None).is_none());
    }

    /// A chain-like matrix: 2 by 2 blocks along the diagonal (rows in a scrambled
    /// order), each coupled to the block before; solved to rounding, block by block.
    /// A pattern with a block over the limit, a structurally singular one and a
    /// numerically singular block are refused.
    #[test]
    fn block_triangular_systems_solve_and_singular_ones_are_refused() {
        let blocks = 50u32;
        let n = 2 * blocks;
        // Row k of block b sits at row (b * 2 + k) * 7 % n (7 is prime to 100).
        let row = |b: u32, k: u32| (b * 2 + k) * 7 % n;
        let mut entries = Vec::new();
        for b in 0..blocks {
            let (c0, c1) = (2 * b, 2 * b + 1);
            let t = f64::from(b) * 0.1;
            entries.push((row(b, 0), c0, 2.0 + t.sin()));
            entries.push((row(b, 0), c1, 0.5));
            entries.push((row(b, 1), c0, -0.25));
            entries.push((row(b, 1), c1, 1.5 + t.cos()));
            entries.push((row(b, 1), c1, 0.125)); // repeated: summed
            if b > 0 {
                entries.push((row(b, 0), c0 - 1, -1.0));
                entries.push((row(b, 1), c0 - 2, 0.75));
            }
        }
        let jac = square(n as usize, entries);
        let plan = BlockPlan::new(&jac, 6).unwrap();
        assert_eq!(plan.blocks.len(), blocks as usize);
        let b: Vec<f64> = (0..n).map(|k| (f64::from(k) * 0.37).sin()).collect();
        let x = plan.factor(&jac, None).unwrap().solve(&plan, &b).unwrap();
        assert!(residual(&jac, &x, &b) < 1e-12);
        // The same matrix with its entries in another order (not the plan's): placed
        // afresh, the same solution.
        let mut shuffled = jac.clone();
        shuffled.entries.reverse();
        shuffled.entries.swap(3, 40);
        let y = plan
            .factor(&shuffled, None)
            .unwrap()
            .solve(&plan, &b)
            .unwrap();
        assert!(x
            .iter()
            .zip(&y)
            .all(|(u, v)| (u - v).abs() <= 1e-14 * (1.0 + u.abs())));
        // Blocks of 2 columns over a limit of 1: no plan.
        assert!(BlockPlan::new(&jac, 1).is_none());
        // An empty column: structurally singular, no plan.
        let mut holed = jac.clone();
        holed.entries.retain(|e| e.1 != 5);
        assert!(BlockPlan::new(&holed, 6).is_none());
        // A block whose rows are equal: numerically singular, not factored.
        let mut flat = jac.clone();
        for e in &mut flat.entries {
            if e.0 == row(3, 1) && e.1 >= 6 {
                e.2 = if e.1 == 6 {
                    2.0 + (f64::from(3u32) * 0.1).sin()
                } else {
                    0.0
                };
            }
        }
        flat.entries.push((row(3, 1), 7, 0.5));
        assert!(plan.factor(&flat, None).is_none());
    }
}
