//! An independent check that a solved assembly's joints hold: each revolute's and
//! ball's marker frames recomputed from the solved part placements and the markers as
//! the file gives them (not from the solver's equations), and measured.

use tenon::{JointType, MarkerSpec, Mechanism};

/// The worst gap between the two markers of a revolute or ball joint (model units) and
/// the worst angle between a revolute's two z axes (radians), over every joint.
pub fn worst_joint_errors(m: &Mechanism) -> (f64, f64) {
    let model = m.model();
    let values = model.parameter_values();
    let units = model.units();
    let frame = |end: &tenon::MarkerRef| -> tenon::Pose {
        let part = model.part(end.part).expect("the joint's part");
        let local = match &end.marker {
            MarkerSpec::Named(name) => part.marker(name).expect("the named marker").clone(),
            MarkerSpec::Inline(p) => (**p).clone(),
        };
        let local = local.numbers(values, units).expect("numeric marker");
        let placed = m.placement_of(end.part).expect("a placed part");
        placed.compose(&local)
    };
    let (mut gap, mut turn) = (0.0f64, 0.0f64);
    for (_, joint) in model.joints() {
        let (a, b) = (frame(&joint.i), frame(&joint.j));
        let d: f64 = (0..3)
            .map(|k| (a.position[k] - b.position[k]).powi(2))
            .sum::<f64>()
            .sqrt();
        match joint.joint_type {
            JointType::Revolute => {
                let (za, zb) = (a.matrix(), b.matrix());
                let z = |m: [[f64; 3]; 3]| [m[0][2], m[1][2], m[2][2]];
                let (u, v) = (z(za), z(zb));
                let cross = [
                    u[1] * v[2] - u[2] * v[1],
                    u[2] * v[0] - u[0] * v[2],
                    u[0] * v[1] - u[1] * v[0],
                ];
                let s = cross.iter().map(|c| c * c).sum::<f64>().sqrt();
                gap = gap.max(d);
                turn = turn.max(s);
            }
            JointType::Ball => gap = gap.max(d),
            other => panic!("the check knows revolutes and balls, not {other:?}"),
        }
    }
    (gap, turn)
}
