//! `L D L^T` of a sparse symmetric quasi-definite matrix (a dynamics step's KKT
//! matrix), through faer's sparse Cholesky machinery.
//!
//! The pattern is analysed once (AMD ordering); while the list of entry positions given
//! stays the same, each factorization only adds the numbers into their kept slots. Where
//! faer's analysis is simplicial (a chain's is), the matrix is assembled straight into
//! the ordering's permuted positions and factored by a second analysis of that permuted
//! pattern in its own order, so faer does not permute the matrix at every factorization
//! (on a 100-link chain's 1,100-row matrix the permutation was a quarter of a
//! factorization); the solves apply the ordering themselves. That permuted factor's
//! numbers come from our own up-looking loop over row patterns kept with the analysis
//! (`up_looking_ldlt`): faer's finds each row's pattern again at every factorization.
//! A supernodal analysis (large fill) keeps faer's numeric factorization and solve.

use std::fmt;

use faer::sparse::linalg::cholesky::{SymbolicCholesky, SymbolicCholeskyRaw};
use faer::Mat;

use super::{all_finite, same_positions};

/// A symmetric quasi-definite matrix (a KKT matrix `[M J^T; J -e]`) factored as `L D
/// L^T` (faer's sparse Cholesky machinery: AMD ordering, its symbolic analysis kept while
/// the pattern holds) with each pivot held to its expected sign (`+` for the first
/// block, `-` for the second): a pivot of the wrong sign or smaller than `epsilon` is
/// replaced by `delta` with that sign. No pivoting, so the fill stays that of the
/// ordering (a chain's is linear); the regularised pivots perturb the matrix a little,
/// which a Newton iteration on exact residuals, or a refined solve, absorbs.
#[derive(Debug, Default)]
pub struct SparseLdlt {
    /// The upper triangle's pattern in compressed columns, and where each entry given
    /// to [`factor`](Self::factor) adds into its values, for the list of positions it
    /// was made from (`key`); remade when the positions change.
    assembly: Option<Assembly>,
    symbolic: Option<SymbolicCholesky<usize>>,
    /// Where `symbolic` is simplicial: the pattern in the ordering's positions and its
    /// own analysis (made with `symbolic`).
    permuted: Option<Permuted>,
    /// The matrix's values (upper triangle, compressed columns; permuted where
    /// `permuted` is made).
    matrix: Vec<f64>,
    values: Vec<f64>,
    /// The pivot signs in the ordering's positions.
    signs: Vec<i8>,
    /// The numeric factorization's work vector.
    x: Vec<f64>,
    /// Operations of a factorization and of a solve (see [`SparseLdlt::work`]).
    work: Option<(usize, usize)>,
    n: usize,
    ready: bool,
}

/// The upper triangle of `P A P^T` (`P` the fill-reducing ordering) in compressed
/// columns, where each entry given adds into it, and its simplicial analysis in its own
/// order.
struct Permuted {
    /// `forward[i]`: the row of `A` at position `i`; `inverse` the reverse.
    forward: Vec<usize>,
    inverse: Vec<usize>,
    compressed: Compressed,
    symbolic: SymbolicCholesky<usize>,
    /// `L`'s rows: row `k`'s entries below the diagonal are `column[t]` and their
    /// places in the factor's values `position[t]`, for `t` in `start[k]..start[k + 1]`,
    /// columns ascending.
    rows: RowPattern,
}

/// The row-wise pattern of a simplicial factor (see [`Permuted`]).
#[derive(Debug, Default)]
struct RowPattern {
    start: Vec<u32>,
    column: Vec<u32>,
    position: Vec<u32>,
}

impl RowPattern {
    /// From the factor's compressed columns (`col_ptr`, `row_idx`; each column's first
    /// entry its diagonal); `None` where an index does not fit in 32 bits.
    fn new(col_ptr: &[usize], row_idx: &[usize]) -> Option<RowPattern> {
        let n = col_ptr.len().checked_sub(1)?;
        u32::try_from(row_idx.len()).ok()?;
        let mut start = vec![0u32; n + 1];
        for j in 0..n {
            for &i in row_idx.get(col_ptr[j] + 1..col_ptr[j + 1])? {
                *start.get_mut(i + 1)? += 1;
            }
        }
        for k in 0..n {
            start[k + 1] += start[k];
        }
        let len = start[n] as usize;
        let (mut column, mut position) = (vec![0u32; len], vec![0u32; len]);
        let mut fill = start.clone();
        // Columns in increasing order: each row's entries come out sorted.
        for j in 0..n {
            for q in col_ptr[j] + 1..col_ptr[j + 1] {
                let i = *row_idx.get(q)?;
                let t = fill.get(i).copied()? as usize;
                fill[i] += 1;
                column[t] = j as u32;
                position[t] = q as u32;
            }
        }
        Some(RowPattern {
            start,
            column,
            position,
        })
    }
}

/// The numeric `L D L^T` of the symmetric matrix whose upper triangle is `a` (compressed
/// columns, rows sorted) into `values` (the simplicial factor's layout: column `j`'s
/// first entry, at `col_ptr[j]`, holds `D_j`, its others `L`'s entries below the
/// diagonal, rows ascending), up-looking: row `k` of `L` is the sparse triangular solve
/// of `L_{0..k} D y = A_{0..k,k}` along the row's kept pattern. Pivots are held to
/// their `signs` (a pivot of the wrong sign or within `epsilon` of zero becomes `delta`
/// with its sign). `false` if a pivot is not finite or zero.
///
/// faer's own simplicial factorization finds each row's pattern again at every
/// factorization (its `ereach`, a third of its time on a 100-link chain's KKT matrix);
/// the pattern is kept here with the analysis.
fn up_looking_ldlt(
    (col_ptr, row_idx): (&[usize], &[usize]),
    rows: &RowPattern,
    a: &Compressed,
    a_values: &[f64],
    (signs, delta, epsilon): (&[i8], f64, f64),
    (values, x): (&mut [f64], &mut Vec<f64>),
) -> bool {
    let n = col_ptr.len().saturating_sub(1);
    if a.col_ptr.len() != n + 1 || signs.len() != n || rows.start.len() != n + 1 {
        return false;
    }
    x.clear();
    x.resize(n, 0.0);
    let (delta, epsilon) = (delta.abs(), epsilon.abs());
    for k in 0..n {
        for (&i, &v) in a.row_idx[a.col_ptr[k]..a.col_ptr[k + 1]]
            .iter()
            .zip(&a_values[a.col_ptr[k]..a.col_ptr[k + 1]])
        {
            x[i] += v;
        }
        let mut d = x[k];
        x[k] = 0.0;
        let entries = rows.start[k] as usize..rows.start[k + 1] as usize;
        for (&j, &at) in rows.column[entries.clone()]
            .iter()
            .zip(&rows.position[entries])
        {
            let (j, at) = (j as usize, at as usize);
            let xj = x[j];
            x[j] = 0.0;
            let first = col_ptr[j];
            let lkj = xj / values[first];
            for (&i, &l) in row_idx[first + 1..at].iter().zip(&values[first + 1..at]) {
                x[i] -= l * xj;
            }
            d -= lkj * xj;
            values[at] = lkj;
        }
        if signs[k] > 0 && d <= epsilon {
            d = delta;
        } else if signs[k] < 0 && d >= -epsilon {
            d = -delta;
        }
        if !d.is_finite() || d == 0.0 {
            return false;
        }
        values[col_ptr[k]] = d;
    }
    true
}

impl fmt::Debug for Permuted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permuted")
            .field("n", &self.forward.len())
            .field("entries", &self.compressed.row_idx.len())
            .finish()
    }
}

impl Permuted {
    /// From the positions `key` of an `n x n` matrix's entries and the analysis
    /// `symbolic` of its pattern; `None` where that analysis is not simplicial (or
    /// faer's analysis of the permuted pattern is not).
    fn new(n: usize, key: &[(u32, u32)], symbolic: &SymbolicCholesky<usize>) -> Option<Permuted> {
        use faer::sparse::linalg::cholesky::{
            factorize_symbolic_cholesky, SymbolicCholeskyRaw, SymmetricOrdering,
        };
        use faer::sparse::SymbolicSparseColMatRef;
        use faer::Side;
        if !matches!(symbolic.raw(), SymbolicCholeskyRaw::Simplicial(_)) {
            return None;
        }
        let (forward, inverse) = match symbolic.perm() {
            Some(p) => {
                let (f, i) = p.arrays();
                (f.to_vec(), i.to_vec())
            }
            None => ((0..n).collect(), (0..n).collect()),
        };
        if forward.len() != n || inverse.len() != n {
            return None;
        }
        // An entry of A's upper triangle at (r, c) is at (inverse[r], inverse[c]) in
        // P A P^T: kept in that matrix's upper triangle.
        let compressed = Compressed::new(
            n,
            key.iter().map(|&(r, c)| {
                (r <= c).then(|| {
                    let (i, j) = (inverse[r as usize] as u32, inverse[c as usize] as u32);
                    (i.min(j), i.max(j))
                })
            }),
        );
        let pattern = SymbolicSparseColMatRef::new_checked(
            n,
            n,
            &compressed.col_ptr,
            None,
            &compressed.row_idx,
        );
        let own = factorize_symbolic_cholesky(
            pattern,
            Side::Upper,
            SymmetricOrdering::Identity,
            Default::default(),
        )
        .ok()?;
        let SymbolicCholeskyRaw::Simplicial(factor) = own.raw() else {
            return None;
        };
        if own.perm().is_some() {
            return None;
        }
        let rows = RowPattern::new(factor.col_ptr(), factor.row_idx())?;
        Some(Permuted {
            forward,
            inverse,
            compressed,
            symbolic: own,
            rows,
        })
    }
}

/// Positions `(row, column)` (`None`: not read) compressed into columns with rows
/// sorted, repeats sharing a slot.
#[derive(Debug)]
struct Compressed {
    /// Per position given: its slot, or `u32::MAX`.
    slot: Vec<u32>,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
}

impl Compressed {
    fn new(n: usize, positions: impl Iterator<Item = Option<(u32, u32)>>) -> Compressed {
        let mut count = 0;
        let mut sorted: Vec<(u32, u32, u32)> = Vec::new();
        for (k, position) in positions.enumerate() {
            count = k + 1;
            if let Some((r, c)) = position {
                sorted.push((c, r, k as u32));
            }
        }
        sorted.sort_unstable();
        let mut slot = vec![u32::MAX; count];
        let mut col_ptr = vec![0usize; n + 1];
        let mut row_idx = Vec::with_capacity(sorted.len());
        let mut last = None;
        for &(c, r, k) in &sorted {
            if last != Some((c, r)) {
                row_idx.push(r as usize);
                col_ptr[c as usize + 1] += 1;
                last = Some((c, r));
            }
            slot[k as usize] = (row_idx.len() - 1) as u32;
        }
        for j in 0..n {
            col_ptr[j + 1] += col_ptr[j];
        }
        Compressed {
            slot,
            col_ptr,
            row_idx,
        }
    }
}

/// A list of `(row, column)` positions assembled into compressed columns (the upper
/// triangle: entries below the diagonal are not read).
#[derive(Debug)]
struct Assembly {
    n: usize,
    key: Vec<(u32, u32)>,
    compressed: Compressed,
}

impl Assembly {
    fn new(n: usize, entries: &[(u32, u32, f64)]) -> Option<Assembly> {
        let key: Vec<(u32, u32)> = entries.iter().map(|&(r, c, _)| (r, c)).collect();
        if key.iter().any(|&(r, c)| r as usize >= n || c as usize >= n) {
            return None;
        }
        let compressed = Compressed::new(n, key.iter().map(|&(r, c)| (r <= c).then_some((r, c))));
        Some(Assembly { n, key, compressed })
    }

    fn fits(&self, n: usize, entries: &[(u32, u32, f64)]) -> bool {
        self.n == n && same_positions(&self.key, entries)
    }
}

impl SparseLdlt {
    /// Nothing factored yet.
    pub fn new() -> SparseLdlt {
        SparseLdlt::default()
    }

    /// Factors the symmetric `n x n` matrix of `entries` (`(row, column, value)`, only
    /// those with `row <= column` are read; repeats add) with pivot signs `signs` (one
    /// per row, `1` or `-1`) and the regularisation `(delta, epsilon)`; `false` when an
    /// entry is not finite or the factorization fails. The assembly of the entries into
    /// compressed columns and the symbolic analysis are kept while the entries'
    /// positions are the same list.
    pub fn factor(
        &mut self,
        n: usize,
        entries: &[(u32, u32, f64)],
        signs: &[i8],
        (delta, epsilon): (f64, f64),
    ) -> bool {
        use faer::dyn_stack::{MemBuffer, MemStack};
        use faer::linalg::cholesky::ldlt::factor::LdltRegularization;
        use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
        use faer::{Par, Side};
        self.ready = false;
        if signs.len() != n {
            return false;
        }
        // While the positions hold (the usual case): one pass checks them, checks the
        // values are finite and adds them into the matrix.
        let filled = match (&self.assembly, &self.symbolic) {
            (Some(assembly), Some(_)) if assembly.n == n => {
                let compressed = self
                    .permuted
                    .as_ref()
                    .map_or(&assembly.compressed, |p| &p.compressed);
                fill_checked(&assembly.key, compressed, entries, &mut self.matrix)
            }
            _ => Filled::Moved,
        };
        match filled {
            Filled::NotFinite => return false,
            Filled::Done => {}
            Filled::Moved => {
                if !all_finite(entries.iter().map(|e| &e.2)) || !self.prepare(n, entries) {
                    return false;
                }
            }
        }
        let (Some(assembly), Some(symbolic)) = (self.assembly.as_ref(), self.symbolic.as_ref())
        else {
            return false;
        };
        // The matrix (permuted where it can be), its pivot signs and its analysis.
        let (compressed, signs, symbolic) = match &self.permuted {
            Some(p) => {
                self.signs.clear();
                self.signs.extend(
                    p.forward
                        .iter()
                        .map(|&i| signs.get(i).copied().unwrap_or(1)),
                );
                (&p.compressed, &self.signs[..], &p.symbolic)
            }
            None => (&assembly.compressed, signs, symbolic),
        };
        let pattern = SymbolicSparseColMatRef::new_checked(
            n,
            n,
            &compressed.col_ptr,
            None,
            &compressed.row_idx,
        );
        let a = SparseColMatRef::new(pattern, &self.matrix);
        // A simplicial (up-looking) factorization writes every entry of its factor
        // before reading it: kept values need no zeroing. faer's supernodal one adds
        // into them.
        if self.permuted.is_none() || self.values.len() != symbolic.len_val() {
            self.values.clear();
            self.values.resize(symbolic.len_val(), 0.0);
        }
        if let Some(p) = &self.permuted {
            if let SymbolicCholeskyRaw::Simplicial(factor) = p.symbolic.raw() {
                self.ready = up_looking_ldlt(
                    (factor.col_ptr(), factor.row_idx()),
                    &p.rows,
                    &p.compressed,
                    &self.matrix,
                    (signs, delta, epsilon),
                    (&mut self.values, &mut self.x),
                );
                return self.ready;
            }
        }
        let Ok(mut buffer) = MemBuffer::try_new(
            symbolic.factorize_numeric_ldlt_scratch::<f64>(Par::Seq, Default::default()),
        ) else {
            return false;
        };
        let regularization = LdltRegularization {
            dynamic_regularization_signs: Some(signs),
            dynamic_regularization_delta: delta,
            dynamic_regularization_epsilon: epsilon,
        };
        let factored = symbolic.factorize_numeric_ldlt(
            &mut self.values,
            a,
            Side::Upper,
            regularization,
            Par::Seq,
            MemStack::new(&mut buffer),
            Default::default(),
        );
        self.ready = factored.is_ok();
        self.ready
    }

    /// Makes the assembly, the analysis and the permuted assembly for `entries` where
    /// their positions changed (each kept where it still holds) and adds the values into
    /// the matrix; `false` where the positions are out of range or the analysis fails.
    fn prepare(&mut self, n: usize, entries: &[(u32, u32, f64)]) -> bool {
        use faer::sparse::linalg::cholesky::{factorize_symbolic_cholesky, SymmetricOrdering};
        use faer::sparse::SymbolicSparseColMatRef;
        use faer::Side;
        if !self.assembly.as_ref().is_some_and(|a| a.fits(n, entries)) {
            let Some(assembly) = Assembly::new(n, entries) else {
                return false;
            };
            let same_pattern = self.assembly.as_ref().is_some_and(|a| {
                a.n == n
                    && a.compressed.col_ptr == assembly.compressed.col_ptr
                    && a.compressed.row_idx == assembly.compressed.row_idx
            });
            if !same_pattern {
                self.symbolic = None;
            }
            // The permuted slots follow the list of positions.
            self.permuted = None;
            self.assembly = Some(assembly);
        }
        let Some(assembly) = self.assembly.as_ref() else {
            return false;
        };
        if self.symbolic.is_none() {
            let pattern = SymbolicSparseColMatRef::new_checked(
                n,
                n,
                &assembly.compressed.col_ptr,
                None,
                &assembly.compressed.row_idx,
            );
            let Ok(symbolic) = factorize_symbolic_cholesky(
                pattern,
                Side::Upper,
                SymmetricOrdering::Amd,
                Default::default(),
            ) else {
                return false;
            };
            self.symbolic = Some(symbolic);
            self.permuted = None;
            self.n = n;
        }
        let Some(symbolic) = self.symbolic.as_ref() else {
            return false;
        };
        if self.permuted.is_none() {
            self.permuted = Permuted::new(n, &assembly.key, symbolic);
        }
        let compressed = self
            .permuted
            .as_ref()
            .map_or(&assembly.compressed, |p| &p.compressed);
        self.matrix.clear();
        self.matrix.resize(compressed.row_idx.len(), 0.0);
        for (&slot, &(_, _, v)) in compressed.slot.iter().zip(entries) {
            if let Some(x) = self.matrix.get_mut(slot as usize) {
                *x += v;
            }
        }
        self.work = self.measure_work();
        true
    }

    /// Operations of a factorization (the entries added in, and the multiply-adds of
    /// the numeric factorization, `sum c_j^2` over `L`'s column counts) and of one solve
    /// (`2 nnz(L)` and the permutations), from the analysis; `None` before one.
    pub fn work(&self) -> Option<(usize, usize)> {
        self.work
    }

    /// [`SparseLdlt::work`] from the analysis (made with it, in `prepare`).
    fn measure_work(&self) -> Option<(usize, usize)> {
        let symbolic = self
            .permuted
            .as_ref()
            .map_or(self.symbolic.as_ref()?, |p| &p.symbolic);
        let entries = self.assembly.as_ref().map_or(0, |a| a.key.len());
        let n = self.n;
        let (factor, nnz) = match symbolic.raw() {
            SymbolicCholeskyRaw::Simplicial(f) => {
                let counts = f.col_ptr().windows(2).map(|w| w[1] - w[0]);
                (counts.map(|c| c * c).sum::<usize>(), f.row_idx().len())
            }
            SymbolicCholeskyRaw::Supernodal(_) => {
                let nnz = symbolic.len_val();
                (nnz * (nnz / n.max(1)).max(1), nnz)
            }
        };
        Some((entries + factor, 2 * nnz + 3 * n))
    }

    /// Solves `A x = b` in place with the last factorization; `false` if there is none
    /// or the result is not finite.
    pub fn solve_in_place(&self, b: &mut [f64]) -> bool {
        use faer::dyn_stack::{MemBuffer, MemStack};
        use faer::sparse::linalg::cholesky::{LdltRef, SymbolicCholeskyRaw};
        use faer::{Conj, Par};
        let (true, Some(symbolic)) = (self.ready, self.symbolic.as_ref()) else {
            return false;
        };
        if b.len() != self.n {
            return false;
        }
        if let Some(p) = &self.permuted {
            if let SymbolicCholeskyRaw::Simplicial(factor) = p.symbolic.raw() {
                return simplicial_ldlt_solve(
                    (factor.col_ptr(), factor.row_idx(), &self.values),
                    Some((&p.forward, &p.inverse)),
                    b,
                );
            }
            return false;
        }
        if let SymbolicCholeskyRaw::Simplicial(factor) = symbolic.raw() {
            let perm = symbolic.perm().map(|p| p.arrays());
            return simplicial_ldlt_solve(
                (factor.col_ptr(), factor.row_idx(), &self.values),
                perm,
                b,
            );
        }
        let Ok(mut buffer) =
            MemBuffer::try_new(symbolic.solve_in_place_scratch::<f64>(1, Par::Seq))
        else {
            return false;
        };
        let mut x = Mat::<f64>::zeros(self.n, 1);
        for (k, &v) in b.iter().enumerate() {
            x[(k, 0)] = v;
        }
        LdltRef::new(symbolic, &self.values).solve_in_place_with_conj(
            Conj::No,
            x.as_mut(),
            Par::Seq,
            MemStack::new(&mut buffer),
        );
        for (k, slot) in b.iter_mut().enumerate() {
            *slot = x[(k, 0)];
        }
        all_finite(b.iter())
    }
}

/// What [`fill_checked`] found.
enum Filled {
    /// The values were added into the matrix.
    Done,
    /// A value is not finite.
    NotFinite,
    /// A position differs from the assembly's: it must be made again.
    Moved,
}

/// Zeroes `matrix` (to `compressed`'s size) and adds each entry's value at its slot, in
/// one pass that also checks the entries' positions against `key` and their values'
/// finiteness.
fn fill_checked(
    key: &[(u32, u32)],
    compressed: &Compressed,
    entries: &[(u32, u32, f64)],
    matrix: &mut Vec<f64>,
) -> Filled {
    if key.len() != entries.len() || compressed.slot.len() != entries.len() {
        return Filled::Moved;
    }
    matrix.clear();
    matrix.resize(compressed.row_idx.len(), 0.0);
    let mut finite = true;
    for ((&(r, c), &slot), &(er, ec, v)) in key.iter().zip(&compressed.slot).zip(entries) {
        if r != er || c != ec {
            return Filled::Moved;
        }
        finite &= v.is_finite();
        if let Some(x) = matrix.get_mut(slot as usize) {
            *x += v;
        }
    }
    if finite {
        Filled::Done
    } else {
        Filled::NotFinite
    }
}

/// Solves `P^T L D L^T P x = b` in place from a simplicial factor in compressed columns
/// (`col_ptr`, `row_idx`, `values`: each column's first entry is its diagonal, holding
/// `D`; the others are `L`'s below it) and the permutation `(forward, inverse)` (`x`'s
/// `i`-th permuted entry is `b[forward[i]]`); `false` if the result is not finite.
///
/// faer's own solve of this factor is written for many right-hand sides at once and
/// took about 15 instructions per entry of `L` on one (a 1,100-row KKT matrix of a
/// 100-link chain, 6,945 entries: 213,000 instructions a solve); this loop takes about
/// five.
fn simplicial_ldlt_solve(
    (col_ptr, row_idx, values): (&[usize], &[usize], &[f64]),
    perm: Option<(&[usize], &[usize])>,
    b: &mut [f64],
) -> bool {
    let n = b.len();
    if col_ptr.len() != n + 1 {
        return false;
    }
    let mut x: Vec<f64> = match perm {
        Some((forward, _)) => forward.iter().map(|&i| b[i]).collect(),
        None => b.to_vec(),
    };
    // L y = x, column by column.
    for j in 0..n {
        let (start, end) = (col_ptr[j], col_ptr[j + 1]);
        let xj = x[j];
        if xj != 0.0 {
            for (&i, &l) in row_idx[start + 1..end].iter().zip(&values[start + 1..end]) {
                x[i] -= l * xj;
            }
        }
    }
    // D L^T z = y, from the last column.
    for j in (0..n).rev() {
        let (start, end) = (col_ptr[j], col_ptr[j + 1]);
        let mut s = 0.0;
        for (&i, &l) in row_idx[start + 1..end].iter().zip(&values[start + 1..end]) {
            s += l * x[i];
        }
        x[j] = x[j] / values[start] - s;
    }
    match perm {
        Some((_, inverse)) => {
            for (slot, &k) in b.iter_mut().zip(inverse) {
                *slot = x[k];
            }
        }
        None => b.copy_from_slice(&x),
    }
    all_finite(b.iter())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A KKT matrix with a massless direction its constraint holds: the sign-held
    /// `L D L^T` of the lifted matrix solves it to about the lift, and refinement against
    /// the exact matrix to rounding.
    #[test]
    fn sparse_ldlt_solves_a_quasi_definite_kkt_matrix() {
        // [[2, 0, 1], [0, 0, 1], [1, 1, 0]] (second mass entry zero), lifted by 1e-8.
        let exact = [
            (0u32, 0u32, 2.0),
            (0, 2, 1.0),
            (2, 0, 1.0),
            (1, 2, 1.0),
            (2, 1, 1.0),
        ];
        let mut lifted = exact.to_vec();
        lifted.push((0, 0, 2e-8));
        lifted.push((1, 1, 2e-8));
        lifted.push((2, 2, -1e-10));
        let mut ldlt = SparseLdlt::new();
        assert!(ldlt.factor(3, &lifted, &[1, 1, -1], (2e-8, 2e-14)));
        let x = [0.3, -1.2, 2.5];
        let product = |v: &[f64]| {
            let mut out = [0.0; 3];
            for &(r, c, a) in &exact {
                out[r as usize] += a * v[c as usize];
            }
            out
        };
        let b = product(&x);
        let mut y = b.to_vec();
        assert!(ldlt.solve_in_place(&mut y));
        for _ in 0..3 {
            let r = product(&y);
            let mut d: Vec<f64> = b.iter().zip(&r).map(|(p, q)| p - q).collect();
            assert!(ldlt.solve_in_place(&mut d));
            for (a, e) in y.iter_mut().zip(&d) {
                *a += e;
            }
        }
        for k in 0..3 {
            assert!((y[k] - x[k]).abs() < 1e-12, "{y:?}");
        }
        // The symbolic analysis is kept for the same pattern.
        assert!(ldlt.factor(3, &lifted, &[1, 1, -1], (2e-8, 2e-14)));
    }

    /// A chain-like KKT matrix (2 x 2 mass blocks, each link held to the next by one
    /// row), entries repeated and listed in a scrambled order: factored in the
    /// ordering's positions (the permuted path), its solve matches nalgebra's dense LU
    /// of the same (lifted) matrix to rounding, and a second factorization with new
    /// values keeps the analysis.
    #[test]
    fn permuted_assembly_solves_like_a_dense_lu() {
        let links = 40;
        let n = 2 * links;
        let size = n + links;
        let mut entries = Vec::new();
        for k in 0..links {
            let (a, b) = (2 * k as u32, 2 * k as u32 + 1);
            let m = 1.0 + 0.1 * k as f64;
            entries.push((a, a, 0.5 * m));
            entries.push((a, a, 0.5 * m));
            entries.push((b, b, 2.0 * m));
            entries.push((a, b, 0.1));
            entries.push((b, a, 0.1));
            // Row k: x_a(k) - x_a(k - 1) + 0.3 x_b(k).
            let row = (n + k) as u32;
            let mut put = |c: u32, v: f64| {
                entries.push((row, c, v));
                entries.push((c, row, v));
            };
            put(a, 1.0);
            put(b, 0.3);
            if k > 0 {
                put(a - 2, -1.0);
            }
            entries.push((row, row, -1e-10));
        }
        // Scrambled order (a fixed shuffle).
        let len = entries.len();
        let scrambled: Vec<_> = (0..len).map(|k| entries[(k * 7919) % len]).collect();
        let signs: Vec<i8> = (0..size).map(|k| if k < n { 1 } else { -1 }).collect();
        let mut ldlt = SparseLdlt::new();
        assert!(ldlt.factor(size, &scrambled, &signs, (1e-12, 1e-18)));
        assert!(ldlt.permuted.is_some());
        let dense = |list: &[(u32, u32, f64)]| {
            let mut m = nalgebra::DMatrix::<f64>::zeros(size, size);
            for &(r, c, v) in list {
                if r <= c {
                    m[(r as usize, c as usize)] += v;
                    if r != c {
                        m[(c as usize, r as usize)] += v;
                    }
                }
            }
            m
        };
        let b: Vec<f64> = (0..size).map(|k| (k as f64 * 0.61).cos()).collect();
        let check = |ldlt: &SparseLdlt, list: &[(u32, u32, f64)]| {
            let expected = dense(list)
                .lu()
                .solve(&nalgebra::DVector::from_column_slice(&b))
                .unwrap();
            let mut x = b.clone();
            assert!(ldlt.solve_in_place(&mut x));
            let scale = expected.amax();
            for k in 0..size {
                assert!(
                    (x[k] - expected[k]).abs() < 1e-9 * scale,
                    "{k}: {} {}",
                    x[k],
                    expected[k]
                );
            }
        };
        check(&ldlt, &scrambled);
        // A chain's factorization costs a few solves (its fill is linear).
        let (factor, solve) = ldlt.work().unwrap();
        assert!(solve > 2 * n && factor < 5 * solve, "{factor} {solve}");
        // The up-looking factorization gives faer's factor of the same matrix, entry by
        // entry, to rounding.
        {
            use faer::dyn_stack::{MemBuffer, MemStack};
            use faer::linalg::cholesky::ldlt::factor::LdltRegularization;
            use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
            let p = ldlt.permuted.as_ref().unwrap();
            let c = &p.compressed;
            let pattern =
                SymbolicSparseColMatRef::new_checked(size, size, &c.col_ptr, None, &c.row_idx);
            let a = SparseColMatRef::new(pattern, &ldlt.matrix);
            let mut theirs = vec![0.0; p.symbolic.len_val()];
            let mut buffer = MemBuffer::try_new(
                p.symbolic
                    .factorize_numeric_ldlt_scratch::<f64>(faer::Par::Seq, Default::default()),
            )
            .unwrap();
            p.symbolic
                .factorize_numeric_ldlt(
                    &mut theirs,
                    a,
                    faer::Side::Upper,
                    LdltRegularization {
                        dynamic_regularization_signs: Some(&ldlt.signs),
                        dynamic_regularization_delta: 1e-12,
                        dynamic_regularization_epsilon: 1e-18,
                    },
                    faer::Par::Seq,
                    MemStack::new(&mut buffer),
                    Default::default(),
                )
                .unwrap();
            assert_eq!(theirs.len(), ldlt.values.len());
            for (k, (a, b)) in ldlt.values.iter().zip(&theirs).enumerate() {
                assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{k}: {a} vs {b}");
            }
        }
        let doubled: Vec<_> = scrambled.iter().map(|&(r, c, v)| (r, c, 2.0 * v)).collect();
        assert!(ldlt.factor(size, &doubled, &signs, (1e-12, 1e-18)));
        assert!(ldlt.permuted.is_some());
        check(&ldlt, &doubled);
    }
}
