//! Symbolic differentiation. Derivatives are ordinary DAG nodes, memoized per
//! `(node, variable)` (or parameter, or registered direction: forward differentiation
//! along per-unknown rates, one derivative node per node), so a second derivative is the
//! same call on the first, and shared subterms are differentiated once.
//!
//! Rules (`d` is the derivative of the operand, `self` the node itself):
//!
//! | node | derivative |
//! |---|---|
//! | `a + b`, `a - b`, `-a` | `da + db`, `da - db`, `-da` |
//! | `a * b` | `da*b + a*db` |
//! | `a / b` | `(da - self*db) / b` |
//! | `a ^ n` (integer) | `n * a^(n-1) * da` |
//! | `a ^ b` | `b * a^(b-1) * da + self * ln(a) * db` (the `ln` term vanishes for constant `b`) |
//! | `sqrt a` | `da / (2 self)` (infinite at 0) |
//! | `sin a`, `cos a`, `tan a` | `cos(a) da`, `-sin(a) da`, `(1 + self^2) da` |
//! | `asin a`, `acos a` | `+- da / sqrt(1 - a^2)` |
//! | `atan2(y, x)` | `(x dy - y dx) / (x^2 + y^2)` |
//! | `exp a`, `ln a` | `self * da`, `da / a` |
//! | `abs a`, `sign a` | `sign(a) da` (0 at 0), `0` |
//! | `spline(t, u, m)` | `spline(t, u, m + 1) du + spline(dt, u, m)` (see `spline.rs`) |
//! | `min(a, b)`, `max(a, b)` | `((da + db) -+ sign(a - b) (da - db)) / 2`: the derivative of the smaller (larger) side, the mean of both at a tie |
//!
//! Differentiation is iterative (an explicit stack), so arbitrarily deep expressions do
//! not overflow the call stack.

use crate::graph::{var_bit, ExprGraph, VarMask};
use crate::node::{Binary, ExprId, Node, ParamId, Unary, VarId};

/// What a derivative is taken with respect to: an unknown, a parameter (time, in
/// kinematic runs: `dC/dt` of a motion's formula), or along a registered direction (a
/// rate per unknown: forward mode, one derivative node per node).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Wrt {
    Var(VarId),
    Param(ParamId),
    Direction(DirectionId),
}

/// A direction in the unknowns' space registered in a graph: per unknown an expression
/// (its rate), for [`ExprGraph::derivative_along`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct DirectionId(u32);

/// A registered direction: the components and the Bloom mask of their unknowns.
#[derive(Clone, Debug, Default)]
pub(crate) struct Direction {
    of: rustc_hash::FxHashMap<VarId, ExprId>,
    mask: VarMask,
}

impl ExprGraph {
    /// `d(e)/d(v)`, as a node of this graph.
    pub fn derivative(&mut self, e: ExprId, v: VarId) -> ExprId {
        self.derivative_wrt(e, Wrt::Var(v))
    }

    /// `d(e)/d(p)` for a parameter `p` (held constant during a solve, but a function of
    /// time in a run: the time parameter's derivative gives `dC/dt`).
    pub fn derivative_param(&mut self, e: ExprId, p: ParamId) -> ExprId {
        self.derivative_wrt(e, Wrt::Param(p))
    }

    /// Registers a direction: `components` gives, per unknown, its rate (an expression;
    /// unknowns not listed have rate 0). Derivatives along it are memoized like any
    /// other, so expressions sharing subterms share their derivatives.
    pub fn new_direction(&mut self, components: &[(VarId, ExprId)]) -> DirectionId {
        let mut d = Direction::default();
        for &(v, e) in components {
            d.of.insert(v, e);
            d.mask |= var_bit(v);
        }
        self.directions.push(d);
        DirectionId((self.directions.len() - 1) as u32)
    }

    /// `sum_k d(e)/d(x_k) * rate_k` along direction `d`, by forward differentiation: one
    /// derivative node per node of `e` (where `directional_derivative` sums one
    /// derivative per unknown). The rates may be expressions of the unknowns, so a
    /// second call on the result differentiates them too (`d2/dt2` along a path whose
    /// velocity is the direction). An unknown direction gives 0.
    pub fn derivative_along(&mut self, e: ExprId, d: DirectionId) -> ExprId {
        if self.directions.get(d.0 as usize).is_none() {
            return self.zero();
        }
        self.derivative_wrt(e, Wrt::Direction(d))
    }

    /// Sets the derivative of `e` along direction `d` to `de`, where the caller knows a
    /// smaller form than the chain rule would build (a rotation matrix's rate along an
    /// angular velocity `omega` is `[omega]x R`, where differentiating its quaternion
    /// polynomials takes several times the nodes). Derivatives along `d` taken later
    /// stop at `e` and use `de`; `de` is itself differentiated like any node (a second
    /// derivative along `d` goes through it). Must come before any derivative along `d`
    /// reaches `e`; false (nothing set) where `e` does not depend on `d`'s unknowns or
    /// its derivative along `d` is already taken.
    pub fn set_derivative_along(&mut self, e: ExprId, d: DirectionId, de: ExprId) -> bool {
        let wrt = Wrt::Direction(d);
        if self.directions.get(d.0 as usize).is_none()
            || !self.may_depend(e, wrt)
            || self.deriv_memo.contains_key(&(e, wrt))
        {
            return false;
        }
        self.deriv_memo.insert((e, wrt), de);
        true
    }

    /// Whether `e` may depend on `wrt` (exact `false` for unknowns through the Bloom
    /// masks; parameters are not tracked, so always maybe).
    fn may_depend(&self, e: ExprId, wrt: Wrt) -> bool {
        match wrt {
            Wrt::Var(v) => self.var_mask(e) & var_bit(v) != 0,
            Wrt::Param(_) => true,
            Wrt::Direction(d) => {
                let mask = self.directions.get(d.0 as usize).map_or(0, |d| d.mask);
                self.var_mask(e) & mask != 0
            }
        }
    }

    fn derivative_wrt(&mut self, e: ExprId, v: Wrt) -> ExprId {
        if !self.may_depend(e, v) {
            return self.zero();
        }
        if let Some(&d) = self.deriv_memo.get(&(e, v)) {
            return d;
        }
        let mut stack = vec![e];
        while let Some(&n) = stack.last() {
            if self.deriv_memo.contains_key(&(n, v)) {
                stack.pop();
                continue;
            }
            // Children whose derivatives are still needed go on the stack first (no
            // list of their own: this runs once per node of every equation).
            let before = stack.len();
            for c in self.children_of(n) {
                if self.may_depend(c, v) && !self.deriv_memo.contains_key(&(c, v)) {
                    stack.push(c);
                }
            }
            if stack.len() > before {
                continue;
            }
            let d = self.derivative_step(n, v);
            self.deriv_memo.insert((n, v), d);
            stack.pop();
        }
        self.deriv_memo.get(&(e, v)).copied().unwrap_or(self.zero())
    }

    /// The derivative of a child already computed (or provably zero).
    fn known_derivative(&self, c: ExprId, v: Wrt) -> ExprId {
        if !self.may_depend(c, v) {
            return self.zero();
        }
        self.deriv_memo.get(&(c, v)).copied().unwrap_or(self.zero())
    }

    /// Applies the chain rule at node `n`, its children's derivatives being known.
    fn derivative_step(&mut self, n: ExprId, v: Wrt) -> ExprId {
        match self.node(n) {
            Node::Const(_) => self.zero(),
            Node::Var(w) => match v {
                Wrt::Var(x) if x == w => self.one(),
                Wrt::Direction(d) => self
                    .directions
                    .get(d.0 as usize)
                    .and_then(|d| d.of.get(&w).copied())
                    .unwrap_or(self.zero()),
                _ => self.zero(),
            },
            Node::Param(p) => {
                if Wrt::Param(p) == v {
                    self.one()
                } else {
                    self.zero()
                }
            }
            Node::Spline(t, u, order) => {
                self.spline_derivative((t, u, order), |g, c| g.known_derivative(c, v))
            }
            Node::Powi(a, k) => {
                let da = self.known_derivative(a, v);
                let p = self.powi(a, k - 1);
                let kp = self.scale(p, f64::from(k));
                self.mul(kp, da)
            }
            Node::Unary(op, a) => {
                let da = self.known_derivative(a, v);
                if da == self.zero() {
                    return da;
                }
                let factor = match op {
                    Unary::Neg => return self.neg(da),
                    Unary::Sqrt => {
                        let two_self = self.scale(n, 2.0);
                        return self.div(da, two_self);
                    }
                    Unary::Sin => self.cos(a),
                    Unary::Cos => {
                        let s = self.sin(a);
                        self.neg(s)
                    }
                    Unary::Tan => {
                        let sq = self.powi(n, 2);
                        let one = self.one();
                        self.add(one, sq)
                    }
                    Unary::Asin | Unary::Acos => {
                        let one = self.one();
                        let sq = self.powi(a, 2);
                        let diff = self.sub(one, sq);
                        let root = self.sqrt(diff);
                        let q = self.div(da, root);
                        return if op == Unary::Asin { q } else { self.neg(q) };
                    }
                    Unary::Exp => n,
                    Unary::Ln => return self.div(da, a),
                    Unary::Abs => self.sign(a),
                    Unary::Sign => return self.zero(),
                };
                self.mul(factor, da)
            }
            Node::Binary(op, a, b) => {
                let da = self.known_derivative(a, v);
                let db = self.known_derivative(b, v);
                match op {
                    Binary::Add => self.add(da, db),
                    Binary::Sub => self.sub(da, db),
                    Binary::Mul => {
                        let l = self.mul(da, b);
                        let r = self.mul(a, db);
                        self.add(l, r)
                    }
                    Binary::Div => {
                        let t = self.mul(n, db);
                        let num = self.sub(da, t);
                        self.div(num, b)
                    }
                    Binary::Pow => {
                        let one = self.one();
                        let bm1 = self.sub(b, one);
                        let p = self.pow(a, bm1);
                        let bp = self.mul(b, p);
                        let left = self.mul(bp, da);
                        let right = if db == self.zero() {
                            db
                        } else {
                            let l = self.ln(a);
                            let sl = self.mul(n, l);
                            self.mul(sl, db)
                        };
                        self.add(left, right)
                    }
                    Binary::Atan2 => {
                        // a = y, b = x
                        let x_dy = self.mul(b, da);
                        let y_dx = self.mul(a, db);
                        let num = self.sub(x_dy, y_dx);
                        let xx = self.powi(b, 2);
                        let yy = self.powi(a, 2);
                        let den = self.add(xx, yy);
                        self.div(num, den)
                    }
                    Binary::Min | Binary::Max => {
                        let sum = self.add(da, db);
                        let diff = self.sub(da, db);
                        let gap = self.sub(a, b);
                        let s = self.sign(gap);
                        let sd = self.mul(s, diff);
                        let num = if op == Binary::Min {
                            self.sub(sum, sd)
                        } else {
                            self.add(sum, sd)
                        };
                        self.scale(num, 0.5)
                    }
                }
            }
        }
    }

    /// The directional derivative `sum_k d(e)/d(x_k) * dir_k` along the direction given
    /// as `(unknown, component)` pairs. Components are expressions (typically
    /// parameters holding velocities), so the result can be differentiated again.
    pub fn directional_derivative(&mut self, e: ExprId, direction: &[(VarId, ExprId)]) -> ExprId {
        let mut terms = Vec::with_capacity(direction.len());
        for &(v, component) in direction {
            let d = self.derivative(e, v);
            terms.push(self.mul(d, component));
        }
        self.sum(&terms)
    }
}
