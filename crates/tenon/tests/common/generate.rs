//! Assemblies generated from a known solved pose and then perturbed deterministically
//! (so every run starts from the same place), for tests and benchmarks of any size.
//!
//! - [`chain`]: an open serial chain of `n` links, revolute to revolute ([`driven_chain`]:
//!   every revolute driven to an angle);
//! - [`rssr`]: `m` independent spatial RSSR four-bars (crank and rocker on revolutes with
//!   skew axes, coupler on two balls: 2 degrees of freedom each, one the coupler's idle
//!   spin);
//! - [`four_bars`]: `m` independent planar four-bars of four revolutes (two redundant
//!   equations per loop), optionally with every crank driven by one parameter;
//! - [`ladder`]: a closed-loop ladder of `cells` planar four-bar cells (parallelograms)
//!   joined by revolutes, the first upright grounded: 3 parts, 4 revolutes and 2
//!   redundant equations per cell, one cluster in all.
#![allow(dead_code)]

use std::fmt::Write;

/// A small deterministic wobble in [-1, 1].
pub fn wobble(k: usize, salt: f64) -> f64 {
    ((k as f64 + 1.0) * 12.9898 + salt * 78.233).sin()
}

type M3 = [[f64; 3]; 3];

fn mul(a: &M3, b: &M3) -> M3 {
    let mut m = [[0.0; 3]; 3];
    for (i, row) in m.iter_mut().enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = (0..3).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    m
}

fn rot_z(deg: f64) -> M3 {
    let (s, c) = deg.to_radians().sin_cos();
    [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
}

fn rot_x(deg: f64) -> M3 {
    let (s, c) = deg.to_radians().sin_cos();
    [[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]]
}

fn matrix_json(m: &M3) -> String {
    format!(
        "[[{}, {}, {}], [{}, {}, {}], [{}, {}, {}]]",
        m[0][0], m[0][1], m[0][2], m[1][0], m[1][1], m[1][2], m[2][0], m[2][1], m[2][2]
    )
}

/// A free part at `position` with rotation `rotation`, both perturbed by `key` (up to
/// `shift` in each coordinate and `turn` degrees about z and x), and its markers.
fn part(
    id: &str,
    position: [f64; 3],
    rotation: &M3,
    key: usize,
    shift: f64,
    turn: f64,
    markers: &str,
) -> String {
    let w = |salt: f64| wobble(key, salt);
    let r = mul(&mul(&rot_z(turn * w(3.0)), &rot_x(turn * w(4.0))), rotation);
    format!(
        r#"{{ "id": "{id}", "placement": {{ "position": [{}, {}, {}], "rotation": {{ "matrix": {} }} }}, "markers": {{ {markers} }} }}"#,
        position[0] + shift * w(1.0),
        position[1] + shift * w(2.0),
        position[2] + shift * w(5.0),
        matrix_json(&r)
    )
}

/// Where copy `i` of a mechanism goes: a 10 by 10 grid with `pitch` between rows and
/// twice that between columns, copy 100 on the first again (independent mechanisms may
/// overlap). Coordinates stay within a few thousand units: an absolute residual of
/// 1e-10 is near the limit of double precision at 1e4 units and beyond.
fn grid(i: usize, pitch: f64) -> (f64, f64) {
    (
        2.0 * pitch * (i % 10) as f64,
        pitch * ((i / 10) % 10) as f64,
    )
}

fn header(parameters: &str) -> String {
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1, "parameters": {{ {parameters} }}, "parts": ["#
    )
}

fn revolute(id: &str, i: (&str, &str), j: (&str, &str), extra: &str) -> String {
    format!(
        r#"{{ "id": "{id}", "type": "revolute", "i": {{ "part": "{}", "marker": "{}" }}, "j": {{ "part": "{}", "marker": "{}" }}{extra} }}"#,
        i.0, i.1, j.0, j.1
    )
}

fn finish(mut s: String, joints: &[String]) -> String {
    s.push_str(r#"], "joints": ["#);
    s.push_str(&joints.join(",\n"));
    s.push_str("] }");
    s
}

/// An open chain of `n` links of length 10, revolutes about z, link `k` turned
/// `10 + 4 wobble` degrees from the one before: the solved pose coils round a circle of
/// radius about 60 (coordinates stay small at any `n`), and each link starts perturbed
/// from it.
pub fn chain(n: usize) -> String {
    chain_with(n, false)
}

/// [`chain`] with every revolute driven to its angle in the solved pose: as many
/// equations as unknowns, each link's block depending on the one before (a
/// block-triangular system).
pub fn driven_chain(n: usize) -> String {
    chain_with(n, true)
}

fn chain_with(n: usize, driven: bool) -> String {
    let mut s = header("");
    s.push_str(r#"{ "id": "ground", "grounded": true, "markers": { "m": {} } }"#);
    let mut joints = Vec::new();
    let (mut heading, mut at) = (0.0f64, [0.0f64; 3]);
    for k in 0..n {
        let turn = 10.0 + 4.0 * wobble(k, 7.0);
        heading += turn;
        s.push_str(",\n");
        s.push_str(&part(
            &format!("link{k}"),
            at,
            &rot_z(heading),
            k,
            1.0,
            3.0,
            r#""a": {}, "b": { "position": [10, 0, 0] }"#,
        ));
        let (sin, cos) = heading.to_radians().sin_cos();
        at = [at[0] + 10.0 * cos, at[1] + 10.0 * sin, 0.0];
        let j = if k == 0 {
            ("ground".to_string(), "m")
        } else {
            (format!("link{}", k - 1), "b")
        };
        let drive = if driven {
            format!(r#", "angle": {turn}"#)
        } else {
            String::new()
        };
        joints.push(revolute(
            &format!("r{k}"),
            (&format!("link{k}"), "a"),
            (&j.0, j.1),
            &drive,
        ));
    }
    finish(s, &joints)
}

/// `m` RSSR four-bars: crank (length 30) about z at `A = (0, y, 0)`, rocker (length 80)
/// about x at `D = (100, y, 20)`, coupler on balls.
pub fn rssr(m: usize) -> String {
    rssr_at(m, |i| grid(i, 200.0), (2.0, 4.0))
}

/// [`rssr`] with copy `i` at `place(i)` and parts started off by up to `off.0` units
/// and `off.1` degrees.
fn rssr_at(m: usize, place: impl Fn(usize) -> (f64, f64), off: (f64, f64)) -> String {
    let crank = 60.0f64.to_radians();
    let rocker = 70.0f64.to_radians();
    let b = [30.0 * crank.cos(), 30.0 * crank.sin(), 0.0];
    let c = [100.0, 80.0 * rocker.cos(), 20.0 + 80.0 * rocker.sin()];
    let bc = [c[0] - b[0], c[1] - b[1], c[2] - b[2]];
    let len = (bc[0] * bc[0] + bc[1] * bc[1] + bc[2] * bc[2]).sqrt();
    // Coupler frame: x along B->C, z completing any orthonormal frame.
    let x = bc.map(|v| v / len);
    let t = if x[2].abs() < 0.9 {
        [0.0, 0.0, 1.0]
    } else {
        [1.0, 0.0, 0.0]
    };
    let mut z = [
        x[1] * t[2] - x[2] * t[1],
        x[2] * t[0] - x[0] * t[2],
        x[0] * t[1] - x[1] * t[0],
    ];
    let zn = (z[0] * z[0] + z[1] * z[1] + z[2] * z[2]).sqrt();
    z = z.map(|v| v / zn);
    let y = [
        z[1] * x[2] - z[2] * x[1],
        z[2] * x[0] - z[0] * x[2],
        z[0] * x[1] - z[1] * x[0],
    ];
    let coupler = [[x[0], y[0], z[0]], [x[1], y[1], z[1]], [x[2], y[2], z[2]]];
    // Rocker frame: x along the rocker, z along world x (its pivot axis).
    let (sr, cr) = rocker.sin_cos();
    let rocker_frame = [[0.0, 0.0, 1.0], [cr, -sr, 0.0], [sr, cr, 0.0]];
    // The ground marker at D turns local z onto world x.
    let pivot_x = "[[0, 0, 1], [0, 1, 0], [-1, 0, 0]]";
    let mut s = header("");
    s.push_str(r#"{ "id": "ground", "grounded": true, "markers": {"#);
    for i in 0..m {
        let (xx, yy) = place(i);
        if i > 0 {
            s.push(',');
        }
        write!(
            s,
            r#""A{i}": {{ "position": [{xx}, {yy}, 0] }}, "D{i}": {{ "position": [{}, {yy}, 20], "rotation": {{ "matrix": {pivot_x} }} }}"#,
            xx + 100.0
        )
        .ok();
    }
    s.push_str("} }");
    let mut joints = Vec::new();
    for i in 0..m {
        let (xx, yy) = place(i);
        let key = 3 * i;
        s.push_str(",\n");
        s.push_str(&part(
            &format!("crank{i}"),
            [xx, yy, 0.0],
            &rot_z(60.0),
            key,
            off.0,
            off.1,
            r#""p": {}, "q": { "position": [30, 0, 0] }"#,
        ));
        s.push_str(",\n");
        s.push_str(&part(
            &format!("coupler{i}"),
            [b[0] + xx, b[1] + yy, b[2]],
            &coupler,
            key + 1,
            off.0,
            off.1,
            &format!(r#""p": {{}}, "q": {{ "position": [{len}, 0, 0] }}"#),
        ));
        s.push_str(",\n");
        s.push_str(&part(
            &format!("rocker{i}"),
            [100.0 + xx, yy, 20.0],
            &rocker_frame,
            key + 2,
            off.0,
            off.1,
            r#""p": {}, "q": { "position": [80, 0, 0] }"#,
        ));
        joints.push(revolute(
            &format!("ground_crank{i}"),
            (&format!("crank{i}"), "p"),
            ("ground", &format!("A{i}")),
            "",
        ));
        joints.push(format!(
            r#"{{ "id": "crank_coupler{i}", "type": "ball", "i": {{ "part": "coupler{i}", "marker": "p" }}, "j": {{ "part": "crank{i}", "marker": "q" }} }}"#
        ));
        joints.push(format!(
            r#"{{ "id": "coupler_rocker{i}", "type": "ball", "i": {{ "part": "rocker{i}", "marker": "q" }}, "j": {{ "part": "coupler{i}", "marker": "q" }} }}"#
        ));
        joints.push(revolute(
            &format!("rocker_ground{i}"),
            (&format!("rocker{i}"), "p"),
            ("ground", &format!("D{i}")),
            "",
        ));
    }
    finish(s, &joints)
}

/// `m` planar four-bars (crank 30, rocker 80, ground 100); with `driven`, every
/// crank's revolute follows the parameter `crank` (degrees, 60 in the file).
pub fn four_bars(m: usize, driven: bool) -> String {
    let crank = 60.0f64;
    let rocker = 100.0f64;
    let b = [
        30.0 * crank.to_radians().cos(),
        30.0 * crank.to_radians().sin(),
    ];
    let c = [
        100.0 + 80.0 * rocker.to_radians().cos(),
        80.0 * rocker.to_radians().sin(),
    ];
    let len = ((c[0] - b[0]).powi(2) + (c[1] - b[1]).powi(2)).sqrt();
    let coupler_angle = (c[1] - b[1]).atan2(c[0] - b[0]).to_degrees();
    let mut s = header(if driven { r#""crank": 60"# } else { "" });
    s.push_str(r#"{ "id": "ground", "grounded": true, "markers": {"#);
    for i in 0..m {
        let (x, y) = grid(i, 150.0);
        if i > 0 {
            s.push(',');
        }
        write!(
            s,
            r#""A{i}": {{ "position": [{x}, {y}, 0] }}, "D{i}": {{ "position": [{}, {y}, 0] }}"#,
            x + 100.0
        )
        .ok();
    }
    s.push_str("} }");
    let mut joints = Vec::new();
    for i in 0..m {
        let (x, y) = grid(i, 150.0);
        let links = [
            ("crank", [x, y], crank, 30.0),
            ("coupler", [b[0] + x, b[1] + y], coupler_angle, len),
            ("rocker", [100.0 + x, y], rocker, 80.0),
        ];
        for (k, (name, at, angle, l)) in links.iter().enumerate() {
            s.push_str(",\n");
            s.push_str(&part(
                &format!("{name}{i}"),
                [at[0], at[1], 0.0],
                &rot_z(*angle),
                3 * i + k,
                2.0,
                5.0,
                &format!(r#""p": {{}}, "q": {{ "position": [{l}, 0, 0] }}"#),
            ));
        }
        let drive = if driven { r#", "angle": "crank""# } else { "" };
        joints.push(revolute(
            &format!("ground_crank{i}"),
            (&format!("crank{i}"), "p"),
            ("ground", &format!("A{i}")),
            drive,
        ));
        joints.push(revolute(
            &format!("crank_coupler{i}"),
            (&format!("coupler{i}"), "p"),
            (&format!("crank{i}"), "q"),
            "",
        ));
        joints.push(revolute(
            &format!("coupler_rocker{i}"),
            (&format!("rocker{i}"), "q"),
            (&format!("coupler{i}"), "q"),
            "",
        ));
        joints.push(revolute(
            &format!("rocker_ground{i}"),
            (&format!("rocker{i}"), "p"),
            ("ground", &format!("D{i}")),
            "",
        ));
    }
    finish(s, &joints)
}

/// A ladder of `cells` parallelogram cells (width 40, height 30) in the xy plane:
/// uprights `u0` (grounded) ... `u{cells}`, and per cell a bottom bar `b{k}` and a top
/// bar `t{k}` joining `u{k-1}` to `u{k}` by four revolutes about z.
pub fn ladder(cells: usize) -> String {
    let (w, h) = (40.0, 30.0);
    let upright = r#""a": {}, "b": { "position": [30, 0, 0] }"#;
    let bar = r#""p": {}, "q": { "position": [40, 0, 0] }"#;
    let mut s = header("");
    write!(
        s,
        r#"{{ "id": "u0", "grounded": true, "placement": {{ "rotation": {{ "axis": [0, 0, 1], "angle": 90 }} }}, "markers": {{ {upright} }} }}"#
    )
    .ok();
    let mut joints = Vec::new();
    for k in 1..=cells {
        let x0 = w * (k - 1) as f64;
        let key = 3 * k;
        s.push_str(",\n");
        s.push_str(&part(
            &format!("b{k}"),
            [x0, 0.0, 0.0],
            &rot_z(0.0),
            key,
            0.5,
            2.0,
            bar,
        ));
        s.push_str(",\n");
        s.push_str(&part(
            &format!("t{k}"),
            [x0, h, 0.0],
            &rot_z(0.0),
            key + 1,
            0.5,
            2.0,
            bar,
        ));
        s.push_str(",\n");
        s.push_str(&part(
            &format!("u{k}"),
            [x0 + w, 0.0, 0.0],
            &rot_z(90.0),
            key + 2,
            0.5,
            2.0,
            upright,
        ));
        let (prev, this) = (format!("u{}", k - 1), format!("u{k}"));
        let (bk, tk) = (format!("b{k}"), format!("t{k}"));
        joints.push(revolute(&format!("bp{k}"), (&bk, "p"), (&prev, "a"), ""));
        joints.push(revolute(&format!("bq{k}"), (&bk, "q"), (&this, "a"), ""));
        joints.push(revolute(&format!("tp{k}"), (&tk, "p"), (&prev, "b"), ""));
        joints.push(revolute(&format!("tq{k}"), (&tk, "q"), (&this, "b"), ""));
    }
    finish(s, &joints)
}

/// A disc cam whose closed profile is `n` points given as formulas of the parameters
/// `R` (40) and `h` (8): point `k` at angle `a = 360 k / n` degrees lies at radius
/// `R + h sin(a)^2`. The cam turns on a revolute about the frame's z axis, the follower
/// slides along y with its tip on the profile; it starts 3 units above its solved height
/// `R + h` (when `n` is a multiple of 4, the profile point at 90 degrees is a knot).
pub fn expression_cam(n: usize) -> String {
    let mut points = String::new();
    for k in 0..n {
        let a = format!("(360 * {k} / {n})");
        let r = format!("(R + h * sin{a}^2)");
        if k > 0 {
            points.push_str(", ");
        }
        let _ = write!(points, r#"["{r} * cos{a}", "{r} * sin{a}"]"#);
    }
    let down = r#"{ "quaternion": [0.7071067811865476, -0.7071067811865475, 0, 0] }"#;
    format!(
        r#"{{ "format": "tenon-assembly", "version": 1, "parameters": {{ "R": 40, "h": 8 }},
  "parts": [
    {{ "id": "frame", "grounded": true,
      "markers": {{ "axle": {{}}, "guide": {{ "rotation": {down} }} }} }},
    {{ "id": "cam", "markers": {{ "axle": {{}}, "profile": {{}} }} }},
    {{ "id": "follower", "placement": {{ "position": [0, 51, 0] }},
      "markers": {{ "tip": {{}}, "slide": {{ "rotation": {down} }} }} }}
  ],
  "joints": [
    {{ "id": "cam-axle", "type": "revolute", "i": {{ "part": "cam", "marker": "axle" }},
      "j": {{ "part": "frame", "marker": "axle" }} }},
    {{ "id": "guide", "type": "slider", "i": {{ "part": "follower", "marker": "slide" }},
      "j": {{ "part": "frame", "marker": "guide" }} }},
    {{ "id": "contact", "type": "cam", "i": {{ "part": "follower", "marker": "tip" }},
      "j": {{ "part": "cam", "marker": "profile" }}, "profile": {{ "points": [{points}] }} }}
  ] }}"#
    )
}

/// Revolute `r{k}` from `link{k}`'s marker `a` to the previous link's `b` (the ground's
/// `m` for the first): a straight chain's joints.
fn link_revolute(k: usize) -> String {
    let j = if k == 0 {
        ("ground".to_string(), "m")
    } else {
        (format!("link{}", k - 1), "b")
    };
    revolute(
        &format!("r{k}"),
        (&format!("link{k}"), "a"),
        (&j.0, j.1),
        "",
    )
}

/// A straight chain of `n` links (lengths 10, 20 and 40 in turn) laid along x from
/// (5000, 3000, 0), far from the origin as a plant layout is, every revolute moved by a
/// motion: joint `k` at `2 sin(360 t + 37 k)` degrees (all driven, the phases spread
/// so the chain wanders rather than coils: a kinematic run's benchmark).
pub fn moving_chain(n: usize) -> String {
    let mut s = header("");
    s.push_str(r#"{ "id": "ground", "grounded": true, "markers": { "m": { "position": [5000, 3000, 0] } } }"#);
    let mut joints = Vec::new();
    let mut motions = Vec::new();
    let mut x = 5000.0;
    for k in 0..n {
        let length = [10.0, 20.0, 40.0][k % 3];
        s.push_str(",\n");
        let _ = write!(
            s,
            r#"{{ "id": "link{k}", "placement": {{ "position": [{x}, 3000, 0] }}, "markers": {{ "a": {{}}, "b": {{ "position": [{length}, 0, 0] }} }} }}"#
        );
        x += length;
        joints.push(link_revolute(k));
        motions.push(format!(
            r#"{{ "joint": "r{k}", "angle": "2 * sin(360 * t + {})" }}"#,
            37 * k
        ));
    }
    let mut text = finish(s, &joints);
    text.pop();
    text.push_str(", \"motions\": [");
    text.push_str(&motions.join(",\n"));
    text.push_str("] }");
    text
}

/// The scale cases of issue 16, laid out the way users draw them (straight, from a
/// corner outward, in millimetres), every part started off its solved pose by 1 to 2
/// units and degrees (the sign and size vary part by part).
pub mod scale {
    use super::{finish, header, part, revolute, rot_z, wobble, Write};

    /// An offset of 1 to 2 (sign varying) for part `key`, coordinate `salt`.
    fn off(key: usize, salt: f64) -> f64 {
        let w = wobble(key, salt);
        w.signum() * (1.0 + w.abs())
    }

    /// A part placed at `at` turned `angle` degrees about z, then started off by
    /// [`off`] in x, y and its angle (times `scale`).
    fn placed(
        id: &str,
        at: [f64; 2],
        angle: f64,
        key: usize,
        scale: [f64; 2],
        markers: &str,
    ) -> String {
        let mut text = part(
            id,
            [
                at[0] + scale[0] * off(key, 1.0),
                at[1] + scale[0] * off(key, 2.0),
                0.0,
            ],
            &rot_z(angle + scale[1] * off(key, 3.0)),
            key,
            0.0,
            0.0,
            markers,
        );
        text.shrink_to_fit();
        text
    }

    /// A straight chain of `n` links of `length` along x from `origin`, revolutes about
    /// z, the first on the ground: coordinates reach `origin + n * length`.
    pub fn chain(n: usize, length: f64, origin: [f64; 2]) -> String {
        chain_of(n, &[length], origin, false)
    }

    /// A straight chain of mixed sizes from `origin`: 10 m frames, 0.1 mm pins and
    /// 100 mm links in turn (frame, pin, link, pin), revolutes about z. Each part starts
    /// 1 to 2 units off and turned so that its far marker is 1 to 2 units off as well
    /// (1 to 2 degrees for parts up to 57 units; a 10 m frame 2 degrees off would leave
    /// a 350 mm gap at its end, no longer a part dropped near its place).
    pub fn mixed(n: usize, origin: [f64; 2]) -> String {
        chain_of(n, &[10_000.0, 0.1, 100.0, 0.1], origin, true)
    }

    /// A straight chain whose link `k` has length `lengths[k % lengths.len()]`; with
    /// `turn_by_size`, long links start turned by at most 2 units over their length.
    pub fn chain_of(n: usize, lengths: &[f64], origin: [f64; 2], turn_by_size: bool) -> String {
        let mut s = header("");
        let _ = write!(
            s,
            r#"{{ "id": "ground", "grounded": true, "markers": {{ "m": {{ "position": [{}, {}, 0] }} }} }}"#,
            origin[0], origin[1]
        );
        let mut joints = Vec::with_capacity(n);
        let mut x = origin[0];
        for k in 0..n {
            let length = lengths[k % lengths.len()];
            let markers = format!(r#""a": {{}}, "b": {{ "position": [{length}, 0, 0] }}"#);
            let turn = if turn_by_size {
                (1.0f64.to_degrees() / length).min(1.0)
            } else {
                1.0
            };
            s.push_str(",\n");
            s.push_str(&placed(
                &format!("link{k}"),
                [x, origin[1]],
                0.0,
                k,
                [1.0, turn],
                &markers,
            ));
            x += length;
            joints.push(super::link_revolute(k));
        }
        finish(s, &joints)
    }

    /// A straight ladder of `cells` square cells of side `side` along x from `origin`:
    /// uprights `u0` (grounded) to `u{cells}`, bottom and top bars `b{k}`, `t{k}`, four
    /// revolutes about z per cell (two redundant equations per cell).
    pub fn ladder(cells: usize, side: f64, origin: [f64; 2]) -> String {
        let upright = format!(r#""a": {{}}, "b": {{ "position": [{side}, 0, 0] }}"#);
        let mut s = header("");
        let _ = write!(
            s,
            r#"{{ "id": "u0", "grounded": true, "placement": {{ "position": [{}, {}, 0], "rotation": {{ "axis": [0, 0, 1], "angle": 90 }} }}, "markers": {{ {upright} }} }}"#,
            origin[0], origin[1]
        );
        let mut joints = Vec::with_capacity(4 * cells);
        for k in 1..=cells {
            let x0 = origin[0] + side * (k - 1) as f64;
            let key = 3 * k;
            for (name, at, angle, key) in [
                (format!("b{k}"), [x0, origin[1]], 0.0, key),
                (format!("t{k}"), [x0, origin[1] + side], 0.0, key + 1),
                (format!("u{k}"), [x0 + side, origin[1]], 90.0, key + 2),
            ] {
                s.push_str(",\n");
                s.push_str(&placed(&name, at, angle, key, [1.0, 1.0], &upright));
            }
            let (prev, this) = (format!("u{}", k - 1), format!("u{k}"));
            let (bk, tk) = (format!("b{k}"), format!("t{k}"));
            joints.push(revolute(&format!("bp{k}"), (&bk, "a"), (&prev, "a"), ""));
            joints.push(revolute(&format!("bq{k}"), (&bk, "b"), (&this, "a"), ""));
            joints.push(revolute(&format!("tp{k}"), (&tk, "a"), (&prev, "b"), ""));
            joints.push(revolute(&format!("tq{k}"), (&tk, "b"), (&this, "b"), ""));
        }
        finish(s, &joints)
    }

    /// `m` spatial RSSR four-bars (crank 30 about z, rocker 80 about x, coupler on two
    /// balls) in rows of 50 at a 200 by 200 pitch, the first at `origin`: `super::rssr`'s
    /// mechanism laid out in a plant's grid, started off by [`off`].
    pub fn rssr(m: usize, origin: [f64; 2]) -> String {
        super::rssr_at(
            m,
            |i| {
                (
                    origin[0] + 200.0 * (i % 50) as f64,
                    origin[1] + 200.0 * (i / 50) as f64,
                )
            },
            (2.0, 2.0),
        )
    }
}
