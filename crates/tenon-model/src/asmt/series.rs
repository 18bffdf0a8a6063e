//! The `TimeSeries` block of an `.asmt` file: the poses another solver computed, per
//! part and frame, and the velocities and accelerations where the file carries them.

use super::number::parse_number;
use super::Result;
use crate::error::ModelError;
use crate::placement::Pose;

/// The `TimeSeries` block of an `.asmt` file: the poses another solver computed.
#[derive(Debug, Clone, PartialEq)]
pub struct AsmtTimeSeries {
    /// Times of the output frames.
    pub times: Vec<f64>,
    /// Per part (by name): the input pose and one pose per output frame.
    pub parts: Vec<(String, Vec<Pose>)>,
    /// Per part (by name), where the file has the `VX` .. `AlphaZ` rows: the rates in the
    /// input column and at each output frame (same indexing as `parts`).
    pub rates: Vec<(String, Vec<PartRates>)>,
}

/// A part's rates in a `TimeSeries` frame, world frame: the part origin's velocity and
/// acceleration, the angular velocity and acceleration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartRates {
    /// `VX VY VZ`.
    pub velocity: [f64; 3],
    /// `OmegaX OmegaY OmegaZ`.
    pub angular_velocity: [f64; 3],
    /// `AX AY AZ`.
    pub acceleration: [f64; 3],
    /// `AlphaX AlphaY AlphaZ`.
    pub angular_acceleration: [f64; 3],
}

/// Reads the `TimeSeries` block, if the file has one: for each part, the pose as loaded
/// (`Input` column) and at each frame, from the `X Y Z` and Bryant angle rows
/// (`R = Rx(a) Ry(b) Rz(c)`).
pub fn read_asmt_time_series(text: &str) -> Result<Option<AsmtTimeSeries>> {
    let mut lines = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .enumerate();
    if !lines.any(|(_, l)| l.starts_with("TimeSeries")) {
        return Ok(None);
    }
    let mut times = Vec::new();
    let mut parts: Vec<(String, Vec<Pose>)> = Vec::new();
    let mut rates: Vec<(String, Vec<PartRates>)> = Vec::new();
    let mut current: Option<PartRows> = None;
    let mut finish = |current: Option<PartRows>, parts: &mut Vec<(String, Vec<Pose>)>| {
        let Some((name, rows)) = current else { return };
        let row = |key: &str| {
            rows.iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let (x, y, z) = (row("X"), row("Y"), row("Z"));
        let (a, b, c) = (row("Bryantx"), row("Bryanty"), row("Bryantz"));
        let n = [&x, &y, &z, &a, &b, &c]
            .iter()
            .map(|v| v.len())
            .min()
            .unwrap_or(0);
        let poses = (0..n)
            .map(|k| Pose {
                position: [x[k], y[k], z[k]],
                quaternion: bryant_quaternion(a[k], b[k], c[k]),
            })
            .collect();
        let triple = |keys: [&str; 3]| keys.map(&row);
        let rows = [
            triple(["VX", "VY", "VZ"]),
            triple(["OmegaX", "OmegaY", "OmegaZ"]),
            triple(["AX", "AY", "AZ"]),
            triple(["AlphaX", "AlphaY", "AlphaZ"]),
        ];
        let m = rows.iter().flatten().map(Vec::len).min().unwrap_or(0);
        if m > 0 {
            let at = |r: &[Vec<f64>; 3], k: usize| [r[0][k], r[1][k], r[2][k]];
            let frames = (0..m)
                .map(|k| PartRates {
                    velocity: at(&rows[0], k),
                    angular_velocity: at(&rows[1], k),
                    acceleration: at(&rows[2], k),
                    angular_acceleration: at(&rows[3], k),
                })
                .collect();
            rates.push((name.clone(), frames));
        }
        parts.push((name, poses));
    };
    for (k, line) in lines {
        let cells: Vec<&str> = line
            .split('\t')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let Some(&first) = cells.first() else {
            continue;
        };
        // "PartSeries /Assembly1/Part1" (one cell) or "PartSeries<tab>/Assembly1/Part1".
        let joined;
        let head = if first.ends_with("Series") && cells.len() == 2 && cells[1].starts_with('/') {
            joined = format!("{first} {}", cells[1]);
            joined.as_str()
        } else {
            first
        };
        if head == "Time" {
            times = cells
                .iter()
                .skip(2)
                .map(|c| {
                    parse_number(c)
                        .ok_or_else(|| ModelError::at_line(k + 1, format!("'{c}' is not a number")))
                })
                .collect::<Result<_>>()?;
        } else if let Some(name) = head.strip_prefix("PartSeries ") {
            finish(current.take(), &mut parts);
            let short = name.rsplit('/').next().unwrap_or(name).to_string();
            current = Some((short, Vec::new()));
        } else if head.ends_with("Series") || head.contains("Series ") {
            finish(current.take(), &mut parts);
        } else if let Some((_, rows)) = current.as_mut() {
            let values = cells
                .iter()
                .skip(1)
                .map(|c| {
                    parse_number(c)
                        .ok_or_else(|| ModelError::at_line(k + 1, format!("'{c}' is not a number")))
                })
                .collect::<Result<Vec<f64>>>()?;
            rows.push((head.to_string(), values));
        }
    }
    finish(current, &mut parts);
    Ok(Some(AsmtTimeSeries {
        times,
        parts,
        rates,
    }))
}

/// A part's name and its named rows of numbers in a `TimeSeries` block.
type PartRows = (String, Vec<(String, Vec<f64>)>);

/// Quaternion of Bryant angles: `R = Rx(a) * Ry(b) * Rz(c)`.
pub(super) fn bryant_quaternion(a: f64, b: f64, c: f64) -> [f64; 4] {
    let axis = |k: usize, angle: f64| {
        let (s, co) = (angle / 2.0).sin_cos();
        let mut q = [co, 0.0, 0.0, 0.0];
        q[k + 1] = s;
        q
    };
    let q = crate::placement::quaternion_multiply(
        crate::placement::quaternion_multiply(axis(0, a), axis(1, b)),
        axis(2, c),
    );
    if q[0] < 0.0 {
        q.map(|x| -x)
    } else {
        q
    }
}
