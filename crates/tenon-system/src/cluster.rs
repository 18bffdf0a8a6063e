//! Clusters: the system split into groups of unknowns that no equation joins, each
//! compiled into its own local tape.
//!
//! A cluster reads a short local state: 7 values per free part (`p`, then `q`), in the
//! order of [`ClusterTape::parts`], then its extra unknowns. Its tangent space has 6
//! columns per part (`dp`, `dtheta`) and one per extra unknown, in the same order.
//! Evaluating a cluster touches nothing outside it, so the cost of a solve step is the
//! cost of its cluster, not of the assembly, and clusters can be solved on different
//! threads.
//!
//! Architecture invariant: every equation with an unknown belongs to exactly one
//! cluster, and all of its unknowns are that cluster's; equations with no unknown
//! (between grounded parts) form the separate fixed set.
//!
//! (About 730 lines: `ClusterTape`'s evaluation, tangent Jacobian, stage restriction,
//! retraction and turn counting all read its private local index maps; split them out
//! when one of them grows.)

use std::sync::Arc;

use petgraph::unionfind::UnionFind;
use rustc_hash::FxHashMap;
use tenon_expr::{ExprId, LocalColumns, ParamId, Tape, TapeOutput, TapeWorkspace, VarId};

use crate::build::System;
use crate::error::SystemError;
use crate::fold::{FoldOp, FoldPlan};
use crate::owners::unknowns_of;
use crate::tangent::{quaternion_tangent, retract_extra, retract_pose, TangentJacobian};

/// Scratch memory for evaluating tapes: one per thread, reused across clusters and
/// calls (it is large, so it is never made per cluster).
#[derive(Debug, Default)]
pub struct Scratch {
    ws: Option<TapeWorkspace>,
}

impl Scratch {
    /// Empty; memory is taken at first use.
    pub fn new() -> Self {
        Scratch::default()
    }

    /// A workspace big enough for `tape`.
    pub(crate) fn for_tape(&mut self, tape: &Tape) -> &mut TapeWorkspace {
        let fits = self.ws.as_ref().is_some_and(|ws| tape.workspace_fits(ws));
        if !fits {
            self.ws = None;
        }
        self.ws.get_or_insert_with(|| tape.workspace())
    }
}

/// Which side of a joint limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitSide {
    /// The lower bound: the coordinate must not go below it.
    Min,
    /// The upper bound: the coordinate must not go above it.
    Max,
}

/// One side of a joint limit compiled into a cluster: output `row` of the cluster's tape
/// holds `value - bound`, which must be `>= 0` for [`LimitSide::Min`] and `<= 0` for
/// [`LimitSide::Max`]; held as the equation `value - bound = 0` while the limit binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitRow {
    /// Index into [`System::limits`].
    pub limit: usize,
    /// Which bound.
    pub side: LimitSide,
    /// Output row in the cluster's tape (after its equations).
    pub row: usize,
}

impl LimitRow {
    /// How far the coordinate is beyond its bound (positive when violated), from the
    /// row's value.
    pub fn excess(&self, value: f64) -> f64 {
        match self.side {
            LimitSide::Min => -value,
            LimitSide::Max => value,
        }
    }
}

thread_local! {
    static THREAD_SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::new());
}

impl Scratch {
    /// This thread's scratch, kept between calls (empty if it is lent out already);
    /// hand it back with [`give_back`](Self::give_back).
    pub fn take_thread_local() -> Scratch {
        THREAD_SCRATCH
            .with(|cell| cell.try_borrow_mut().map(|mut s| std::mem::take(&mut *s)))
            .unwrap_or_default()
    }

    /// Keeps `scratch` as this thread's for the next [`take_thread_local`](Self::take_thread_local).
    pub fn give_back(scratch: Scratch) {
        THREAD_SCRATCH.with(|cell| {
            if let Ok(mut s) = cell.try_borrow_mut() {
                *s = scratch;
            }
        });
    }
}

/// One cluster, compiled: its equations, parts and extra unknowns, and its tapes.
#[derive(Debug, Clone)]
pub struct ClusterTape {
    equations: Vec<usize>,
    // Shared with the cluster's stage tapes (see `restricted`): one copy however many
    // stages a large cluster has.
    parts: Arc<[usize]>,
    extras: Arc<[usize]>,
    vars: Arc<[VarId]>,
    /// `vars` indexed, for compiling stage tapes over them.
    columns: Arc<LocalColumns>,
    /// Free parts of the whole system (global tangent columns of extras start at 6 times
    /// this).
    system_parts: usize,
    /// Turn counters of its counted angles, in the raw-angle tape's output order.
    turns: Vec<ParamId>,
    /// Its limit sides, as rows of its tape after the equations.
    limit_rows: Vec<LimitRow>,
    tape: Tape,
    raw_angles: Tape,
    /// How the tape's Jacobian entries fold into the tangent Jacobian (made at first
    /// use, see `fold`).
    fold: std::sync::OnceLock<FoldPlan>,
}

/// Evaluation results of one cluster (residuals, Jacobian values, raw angles), reused
/// between evaluations.
#[derive(Debug, Clone)]
pub struct ClusterOutput {
    equations: TapeOutput,
    raw: TapeOutput,
    raw_before: Vec<f64>,
}

impl ClusterOutput {
    /// Outputs of the last evaluation: the residuals of the cluster's equations, in
    /// [`ClusterTape::equations`] order, then its limit rows ([`ClusterTape::limit_rows`]).
    pub fn residuals(&self) -> &[f64] {
        self.equations.residuals()
    }
}

impl ClusterTape {
    /// Its equations: indices into [`System::equations`], ascending.
    pub fn equations(&self) -> &[usize] {
        &self.equations
    }

    /// Its free parts: indices into [`System::free_parts`], ascending.
    pub fn parts(&self) -> &[usize] {
        &self.parts
    }

    /// Its extra unknowns: indices into [`System::extra_unknowns`], ascending.
    pub fn extras(&self) -> &[usize] {
        &self.extras
    }

    /// Its joint-limit sides, as extra rows of its tape.
    pub fn limit_rows(&self) -> &[LimitRow] {
        &self.limit_rows
    }

    /// Whether it has counted angles (whose turn counters a step may change).
    pub fn has_turns(&self) -> bool {
        !self.turns.is_empty()
    }

    /// The parameters holding its turn counters.
    pub fn turn_parameters(&self) -> &[ParamId] {
        &self.turns
    }

    /// Length of its local state: 7 per part plus its extra unknowns.
    pub fn state_len(&self) -> usize {
        self.vars.len()
    }

    /// Dimension of its tangent space: 6 per part plus its extra unknowns.
    pub fn tangent_dimension(&self) -> usize {
        6 * self.parts.len() + self.extras.len()
    }

    /// Global tangent column of local tangent column `k`.
    pub fn global_column(&self, k: usize) -> usize {
        let p = self.parts.len();
        if k < 6 * p {
            6 * self.parts[k / 6] + k % 6
        } else {
            6 * self.system_parts + self.extras[k - 6 * p]
        }
    }

    /// Its local state, taken from the global one (of the system's length: the
    /// system's entry points check it).
    pub fn gather(&self, state: &[f64]) -> Vec<f64> {
        self.vars.iter().map(|v| state[v.index()]).collect()
    }

    /// [`gather`](Self::gather) into `local`, reusing its memory.
    pub(crate) fn gather_into(&self, state: &[f64], local: &mut Vec<f64>) {
        local.clear();
        local.extend(self.vars.iter().map(|v| state[v.index()]));
    }

    /// Writes its local state back into the global one.
    pub fn scatter(&self, local: &[f64], state: &mut [f64]) {
        debug_assert_eq!(local.len(), self.vars.len());
        for (v, &x) in self.vars.iter().zip(local) {
            state[v.index()] = x;
        }
    }

    /// Buffers for [`evaluate`](Self::evaluate).
    pub fn output(&self) -> ClusterOutput {
        ClusterOutput {
            equations: self.tape.output(),
            raw: self.raw_angles.output(),
            raw_before: Vec::new(),
        }
    }

    /// Buffers for [`update_turns`](Self::update_turns) alone (the raw angles' outputs;
    /// none for the equations).
    pub(crate) fn turn_output(&self) -> ClusterOutput {
        ClusterOutput {
            equations: TapeOutput::default(),
            raw: self.raw_angles.output(),
            raw_before: Vec::new(),
        }
    }

    /// Whether `out` was made by [`turn_output`](Self::turn_output) of this cluster.
    pub(crate) fn owns_turn_output(&self, out: &ClusterOutput) -> bool {
        self.raw_angles.owns(&out.raw)
    }

    /// Evaluates residuals and Jacobian at the local state.
    pub fn evaluate(
        &self,
        scratch: &mut Scratch,
        local: &[f64],
        params: &[f64],
        out: &mut ClusterOutput,
    ) -> Result<(), SystemError> {
        let ws = scratch.for_tape(&self.tape);
        self.tape.evaluate(ws, local, params, &mut out.equations)?;
        Ok(())
    }

    /// Evaluates residuals only.
    pub fn evaluate_residuals(
        &self,
        scratch: &mut Scratch,
        local: &[f64],
        params: &[f64],
        out: &mut ClusterOutput,
    ) -> Result<(), SystemError> {
        let ws = scratch.for_tape(&self.tape);
        self.tape
            .evaluate_residuals(ws, local, params, &mut out.equations)?;
        Ok(())
    }

    /// The tangent Jacobian of some of its equations from the last
    /// [`evaluate`](Self::evaluate) at `local`: row `k` is local equation `rows[k]`,
    /// columns are local tangent columns. `J_T = [J_p, J_q G(q)]` as for the whole
    /// system.
    pub fn tangent_jacobian(
        &self,
        local: &[f64],
        out: &ClusterOutput,
        rows: &[usize],
    ) -> TangentJacobian {
        let mut jac = TangentJacobian {
            rows: 0,
            columns: 0,
            entries: Vec::new(),
        };
        self.tangent_jacobian_into(local, out, rows, &mut jac);
        jac
    }

    /// [`tangent_jacobian`](Self::tangent_jacobian) into `jac`, reusing its memory (a
    /// solve calls this every iteration; the entries of a large cluster run to
    /// megabytes).
    pub fn tangent_jacobian_into(
        &self,
        local: &[f64],
        out: &ClusterOutput,
        rows: &[usize],
        jac: &mut TangentJacobian,
    ) {
        let pattern = self.tape.pattern();
        let entries = &mut jac.entries;
        entries.clear();
        // A part's four quaternion entries in a row fold into its three rotation
        // columns: room for at most one entry per compiled entry.
        entries.reserve(rows.iter().map(|&r| pattern.row(r).len()).sum::<usize>());
        self.tangent_jacobian_with(local, out, rows, |r, c, v| entries.push((r, c, v)));
        jac.rows = rows.len();
        jac.columns = self.tangent_dimension();
    }

    /// What folding the tape's partial derivatives in `out` reads: the fold plan (made
    /// at first use), each pattern row's first entry, the values.
    #[inline]
    fn fold_inputs<'s>(&'s self, out: &'s ClusterOutput) -> (&'s FoldPlan, &'s [u32], &'s [f64]) {
        let pattern = self.tape.pattern();
        let plan = self
            .fold
            .get_or_init(|| FoldPlan::new(pattern, self.parts.len()));
        (plan, pattern.row_starts(), out.equations.jacobian())
    }

    /// The entries of [`tangent_jacobian_into`](Self::tangent_jacobian_into), each
    /// handed to `emit` as `(row among rows, local tangent column, value)`, in the same
    /// order.
    #[inline]
    pub(crate) fn tangent_jacobian_with(
        &self,
        local: &[f64],
        out: &ClusterOutput,
        rows: &[usize],
        mut emit: impl FnMut(u32, u32, f64),
    ) {
        let (plan, starts, values) = self.fold_inputs(out);
        // `G(q)` of the part met last (a row reads a part's quaternion entries together).
        let mut tangent: Option<(u32, [[f64; 3]; 4])> = None;
        for (row_out, &row) in rows.iter().enumerate() {
            let r = row_out as u32;
            let first = starts.get(row).map_or(0, |&x| x as usize);
            let entry = |k: u32| values.get(first + k as usize).copied().unwrap_or(0.0);
            for op in plan.row(row) {
                match *op {
                    FoldOp::Copy { src, col } => emit(r, col, entry(src)),
                    FoldOp::Rotation { part, src, ks, n } => {
                        let g = match tangent {
                            Some((p, g)) if p == part => g,
                            _ => {
                                let base = 7 * part as usize;
                                let q = [3, 4, 5, 6].map(|i| local[base + i]);
                                let g = quaternion_tangent(q);
                                tangent = Some((part, g));
                                g
                            }
                        };
                        let mut acc = [0.0; 3];
                        for (i, &k) in ks.iter().enumerate().take(n as usize) {
                            let value = entry(src + i as u32);
                            for (a, &gk) in acc.iter_mut().zip(&g[k as usize]) {
                                *a += value * gk;
                            }
                        }
                        for (c, v) in acc.into_iter().enumerate() {
                            emit(r, 6 * part + 3 + c as u32, v);
                        }
                    }
                }
            }
        }
    }

    /// `J_T^T y` over some of its equations from the last [`evaluate`](Self::evaluate)
    /// at `local`, without forming `J_T`: `y(k)` is the value of row `k` among `rows`;
    /// each contribution goes to `add(local tangent column, value)`. With `J_T = [J_p,
    /// J_q G(q)]`: the translation (and extra) columns take `J_p^T y`, a part's rotation
    /// columns `G(q)^T (J_q^T y)`, its quaternion sums kept in `sums` (one per part).
    pub(crate) fn transposed_times_with(
        &self,
        local: &[f64],
        out: &ClusterOutput,
        (rows, y): (&[usize], impl Fn(usize) -> f64),
        sums: &mut Vec<[f64; 4]>,
        mut add: impl FnMut(u32, f64),
    ) {
        let (plan, starts, values) = self.fold_inputs(out);
        sums.clear();
        sums.resize(self.parts.len(), [0.0; 4]);
        for (row_out, &row) in rows.iter().enumerate() {
            let weight = y(row_out);
            if weight == 0.0 {
                continue;
            }
            let first = starts.get(row).map_or(0, |&x| x as usize);
            let entry = |k: u32| values.get(first + k as usize).copied().unwrap_or(0.0);
            for op in plan.row(row) {
                match *op {
                    FoldOp::Copy { src, col } => add(col, weight * entry(src)),
                    FoldOp::Rotation { part, src, ks, n } => {
                        if let Some(sum) = sums.get_mut(part as usize) {
                            for (i, &k) in ks.iter().enumerate().take(n as usize) {
                                sum[k as usize & 3] += weight * entry(src + i as u32);
                            }
                        }
                    }
                }
            }
        }
        for (part, sum) in sums.iter().enumerate() {
            if sum.iter().all(|&v| v == 0.0) {
                continue;
            }
            let base = 7 * part;
            let Some(q) = local.get(base + 3..base + 7) else {
                continue;
            };
            let g = quaternion_tangent([q[0], q[1], q[2], q[3]]);
            let mut folded = [0.0; 3];
            for (s, row) in sum.iter().zip(&g) {
                for (f, gk) in folded.iter_mut().zip(row) {
                    *f += s * gk;
                }
            }
            for (c, v) in folded.into_iter().enumerate() {
                add(6 * part as u32 + 3 + c as u32, v);
            }
        }
    }

    /// [`tangent_jacobian_into`](Self::tangent_jacobian_into) deciding entry by entry,
    /// without the plan (the reference the plan is tested against).
    #[cfg(test)]
    pub(crate) fn tangent_jacobian_entry_by_entry(
        &self,
        local: &[f64],
        out: &ClusterOutput,
        rows: &[usize],
    ) -> Vec<(u32, u32, f64)> {
        let pattern = self.tape.pattern();
        let starts = pattern.row_starts();
        let values = out.equations.jacobian();
        let n7 = 7 * self.parts.len();
        let mut entries = Vec::new();
        let mut tangent: Option<(usize, [[f64; 3]; 4])> = None;
        for (row_out, &row) in rows.iter().enumerate() {
            let r = row_out as u32;
            let first = starts.get(row).map_or(0, |&x| x as usize);
            let mut folding: Option<(usize, [f64; 3])> = None;
            for (offset, &col) in pattern.row(row).iter().enumerate() {
                let value = values[first + offset];
                let col = col as usize;
                let (part, k) = (col / 7, col % 7);
                if col < n7 && k >= 3 {
                    let g = match tangent {
                        Some((p, g)) if p == part => g,
                        _ => {
                            let q = [3, 4, 5, 6].map(|i| local[7 * part + i]);
                            let g = quaternion_tangent(q);
                            tangent = Some((part, g));
                            g
                        }
                    };
                    if folding.is_some_and(|(p, _)| p != part) {
                        push_rotation(&mut entries, r, folding.take());
                    }
                    let acc = &mut folding.get_or_insert((part, [0.0; 3])).1;
                    for (a, &gk) in acc.iter_mut().zip(&g[k - 3]) {
                        *a += value * gk;
                    }
                    continue;
                }
                push_rotation(&mut entries, r, folding.take());
                let c = if col >= n7 {
                    6 * self.parts.len() + col - n7
                } else {
                    6 * part + k
                };
                entries.push((r, c as u32, value));
            }
            push_rotation(&mut entries, r, folding.take());
        }
        entries
    }

    /// What equation `row` (local) reads, by unknown group: a free part's index in
    /// [`parts`](Self::parts), or the part count plus an extra unknown's index in
    /// [`extras`](Self::extras). A part may be named more than once.
    pub fn groups_read(&self, row: usize) -> impl Iterator<Item = usize> + '_ {
        let n7 = 7 * self.parts.len();
        let parts = self.parts.len();
        self.tape.pattern().row(row).iter().map(move |&col| {
            let col = col as usize;
            if col < n7 {
                col / 7
            } else {
                parts + col - n7
            }
        })
    }

    /// The structural tangent pattern of some of its equations: the `(row, column)`
    /// entries a [`tangent_jacobian`](Self::tangent_jacobian) of `rows` holds, in the
    /// same order, without evaluating anything. Sized from the rows' pattern (a part's
    /// four quaternion entries fold into three turn entries), not grown by doubling: a
    /// 10,000-link chain's is half a million entries.
    pub fn tangent_pattern(&self, rows: &[usize]) -> Vec<(u32, u32)> {
        let pattern = self.tape.pattern();
        let n7 = 7 * self.parts.len();
        let room = rows.iter().map(|&row| pattern.row(row).len()).sum();
        let mut entries = Vec::with_capacity(room);
        // The same folding of quaternion entries as `tangent_jacobian_into`, so the
        // entries come in the same order.
        let rotation = |entries: &mut Vec<(u32, u32)>, r: u32, part: Option<usize>| {
            if let Some(part) = part {
                for k in 3..6 {
                    entries.push((r, (6 * part + k) as u32));
                }
            }
        };
        for (row_out, &row) in rows.iter().enumerate() {
            let r = row_out as u32;
            let mut folding: Option<usize> = None;
            for &col in pattern.row(row) {
                let col = col as usize;
                let (part, k) = (col / 7, col % 7);
                if col < n7 && k >= 3 {
                    if folding.is_some_and(|p| p != part) {
                        rotation(&mut entries, r, folding.take());
                    }
                    folding = Some(part);
                    continue;
                }
                rotation(&mut entries, r, folding.take());
                let c = if col >= n7 {
                    6 * self.parts.len() + col - n7
                } else {
                    6 * part + k
                };
                entries.push((r, c as u32));
            }
            rotation(&mut entries, r, folding.take());
        }
        entries
    }

    /// Tapes of some of its equations over the same local state, one per stage of a
    /// block-triangular solve: stage `k` holds local equation rows `stages[k].0` and
    /// moves only local tangent columns `stages[k].1`. A stage's counted angles are the
    /// cluster's whose raw angle reads an unknown its columns move (the only ones its
    /// steps can turn); stages have no limit rows.
    pub fn restricted(
        &self,
        system: &mut System,
        stages: &[(Vec<usize>, Vec<usize>)],
    ) -> Result<Vec<ClusterTape>, SystemError> {
        let n6 = 6 * self.parts.len();
        // The cluster's counted angles (system indices), found once, and the local
        // unknowns each one's raw angle reads.
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); self.vars.len()];
        // The local index of each unknown, made only for a cluster with counted angles
        // (a 10,000-link chain has none, and a map of its 70,000 unknowns was made for
        // nothing).
        let mut position: FxHashMap<VarId, usize> = FxHashMap::default();
        for (t, turn) in system.turns.iter().enumerate() {
            if !self.turns.contains(&turn.turns) {
                continue;
            }
            if position.is_empty() {
                position = self.vars.iter().enumerate().map(|(k, &v)| (v, k)).collect();
            }
            for v in system.graph.vars_of(turn.raw) {
                if let Some(&k) = position.get(&v) {
                    readers[k].push(t);
                }
            }
        }
        let mut tapes = Vec::with_capacity(stages.len());
        for (rows, cols) in stages {
            let mut turns: Vec<usize> = Vec::new();
            for &c in cols {
                let locals = if c < n6 {
                    7 * (c / 6)..7 * (c / 6) + 7
                } else {
                    7 * self.parts.len() + c - n6..7 * self.parts.len() + c - n6 + 1
                };
                for k in locals {
                    turns.extend(readers.get(k).into_iter().flatten());
                }
            }
            turns.sort_unstable();
            turns.dedup();
            let equations: Vec<usize> = rows
                .iter()
                .filter_map(|&r| self.equations.get(r).copied())
                .collect();
            let outputs: Vec<ExprId> = equations
                .iter()
                .map(|&r| system.equations[r].residual)
                .collect();
            let groups = owner_groups(system, &equations, outputs.len());
            let tape = system
                .graph
                .compile_local_by_shape_in(&outputs, &groups, &self.columns)?;
            let raws: Vec<ExprId> = turns.iter().map(|&t| system.turns[t].raw).collect();
            let raw_angles = compile_raw_angles(system, &raws, &self.columns)?;
            tapes.push(ClusterTape {
                system_parts: self.system_parts,
                equations,
                parts: Arc::clone(&self.parts),
                extras: Arc::clone(&self.extras),
                vars: Arc::clone(&self.vars),
                columns: Arc::clone(&self.columns),
                turns: turns.iter().map(|&t| system.turns[t].turns).collect(),
                limit_rows: Vec::new(),
                tape,
                raw_angles,
                fold: std::sync::OnceLock::new(),
            });
        }
        Ok(tapes)
    }

    /// Applies a local tangent step (see [`System::retract`]).
    pub fn retract(&self, local: &mut [f64], delta: &[f64]) {
        for k in 0..self.parts.len() {
            self.retract_part(local, delta, k);
        }
        let tangent_base = 6 * self.parts.len();
        for e in 0..self.extras.len() {
            self.retract_extra(local, delta, tangent_base + e);
        }
    }

    /// [`retract`](Self::retract) for the parts and extra unknowns of local tangent
    /// columns `cols` (ascending) only: the rest of `local` is not touched, so a step of a
    /// few columns costs those columns, not the cluster.
    pub fn retract_columns(&self, local: &mut [f64], delta: &[f64], cols: &[usize]) {
        let n6 = 6 * self.parts.len();
        let mut last_part = usize::MAX;
        for &c in cols {
            if c < n6 {
                if c / 6 != last_part {
                    last_part = c / 6;
                    self.retract_part(local, delta, last_part);
                }
            } else {
                self.retract_extra(local, delta, c);
            }
        }
    }

    /// The local state entries the columns `cols` (ascending) move.
    pub fn state_entries(&self, cols: &[usize]) -> Vec<usize> {
        let n6 = 6 * self.parts.len();
        let mut out = Vec::new();
        let mut last_part = usize::MAX;
        for &c in cols {
            if c < n6 {
                if c / 6 != last_part {
                    last_part = c / 6;
                    out.extend(7 * last_part..7 * last_part + 7);
                }
            } else {
                out.push(7 * self.parts.len() + c - n6);
            }
        }
        out
    }

    fn retract_extra(&self, local: &mut [f64], delta: &[f64], col: usize) {
        let layout = self.layout();
        let k = col - layout.extra_column(0);
        let x = &mut local[layout.extra_state(k)];
        *x = retract_extra(*x, delta[col]);
    }

    fn retract_part(&self, local: &mut [f64], delta: &[f64], k: usize) {
        let layout = self.layout();
        let (entries, cols) = (layout.part_state(k), layout.part_columns(k));
        let (Some(pose), Some(step)) = (
            local
                .get(entries.clone())
                .and_then(|s| <&[f64; 7]>::try_from(s).ok()),
            delta.get(cols).and_then(|s| <&[f64; 6]>::try_from(s).ok()),
        ) else {
            // (The layout's ranges are 7 and 6 long, inside a state and a step of the
            // cluster's size: never taken.)
            return;
        };
        let moved = retract_pose(pose, step);
        local[entries].copy_from_slice(&moved);
    }

    /// The layout of its local state and tangent space.
    pub fn layout(&self) -> crate::tangent::Layout {
        crate::tangent::Layout::new(self.parts.len(), self.extras.len())
    }

    /// Keeps its counted angles continuous from local state `old` to `new` (see
    /// [`System::update_turns`]).
    pub fn update_turns(
        &self,
        scratch: &mut Scratch,
        old: &[f64],
        new: &[f64],
        params: &mut [f64],
        out: &mut ClusterOutput,
    ) -> Result<(), SystemError> {
        if self.turns.is_empty() {
            return Ok(());
        }
        let ws = scratch.for_tape(&self.raw_angles);
        self.raw_angles
            .evaluate_residuals(ws, old, params, &mut out.raw)?;
        out.raw_before.clear();
        out.raw_before.extend_from_slice(out.raw.residuals());
        self.raw_angles
            .evaluate_residuals(ws, new, params, &mut out.raw)?;
        self.count_turns(&out.raw_before, out.raw.residuals(), params);
        Ok(())
    }

    /// The raw angles of its counted turns at local state `local` (in `out`).
    pub(crate) fn raw_angles_at<'o>(
        &self,
        scratch: &mut Scratch,
        local: &[f64],
        params: &[f64],
        out: &'o mut ClusterOutput,
    ) -> Result<&'o [f64], SystemError> {
        let ws = scratch.for_tape(&self.raw_angles);
        self.raw_angles
            .evaluate_residuals(ws, local, params, &mut out.raw)?;
        Ok(out.raw.residuals())
    }

    /// Whether its raw angles read parameters (else they depend on the state alone).
    pub(crate) fn raw_angles_read_params(&self) -> bool {
        self.raw_angles.params_needed() > 0
    }

    /// Moves each turn counter by the whole turns its raw angle wrapped by from
    /// `before` to `after`.
    pub(crate) fn count_turns(&self, before: &[f64], after: &[f64], params: &mut [f64]) {
        let two_pi = 2.0 * std::f64::consts::PI;
        for ((t, &a), &b) in self.turns.iter().zip(before).zip(after) {
            let jump = ((a - b) / two_pi).round();
            if let Some(k) = params.get_mut(t.index()) {
                *k += jump;
            }
        }
    }
}

/// Splits the system into clusters and compiles each; returns them and the fixed set
/// (equations and counted angles with no unknown) as a cluster with no parts.
/// Pushes a folded part's three rotation entries of row `r`.
#[cfg(test)]
fn push_rotation(entries: &mut Vec<(u32, u32, f64)>, r: u32, folded: Option<(usize, [f64; 3])>) {
    if let Some((part, values)) = folded {
        for (k, v) in values.into_iter().enumerate() {
            entries.push((r, (6 * part + 3 + k) as u32, v));
        }
    }
}

pub(crate) fn compile_clusters(
    system: &mut System,
) -> Result<(Vec<ClusterTape>, ClusterTape), SystemError> {
    let n_parts = system.free_parts.len();
    let groups = n_parts + system.extra.len();
    // Each unknown's group (its part, or its extra unknown), by the unknown's index:
    // unknowns are numbered densely, and a map of a 10,000-part build's 70,000 had its
    // inserts and lookups all over the memory it took.
    let mut group_of: Vec<Option<u32>> = vec![None; system.graph.var_count()];
    let mut set_group = |v: VarId, g: usize| {
        if let Some(slot) = group_of.get_mut(v.index()) {
            *slot = Some(g as u32);
        }
    };
    for (k, p) in system.free_parts.iter().enumerate() {
        for &v in &p.vars {
            set_group(v, k);
        }
    }
    for (k, e) in system.extra.iter().enumerate() {
        set_group(e.var, n_parts + k);
    }
    let mut uf = UnionFind::<usize>::new(groups.max(1));
    let has_unknowns: Vec<bool> = system
        .equations
        .iter()
        .map(|e| system.graph.has_unknowns(e.residual))
        .collect();
    let graph = &mut system.graph;
    // Each owner's unknowns as the build recorded them, else by the same walk, which
    // stops at the parts' frames (module `owners`).
    let mut recorded = system.owner_vars.cursor();
    let parts_made = (&system.part_nodes, &system.free_parts[..]);
    // Lists kept between owners (a small file's build made two for each).
    let (mut vars, mut older, mut gs) = (Vec::new(), Vec::new(), Vec::new());
    let mut first_group_of_all = |roots: &[ExprId],
                                  rows: Option<(usize, usize)>,
                                  uf: &mut UnionFind<usize>|
     -> Option<usize> {
        gs.clear();
        let found = match rows.and_then(|(start, end)| recorded.take(start, end)) {
            Some(found) => found,
            None => {
                unknowns_of(graph, roots, parts_made, &mut vars, &mut older);
                &vars[..]
            }
        };
        gs.extend(
            found
                .iter()
                .filter_map(|v| group_of.get(v.index()).copied().flatten())
                .map(|g| g as usize),
        );
        // The owner's first group is its smallest, however its unknowns were found
        // (without frames reached, already in order).
        if !gs.is_sorted() {
            gs.sort_unstable();
        }
        gs.dedup();
        for w in gs.windows(2) {
            uf.union(w[0], w[1]);
        }
        gs.first().copied()
    };
    // One walk per owner (a joint's rows share its marker frames: walking each row
    // alone went over the frames five times for a revolute). A joint's rows are one
    // cluster's, as the joint ties its parts together; a row without unknowns stays
    // with the fixed set.
    let mut eq_group: Vec<Option<usize>> = vec![None; system.equations.len()];
    let mut start = 0;
    let mut roots: Vec<ExprId> = Vec::new();
    while let Some(first) = system.equations.get(start) {
        let end = start
            + system.equations[start..]
                .iter()
                .take_while(|e| e.owner == first.owner)
                .count();
        roots.clear();
        roots.extend(system.equations[start..end].iter().map(|e| e.residual));
        let group = first_group_of_all(&roots, Some((start, end)), &mut uf);
        for (slot, &has) in eq_group[start..end]
            .iter_mut()
            .zip(&has_unknowns[start..end])
        {
            *slot = group.filter(|_| has);
        }
        start = end;
    }
    let mut first_group = |e: ExprId, uf: &mut UnionFind<usize>| first_group_of_all(&[e], None, uf);
    let turn_group: Vec<Option<usize>> = system
        .turns
        .iter()
        .map(|t| first_group(t.raw, &mut uf))
        .collect();
    let limit_group: Vec<Option<usize>> = system
        .limits
        .iter()
        .map(|l| first_group(l.value, &mut uf))
        .collect();
    // Clusters numbered by their first group (file order of parts).
    let mut index: FxHashMap<usize, usize> = FxHashMap::default();
    let mut members: Vec<ClusterMembers> = Vec::new();
    for g in 0..groups {
        let root = uf.find(g);
        let k = *index.entry(root).or_insert_with(|| {
            members.push(Default::default());
            members.len() - 1
        });
        if g < n_parts {
            members[k].parts.push(g);
        } else {
            members[k].extras.push(g - n_parts);
        }
    }
    let mut fixed_equations = Vec::new();
    let mut fixed_turns = Vec::new();
    // Each equation's cluster, then each cluster's list sized before it is filled (a
    // 10,000-part cluster's list grew by copying itself).
    let eq_cluster: Vec<Option<usize>> = eq_group
        .iter()
        .map(|g| g.and_then(|g| index.get(&uf.find(g)).copied()))
        .collect();
    let mut counts = vec![0usize; members.len()];
    for &k in eq_cluster.iter().flatten() {
        counts[k] += 1;
    }
    for (m, &n) in members.iter_mut().zip(&counts) {
        m.equations.reserve_exact(n);
    }
    for (r, k) in eq_cluster.iter().enumerate() {
        match k {
            Some(k) => members[*k].equations.push(r),
            None => fixed_equations.push(r),
        }
    }
    for (t, g) in turn_group.iter().enumerate() {
        match g.and_then(|g| index.get(&uf.find(g))) {
            Some(&k) => members[k].turns.push(t),
            None => fixed_turns.push(t),
        }
    }
    // Limits on a coordinate no unknown moves cannot be enforced and are left out.
    let mut cluster_limits: Vec<Vec<usize>> = vec![Vec::new(); members.len()];
    for (l, g) in limit_group.iter().enumerate() {
        if let Some(&k) = g.and_then(|g| index.get(&uf.find(g))) {
            cluster_limits[k].push(l);
        }
    }
    let mut clusters = Vec::with_capacity(members.len());
    for (cluster, limits) in members.into_iter().zip(cluster_limits) {
        clusters.push(compile_one(system, cluster, &limits)?);
    }
    let fixed = compile_one(
        system,
        ClusterMembers {
            parts: Vec::new(),
            extras: Vec::new(),
            equations: fixed_equations,
            turns: fixed_turns,
        },
        &[],
    )?;
    Ok((clusters, fixed))
}

/// A cluster's members: indices of its free parts, extra unknowns, equations and
/// counted angles.
#[derive(Default)]
struct ClusterMembers {
    parts: Vec<usize>,
    extras: Vec<usize>,
    equations: Vec<usize>,
    turns: Vec<usize>,
}

/// A group label per output row for
/// [`compile_local_by_shape_in`](tenon_expr::ExprGraph::compile_local_by_shape_in): the rows of
/// `equations` (system indices) grouped by their owner (one joint's rows, one drive's,
/// one motion's), then each further row (a limit side) a group of its own, `rows` in all.
/// The tape of counted angles' raw values (an `atan2` of a joint's frames each), each
/// angle a group of its own: angles of like joints share a compiled shape.
fn compile_raw_angles(
    system: &mut System,
    raws: &[ExprId],
    columns: &LocalColumns,
) -> Result<Tape, SystemError> {
    let groups: Vec<u32> = (0..raws.len() as u32).collect();
    Ok(system
        .graph
        .compile_local_values_by_shape_in(raws, &groups, columns)?)
}

pub(crate) fn owner_groups(system: &System, equations: &[usize], rows: usize) -> Vec<u32> {
    let mut groups = Vec::with_capacity(rows);
    let mut label = 0u32;
    let mut last = None;
    for &r in equations {
        let owner = system.equations.get(r).map(|e| e.owner);
        if owner != last && last.is_some() {
            label += 1;
        }
        last = owner;
        groups.push(label);
    }
    while groups.len() < rows {
        label += 1;
        groups.push(label);
    }
    groups
}

fn compile_one(
    system: &mut System,
    members: ClusterMembers,
    limits: &[usize],
) -> Result<ClusterTape, SystemError> {
    let ClusterMembers {
        parts,
        extras,
        equations,
        turns,
    } = members;
    let mut vars: Vec<VarId> = parts
        .iter()
        .flat_map(|&p| system.free_parts[p].vars)
        .collect();
    vars.extend(extras.iter().map(|&e| system.extra[e].var));
    let mut outputs: Vec<ExprId> = equations
        .iter()
        .map(|&r| system.equations[r].residual)
        .collect();
    let mut limit_rows = Vec::new();
    for &l in limits {
        let spec = system.limits[l];
        for (bound, side) in [(spec.min, LimitSide::Min), (spec.max, LimitSide::Max)] {
            if let Some(bound) = bound {
                limit_rows.push(LimitRow {
                    limit: l,
                    side,
                    row: outputs.len(),
                });
                outputs.push(system.graph.sub(spec.value, bound));
            }
        }
    }
    let columns = LocalColumns::new(&vars)?;
    let groups = owner_groups(system, &equations, outputs.len());
    let tape = system
        .graph
        .compile_local_by_shape_in(&outputs, &groups, &columns)?;
    let raws: Vec<ExprId> = turns.iter().map(|&t| system.turns[t].raw).collect();
    // Raw angles are only ever evaluated: values only, their unknowns read at the
    // cluster's columns.
    let raw_angles = compile_raw_angles(system, &raws, &columns)?;
    Ok(ClusterTape {
        system_parts: system.free_parts.len(),
        equations,
        parts: parts.into(),
        extras: extras.into(),
        vars: vars.into(),
        columns: Arc::new(columns),
        turns: turns.iter().map(|&t| system.turns[t].turns).collect(),
        limit_rows,
        tape,
        raw_angles,
        fold: std::sync::OnceLock::new(),
    })
}
