//! Tenon's solver (first stage): the assembly is split into clusters of parts that share
//! equations, and each cluster is solved by least-change Gauss-Newton in the tangent
//! space.
//!
//! - Clusters: union-find over column groups (a free part's 6 tangent columns, a cam's
//!   contact parameter); every equation unites the groups it touches. Grounded parts are
//!   constants, so they cut the assembly apart.
//! - The step is the minimum-norm solution of `J dx = -r` with parts weighted by their
//!   size (a rotation of `dtheta` moves a part's markers by about `size * dtheta`, so
//!   metres and radians compare): `dx = -W^-1 pinv(J W^-1) r`, by SVD, so rank-deficient
//!   Jacobians (redundant joints, normal in CAD) are handled and unconstrained directions
//!   do not move. A backtracking line search keeps each step a descent of `|r|`; when it
//!   stalls, Levenberg damping shortens the step.
//! - Counted turns are updated after every accepted step.
//!
//! This stage uses dense linear algebra per cluster (nalgebra SVD): right for the
//! fixtures and ordinary assemblies; the block-triangular decomposition and sparse
//! factorizations for thousands of parts are the next stage.

#![warn(missing_docs)]

mod structure;

pub use structure::{
    dulmage_mendelsohn, maximum_matching, Decomposition, Incidence, Matching, Subset,
};

use nalgebra::{DMatrix, DVector};
use petgraph::unionfind::UnionFind;
use rustc_hash::FxHashMap;
use tenon_model::{Assembly, Part, PartKey};
use tenon_system::{Compiled, System, SystemError};

/// Options of a solve.
#[derive(Debug, Clone, Copy)]
pub struct SolveOptions {
    /// Largest residual accepted (model units for lengths, radians for angles).
    pub tolerance: f64,
    /// Newton iterations per cluster before giving up.
    pub max_iterations: usize,
    /// Whether motions take part (at the time in the parameters). Assembling (`tenon
    /// solve`) leaves them out, so driven coordinates stay free; kinematic runs use them.
    pub include_motions: bool,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            tolerance: TOLERANCE,
            max_iterations: 100,
            include_motions: false,
        }
    }
}

/// Default residual tolerance.
pub const TOLERANCE: f64 = 1e-10;
/// Singular values below this fraction of the largest count as zero (rank decisions).
pub const RANK_TOLERANCE: f64 = 1e-9;

/// What became of one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterReport {
    /// Its free parts, in file order.
    pub parts: Vec<PartKey>,
    /// Indices of its equations in [`System::equations`].
    pub equations: Vec<usize>,
    /// Newton iterations taken.
    pub iterations: usize,
    /// Largest residual at the end.
    pub max_residual: f64,
    /// Whether every equation holds within the tolerance.
    pub converged: bool,
    /// Numerical rank of its Jacobian at the end.
    pub rank: usize,
    /// Degrees of freedom left: unknowns (tangent) minus rank.
    pub dof: usize,
}

/// The result of a solve; `state` and parameters passed in hold the solution.
#[derive(Debug, Clone, PartialEq)]
pub struct SolveReport {
    /// Whether every cluster converged (and equations between grounded parts hold).
    pub converged: bool,
    /// Largest residual of all equations at the end.
    pub max_residual: f64,
    /// The clusters.
    pub clusters: Vec<ClusterReport>,
    /// Equations that still do not hold: `(index, residual)`, largest first.
    pub unsatisfied: Vec<(usize, f64)>,
    /// Joints that ended on their mirror branch (an aligned axis or locked twist
    /// reversed from where the solve started): never silent.
    pub flipped: Vec<tenon_model::JointKey>,
}

/// Errors: only a failure to evaluate (the input was usable, so this is a bug).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SolveError {
    /// Building or evaluating the equations failed.
    #[error(transparent)]
    System(#[from] SystemError),
}

/// Whether equation `row` takes part in a solve (motions only when included).
fn takes_part(system: &System, row: usize, include_motions: bool) -> bool {
    include_motions
        || !matches!(
            system.equations().get(row).map(|e| e.owner),
            Some(tenon_system::Owner::Motion(_))
        )
}

/// A cluster: its tangent columns and its equations (rows).
type Cluster = (Vec<usize>, Vec<usize>);

/// The clusters of a system: for each, its tangent columns and equations (rows). Rows
/// with no unknown (between grounded parts) are returned apart.
fn clusters(
    system: &System,
    compiled: &Compiled,
    state: &[f64],
    params: &[f64],
    include_motions: bool,
) -> Result<(Vec<Cluster>, Vec<usize>), SolveError> {
    let (_, jac) = system.tangent_jacobian(compiled, state, params)?;
    let n_parts = system.free_parts().len();
    let groups = n_parts + system.extra_unknowns().len();
    let group_of = |col: usize| {
        if col < 6 * n_parts {
            col / 6
        } else {
            n_parts + col - 6 * n_parts
        }
    };
    let mut uf = UnionFind::<usize>::new(groups.max(1));
    let mut row_groups: Vec<Vec<usize>> = vec![Vec::new(); jac.rows];
    let used = |r: usize| takes_part(system, r, include_motions);
    for &(r, c, _) in &jac.entries {
        if used(r as usize) {
            row_groups[r as usize].push(group_of(c as usize));
        }
    }
    // Structural pattern: an entry that happens to be 0 here still couples (use the
    // compiled pattern, which includes every structurally non-zero entry).
    for g in &row_groups {
        for w in g.windows(2) {
            uf.union(w[0], w[1]);
        }
    }
    let mut index: FxHashMap<usize, usize> = FxHashMap::default();
    let mut out: Vec<Cluster> = Vec::new();
    for g in 0..groups {
        let root = uf.find(g);
        let k = *index.entry(root).or_insert_with(|| {
            out.push((Vec::new(), Vec::new()));
            out.len() - 1
        });
        let cols: Vec<usize> = if g < n_parts {
            (6 * g..6 * g + 6).collect()
        } else {
            vec![6 * n_parts + g - n_parts]
        };
        out[k].0.extend(cols);
    }
    let mut constant_rows = Vec::new();
    for (r, g) in row_groups.iter().enumerate() {
        if !used(r) {
            continue;
        }
        match g.first() {
            Some(&g0) => {
                let root = uf.find(g0);
                if let Some(&k) = index.get(&root) {
                    out[k].1.push(r);
                }
            }
            None => constant_rows.push(r),
        }
    }
    Ok((out, constant_rows))
}

/// Weight of each tangent column: a free part's size for its rotation columns (so
/// metres and radians compare), 1 for translations and extra unknowns.
fn column_weights(system: &System, assembly: &Assembly) -> Vec<f64> {
    let sizes = part_sizes(system, assembly);
    (0..system.tangent_dimension())
        .map(|col| match sizes.get(col / 6) {
            Some(&size) if col % 6 >= 3 => size,
            _ => 1.0,
        })
        .collect()
}

/// Size of each free part (for weighting rotations): the largest distance of its markers
/// from its origin, at least 1 model unit.
fn part_sizes(system: &System, assembly: &Assembly) -> Vec<f64> {
    let values = assembly.parameter_values().ok();
    system
        .free_parts()
        .iter()
        .map(|fp| {
            let part: Option<&Part> = assembly.part(fp.part);
            let size = part
                .map(|p| {
                    p.markers
                        .iter()
                        .filter_map(|(_, m)| {
                            let v = values.as_ref()?;
                            let pos: Option<Vec<f64>> =
                                m.position.iter().map(|s| scalar_value(s, v)).collect();
                            pos.map(|p| (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt())
                        })
                        .fold(0.0f64, f64::max)
                })
                .unwrap_or(0.0);
            size.max(1.0)
        })
        .collect()
}

fn scalar_value(s: &tenon_model::Scalar, values: &tenon_model::ParameterValues) -> Option<f64> {
    match s {
        tenon_model::Scalar::Number(x) => Some(*x),
        tenon_model::Scalar::Expr(name) => values.get(name),
    }
}

/// What a solve works on: the equations, their compiled form, and the assembly they came
/// from (for part sizes).
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a> {
    /// The equations.
    pub system: &'a System,
    /// Compiled once by [`System::compile`].
    pub compiled: &'a Compiled,
    /// The assembly the system was built from.
    pub assembly: &'a Assembly,
}

/// Solves every cluster from `state` (updated in place, as are the turn counters in
/// `params`).
pub fn solve(
    problem: &Problem<'_>,
    state: &mut [f64],
    params: &mut [f64],
    options: SolveOptions,
) -> Result<SolveReport, SolveError> {
    let Problem {
        system,
        compiled,
        assembly,
    } = *problem;
    let start = state.to_vec();
    let (clusters, constant_rows) =
        clusters(system, compiled, state, params, options.include_motions)?;
    let weights = column_weights(system, assembly);
    let weight = |col: usize| weights.get(col).copied().unwrap_or(1.0);
    let n_parts = system.free_parts().len();
    let mut reports = Vec::new();
    for (cols, rows) in clusters {
        let parts: Vec<PartKey> = cols
            .iter()
            .filter(|&&c| c < 6 * n_parts && c % 6 == 0)
            .map(|&c| system.free_parts()[c / 6].part)
            .collect();
        let local_rows: Vec<usize> = (0..rows.len()).collect();
        let mut iterations = 0;
        let mut lambda = 0.0;
        let (residual, rank) = loop {
            let (rr, jac) = system.tangent_jacobian_of_rows(compiled, state, params, &rows)?;
            let residual = rr.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let j = block(&jac, &local_rows, &cols, &weight);
            let svd = j.clone().svd(true, true);
            let smax = svd.singular_values.iter().fold(0.0f64, |m, &s| m.max(s));
            let rank = svd
                .singular_values
                .iter()
                .filter(|&&s| s > RANK_TOLERANCE * smax.max(1e-300))
                .count();
            if residual <= options.tolerance
                || iterations >= options.max_iterations
                || rows.is_empty()
            {
                break (residual, rank);
            }
            iterations += 1;
            // Minimum-norm (damped) step in weighted coordinates.
            let dy = min_norm_step(&svd, &DVector::from_vec(rr.clone()), lambda, smax);
            let norm0: f64 = rr.iter().map(|x| x * x).sum::<f64>().sqrt();
            let mut alpha = 1.0;
            let mut accepted = false;
            for _ in 0..30 {
                let mut delta = vec![0.0; system.tangent_dimension()];
                for (k, &c) in cols.iter().enumerate() {
                    delta[c] = -alpha * dy[k] / weight(c);
                }
                let mut trial = state.to_vec();
                system.retract(&mut trial, &delta);
                let mut trial_params = params.to_vec();
                system.update_turns(compiled, state, &trial, &mut trial_params)?;
                let rt = system.residuals(compiled, &trial, &trial_params)?;
                let norm: f64 = rows.iter().map(|&k| rt[k] * rt[k]).sum::<f64>().sqrt();
                if norm.is_finite() && norm < norm0 * (1.0 - 1e-4 * alpha)
                    || norm <= options.tolerance
                {
                    state.copy_from_slice(&trial);
                    params.copy_from_slice(&trial_params);
                    accepted = true;
                    break;
                }
                alpha *= 0.5;
            }
            if accepted && alpha >= 0.25 {
                lambda *= 0.25;
            } else if accepted {
                // Only a short step helped: the Gauss-Newton direction is unreliable here
                // (near-singular Jacobian, e.g. redundant joints near a solution set):
                // damp the next one (Levenberg-Marquardt).
                lambda = if lambda == 0.0 {
                    1e-6 * smax * smax
                } else {
                    lambda * 4.0
                };
            } else {
                // No descent along the Gauss-Newton direction: damp it.
                lambda = if lambda == 0.0 {
                    1e-6 * smax * smax
                } else {
                    lambda * 10.0
                };
                if lambda > 1e12 * (smax * smax).max(1.0) {
                    break (residual, rank);
                }
            }
        };
        reports.push(ClusterReport {
            parts,
            equations: rows.clone(),
            iterations,
            max_residual: residual,
            converged: residual <= options.tolerance,
            rank,
            dof: cols.len().saturating_sub(rank),
        });
    }
    let r = system.residuals(compiled, state, params)?;
    // The equations this solve was asked to satisfy (motions only when included).
    let considered: Vec<usize> = reports
        .iter()
        .flat_map(|c| c.equations.iter().copied())
        .chain(constant_rows.iter().copied())
        .collect();
    let max_residual = considered.iter().fold(0.0f64, |m, &k| m.max(r[k].abs()));
    let mut unsatisfied: Vec<(usize, f64)> = considered
        .iter()
        .filter(|&&k| r[k].abs() > options.tolerance)
        .map(|&k| (k, r[k]))
        .collect();
    unsatisfied.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    let constants_hold = constant_rows
        .iter()
        .all(|&k| r[k].abs() <= options.tolerance);
    let flipped = system.flipped(compiled, &start, state, params)?;
    Ok(SolveReport {
        converged: reports.iter().all(|c| c.converged) && constants_hold,
        flipped,
        max_residual,
        clusters: reports,
        unsatisfied,
    })
}

/// The cluster's block of the tangent Jacobian with columns divided by their weights.
fn block(
    jac: &tenon_system::TangentJacobian,
    rows: &[usize],
    cols: &[usize],
    weight: &dyn Fn(usize) -> f64,
) -> DMatrix<f64> {
    let row_of: FxHashMap<usize, usize> = rows.iter().enumerate().map(|(k, &r)| (r, k)).collect();
    let col_of: FxHashMap<usize, usize> = cols.iter().enumerate().map(|(k, &c)| (c, k)).collect();
    let mut m = DMatrix::zeros(rows.len(), cols.len());
    for &(r, c, v) in &jac.entries {
        if let (Some(&i), Some(&j)) = (row_of.get(&(r as usize)), col_of.get(&(c as usize))) {
            m[(i, j)] += v / weight(c as usize);
        }
    }
    m
}

/// `pinv(J) r` with singular values below the rank tolerance dropped, damped by
/// `lambda` (`s / (s^2 + lambda)`).
fn min_norm_step(
    svd: &nalgebra::SVD<f64, nalgebra::Dyn, nalgebra::Dyn>,
    r: &DVector<f64>,
    lambda: f64,
    smax: f64,
) -> DVector<f64> {
    let (Some(u), Some(vt)) = (&svd.u, &svd.v_t) else {
        return DVector::zeros(0);
    };
    let mut dy = DVector::zeros(vt.ncols());
    for (k, &s) in svd.singular_values.iter().enumerate() {
        if s <= RANK_TOLERANCE * smax.max(1e-300) {
            continue;
        }
        let coeff = u.column(k).dot(r) * s / (s * s + lambda);
        dy += vt.row(k).transpose() * coeff;
    }
    dy
}

/// One drag step: moves free part `part` (index into [`System::free_parts`]) toward
/// `target` as far as the joints allow, the rest of the mechanism following on its
/// current branch, with every joint restored by a least-change solve.
///
/// Each round takes the motion in the null space of the (weighted) Jacobian that brings
/// the dragged part closest to its target: with `N` a null-space basis and `N_p` its rows
/// for the part, `c = pinv(N_p) w_p` and the step is `N c`; then a solve restores the
/// joints. Rounds repeat until the part stops approaching the target. Drag far with many
/// nearby targets.
pub fn drag(
    problem: &Problem<'_>,
    state: &mut [f64],
    params: &mut [f64],
    part: usize,
    target: &tenon_model::Pose,
    options: SolveOptions,
) -> Result<SolveReport, SolveError> {
    let Problem {
        system,
        compiled,
        assembly,
    } = *problem;
    let Some(fp) = system.free_parts().get(part).copied() else {
        return solve(problem, state, params, options);
    };
    let n = system.tangent_dimension();
    let weights = column_weights(system, assembly);
    let weight = |col: usize| weights.get(col).copied().unwrap_or(1.0);
    let mut report = solve(problem, state, params, options)?;
    let mut previous_miss = f64::INFINITY;
    for _ in 0..20 {
        // The wished motion of the part, weighted: translation and rotation vector.
        let p: Vec<f64> = fp.vars[..3].iter().map(|v| state[v.index()]).collect();
        let q: Vec<f64> = fp.vars[3..].iter().map(|v| state[v.index()]).collect();
        let mut d =
            tenon_model::quaternion_multiply(target.quaternion, [q[0], -q[1], -q[2], -q[3]]);
        if d[0] < 0.0 {
            d = d.map(|c| -c);
        }
        let s = (d[1] * d[1] + d[2] * d[2] + d[3] * d[3]).sqrt();
        let scale = if s > 1e-15 {
            2.0 * s.atan2(d[0]) / s
        } else {
            2.0
        };
        let wish: Vec<f64> = (0..6)
            .map(|c| {
                let w = if c < 3 {
                    target.position[c] - p[c]
                } else {
                    d[c - 2] * scale
                };
                w * weight(6 * part + c)
            })
            .collect();
        let miss = wish.iter().map(|w| w * w).sum::<f64>().sqrt();
        if miss <= options.tolerance || miss >= previous_miss * (1.0 - 1e-6) {
            break;
        }
        previous_miss = miss;
        // Null space of the weighted Jacobian of the equations this solve satisfies.
        let (_, jac) = system.tangent_jacobian(compiled, state, params)?;
        let rows: Vec<usize> = (0..jac.rows)
            .filter(|&r| takes_part(system, r, options.include_motions))
            .collect();
        let cols: Vec<usize> = (0..n).collect();
        let j = block(&jac, &rows, &cols, &weight);
        let basis: Vec<DVector<f64>> = if j.nrows() == 0 {
            (0..n)
                .map(|k| DVector::from_fn(n, |i, _| if i == k { 1.0 } else { 0.0 }))
                .collect()
        } else {
            let svd = j.svd(false, true);
            let smax = svd.singular_values.iter().fold(0.0f64, |m, &s| m.max(s));
            let Some(vt) = svd.v_t else { break };
            let rank = svd
                .singular_values
                .iter()
                .filter(|&&s| s > RANK_TOLERANCE * smax.max(1e-300))
                .count();
            // Rows of v_t past the rank (and the non-pivoted rest) span the null space.
            let mut b: Vec<DVector<f64>> = Vec::new();
            let sv: Vec<f64> = svd.singular_values.iter().copied().collect();
            for k in 0..vt.nrows() {
                if sv
                    .get(k)
                    .is_none_or(|&s| s <= RANK_TOLERANCE * smax.max(1e-300))
                {
                    b.push(vt.row(k).transpose());
                }
            }
            // A wide Jacobian's thin SVD has only min(rows, cols) rows of v_t: complete the
            // basis with the orthogonal complement when needed.
            if b.len() + rank < n {
                b = null_space_complete(&vt, rank, n);
            }
            b
        };
        if basis.is_empty() {
            break;
        }
        let k = basis.len();
        let np = DMatrix::from_fn(6, k, |r, c| basis[c][6 * part + r]);
        let svd = np.svd(true, true);
        let c = svd
            .solve(&DVector::from_vec(wish.clone()), 1e-12)
            .unwrap_or_else(|_| DVector::zeros(k));
        let mut step = DVector::zeros(n);
        for (i, b) in basis.iter().enumerate() {
            step += b * c[i];
        }
        let delta: Vec<f64> = (0..n).map(|col| step[col] / weight(col)).collect();
        let old = state.to_vec();
        system.retract(state, &delta);
        system.update_turns(compiled, &old, state, params)?;
        report = solve(problem, state, params, options)?;
        if !report.converged {
            break;
        }
    }
    Ok(report)
}

/// An orthonormal basis of the null space of a matrix whose row space is spanned by the
/// first `rank` rows of `vt` (Gram-Schmidt against the unit vectors).
fn null_space_complete(vt: &DMatrix<f64>, rank: usize, n: usize) -> Vec<DVector<f64>> {
    let mut basis: Vec<DVector<f64>> = (0..rank).map(|k| vt.row(k).transpose()).collect();
    let mut null = Vec::new();
    for e in 0..n {
        let mut v = DVector::from_fn(n, |i, _| if i == e { 1.0 } else { 0.0 });
        for b in &basis {
            let c = b.dot(&v);
            v -= b * c;
        }
        let norm = v.norm();
        if norm > 1e-8 {
            v /= norm;
            basis.push(v.clone());
            null.push(v);
        }
        if basis.len() == n {
            break;
        }
    }
    null
}

/// The Dulmage-Mendelsohn decomposition of a system's equations (motions left out unless
/// `include_motions`) against its tangent columns, from the Jacobian's sparsity at
/// `state`.
pub fn structure(
    problem: &Problem<'_>,
    state: &[f64],
    params: &[f64],
    include_motions: bool,
) -> Result<Decomposition, SolveError> {
    let system = problem.system;
    let (_, jac) = system.tangent_jacobian(problem.compiled, state, params)?;
    let rows: Vec<usize> = (0..jac.rows)
        .filter(|&r| takes_part(system, r, include_motions))
        .collect();
    let mut index = vec![usize::MAX; jac.rows];
    for (k, &r) in rows.iter().enumerate() {
        index[r] = k;
    }
    let mut adjacency = vec![Vec::new(); rows.len()];
    for &(r, c, _) in &jac.entries {
        if let Some(&k) = index.get(r as usize).filter(|&&k| k != usize::MAX) {
            adjacency[k].push(c);
        }
    }
    Ok(dulmage_mendelsohn(&Incidence::new(jac.columns, adjacency)))
}
