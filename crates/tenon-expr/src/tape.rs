//! The compiled form of a system and its evaluation.
//!
//! A [`Tape`] holds two instruction streams built by [`ExprGraph::compile`]
//! (see `compile.rs`): one for the outputs alone and one for outputs and Jacobian
//! together. Each stream is a register program over a small set of reusable slots:
//! instructions load unknowns, parameters and constants when first needed, compute, and
//! store finished outputs and Jacobian entries straight into the caller's buffers, in
//! order; instances of a template used many times run after the stream as batches
//! (module `batch`), their values stored the same way. Because instructions follow the
//! rows (a residual, then its Jacobian entries,
//! then the next row) and a slot is reused once its value's last reader has run, the
//! working set stays in cache however large the system is. Evaluation writes only into
//! buffers the caller owns and allocates nothing.
//!
//! Architecture invariant: streams are only made by the compiler, which checks that every
//! slot, unknown, parameter and constant index an instruction uses is in range for the
//! workspace and buffers that [`Tape::eval`] has checked; evaluation therefore cannot go
//! out of bounds.

use crate::batch::{Batch, Lanes, LANES};
use crate::error::ExprError;
use crate::node::{powi, Binary, Unary};

/// A slot index type and the slot memory it addresses: `u16` indices into a fixed
/// array of 65,536 slots (so indexing needs no bounds check and instructions are
/// compact), or `u32` indices into a slice for the rare stream with more slots.
pub(crate) trait SlotIndex: Copy + std::fmt::Debug {
    /// Slot memory addressed by this index type.
    type Memory: ?Sized;
    fn from_u32(x: u32) -> Option<Self>;
    fn get(self) -> usize;
    fn read(memory: &Self::Memory, i: Self) -> f64;
    fn write(memory: &mut Self::Memory, i: Self, v: f64);
}

/// Slots addressable by a `u16`.
pub(crate) const NARROW_SLOTS: usize = 1 << 16;

impl SlotIndex for u16 {
    type Memory = [f64; NARROW_SLOTS];
    fn from_u32(x: u32) -> Option<Self> {
        u16::try_from(x).ok()
    }
    #[inline(always)]
    fn get(self) -> usize {
        self as usize
    }
    #[inline(always)]
    fn read(memory: &Self::Memory, i: Self) -> f64 {
        memory[i as usize]
    }
    #[inline(always)]
    fn write(memory: &mut Self::Memory, i: Self, v: f64) {
        memory[i as usize] = v;
    }
}

impl SlotIndex for u32 {
    type Memory = [f64];
    fn from_u32(x: u32) -> Option<Self> {
        Some(x)
    }
    #[inline(always)]
    fn get(self) -> usize {
        self as usize
    }
    #[inline(always)]
    fn read(memory: &Self::Memory, i: Self) -> f64 {
        memory[i as usize]
    }
    #[inline(always)]
    fn write(memory: &mut Self::Memory, i: Self, v: f64) {
        memory[i as usize] = v;
    }
}

/// Operation of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Op {
    /// `vars[index]`; the index is split over operands 0 (low 16 bits) and 1 (high).
    LoadVar,
    /// `params[index]`, index as for `LoadVar`.
    LoadParam,
    /// `consts[index]`, index as for `LoadVar`.
    LoadConst,
    /// Operand 0 unchanged (a store of a value computed earlier).
    Copy,
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Atan2,
    Min,
    Max,
    Neg,
    Sqrt,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Exp,
    Ln,
    Abs,
    Sign,
    Square,
    /// Operand 1 holds the exponent as a 16-bit two's complement number (the graph
    /// keeps integer exponents within +-1024).
    Powi,
    // Fused forms of a product read once, by a sum or a negation (the compiler's
    // choice; same rounding as the separate operations):
    /// `a*b + c`
    MulAdd,
    /// `a*b - c`
    MulSub,
    /// `c - a*b` (operands `c, a, b`)
    SubMul,
    /// `a*b + c*e`
    Dot2,
    /// `a*b - c*e`
    DotSub,
    /// `-(a*b)`
    NegMul,
    /// `(a*b)*c`
    MulMul,
    /// A periodic cubic spline at operand 0 (see `spline.rs`): operand 1 is the stream's
    /// table of coefficient slots, operand 2 the derivative order.
    Spline,
}

impl Op {
    /// Number of operations (they are numbered from 0, in declaration order).
    pub(crate) const COUNT: usize = Op::Spline as usize + 1;

    /// Number of operands that are slots.
    pub(crate) fn arity(self) -> usize {
        use Op::*;
        match self {
            LoadVar | LoadParam | LoadConst => 0,
            Copy | Neg | Sqrt | Sin | Cos | Tan | Asin | Acos | Exp | Ln | Abs | Sign | Square
            | Powi | Spline => 1,
            Add | Sub | Mul | Div | Pow | Atan2 | Min | Max | NegMul => 2,
            MulAdd | MulSub | SubMul | MulMul => 3,
            Dot2 | DotSub => 4,
        }
    }

    /// True for operations that compute (not loads or copies).
    pub(crate) fn is_arithmetic(self) -> bool {
        !matches!(self, Op::LoadVar | Op::LoadParam | Op::LoadConst | Op::Copy)
    }

    /// A load of an unknown, a parameter or a constant (its index in operands 0 and 1).
    pub(crate) fn is_load(self) -> bool {
        matches!(self, Op::LoadVar | Op::LoadParam | Op::LoadConst)
    }
}

/// One instruction: `slot[d] = op(operands)`, and `stored[out] = ` the same value (`out` 0
/// is a scratch cell for values that are not outputs), so storing costs no branch. A
/// `Copy` has `d` equal to its operand.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Instr<S> {
    pub(crate) op: Op,
    pub(crate) out: u32,
    pub(crate) d: S,
    pub(crate) a: [S; 4],
}

impl<S: SlotIndex> Instr<S> {
    /// A load's index (into the unknowns, parameters or constants), kept in operands 0
    /// and 1 as its low and high 16 bits.
    #[inline(always)]
    pub(crate) fn load_index(&self) -> usize {
        self.a[0].get() | (self.a[1].get() << 16)
    }

    /// The same instruction with every slot (destination and slot operands) mapped
    /// through `f`; non-slot operands (load indices, exponents) are carried over.
    pub(crate) fn map<T: SlotIndex>(self, f: impl Fn(S) -> Option<T>) -> Option<Instr<T>> {
        let arity = self.op.arity();
        let mut a = [T::from_u32(0)?; 4];
        for (k, (to, from)) in a.iter_mut().zip(self.a).enumerate() {
            *to = if k < arity {
                f(from)?
            } else {
                T::from_u32(from.get() as u32)?
            };
        }
        Some(Instr {
            op: self.op,
            out: self.out,
            d: f(self.d)?,
            a,
        })
    }
}

/// A register program: instructions and the number of slots they use.
#[derive(Clone, Debug)]
pub(crate) struct Stream<S> {
    pub(crate) instrs: Vec<Instr<S>>,
    pub(crate) slots: usize,
    /// Per spline table the stream reads, the slots of its coefficients (live when a
    /// `Spline` instruction reads them).
    pub(crate) tables: Vec<Vec<S>>,
}

/// `wide` with `u16` slots, when every slot fits. Other operands fit by construction
/// (load indices are split in 16-bit halves, exponents are 16-bit), but a spline's table
/// index may not: checked as the instructions are narrowed.
pub(crate) fn narrow_copy(wide: &Stream<u32>) -> Option<Stream<u16>> {
    if wide.slots > NARROW_SLOTS || wide.tables.len() > NARROW_SLOTS {
        return None;
    }
    let narrow = |x: u32| x as u16;
    let mut instrs = Vec::with_capacity(wide.instrs.len());
    for i in &wide.instrs {
        if i.a.iter().any(|&x| x > u32::from(u16::MAX)) || i.d > u32::from(u16::MAX) {
            return None;
        }
        instrs.push(Instr {
            op: i.op,
            out: i.out,
            d: narrow(i.d),
            a: i.a.map(narrow),
        });
    }
    let tables = wide
        .tables
        .iter()
        .map(|t| t.iter().map(|&x| narrow(x)).collect())
        .collect();
    Some(Stream {
        instrs,
        slots: wide.slots,
        tables,
    })
}

/// A stream in its compact form when its slots fit `u16`.
#[derive(Clone, Debug)]
pub(crate) enum Code {
    Narrow(Stream<u16>),
    Wide(Stream<u32>),
}

impl Code {
    pub(crate) fn new(wide: Stream<u32>) -> Code {
        match narrow_copy(&wide) {
            Some(narrow) => Code::Narrow(narrow),
            None => Code::Wide(wide),
        }
    }

    /// The narrow form where it fits (a stream built narrow stays as it is).
    pub(crate) fn narrowed(self) -> Code {
        match self {
            Code::Wide(wide) => Code::new(wide),
            narrow => narrow,
        }
    }

    /// Number of instructions.
    pub(crate) fn len(&self) -> usize {
        match self {
            Code::Narrow(s) => s.instrs.len(),
            Code::Wide(s) => s.instrs.len(),
        }
    }

    pub(crate) fn slots(&self) -> usize {
        match self {
            Code::Narrow(s) => s.slots,
            Code::Wide(s) => s.slots,
        }
    }

    pub(crate) fn arithmetic(&self) -> usize {
        match self {
            Code::Narrow(s) => s.instrs.iter().filter(|i| i.op.is_arithmetic()).count(),
            Code::Wide(s) => s.instrs.iter().filter(|i| i.op.is_arithmetic()).count(),
        }
    }

    fn run(&self, ws: &mut TapeWorkspace, inputs: Inputs<'_>, stored: &mut [f64]) {
        match self {
            Code::Narrow(stream) => run(stream, ws.narrow.slots(), inputs, stored),
            Code::Wide(stream) => run(stream, &mut ws.wide, inputs, stored),
        }
    }
}

/// What instructions load from.
#[derive(Clone, Copy)]
pub(crate) struct Inputs<'a> {
    pub(crate) vars: &'a [f64],
    pub(crate) params: &'a [f64],
    pub(crate) consts: &'a [f64],
}

/// The sparsity pattern of a compiled Jacobian, row-major (CSR): row `r` holds the
/// columns `cols[row_start[r]..row_start[r + 1]]`, ascending. Rows are outputs and
/// columns are the unknowns in the order given to [`ExprGraph::compile`](crate::ExprGraph::compile).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JacobianPattern {
    pub(crate) rows: usize,
    pub(crate) columns: usize,
    pub(crate) row_start: Vec<u32>,
    pub(crate) cols: Vec<u32>,
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
    #[inline]
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }
    /// Columns of row `r`, ascending (empty for an out-of-range row).
    #[inline]
    pub fn row(&self, r: usize) -> &[u32] {
        match (self.row_start.get(r), self.row_start.get(r + 1)) {
            (Some(&a), Some(&b)) => &self.cols[a as usize..b as usize],
            _ => &[],
        }
    }
    /// Offsets of each row's first entry in the value array, plus the total at the end.
    #[inline]
    pub fn row_starts(&self) -> &[u32] {
        &self.row_start
    }
    /// Column of every entry, row by row.
    #[inline]
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
    pub(crate) residual_code: Code,
    pub(crate) full_code: Code,
    /// Instances run side by side after each stream (module `batch`), per stream.
    pub(crate) residual_batches: Vec<Batch>,
    pub(crate) full_batches: Vec<Batch>,
    /// Output cells of Jacobian entries that are constants, with their values: written
    /// once by [`Tape::output`], never by evaluation.
    pub(crate) constant_entries: Vec<(u32, f64)>,
    /// Serial number of this tape (shared by its clones), checked against outputs.
    pub(crate) id: u64,
    pub(crate) consts: Vec<f64>,
    pub(crate) pattern: JacobianPattern,
    pub(crate) vars_needed: usize,
    pub(crate) params_needed: usize,
}

/// Scratch memory for evaluating one [`Tape`]; make it once with [`Tape::workspace`] and
/// reuse it. One workspace per thread evaluating the same tape.
#[derive(Clone, Debug)]
pub struct TapeWorkspace {
    /// Slots of narrow streams (a fixed array: indexing needs no bounds check).
    narrow: NarrowMemory,
    /// Slots of wide streams (empty unless the tape has one).
    wide: Vec<f64>,
    /// Output buffer of the copying forms [`Tape::eval`] and [`Tape::eval_residuals`].
    output: TapeOutput,
    /// Lane memory of batched instances (grown to the largest batch run).
    batch: Vec<Lanes>,
}

/// Results of an evaluation, owned by the caller and written in place: residuals and
/// Jacobian values (in [`Tape::pattern`] order). Make it once with [`Tape::output`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TapeOutput {
    tape: u64,
    rows: usize,
    /// `[scratch, residuals, Jacobian values]`; instructions store into it directly.
    stored: Vec<f64>,
}

/// The slot array of narrow streams (512 KiB). Zeroing a fresh one costs more than a
/// small assembly's whole solve, and a host builds a mechanism per edit, so arrays of
/// dropped workspaces are kept per thread (up to [`NARROW_POOL`]) and handed to new
/// ones. Their old contents do not matter: a stream writes every slot before it reads
/// it (a workspace is already shared between the tapes that fit it).
#[derive(Debug)]
struct NarrowMemory(Option<Box<[f64; NARROW_SLOTS]>>);

/// Slot arrays kept per thread for reuse (2 MiB at most).
const NARROW_POOL: usize = 4;

thread_local! {
    static NARROW_FREE: std::cell::RefCell<Vec<Box<[f64; NARROW_SLOTS]>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl NarrowMemory {
    fn take() -> Self {
        let reused = NARROW_FREE
            .try_with(|free| free.try_borrow_mut().ok().and_then(|mut f| f.pop()))
            .ok()
            .flatten();
        NarrowMemory(Some(reused.unwrap_or_else(fresh_narrow)))
    }

    /// The slots (`None` only inside `drop`).
    fn slots(&mut self) -> &mut [f64; NARROW_SLOTS] {
        self.0.get_or_insert_with(fresh_narrow)
    }
}

fn fresh_narrow() -> Box<[f64; NARROW_SLOTS]> {
    Box::new([0.0; NARROW_SLOTS])
}

impl Clone for NarrowMemory {
    fn clone(&self) -> Self {
        let mut copy = NarrowMemory::take();
        if let Some(mine) = &self.0 {
            copy.slots().copy_from_slice(&mine[..]);
        }
        copy
    }
}

impl Drop for NarrowMemory {
    fn drop(&mut self) {
        let Some(memory) = self.0.take() else {
            return;
        };
        let _ = NARROW_FREE.try_with(|free| {
            if let Ok(mut free) = free.try_borrow_mut() {
                if free.len() < NARROW_POOL {
                    free.push(memory);
                }
            }
        });
    }
}

impl TapeOutput {
    /// Residuals (one per output).
    #[inline]
    pub fn residuals(&self) -> &[f64] {
        self.stored.get(1..1 + self.rows).unwrap_or(&[])
    }

    /// Jacobian values, in the order of the tape's [`JacobianPattern`].
    #[inline]
    pub fn jacobian(&self) -> &[f64] {
        self.stored.get(1 + self.rows..).unwrap_or(&[])
    }
}

impl Tape {
    /// The Jacobian's sparsity pattern; [`eval`](Self::eval) writes values in its order.
    pub fn pattern(&self) -> &JacobianPattern {
        &self.pattern
    }

    /// Number of outputs (residuals).
    pub fn output_count(&self) -> usize {
        self.pattern.rows
    }

    /// Number of arithmetic instructions run by [`eval`](Self::eval) (a measure of
    /// evaluation cost; loads and stores not counted).
    pub fn instruction_count(&self) -> usize {
        self.full_code.arithmetic()
            + self
                .full_batches
                .iter()
                .map(Batch::arithmetic)
                .sum::<usize>()
    }

    /// Number of value slots the full evaluation uses (its working set, in `f64`s).
    pub fn slot_count(&self) -> usize {
        self.full_code.slots().max(self.residual_code.slots())
    }

    /// Unknown values this tape reads: `vars` passed to evaluation must be at least this
    /// long (it is indexed by [`VarId::index`](crate::VarId::index)).
    pub fn vars_needed(&self) -> usize {
        self.vars_needed
    }

    /// Parameter values this tape reads: `params` must be at least this long.
    pub fn params_needed(&self) -> usize {
        self.params_needed
    }

    /// Scratch memory sized for this tape.
    pub fn workspace(&self) -> TapeWorkspace {
        let wide = match (&self.residual_code, &self.full_code) {
            (Code::Narrow(_), Code::Narrow(_)) => 0,
            _ => self.slot_count(),
        };
        TapeWorkspace {
            narrow: NarrowMemory::take(),
            wide: vec![0.0; wide],
            output: self.output(),
            batch: vec![[0.0; LANES]; self.batch_memory()],
        }
    }

    /// Whether `ws` (made by any tape) is big enough for this one: workspaces are
    /// interchangeable between tapes that fit, so one per thread serves many tapes.
    pub fn workspace_fits(&self, ws: &TapeWorkspace) -> bool {
        ws.wide.len() >= self.wide_slots()
    }

    /// Whether `out` was made by this tape (or a clone of it), so it can take its
    /// results.
    pub fn owns(&self, out: &TapeOutput) -> bool {
        out.tape == self.id
    }

    /// A buffer for this tape's results.
    pub fn output(&self) -> TapeOutput {
        let mut stored = vec![0.0; 1 + self.pattern.rows + self.pattern.nnz()];
        for &(cell, value) in &self.constant_entries {
            if let Some(x) = stored.get_mut(cell as usize) {
                *x = value;
            }
        }
        TapeOutput {
            tape: self.id,
            rows: self.pattern.rows,
            stored,
        }
    }

    /// Evaluates outputs and Jacobian into `out`, in place (the fastest form).
    pub fn evaluate(
        &self,
        ws: &mut TapeWorkspace,
        vars: &[f64],
        params: &[f64],
        out: &mut TapeOutput,
    ) -> Result<(), ExprError> {
        self.run_code((&self.full_code, &self.full_batches), ws, vars, params, out)
    }

    /// Evaluates the outputs only into `out` (its Jacobian values are left as they were).
    pub fn evaluate_residuals(
        &self,
        ws: &mut TapeWorkspace,
        vars: &[f64],
        params: &[f64],
        out: &mut TapeOutput,
    ) -> Result<(), ExprError> {
        self.run_code(
            (&self.residual_code, &self.residual_batches),
            ws,
            vars,
            params,
            out,
        )
    }

    /// Lane memory the largest batch needs.
    fn batch_memory(&self) -> usize {
        self.residual_batches
            .iter()
            .chain(&self.full_batches)
            .map(Batch::memory)
            .max()
            .unwrap_or(0)
    }

    fn run_code(
        &self,
        (code, batches): (&Code, &[Batch]),
        ws: &mut TapeWorkspace,
        vars: &[f64],
        params: &[f64],
        out: &mut TapeOutput,
    ) -> Result<(), ExprError> {
        self.check(ws, vars, params, out)?;
        let inputs = Inputs {
            vars,
            params,
            consts: &self.consts,
        };
        code.run(ws, inputs, &mut out.stored);
        if !batches.is_empty() {
            let need = self.batch_memory();
            if ws.batch.len() < need {
                ws.batch.resize(need, [0.0; LANES]);
            }
            for batch in batches {
                batch.run(&mut ws.batch, inputs, &mut out.stored);
            }
        }
        Ok(())
    }

    /// Evaluates the outputs only, into a slice (a copy: see
    /// [`evaluate_residuals`](Self::evaluate_residuals) for the in-place form).
    pub fn eval_residuals(
        &self,
        ws: &mut TapeWorkspace,
        vars: &[f64],
        params: &[f64],
        residuals: &mut [f64],
    ) -> Result<(), ExprError> {
        let mut out = std::mem::take(&mut ws.output);
        let result = self
            .fit_output(residuals.len(), None)
            .and_then(|()| self.evaluate_residuals(ws, vars, params, &mut out));
        if result.is_ok() {
            residuals.copy_from_slice(out.residuals());
        }
        ws.output = out;
        result
    }

    /// Evaluates outputs and Jacobian values (in [`pattern`](Self::pattern) order) into
    /// slices (a copy: see [`evaluate`](Self::evaluate) for the in-place form).
    pub fn eval(
        &self,
        ws: &mut TapeWorkspace,
        vars: &[f64],
        params: &[f64],
        residuals: &mut [f64],
        jacobian: &mut [f64],
    ) -> Result<(), ExprError> {
        let mut out = std::mem::take(&mut ws.output);
        let result = self
            .fit_output(residuals.len(), Some(jacobian.len()))
            .and_then(|()| self.evaluate(ws, vars, params, &mut out));
        if result.is_ok() {
            residuals.copy_from_slice(out.residuals());
            jacobian.copy_from_slice(out.jacobian());
        }
        ws.output = out;
        result
    }

    /// Checks caller slices against this tape (for the copying forms).
    fn fit_output(&self, residuals: usize, jacobian: Option<usize>) -> Result<(), ExprError> {
        let nnz = self.pattern.nnz();
        for (what, expected, got) in [
            ("residuals", self.pattern.rows, residuals),
            ("Jacobian values", nnz, jacobian.unwrap_or(nnz)),
        ] {
            if got != expected {
                return Err(ExprError::Length {
                    what,
                    expected,
                    got,
                });
            }
        }
        Ok(())
    }

    fn wide_slots(&self) -> usize {
        [&self.residual_code, &self.full_code]
            .iter()
            .map(|c| match c {
                Code::Narrow(_) => 0,
                Code::Wide(s) => s.slots,
            })
            .max()
            .unwrap_or(0)
    }

    fn check(
        &self,
        ws: &TapeWorkspace,
        vars: &[f64],
        params: &[f64],
        out: &TapeOutput,
    ) -> Result<(), ExprError> {
        if out.tape != self.id {
            return Err(ExprError::ForeignOutput);
        }
        let stored = 1 + self.pattern.rows + self.pattern.nnz();
        let checks = [
            ("workspace slots", self.wide_slots(), ws.wide.len(), false),
            ("unknowns", self.vars_needed, vars.len(), false),
            ("parameters", self.params_needed, params.len(), false),
            ("output values", stored, out.stored.len(), true),
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
}

/// Runs a stream. Indices are in range by the compiler's construction and the length
/// checks of the caller (module invariant).
/// `stored` is `[scratch, residuals, Jacobian values]`.
fn run<S: SlotIndex>(
    stream: &Stream<S>,
    s: &mut S::Memory,
    inputs: Inputs<'_>,
    stored: &mut [f64],
) {
    for ins in &stream.instrs {
        let a = &ins.a;
        let at = |k: usize| S::read(s, a[k]);
        let index = || ins.load_index();
        let v = match ins.op {
            Op::LoadVar => inputs.vars[index()],
            Op::LoadParam => inputs.params[index()],
            Op::LoadConst => inputs.consts[index()],
            Op::Copy => at(0),
            Op::Add => at(0) + at(1),
            Op::Sub => at(0) - at(1),
            Op::Mul => at(0) * at(1),
            Op::Div => at(0) / at(1),
            Op::Pow => Binary::Pow.apply(at(0), at(1)),
            Op::Atan2 => at(0).atan2(at(1)),
            Op::Min => Binary::Min.apply(at(0), at(1)),
            Op::Max => Binary::Max.apply(at(0), at(1)),
            Op::Neg => -at(0),
            Op::Sqrt => at(0).sqrt(),
            Op::Sin => at(0).sin(),
            Op::Cos => at(0).cos(),
            Op::Tan => at(0).tan(),
            Op::Asin => at(0).asin(),
            Op::Acos => at(0).acos(),
            Op::Exp => at(0).exp(),
            Op::Ln => at(0).ln(),
            Op::Abs => at(0).abs(),
            Op::Sign => Unary::Sign.apply(at(0)),
            Op::Square => {
                let x = at(0);
                x * x
            }
            Op::Powi => powi(at(0), i32::from(a[1].get() as u16 as i16)),
            Op::MulAdd => at(0) * at(1) + at(2),
            Op::MulSub => at(0) * at(1) - at(2),
            Op::SubMul => at(0) - at(1) * at(2),
            Op::Dot2 => at(0) * at(1) + at(2) * at(3),
            Op::DotSub => at(0) * at(1) - at(2) * at(3),
            Op::NegMul => -(at(0) * at(1)),
            Op::MulMul => at(0) * at(1) * at(2),
            Op::Spline => {
                let table = stream.tables.get(a[1].get()).map_or(&[][..], Vec::as_slice);
                crate::spline::blend(table.len(), at(0), a[2].get() as u8, |k| {
                    table.get(k).map_or(f64::NAN, |&slot| S::read(s, slot))
                })
            }
        };
        S::write(s, ins.d, v);
        stored[ins.out as usize] = v;
    }
}
