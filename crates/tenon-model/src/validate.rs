//! The rules a model element obeys once its numbers are known: joint fields and their
//! ranges, profiles, limits, placements, mass and inertia, motions, forces and
//! simulation settings.
//!
//! One owner for every rule: `Assembly`'s builders call these (so an assembly built in
//! code is held to the same rules as a file), both readers call them through the
//! builders and put their own place (a JSON path, a line) in front of [`Invalid::at`],
//! and a parameter change re-runs them over the whole assembly.
//!
//! **Invariant:** the message of a broken rule is the same whoever built the element;
//! only the place differs.

use std::fmt;

use crate::assembly::{Forces, Mass, Motion, Part, Simulation, Spring};
use crate::joint::{CamProfile, Field, Joint, Limits, MarkerSpec, Rule, MAX_PROFILE_POINTS};
use crate::placement::Placement;
use crate::scalar::{ParameterValues, Scalar, Units};

/// Points of a profile closer than this (relative to their size, at least 1 unit) count
/// as the same point.
pub(crate) const PROFILE_POINT_TOLERANCE: f64 = 1e-12;

/// A broken rule: where in the element (a path relative to it, spelled as the JSON
/// format spells it: `distance`, `profile.polar[3]`, `i.position[1]`; empty for the
/// element as a whole) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub(crate) at: String,
    pub(crate) message: String,
}

impl Invalid {
    fn new(at: impl Into<String>, message: impl Into<String>) -> Self {
        Invalid {
            at: at.into(),
            message: message.into(),
        }
    }

    /// The same problem seen from a containing element (`prefix.at`).
    pub(crate) fn under(self, prefix: &str) -> Self {
        Invalid {
            at: join(prefix, &self.at),
            message: self.message,
        }
    }

    /// The full path below `parent` (a JSON path, or empty).
    pub(crate) fn path_below(&self, parent: &str) -> String {
        join(parent, &self.at)
    }
}

/// `parent.child` (indexes `[k]` join without a dot; either side may be empty).
fn join(parent: &str, child: &str) -> String {
    match (parent.is_empty(), child.is_empty()) {
        (true, _) => child.to_string(),
        (_, true) => parent.to_string(),
        _ if child.starts_with('[') => format!("{parent}{child}"),
        _ => format!("{parent}.{child}"),
    }
}

/// Whether a key is written after a dot in a path (`a.key`), else in brackets as a JSON
/// string (`a["two words"]`).
pub(crate) fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// `parent.key`, or `parent["key"]` for keys that are not plain identifiers (how the
/// JSON paths of errors spell object keys).
pub(crate) fn key_path(parent: &str, key: &str) -> String {
    if is_plain_key(key) {
        // Built by hand: readers form a path per object they enter, and `format!`
        // was a tenth of reading a large file.
        let mut path = String::with_capacity(parent.len() + 1 + key.len());
        path.push_str(parent);
        if !parent.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        path
    } else {
        format!("{parent}[{}]", serde_json::Value::String(key.to_string()))
    }
}

type Checked = Result<(), Invalid>;

/// The numbers an element's expressions take: parameter values and units.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Numbers<'a> {
    pub(crate) values: &'a ParameterValues,
    pub(crate) units: Units,
}

// Places are `fmt::Arguments`, spelled out only when a rule is broken: a parameter
// change re-checks every element, and formatting a path per number would cost more
// than the checks.
impl Numbers<'_> {
    /// A scalar's value (at time `t` for what may move), finite.
    pub(crate) fn eval(
        &self,
        s: &Scalar,
        at: fmt::Arguments<'_>,
        t: Option<f64>,
    ) -> Result<f64, Invalid> {
        self.values
            .eval(s, t)
            .map_err(|e| Invalid::new(at.to_string(), e.message))
    }

    /// A scalar's value, checked against `rule`.
    pub(crate) fn rule(
        &self,
        s: &Scalar,
        at: fmt::Arguments<'_>,
        rule: Rule,
    ) -> Result<f64, Invalid> {
        let x = self.eval(s, at, None)?;
        rule.check(x, self.units.angle)
            .map_err(|message| Invalid::new(at.to_string(), message))?;
        Ok(x)
    }

    fn vector(&self, v: &[Scalar], at: fmt::Arguments<'_>, t: Option<f64>) -> Checked {
        for (k, s) in v.iter().enumerate() {
            self.eval(s, format_args!("{at}[{k}]"), t)?;
        }
        Ok(())
    }

    /// A placement evaluates: every number (the first that does not names its place),
    /// then its rotation (zero axis or quaternion, non-orthonormal matrix).
    pub(crate) fn placement(&self, p: &Placement, t: Option<f64>) -> Checked {
        let Err(problem) = p.evaluate(self.values, self.units.angle.radians(), t) else {
            return Ok(());
        };
        // Which number, when a number is what failed.
        self.vector(&p.position, format_args!("position"), t)?;
        match &p.rotation {
            crate::Rotation::Identity => {}
            crate::Rotation::Quaternion(q) => {
                self.vector(q, format_args!("rotation.quaternion"), t)?
            }
            crate::Rotation::AxisAngle { axis, angle } => {
                self.vector(axis, format_args!("rotation.axis"), t)?;
                self.eval(angle, format_args!("rotation.angle"), t)?;
            }
            crate::Rotation::Matrix(rows) => {
                for (k, row) in rows.iter().enumerate() {
                    self.vector(row, format_args!("rotation.matrix[{k}]"), t)?;
                }
            }
        }
        Err(Invalid::new(problem.sub_path, problem.message))
    }
}

/// A part: its id, placement, markers and mass.
pub(crate) fn part(p: &Part, n: Numbers<'_>) -> Checked {
    if p.id.is_empty() {
        return Err(Invalid::new("id", "a part id must not be empty"));
    }
    n.placement(&p.placement, None)
        .map_err(|e| e.under("placement"))?;
    // Names seen, for a part with many markers (a scan of the earlier ones otherwise).
    let mut seen = rustc_hash::FxHashSet::default();
    let many = p.markers.len() > 16;
    for (k, (name, placement)) in p.markers.iter().enumerate() {
        if name.is_empty() {
            return Err(Invalid::new("markers", "a marker name must not be empty"));
        }
        let twice = if many {
            !seen.insert(name.as_str())
        } else {
            p.markers[..k].iter().any(|(other, _)| other == name)
        };
        if twice {
            return Err(Invalid::new(
                "markers",
                format!("marker '{name}' is defined twice"),
            ));
        }
        n.placement(placement, None)
            .map_err(|e| e.under(&key_path("markers", name)))?;
    }
    if let Some(m) = &p.mass {
        mass(m, n).map_err(|e| e.under("mass"))?;
    }
    if let Some(v) = &p.velocity {
        n.vector(&v.linear, format_args!("velocity.linear"), None)?;
        n.vector(&v.angular, format_args!("velocity.angular"), None)?;
    }
    Ok(())
}

/// Mass properties: a positive mass, and an inertia a real body can have.
pub(crate) fn mass(m: &Mass, n: Numbers<'_>) -> Checked {
    n.rule(&m.mass, format_args!("mass"), Rule::Positive)?;
    n.vector(&m.center_of_mass, format_args!("center_of_mass"), None)?;
    let mut values = [[0.0; 3]; 3];
    for (r, row) in m.inertia.iter().enumerate() {
        for (c, s) in row.iter().enumerate() {
            values[r][c] = n.eval(s, format_args!("inertia[{r}][{c}]"), None)?;
        }
    }
    check_inertia(&values).map_err(|message| Invalid::new("inertia", message))
}

/// Symmetric, positive semi-definite, and the principal moments satisfy the triangle
/// inequality (a physical body).
pub(crate) fn check_inertia(m: &[[f64; 3]; 3]) -> Result<(), String> {
    let scale = m
        .iter()
        .flatten()
        .fold(0.0f64, |a, x| a.max(x.abs()))
        .max(f64::MIN_POSITIVE);
    let tol = 1e-9 * scale;
    for (r, c) in [(0, 1), (0, 2), (1, 2)] {
        if (m[r][c] - m[c][r]).abs() > tol {
            return Err(format!(
                "the inertia matrix is not symmetric ([{r}][{c}] = {}, [{c}][{r}] = {})",
                m[r][c], m[c][r]
            ));
        }
    }
    // Positive semi-definite: a point mass has no inertia, a thin rod none about its
    // own axis (the spec allows equality).
    let [a, b, c] = symmetric_eigenvalues(m);
    if a < -tol {
        return Err("the inertia matrix is not positive semi-definite".into());
    }
    if a + b < c - tol || a + c < b - tol || b + c < a - tol {
        return Err(format!(
            "the principal moments of inertia ({a}, {b}, {c}) break the triangle inequality (no real body has them)"
        ));
    }
    Ok(())
}

/// Eigenvalues of a symmetric 3x3 matrix (closed form), ascending.
fn symmetric_eigenvalues(m: &[[f64; 3]; 3]) -> [f64; 3] {
    let p1 = m[0][1].powi(2) + m[0][2].powi(2) + m[1][2].powi(2);
    if p1 == 0.0 {
        let mut d = [m[0][0], m[1][1], m[2][2]];
        d.sort_by(f64::total_cmp);
        return d;
    }
    let q = (m[0][0] + m[1][1] + m[2][2]) / 3.0;
    let p2 = (m[0][0] - q).powi(2) + (m[1][1] - q).powi(2) + (m[2][2] - q).powi(2) + 2.0 * p1;
    let p = (p2 / 6.0).sqrt();
    let b = |i: usize, j: usize| (m[i][j] - if i == j { q } else { 0.0 }) / p;
    let det_b = b(0, 0) * (b(1, 1) * b(2, 2) - b(1, 2) * b(2, 1))
        - b(0, 1) * (b(1, 0) * b(2, 2) - b(1, 2) * b(2, 0))
        + b(0, 2) * (b(1, 0) * b(2, 1) - b(1, 1) * b(2, 0));
    let r = (det_b / 2.0).clamp(-1.0, 1.0);
    let phi = r.acos() / 3.0;
    let e1 = q + 2.0 * p * phi.cos();
    let e3 = q + 2.0 * p * (phi + 2.0 * std::f64::consts::PI / 3.0).cos();
    let e2 = 3.0 * q - e1 - e3;
    let mut e = [e1, e2, e3];
    e.sort_by(f64::total_cmp);
    e
}

/// The key of a joint's profile on marker j: `profile` for a cam, `profile_j` for a
/// curve contact.
pub(crate) fn profile_j_key(joint: &Joint) -> &'static str {
    if joint.joint_type.takes_profile_i() {
        "profile_j"
    } else {
        "profile"
    }
}

/// A joint on its own (that its markers exist is the assembly's check): id, ends,
/// fields, profiles, limits.
pub(crate) fn joint(j: &Joint, n: Numbers<'_>) -> Checked {
    let ty = j.joint_type;
    if j.id.is_empty() {
        return Err(Invalid::new("id", "a joint id must not be empty"));
    }
    // An inline frame may move with time (a fixed joint to it prescribes a motion): it
    // is checked at t = 0.
    for (end, r) in [("i", &j.i), ("j", &j.j)] {
        if let MarkerSpec::Inline(p) = &r.marker {
            n.placement(p, Some(0.0)).map_err(|e| e.under(end))?;
        }
    }
    if j.i.part == j.j.part {
        return Err(Invalid::new(
            "j.part",
            "the joint connects a part to itself",
        ));
    }
    residuals(j, n)?;
    if let Some(c) = &j.compliance {
        n.rule(c, format_args!("compliance"), Rule::NonNegative)?;
    }
    for field in Field::ALL {
        match (ty.field_use(field), j.field(field)) {
            (Some(usage), Some(s)) => {
                n.rule(s, format_args!("{}", field.key()), usage.rule)?;
            }
            (Some(usage), None) if usage.required => {
                return Err(Invalid::new(
                    "",
                    format!("a {} joint needs '{}'", ty.name(), field.key()),
                ))
            }
            (None, Some(_)) => {
                return Err(Invalid::new(
                    field.key(),
                    format!("a {} joint has no field '{}'", ty.name(), field.key()),
                ))
            }
            _ => {}
        }
    }
    for (key, takes, given) in [
        ("profile_i", ty.takes_profile_i(), &j.profile_i),
        (profile_j_key(j), ty.takes_profile(), &j.profile),
    ] {
        match (takes, given) {
            (true, Some(p)) => profile(p, n).map_err(|e| e.under(key))?,
            (true, None) => {
                return Err(Invalid::new(
                    "",
                    format!("a {} joint needs '{key}'", ty.name()),
                ))
            }
            (false, Some(_)) => {
                return Err(Invalid::new(
                    key,
                    format!("a {} joint has no '{key}'", ty.name()),
                ))
            }
            (false, None) => {}
        }
    }
    limits(j, &j.limits, n).map_err(|e| e.under("limits"))?;
    rate(j, n).map_err(|e| e.under("rate"))
}

/// A rate is given for a free coordinate and evaluates (without time).
fn rate(j: &Joint, n: Numbers<'_>) -> Checked {
    for (field, given) in [
        (Field::Angle, &j.rate.angle),
        (Field::Distance, &j.rate.distance),
    ] {
        let Some(s) = given else { continue };
        if !j.joint_type.has_free(field) {
            return Err(Invalid::new(
                field.key(),
                format!(
                    "a {} joint has no free {} to give a rate for",
                    j.joint_type.name(),
                    field.key()
                ),
            ));
        }
        n.eval(s, format_args!("{}", field.key()), None)?;
    }
    Ok(())
}

/// A closed profile: a positive radius, 3 to [`MAX_PROFILE_POINTS`] positive radii, or
/// as many points, each apart from the one before it.
pub(crate) fn profile(p: &CamProfile, n: Numbers<'_>) -> Checked {
    let count = |what: &str, unit: &str, len: usize| {
        if (3..=MAX_PROFILE_POINTS).contains(&len) {
            Ok(())
        } else {
            Err(Invalid::new(
                what,
                format!("a {what} profile has 3 to {MAX_PROFILE_POINTS} {unit}, found {len}"),
            ))
        }
    };
    match p {
        CamProfile::Circle { radius } => {
            n.rule(radius, format_args!("circle.radius"), Rule::Positive)?;
        }
        CamProfile::Polar(radii) => {
            count("polar", "radii", radii.len())?;
            for (k, r) in radii.iter().enumerate() {
                n.rule(r, format_args!("polar[{k}]"), Rule::Positive)?;
            }
        }
        CamProfile::Points(points) => {
            count("points", "points", points.len())?;
            let mut xy = Vec::with_capacity(points.len());
            for (k, [x, y]) in points.iter().enumerate() {
                xy.push([
                    n.eval(x, format_args!("points[{k}][0]"), None)?,
                    n.eval(y, format_args!("points[{k}][1]"), None)?,
                ]);
            }
            // Each point must differ from the one before it (the last from the first:
            // the curve closes by itself), or the curve would stop there and lose its
            // tangent.
            let len = xy.len();
            for k in 0..len {
                let (a, b) = (xy[(k + len - 1) % len], xy[k]);
                let scale = a[0].abs().max(a[1].abs()).max(b[0].abs()).max(b[1].abs());
                if (a[0] - b[0]).hypot(a[1] - b[1]) <= PROFILE_POINT_TOLERANCE * scale.max(1.0) {
                    let what = if k == 0 {
                        format!(
                            "the last point repeats the first (point {}); the curve closes by itself",
                            len - 1
                        )
                    } else {
                        format!("point {k} repeats point {}", k - 1)
                    };
                    return Err(Invalid::new(format!("points[{k}]"), what));
                }
            }
        }
    }
    Ok(())
}

/// Limits act on a free coordinate, have at least one side, and a minimum not above
/// the maximum.
fn limits(j: &Joint, limits: &Limits, n: Numbers<'_>) -> Checked {
    for (field, range) in [
        (Field::Angle, &limits.angle),
        (Field::Distance, &limits.distance),
    ] {
        let Some(range) = range else { continue };
        let at = field.key();
        if !j.joint_type.has_free(field) {
            return Err(Invalid::new(
                at,
                format!(
                    "a {} joint has no free {} to limit",
                    j.joint_type.name(),
                    field.key()
                ),
            ));
        }
        let mut sides = [None, None];
        for (k, (side, s)) in sides.iter_mut().zip([&range.min, &range.max]).enumerate() {
            if let Some(s) = s {
                *side = Some(n.eval(s, format_args!("{at}[{k}]"), None)?);
            }
        }
        match sides {
            [None, None] => {
                return Err(Invalid::new(
                    at,
                    "a limit needs a minimum, a maximum or both (null is an open side)",
                ))
            }
            [Some(a), Some(b)] if a > b => {
                return Err(Invalid::new(
                    at,
                    format!("the minimum {a} is above the maximum {b}"),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// A motion drives a free coordinate of its joint with a value that evaluates at t = 0.
pub(crate) fn motion(m: &Motion, joint: &Joint, n: Numbers<'_>) -> Checked {
    let at = m.coordinate.field().key();
    n.eval(&m.value, format_args!("{at}"), Some(0.0))?;
    if !joint.joint_type.has_free(m.coordinate.field()) {
        return Err(Invalid::new(
            at,
            format!(
                "a {} joint has no free {} to drive",
                joint.joint_type.name(),
                at
            ),
        ));
    }
    Ok(())
}

/// A spring: stiffness, rest length and damping 0 or more; inline ends evaluate.
pub(crate) fn spring(s: &Spring, n: Numbers<'_>) -> Checked {
    for (end, r) in [("i", &s.i), ("j", &s.j)] {
        if let MarkerSpec::Inline(p) = &r.marker {
            n.placement(p, None).map_err(|e| e.under(end))?;
        }
    }
    n.rule(&s.stiffness, format_args!("stiffness"), Rule::NonNegative)?;
    n.rule(
        &s.rest_length,
        format_args!("rest_length"),
        Rule::NonNegative,
    )?;
    n.rule(&s.damping, format_args!("damping"), Rule::NonNegative)?;
    Ok(())
}

/// Forces: gravity, springs (ids unique) and loads evaluate.
pub(crate) fn forces(f: &Forces, n: Numbers<'_>) -> Checked {
    if let Some(g) = &f.gravity {
        n.vector(g, format_args!("gravity"), None)?;
    }
    let mut ids = rustc_hash::FxHashSet::default();
    for (k, s) in f.springs.iter().enumerate() {
        if !ids.insert(s.id.as_str()) {
            return Err(Invalid::new(
                format!("springs[{k}].id"),
                format!("spring id '{}' is used twice", s.id),
            ));
        }
        spring(s, n).map_err(|e| e.under(&format!("springs[{k}]")))?;
    }
    for (k, l) in f.loads.iter().enumerate() {
        n.vector(&l.force, format_args!("loads[{k}].force"), None)?;
        n.vector(&l.torque, format_args!("loads[{k}].torque"), None)?;
        if let Some(p) = &l.at {
            n.vector(p, format_args!("loads[{k}].at"), None)?;
        }
    }
    Ok(())
}

/// Simulation settings: a positive end time, step and output step.
pub(crate) fn simulation(s: &Simulation, n: Numbers<'_>) -> Checked {
    n.rule(&s.end, format_args!("end"), Rule::Positive)?;
    n.rule(&s.step, format_args!("step"), Rule::Positive)?;
    if let Some(o) = &s.output_step {
        n.rule(o, format_args!("output_step"), Rule::Positive)?;
    }
    if let Some(start) = &s.start {
        let start = n.eval(start, format_args!("start"), None)?;
        let end = n.eval(&s.end, format_args!("end"), None)?;
        if end < start {
            return Err(Invalid::new(
                "end",
                format!("the run ends ({end}) before it starts ({start})"),
            ));
        }
    }
    if let Some(rho) = &s.rho_inf {
        let rho = n.eval(rho, format_args!("rho_inf"), None)?;
        if !(0.0..=1.0).contains(&rho) {
            return Err(Invalid::new(
                "rho_inf",
                format!("must be from 0 to 1, is {rho}"),
            ));
        }
    }
    if let Some(t) = &s.tolerance {
        n.rule(t, format_args!("tolerance"), Rule::Positive)?;
    }
    if let Some([alpha, beta]) = &s.baumgarte {
        n.rule(alpha, format_args!("baumgarte.alpha"), Rule::NonNegative)?;
        n.rule(beta, format_args!("baumgarte.beta"), Rule::NonNegative)?;
    }
    Ok(())
}

/// An `expression` joint's residuals: at least one; each parses, names only measures
/// ([`crate::joint::MEASURES`]), parameters and `t`, and uses a measure (else it
/// constrains nothing). Other types have none.
fn residuals(j: &Joint, n: Numbers<'_>) -> Checked {
    use crate::joint::MEASURES;
    use crate::JointType;
    if j.joint_type != JointType::Expression {
        if !j.residuals.is_empty() {
            return Err(Invalid::new(
                "residuals",
                format!("a {} joint has no 'residuals'", j.joint_type.name()),
            ));
        }
        return Ok(());
    }
    if j.residuals.is_empty() {
        return Err(Invalid::new(
            "residuals",
            "an expression joint needs at least one residual",
        ));
    }
    for (k, text) in j.residuals.iter().enumerate() {
        let at = format!("residuals[{k}]");
        let parsed = tenon_expr::parse(text).map_err(|e| {
            Invalid::new(
                at.clone(),
                format!(
                    "{} (at character {} of \"{text}\")",
                    e.message(),
                    e.column()
                ),
            )
        })?;
        let mut measured = false;
        for name in parsed.names() {
            if MEASURES.contains(&name) {
                measured = true;
            } else if name != "t" && n.values.get(name).is_none() {
                return Err(Invalid::new(
                    at,
                    format!(
                        "unknown name '{name}' in \"{text}\" (measures: {}; or a parameter, or t)",
                        MEASURES.join(", ")
                    ),
                ));
            }
        }
        if !measured {
            return Err(Invalid::new(
                at,
                format!(
                    "\"{text}\" constrains nothing: it uses no measure of the joint's markers ({})",
                    MEASURES.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
