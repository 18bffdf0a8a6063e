//! Compilation of outputs and their sparse Jacobian into one instruction tape.
//!
//! Symbolic work happens once, in [`ExprGraph::compile`]: the Jacobian's non-zero pattern
//! is found (entries that simplify to the constant 0 are structural zeros and left out),
//! every node needed is given a slot, and nodes become instructions in ascending id order
//! (a topological order). Numeric work is [`Tape::eval`]: load unknowns and parameters,
//! run the instructions, gather outputs; it writes only into buffers the caller owns and
//! allocates nothing.
//!
//! Slot layout: `[unknowns used | parameters used | constants | instruction results]`.
//! Instructions needed by the outputs come first, so [`Tape::eval_residuals`] runs a
//! prefix of the tape and skips the Jacobian.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::ExprError;
use crate::graph::ExprGraph;
use crate::node::{Binary, ExprId, Node, Unary, VarId};

/// One tape instruction; the result goes to the slot after the previous instruction's.
/// Operands are slot indices.
#[derive(Clone, Copy, Debug)]
enum Instr {
    Add(u32, u32),
    Sub(u32, u32),
    Mul(u32, u32),
    Div(u32, u32),
    Pow(u32, u32),
    Atan2(u32, u32),
    Min(u32, u32),
    Max(u32, u32),
    Neg(u32),
    Sqrt(u32),
    Sin(u32),
    Cos(u32),
    Tan(u32),
    Asin(u32),
    Acos(u32),
    Exp(u32),
    Ln(u32),
    Abs(u32),
    Sign(u32),
    Square(u32),
    Powi(u32, i32),
}

/// The sparsity pattern of a compiled Jacobian, row-major (CSR): row `r` holds the
/// columns `cols[row_start[r]..row_start[r + 1]]`, ascending. Rows are outputs and
/// columns are the unknowns in the order given to [`ExprGraph::compile`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JacobianPattern {
    rows: usize,
    columns: usize,
    row_start: Vec<u32>,
    cols: Vec<u32>,
}

impl JacobianPattern {
    /// Number of rows (outputs).
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns (unknowns chosen at compile time).
    pub fn columns(&self) -> usize {
        self.columns
    }
    /// Number of structurally non-zero entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }
    /// Columns of row `r`, ascending (empty for an out-of-range row).
    pub fn row(&self, r: usize) -> &[u32] {
        match (self.row_start.get(r), self.row_start.get(r + 1)) {
            (Some(&a), Some(&b)) => &self.cols[a as usize..b as usize],
            _ => &[],
        }
    }
    /// Offsets of each row's first entry in the value array, plus the total at the end.
    pub fn row_starts(&self) -> &[u32] {
        &self.row_start
    }
    /// Column of every entry, row by row.
    pub fn col_indices(&self) -> &[u32] {
        &self.cols
    }
    /// `(row, column)` of every entry, in value order.
    pub fn entries(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.rows).flat_map(move |r| self.row(r).iter().map(move |&c| (r, c as usize)))
    }
}

/// A compiled system: outputs and their Jacobian, evaluated without allocation.
#[derive(Clone, Debug)]
pub struct Tape {
    /// Graph index of the unknown loaded into slot `k`.
    var_loads: Vec<u32>,
    /// Graph index of the parameter loaded into slot `var_loads.len() + k`.
    param_loads: Vec<u32>,
    /// Constant values, in the slots after the parameters.
    consts: Vec<f64>,
    instrs: Vec<Instr>,
    /// Instructions `[..residual_instrs]` are all the outputs need.
    residual_instrs: usize,
    output_slots: Vec<u32>,
    jacobian_slots: Vec<u32>,
    pattern: JacobianPattern,
    vars_needed: usize,
    params_needed: usize,
}

/// Scratch memory for evaluating one [`Tape`]; make it once with [`Tape::workspace`] and
/// reuse it. One workspace per thread evaluating the same tape.
#[derive(Clone, Debug)]
pub struct TapeWorkspace {
    slots: Vec<f64>,
}

impl ExprGraph {
    /// Compiles `outputs` and their Jacobian with respect to `columns` into a tape.
    ///
    /// Outputs may depend on unknowns that are not columns (values known from earlier
    /// blocks); those are read at evaluation but get no Jacobian column.
    pub fn compile(&mut self, outputs: &[ExprId], columns: &[VarId]) -> Result<Tape, ExprError> {
        let n = self.node_count();
        if let Some(&bad) = outputs.iter().find(|e| e.index() >= n) {
            return Err(ExprError::ForeignId(bad));
        }
        let mut column_of: FxHashMap<VarId, u32> = FxHashMap::default();
        for (k, &v) in columns.iter().enumerate() {
            if column_of.insert(v, k as u32).is_some() {
                return Err(ExprError::DuplicateColumn(v));
            }
        }

        // Symbolic Jacobian, row by row.
        let mut row_start = Vec::with_capacity(outputs.len() + 1);
        let mut cols = Vec::new();
        let mut entries = Vec::new();
        row_start.push(0u32);
        let mut row_entries: Vec<(u32, ExprId)> = Vec::new();
        for &out in outputs {
            row_entries.clear();
            for v in self.vars_of(out) {
                if let Some(&c) = column_of.get(&v) {
                    let d = self.derivative(out, v);
                    if self.as_const(d) != Some(0.0) {
                        row_entries.push((c, d));
                    }
                }
            }
            row_entries.sort_unstable_by_key(|&(c, _)| c);
            for &(c, d) in &row_entries {
                cols.push(c);
                entries.push(d);
            }
            row_start.push(cols.len() as u32);
        }
        let pattern = JacobianPattern {
            rows: outputs.len(),
            columns: columns.len(),
            row_start,
            cols,
        };

        // Nodes each part of the tape needs, in topological (ascending id) order.
        let mut seen = FxHashSet::default();
        let residual_nodes = self.reachable(outputs, &mut seen);
        let jacobian_nodes = self.reachable(&entries, &mut seen);

        let mut slot_of: FxHashMap<ExprId, u32> = FxHashMap::default();
        let mut var_loads = Vec::new();
        let mut param_loads = Vec::new();
        let mut const_nodes = Vec::new();
        for &id in residual_nodes.iter().chain(&jacobian_nodes) {
            match self.node(id) {
                Node::Var(v) => var_loads.push((v.0, id)),
                Node::Param(p) => param_loads.push((p.0, id)),
                Node::Const(bits) => const_nodes.push((f64::from_bits(bits), id)),
                _ => {}
            }
        }
        let mut next = 0u32;
        for &(_, id) in var_loads.iter().chain(&param_loads) {
            slot_of.insert(id, next);
            next += 1;
        }
        for &(_, id) in &const_nodes {
            slot_of.insert(id, next);
            next += 1;
        }
        let mut instrs = Vec::new();
        let mut residual_instrs = 0;
        for (part, nodes) in [&residual_nodes, &jacobian_nodes].into_iter().enumerate() {
            for &id in nodes {
                let node = self.node(id);
                if matches!(node, Node::Var(_) | Node::Param(_) | Node::Const(_)) {
                    continue;
                }
                let s = |e: ExprId| slot_of.get(&e).copied().ok_or(ExprError::ForeignId(e));
                let instr = match node {
                    Node::Unary(op, a) => {
                        let a = s(a)?;
                        match op {
                            Unary::Neg => Instr::Neg(a),
                            Unary::Sqrt => Instr::Sqrt(a),
                            Unary::Sin => Instr::Sin(a),
                            Unary::Cos => Instr::Cos(a),
                            Unary::Tan => Instr::Tan(a),
                            Unary::Asin => Instr::Asin(a),
                            Unary::Acos => Instr::Acos(a),
                            Unary::Exp => Instr::Exp(a),
                            Unary::Ln => Instr::Ln(a),
                            Unary::Abs => Instr::Abs(a),
                            Unary::Sign => Instr::Sign(a),
                        }
                    }
                    Node::Binary(op, a, b) => {
                        let (a, b) = (s(a)?, s(b)?);
                        match op {
                            Binary::Add => Instr::Add(a, b),
                            Binary::Sub => Instr::Sub(a, b),
                            Binary::Mul => Instr::Mul(a, b),
                            Binary::Div => Instr::Div(a, b),
                            Binary::Pow => Instr::Pow(a, b),
                            Binary::Atan2 => Instr::Atan2(a, b),
                            Binary::Min => Instr::Min(a, b),
                            Binary::Max => Instr::Max(a, b),
                        }
                    }
                    Node::Powi(a, 2) => Instr::Square(s(a)?),
                    Node::Powi(a, k) => Instr::Powi(s(a)?, k),
                    Node::Var(_) | Node::Param(_) | Node::Const(_) => continue,
                };
                slot_of.insert(id, next);
                next += 1;
                instrs.push(instr);
            }
            if part == 0 {
                residual_instrs = instrs.len();
            }
        }
        let slot = |e: &ExprId| slot_of.get(e).copied().ok_or(ExprError::ForeignId(*e));
        let output_slots = outputs.iter().map(slot).collect::<Result<Vec<_>, _>>()?;
        let jacobian_slots = entries.iter().map(slot).collect::<Result<Vec<_>, _>>()?;
        let vars_needed = var_loads
            .iter()
            .map(|&(v, _)| v as usize + 1)
            .max()
            .unwrap_or(0);
        let params_needed = param_loads
            .iter()
            .map(|&(p, _)| p as usize + 1)
            .max()
            .unwrap_or(0);
        Ok(Tape {
            var_loads: var_loads.into_iter().map(|(v, _)| v).collect(),
            param_loads: param_loads.into_iter().map(|(p, _)| p).collect(),
            consts: const_nodes.into_iter().map(|(c, _)| c).collect(),
            instrs,
            residual_instrs,
            output_slots,
            jacobian_slots,
            pattern,
            vars_needed,
            params_needed,
        })
    }

    /// Nodes reachable from `roots` and not yet in `seen`, ascending.
    fn reachable(&self, roots: &[ExprId], seen: &mut FxHashSet<ExprId>) -> Vec<ExprId> {
        let mut found = Vec::new();
        let mut stack: Vec<ExprId> = roots.to_vec();
        while let Some(n) = stack.pop() {
            if seen.insert(n) {
                found.push(n);
                stack.extend(self.node(n).children());
            }
        }
        found.sort_unstable();
        found
    }
}

impl Tape {
    /// The Jacobian's sparsity pattern; [`eval`](Self::eval) writes values in its order.
    pub fn pattern(&self) -> &JacobianPattern {
        &self.pattern
    }

    /// Number of outputs (residuals).
    pub fn output_count(&self) -> usize {
        self.output_slots.len()
    }

    /// Number of instructions (a measure of evaluation cost).
    pub fn instruction_count(&self) -> usize {
        self.instrs.len()
    }

    /// Unknown values this tape reads: `vars` passed to evaluation must be at least this
    /// long (it is indexed by [`VarId::index`]).
    pub fn vars_needed(&self) -> usize {
        self.vars_needed
    }

    /// Parameter values this tape reads: `params` must be at least this long.
    pub fn params_needed(&self) -> usize {
        self.params_needed
    }

    /// Scratch memory sized for this tape.
    pub fn workspace(&self) -> TapeWorkspace {
        TapeWorkspace {
            slots: vec![0.0; self.slot_count()],
        }
    }

    fn slot_count(&self) -> usize {
        self.var_loads.len() + self.param_loads.len() + self.consts.len() + self.instrs.len()
    }

    /// Evaluates the outputs only (the tape prefix they need).
    pub fn eval_residuals(
        &self,
        ws: &mut TapeWorkspace,
        vars: &[f64],
        params: &[f64],
        residuals: &mut [f64],
    ) -> Result<(), ExprError> {
        self.check(ws, vars, params, residuals, None)?;
        self.load(ws, vars, params);
        let base = self.leaf_count();
        self.run(&mut ws.slots, base, 0..self.residual_instrs);
        gather(&ws.slots, &self.output_slots, residuals);
        Ok(())
    }

    /// Evaluates outputs and Jacobian values (in [`pattern`](Self::pattern) order).
    pub fn eval(
        &self,
        ws: &mut TapeWorkspace,
        vars: &[f64],
        params: &[f64],
        residuals: &mut [f64],
        jacobian: &mut [f64],
    ) -> Result<(), ExprError> {
        self.check(ws, vars, params, residuals, Some(jacobian.len()))?;
        self.load(ws, vars, params);
        let base = self.leaf_count();
        self.run(&mut ws.slots, base, 0..self.instrs.len());
        gather(&ws.slots, &self.output_slots, residuals);
        gather(&ws.slots, &self.jacobian_slots, jacobian);
        Ok(())
    }

    fn leaf_count(&self) -> usize {
        self.var_loads.len() + self.param_loads.len() + self.consts.len()
    }

    fn check(
        &self,
        ws: &TapeWorkspace,
        vars: &[f64],
        params: &[f64],
        residuals: &[f64],
        jacobian: Option<usize>,
    ) -> Result<(), ExprError> {
        let checks = [
            ("workspace slots", self.slot_count(), ws.slots.len(), true),
            ("unknowns", self.vars_needed, vars.len(), false),
            ("parameters", self.params_needed, params.len(), false),
            ("residuals", self.output_slots.len(), residuals.len(), true),
            (
                "Jacobian values",
                self.jacobian_slots.len(),
                jacobian.unwrap_or(self.jacobian_slots.len()),
                true,
            ),
        ];
        for (what, expected, got, exact) in checks {
            if got < expected || (exact && got != expected) {
                return Err(ExprError::Length {
                    what,
                    expected,
                    got,
                });
            }
        }
        Ok(())
    }

    fn load(&self, ws: &mut TapeWorkspace, vars: &[f64], params: &[f64]) {
        let (var_slots, rest) = ws.slots.split_at_mut(self.var_loads.len());
        for (slot, &v) in var_slots.iter_mut().zip(&self.var_loads) {
            *slot = vars[v as usize];
        }
        let (param_slots, rest) = rest.split_at_mut(self.param_loads.len());
        for (slot, &p) in param_slots.iter_mut().zip(&self.param_loads) {
            *slot = params[p as usize];
        }
        rest[..self.consts.len()].copy_from_slice(&self.consts);
    }

    /// Runs instructions `range`; instruction `i` writes slot `base + i`.
    #[inline(never)]
    fn run(&self, s: &mut [f64], base: usize, range: std::ops::Range<usize>) {
        let start = range.start;
        for (k, ins) in self.instrs[range].iter().enumerate() {
            let at = |i: u32| s[i as usize];
            let value = match *ins {
                Instr::Add(a, b) => at(a) + at(b),
                Instr::Sub(a, b) => at(a) - at(b),
                Instr::Mul(a, b) => at(a) * at(b),
                Instr::Div(a, b) => at(a) / at(b),
                Instr::Pow(a, b) => Binary::Pow.apply(at(a), at(b)),
                Instr::Atan2(a, b) => Binary::Atan2.apply(at(a), at(b)),
                Instr::Min(a, b) => Binary::Min.apply(at(a), at(b)),
                Instr::Max(a, b) => Binary::Max.apply(at(a), at(b)),
                Instr::Neg(a) => -at(a),
                Instr::Sqrt(a) => at(a).sqrt(),
                Instr::Sin(a) => at(a).sin(),
                Instr::Cos(a) => at(a).cos(),
                Instr::Tan(a) => at(a).tan(),
                Instr::Asin(a) => at(a).asin(),
                Instr::Acos(a) => at(a).acos(),
                Instr::Exp(a) => at(a).exp(),
                Instr::Ln(a) => at(a).ln(),
                Instr::Abs(a) => at(a).abs(),
                Instr::Sign(a) => Unary::Sign.apply(at(a)),
                Instr::Square(a) => {
                    let x = at(a);
                    x * x
                }
                Instr::Powi(a, n) => crate::node::powi(at(a), n),
            };
            s[base + start + k] = value;
        }
    }
}

fn gather(slots: &[f64], from: &[u32], to: &mut [f64]) {
    for (t, &f) in to.iter_mut().zip(from) {
        *t = slots[f as usize];
    }
}
