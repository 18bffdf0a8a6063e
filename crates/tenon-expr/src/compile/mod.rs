//! Compilation of outputs and their sparse Jacobian into a [`Tape`].
//!
//! Three steps, all symbolic, done once:
//! 1. the Jacobian: for every output, the unknowns it depends on that are columns, and
//!    the derivative with respect to each; entries that simplify to the constant 0 are
//!    structural zeros and left out of the pattern;
//! 2. scheduling: each stream's roots (outputs; or each output followed by its Jacobian
//!    entries) are walked depth-first, and every node is emitted the first time a root
//!    needs it, so a row's instructions sit together;
//! 3. slot allocation: each value gets a slot when computed, and the slot is free again
//!    after the value's last reader (linear scan), so the number of slots is the largest
//!    number of values alive at once, not the number of nodes.

use rustc_hash::FxHashMap;

use crate::batch::{Batch, BatchBuilder, MIN_BATCH};
use crate::error::ExprError;
use crate::graph::{ExprGraph, MAX_POWI};
use crate::node::{Binary, ExprId, Node, SplineId, Unary, VarId};
use crate::shape::{range_of, InstanceMap, LeafRanges, Leaves, Template};
use crate::tape::{narrow_copy, Code, Instr, JacobianPattern, Op, Stream, Tape, NARROW_SLOTS};

mod copy;

use copy::{append_all, append_both, append_both_narrow};

/// The unknowns a tape reads, each with its column (its index in the list given),
/// indexed once for any number of tapes over them.
#[derive(Debug, Clone)]
pub struct LocalColumns {
    of: ColumnOf,
    len: usize,
}

impl LocalColumns {
    /// Indexes `columns`; an unknown listed twice is an error.
    pub fn new(columns: &[VarId]) -> Result<LocalColumns, ExprError> {
        Ok(LocalColumns {
            of: ColumnOf::new(columns)?,
            len: columns.len(),
        })
    }
}

/// The column of each unknown. A cluster's unknowns were mostly made one part after
/// another, so their ids lie close together: then an array over their span, read where
/// the ids lead (a large compile's lookups had been a tenth of it, each a cache miss at
/// a hashed place); unknowns spread thinly over the ids, a hash map.
#[derive(Debug, Clone)]
enum ColumnOf {
    /// `columns[v - first]` is `v`'s column, [`NOT_A_COLUMN`] for an id between that is
    /// not one.
    Span {
        first: u32,
        columns: Vec<u32>,
    },
    Scattered(FxHashMap<VarId, u32>),
}

/// An id in a [`ColumnOf::Span`] that is not a column.
const NOT_A_COLUMN: u32 = u32::MAX;

/// Ids spanned per column at most for the array (with [`SPAN_SLACK`] more): the array
/// then takes at most a few times the map's memory.
const SPAN_PER_COLUMN: usize = 4;
/// Ids the array may span beyond [`SPAN_PER_COLUMN`] per column (a few columns far
/// apart).
const SPAN_SLACK: usize = 64;

impl ColumnOf {
    fn new(columns: &[VarId]) -> Result<ColumnOf, ExprError> {
        let (first, last) = columns
            .iter()
            .fold((u32::MAX, 0), |(lo, hi), v| (lo.min(v.0), hi.max(v.0)));
        let span = (last as usize + 1).saturating_sub(first as usize);
        if !columns.is_empty() && span <= SPAN_PER_COLUMN * columns.len() + SPAN_SLACK {
            let mut of = vec![NOT_A_COLUMN; span];
            for (k, &v) in columns.iter().enumerate() {
                let slot = &mut of[(v.0 - first) as usize];
                if *slot != NOT_A_COLUMN {
                    return Err(ExprError::DuplicateColumn(v));
                }
                *slot = k as u32;
            }
            return Ok(ColumnOf::Span { first, columns: of });
        }
        let mut of: FxHashMap<VarId, u32> = FxHashMap::default();
        of.reserve(columns.len());
        for (k, &v) in columns.iter().enumerate() {
            if of.insert(v, k as u32).is_some() {
                return Err(ExprError::DuplicateColumn(v));
            }
        }
        Ok(ColumnOf::Scattered(of))
    }

    /// `v`'s column, if it is one.
    fn get(&self, v: VarId) -> Option<u32> {
        match self {
            ColumnOf::Span { first, columns } => {
                v.0.checked_sub(*first)
                    .and_then(|k| columns.get(k as usize))
                    .copied()
                    .filter(|&c| c != NOT_A_COLUMN)
            }
            ColumnOf::Scattered(of) => of.get(&v).copied(),
        }
    }
}

impl ExprGraph {
    /// Compiles `outputs` and their Jacobian with respect to `columns` into a tape.
    ///
    /// Outputs may depend on unknowns that are not columns (values known from earlier
    /// blocks); those are read at evaluation but get no Jacobian column.
    pub fn compile(&mut self, outputs: &[ExprId], columns: &[VarId]) -> Result<Tape, ExprError> {
        let columns = LocalColumns::new(columns)?;
        self.compile_with(outputs, &columns, Form::default())
    }

    /// Like [`compile`](Self::compile), with the instructions reordered so that like
    /// operations run together where dependences allow: evaluation is faster (about a
    /// third on a four-bar's acceleration tape) and compilation slower, so it pays for
    /// tapes evaluated many times (a kinematic run's, once per frame).
    pub fn compile_grouped(
        &mut self,
        outputs: &[ExprId],
        columns: &[VarId],
    ) -> Result<Tape, ExprError> {
        let columns = LocalColumns::new(columns)?;
        let form = Form {
            grouped: true,
            ..Form::default()
        };
        self.compile_with(outputs, &columns, form)
    }

    /// Like [`compile`](Self::compile), but the tape reads unknown `columns[k]` at
    /// `vars[k]` (a short vector holding only these unknowns, e.g. one cluster's), so
    /// evaluation touches nothing else. Every unknown the outputs use must be a column.
    pub fn compile_local(
        &mut self,
        outputs: &[ExprId],
        columns: &[VarId],
    ) -> Result<Tape, ExprError> {
        let columns = LocalColumns::new(columns)?;
        self.compile_with(outputs, &columns, Form::LOCAL)
    }

    /// [`compile_local_in`](Self::compile_local_in) for outputs that come in groups of
    /// like form: `groups` holds a label per output, and consecutive outputs with the same
    /// label form a group (one joint's rows, say). Groups that are the same expression up
    /// to their unknowns, parameters and constants are differentiated and scheduled once,
    /// and copied for each (see the module `shape`): the compile costs about one walk of
    /// each group's nodes instead of its derivatives and scheduling. Values are the same
    /// as [`compile_local_in`](Self::compile_local_in)'s to rounding; subexpressions
    /// shared by two groups are computed by each. With `groups` of another length than
    /// `outputs`, no group is shaped.
    pub fn compile_local_by_shape_in(
        &mut self,
        outputs: &[ExprId],
        groups: &[u32],
        columns: &LocalColumns,
    ) -> Result<Tape, ExprError> {
        let parts = self.compile_parts(outputs, columns, Form::LOCAL, Some(groups))?;
        Ok(parts.into_tape())
    }

    /// [`compile_local_by_shape_in`](Self::compile_local_by_shape_in) for outputs that
    /// are only ever evaluated: their values, read at the columns, and no Jacobian
    /// (templates and instances hold the value code alone).
    pub fn compile_local_values_by_shape_in(
        &mut self,
        outputs: &[ExprId],
        groups: &[u32],
        columns: &LocalColumns,
    ) -> Result<Tape, ExprError> {
        let form = Form {
            values: true,
            ..Form::LOCAL
        };
        let parts = self.compile_parts(outputs, columns, form, Some(groups))?;
        Ok(parts.into_tape())
    }

    /// [`compile`](Self::compile) by shape, like
    /// [`compile_local_by_shape_in`](Self::compile_local_by_shape_in): unknowns are read
    /// at their global index, and with no columns nothing is differentiated (a tape of
    /// values only, such as indicators).
    pub fn compile_by_shape(
        &mut self,
        outputs: &[ExprId],
        groups: &[u32],
        columns: &[VarId],
    ) -> Result<Tape, ExprError> {
        let columns = LocalColumns::new(columns)?;
        let parts = self.compile_parts(outputs, &columns, Form::default(), Some(groups))?;
        Ok(parts.into_tape())
    }

    /// [`compile_local`](Self::compile_local) with the columns indexed once by
    /// [`LocalColumns::new`]: many tapes over the same unknowns (the stages of one large
    /// cluster) then cost their own outputs, not the number of unknowns each.
    pub fn compile_local_in(
        &mut self,
        outputs: &[ExprId],
        columns: &LocalColumns,
    ) -> Result<Tape, ExprError> {
        self.compile_with(outputs, columns, Form::LOCAL)
    }

    fn compile_with(
        &mut self,
        outputs: &[ExprId],
        columns: &LocalColumns,
        form: Form,
    ) -> Result<Tape, ExprError> {
        let parts = self.compile_parts(outputs, columns, form, None)?;
        Ok(parts.into_tape())
    }

    /// Compiles `outputs` into instruction streams and a Jacobian pattern. With `groups`
    /// (a label per output; consecutive outputs with one label form a group), each group
    /// that can be shaped is an instance of its shape's template (module `shape`; unknowns
    /// that are not columns get their entries computed into the scratch cell); the other
    /// outputs are differentiated and scheduled here. The grouped form (like operations
    /// together) shapes nothing.
    pub(crate) fn compile_parts(
        &mut self,
        outputs: &[ExprId],
        columns: &LocalColumns,
        form: Form,
        groups: Option<&[u32]>,
    ) -> Result<CompiledParts, ExprError> {
        let n = self.node_count();
        if let Some(&bad) = outputs.iter().find(|e| e.index() >= n) {
            return Err(ExprError::ForeignId(bad));
        }
        let rows = outputs.len();
        let groups = groups.filter(|g| g.len() == rows && !form.grouped);
        let mut scratch = std::mem::take(&mut self.compile_scratch);
        let mut instances = match groups {
            Some(groups) => {
                self.shaped_instances(outputs, groups, columns, form, scratch.instances)?
            }
            None => scratch.instances,
        };
        let mut instance_of_row = vec![u32::MAX; rows];
        for (i, inst) in instances.list.iter().enumerate() {
            let rows_of = self
                .templates
                .get(inst.template)
                .map_or(0, |t| t.pattern().rows());
            for slot in instance_of_row
                .iter_mut()
                .skip(inst.first_row)
                .take(rows_of)
            {
                *slot = i as u32;
            }
        }
        let column_of = &columns.of;

        // The pattern, row by row: a shaped row's columns are its template's, moved to
        // the instance's unknowns and sorted again; the others differentiated here.
        let mut row_start = Vec::with_capacity(rows + 1);
        // Shaped rows' entries are known; a row compiled here is guessed at eight.
        let unshaped = instance_of_row.iter().filter(|&&i| i == u32::MAX).count();
        let room = instances.entry_cells.len() + 8 * unshaped;
        let mut cols: Vec<u32> = Vec::with_capacity(room);
        // Entry expressions of rows compiled here (`None` for shaped rows' entries).
        let mut entries: Vec<Option<ExprId>> = Vec::with_capacity(room);
        row_start.push(0u32);
        let mut row: Vec<(u32, ExprId)> = Vec::new();
        let mut shaped_row: Vec<(u32, u32)> = Vec::new();
        for (r, &out) in outputs.iter().enumerate() {
            match instances.list.get(instance_of_row[r] as usize).copied() {
                Some(inst) => {
                    let Some(p) = self.templates.get(inst.template).map(Template::pattern) else {
                        row_start.push(cols.len() as u32);
                        continue;
                    };
                    let local = r - inst.first_row;
                    let (a, b) = (p.row_start[local] as usize, p.row_start[local + 1] as usize);
                    let leaf_column = range_of(&instances.leaf_column, inst.leaves.vars);
                    shaped_row.clear();
                    for (j, &c) in p.cols.iter().enumerate().take(b).skip(a) {
                        // An unknown that is not a column (a global compile's): its
                        // entry is computed into the scratch cell.
                        match leaf_column.get(c as usize) {
                            Some(&column) if column != u32::MAX => {
                                shaped_row.push((column, j as u32));
                            }
                            _ => {}
                        }
                    }
                    shaped_row.sort_unstable();
                    let entry_cells = instances
                        .entry_cells
                        .get_mut(inst.entries.0 as usize..inst.entries.1 as usize)
                        .unwrap_or(&mut []);
                    for &(c, j) in &shaped_row {
                        if let Some(cell) = entry_cells.get_mut(j as usize) {
                            *cell = 1 + rows as u32 + cols.len() as u32;
                        }
                        cols.push(c);
                        entries.push(None);
                    }
                }
                None if form.values => {}
                None => {
                    row.clear();
                    for v in self.vars_of_marked(out) {
                        if let Some(c) = column_of.get(v) {
                            let d = self.derivative(out, v);
                            if self.as_const(d) != Some(0.0) {
                                row.push((c, d));
                            }
                        }
                    }
                    row.sort_unstable_by_key(|&(c, _)| c);
                    for &(c, d) in &row {
                        cols.push(c);
                        entries.push(Some(d));
                    }
                }
            }
            row_start.push(cols.len() as u32);
        }
        let pattern = JacobianPattern {
            rows,
            columns: columns.len,
            row_start,
            cols,
        };

        let mut consts = ConstPool {
            index: scratch.const_index,
            values: Vec::new(),
        };
        // Output cells: 0 is scratch, then residuals, then Jacobian values.
        let mut residual_roots = Vec::new();
        let mut full_roots = Vec::new();
        // Constant Jacobian entries are written once, when an output buffer is made.
        let mut constant_entries = Vec::new();
        for (r, &out) in outputs.iter().enumerate() {
            if instance_of_row[r] != u32::MAX {
                continue;
            }
            let cell = 1 + r as u32;
            residual_roots.push(Root::new(out, cell));
            full_roots.push(Root::new(out, cell));
            let (a, b) = (
                pattern.row_start[r] as usize,
                pattern.row_start[r + 1] as usize,
            );
            for (k, e) in entries.iter().enumerate().take(b).skip(a) {
                let Some(e) = *e else { continue };
                let cell = 1 + rows as u32 + k as u32;
                match self.as_const(e) {
                    Some(c) => constant_entries.push((cell, c)),
                    None => full_roots.push(Root::new(e, cell)),
                }
            }
        }
        let mut needed = Needed {
            vars: 0,
            params: 0,
            local: form.local.then_some(column_of),
            foreign: None,
        };
        let residual = schedule(self, &residual_roots, &mut consts, &mut needed, form);
        let full = schedule(self, &full_roots, &mut consts, &mut needed, form);
        if let Some(v) = needed.foreign {
            return Err(ExprError::NotAColumn(v));
        }
        let (residual, full, batches) = with_instances(
            &self.templates,
            (residual, full),
            &instances,
            &mut consts,
            &mut needed,
        );
        // Sized at once (a large cluster's instances hold hundreds of thousands).
        let more: usize = instances
            .list
            .iter()
            .filter_map(|inst| self.templates.get(inst.template))
            .map(|t| t.parts.constant_entries.len())
            .sum();
        constant_entries.reserve_exact(more);
        for inst in &instances.list {
            let Some(t) = self.templates.get(inst.template) else {
                continue;
            };
            let map = instances.map(inst);
            for &(cell, value) in &t.parts.constant_entries {
                constant_entries.push((map.cell(t, cell), value));
            }
        }
        scratch.instances = instances;
        scratch.const_index = consts.index;
        self.compile_scratch = scratch.recycled();
        Ok(CompiledParts {
            residual,
            full,
            batches,
            constant_entries,
            consts: consts.values,
            pattern,
            vars_needed: needed.vars,
            params_needed: needed.params,
        })
    }

    /// The shaped groups of `outputs`, each with its template (compiled if new) and where
    /// its leaves are read.
    fn shaped_instances(
        &mut self,
        outputs: &[ExprId],
        groups: &[u32],
        columns: &LocalColumns,
        form: Form,
        mut instances: Instances,
    ) -> Result<Instances, ExprError> {
        let jacobian = columns.len > 0 && !form.values;
        // Each group's shape is looked up as soon as it is made: the shapes of a large
        // cluster, all held at once, would be hundreds of megabytes.
        instances.clear();
        // The lists are sized from the first group times the number of groups (groups
        // of one compile are mostly alike), not grown a push at a time.
        let group_count = 1 + groups.windows(2).filter(|w| w[0] != w[1]).count();
        let mut sized = false;
        let mut start = 0;
        while start < outputs.len() {
            let label = groups.get(start);
            let mut end = start + 1;
            while end < outputs.len() && groups.get(end) == label {
                end += 1;
            }
            let first_row = start;
            start = end;
            let Some((template, leaves)) =
                self.shaped_group(&outputs[first_row..end], jacobian, &mut instances.leaves)?
            else {
                continue;
            };
            if !sized {
                sized = true;
                let nnz = self
                    .templates
                    .get(template)
                    .map_or(0, |t| t.pattern().nnz());
                instances.reserve(group_count, leaves, nnz);
            }
            let vars = instances.leaves.vars_at(leaves);
            for &v in vars {
                let column = columns.of.get(v).unwrap_or(u32::MAX);
                if form.local && column == u32::MAX {
                    return Err(ExprError::NotAColumn(v));
                }
                instances.leaf_column.push(column);
                instances
                    .var_index
                    .push(if form.local { column } else { v.0 });
            }
            let nnz = self
                .templates
                .get(template)
                .map_or(0, |t| t.pattern().nnz());
            let first_entry = instances.entry_cells.len() as u32;
            instances
                .entry_cells
                .resize(instances.entry_cells.len() + nnz, 0);
            instances.list.push(Instance {
                template,
                first_row,
                leaves,
                entries: (first_entry, instances.entry_cells.len() as u32),
            });
        }
        Ok(instances)
    }
}

/// The compiled streams and pattern of some outputs, before they become a [`Tape`] (a
/// template's stay in this form, to be copied into instances).
#[derive(Clone, Debug)]
pub(crate) struct CompiledParts {
    pub(crate) residual: Code,
    pub(crate) full: Code,
    /// Instances run side by side after the residual and the full stream (none in a
    /// template's parts).
    pub(crate) batches: (Vec<Batch>, Vec<Batch>),
    pub(crate) constant_entries: Vec<(u32, f64)>,
    pub(crate) consts: Vec<f64>,
    pub(crate) pattern: JacobianPattern,
    vars_needed: usize,
    params_needed: usize,
}

impl CompiledParts {
    fn into_tape(self) -> Tape {
        Tape {
            residual_code: self.residual.narrowed(),
            full_code: self.full.narrowed(),
            residual_batches: self.batches.0,
            full_batches: self.batches.1,
            constant_entries: self.constant_entries,
            id: next_tape_id(),
            consts: self.consts,
            pattern: self.pattern,
            vars_needed: self.vars_needed,
            params_needed: self.params_needed,
        }
    }
}

/// A shaped group of a compile: its template, its first output row, where its leaves
/// are among [`Instances::leaves`], and where the output cells of its template's
/// Jacobian entries are among [`Instances::entry_cells`].
#[derive(Clone, Copy)]
struct Instance {
    template: u32,
    first_row: usize,
    leaves: LeafRanges,
    entries: (u32, u32),
}

/// Lists a compile fills and empties again, kept in the graph between its compiles (a
/// small file's build made some forty of them, a compile of each cluster making seven
/// and a hash map).
#[derive(Default)]
pub(crate) struct CompileScratch {
    instances: Instances,
    const_index: FxHashMap<u64, u32>,
}

/// A copy of a graph starts with empty lists (they hold nothing between compiles).
impl Clone for CompileScratch {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for CompileScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompileScratch")
    }
}

/// Most bytes of room [`CompileScratch`] keeps after a compile: a large cluster's lists
/// are let go rather than held for the graph's life.
const KEPT_SCRATCH: usize = 256 << 10;

impl CompileScratch {
    /// Emptied, and kept only when its room is small (see [`KEPT_SCRATCH`]).
    fn recycled(mut self) -> Self {
        self.instances.clear();
        self.const_index.clear();
        let i = &self.instances;
        let bytes = i.list.capacity() * std::mem::size_of::<Instance>()
            + i.leaves.capacity_bytes()
            + (i.var_index.capacity() + i.leaf_column.capacity() + i.entry_cells.capacity()) * 4
            + self.const_index.capacity() * 16;
        if bytes <= KEPT_SCRATCH {
            self
        } else {
            Self::default()
        }
    }
}

/// Most entries a compile's list is given room for before it is filled.
pub(crate) const RESERVE_CAP: usize = 1 << 20;

/// The shaped groups of a compile, their lists end to end (a large cluster has tens of
/// thousands of groups: lists of their own cost an allocation and a few regrowths each).
#[derive(Default)]
pub(crate) struct Instances {
    list: Vec<Instance>,
    leaves: Leaves,
    /// Per unknown leaf (parallel to `leaves.vars`): the index it is read at (column or
    /// global index), and its column (`u32::MAX`: not a column).
    var_index: Vec<u32>,
    leaf_column: Vec<u32>,
    entry_cells: Vec<u32>,
}

impl Instances {
    /// Room for `groups` groups with as many leaves as those at `first` (the first's)
    /// and `nnz` Jacobian entries each.
    /// Each list's room is capped at [`RESERVE_CAP`] (a first group far larger than the
    /// others must not claim their memory many times over; past the cap, lists grow).
    fn reserve(&mut self, groups: usize, first: LeafRanges, nnz: usize) {
        let vars = (first.vars.1 - first.vars.0) as usize;
        let room = |per: usize| groups.saturating_mul(per).min(RESERVE_CAP);
        self.list.reserve(room(1));
        self.entry_cells.reserve(room(nnz));
        self.var_index.reserve(room(vars));
        self.leaf_column.reserve(room(vars));
        self.leaves.reserve(groups, first);
    }

    fn map(&self, inst: &Instance) -> InstanceMap<'_> {
        InstanceMap {
            var_index: range_of(&self.var_index, inst.leaves.vars),
            params: self.leaves.params_at(inst.leaves),
            consts: self.leaves.consts_at(inst.leaves),
            first_cell: 1 + inst.first_row as u32,
            entry_cells: range_of(&self.entry_cells, inst.entries),
        }
    }

    fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    fn clear(&mut self) {
        self.list.clear();
        self.leaves.clear();
        self.var_index.clear();
        self.leaf_column.clear();
        self.entry_cells.clear();
    }
}

/// Instances run side by side after the residual and the full stream.
type Batches = (Vec<Batch>, Vec<Batch>);

/// The scheduled streams of a compile with its instances: the instances of a template
/// used [`MIN_BATCH`] times or more run as batches (module `batch`); the others are
/// appended to the streams, built narrow directly where every slot fits `u16` (the
/// usual case; building them wide to copy them narrow touched twice the memory), wide
/// otherwise. Without instances the streams stay wide (templates are kept in that form).
fn with_instances(
    templates: &crate::shape::Templates,
    (mut residual, mut full): (Stream<u32>, Stream<u32>),
    instances: &Instances,
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
) -> (Code, Code, Batches) {
    if instances.is_empty() {
        return (Code::Wide(residual), Code::Wide(full), Batches::default());
    }
    let (batches, batched) = batches_of(templates, instances, consts, needed);
    let copied = |t: u32| !batched.get(t as usize).copied().unwrap_or(false);
    // Sized once: growing the streams by doubling copied them again and again.
    let (mut more_residual, mut more_full) = (0, 0);
    let mut slots = residual.slots.max(full.slots);
    for inst in instances.list.iter().filter(|i| copied(i.template)) {
        if let Some(t) = templates.get(inst.template) {
            more_residual += t.parts.residual.len();
            more_full += t.parts.full.len();
            slots = slots
                .max(t.parts.residual.slots())
                .max(t.parts.full.slots());
        }
    }
    if slots <= NARROW_SLOTS {
        if let (Some(mut r), Some(mut f)) = (narrow_copy(&residual), narrow_copy(&full)) {
            r.instrs.reserve_exact(more_residual);
            f.instrs.reserve_exact(more_full);
            let appended = append_all(templates, instances, &copied, |t, map| {
                append_both_narrow((&mut r, &mut f), (t, map), consts, needed)
            });
            if appended {
                return (Code::Narrow(r), Code::Narrow(f), batches);
            }
        }
    }
    residual.instrs.reserve_exact(more_residual);
    full.instrs.reserve_exact(more_full);
    append_all(templates, instances, &copied, |t, map| {
        append_both((&mut residual, &mut full), (t, map), consts, needed)
    });
    (Code::Wide(residual), Code::Wide(full), batches)
}

/// The batches of the templates used [`MIN_BATCH`] times or more, in the order of
/// their first instances, and per template whether it is batched.
fn batches_of(
    templates: &crate::shape::Templates,
    instances: &Instances,
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
) -> (Batches, Vec<bool>) {
    let mut count = vec![0usize; templates.len()];
    for inst in &instances.list {
        if let Some(c) = count.get_mut(inst.template as usize) {
            *c += 1;
        }
    }
    let mut builder_of: Vec<Option<usize>> = vec![None; templates.len()];
    let mut builders: Vec<(u32, BatchBuilder, BatchBuilder)> = Vec::new();
    for inst in &instances.list {
        let t = inst.template as usize;
        let (Some(&n), Some(arc)) = (count.get(t), templates.shared(inst.template)) else {
            continue;
        };
        if n < MIN_BATCH {
            continue;
        }
        let k = match builder_of.get(t).copied().flatten() {
            Some(k) => k,
            None => {
                builders.push((
                    inst.template,
                    BatchBuilder::new(arc.clone(), false, n),
                    BatchBuilder::new(arc, true, n),
                ));
                if let Some(slot) = builder_of.get_mut(t) {
                    *slot = Some(builders.len() - 1);
                }
                builders.len() - 1
            }
        };
        let map = instances.map(inst);
        if let Some((_, residual, full)) = builders.get_mut(k) {
            for builder in [residual, full] {
                let template = builder.template_arc();
                builder.add(
                    |op, index| {
                        let (op, index) =
                            map.load(&template, op, index, &mut |bits| consts.get(bits));
                        match op {
                            Op::LoadVar => needed.vars = needed.vars.max(index as usize + 1),
                            Op::LoadParam => needed.params = needed.params.max(index as usize + 1),
                            _ => {}
                        }
                        (op, index)
                    },
                    |c| map.cell(&template, c),
                );
            }
        }
    }
    let mut batched = vec![false; templates.len()];
    let (mut residual_batches, mut full_batches) = (Vec::new(), Vec::new());
    for (t, residual, full) in builders {
        // A batch that could not take every instance (not expected) leaves them all
        // to be copied into the streams.
        if let (Some(r), Some(f)) = (residual.finish(), full.finish()) {
            residual_batches.push(r);
            full_batches.push(f);
            if let Some(b) = batched.get_mut(t as usize) {
                *b = true;
            }
        }
    }
    ((residual_batches, full_batches), batched)
}

/// A value to store, and its cell in the output buffer.
#[derive(Clone, Copy)]
struct Root {
    node: ExprId,
    cell: u32,
}

impl Root {
    fn new(node: ExprId, cell: u32) -> Self {
        Root { node, cell }
    }
}

/// A process-wide serial number, so an output buffer can tell which tape made it.
fn next_tape_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Constants of a tape, deduplicated by bit pattern.
#[derive(Default)]
struct ConstPool {
    index: FxHashMap<u64, u32>,
    values: Vec<f64>,
}

impl ConstPool {
    fn get(&mut self, bits: u64) -> u32 {
        let values = &mut self.values;
        *self.index.entry(bits).or_insert_with(|| {
            values.push(f64::from_bits(bits));
            (values.len() - 1) as u32
        })
    }
}

/// Lengths of the unknown and parameter arrays the tape reads.
#[derive(Default)]
struct Needed<'c> {
    vars: usize,
    params: usize,
    /// For a local tape: where each unknown is read.
    local: Option<&'c ColumnOf>,
    /// An unknown a local tape needs but was not given.
    foreign: Option<VarId>,
}

/// Map from node to a `u32`: a dense array when the compile touches a large share of the
/// graph, a hash map when it touches a small part of a large graph (one block of many).
enum NodeMap {
    Dense(Vec<u32>),
    Sparse(FxHashMap<ExprId, u32>),
}

impl NodeMap {
    fn for_roots(graph: &ExprGraph, roots: usize) -> Self {
        // No roots (every row an instance of a template, the usual case): nothing is
        // mapped, and an empty map allocates nothing.
        if roots > 0 && graph.node_count() <= 64 * roots + 4096 {
            NodeMap::Dense(vec![u32::MAX; graph.node_count()])
        } else {
            NodeMap::Sparse(FxHashMap::default())
        }
    }

    fn get(&self, e: ExprId) -> Option<u32> {
        match self {
            NodeMap::Dense(v) => v.get(e.index()).copied().filter(|&x| x != u32::MAX),
            NodeMap::Sparse(m) => m.get(&e).copied(),
        }
    }

    fn set(&mut self, e: ExprId, value: u32) {
        match self {
            NodeMap::Dense(v) => {
                if let Some(x) = v.get_mut(e.index()) {
                    *x = value;
                }
            }
            NodeMap::Sparse(m) => {
                m.insert(e, value);
            }
        }
    }
}

/// One step of a schedule: compute the `k`-th emitted value, or store value `k` in an
/// output cell.
#[derive(Clone, Copy)]
enum Step {
    Compute(u32),
    Store(u32, u32),
}

/// Emits the nodes `roots` need, in first-need order, fuses single-use products into
/// their readers, then allocates slots.
fn schedule(
    graph: &ExprGraph,
    roots: &[Root],
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
    form: Form,
) -> Stream<u32> {
    let (values, value_of, steps) = emit(graph, roots);
    let node = |k: u32| graph.node(values[k as usize]);
    let value = |e: ExprId| value_of.get(e).unwrap_or(0);

    // Fusion: a product read exactly once, by a sum, a difference, a negation or another
    // product, is computed inside its reader. Decided top-down (readers before what they
    // read), and a product that is absorbed absorbs nothing itself, since its operands
    // must then be values.
    let mut reads = vec![0u32; values.len()];
    for step in &steps {
        match *step {
            Step::Compute(k) => {
                for c in graph.children_of(values[k as usize]) {
                    reads[value(c) as usize] += 1;
                }
            }
            Step::Store(k, _) => reads[k as usize] += 1,
        }
    }
    let single_use_product = |e: ExprId| {
        matches!(graph.node(e), Node::Binary(Binary::Mul, ..)) && reads[value(e) as usize] == 1
    };
    let mut absorbed = vec![false; values.len()];
    for k in (0..values.len() as u32).rev() {
        if absorbed[k as usize] {
            continue;
        }
        match node(k) {
            Node::Binary(Binary::Add | Binary::Sub, x, y) => {
                for c in [x, y] {
                    if single_use_product(c) {
                        absorbed[value(c) as usize] = true;
                    }
                }
            }
            Node::Unary(Unary::Neg, x) if single_use_product(x) => {
                absorbed[value(x) as usize] = true
            }
            Node::Binary(Binary::Mul, x, y) => {
                if let Some(c) = [x, y].into_iter().find(|&c| single_use_product(c)) {
                    absorbed[value(c) as usize] = true;
                }
            }
            _ => {}
        }
    }
    // The factors of an absorbed product.
    let product = |e: ExprId| -> Option<(u32, u32)> {
        match graph.node(e) {
            Node::Binary(Binary::Mul, a, b) if absorbed[value(e) as usize] => {
                Some((value(a), value(b)))
            }
            _ => None,
        }
    };

    // Instructions in value-index space (`d` = the value itself), and the spline tables
    // read, as value indices.
    let mut ops: Vec<Instr<u32>> = Vec::with_capacity(steps.len());
    let mut tables = Tables::default();
    for step in &steps {
        let (k, out) = match *step {
            Step::Compute(k) => (k, 0),
            Step::Store(k, cell) => (k, cell),
        };
        if out != 0 {
            // Stored by the instruction that computed it when that came just before,
            // else by a copy.
            match ops.last_mut() {
                Some(last) if last.d == k && last.op != Op::Copy && last.out == 0 => {
                    last.out = out;
                }
                _ => {
                    let mut copy = instr(Op::Copy, k, &[k]);
                    copy.out = out;
                    ops.push(copy);
                }
            }
            continue;
        }
        if absorbed[k as usize] {
            continue;
        }
        let n = node(k);
        let fused = match n {
            Node::Binary(op @ (Binary::Add | Binary::Sub), x, y) => {
                let add = op == Binary::Add;
                match (product(x), product(y)) {
                    (Some((a, b)), Some((c, e))) => Some(instr(
                        if add { Op::Dot2 } else { Op::DotSub },
                        k,
                        &[a, b, c, e],
                    )),
                    (Some((a, b)), None) => Some(instr(
                        if add { Op::MulAdd } else { Op::MulSub },
                        k,
                        &[a, b, value(y)],
                    )),
                    (None, Some((a, b))) => Some(if add {
                        instr(Op::MulAdd, k, &[a, b, value(x)])
                    } else {
                        instr(Op::SubMul, k, &[value(x), a, b])
                    }),
                    (None, None) => None,
                }
            }
            Node::Unary(Unary::Neg, x) => product(x).map(|(a, b)| instr(Op::NegMul, k, &[a, b])),
            Node::Binary(Binary::Mul, x, y) => match (product(x), product(y)) {
                (Some((a, b)), _) => Some(instr(Op::MulMul, k, &[a, b, value(y)])),
                (None, Some((a, b))) => Some(instr(Op::MulMul, k, &[a, b, value(x)])),
                (None, None) => None,
            },
            _ => None,
        };
        ops.push(match fused {
            Some(f) => f,
            None => plain_instr(n, k, &value, consts, needed, (graph, &mut tables)),
        });
    }
    let reads_of = |op: &Instr<u32>| tables.reads(*op);
    let ops = if form.grouped {
        group_like_operations(ops, &reads_of)
    } else {
        ops
    };

    // Liveness: each value's last reader (`NEVER`: stored, then not read again).
    const NEVER: u32 = u32::MAX;
    let mut last_use = vec![NEVER; values.len()];
    for (i, op) in ops.iter().enumerate() {
        for o in reads_of(op) {
            last_use[o as usize] = i as u32;
        }
    }
    // Slots by linear scan: operands whose last reader this is are freed first, so the
    // destination may reuse one of them (operands are read before the write).
    let mut slot = vec![0u32; values.len()];
    let mut free: Vec<u32> = Vec::new();
    let mut slots = 0u32;
    let mut instrs = Vec::with_capacity(ops.len());
    // A value is freed once, by its last reader, however often that reader reads it.
    let mut freed = vec![false; values.len()];
    for (i, op) in ops.iter().enumerate() {
        let i = i as u32;
        for o in reads_of(op) {
            if last_use[o as usize] == i && !freed[o as usize] {
                freed[o as usize] = true;
                free.push(slot[o as usize]);
            }
        }
        if op.op != Op::Copy {
            let d = free.pop().unwrap_or_else(|| {
                slots += 1;
                slots - 1
            });
            slot[op.d as usize] = d;
            if last_use[op.d as usize] == NEVER {
                free.push(d);
            }
        }
        if let Some(mapped) = op.map(|v| slot.get(v as usize).copied()) {
            instrs.push(mapped);
        }
    }
    // A value's slot is fixed for its life, so a table's slots are its values'.
    let tables = tables
        .values
        .iter()
        .map(|t| {
            t.iter()
                .map(|&v| slot.get(v as usize).copied().unwrap_or(0))
                .collect()
        })
        .collect();
    Stream {
        instrs,
        slots: slots as usize,
        tables,
    }
}

/// How a tape is compiled.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Form {
    /// Unknowns read at their column (a local vector), not their global index.
    local: bool,
    /// Like operations grouped ([`group_like_operations`]).
    grouped: bool,
    /// Values only: nothing differentiated (the columns only say where unknowns are
    /// read).
    values: bool,
}

impl Form {
    pub(crate) const LOCAL: Form = Form {
        local: true,
        grouped: false,
        values: false,
    };
}

/// Instructions reordered within windows of this many.
const GROUPING_WINDOW: usize = 512;

/// Reorders instructions, within consecutive windows of [`GROUPING_WINDOW`], so that
/// instructions of the same operation follow each other where their dependences allow
/// (a list schedule preferring the operation just emitted, then the earliest ready
/// instruction). An interpreter's dispatch is one indirect jump per instruction; runs
/// of one operation make it predictable (the acceleration tape of a four-bar: 1,318
/// changes of operation in 1,586 instructions before, 275 after, evaluated 35% faster).
/// Windows bound how many more values are alive at once than in the original order.
fn group_like_operations<'t, I: Iterator<Item = u32> + 't>(
    ops: Vec<Instr<u32>>,
    reads_of: &dyn Fn(&Instr<u32>) -> I,
) -> Vec<Instr<u32>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut out = Vec::with_capacity(ops.len());
    let mut last: Option<usize> = None;
    let kinds = Op::COUNT;
    // Per window: the local definer of each value, the readers of each instruction,
    // how many definers each still waits for, and the ready ones per operation.
    // Values are defined in increasing order, so a window's are a range.
    let mut definer: Vec<u32> = Vec::new();
    let mut ready: Vec<BinaryHeap<Reverse<u32>>> = vec![BinaryHeap::new(); kinds];
    let mut reader_start: Vec<u32> = Vec::with_capacity(GROUPING_WINDOW + 1);
    let mut reader_list: Vec<u32> = Vec::new();
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for window in ops.chunks(GROUPING_WINDOW) {
        edges.clear();
        let defined = window.iter().filter(|op| op.op != Op::Copy).map(|op| op.d);
        let first = defined.clone().min().unwrap_or(0);
        let end = defined.max().map_or(first, |d| d + 1);
        definer.clear();
        definer.resize((end - first) as usize, u32::MAX);
        for (i, op) in window.iter().enumerate() {
            if op.op != Op::Copy {
                definer[(op.d - first) as usize] = i as u32;
            }
        }
        let mut waiting = vec![0u32; window.len()];
        for (i, op) in window.iter().enumerate() {
            for v in reads_of(op) {
                let local = v.checked_sub(first).and_then(|k| definer.get(k as usize));
                if let Some(&j) = local {
                    if (j as usize) < i {
                        waiting[i] += 1;
                        edges.push((j, i as u32));
                    }
                }
            }
        }
        // Readers of each instruction, grouped (counting sort by definer).
        reader_start.clear();
        reader_start.resize(window.len() + 1, 0);
        for &(j, _) in &edges {
            reader_start[j as usize + 1] += 1;
        }
        for k in 0..window.len() {
            reader_start[k + 1] += reader_start[k];
        }
        reader_list.clear();
        reader_list.resize(edges.len(), 0);
        let mut fill = reader_start.clone();
        for &(j, i) in &edges {
            reader_list[fill[j as usize] as usize] = i;
            fill[j as usize] += 1;
        }
        for (i, op) in window.iter().enumerate() {
            if waiting[i] == 0 {
                ready[op.op as usize].push(Reverse(i as u32));
            }
        }
        loop {
            let same = last.filter(|&k| !ready[k].is_empty());
            let kind = same.or_else(|| {
                (0..kinds)
                    .filter_map(|k| ready[k].peek().map(|&Reverse(i)| (i, k)))
                    .min()
                    .map(|(_, k)| k)
            });
            let Some(kind) = kind else { break };
            let Some(Reverse(i)) = ready[kind].pop() else {
                break;
            };
            last = Some(kind);
            out.push(window[i as usize]);
            let readers = reader_start[i as usize] as usize..reader_start[i as usize + 1] as usize;
            for &r in &reader_list[readers] {
                waiting[r as usize] -= 1;
                if waiting[r as usize] == 0 {
                    ready[window[r as usize].op as usize].push(Reverse(r));
                }
            }
        }
    }
    out
}

/// The spline tables a stream reads, as value indices, each once.
#[derive(Default)]
struct Tables {
    of: FxHashMap<SplineId, u32>,
    values: Vec<Vec<u32>>,
}

impl Tables {
    /// What an instruction reads: its slot operands and, for a spline, its table.
    fn reads(&self, op: Instr<u32>) -> impl Iterator<Item = u32> + '_ {
        let table = match op.op {
            Op::Spline => self
                .values
                .get(op.a[1] as usize)
                .map_or(&[][..], Vec::as_slice),
            _ => &[],
        };
        op.a.into_iter()
            .take(op.op.arity())
            .chain(table.iter().copied())
    }

    /// The stream's index of table `t`.
    fn index(&mut self, graph: &ExprGraph, t: SplineId, value: &dyn Fn(ExprId) -> u32) -> u32 {
        let values = &mut self.values;
        *self.of.entry(t).or_insert_with(|| {
            values.push(
                graph
                    .spline_coefficients(t)
                    .iter()
                    .map(|&c| value(c))
                    .collect(),
            );
            (values.len() - 1) as u32
        })
    }
}

/// An instruction with slot operands `operands` (at most four).
fn instr(op: Op, d: u32, operands: &[u32]) -> Instr<u32> {
    let mut a = [0u32; 4];
    for (to, &from) in a.iter_mut().zip(operands) {
        *to = from;
    }
    Instr { op, out: 0, d, a }
}

/// Emission: the values `roots` need, in first-need order (iterative post-order), the
/// map from node to value index, and the steps (computations and stores).
fn emit(graph: &ExprGraph, roots: &[Root]) -> (Vec<ExprId>, NodeMap, Vec<Step>) {
    let mut value_of = NodeMap::for_roots(graph, roots.len());
    let mut values: Vec<ExprId> = Vec::new();
    let mut steps: Vec<Step> = Vec::with_capacity(roots.len() * 4);
    let mut stack: Vec<(ExprId, bool)> = Vec::new();
    let mut kids: Vec<ExprId> = Vec::new();
    for &root in roots {
        stack.push((root.node, false));
        while let Some((n, expanded)) = stack.pop() {
            if value_of.get(n).is_some() {
                continue;
            }
            if expanded {
                let k = values.len() as u32;
                values.push(n);
                value_of.set(n, k);
                steps.push(Step::Compute(k));
            } else {
                stack.push((n, true));
                kids.clear();
                kids.extend(graph.children_of(n));
                // Pushed in reverse so the first operand is computed first.
                for &c in kids.iter().rev() {
                    if value_of.get(c).is_none() {
                        stack.push((c, false));
                    }
                }
            }
        }
        let k = value_of.get(root.node).unwrap_or(0);
        steps.push(Step::Store(k, root.cell));
    }
    (values, value_of, steps)
}

/// The instruction computing node `n` as value `k`, operands as value indices.
fn plain_instr(
    n: Node,
    k: u32,
    value: &dyn Fn(ExprId) -> u32,
    consts: &mut ConstPool,
    needed: &mut Needed<'_>,
    (graph, tables): (&ExprGraph, &mut Tables),
) -> Instr<u32> {
    let load = |op: Op, index: u32| instr(op, k, &[index & 0xffff, index >> 16]);
    match n {
        Node::Var(v) => {
            let index = match needed.local {
                None => v.0,
                Some(map) => match map.get(v) {
                    Some(k) => k,
                    None => {
                        needed.foreign.get_or_insert(v);
                        0
                    }
                },
            };
            needed.vars = needed.vars.max(index as usize + 1);
            load(Op::LoadVar, index)
        }
        Node::Param(p) => {
            needed.params = needed.params.max(p.index() + 1);
            load(Op::LoadParam, p.0)
        }
        Node::Const(bits) => load(Op::LoadConst, consts.get(bits.bits())),
        Node::Unary(op, x) => {
            let op = match op {
                Unary::Neg => Op::Neg,
                Unary::Sqrt => Op::Sqrt,
                Unary::Sin => Op::Sin,
                Unary::Cos => Op::Cos,
                Unary::Tan => Op::Tan,
                Unary::Asin => Op::Asin,
                Unary::Acos => Op::Acos,
                Unary::Exp => Op::Exp,
                Unary::Ln => Op::Ln,
                Unary::Abs => Op::Abs,
                Unary::Sign => Op::Sign,
            };
            instr(op, k, &[value(x)])
        }
        Node::Binary(op, x, y) => {
            let op = match op {
                Binary::Add => Op::Add,
                Binary::Sub => Op::Sub,
                Binary::Mul => Op::Mul,
                Binary::Div => Op::Div,
                Binary::Pow => Op::Pow,
                Binary::Atan2 => Op::Atan2,
                Binary::Min => Op::Min,
                Binary::Max => Op::Max,
            };
            instr(op, k, &[value(x), value(y)])
        }
        Node::Powi(x, 2) => instr(Op::Square, k, &[value(x)]),
        Node::Spline(t, u, order) => {
            let table = tables.index(graph, t, value);
            instr(Op::Spline, k, &[value(u), table, u32::from(order)])
        }
        Node::Powi(x, n) => {
            let n = n.clamp(-MAX_POWI, MAX_POWI) as i16;
            instr(Op::Powi, k, &[value(x), u32::from(n as u16)])
        }
    }
}
