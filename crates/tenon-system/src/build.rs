//! Building the equations of an assembly.

use rustc_hash::FxHashMap;
use slotmap::SecondaryMap;
use tenon_expr::{ExprGraph, ExprId, ParamId, VarId};
use tenon_model::{
    matrix_to_quaternion, Assembly, CamProfile, Coordinate, Field, JointKey, MarkerSpec, PartKey,
    Placement,
};

use crate::branch::{Branches, NumericRotation};
use crate::contact::{self, Profiles};
use crate::custom;
use crate::error::SystemError;
use crate::frames::{placement_numbers, quaternion_matrix, Frame, Lowering, Transform, What};
use crate::joints::{self, AngleRequest, Fields, JointBuilder, Quantity};
use crate::owners::{OwnerVars, PartNodes};
use crate::prefetch::Prefetch;
use crate::residual::{ContactSearch, Role};

/// Nodes the equations of an assembly take, per part and per joint, to size the graph
/// once (about what the revolute chains, four-bar ladders and RSSR sets of the scale
/// benchmarks take: 59 to 72 per part in all, 66 for the chain whose joints are
/// most of it; a graph that outgrows it grows as usual).
const NODES_PER_PART: usize = 16;
const NODES_PER_JOINT: usize = 56;

/// What an equation comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A joint's own equations.
    Joint(JointKey),
    /// A joint's driving value (`angle` or `distance` field).
    Drive(JointKey, Coordinate),
    /// A motion (index into the assembly's motions).
    Motion(usize),
}

/// One residual equation.
#[derive(Debug, Clone, Copy)]
pub struct Equation {
    /// The residual expression (zero when the equation holds).
    pub residual: ExprId,
    /// What it comes from.
    pub owner: Owner,
    /// What it measures.
    pub quantity: Quantity,
    /// What it does.
    pub role: Role,
}

/// A free part's unknowns: `p` then `q = (w, x, y, z)`.
#[derive(Debug, Clone, Copy)]
pub struct FreePart {
    /// The part.
    pub part: PartKey,
    /// Its 7 unknowns.
    pub vars: [VarId; 7],
}

/// An extra unknown (a cam's contact parameter, an angle kept in `[0, 2 pi)`).
#[derive(Debug, Clone, Copy)]
pub struct ExtraUnknown {
    /// The unknown.
    pub var: VarId,
    /// The joint it belongs to.
    pub joint: JointKey,
}

/// A joint limit: `min <= value <= max` (either side may be open).
#[derive(Debug, Clone, Copy)]
pub struct LimitSpec {
    /// The joint.
    pub joint: JointKey,
    /// Which coordinate.
    pub coordinate: Coordinate,
    /// The coordinate as an expression (radians for angles, continuous over turns).
    pub value: ExprId,
    /// Lower bound.
    pub min: Option<ExprId>,
    /// Upper bound.
    pub max: Option<ExprId>,
}

/// How the assembly is held in space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grounding {
    /// At least one part is grounded in the file.
    Explicit,
    /// No part was grounded; this one (the first) is treated as grounded.
    FirstPart(PartKey),
    /// No part is grounded and none is held ([`System::build_floating`]).
    Floating,
}

/// A continuous angle: `raw + 2 pi turns`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Turns {
    pub(crate) raw: ExprId,
    pub(crate) turns: ParamId,
    pub(crate) target: Option<ExprId>,
}

/// An expression whose value at load is held by a parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoadValue {
    pub(crate) expr: ExprId,
    pub(crate) param: ParamId,
}

/// The equations of an assembly. See the crate documentation.
#[derive(Debug, Clone)]
pub struct System {
    pub(crate) graph: ExprGraph,
    pub(crate) free_parts: Vec<FreePart>,
    /// Per free part: its rotation matrix (rows) as the nodes every joint reads (see
    /// [`crate::frames::quaternion_matrix`]); the rate tapes give their derivatives
    /// along a velocity directly.
    pub(crate) rotations: Vec<[[ExprId; 3]; 3]>,
    /// Per free part: its size (see [`System::part_sizes`]).
    pub(crate) sizes: Vec<f64>,
    pub(crate) extra: Vec<ExtraUnknown>,
    pub(crate) equations: Vec<Equation>,
    pub(crate) turns: Vec<Turns>,
    pub(crate) limits: Vec<LimitSpec>,
    /// Per joint: the indicators whose signs tell its branch.
    pub(crate) branches: Branches,
    /// Per motion of the assembly (by index), the joint it drives.
    pub(crate) motion_joints: Vec<JointKey>,
    pub(crate) params: Vec<f64>,
    pub(crate) named_params: Vec<(String, ParamId)>,
    pub(crate) time: ParamId,
    pub(crate) state0: Vec<f64>,
    pub(crate) grounding: Grounding,
    /// The farthest any grounded part's markers lie from the origin (see
    /// [`System::reach`]).
    pub(crate) fixed_reach: f64,
    /// Index in `free_parts` of each free part.
    pub(crate) free_index: FxHashMap<PartKey, usize>,
    /// Which part's nodes each node made while the parts were done is (module
    /// `owners`): every such node that depends on an unknown depends on its part's
    /// alone (placements lower to parameters, a part's frame reads only its own
    /// unknowns).
    pub(crate) part_nodes: PartNodes,
    /// Per owner, the unknowns its rows read, found as the rows were made (module
    /// `owners`).
    pub(crate) owner_vars: OwnerVars,
}

struct Builder {
    graph: ExprGraph,
    lowering_params: Vec<(String, ParamId)>,
    angle_unit: tenon_model::AngleUnit,
    turns: Vec<Turns>,
    loads: Vec<LoadValue>,
    extra: Vec<(VarId, ExprId)>,
    joint: Option<JointKey>,
    extra_owner: Vec<JointKey>,
    searches: Vec<ContactSearch>,
}

impl JointBuilder for Builder {
    fn graph(&mut self) -> &mut ExprGraph {
        &mut self.graph
    }

    fn continuous_angle(&mut self, request: AngleRequest) -> ExprId {
        let turns = self.graph.new_param(format!("turns#{}", self.turns.len()));
        self.turns.push(Turns {
            raw: request.raw,
            turns,
            target: request.target,
        });
        let k = self.graph.param(turns);
        let offset = self.graph.scale(k, 2.0 * std::f64::consts::PI);
        self.graph.add(request.raw, offset)
    }

    fn load_value(&mut self, expr: ExprId) -> ExprId {
        let param = self.graph.new_param(format!("load#{}", self.loads.len()));
        self.loads.push(LoadValue { expr, param });
        self.graph.param(param)
    }

    fn extra_unknown(&mut self, name: &str, start: ExprId) -> ExprId {
        let var = self.graph.new_var(format!("{name}#{}", self.extra.len()));
        self.extra.push((var, start));
        if let Some(j) = self.joint {
            self.extra_owner.push(j);
        }
        self.graph.var(var)
    }

    fn contact_search(&mut self, search: ContactSearch) {
        self.searches.push(search);
    }
}

impl Builder {
    fn placement(&mut self, p: &Placement, what: What<'_>) -> Result<Transform, SystemError> {
        let params = std::mem::take(&mut self.lowering_params);
        let result = Lowering {
            params: &params,
            angle_unit: self.angle_unit,
        }
        .placement(&mut self.graph, p, what);
        self.lowering_params = params;
        result
    }

    fn scalar(
        &mut self,
        s: &tenon_model::Scalar,
        what: What<'_>,
        is_angle: bool,
    ) -> Result<ExprId, SystemError> {
        let params = std::mem::take(&mut self.lowering_params);
        let low = Lowering {
            params: &params,
            angle_unit: self.angle_unit,
        };
        let result = if is_angle {
            low.angle(&mut self.graph, s, what)
        } else {
            low.scalar(&mut self.graph, s, what)
        };
        self.lowering_params = params;
        result
    }
}

impl System {
    /// Builds the equations of `assembly` (its model must be valid; parameters are
    /// evaluated here too).
    pub fn build(assembly: &Assembly) -> Result<System, SystemError> {
        Self::build_with(assembly, true)
    }

    /// [`build`](Self::build), but an assembly with no grounded part keeps every part
    /// free (dynamics: a free-floating mechanism falls as a whole) instead of holding its
    /// first part.
    pub fn build_floating(assembly: &Assembly) -> Result<System, SystemError> {
        Self::build_with(assembly, false)
    }

    fn build_with(assembly: &Assembly, ground_first: bool) -> Result<System, SystemError> {
        let values = assembly.parameter_values();
        let mut graph = ExprGraph::with_capacity(
            NODES_PER_PART * assembly.part_count() + NODES_PER_JOINT * assembly.joint_count(),
        );
        // Seven unknowns a free part (position and quaternion).
        graph.reserve_unknowns(7 * assembly.part_count());
        let mut b = Builder {
            graph,
            lowering_params: Vec::new(),
            angle_unit: assembly.units().angle,
            turns: Vec::new(),
            loads: Vec::new(),
            extra: Vec::new(),
            joint: None,
            extra_owner: Vec::new(),
            searches: Vec::new(),
        };
        let mut params = Vec::new();
        for p in assembly.parameters() {
            let id = b.graph.new_param(p.name.clone());
            b.lowering_params.push((p.name.clone(), id));
            // Every parameter of a valid assembly has a value.
            let value = values
                .get(&p.name)
                .ok_or_else(|| SystemError::Unsupported {
                    what: format!("parameter '{}'", p.name),
                    message: "has no value".into(),
                })?;
            params.push(value);
        }
        let time = b.graph.new_param("t");
        b.lowering_params.push(("t".into(), time));
        params.push(0.0);
        let named_params = b.lowering_params.clone();

        // Parts: grounded ones are expressions of parameters, free ones unknowns.
        let any_grounded = assembly.parts().any(|(_, p)| p.grounded);
        let grounding = match (any_grounded, assembly.parts().next()) {
            (false, Some((k, _))) if ground_first => Grounding::FirstPart(k),
            (false, _) => Grounding::Floating,
            (true, _) => Grounding::Explicit,
        };
        // Per part and per joint, by their keys' slots (a map hashed them all over its
        // memory; a chain's joints look up parts one after another).
        // Everything per part and per joint is sized at once: at 10,000 parts, growing
        // these lists by doubling copied megabytes through the cache.
        let parts = assembly.part_count();
        let mut transforms: SecondaryMap<PartKey, Transform> = SecondaryMap::with_capacity(parts);
        // Per part, its rotation as far as it is numbers (for branch indicators).
        let mut numeric_rotations: SecondaryMap<PartKey, NumericRotation> =
            SecondaryMap::with_capacity(parts);
        let mut free_parts = Vec::with_capacity(parts);
        let mut rotations = Vec::with_capacity(parts);
        let mut sizes = Vec::with_capacity(parts);
        let mut state0 = Vec::with_capacity(7 * parts);
        // Where each free part's nodes start (module `owners`), kept only where a
        // walk would use it: a small assembly makes no list at all.
        let track_parts = PartNodes::worth_keeping(parts);
        let mut part_nodes: Vec<usize> =
            Vec::with_capacity(if track_parts { parts + 1 } else { 0 });
        let mut fixed_reach = 0.0f64;
        // The next part's markers asked for (module `prefetch`).
        let prefetch = Prefetch::for_parts(parts);
        let mut ahead = prefetch.map(|_| assembly.parts().skip(1));
        for (key, part) in assembly.parts() {
            if let (Some(prefetch), Some((_, next))) =
                (prefetch, ahead.as_mut().and_then(Iterator::next))
            {
                prefetch.slice(&next.markers);
            }
            let grounded = part.grounded || grounding == Grounding::FirstPart(key);
            // A free part's placement is only its initial state: given in numbers, none
            // of it enters the graph (a 10,000-part build made 120,000 constants of
            // them); with expressions, it is lowered and evaluated with the parameters.
            let numbers = (!grounded)
                .then(|| placement_numbers(&part.placement, b.angle_unit))
                .flatten();
            let (p, m) = match numbers {
                Some(numbers) => numbers,
                None => {
                    let what = What::of("part", &part.id).with("placement");
                    let placed = b.placement(&part.placement, what)?;
                    if grounded {
                        let at = b.graph.evaluate(&placed.translation, &[], &params)?;
                        let from_origin = at.iter().map(|x| x * x).sum::<f64>().sqrt();
                        fixed_reach = fixed_reach
                            .max(from_origin + part_size(part, values, assembly.units()));
                        if let Some(matrix) = constant_matrix(&b.graph, &placed.rotation) {
                            let numeric = NumericRotation {
                                quaternion: None,
                                matrix,
                            };
                            numeric_rotations.insert(key, numeric);
                        }
                        transforms.insert(key, placed);
                        continue;
                    }
                    let mut outputs: Vec<ExprId> = placed.translation.to_vec();
                    outputs.extend(placed.rotation.iter().flatten());
                    let v = b.graph.evaluate(&outputs, &[], &params)?;
                    let m = [[v[3], v[4], v[5]], [v[6], v[7], v[8]], [v[9], v[10], v[11]]];
                    ([v[0], v[1], v[2]], m)
                }
            };
            let q = matrix_to_quaternion(m);
            if track_parts {
                part_nodes.push(b.graph.node_count());
            }
            let names = ["px", "py", "pz", "qw", "qx", "qy", "qz"];
            let vars = b.graph.new_vars_of(&part.id, names);
            state0.extend([p[0], p[1], p[2], q[0], q[1], q[2], q[3]]);
            let e = vars.map(|v| b.graph.var(v));
            let rotation = quaternion_matrix(&mut b.graph, [e[3], e[4], e[5], e[6]]);
            transforms.insert(
                key,
                Transform {
                    rotation,
                    translation: [e[0], e[1], e[2]],
                },
            );
            let numeric = NumericRotation {
                quaternion: Some([3, 4, 5, 6].map(|k| vars[k].index() as u32)),
                matrix: IDENTITY,
            };
            numeric_rotations.insert(key, numeric);
            free_parts.push(FreePart { part: key, vars });
            rotations.push(rotation);
            sizes.push(part_size(part, values, assembly.units()));
        }

        if track_parts {
            part_nodes.push(b.graph.node_count());
        }
        let part_nodes = PartNodes::new(part_nodes);
        // Each owner's unknowns, found right after its rows are made (module `owners`).
        let mut owner_vars = OwnerVars::default();
        let mut record = |graph: &mut ExprGraph, equations: &[Equation], start: usize| {
            owner_vars.record(graph, equations, start, (&part_nodes, &free_parts));
        };
        // Most joints have five or six equations.
        let joint_count = assembly.joint_count();
        let mut equations = Vec::with_capacity(6 * joint_count + assembly.motions().len());
        let mut limits = Vec::new();
        let mut branches = Branches::with_capacity(joint_count);
        let mut frames: SecondaryMap<JointKey, (Frame, Frame)> =
            SecondaryMap::with_capacity(joint_count);
        // The next joint's parts' markers asked for (module `prefetch`).
        let mut ahead = prefetch.map(|_| assembly.joints().skip(1));
        for (key, joint) in assembly.joints() {
            if let (Some(prefetch), Some((_, next))) =
                (prefetch, ahead.as_mut().and_then(Iterator::next))
            {
                for end in [&next.i, &next.j] {
                    if let Some(part) = assembly.part(end.part) {
                        prefetch.slice(&part.markers);
                    }
                }
            }
            if joint.suppressed {
                continue;
            }
            b.joint = Some(key);
            let what = What::of("joint", &joint.id);
            // The world frame of one end's marker, and its rotation as far as it is
            // numbers.
            let mut frame_of = |end: &tenon_model::MarkerRef| -> Result<
                (Frame, Option<NumericRotation>),
                SystemError,
            > {
                    let part = assembly
                        .part(end.part)
                        .ok_or_else(|| SystemError::Unsupported {
                            what: what.to_string(),
                            message: "a joint end names a part of another assembly".into(),
                        })?;
                    let local = match &end.marker {
                        MarkerSpec::Named(name) => {
                            assembly.marker(end.part, name).ok_or_else(|| {
                                SystemError::Unsupported {
                                    what: what.to_string(),
                                    message: format!("part '{}' has no marker '{name}'", part.id),
                                }
                            })?
                        }
                        MarkerSpec::Inline(p) => p,
                    };
                    let local = b.placement(local, what)?;
                    let part_t = transforms.get(end.part).copied().ok_or_else(|| {
                        SystemError::Unsupported {
                            what: what.to_string(),
                            message: "a joint end names an unknown part".into(),
                        }
                    })?;
                    let numeric = numeric_rotations.get(end.part).and_then(|part| {
                        let local = constant_matrix(&b.graph, &local.rotation)?;
                        Some(NumericRotation {
                            quaternion: part.quaternion,
                            matrix: matrix_product(&part.matrix, &local),
                        })
                    });
                    Ok((Frame::new(part_t, local), numeric))
                };
            let ((fi, ni), (fj, nj)) = (frame_of(&joint.i)?, frame_of(&joint.j)?);
            let mut fields = Fields { values: Vec::new() };
            for (field, value) in &joint.fields {
                let is_angle = *field == Field::Angle;
                let lowered = b.scalar(value, what.with(field.key()), is_angle)?;
                fields.values.push((*field, lowered));
            }
            let mut lowered_profiles = [None, None];
            for (slot, profile) in [(0, &joint.profile_i), (1, &joint.profile)] {
                let Some(p) = profile else { continue };
                let scalars: Vec<&tenon_model::Scalar> = match p {
                    CamProfile::Circle { radius } => vec![radius],
                    CamProfile::Polar(r) => r.iter().collect(),
                    CamProfile::Points(points) => points.iter().flatten().collect(),
                };
                let mut lowered = Vec::with_capacity(scalars.len());
                for r in scalars {
                    lowered.push(b.scalar(r, what.with("profile"), false)?);
                }
                lowered_profiles[slot] = Some(contact::lower_profile(&mut b.graph, p, &lowered));
            }
            let missing = (joint.joint_type.takes_profile() && lowered_profiles[1].is_none())
                || (joint.joint_type.takes_profile_i() && lowered_profiles[0].is_none());
            if missing {
                return Err(SystemError::Unsupported {
                    what: what.to_string(),
                    message: format!("a {} joint needs its profiles", joint.joint_type.name()),
                });
            }
            let profiles = Profiles {
                i: lowered_profiles[0].as_ref(),
                j: lowered_profiles[1].as_ref(),
            };
            for &axis in joints::branch_axes(joint.joint_type) {
                let g = &mut b.graph;
                branches.push(key, axis, [ni, nj], || fi.axes_dot(g, axis, &fj, axis));
            }
            let mut residuals =
                joints::equations(&mut b, joint.joint_type, &fi, &fj, &fields, profiles);
            if joint.joint_type == tenon_model::JointType::Expression {
                let params = b.lowering_params.clone();
                let unit = b.angle_unit;
                residuals.extend(custom::residuals(
                    &mut b,
                    &joint.residuals,
                    (&fi, &fj),
                    &params,
                    unit,
                    &what.to_string(),
                )?);
            }
            let start = equations.len();
            for r in residuals {
                equations.push(Equation {
                    residual: r.expr,
                    owner: Owner::Joint(key),
                    quantity: r.quantity,
                    role: r.role,
                });
            }
            record(&mut b.graph, &equations, start);
            // Driving values lock the free coordinate.
            for (field, coordinate) in [
                (Field::Angle, Coordinate::Angle),
                (Field::Distance, Coordinate::Distance),
            ] {
                let is_drive = joint.joint_type.field_use(field).is_some_and(|u| u.drive);
                if let (true, Some(target)) = (is_drive, fields.get(field)) {
                    let (value, quantity) =
                        coordinate_expr(&mut b, coordinate, &fi, &fj, Some(target));
                    equations.push(Equation {
                        residual: b.graph.sub(value, target),
                        owner: Owner::Drive(key, coordinate),
                        quantity,
                        role: Role::Geometry,
                    });
                    record(&mut b.graph, &equations, equations.len() - 1);
                }
            }
            // Limits.
            for (range, coordinate) in [
                (&joint.limits.angle, Coordinate::Angle),
                (&joint.limits.distance, Coordinate::Distance),
            ] {
                let Some(range) = range else { continue };
                let is_angle = coordinate == Coordinate::Angle;
                let (value, _) = coordinate_expr(&mut b, coordinate, &fi, &fj, None);
                let min = match &range.min {
                    Some(s) => Some(b.scalar(s, what.with("limit"), is_angle)?),
                    None => None,
                };
                let max = match &range.max {
                    Some(s) => Some(b.scalar(s, what.with("limit"), is_angle)?),
                    None => None,
                };
                limits.push(LimitSpec {
                    joint: key,
                    coordinate,
                    value,
                    min,
                    max,
                });
            }
            // Kept for the motions (with the axes made so far).
            frames.insert(key, (fi, fj));
        }
        b.joint = None;

        // Motions: the joint's free coordinate follows a function of time.
        let motion_joints: Vec<JointKey> = assembly.motions().iter().map(|m| m.joint).collect();
        for (index, motion) in assembly.motions().iter().enumerate() {
            let Some(joint) = assembly.joint(motion.joint) else {
                continue;
            };
            if joint.suppressed {
                continue;
            }
            let Some((fi, fj)) = frames.get(motion.joint) else {
                continue;
            };
            let is_angle = motion.coordinate == Coordinate::Angle;
            let target = b.scalar(
                &motion.value,
                What::of("motion of joint", &joint.id),
                is_angle,
            )?;
            let (value, quantity) =
                coordinate_expr(&mut b, motion.coordinate, fi, fj, Some(target));
            equations.push(Equation {
                residual: b.graph.sub(value, target),
                owner: Owner::Motion(index),
                quantity,
                role: Role::Geometry,
            });
            record(&mut b.graph, &equations, equations.len() - 1);
        }
        owner_vars.finish();

        // Values at load: turn counters, load values, extra unknowns. Parameter ids are
        // dense in creation order: the assembly's parameters and t came first.
        let mut params_full = vec![0.0; b.graph.param_count()];
        params_full[..params.len()].copy_from_slice(&params);
        let extra_start: Vec<(VarId, ExprId)> = b.extra.clone();
        // Extra unknowns start where the load pose puts them (needs the state).
        state0.resize(b.graph.var_count(), 0.0);
        for &(var, start) in &extra_start {
            let raw = b.graph.evaluate(&[start], &state0, &params_full)?[0];
            state0[var.index()] = raw.rem_euclid(2.0 * std::f64::consts::PI);
        }
        for search in &b.searches {
            contact::start(&mut b.graph, search, &mut state0, &params_full)?;
        }
        // Raw angles and targets read the pose and the file's parameters, never a turn
        // counter: all evaluated in one walk of the graph.
        let mut at_load: Vec<ExprId> = Vec::with_capacity(2 * b.turns.len());
        for t in &b.turns {
            at_load.push(t.raw);
            at_load.extend(t.target);
        }
        let values = b.graph.evaluate(&at_load, &state0, &params_full)?;
        let mut values = values.into_iter();
        for t in &b.turns {
            let raw = values.next().unwrap_or(f64::NAN);
            let k = match t.target {
                Some(_) => {
                    let goal = values.next().unwrap_or(f64::NAN);
                    ((goal - raw) / (2.0 * std::f64::consts::PI)).round()
                }
                None => 0.0,
            };
            params_full[t.turns.index()] = if k.is_finite() { k } else { 0.0 };
        }
        for l in &b.loads {
            params_full[l.param.index()] = b.graph.evaluate(&[l.expr], &state0, &params_full)?[0];
        }
        let extra = extra_start
            .iter()
            .zip(&b.extra_owner)
            .map(|(&(var, _), &joint)| ExtraUnknown { var, joint })
            .collect();
        Ok(System {
            graph: b.graph,
            sizes,
            extra,
            equations,
            turns: b.turns,
            limits,
            branches,
            motion_joints,
            params: params_full,
            named_params,
            time,
            state0,
            grounding,
            fixed_reach,
            free_index: free_parts
                .iter()
                .enumerate()
                .map(|(k, fp)| (fp.part, k))
                .collect(),
            free_parts,
            rotations,
            part_nodes,
            owner_vars,
        })
    }

    /// The expression graph (for compiling subsets, diagnostics, display).
    pub fn graph(&self) -> &ExprGraph {
        &self.graph
    }
    /// All equations, joint by joint in file order, then motions.
    pub fn equations(&self) -> &[Equation] {
        &self.equations
    }
    /// The joint equation `row` belongs to: its own, the one its driving value fixes, or
    /// the one its motion drives (`None` past the last equation).
    pub fn joint_of(&self, row: usize) -> Option<JointKey> {
        match self.equations.get(row)?.owner {
            Owner::Joint(j) | Owner::Drive(j, _) => Some(j),
            Owner::Motion(m) => self.motion_joints.get(m).copied(),
        }
    }
    /// Free parts and their unknowns, in file order.
    pub fn free_parts(&self) -> &[FreePart] {
        &self.free_parts
    }
    /// The index in [`free_parts`](Self::free_parts) of part `key` (`None`: grounded
    /// or not in the assembly).
    pub fn free_index_of(&self, key: PartKey) -> Option<usize> {
        self.free_index.get(&key).copied()
    }
    /// Per free part (as [`free_parts`](Self::free_parts)), its size in model units:
    /// the largest distance of its markers from its origin, at least 1. A rotation of
    /// `dtheta` moves the part's markers by about `size * dtheta`, so the solver weighs
    /// rotation steps by it. Evaluated once, with the parameters at build.
    pub fn part_sizes(&self) -> &[f64] {
        &self.sizes
    }
    /// How far the assembly reaches from the origin at `state`: the largest distance of
    /// a part's origin from the world origin plus its size, over free parts (at `state`)
    /// and grounded ones (as built). Coordinates of this size carry rounding errors of
    /// about `reach * f64::EPSILON`, so length tolerances are scaled by it.
    pub fn reach(&self, state: &[f64]) -> f64 {
        self.free_parts
            .iter()
            .zip(&self.sizes)
            .map(|(part, size)| {
                let squared: f64 = part.vars[..3]
                    .iter()
                    .map(|v| state.get(v.index()).map_or(0.0, |x| x * x))
                    .sum();
                squared.sqrt() + size
            })
            .fold(self.fixed_reach, f64::max)
    }
    /// Extra unknowns (cam contact parameters).
    pub fn extra_unknowns(&self) -> &[ExtraUnknown] {
        &self.extra
    }
    /// Joint limits.
    pub fn limits(&self) -> &[LimitSpec] {
        &self.limits
    }
    /// How the assembly is held.
    pub fn grounding(&self) -> Grounding {
        self.grounding
    }
    /// Unknown values at load (indexed by `VarId::index`).
    pub fn initial_state(&self) -> Vec<f64> {
        self.state0.clone()
    }
    /// The residual expressions of equations `rows` (indices into
    /// [`equations`](Self::equations)); an index out of range is refused.
    pub(crate) fn residuals_of_rows(&self, rows: &[usize]) -> Result<Vec<ExprId>, SystemError> {
        rows.iter()
            .map(|&r| {
                self.equations
                    .get(r)
                    .map(|eq| eq.residual)
                    .ok_or(SystemError::WrongLength {
                        what: "equation rows",
                        expected: self.equations.len(),
                        actual: r + 1,
                    })
            })
            .collect()
    }

    /// Number of unknowns (the length of a state).
    pub fn state_len(&self) -> usize {
        self.state0.len()
    }
    /// Number of parameters (the length of a parameter vector): the assembly's, `t`,
    /// turn counters and values held from load.
    pub fn parameter_count(&self) -> usize {
        self.params.len()
    }
    /// Checks the lengths of a state and a parameter vector (every public entry that
    /// takes them calls this once; inside, indexing is direct).
    pub fn check_lengths(&self, state: &[f64], params: &[f64]) -> Result<(), SystemError> {
        check_length("state", self.state_len(), state.len())?;
        check_length("parameters", self.parameter_count(), params.len())
    }
    /// Parameter values at load (indexed by `ParamId::index`), with `t = 0`.
    pub fn initial_parameters(&self) -> Vec<f64> {
        self.params.clone()
    }
    /// The parameter of that name (an assembly parameter, or `t`).
    pub fn parameter(&self, name: &str) -> Option<ParamId> {
        self.named_params
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, p)| p)
    }
    /// The time parameter `t`.
    pub fn time(&self) -> ParamId {
        self.time
    }
}

/// A vector of `actual` values where `expected` are needed is an error naming both.
const IDENTITY: [[f64; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

/// A matrix of constant expressions in numbers (`None` if any entry is not constant).
fn constant_matrix(g: &ExprGraph, m: &[[ExprId; 3]; 3]) -> Option<[[f64; 3]; 3]> {
    let mut out = [[0.0; 3]; 3];
    for (row, exprs) in out.iter_mut().zip(m) {
        for (x, &e) in row.iter_mut().zip(exprs) {
            *x = g.as_const(e)?;
        }
    }
    Some(out)
}

/// `a * b` for 3x3 matrices (rows).
fn matrix_product(a: &[[f64; 3]; 3], b: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    std::array::from_fn(|i| {
        std::array::from_fn(|j| a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j])
    })
}

pub(crate) fn check_length(
    what: &'static str,
    expected: usize,
    actual: usize,
) -> Result<(), SystemError> {
    if expected == actual {
        Ok(())
    } else {
        Err(SystemError::WrongLength {
            what,
            expected,
            actual,
        })
    }
}

/// The largest distance of a part's markers from its origin (at least 1 model unit).
fn part_size(
    part: &tenon_model::Part,
    values: &tenon_model::ParameterValues,
    units: tenon_model::Units,
) -> f64 {
    part.markers
        .iter()
        .filter_map(|(_, m)| m.numbers(values, units))
        .map(|pose| {
            let [x, y, z] = pose.position;
            (x * x + y * y + z * z).sqrt()
        })
        .fold(0.0f64, f64::max)
        .max(1.0)
}

/// A joint's free coordinate: the continuous twist angle of `x_i` from `x_j` about `z_j`
/// (starting on the turn nearest `target` when given), or the slide `d . z_j`.
fn coordinate_expr(
    b: &mut Builder,
    coordinate: Coordinate,
    fi: &Frame,
    fj: &Frame,
    target: Option<ExprId>,
) -> (ExprId, Quantity) {
    match coordinate {
        Coordinate::Angle => {
            let raw = joints::twist_angle(&mut b.graph, fi, fj);
            (
                b.continuous_angle(AngleRequest { raw, target }),
                Quantity::Angle,
            )
        }
        Coordinate::Distance => (
            joints::slide_distance(&mut b.graph, fi, fj),
            Quantity::Length,
        ),
    }
}
