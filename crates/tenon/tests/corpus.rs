//! The OndselSolver corpus (../shared/external/ondsel-asmt): every file solves from its
//! loaded pose, except the four whose joints cannot hold together, and for those the
//! diagnosis names conflicting joints.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tenon::{Mechanism, Status};

/// Files whose joints conflict (measured with `tenon check`; see the solve issue's note).
const CONFLICTING: [&str; 4] = [
    "Schmidt_Coupling_Ass_1-1.asmt",
    "Schmidt_Coupling_Ass_1-2.asmt",
    "constvel.asmt",
    "dxfmotion.asmt",
];

/// The corpus's `.asmt` files, sorted; `None` (said past the harness's capture, under
/// `label`) in a bare clone, where `../shared/external` is not beside the project.
fn corpus_paths(label: &str) -> Option<Vec<std::path::PathBuf>> {
    use std::io::Write;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/external/ondsel-asmt");
    if !dir.is_dir() {
        let _ = writeln!(
            std::io::stderr(),
            "{label}: 0 external corpus files covered (../shared/external is not beside the project)"
        );
        return None;
    }
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "asmt"))
        .collect();
    paths.sort();
    Some(paths)
}

#[test]
fn every_corpus_file_without_conflicts_solves_from_its_loaded_pose() {
    use std::io::Write;
    let Some(paths) = corpus_paths("corpus") else {
        return;
    };
    assert_eq!(paths.len(), 37);
    let _ = writeln!(
        std::io::stderr(),
        "corpus: {} external corpus files covered",
        paths.len()
    );
    let mut solved = 0;
    for path in &paths {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut m = Mechanism::open(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let converged = m.solve().unwrap().converged;
        if CONFLICTING.contains(&name.as_str()) {
            assert!(!converged, "{name} solved, but it is listed as conflicting");
            let d = m.diagnose().unwrap();
            assert!(
                d.clusters
                    .iter()
                    .any(|c| c.status == Status::Conflicting && !c.conflicts.is_empty()),
                "{name}: no conflicting joints named"
            );
        } else {
            assert!(converged, "{name}: not solved");
            solved += 1;
        }
    }
    assert_eq!(solved, 33);
}

/// Corpus files whose kinematic runs match OndselSolver's saved frames to 1e-6 (model
/// units) in every part's position, over the file's own times.
const FRAMES_MATCH: [&str; 5] = [
    "Gears.asmt",
    "engine1.asmt",
    "fourbar.asmt",
    "piston.asmt",
    "rackscrew.asmt",
];

/// Every corpus file with motions and a TimeSeries runs over the file's own times
/// (steps and frames as saved); positions are compared with OndselSolver's frames.
/// Five match to 1e-6; the two whose joints conflict stop at their first frame; two cam
/// files differ (camfollower by up to 2.5e-3, 00camrocker stops at t = 0.16: issue 13
/// open) and are reported, not held.
#[test]
fn kinematic_runs_match_the_saved_frames_of_the_corpus() {
    use std::io::Write;
    let mut err = std::io::stderr();
    let Some(paths) = corpus_paths("corpus frames") else {
        return;
    };
    let mut covered = 0;
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(series) = tenon::read_asmt_time_series(&text).unwrap() else {
            continue;
        };
        let mut m = Mechanism::from_asmt(&text, Some(&name)).unwrap();
        if m.model().motions().is_empty() || series.times.len() < 2 {
            continue;
        }
        covered += 1;
        let times = &series.times;
        let settings =
            tenon::RunSettings::new(times[0], times[times.len() - 1], times[1] - times[0], None)
                .unwrap();
        let began = std::time::Instant::now();
        let run = m.kinematics(settings).unwrap();
        let took = began.elapsed();
        let mut worst = 0.0f64;
        for (k, f) in run.frames.iter().enumerate() {
            for p in &f.parts {
                let id = m.part_id(p.part).unwrap();
                let Some(pose) = series
                    .parts
                    .iter()
                    .find(|(n, _)| n == id)
                    .and_then(|(_, poses)| poses.get(k + 1))
                else {
                    continue;
                };
                let d = (0..3)
                    .map(|c| (p.position[c] - pose.position[c]).powi(2))
                    .sum::<f64>()
                    .sqrt();
                worst = worst.max(d);
            }
        }
        let _ = writeln!(
            err,
            "corpus frames: {name}: {} of {} frames, worst position difference {worst:.1e}, {:.1} ms",
            run.frames.len(),
            times.len(),
            took.as_secs_f64() * 1e3
        );
        if FRAMES_MATCH.contains(&name.as_str()) {
            assert!(run.completed, "{name}: {:?}", run.events);
            assert_eq!(run.frames.len(), times.len(), "{name}");
            assert!(worst < 1e-6, "{name}: {worst:.1e}");
        } else if CONFLICTING.contains(&name.as_str()) {
            assert!(!run.completed && run.frames.is_empty(), "{name}");
        }
    }
    let _ = writeln!(
        err,
        "corpus frames: {covered} external corpus files covered"
    );
    assert_eq!(covered, 9);
}
