//! Least change: a solve moves only what the joints force to move, and no further than
//! needed. Two pendulums on one ground: the one whose joint holds must not move at all
//! (bit for bit), the other comes back to its pivot without swinging about its free axis.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::Mechanism;

fn pendulums(offset: [f64; 3]) -> String {
    let (s, c) = (35f64.to_radians() / 2.0).sin_cos();
    format!(
        r#"{{
  "format": "tenon-assembly", "version": 1,
  "parts": [
    {{ "id": "ground", "grounded": true, "markers": {{
        "p1": {{}}, "p2": {{ "position": [0, 100, 0] }} }} }},
    {{ "id": "still", "placement": {{ "rotation": {{ "quaternion": [{c}, 0, 0, {s}] }} }},
      "markers": {{ "pivot": {{}} }} }},
    {{ "id": "moved", "placement": {{ "position": [{}, {}, {}],
        "rotation": {{ "quaternion": [{c}, 0, 0, {s}] }} }},
      "markers": {{ "pivot": {{}} }} }}
  ],
  "joints": [
    {{ "id": "a", "type": "revolute", "i": {{ "part": "still", "marker": "pivot" }}, "j": {{ "part": "ground", "marker": "p1" }} }},
    {{ "id": "b", "type": "revolute", "i": {{ "part": "moved", "marker": "pivot" }}, "j": {{ "part": "ground", "marker": "p2" }} }}
  ]
}}"#,
        offset[0],
        100.0 + offset[1],
        offset[2]
    )
}

#[test]
fn a_part_whose_joints_hold_does_not_move_and_the_other_does_not_swing() {
    let mut m = Mechanism::from_json(&pendulums([3.0, -2.0, 1.5]), None).unwrap();
    let still_before = m.placement("still").unwrap();
    let moved_before = m.placement("moved").unwrap();
    assert!(m.solve().unwrap().converged);
    assert_eq!(m.placement("still").unwrap(), still_before);
    let moved = m.placement("moved").unwrap();
    for (k, want) in [0.0, 100.0, 0.0].iter().enumerate() {
        assert!(
            (moved.position[k] - want).abs() < 1e-9,
            "{:?}",
            moved.position
        );
    }
    // A pure translation error needs no turn: the orientation is unchanged.
    for k in 0..4 {
        assert!(
            (moved.quaternion[k] - moved_before.quaternion[k]).abs() < 1e-9,
            "{:?} -> {:?}",
            moved_before.quaternion,
            moved.quaternion
        );
    }
}

#[test]
fn a_satisfied_under_constrained_assembly_does_not_move() {
    let mut m = Mechanism::from_json(&pendulums([0.0, 0.0, 0.0]), None).unwrap();
    let before = [m.placement("still").unwrap(), m.placement("moved").unwrap()];
    assert!(m.solve().unwrap().converged);
    assert_eq!(m.placement("still").unwrap(), before[0]);
    assert_eq!(m.placement("moved").unwrap(), before[1]);
}
