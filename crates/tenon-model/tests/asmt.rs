//! The OndselSolver corpus in ../shared/external/ondsel-asmt: every file loads, with part,
//! joint and motion counts checked against an independent count of the file's lines.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use tenon_model::{read_asmt, read_asmt_time_series, read_json, write_json, Place};

/// Counts by scanning lines: parts (plus the assembly's own frame), joints, and driving
/// motions (rotational and translational).
fn counts(text: &str) -> (usize, usize, usize) {
    let (mut parts, mut joints, mut motions) = (1, 0, 0);
    let mut section = "";
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.starts_with("TimeSeries") {
            break;
        }
        let depth = line.len() - line.trim_start_matches('\t').len();
        let item = line.trim();
        match depth {
            1 | 2
                if matches!(
                    item,
                    "Parts" | "Joints" | "Motions" | "Limits" | "GeneralConstraintSets"
                ) =>
            {
                section = item
            }
            1 => section = "",
            2 if section == "Parts" && item == "Part" => parts += 1,
            3 if section == "Joints" => joints += 1,
            3 if section == "Motions"
                && matches!(item, "RotationalMotion" | "TranslationalMotion") =>
            {
                motions += 1
            }
            // A GeneralMotion becomes a fixed joint to a moving frame.
            3 if section == "Motions" && item == "GeneralMotion" => joints += 1,
            _ => {}
        }
    }
    (parts, joints, motions)
}

#[test]
fn every_corpus_file_loads_with_the_counts_of_the_file() {
    let files = common::corpus("every_corpus_file_loads_with_the_counts_of_the_file");
    if files.is_empty() {
        return;
    }
    assert_eq!(files.len(), 37, "the corpus has 37 files");
    let mut loaded = 0;
    for (name, text) in &files {
        let a = read_asmt(text, Some(name)).unwrap_or_else(|e| panic!("{e}"));
        let (parts, joints, motions) = counts(text);
        // Joints with both markers on one part are recorded under extra, not made joints.
        let within_one_part = a
            .extra()
            .map_or(0, |e| e.to_json_text().matches("\"kind\":").count());
        let expected_within = usize::from(name == "mateproblembobcat.asmt");
        assert_eq!(
            within_one_part, expected_within,
            "{name}: joints within one part"
        );
        assert_eq!(a.part_count(), parts, "{name}: parts");
        assert_eq!(a.joint_count(), joints - within_one_part, "{name}: joints");
        assert_eq!(a.motions().len(), motions, "{name}: motions");
        // Converting to JSON v1 and reading back keeps the meaning.
        let json = write_json(&a);
        let b = read_json(&json, Some(name)).unwrap_or_else(|e| panic!("{name} as JSON: {e}"));
        assert_eq!(write_json(&b), json, "{name}: JSON round trip");
        loaded += 1;
    }
    assert_eq!(loaded, 37);
}

#[test]
fn crlf_and_lf_load_alike() {
    let mut files = vec![("crank-slider.asmt".to_string(), common::own_asmt())];
    files.extend(common::corpus("crlf_and_lf_load_alike").into_iter().take(6));
    for (name, text) in &files {
        let lf = text.replace("\r\n", "\n");
        let crlf = lf.replace('\n', "\r\n");
        match (read_asmt(&lf, None), read_asmt(&crlf, None)) {
            (Ok(a), Ok(b)) => assert_eq!(write_json(&a), write_json(&b), "{name}"),
            (Err(a), Err(b)) => assert_eq!(a, b, "{name}"),
            _ => panic!("{name}: LF and CRLF disagree"),
        }
    }
}

#[test]
fn time_series_hold_a_pose_per_frame() {
    let (mut with_series, mut with_frames) = (0, 0);
    let files = common::corpus("time_series_hold_a_pose_per_frame");
    if files.is_empty() {
        return;
    }
    for (name, text) in files {
        let Some(series) = read_asmt_time_series(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
        else {
            continue;
        };
        with_series += 1;
        if !series.times.is_empty() {
            with_frames += 1;
        }
        assert!(!series.parts.is_empty(), "{name}");
        for (part, poses) in &series.parts {
            // The input column plus one pose per output frame.
            assert_eq!(poses.len(), series.times.len() + 1, "{name}: {part}");
        }
    }
    // ../shared/external/README.md says 27; the corpus has 21 such blocks, two of them
    // with the input column only.
    assert_eq!(with_series, 21, "files with a TimeSeries block");
    assert_eq!(with_frames, 19, "files whose TimeSeries has output frames");
}

#[test]
fn a_crank_slider_maps_joints_motion_and_gravity() {
    let a = read_asmt(&common::own_asmt(), None).unwrap();
    let kinds: Vec<&str> = a.joints().map(|(_, j)| j.joint_type.name()).collect();
    assert_eq!(kinds, ["revolute", "revolute", "revolute", "slider"]);
    let parts: Vec<&str> = a.parts().map(|(_, p)| p.id.as_str()).collect();
    assert_eq!(parts, ["Assembly1", "Part1", "Part2", "Part3"]);
    let crank = a.part(a.part_by_id("Part1").unwrap()).unwrap();
    let mass = crank.mass.as_ref().unwrap();
    assert_eq!(mass.mass, tenon_model::Scalar::Number(2.0));
    assert_eq!(
        a.simulation().unwrap().end,
        tenon_model::Scalar::Number(1.0)
    );
    let motion = &a.motions()[0];
    // OndselSolver turns marker J from I; the spec turns i from j: the sign flips.
    assert_eq!(
        motion.value,
        tenon_model::Scalar::Expr("-(2.0*pi*t)".into())
    );
    assert_eq!(a.units().angle, tenon_model::AngleUnit::Rad);
    let g = a.forces().gravity.clone().unwrap();
    assert_eq!(g[1], tenon_model::Scalar::Number(-9.81));
}

/// Malformed .asmt texts: each error names the line.
#[test]
fn malformed_asmt_names_the_line() {
    let own = common::own_asmt();
    let line_of = |needle: &str| own.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let cases: Vec<(String, usize, &str)> = vec![
        ("hello".into(), 1, "no 'Assembly' item"),
        (
            own.replacen("\t\tPart\n", "\t\tPort\n", 1),
            line_of("\t\tPart"),
            "'Port' in 'Parts' is not understood",
        ),
        (
            own.replacen("RevoluteJoint", "HingeJoint", 1),
            line_of("RevoluteJoint"),
            "'HingeJoint' is not a joint kind",
        ),
        (
            own.replacen("/Assembly1/Part1/Marker1", "/Assembly1/Part9/Marker1", 1),
            line_of("/Assembly1/Part1/Marker1"),
            "no part 'Part9'",
        ),
        (
            own.replacen("/Assembly1/Part1/Marker1", "/Assembly1/Part1/Marker7", 1),
            line_of("/Assembly1/Part1/Marker1"),
            "part 'Part1' has no marker 'Marker7'",
        ),
        (
            own.replacen("\t\t\t\t\t2.0d*pi*time", "\t\t\t\t\t2.0d*pi*", 1),
            line_of("\t\t\t\t\t2.0d*pi*time"),
            "'RotationZ' formula: expected a number, a name or '(', found the end (character 9: '2.0d*pi*')",
        ),
        (
            own.replacen("\t\t\t\t\t2.0d*pi*time", "\t\t\t\t\t2.0d*dpi*time", 1),
            line_of("\t\t\t\t\t2.0d*pi*time"),
            "'RotationZ' formula: 'dpi' is not a name OndselSolver's formulas know (time, pi, abs, asin, arcsin, arctan, sin, cos, rampstep, piecewise) (character 6: '2.0d*dpi*time')",
        ),
        // A formula that reads but has no finite value at t = 0: named at its own line
        // (the assembly checks the value, the reader names the place).
        (
            own.replacen("\t\t\t\t\t2.0d*pi*time", "\t\t\t\t\t2.0d*pi/time", 1),
            line_of("\t\t\t\t\t2.0d*pi*time"),
            "'RotationZ' formula: not a finite number",
        ),
        (
            own.replacen("/Assembly1/Joint1\n", "/Assembly1/Joint9\n", 1),
            line_of("/Assembly1/Joint1"),
            "no joint '/Assembly1/Joint9'",
        ),
        (
            own.replacen("\tParts\n", "\tParts\n\t\t\t\tStray\n", 1),
            line_of("\tParts") + 1,
            "indented 3 tabs deeper",
        ),
        (
            own.replacen(
                "\tConstantGravity\n\t\t0.0 \t-9.81 \t0.0 ",
                "\tConstantGravity\n\t\t0.0 \t-9.81 ",
                1,
            ),
            line_of("ConstantGravity") + 1,
            "expected 3 numbers, found 2",
        ),
        (
            own.replacen(
                "\tConstantGravity\n\t\t0.0 \t-9.81 \t0.0 ",
                "\tConstantGravity\n\t\t0.0 \t-9.81 \t0.0 \t 1.0",
                1,
            ),
            line_of("ConstantGravity") + 1,
            "expected 3 numbers, found 4",
        ),
        (
            own.replacen(
                "\tConstantGravity\n\t\t0.0 \t-9.81 \t0.0 ",
                "\tConstantGravity\n\t\t0.0 \t-9.8x1 \t0.0 ",
                1,
            ),
            line_of("ConstantGravity") + 1,
            "'-9.8x1' is not a number",
        ),
        (
            own.replacen("\t\tJoints\n", "\t\tJoints\n\t\t\tBogus\n", 1),
            line_of("\t\tJoints") + 1,
            "'Bogus' is not a joint kind",
        ),
        (
            own.replacen("\tKinematicIJs\n", "\tKinematicIJs\n\t\tSomething\n", 1),
            line_of("KinematicIJs") + 1,
            "'Something' under 'KinematicIJs' is not supported yet",
        ),
        (
            own.replacen(
                "\tSimulationParameters\n",
                "\tSimulationParameters\n\t\tspeed\n\t\t\t2\n",
                1,
            ),
            line_of("SimulationParameters") + 1,
            "'speed' in 'SimulationParameters' is not understood",
        ),
    ];
    for (k, (text, line, message)) in cases.iter().enumerate() {
        let err = read_asmt(text, Some("bad.asmt")).expect_err(message);
        assert!(
            err.message().contains(message),
            "case {k}: {err}, want {message}"
        );
        assert_eq!(
            err.place(),
            &Place::Line {
                line: *line,
                column: None
            },
            "case {k}: {err}"
        );
        assert!(err.to_string().starts_with("bad.asmt: line "), "{err}");
    }
}

fn camfollower(test: &str) -> Option<String> {
    common::corpus_file(test, "camfollower.asmt")
}

#[test]
fn a_curve_contact_reads_both_curves() {
    let Some(text) = camfollower("a_curve_contact_reads_both_curves") else {
        return;
    };
    let a = read_asmt(&text, None).unwrap();
    let (_, contact) = a.joints().find(|(_, j)| j.id == "Joint3").unwrap();
    assert_eq!(contact.joint_type, tenon_model::JointType::CurveContact);
    // The ellipse (17 data points, the last closing) and the beam (35).
    let count = |p: &Option<tenon_model::CamProfile>| match p {
        Some(tenon_model::CamProfile::Points(p)) => p.len(),
        other => panic!("{other:?}"),
    };
    assert_eq!(count(&contact.profile_i), 16);
    assert_eq!(count(&contact.profile), 34);
    let extra = contact.extra.as_ref().unwrap().to_json_text();
    for needle in [
        "\"coeffRestitution\":\"0.5\"",
        "\"Order\":5",
        "-0.6582992559175",
    ] {
        assert!(extra.contains(needle), "{extra}");
    }
    // The curve marker sits at the curve's frame on its part.
    let part = a.part(contact.i.part).unwrap();
    assert!(part.marker("Marker2").is_some());
}

/// Malformed curves: each error names the line.
#[test]
fn malformed_curves_name_the_line() {
    let Some(text) = camfollower("malformed_curves_name_the_line") else {
        return;
    };
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let first = |prefix: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap()
            .to_string()
    };
    let z_row = first("z\t");
    let x_row = first("x\t");
    let cases: Vec<(String, usize, &str)> = vec![
        (
            text.replacen(&z_row, &z_row.replacen("0.0 ", "0.5 ", 1), 1),
            line_of(&z_row),
            "data point 1 is off its curve frame's xy plane",
        ),
        (
            text.replacen(&x_row, &x_row.replacen("1.0 ", "1.1 ", 1), 1),
            line_of("GeneralSpline"),
            "the curve does not close",
        ),
        (
            text.replacen(
                "\t\t\t\t\t\tOrder\n\t\t\t\t\t\t\t5",
                "\t\t\t\t\t\tOrder\n\t\t\t\t\t\t\tfive",
                1,
            ),
            line_of("\t\t\t\t\t\tOrder") + 1,
            "a spline order is a whole number",
        ),
        (
            text.replacen(&x_row, &format!("{x_row}\t0.5"), 1),
            line_of(&x_row),
            "data row 'x' has 18 values, row 's' has 17",
        ),
        (
            text.replacen("\t\t\t\t\t\tOrder\n", "\t\t\t\t\t\tDegree\n", 1),
            line_of("\t\t\t\t\t\tOrder"),
            "'Degree' in 'GeneralSpline' is not understood",
        ),
        (
            text.replacen(
                "\t\t\t\tMarkerI\n\t\t\t\t\t/Assembly1/Part1/Marker2",
                "\t\t\t\tMarkerI\n\t\t\t\t\t/Assembly1/Part1/Marker1",
                1,
            ),
            line_of("/Assembly1/Part1/Marker2"),
            "'Marker1' of part 'Part1' is not a curve marker",
        ),
    ];
    for (k, (bad, line, message)) in cases.iter().enumerate() {
        assert_ne!(bad, &text, "case {k} changed nothing");
        let err = read_asmt(bad, Some("bad.asmt")).expect_err(message);
        assert!(
            err.message().contains(message),
            "case {k}: {err}, want {message}"
        );
        assert_eq!(
            err.place(),
            &Place::Line {
                line: *line,
                column: None
            },
            "case {k}: {err}"
        );
    }
}

thread_local! {
    /// A few corpus files to mutate besides the project's own, when the corpus is there.
    static CORPUS_SAMPLES: Vec<String> = common::corpus("random_and_mutated_asmt_never_panic")
        .into_iter()
        .filter(|(n, _)| ["piston.asmt", "rackscrew.asmt", "limits.asmt"].contains(&n.as_str()))
        .map(|(_, t)| t)
        .collect();
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, ..Default::default() })]

    /// Random and mutated .asmt texts: no panic; what reads converts to JSON that reads.
    #[test]
    fn random_and_mutated_asmt_never_panic(
        noise in proptest::prelude::any::<String>(),
        cuts in proptest::collection::vec((proptest::prelude::any::<usize>(), proptest::prelude::any::<usize>(), proptest::sample::select(b"\t\n\r /0-9.dAPartJoint".to_vec())), 1..8),
    ) {
        let _ = read_asmt(&noise, None);
        let _ = read_asmt_time_series(&noise);
        let mut texts = vec![common::own_asmt()];
        texts.extend(
            CORPUS_SAMPLES
                .with(|c| c.clone())
                .into_iter(),
        );
        for text in texts {
            let broken = common::mutate(&text, &cuts);
            let _ = read_asmt_time_series(&broken);
            if let Ok(a) = read_asmt(&broken, None) {
                proptest::prop_assert!(read_json(&write_json(&a), None).is_ok());
            }
        }
    }
}

/// Every `.asmt` file cut at a line end (the project's own, and the corpus's when it is
/// there) is refused, naming a line: a file that ends early never loads as a smaller
/// assembly. Garbage after `TimeSeries` is refused too.
#[test]
fn a_file_that_ends_early_is_refused_naming_the_line() {
    let mut files = vec![("crank-slider.asmt".to_string(), common::own_asmt())];
    files.extend(common::corpus(
        "a_file_that_ends_early_is_refused_naming_the_line",
    ));
    let mut cuts = 0;
    for (name, text) in &files {
        let text = text.replace("\r\n", "\n");
        assert!(read_asmt(&text, None).is_ok(), "{name} whole");
        let whole = text.trim_end();
        for (at, _) in text.match_indices('\n') {
            let cut = &text[..at + 1];
            // Nothing cut, or only another solver's results (the assembly is whole).
            if cut.trim_end() == whole || text[at + 1..].starts_with("TimeSeries") {
                continue;
            }
            cuts += 1;
            let err = read_asmt(cut, Some("cut.asmt"))
                .err()
                .unwrap_or_else(|| panic!("{name} cut after byte {at} loaded"));
            assert!(
                matches!(err.place(), Place::Line { .. }),
                "{name} cut after byte {at}: {err}"
            );
        }
        if text.contains("\nTimeSeries") {
            let garbage = format!("{whole}\nthis is not a row\n");
            let err = read_asmt(&garbage, None).unwrap_err();
            assert!(err.message().contains("TimeSeries"), "{name}: {err}");
        }
    }
    assert!(cuts >= 150, "{cuts} cuts");
}
