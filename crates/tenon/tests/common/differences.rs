//! Rates against central differences of a run's frames (shared by the kinematics tests).
#![allow(clippy::needless_range_loop)]

use tenon::Frame;

fn quaternion_multiply(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    [
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    ]
}

/// World angular velocity from `q` and its rate: `omega = 2 (dq/dt) conj(q)`.
fn omega_of(q: [f64; 4], dq: [f64; 4]) -> [f64; 3] {
    let conj = [q[0], -q[1], -q[2], -q[3]];
    let w = quaternion_multiply(dq, conj);
    [2.0 * w[1], 2.0 * w[2], 2.0 * w[3]]
}

/// Rounding in a difference quotient: a few units in the last place of the larger value
/// differenced, over the step the quotient divides by.
fn resolution(a: f64, b: f64, step: f64) -> f64 {
    4.0 * f64::EPSILON * a.abs().max(b.abs()) / step
}

/// The largest difference between the rates a frame reports and central differences of
/// its neighbours, relative to the largest rate of the frame (angles in the file's unit:
/// `per_radian` converts the quaternion-derived angular velocity). What differencing can
/// resolve is allowed for: a part 3.7 m from the origin turning 2e-4 deg/s near the turn
/// of its motion moves 4e-10 mm per step of 2e-5 s, a thousand units in the last place of
/// its coordinate, so its difference quotient is good to about 1e-8 mm/s and no better.
pub fn worst_against_differences(
    before: &Frame,
    at: &Frame,
    after: &Frame,
    h: f64,
    per_radian: f64,
) -> (f64, f64) {
    let (mut dv, mut da, mut vmax, mut amax) = (0.0f64, 0.0f64, 1e-9f64, 1e-9f64);
    let beyond = |error: f64, resolution: f64| (error - resolution).max(0.0);
    // A quaternion's components are below 1 in size; `omega = 2 dq conj(q)`.
    let angle_resolution = 2.0 * resolution(1.0, 1.0, 2.0 * h) * per_radian;
    for ((p0, p), p1) in before.parts.iter().zip(&at.parts).zip(&after.parts) {
        let dq: [f64; 4] =
            std::array::from_fn(|k| (p1.quaternion[k] - p0.quaternion[k]) / (2.0 * h));
        let omega = omega_of(p.quaternion, dq).map(|x| x * per_radian);
        for k in 0..3 {
            let fd_v = (p1.position[k] - p0.position[k]) / (2.0 * h);
            let fd_a = (p1.velocity[k] - p0.velocity[k]) / (2.0 * h);
            let fd_alpha = (p1.angular_velocity[k] - p0.angular_velocity[k]) / (2.0 * h);
            let position_resolution = resolution(p0.position[k], p1.position[k], 2.0 * h);
            let velocity_resolution = resolution(p0.velocity[k], p1.velocity[k], 2.0 * h);
            let spin_resolution =
                resolution(p0.angular_velocity[k], p1.angular_velocity[k], 2.0 * h);
            dv = dv
                .max(beyond((p.velocity[k] - fd_v).abs(), position_resolution))
                .max(beyond(
                    (p.angular_velocity[k] - omega[k]).abs(),
                    angle_resolution,
                ));
            da = da
                .max(beyond(
                    (p.acceleration[k] - fd_a).abs(),
                    velocity_resolution,
                ))
                .max(beyond(
                    (p.angular_acceleration[k] - fd_alpha).abs(),
                    spin_resolution,
                ));
            vmax = vmax
                .max(p.velocity[k].abs())
                .max(p.angular_velocity[k].abs());
            amax = amax
                .max(p.acceleration[k].abs())
                .max(p.angular_acceleration[k].abs());
        }
    }
    // Where every acceleration is near zero (gears at constant speed), relative to the
    // velocities' own scale per time unit.
    (dv / vmax, da / amax.max(vmax))
}
