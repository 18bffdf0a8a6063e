//! Random driven mechanisms (proptest): serial chains of revolutes, sliders and balls,
//! far from the origin, axes generic or along the coordinate axes, each revolute and
//! slider driven by a motion or left free, built at a solved pose. A short run around a
//! random time must complete, and its velocities must equal central differences of its
//! positions and its accelerations those of its velocities, to 1e-6 relative.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/differences.rs"]
mod differences;

use std::fmt::Write;

use differences::worst_against_differences;
use proptest::prelude::*;
use tenon::{Mechanism, RunSettings};

/// One link of a chain: its joint to the link before, the axis of that joint (a unit
/// quaternion for the markers' frame), where the next joint sits on it, and its motion.
#[derive(Debug, Clone)]
struct Link {
    kind: Kind,
    axis: [f64; 4],
    next: [f64; 3],
    /// Amplitude, frequency (Hz) and phase (degrees) of `A sin(360 f t + phase)`;
    /// `None`: the joint is left free.
    motion: Option<(f64, f64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Revolute,
    Slider,
    Ball,
}

fn unit(q: [f64; 4]) -> [f64; 4] {
    let n = q.iter().map(|x| x * x).sum::<f64>().sqrt();
    q.map(|x| x / n)
}

fn arb_axis() -> impl Strategy<Value = [f64; 4]> {
    let half = std::f64::consts::FRAC_1_SQRT_2;
    prop_oneof![
        // Along the coordinate axes: z, x, y, and z turned 180 degrees.
        Just([1.0, 0.0, 0.0, 0.0]),
        Just([half, 0.0, half, 0.0]),
        Just([half, -half, 0.0, 0.0]),
        Just([0.0, 1.0, 0.0, 0.0]),
        // Generic.
        prop::array::uniform4(-1.0f64..1.0)
            .prop_filter("not near zero", |q| q.iter().map(|x| x * x).sum::<f64>()
                > 0.1)
            .prop_map(unit),
    ]
}

fn arb_link() -> impl Strategy<Value = Link> {
    (
        prop_oneof![4 => Just(Kind::Revolute), 2 => Just(Kind::Slider), 1 => Just(Kind::Ball)],
        arb_axis(),
        prop::array::uniform3(-60.0f64..60.0),
        prop::option::weighted(0.8, (5.0f64..60.0, 0.2f64..2.0, 0.0f64..360.0)),
    )
        .prop_map(|(kind, axis, next, motion)| Link {
            kind,
            axis,
            next,
            motion: if kind == Kind::Ball { None } else { motion },
        })
}

/// The chain as JSON v1: ground far from the origin, each link placed with the identity
/// rotation at the point where its joint's markers meet (so every joint holds), millimetres
/// and degrees; a slider's motion is a distance in millimetres (its amplitude / 3).
fn chain(links: &[Link], origin: [f64; 3]) -> String {
    let q = |q: [f64; 4]| {
        format!(
            "{{ \"quaternion\": [{}, {}, {}, {}] }}",
            q[0], q[1], q[2], q[3]
        )
    };
    let mut parts = format!(
        "{{ \"id\": \"ground\", \"grounded\": true, \"markers\": {{ \"m0\": {{ \"position\": [{}, {}, {}], \"rotation\": {} }} }} }}",
        origin[0], origin[1], origin[2], q(links[0].axis)
    );
    let mut joints = Vec::new();
    let mut motions = Vec::new();
    let mut at = origin;
    for (k, link) in links.iter().enumerate() {
        let next_axis = links.get(k + 1).map_or([1.0, 0.0, 0.0, 0.0], |l| l.axis);
        let _ = write!(
            parts,
            ",\n{{ \"id\": \"link{k}\", \"placement\": {{ \"position\": [{}, {}, {}] }}, \"markers\": {{ \"a\": {{ \"rotation\": {} }}, \"b\": {{ \"position\": [{}, {}, {}], \"rotation\": {} }} }} }}",
            at[0], at[1], at[2], q(link.axis), link.next[0], link.next[1], link.next[2], q(next_axis)
        );
        let before = if k == 0 {
            ("ground".to_string(), "m0")
        } else {
            (format!("link{}", k - 1), "b")
        };
        let kind = match link.kind {
            Kind::Revolute => "revolute",
            Kind::Slider => "slider",
            Kind::Ball => "ball",
        };
        joints.push(format!(
            "{{ \"id\": \"j{k}\", \"type\": \"{kind}\", \"i\": {{ \"part\": \"link{k}\", \"marker\": \"a\" }}, \"j\": {{ \"part\": \"{}\", \"marker\": \"{}\" }} }}",
            before.0, before.1
        ));
        if let Some((amplitude, frequency, phase)) = link.motion {
            let (coordinate, amplitude) = match link.kind {
                Kind::Slider => ("distance", amplitude / 3.0),
                _ => ("angle", amplitude),
            };
            motions.push(format!(
                "{{ \"joint\": \"j{k}\", \"{coordinate}\": \"{amplitude} * sin({} * t + {phase})\" }}",
                360.0 * frequency
            ));
        }
        for (a, n) in at.iter_mut().zip(link.next) {
            *a += n;
        }
    }
    format!(
        "{{ \"format\": \"tenon-assembly\", \"version\": 1, \"units\": {{ \"length\": \"mm\", \"angle\": \"deg\" }},\n\"parts\": [{parts}],\n\"joints\": [{}],\n\"motions\": [{}] }}",
        joints.join(",\n"),
        motions.join(",\n")
    )
}

/// Rates against central differences at the third of a run's frames (degrees).
fn differences_at_third_frame(run: &tenon::Trajectory, h: f64) -> (f64, f64) {
    let per_radian = 180.0 / std::f64::consts::PI;
    let f = &run.frames;
    worst_against_differences(&f[1], &f[2], &f[3], h, per_radian)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_driven_chains_have_rates_that_are_the_derivatives_of_their_frames(
        links in prop::collection::vec(arb_link(), 1..5),
        origin in prop::array::uniform3(-5000.0f64..5000.0),
        t0 in 0.05f64..0.9,
    ) {
        prop_assume!(links.iter().any(|l| l.motion.is_some()));
        let text = chain(&links, origin);
        let mut m = Mechanism::from_json(&text, None).unwrap();
        let h = 2e-5;
        let run = m.kinematics(RunSettings::new(t0 - 2.0 * h, t0 + h, h, None).unwrap()).unwrap();
        prop_assert!(run.completed, "{:?}\n{text}", run.events);
        prop_assert_eq!(run.frames.len(), 4);
        let (v, a) = differences_at_third_frame(&run, h);
        prop_assert!(v < 1e-6 && a < 1e-6, "velocity {v:.1e}, acceleration {a:.1e}\n{text}");
    }
}

/// Found by the property above: a free slider, a driven revolute on it and a ball on
/// that; solved in block-triangular stages, each stage held its own equations while the
/// chain ended 1.3e-8 off, and the run stopped at its first frame. The piece is now
/// solved whole again when its stages do not hold it together.
#[test]
fn a_free_slider_under_a_driven_revolute_runs() {
    let links = [
        Link {
            kind: Kind::Slider,
            axis: [0.0, 1.0, 0.0, 0.0],
            next: [0.0; 3],
            motion: None,
        },
        Link {
            kind: Kind::Revolute,
            axis: unit([0.0, -0.23517, 0.76321, -0.60183]),
            next: [0.0, -28.037, 0.0],
            motion: Some((5.0, 0.2, 0.0)),
        },
        Link {
            kind: Kind::Ball,
            axis: [1.0, 0.0, 0.0, 0.0],
            next: [0.0; 3],
            motion: None,
        },
    ];
    let mut m = Mechanism::from_json(&chain(&links, [0.0; 3]), None).unwrap();
    let run = m
        .kinematics(RunSettings::new(0.048, 0.052, 0.001, None).unwrap())
        .unwrap();
    assert!(run.completed, "{:?}", run.events);
    assert_eq!(run.frames.len(), 5);
    assert!(run.frames.iter().all(|f| f.max_residual <= 1e-10));
}

#[path = "common/generate.rs"]
mod generate;

/// Long chains (sparse runs, 600 tangent columns): every revolute driven, the rates come
/// from the square Jacobian solved directly; with one motion removed, from the refined
/// least-norm solve (a free freedom in a large run: velocities only are held, its
/// accelerations lack the part along the freedom, as documented). Driven chains'
/// Jacobians are square with a block of six columns per link, so their rates and chord
/// steps go block by block (`linalg::triangular`); a 200-link chain too.
#[test]
fn long_driven_chains_have_exact_rates() {
    let h = 1e-5;
    let longer = generate::moving_chain(200);
    let mut m = Mechanism::from_json(&longer, None).unwrap();
    let run = m
        .kinematics(RunSettings::new(0.3 - 2.0 * h, 0.3 + h, h, None).unwrap())
        .unwrap();
    assert!(run.completed, "{:?}", run.events);
    let (v, a) = differences_at_third_frame(&run, h);
    assert!(
        v < 1e-6 && a < 1e-6,
        "velocity {v:.1e}, acceleration {a:.1e}"
    );
    let driven = generate::moving_chain(100);
    // The motion of revolute r50 removed, with the separator after it.
    let start = driven.find(r#"{ "joint": "r50""#).unwrap();
    let end = start + driven[start..].find("},").unwrap() + 2;
    let free = format!("{}{}", &driven[..start], &driven[end..]);
    assert!(!free.contains(r#""r50", "angle""#));
    for (text, accelerations) in [(&driven, true), (&free, false)] {
        let mut m = Mechanism::from_json(text, None).unwrap();
        let run = m
            .kinematics(RunSettings::new(0.3 - 2.0 * h, 0.3 + h, h, None).unwrap())
            .unwrap();
        assert!(run.completed, "{:?}", run.events);
        let (v, a) = differences_at_third_frame(&run, h);
        assert!(v < 1e-6, "velocity {v:.1e}");
        if accelerations {
            assert!(a < 1e-6, "acceleration {a:.1e}");
        }
    }
}
