//! The move that predicts a frame's pose from the frames before it.
//!
//! The velocity over the coming step is extrapolated by the polynomial that takes the
//! known frames' velocities (and, where they are the derivatives of the velocities,
//! their accelerations: Hermite interpolation) and is integrated over the step. With
//! `s` the time since the current frame and nodes `z_i` (each frame's time, twice where
//! its acceleration is used), in Newton's form `v(s) = sum_k c_k prod_{i<k} (s - z_i)`,
//! the `c_k` the divided differences (at a repeated node, the acceleration), and the
//! move is `sum_k c_k integral_0^h prod_{i<k} (s - z_i) ds`.
//!
//! One frame with its acceleration is Taylor's `v h + a h^2 / 2`; two are the cubic
//! Hermite (position error of order `h^5`); three the quintic (order `h^7`), which a
//! small run uses: its prediction then lands within a chord step or two of the
//! solution, where the cubic's took three. Velocities are world-frame vectors,
//! comparable from frame to frame.

/// A known frame: its time relative to the current one (zero or less), its tangent
/// velocity, and its acceleration where it is the velocity's derivative.
pub(super) struct Known<'a> {
    pub(super) at: f64,
    pub(super) velocity: &'a [f64],
    pub(super) acceleration: Option<&'a [f64]>,
}

/// Most nodes taken (three frames, each with its acceleration).
const MAX_NODES: usize = 6;

/// The predicted move over a step `h` from the frames `known` (the current one first,
/// then back in time; those past [`MAX_NODES`] nodes are left out). Each component is
/// extrapolated alone; a frame shorter than the current one's velocity counts as zero
/// where it has no value.
///
/// The table of divided differences is run backwards once on the nodes (each value's
/// coefficient in the move), not once per coordinate.
pub(super) fn predicted_move(h: f64, known: &[Known<'_>]) -> Vec<f64> {
    // The nodes: (time, frame, whether the acceleration).
    let mut nodes = [(0.0f64, 0usize, false); MAX_NODES];
    let mut m = 0;
    for (f, frame) in known.iter().enumerate() {
        for derivative in [false, true] {
            if m < MAX_NODES && (!derivative || frame.acceleration.is_some()) {
                nodes[m] = (frame.at, f, derivative);
                m += 1;
            }
        }
    }
    let nodes = &nodes[..m];
    let dimension = known.first().map_or(0, |k| k.velocity.len());
    // Per column `j` of the table and row `i >= j`: `1 / (z_i - z_{i-j})`, zero where
    // the nodes coincide (a repeated node: its acceleration is the difference).
    let mut inverse = [[0.0f64; MAX_NODES]; MAX_NODES];
    for j in 1..m {
        for i in j..m {
            let gap = nodes[i].0 - nodes[i - j].0;
            inverse[j][i] = if gap == 0.0 { 0.0 } else { 1.0 / gap };
        }
    }
    // `integral_0^h prod_{i<k} (s - z_i) ds`: the product's coefficients (ascending
    // powers of `s`) built one factor at a time.
    let mut weight = [0.0f64; MAX_NODES];
    let mut product = [0.0f64; MAX_NODES + 1];
    product[0] = 1.0;
    for (k, w) in weight.iter_mut().enumerate().take(m) {
        let mut power = h;
        for (p, &c) in product.iter().enumerate().take(k + 1) {
            *w += c * power / (p + 1) as f64;
            power *= h;
        }
        let z = nodes[k].0;
        for p in (0..=k + 1).rev() {
            let lower = if p > 0 { product[p - 1] } else { 0.0 };
            product[p] = lower - z * product[p];
        }
    }
    // The move is linear in the frames' values (node `i`'s value is its frame's
    // acceleration where it repeats a node, else its velocity), so each value's
    // coefficient is the derivative of the move by it: the table of divided differences
    // run backwards once on the weights (reverse mode), not once per coordinate.
    let mut coefficient = [0.0f64; MAX_NODES];
    let mut q_bar = weight;
    for (j, inverse) in inverse.iter().enumerate().take(m).skip(1).rev() {
        // Forwards, row `i` (descending) became `(q_i - q_{i-1}) / gap`, or at a
        // repeated node (j = 1) the acceleration there; backwards, ascending.
        for i in j..m {
            if inverse[i] == 0.0 {
                coefficient[i] += q_bar[i];
                q_bar[i] = 0.0;
            } else {
                let t = q_bar[i] * inverse[i];
                q_bar[i - 1] -= t;
                q_bar[i] = t;
            }
        }
    }
    // The table starts from each node's velocity: its own, or its twin's where it
    // repeats one.
    for i in 0..m {
        let twin = if i > 0 && inverse[1][i] == 0.0 {
            i - 1
        } else {
            i
        };
        coefficient[twin] += q_bar[i];
    }
    let mut delta = vec![0.0; dimension];
    for (&(_, f, derivative), &coefficient) in nodes.iter().zip(&coefficient) {
        let values = if derivative {
            known[f].acceleration.unwrap_or(&[])
        } else {
            known[f].velocity
        };
        for (d, v) in delta.iter_mut().zip(values) {
            *d += coefficient * v;
        }
    }
    delta
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A velocity that is a polynomial of degree `d` in time is extrapolated exactly by
    /// `d + 1` nodes, and the move is its integral.
    #[test]
    fn polynomial_velocities_are_integrated_exactly() {
        // v(t) = 1 + 2 t - 3 t^2 + 0.5 t^3 - 0.25 t^4 + 0.1 t^5 and its derivative.
        let c = [1.0, 2.0, -3.0, 0.5, -0.25, 0.1];
        let v = |t: f64| c.iter().rev().fold(0.0, |s, &k| s * t + k);
        let a = |t: f64| (1..6).rev().fold(0.0, |s, k| s * t + k as f64 * c[k]);
        let moved = |t: f64, h: f64| {
            (0..6)
                .map(|k| {
                    c[k] * ((t + h).powi(k as i32 + 1) - t.powi(k as i32 + 1)) / (k + 1) as f64
                })
                .sum::<f64>()
        };
        let (t, h) = (0.3, 0.07);
        let times = [t, t - 0.05, t - 0.11];
        let vs: Vec<[f64; 1]> = times.iter().map(|&s| [v(s)]).collect();
        let accs: Vec<[f64; 1]> = times.iter().map(|&s| [a(s)]).collect();
        let known: Vec<Known<'_>> = (0..3)
            .map(|k| Known {
                at: times[k] - t,
                velocity: &vs[k],
                acceleration: Some(&accs[k]),
            })
            .collect();
        let exact = moved(t, h);
        let got = predicted_move(h, &known)[0];
        assert!((got - exact).abs() < 1e-14, "{got} vs {exact}");
        // Fewer frames: Taylor and the cubic Hermite, each exact for lower degrees and
        // close for this one (errors of order h^3 and h^5).
        let taylor = predicted_move(h, &known[..1])[0];
        assert!((taylor - (v(t) * h + a(t) * h * h / 2.0)).abs() < 1e-15);
        let cubic = predicted_move(h, &known[..2])[0];
        assert!((cubic - exact).abs() < 1e-5 && (cubic - exact).abs() > 1e-12);
        // Velocities alone (three of them): the quadratic through them.
        let by_velocities: Vec<Known<'_>> = (0..3)
            .map(|k| Known {
                at: times[k] - t,
                velocity: &vs[k],
                acceleration: None,
            })
            .collect();
        let q = |s: f64| 1.0 - 0.5 * s + 0.75 * s * s;
        let qs: Vec<[f64; 1]> = times.iter().map(|&s| [q(s)]).collect();
        let by_q: Vec<Known<'_>> = by_velocities
            .iter()
            .zip(&qs)
            .map(|(k, q)| Known {
                at: k.at,
                velocity: q,
                acceleration: None,
            })
            .collect();
        let exact_q = (1.0 * h) - 0.5 * ((t + h).powi(2) - t * t) / 2.0
            + 0.75 * ((t + h).powi(3) - t.powi(3)) / 3.0;
        let got_q = predicted_move(h, &by_q)[0];
        assert!((got_q - exact_q).abs() < 1e-15, "{got_q} vs {exact_q}");
    }
}
