//! `tenon simulate`: the dynamics run over time; frames written as the spec's trajectory
//! (CSV or JSON by the output's extension, atomically) with reactions, drive efforts and
//! energies; a summary on stdout.

use std::path::Path;
use std::time::Duration;

use anyhow::anyhow;
use serde_json::{json, Map, Value};
use tenon::{DynamicEventKind, DynamicFrame, DynamicTrajectory, Mechanism, SimulationSettings};

use crate::kinematics::{
    field, header, joint_id, number, parts_and_joints_json, row, run_command, summary_text,
    trajectory_json, with_progress, Written,
};
use crate::{bad_input, Failure};

pub(crate) fn run(
    file: &Path,
    (end, step): (Option<f64>, Option<f64>),
    outputs: &crate::kinematics::Outputs<'_>,
) -> Result<(), Failure> {
    run_command(file, outputs, |mechanism, name| {
        let settings = SimulationSettings::for_assembly(mechanism.model(), end, step)
            .map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
        let run = settings.run;
        let total = ((run.end() - run.start()) / run.output_step()).ceil() as u64 + 1;
        with_progress(total, |progress| {
            mechanism.simulate_with_progress(settings, progress)
        })
        .map_err(|e| match e {
            // Mass data, forces or a start that cannot be used: bad input.
            tenon::Error::Dynamics(_) => bad_input(anyhow!("{name}: {e}")),
            e => Failure {
                status: 1,
                error: anyhow!("{name}: {e}"),
            },
        })
    })
}

impl Written for DynamicTrajectory {
    fn csv(&self, m: &Mechanism) -> String {
        csv(m, self)
    }
    fn view(&self, m: &Mechanism) -> tenon_report::RunView {
        tenon_report::dynamics_view(m, self)
    }
    fn json(&self, m: &Mechanism) -> Value {
        json_of(m, self)
    }
    fn summary(&self, m: &Mechanism, name: &str, took: Duration) -> String {
        summary(m, self, name, took)
    }
    fn stopped(&self) -> Option<String> {
        (!self.completed).then(|| {
            self.events
                .last()
                .map_or_else(String::new, |e| e.message.clone())
        })
    }
}

fn kind_name(kind: DynamicEventKind) -> &'static str {
    match kind {
        DynamicEventKind::NotSolved => "not_solved",
        DynamicEventKind::StepRefined => "step_refined",
        DynamicEventKind::Redundant => "redundant",
        DynamicEventKind::LimitsIgnored => "limits_ignored",
        DynamicEventKind::IllConditioned => "ill_conditioned",
        _ => "event",
    }
}

fn summary(m: &Mechanism, t: &DynamicTrajectory, name: &str, took: Duration) -> String {
    let worst = t.frames.iter().fold(0.0f64, |w, f| w.max(f.max_residual));
    let s = t.settings.run;
    let total =
        |f: &DynamicFrame| f.energy.kinetic + f.energy.potential + f.energy.spring - f.energy.work;
    let drift = match t.frames.first() {
        Some(first) => t
            .frames
            .iter()
            .map(|f| (total(f) - total(first)).abs())
            .fold(0.0f64, f64::max),
        None => 0.0,
    };
    let times: Vec<f64> = t.frames.iter().map(|f| f.time).collect();
    let events = t
        .events
        .iter()
        .map(|e| (e.time, e.joints.as_slice(), e.message.as_str()));
    let extra = format!("energy balance within {drift:.1e}; ");
    summary_text(m, (name, s), (&times, worst, &extra), took, events)
}

const REACTION_COLUMNS: [&str; 6] = ["fx", "fy", "fz", "tx", "ty", "tz"];
const ENERGY_COLUMNS: [&str; 4] = ["kinetic", "potential", "spring", "work"];

fn csv(m: &Mechanism, t: &DynamicTrajectory) -> String {
    let mut out = String::from("t");
    if let Some(first) = t.frames.first() {
        header(m, (&first.parts, &first.joints), &mut out);
        for r in &first.reactions {
            let id = joint_id(m, r.joint);
            for c in REACTION_COLUMNS {
                out.push(',');
                out.push_str(&field(&format!("{id}.{c}")));
            }
        }
        for e in &first.efforts {
            out.push(',');
            out.push_str(&field(&format!("{}.effort", joint_id(m, e.joint))));
        }
    }
    for c in ENERGY_COLUMNS {
        out.push(',');
        out.push_str(c);
    }
    out.push_str(",max_residual\n");
    let mut text = zmij::Buffer::new();
    for f in &t.frames {
        out.push_str(text.format(f.time));
        row((&f.parts, &f.joints), &mut out);
        for r in &f.reactions {
            for &x in r.force.iter().chain(&r.torque) {
                number(&mut out, x);
            }
        }
        for e in &f.efforts {
            number(&mut out, e.effort);
        }
        let e = f.energy;
        for x in [e.kinetic, e.potential, e.spring, e.work, f.max_residual] {
            number(&mut out, x);
        }
        out.push('\n');
    }
    out
}

fn frame_json(m: &Mechanism, f: &DynamicFrame) -> Value {
    let (parts, mut joints) = parts_and_joints_json(m, (&f.parts, &f.joints));
    for r in &f.reactions {
        let entry = joints
            .entry(joint_id(m, r.joint))
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(o) = entry {
            o.insert("force".into(), json!(r.force));
            o.insert("torque".into(), json!(r.torque));
        }
    }
    let motions: Map<String, Value> = f
        .efforts
        .iter()
        .map(|e| (joint_id(m, e.joint), json!({ "effort": e.effort })))
        .collect();
    let e = f.energy;
    json!({
        "t": f.time,
        "max_residual": f.max_residual,
        "parts": parts,
        "joints": joints,
        "motions": motions,
        "energy": { "kinetic": e.kinetic, "potential": e.potential, "spring": e.spring, "work": e.work },
    })
}

fn json_of(m: &Mechanism, t: &DynamicTrajectory) -> Value {
    let events = t.events.iter().map(|e| {
        (
            e.time,
            kind_name(e.kind),
            e.joints.as_slice(),
            e.message.as_str(),
        )
    });
    trajectory_json(
        m,
        ("dynamics", t.completed),
        t.frames.iter().map(|f| frame_json(m, f)).collect(),
        events,
    )
}
