//! How big a conflict is, measured the way a person would (the cluster's other joints
//! solved exactly, the conflicting joint's residual there), and the pose a large failed
//! cluster is analysed at (its error concentrated on as few equations as possible).

use tenon_system::Scratch;

use super::ClusterAt;
use crate::newton;
use crate::{Problem, SolveError, SolveOptions};

/// Rounds of [`concentrate`].
const ROBUST_ROUNDS: usize = 40;

/// A state and its parameters.
type At = (Vec<f64>, Vec<f64>);

/// From a failed solve's end, the pose that concentrates the cluster's error on as few
/// equations as possible: iteratively reweighted least squares toward the least sum of
/// absolute residuals (row weights `1 / sqrt(r^2 + e^2)`, `e` shrinking), each round one
/// least-change Gauss-Newton step on the weighted rows, kept when the sum falls. Where
/// joints conflict, this leaves the joints that can hold holding (a loop that cannot
/// close fails at one joint instead of spreading its gap over the cluster), so the rank
/// analysis sees the dependencies of a consistent pose and the conflict alone disagrees.
pub(super) fn concentrate(cx: &ClusterAt<'_>, cols: &[usize]) -> Result<At, SolveError> {
    let ClusterAt {
        problem,
        state,
        params,
        rows,
        weights,
        tolerance,
        options,
        ..
    } = *cx;
    let (system, compiled) = (problem.system, problem.compiled);
    let n = system.tangent_dimension();
    let mut col_of = vec![usize::MAX; n];
    for (k, &c) in cols.iter().enumerate() {
        if let Some(slot) = col_of.get_mut(c) {
            *slot = k;
        }
    }
    let col_weight: Vec<f64> = cols.iter().map(|&c| weights[c]).collect();
    let sum = |r: &[f64]| r.iter().map(|x| x.abs()).sum::<f64>();
    let mut at = (state.to_vec(), params.to_vec());
    let mut matrix = crate::linalg::StepMatrix::new(rows.len(), cols.len(), options.dense_columns);
    let mut eps: Option<f64> = None;
    for _ in 0..ROBUST_ROUNDS {
        let (r, mut jac) = system.tangent_jacobian_of_rows(compiled, &at.0, &at.1, rows)?;
        let largest = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        if !largest.is_finite()
            || rows
                .iter()
                .zip(&r)
                .all(|(&k, x)| x.abs() <= tolerance.equation(k))
        {
            break;
        }
        let e = *eps.get_or_insert(0.1 * largest);
        let w: Vec<f64> = r
            .iter()
            .map(|x| (x * x + e * e).sqrt().recip().sqrt())
            .collect();
        for entry in &mut jac.entries {
            entry.2 *= w[entry.0 as usize];
        }
        let rw: Vec<f64> = r.iter().zip(&w).map(|(a, b)| a * b).collect();
        matrix.fill(&jac, &col_of, &col_weight);
        let factored = matrix.factor()?;
        let dy = factored.regularized(0.0, 1.0)?.solve(&rw);
        let before = sum(&r);
        let mut alpha = 1.0;
        let mut accepted = false;
        for _ in 0..12 {
            let mut delta = vec![0.0; n];
            for (k, &c) in cols.iter().enumerate() {
                delta[c] = -alpha * dy[k] / col_weight[k];
            }
            let mut next = at.clone();
            system.retract(&mut next.0, &delta)?;
            system.update_turns(compiled, &at.0, &next.0, &mut next.1)?;
            let all = system.residuals(compiled, &next.0, &next.1)?;
            let trial: Vec<f64> = rows.iter().map(|&k| all[k]).collect();
            if sum(&trial) < before {
                at = next;
                accepted = true;
                break;
            }
            alpha *= 0.5;
        }
        eps = Some(if accepted { e * 0.3 } else { e * 0.1 });
        if e < 1e-3 * cx.tolerances.length {
            break;
        }
    }
    // The equations left with small residuals are then solved exactly (the rest let go):
    // the rank of a nearly consistent pose is not the rank of a consistent one.
    let (r, _) = system.tangent_jacobian_of_rows(compiled, &at.0, &at.1, rows)?;
    let largest = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let keep: Vec<usize> = rows
        .iter()
        .zip(&r)
        .filter(|(_, x)| x.abs() <= CONCENTRATED * largest)
        .map(|(&k, _)| k)
        .collect();
    if keep.len() < rows.len() {
        if let Some(held) = solve_keeping(problem, &at, &keep, weights, (tolerance, options))? {
            at = held;
        }
    }
    Ok(at)
}

/// After [`concentrate`], residuals below this fraction of the largest count as
/// equations that hold.
const CONCENTRATED: f64 = 1e-3;

/// Solves `keep` (global equation indices, one cluster's) exactly from `at` with the
/// solve's least-change Newton; the state reached, or `None` when they cannot hold.
fn solve_keeping(
    problem: &Problem<'_>,
    at: &At,
    keep: &[usize],
    weights: &[f64],
    (tolerance, options): (&crate::tolerance::RowTolerances, SolveOptions),
) -> Result<Option<At>, SolveError> {
    let compiled = problem.compiled;
    let Some(k) = keep.first().and_then(|&r| compiled.cluster_of(r)) else {
        return Ok(None);
    };
    let Some(cluster) = compiled.clusters().get(k) else {
        return Ok(None);
    };
    let local_row = |r: &usize| cluster.equations().binary_search(r).ok();
    let keep: Vec<usize> = keep.iter().filter_map(local_row).collect();
    let mut scratch = Scratch::take_thread_local();
    let solved = newton::solve_rows(
        cluster,
        &mut scratch,
        (&at.0, &at.1),
        weights,
        keep,
        (tolerance, options),
    );
    Scratch::give_back(scratch);
    let (local, params, held) = solved?;
    if !held {
        return Ok(None);
    }
    let mut state = at.0.clone();
    cluster.scatter(&local, &mut state);
    Ok(Some((state, params)))
}

/// Solves `keep` exactly from the cluster's state (the solve's least-change Newton, on the
/// cluster holding them) and returns the residuals of `own` there (as `(row, value)`), or
/// `None` when `keep` cannot be solved either.
pub(super) fn violation_without(
    cx: &ClusterAt<'_>,
    keep: &[usize],
    own: &[usize],
) -> Result<Option<Vec<(usize, f64)>>, SolveError> {
    let at = (cx.state.to_vec(), cx.params.to_vec());
    let tight = cx.tolerance.scaled(crate::tolerance::MEASURE_FACTOR);
    let held = match solve_keeping(cx.problem, &at, keep, cx.weights, (&tight, cx.options))? {
        Some(held) => held,
        None => {
            match solve_keeping(
                cx.problem,
                &at,
                keep,
                cx.weights,
                (cx.tolerance, cx.options),
            )? {
                Some(held) => held,
                None => return Ok(None),
            }
        }
    };
    let r = cx
        .problem
        .system
        .residuals(cx.problem.compiled, &held.0, &held.1)?;
    Ok(Some(own.iter().map(|&k| (k, r[k])).collect()))
}
