//! Tenon's expression engine: a hash-consed DAG of scalar expressions with symbolic
//! derivatives, compiled once into an instruction tape that evaluates residuals and their
//! sparse Jacobian without allocating.
//!
//! ```
//! use tenon_expr::{ExprGraph, ParseOptions, AngleUnit, parse_into};
//! # fn main() -> Result<(), tenon_expr::ExprError> {
//!
//! let mut g = ExprGraph::new();
//! let x = g.new_var("x");
//! let y = g.new_var("y");
//! let length = g.new_param("L");
//! let (xe, ye, le) = (g.var(x), g.var(y), g.param(length));
//! // x^2 + y^2 - L^2 = 0 and y = x * tan(30 deg), the second parsed from a string.
//! let xx = g.powi(xe, 2);
//! let yy = g.powi(ye, 2);
//! let ll = g.powi(le, 2);
//! let circle = g.add(xx, yy);
//! let circle = g.sub(circle, ll);
//! let opts = ParseOptions { angle_unit: AngleUnit::Degrees };
//! let line = parse_into(&mut g, "y - x * tan(30)", opts, &mut |name, g| match name {
//!     "x" => Some(g.var(x)),
//!     "y" => Some(g.var(y)),
//!     _ => None,
//! })?;
//!
//! let tape = g.compile(&[circle, line], &[x, y])?;
//! let mut ws = tape.workspace();
//! let (mut r, mut jac) = (vec![0.0; 2], vec![0.0; tape.pattern().nnz()]);
//! tape.eval(&mut ws, &[3.0, 4.0], &[5.0], &mut r, &mut jac)?;
//! assert!(r[0].abs() < 1e-12);
//! assert_eq!(jac[..2], [6.0, 8.0]); // d(circle)/dx, d(circle)/dy
//! # Ok(())
//! # }
//! ```
//!
//! Module map: `node` (ids, operations and their scalar semantics), `graph` (arena,
//! hash-consing, simplification), `deriv` (symbolic differentiation), `compile`
//! (symbolic Jacobian, scheduling, slot allocation), `shape` (compiling like groups of
//! outputs once), `tape` (streams and evaluation), `eval` (reference evaluation, display), `spline`
//! (periodic cubic splines as single nodes), `table` (the hash-consing table), `parse`
//! (expression strings).

#![warn(missing_docs)]

mod batch;
mod compile;
mod deriv;
mod error;
mod eval;
mod graph;
mod node;
mod parse;
mod shape;
mod spline;
mod table;
mod tape;

pub use compile::LocalColumns;
pub use deriv::DirectionId;
pub use error::{ExprError, ParseError};
pub use graph::ExprGraph;
pub use node::{Binary, Children, ConstBits, ExprId, Node, ParamId, SplineId, Unary, VarId};
pub use parse::{parse, parse_into, AngleUnit, ParseOptions, ParsedExpr, MAX_NESTING};
pub use tape::{JacobianPattern, Tape, TapeOutput, TapeWorkspace};
