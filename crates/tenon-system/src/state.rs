//! The state of an assembly (values of the unknowns) and its tangent space: the
//! exponential-map update, the tangent Jacobian, and the turn counters.

use std::sync::Mutex;

use tenon_expr::{Tape, TapeOutput, TapeWorkspace};

use crate::build::System;
use crate::cluster::{compile_clusters, ClusterTape, Scratch};
use crate::error::SystemError;
use crate::tangent::{retract_extra, retract_pose, Layout, TangentJacobian};

/// The whole system compiled once: a local tape per cluster (residuals, Jacobian, raw
/// angles of counted turns), the fixed set, and the branch indicators. (Stage tapes cut
/// from its clusters belong to the solver that cut them.)
#[derive(Debug, Clone)]
pub struct Compiled {
    clusters: Vec<ClusterTape>,
    fixed: ClusterTape,
    branches: CachedTape,
    /// Per equation, its cluster (`clusters.len()` for the fixed set).
    cluster_of: Vec<u32>,
}

/// One stage of a block-triangular solve: some of its cluster's equations, and the local
/// tangent columns the stage moves. The equations come compiled on a tape of their own
/// (a large cluster: a stage's steps then cost the stage, not the cluster), or as rows
/// of the cluster's own tape (a small one: a tape per stage cost more to compile than
/// its evaluations saved).
#[derive(Debug, Clone)]
pub struct StageTape {
    cols: Vec<usize>,
    rows: Vec<usize>,
    tape: Option<ClusterTape>,
}

impl StageTape {
    /// A stage moving local tangent columns `cols`, its equations in `tape` (made by
    /// [`ClusterTape::restricted`]).
    pub fn new(cols: Vec<usize>, tape: ClusterTape) -> Self {
        let rows = (0..tape.equations().len()).collect();
        StageTape {
            cols,
            rows,
            tape: Some(tape),
        }
    }

    /// A stage moving local tangent columns `cols` whose equations are local rows
    /// `rows` of its cluster's own tape.
    pub fn on_cluster_tape(cols: Vec<usize>, rows: Vec<usize>) -> Self {
        StageTape {
            cols,
            rows,
            tape: None,
        }
    }

    /// The local tangent columns it moves.
    pub fn cols(&self) -> &[usize] {
        &self.cols
    }

    /// Its equations: rows of [`tape`](Self::tape), or of the cluster's tape when it
    /// has none of its own.
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }

    /// Its own tape (`None`: its rows are the cluster tape's).
    pub fn tape(&self) -> Option<&ClusterTape> {
        self.tape.as_ref()
    }
}

impl Compiled {
    /// The clusters: groups of unknowns that no equation joins, each with its own tape.
    pub fn clusters(&self) -> &[ClusterTape] {
        &self.clusters
    }

    /// The equations with no unknown (between grounded parts), as a cluster with no
    /// parts.
    pub fn fixed(&self) -> &ClusterTape {
        &self.fixed
    }

    /// The cluster holding equation `row` (`None` for the fixed set or out of range).
    pub fn cluster_of(&self, row: usize) -> Option<usize> {
        let k = *self.cluster_of.get(row)? as usize;
        (k < self.clusters.len()).then_some(k)
    }

    fn all(&self) -> impl Iterator<Item = &ClusterTape> {
        self.clusters.iter().chain(std::iter::once(&self.fixed))
    }
}

/// A tape with a spare workspace and output kept between evaluations, so a solve does
/// not allocate (and zero) the workspace's slot array at every call. Concurrent callers
/// that find the spare taken (or its lock poisoned) make their own.
struct CachedTape {
    tape: Tape,
    spare: Mutex<Option<(TapeWorkspace, TapeOutput)>>,
}

impl CachedTape {
    fn new(tape: Tape) -> Self {
        CachedTape {
            tape,
            spare: Mutex::new(None),
        }
    }

    /// Runs `f` with a workspace and output for this tape.
    fn with<R>(&self, f: impl FnOnce(&Tape, &mut TapeWorkspace, &mut TapeOutput) -> R) -> R {
        let spare = self.spare.try_lock().ok().and_then(|mut s| s.take());
        let (mut ws, mut out) =
            spare.unwrap_or_else(|| (self.tape.workspace(), self.tape.output()));
        let result = f(&self.tape, &mut ws, &mut out);
        if let Ok(mut s) = self.spare.try_lock() {
            *s = Some((ws, out));
        }
        result
    }
}

impl Clone for CachedTape {
    fn clone(&self) -> Self {
        CachedTape::new(self.tape.clone())
    }
}

impl std::fmt::Debug for CachedTape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.tape.fmt(f)
    }
}

/// A branch indicator within this of 0 is on neither branch (axes perpendicular to
/// rounding): a start there may end on either without a report.
const UNDECIDED: f64 = 1e-6;

impl System {
    /// Compiles all equations (once; evaluate many times), cluster by cluster.
    pub fn compile(&mut self) -> Result<Compiled, SystemError> {
        let (clusters, fixed) = compile_clusters(self)?;
        // The indicators not worked out in numbers (module `branch`); one group per
        // indicator: those of joints of one kind share a shape.
        let indicators = &self.branches.expressions;
        let groups: Vec<u32> = (0..indicators.len() as u32).collect();
        let branches = self.graph.compile_by_shape(indicators, &groups, &[])?;
        let mut cluster_of = vec![clusters.len() as u32; self.equations.len()];
        for (k, c) in clusters.iter().enumerate() {
            for &r in c.equations() {
                if let Some(slot) = cluster_of.get_mut(r) {
                    *slot = k as u32;
                }
            }
        }
        Ok(Compiled {
            cluster_of,
            clusters,
            fixed,
            branches: CachedTape::new(branches),
        })
    }

    /// The layout of states and tangent steps (module `tangent`).
    pub fn layout(&self) -> Layout {
        Layout::new(self.free_parts.len(), self.extra.len())
    }

    /// Dimension of the tangent space: 6 per free part plus one per extra unknown.
    pub fn tangent_dimension(&self) -> usize {
        self.layout().dimension()
    }

    /// Residuals and the tangent-space Jacobian at `state`: `J_T = [J_p, J_q G(q)]`
    /// with `G(q) = 1/2 [-v^T; w I - [v]x]` for `q = (w, v)`, the derivative of
    /// `exp(dtheta) * q` at `dtheta = 0`.
    pub fn tangent_jacobian(
        &self,
        compiled: &Compiled,
        state: &[f64],
        params: &[f64],
    ) -> Result<(Vec<f64>, TangentJacobian), SystemError> {
        let all: Vec<usize> = (0..self.equations.len()).collect();
        self.tangent_jacobian_of_rows(compiled, state, params, &all)
    }

    /// [`tangent_jacobian`](Self::tangent_jacobian) for some equations only: their
    /// residuals, in the order given, and a Jacobian whose row `k` is equation
    /// `rows[k]` (rows out of range are left empty). Every cluster holding one of them
    /// is evaluated.
    pub fn tangent_jacobian_of_rows(
        &self,
        compiled: &Compiled,
        state: &[f64],
        params: &[f64],
        rows: &[usize],
    ) -> Result<(Vec<f64>, TangentJacobian), SystemError> {
        self.check_lengths(state, params)?;
        // (row, position in `rows`), by row: a row asked for twice is at both positions.
        let mut out_of: Vec<(usize, u32)> = rows
            .iter()
            .enumerate()
            .map(|(k, &r)| (r, k as u32))
            .collect();
        out_of.sort_unstable();
        let positions = |r: usize| -> &[(usize, u32)] {
            let from = out_of.partition_point(|&(row, _)| row < r);
            let to = from + out_of[from..].partition_point(|&(row, _)| row == r);
            &out_of[from..to]
        };
        let mut residuals = vec![0.0; rows.len()];
        let mut entries = Vec::new();
        let mut scratch = Scratch::take_thread_local();
        let mut holding: Vec<usize> = rows
            .iter()
            .map(|&r| {
                compiled
                    .cluster_of
                    .get(r)
                    .map_or(compiled.clusters.len(), |&k| k as usize)
            })
            .collect();
        holding.sort_unstable();
        holding.dedup();
        for cluster in holding.iter().filter_map(|&k| {
            compiled
                .clusters
                .get(k)
                .or((k == compiled.clusters.len()).then_some(&compiled.fixed))
        }) {
            let wanted: Vec<(usize, &[(usize, u32)])> = cluster
                .equations()
                .iter()
                .enumerate()
                .map(|(local, &r)| (local, positions(r)))
                .filter(|(_, ks)| !ks.is_empty())
                .collect();
            if wanted.is_empty() {
                continue;
            }
            let local = cluster.gather(state);
            let mut out = cluster.output();
            cluster.evaluate(&mut scratch, &local, params, &mut out)?;
            let local_rows: Vec<usize> = wanted.iter().map(|&(l, _)| l).collect();
            let jac = cluster.tangent_jacobian(&local, &out, &local_rows);
            for &(l, ks) in &wanted {
                for &(_, k) in ks {
                    residuals[k as usize] = out.residuals()[l];
                }
            }
            for &(i, c, v) in &jac.entries {
                for &(_, k) in wanted[i as usize].1 {
                    entries.push((k, cluster.global_column(c as usize) as u32, v));
                }
            }
        }
        Scratch::give_back(scratch);
        Ok((
            residuals,
            TangentJacobian {
                rows: rows.len(),
                columns: self.tangent_dimension(),
                entries,
            },
        ))
    }

    /// Residuals only.
    pub fn residuals(
        &self,
        compiled: &Compiled,
        state: &[f64],
        params: &[f64],
    ) -> Result<Vec<f64>, SystemError> {
        self.check_lengths(state, params)?;
        let mut r = vec![0.0; self.equations.len()];
        let mut scratch = Scratch::take_thread_local();
        for cluster in compiled.all() {
            let local = cluster.gather(state);
            let mut out = cluster.output();
            cluster.evaluate_residuals(&mut scratch, &local, params, &mut out)?;
            for (&row, &value) in cluster.equations().iter().zip(out.residuals()) {
                if let Some(x) = r.get_mut(row) {
                    *x = value;
                }
            }
        }
        Scratch::give_back(scratch);
        Ok(r)
    }

    /// Applies a tangent step: `p += dp`, `q <- exp(dtheta) * q` (exact exponential map,
    /// renormalized), extra unknowns `+= d` and wrapped into `[0, 2 pi)`.
    pub fn retract(&self, state: &mut [f64], delta: &[f64]) -> Result<(), SystemError> {
        crate::build::check_length("state", self.state_len(), state.len())?;
        crate::build::check_length("step", self.tangent_dimension(), delta.len())?;
        let layout = self.layout();
        for (k, part) in self.free_parts.iter().enumerate() {
            let pose = part.vars.map(|v| state[v.index()]);
            let cols = layout.part_columns(k);
            let step = std::array::from_fn(|i| delta[cols.start + i]);
            for (var, x) in part.vars.iter().zip(retract_pose(&pose, &step)) {
                state[var.index()] = x;
            }
        }
        for (k, e) in self.extra.iter().enumerate() {
            let x = &mut state[e.var.index()];
            *x = retract_extra(*x, delta[layout.extra_column(k)]);
        }
        Ok(())
    }

    /// Joints that changed branch from `before` to `after`: an aligned axis or a locked
    /// twist (`z_i . z_j`, `x_i . x_j`; the joint's equations allow either sign) whose
    /// sign changed, either way; a start within rounding of perpendicular is on neither
    /// branch. Each joint is listed once.
    pub fn flipped(
        &self,
        compiled: &Compiled,
        before: &[f64],
        after: &[f64],
        params: &[f64],
    ) -> Result<Vec<tenon_model::JointKey>, SystemError> {
        self.check_lengths(before, params)?;
        self.check_lengths(after, params)?;
        if self.branches.is_empty() {
            return Ok(Vec::new());
        }
        let (a, b) = if self.branches.expressions.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            compiled.branches.with(|tape, ws, out| {
                tape.evaluate_residuals(ws, before, params, out)?;
                let a = out.residuals().to_vec();
                tape.evaluate_residuals(ws, after, params, out)?;
                Ok::<_, SystemError>((a, out.residuals().to_vec()))
            })?
        };
        let (a, b) = (
            self.branches.values(before, &a),
            self.branches.values(after, &b),
        );
        let mut flipped = Vec::new();
        for ((&(joint, _), &x), &y) in self.branches.indicators.iter().zip(&a).zip(&b) {
            // The branch nearest the start is its indicator's sign, either way: a part
            // started 150 degrees off that ends aligned changed branch as surely as one
            // started aligned that ends reversed. Near zero the branch is undecided.
            let changed = (x > UNDECIDED && y < -UNDECIDED) || (x < -UNDECIDED && y > UNDECIDED);
            if changed && !flipped.contains(&joint) {
                flipped.push(joint);
            }
        }
        Ok(flipped)
    }

    /// [`update_turns`](Self::update_turns) for a sequence of moves (a kinematic run's
    /// frames and corrections): the raw angles at `new` are kept in `cache`, so the next
    /// move from that state (and parameters, where the raw angles read any) does not
    /// evaluate them again. The counters move exactly as `update_turns` moves them.
    pub fn update_turns_cached(
        &self,
        compiled: &Compiled,
        cache: &mut TurnCache,
        old: &[f64],
        new: &[f64],
        params: &mut [f64],
    ) -> Result<(), SystemError> {
        self.check_lengths(old, params)?;
        self.check_lengths(new, params)?;
        if self.turns.is_empty() {
            return Ok(());
        }
        let clusters = || compiled.all().filter(|c| c.has_turns());
        let count = clusters().count();
        let reads_params = clusters().any(|c| c.raw_angles_read_params());
        let known = cache.raw.len() == count
            && cache.state.as_slice() == old
            && (!reads_params || cache.params.as_slice() == &*params);
        let mut scratch = Scratch::take_thread_local();
        cache.raw.resize_with(count, Vec::new);
        // The outputs and the local state are kept with the cache (each made for its
        // cluster's tape when first met).
        if cache.outputs.len() != count
            || !clusters()
                .zip(&cache.outputs)
                .all(|(c, out)| c.owns_turn_output(out))
        {
            cache.outputs = clusters().map(ClusterTape::turn_output).collect();
        }
        let mut local = std::mem::take(&mut cache.local);
        let mut result = Ok(());
        for ((cluster, raw), out) in clusters().zip(&mut cache.raw).zip(&mut cache.outputs) {
            if !known {
                cluster.gather_into(old, &mut local);
                match cluster.raw_angles_at(&mut scratch, &local, params, out) {
                    Ok(before) => {
                        raw.clear();
                        raw.extend_from_slice(before);
                    }
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            cluster.gather_into(new, &mut local);
            match cluster.raw_angles_at(&mut scratch, &local, params, out) {
                Ok(after) => {
                    cluster.count_turns(raw, after, params);
                    raw.clear();
                    raw.extend_from_slice(after);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        cache.local = local;
        Scratch::give_back(scratch);
        if result.is_err() {
            cache.raw.clear();
            cache.state.clear();
            return result;
        }
        cache.state.clear();
        cache.state.extend_from_slice(new);
        cache.params.clear();
        cache.params.extend_from_slice(params);
        Ok(())
    }

    /// Moves `state` by the tangent step `delta` ([`retract`](Self::retract)) and its
    /// turn counters (in `params`) with it, as
    /// [`update_turns_cached`](Self::update_turns_cached) does (the state before the
    /// move is kept in `cache`'s room, not allocated).
    pub fn retract_counting_turns(
        &self,
        compiled: &Compiled,
        cache: &mut TurnCache,
        (state, params): (&mut [f64], &mut [f64]),
        delta: &[f64],
    ) -> Result<(), SystemError> {
        let mut before = std::mem::take(&mut cache.before);
        before.clear();
        before.extend_from_slice(state);
        let result = self
            .retract(state, delta)
            .and_then(|()| self.update_turns_cached(compiled, cache, &before, state, params));
        cache.before = before;
        result
    }

    /// Keeps counted angles continuous from `old` to `new`: each turn counter moves by
    /// the whole turns its raw angle wrapped by (steps between calls must turn less than
    /// half a turn).
    pub fn update_turns(
        &self,
        compiled: &Compiled,
        old: &[f64],
        new: &[f64],
        params: &mut [f64],
    ) -> Result<(), SystemError> {
        // With nothing kept, the raw angles are evaluated at both ends.
        self.update_turns_cached(compiled, &mut TurnCache::default(), old, new, params)
    }
}

/// The raw angles of a system's counted turns at one state, kept between moves by
/// [`System::update_turns_cached`].
#[derive(Debug, Clone, Default)]
pub struct TurnCache {
    /// The state and parameters they were evaluated at.
    state: Vec<f64>,
    params: Vec<f64>,
    /// Per cluster with counted turns, in order: the raw angles.
    raw: Vec<Vec<f64>>,
    /// Per such cluster, its output (room for the raw angles' evaluation); and room for
    /// a cluster's local state.
    outputs: Vec<crate::cluster::ClusterOutput>,
    local: Vec<f64>,
    /// Room for the state before a move.
    before: Vec<f64>,
}
