//! Runs as the views show them: each frame's part poses (for the animation) and the
//! series plotted against time (joint coordinates and rates; for dynamics also
//! reactions, drive efforts, energies; the worst residual per frame), drawn as SVG by
//! plotters.

use plotters::prelude::*;
use tenon::{Coordinate, DynamicTrajectory, JointFrame, Mechanism, PartFrame, PartKey, Trajectory};

use crate::ReportError;

/// Series drawn per plot at most; the rest are named in the plot's note.
pub const PLOTTED_SERIES: usize = 12;

/// One quantity over the run's frames.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// What it is (`crank.angle`).
    pub name: String,
    /// Its value at each frame.
    pub values: Vec<f64>,
}

/// Series drawn on one set of axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// Title (`joint angles`).
    pub title: String,
    /// The unit of the values (`deg`, `mm/s`).
    pub unit: String,
    /// The unit of time (`s`).
    pub time_unit: String,
    /// The series.
    pub series: Vec<Series>,
}

/// A run as the views show it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    /// `kinematics` or `dynamics`.
    pub kind: &'static str,
    /// The frames' times.
    pub times: Vec<f64>,
    /// The free parts, in the order of each frame's poses.
    pub parts: Vec<PartKey>,
    /// Per frame, per part: position and quaternion `[w, x, y, z]`.
    pub poses: Vec<Vec<([f64; 3], [f64; 4])>>,
    /// The plots.
    pub plots: Vec<Plot>,
}

/// A run's view from its frames' times and parts, and its plots.
fn run_view(kind: &'static str, frames: &[(f64, &[PartFrame])], plots: Vec<Plot>) -> RunView {
    RunView {
        kind,
        times: frames.iter().map(|f| f.0).collect(),
        parts: frames
            .first()
            .map(|f| f.1.iter().map(|p| p.part).collect())
            .unwrap_or_default(),
        poses: frames
            .iter()
            .map(|f| f.1.iter().map(|p| (p.position, p.quaternion)).collect())
            .collect(),
        plots,
    }
}

/// The units' names: (length, angle, mass, time).
fn unit_names(m: &Mechanism) -> [String; 4] {
    let names = m.model().units().names();
    let get = |q: &str| {
        names
            .iter()
            .find(|(n, _)| *n == q)
            .map_or_else(String::new, |(_, u)| (*u).to_string())
    };
    [get("length"), get("angle"), get("mass"), get("time")]
}

/// Joint coordinates and their rates, angles and distances apart (their scales differ).
fn joint_plots(m: &Mechanism, frames: &[&[JointFrame]], units: &[String; 4]) -> Vec<Plot> {
    let [length, angle, _, time] = units;
    let mut plots = Vec::new();
    for (coordinate, what, unit) in [
        (Coordinate::Angle, "angle", angle),
        (Coordinate::Distance, "distance", length),
    ] {
        let Some(first) = frames.first() else {
            break;
        };
        let columns: Vec<usize> = (0..first.len())
            .filter(|&k| first[k].coordinate == coordinate)
            .collect();
        if columns.is_empty() {
            continue;
        }
        let name = |k: usize| {
            let id = m.joint_id(first[k].joint).unwrap_or("?");
            format!("{id}.{what}")
        };
        let series = |rate: bool| -> Vec<Series> {
            columns
                .iter()
                .map(|&k| Series {
                    name: if rate {
                        format!("{}_rate", name(k))
                    } else {
                        name(k)
                    },
                    values: frames
                        .iter()
                        .map(|f| {
                            f.get(k)
                                .map_or(f64::NAN, |j| if rate { j.rate } else { j.value })
                        })
                        .collect(),
                })
                .collect()
        };
        plots.push(Plot {
            title: format!("joint {what}s"),
            time_unit: time.clone(),
            unit: unit.clone(),
            series: series(false),
        });
        plots.push(Plot {
            title: format!("joint {what} rates"),
            time_unit: time.clone(),
            unit: format!("{unit}/{time}"),
            series: series(true),
        });
    }
    plots
}

fn residual_plot(values: Vec<f64>, length: &str, time: &str) -> Plot {
    Plot {
        title: "largest residual".into(),
        time_unit: time.to_string(),
        unit: length.to_string(),
        series: vec![Series {
            name: "max_residual".into(),
            values,
        }],
    }
}

/// A kinematic run as the views show it.
pub fn kinematics_view(m: &Mechanism, t: &Trajectory) -> RunView {
    let units = unit_names(m);
    let joints: Vec<&[JointFrame]> = t.frames.iter().map(|f| f.joints.as_slice()).collect();
    let mut plots = joint_plots(m, &joints, &units);
    plots.push(residual_plot(
        t.frames.iter().map(|f| f.max_residual).collect(),
        &units[0],
        &units[3],
    ));
    let frames: Vec<(f64, &[PartFrame])> = t
        .frames
        .iter()
        .map(|f| (f.time, f.parts.as_slice()))
        .collect();
    run_view("kinematics", &frames, plots)
}

/// A dynamic run as the views show it.
pub fn dynamics_view(m: &Mechanism, t: &DynamicTrajectory) -> RunView {
    let units = unit_names(m);
    let [length, angle, mass, time] = &units;
    let joints: Vec<&[JointFrame]> = t.frames.iter().map(|f| f.joints.as_slice()).collect();
    let mut plots = joint_plots(m, &joints, &units);
    let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if let Some(first) = t.frames.first() {
        let joint = |k: usize| m.joint_id(first.reactions[k].joint).unwrap_or("?");
        let reaction = |torque: bool| -> Vec<Series> {
            (0..first.reactions.len())
                .map(|k| Series {
                    name: joint(k).to_string(),
                    values: t
                        .frames
                        .iter()
                        .map(|f| {
                            f.reactions
                                .get(k)
                                .map_or(f64::NAN, |r| norm(if torque { r.torque } else { r.force }))
                        })
                        .collect(),
                })
                .collect()
        };
        let force = format!("{mass}*{length}/{time}^2");
        if !first.reactions.is_empty() {
            plots.push(Plot {
                title: "joint reaction forces (magnitude)".into(),
                time_unit: time.clone(),
                unit: force.clone(),
                series: reaction(false),
            });
            plots.push(Plot {
                title: "joint reaction torques (magnitude, about marker i)".into(),
                time_unit: time.clone(),
                unit: format!("{force}*{length}"),
                series: reaction(true),
            });
        }
        if !first.efforts.is_empty() {
            let efforts = (0..first.efforts.len())
                .map(|k| Series {
                    name: m
                        .joint_id(first.efforts[k].joint)
                        .unwrap_or("?")
                        .to_string(),
                    values: t
                        .frames
                        .iter()
                        .map(|f| f.efforts.get(k).map_or(f64::NAN, |e| e.effort))
                        .collect(),
                })
                .collect();
            plots.push(Plot {
                title: "drive efforts (force, or torque per radian)".into(),
                time_unit: time.clone(),
                unit: format!("{force} or {force}*{length}/{angle}"),
                series: efforts,
            });
        }
    }
    let energy = |name: &str, f: &dyn Fn(&tenon::Energy) -> f64| Series {
        name: name.into(),
        values: t.frames.iter().map(|fr| f(&fr.energy)).collect(),
    };
    plots.push(Plot {
        title: "energy".into(),
        time_unit: time.clone(),
        unit: format!("{mass}*{length}^2/{time}^2"),
        series: vec![
            energy("kinetic", &|e| e.kinetic),
            energy("potential", &|e| e.potential),
            energy("spring", &|e| e.spring),
            energy("work done", &|e| e.work),
            energy("total - work", &|e| {
                e.kinetic + e.potential + e.spring - e.work
            }),
        ],
    });
    plots.push(residual_plot(
        t.frames.iter().map(|f| f.max_residual).collect(),
        length,
        time,
    ));
    let frames: Vec<(f64, &[PartFrame])> = t
        .frames
        .iter()
        .map(|f| (f.time, f.parts.as_slice()))
        .collect();
    run_view("dynamics", &frames, plots)
}

/// One plot as an SVG document, `width` by `height` pixels, time along x.
pub fn plot_svg(
    times: &[f64],
    plot: &Plot,
    (width, height): (u32, u32),
) -> Result<String, ReportError> {
    let time_label = format!("t ({})", plot.time_unit);
    let fail = |e: &dyn std::fmt::Display| ReportError::Plot(format!("{}: {e}", plot.title));
    let finite = |v: &&f64| v.is_finite();
    let drawn = &plot.series[..plot.series.len().min(PLOTTED_SERIES)];
    let (mut lo, mut hi) = drawn
        .iter()
        .flat_map(|s| s.values.iter().filter(finite))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    if hi - lo <= 1e-12 * (lo.abs() + hi.abs()).max(1e-300) {
        let pad = (lo.abs() * 0.05).max(1e-9);
        (lo, hi) = (lo - pad, hi + pad);
    }
    let (t0, mut t1) = (
        times.first().copied().unwrap_or(0.0),
        times.last().copied().unwrap_or(1.0),
    );
    if t1 <= t0 {
        t1 = t0 + 1.0;
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&plot.title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(70)
            .build_cartesian_2d(t0..t1, lo..hi)
            .map_err(|e| fail(&e))?;
        let span = lo.abs().max(hi.abs());
        let label = |v: &f64| {
            if !(1e-3..1e6).contains(&span) {
                format!("{v:.1e}")
            } else {
                format!("{v}")
            }
        };
        chart
            .configure_mesh()
            .x_desc(time_label)
            .y_desc(plot.unit.as_str())
            .y_label_formatter(&label)
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(|e| fail(&e))?;
        for (k, s) in drawn.iter().enumerate() {
            let colour = Palette99::pick(k).to_rgba();
            let points = times
                .iter()
                .zip(&s.values)
                .filter(|(_, v)| v.is_finite())
                .map(|(&t, &v)| (t, v));
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(|e| fail(&e))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}
