//! Tenon's expression engine on a small mechanism: the loop-closure equations of a planar
//! four-bar (the dimensions of the spec's example), parsed from strings, compiled once,
//! then solved by Newton for the coupler and rocker angles at every crank angle. The
//! crank angle is a parameter: changing it re-evaluates the tape, nothing is rebuilt.
//!
//! Run: `cargo run --release -p tenon-expr --example four_bar`
#![allow(clippy::print_stdout)]

use std::process::ExitCode;

use tenon_expr::{parse_into, AngleUnit, ExprError, ExprGraph, ParseOptions};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("four_bar: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), ExprError> {
    let mut g = ExprGraph::new();
    let coupler_angle = g.new_var("coupler_angle");
    let rocker_angle = g.new_var("rocker_angle");
    // Parameter order = index into the parameter values.
    let names = ["crank", "coupler", "rocker", "ground", "crank_angle"];
    let params: Vec<_> = names.iter().map(|n| g.new_param(*n)).collect();
    let values = [40.0, 120.0, 80.0, 100.0, 0.0];

    let options = ParseOptions {
        angle_unit: AngleUnit::Degrees,
    };
    let mut resolve = |name: &str, g: &mut ExprGraph| match name {
        "coupler_angle" => Some(g.var(coupler_angle)),
        "rocker_angle" => Some(g.var(rocker_angle)),
        other => g.find_param(other).map(|p| g.param(p)),
    };
    let closure_x =
        "crank*cos(crank_angle) + coupler*cos(coupler_angle) - rocker*cos(rocker_angle) - ground";
    let closure_y =
        "crank*sin(crank_angle) + coupler*sin(coupler_angle) - rocker*sin(rocker_angle)";
    let fx = parse_into(&mut g, closure_x, options, &mut resolve)?;
    let fy = parse_into(&mut g, closure_y, options, &mut resolve)?;

    let tape = g.compile(&[fx, fy], &[coupler_angle, rocker_angle])?;
    let mut ws = tape.workspace();
    let mut out = tape.output();
    let mut p = values.to_vec();
    let crank_angle = params[4].index();
    println!(
        "four-bar {}/{}/{}/{} (crank/coupler/rocker/ground), {} Jacobian entries, {} instructions",
        values[0],
        values[1],
        values[2],
        values[3],
        tape.pattern().nnz(),
        tape.instruction_count()
    );
    println!(
        "{:>12} {:>14} {:>14} {:>11} {:>10}",
        "crank [deg]", "coupler [deg]", "rocker [deg]", "iterations", "|closure|"
    );
    // Start from an assembled pose near crank angle 0 and follow the crank around.
    let mut x = [30.0, 100.0];
    for step in 0..=12 {
        p[crank_angle] = 30.0 * f64::from(step);
        let mut iterations = 0;
        let mut norm = f64::INFINITY;
        while iterations < 50 {
            tape.evaluate(&mut ws, &x, &p, &mut out)?;
            let r = out.residuals();
            norm = r[0].hypot(r[1]);
            if norm < 1e-10 {
                break;
            }
            // The 2x2 Jacobian is dense here: entries in pattern order, row-major.
            let j = out.jacobian();
            let det = j[0] * j[3] - j[1] * j[2];
            x[0] -= (j[3] * r[0] - j[1] * r[1]) / det;
            x[1] -= (-j[2] * r[0] + j[0] * r[1]) / det;
            iterations += 1;
        }
        println!(
            "{:>12.1} {:>14.6} {:>14.6} {:>11} {:>10.1e}",
            p[crank_angle], x[0], x[1], iterations, norm
        );
    }
    Ok(())
}
