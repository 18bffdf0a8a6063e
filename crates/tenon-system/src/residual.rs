//! What every joint's equations are made of and what they need from the builder: a
//! residual and what it measures, continuous angles, extra unknowns, contact searches.
//! Both `joints` and `contact` build on this; it builds on neither.

use tenon_expr::{ExprGraph, ExprId};

/// What a residual measures, for tolerances and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// A length in model units.
    Length,
    /// An angle in radians (or a direction cosine, which is one near zero).
    Angle,
}

/// What an equation does in the mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// Places parts: points on points, lines, planes; axes aligned; values driven.
    #[default]
    Geometry,
    /// Relates the motions that other joints allow (a screw's advance to its turn,
    /// gears, belts, rack and pinion): meaningful once those joints hold, and far from
    /// that (an axis still across its line) a pull in a misleading direction. A solve
    /// that stalls with such equations in it places the parts without them first.
    Coupling,
}

/// One residual of a joint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Residual {
    pub(crate) expr: ExprId,
    pub(crate) quantity: Quantity,
    pub(crate) role: Role,
}

impl Residual {
    /// The same residual, as a coupling (see [`Role::Coupling`]).
    pub(crate) fn coupling(self) -> Residual {
        Residual {
            role: Role::Coupling,
            ..self
        }
    }
}

/// An angle that must stay continuous over many turns: `raw + 2 pi turns`, with
/// `turns` a parameter the state update keeps so that the angle does not jump by a turn.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AngleRequest {
    /// `atan2(...)` in (-pi, pi].
    pub(crate) raw: ExprId,
    /// For a driving angle: the target at load, to start on the nearest turn.
    pub(crate) target: Option<ExprId>,
}

/// What a joint's equations need from the builder.
pub(crate) trait JointBuilder {
    fn graph(&mut self) -> &mut ExprGraph;
    /// A continuous angle (see [`AngleRequest`]); returns `raw + 2 pi turns`.
    fn continuous_angle(&mut self, request: AngleRequest) -> ExprId;
    /// The load value of a continuous angle (a parameter set from the loaded pose).
    fn load_value(&mut self, angle: ExprId) -> ExprId;
    /// A new unknown (a cam's contact parameter, an angle kept in `[0, 2 pi)`) starting
    /// at the value of `start` at load.
    fn extra_unknown(&mut self, name: &str, start: ExprId) -> ExprId;
    /// Overrides the start of contact parameters by a search at load (see
    /// [`crate::contact::ContactSearch`]).
    fn contact_search(&mut self, search: ContactSearch);
}

/// A search for where contact parameters start: each curve is sampled at `samples`
/// equal steps of its parameter at the loaded pose, the parameters start at the samples
/// closest to `point` (one curve) or to each other (two curves), and are then refined by
/// Gauss-Newton on the joint's `residuals` over the parameters alone (kept only when it
/// lowers them), so a file posed in contact loads in contact.
#[derive(Debug, Clone)]
pub(crate) struct ContactSearch {
    /// Each curve: its parameter (an extra unknown), the world point it traces, samples.
    pub(crate) curves: Vec<(ExprId, [ExprId; 3], usize)>,
    /// For a single curve: the point it must reach.
    pub(crate) point: Option<[ExprId; 3]>,
    /// The joint's equations.
    pub(crate) residuals: Vec<ExprId>,
}

pub(crate) fn length(expr: ExprId) -> Residual {
    Residual {
        expr,
        quantity: Quantity::Length,
        role: Role::Geometry,
    }
}

pub(crate) fn angle(expr: ExprId) -> Residual {
    Residual {
        expr,
        quantity: Quantity::Angle,
        role: Role::Geometry,
    }
}
