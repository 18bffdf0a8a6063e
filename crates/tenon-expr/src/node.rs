//! Node vocabulary of the expression DAG: typed ids, the node enum and the scalar
//! semantics of every operation (shared by constant folding, reference evaluation and
//! the tape, so the three can never disagree).

use std::fmt;

pub use crate::spline::SplineId;

/// A node of an [`ExprGraph`](crate::ExprGraph). Ids are dense and issued in creation
/// order, so a node's children always have smaller ids than the node itself.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExprId(pub(crate) u32);

/// An unknown the solver moves (a column of the Jacobian when compiled).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub(crate) u32);

/// A named parameter: constant during a solve, changeable between evaluations
/// without rebuilding or recompiling anything.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamId(pub(crate) u32);

macro_rules! id_common {
    ($t:ident, $prefix:literal) => {
        impl $t {
            /// Position of this id in its table (dense, from zero): the index into the
            /// value slice passed to evaluation.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}
id_common!(ExprId, "e");
id_common!(VarId, "x");
id_common!(ParamId, "p");

/// Operations of one argument.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum Unary {
    /// `-a`
    Neg,
    /// `sqrt(a)`; its derivative is infinite at 0.
    Sqrt,
    /// `sin(a)`, `a` in radians.
    Sin,
    /// `cos(a)`, `a` in radians.
    Cos,
    /// `tan(a)`, `a` in radians.
    Tan,
    /// `asin(a)`, result in radians.
    Asin,
    /// `acos(a)`, result in radians.
    Acos,
    /// `exp(a)`
    Exp,
    /// Natural logarithm.
    Ln,
    /// `|a|`; derivative `sign(a)` (0 at 0).
    Abs,
    /// `sign(a)` in {-1, 0, 1} (0 at 0, NaN for NaN); derivative 0.
    Sign,
}

/// Operations of two arguments.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum Binary {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `a ^ b` for a non-integer or non-constant exponent (`powf`).
    Pow,
    /// `atan2(a, b)`: the angle of the point `(b, a)`, in radians.
    Atan2,
    /// `min(a, b)`; derivative at a tie is the mean of both sides' derivatives.
    Min,
    /// `max(a, b)`; derivative at a tie is the mean of both sides' derivatives.
    Max,
}

impl Unary {
    /// The scalar value of this operation.
    #[inline]
    pub fn apply(self, a: f64) -> f64 {
        match self {
            Unary::Neg => -a,
            Unary::Sqrt => a.sqrt(),
            Unary::Sin => a.sin(),
            Unary::Cos => a.cos(),
            Unary::Tan => a.tan(),
            Unary::Asin => a.asin(),
            Unary::Acos => a.acos(),
            Unary::Exp => a.exp(),
            Unary::Ln => a.ln(),
            Unary::Abs => a.abs(),
            Unary::Sign => sign(a),
        }
    }

    /// Name as written in expression strings (`-` for negation).
    pub fn name(self) -> &'static str {
        match self {
            Unary::Neg => "-",
            Unary::Sqrt => "sqrt",
            Unary::Sin => "sin",
            Unary::Cos => "cos",
            Unary::Tan => "tan",
            Unary::Asin => "asin",
            Unary::Acos => "acos",
            Unary::Exp => "exp",
            Unary::Ln => "ln",
            Unary::Abs => "abs",
            Unary::Sign => "sign",
        }
    }
}

impl Binary {
    /// The scalar value of this operation.
    #[inline]
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Binary::Add => a + b,
            Binary::Sub => a - b,
            Binary::Mul => a * b,
            Binary::Div => a / b,
            Binary::Pow => a.powf(b),
            Binary::Atan2 => a.atan2(b),
            Binary::Min => min(a, b),
            Binary::Max => max(a, b),
        }
    }

    /// True for `+`, `*`, `min`, `max`: operands are stored in canonical order.
    pub fn is_commutative(self) -> bool {
        matches!(self, Binary::Add | Binary::Mul | Binary::Min | Binary::Max)
    }
}

/// `sign(a)`: -1, 0 or 1; NaN stays NaN.
#[inline]
pub(crate) fn sign(a: f64) -> f64 {
    if a > 0.0 {
        1.0
    } else if a < 0.0 {
        -1.0
    } else {
        a * 0.0 // 0 for +-0, NaN for NaN
    }
}

/// `min` that propagates NaN (so a bad input is never hidden).
#[inline]
pub(crate) fn min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

/// `max` that propagates NaN.
#[inline]
pub(crate) fn max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a >= b {
        a
    } else {
        b
    }
}

/// `a^n` for an integer `n`, by repeated squaring (exact for small `n`).
#[inline]
pub(crate) fn powi(a: f64, n: i32) -> f64 {
    a.powi(n)
}

/// A constant's bit pattern (so that it can be hashed and compared), held as two
/// 32-bit halves: a [`Node`] then needs 4-byte alignment and takes 12 bytes, not 16. A
/// 10,000-part build holds 600,000 nodes, walked by several passes after it is built.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ConstBits([u32; 2]);

impl ConstBits {
    /// The bits of `value`.
    pub fn of(value: f64) -> ConstBits {
        ConstBits::from_bits(value.to_bits())
    }

    /// The bits `bits` (as `f64::to_bits` gives them).
    pub fn from_bits(bits: u64) -> ConstBits {
        ConstBits([bits as u32, (bits >> 32) as u32])
    }

    /// The bits, as `f64::to_bits` gives them.
    pub fn bits(self) -> u64 {
        u64::from(self.0[0]) | (u64::from(self.0[1]) << 32)
    }

    /// The value.
    pub fn value(self) -> f64 {
        f64::from_bits(self.bits())
    }
}

/// One node of the DAG. Equal nodes are stored once (hash-consing), so `Node` equality
/// on children ids is structural equality of whole subexpressions.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum Node {
    /// A constant, stored as its bit pattern so it can be hashed.
    Const(ConstBits),
    /// An unknown.
    Var(VarId),
    /// A named parameter.
    Param(ParamId),
    /// A one-argument operation.
    Unary(Unary, ExprId),
    /// A two-argument operation.
    Binary(Binary, ExprId, ExprId),
    /// `a ^ n` for a constant integer `n`.
    Powi(ExprId, i32),
    /// The `order`-th derivative at `u` of the periodic cubic spline with coefficient
    /// table `t` (see [`SplineId`]). Its coefficients are operands too, listed by
    /// [`ExprGraph::children_of`](crate::ExprGraph::children_of), not by
    /// [`children`](Node::children).
    Spline(SplineId, ExprId, u8),
}

impl Node {
    /// The constant value, if this is a constant.
    pub fn as_const(&self) -> Option<f64> {
        match *self {
            Node::Const(bits) => Some(bits.value()),
            _ => None,
        }
    }

    /// Child ids, in operand order (at most two; a spline's coefficients are not among
    /// them, see [`ExprGraph::children_of`](crate::ExprGraph::children_of)).
    pub fn children(&self) -> Children {
        match *self {
            Node::Const(_) | Node::Var(_) | Node::Param(_) => Children([None, None]),
            Node::Unary(_, a) | Node::Powi(a, _) | Node::Spline(_, a, _) => {
                Children([Some(a), None])
            }
            Node::Binary(_, a, b) => Children([Some(a), Some(b)]),
        }
    }
}

/// Iterator over a node's (at most two) children.
#[derive(Clone, Debug)]
pub struct Children([Option<ExprId>; 2]);

impl Iterator for Children {
    type Item = ExprId;
    fn next(&mut self) -> Option<ExprId> {
        let first = self.0[0].take();
        if first.is_some() {
            self.0.swap(0, 1);
            return first;
        }
        None
    }
}

// A node is three 32-bit words (see `ConstBits`).
const _: () = assert!(std::mem::size_of::<Node>() == 12);
