//! Generated assemblies (see `common/generate.rs`) of sizes that reach the sparse step:
//! they solve from a perturbed start, the degrees of freedom are counted where the dense
//! step reveals them, and the sparse step lands where the dense one does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/generate.rs"]
mod generate;

use tenon::{Mechanism, SolveOptions, SolveOrder};

fn solved(text: &str, options: SolveOptions) -> Mechanism {
    let mut m = Mechanism::from_json(text, None).unwrap();
    m.set_options(options);
    let report = m.solve().unwrap();
    assert!(
        report.converged,
        "not converged: residual {}",
        report.max_residual
    );
    assert!(report.max_residual <= 1e-10);
    assert!(report.flipped.is_empty());
    m
}

fn dofs(m: &Mechanism) -> Vec<Option<usize>> {
    m.report().unwrap().clusters.iter().map(|c| c.dof).collect()
}

fn dense() -> SolveOptions {
    SolveOptions {
        dense_columns: usize::MAX,
        ..SolveOptions::default()
    }
}

fn sparse() -> SolveOptions {
    SolveOptions {
        dense_columns: 0,
        ..SolveOptions::default()
    }
}

#[test]
fn small_generated_assemblies_have_their_degrees_of_freedom() {
    // Ladder: one cluster, one sway per cell.
    let m = solved(&generate::ladder(4), dense());
    assert_eq!(dofs(&m), vec![Some(4)]);
    // RSSR: two per four-bar (one the coupler's idle spin), one cluster each.
    let m = solved(&generate::rssr(3), dense());
    assert_eq!(dofs(&m), vec![Some(2); 3]);
    // Planar four-bars of revolutes: one each.
    let m = solved(&generate::four_bars(3, false), dense());
    assert_eq!(dofs(&m), vec![Some(1); 3]);
    // Chain: one per link.
    let m = solved(&generate::chain(5), dense());
    assert_eq!(dofs(&m), vec![Some(5)]);
}

fn max_distance(a: &Mechanism, b: &Mechanism, parts: &[String]) -> f64 {
    parts
        .iter()
        .map(|p| {
            let (x, y) = (a.placement(p).unwrap(), b.placement(p).unwrap());
            let d = (0..3)
                .map(|k| (x.position[k] - y.position[k]).powi(2))
                .sum::<f64>()
                .sqrt();
            // Quaternion distance, sign-insensitive, scaled by the part size (40).
            let dot: f64 = (0..4).map(|k| x.quaternion[k] * y.quaternion[k]).sum();
            d.max(40.0 * (1.0 - dot.abs()).max(0.0).sqrt())
        })
        .fold(0.0, f64::max)
}

#[test]
fn the_sparse_step_lands_where_the_dense_one_does() {
    for (text, parts) in [
        (
            generate::chain(8),
            (0..8).map(|k| format!("link{k}")).collect(),
        ),
        (
            generate::ladder(6),
            (1..=6)
                .flat_map(|k| [format!("b{k}"), format!("t{k}"), format!("u{k}")])
                .collect::<Vec<_>>(),
        ),
    ] {
        let a = solved(&text, dense());
        let b = solved(&text, sparse());
        // Small enough for the rank to be found either way.
        assert_eq!(dofs(&a), dofs(&b));
        assert!(dofs(&a)[0].is_some());
        let d = max_distance(&a, &b, &parts);
        assert!(d < 1e-6, "dense and sparse solutions differ by {d}");
    }
}

#[test]
fn large_generated_assemblies_solve_with_the_sparse_step() {
    // 150 and 60 parts: above the dense threshold by default.
    let m = solved(&generate::ladder(50), SolveOptions::default());
    assert_eq!(m.report().unwrap().clusters.len(), 1);
    assert_eq!(m.report().unwrap().clusters[0].dof, None);
    let m = solved(
        &generate::ladder(50),
        SolveOptions {
            rank_columns: usize::MAX,
            ..SolveOptions::default()
        },
    );
    // Its rank comes from the sparse elimination the diagnosis uses: one degree of
    // freedom per cell (a parallelogram's shear), counted by the solve too.
    assert_eq!(m.report().unwrap().clusters[0].dof, Some(50));
    assert_eq!(
        m.report().unwrap().clusters[0].status,
        tenon::Status::OverConstrained
    );
    let m = solved(&generate::chain(60), SolveOptions::default());
    assert_eq!(m.report().unwrap().clusters[0].parts.len(), 60);
}

#[test]
fn many_clusters_solve_alike_on_any_thread_count() {
    let text = generate::rssr(40);
    let a = solved(&text, SolveOptions::default());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let b = pool.install(|| solved(&text, SolveOptions::default()));
    for i in 0..40 {
        for p in ["crank", "coupler", "rocker"] {
            let id = format!("{p}{i}");
            assert_eq!(a.placement(&id), b.placement(&id), "{id}");
        }
    }
    assert_eq!(a.report(), b.report());
}

#[test]
fn a_cluster_beyond_the_dense_analysis_is_analysed_sparse() {
    // 250 cells, 750 parts, 4,500 tangent columns: beyond the dense diagnosis.
    let mut m = Mechanism::from_json(&generate::ladder(250), None).unwrap();
    let d = m.diagnose().unwrap();
    let c = &d.clusters[0];
    // One sway per cell; two equations per cell repeat, one joint's worth each.
    assert_eq!(c.status, tenon::Status::OverConstrained);
    assert_eq!(c.dof, Some(250));
    assert_eq!(c.redundant.len(), 250);
    assert!(c.conflicts.is_empty());
    assert!(c.free_motions.is_empty());
    // 20 equations and 18 unknowns per cell.
    assert_eq!(c.structure.excess_equations, 500);
}

/// The sparse analysis (forced on small assemblies) finds what the dense one finds:
/// the same DOF, redundant joints and conflicts.
#[test]
fn sparse_and_dense_diagnoses_agree() {
    let sparse = SolveOptions {
        diagnose_columns: 0,
        ..SolveOptions::default()
    };
    let texts = [
        generate::ladder(6),
        generate::rssr(3),
        generate::four_bars(3, false),
        generate::chain(7),
        generate::driven_chain(5),
    ];
    for (k, text) in texts.iter().enumerate() {
        let mut dense_m = Mechanism::from_json(text, None).unwrap();
        let dense = dense_m.diagnose().unwrap();
        let mut sparse_m = Mechanism::from_json(text, None).unwrap();
        sparse_m.set_options(sparse);
        let found = sparse_m.diagnose().unwrap();
        for (d, s) in dense.clusters.iter().zip(&found.clusters) {
            assert_eq!(d.dof, s.dof, "case {k}");
            assert_eq!(d.status, s.status, "case {k}");
            assert_eq!(d.redundant, s.redundant, "case {k}");
            let dense_sets: Vec<_> = d.conflicts.iter().map(|c| &c.joints).collect();
            let sparse_sets: Vec<_> = s.conflicts.iter().map(|c| &c.joints).collect();
            assert_eq!(dense_sets, sparse_sets, "case {k}");
        }
    }
}

/// A driven chain is square and block-triangular: solved in stages (link blocks in
/// order) it lands where the whole solve does, and it is exactly determined.
#[test]
fn block_triangular_stages_land_where_the_whole_solve_does() {
    for n in [6, 60] {
        let text = generate::driven_chain(n);
        let staged = solved(&text, SolveOptions::default());
        let whole = solved(
            &text,
            SolveOptions {
                order: SolveOrder::Whole,
                ..SolveOptions::default()
            },
        );
        let report = staged.report().unwrap();
        assert_eq!(report.clusters.len(), 1);
        let cluster = &report.clusters[0];
        assert!(cluster.stages > 1, "n = {n}: {} stage(s)", cluster.stages);
        assert_eq!(whole.report().unwrap().clusters[0].stages, 1);
        if n <= 20 {
            assert_eq!(cluster.dof, Some(0));
        }
        let parts: Vec<String> = (0..n).map(|k| format!("link{k}")).collect();
        // Both stop within 1e-10 per equation; along a chain 10n long, angle errors of
        // that size add up to about n * 1e-10 * 10n at the tip.
        let d = max_distance(&staged, &whole, &parts);
        let bound = 1e-9 * (n * n) as f64;
        assert!(d < bound, "n = {n}: staged and whole differ by {d}");
    }
}

/// A loop that cannot close inside a cluster too large for the dense analysis: one cell
/// of a 250-cell ladder has its last revolute 1 unit off along its axis. The analysis
/// reads the pose that concentrates the error (the other loops hold there), and names
/// the four joints of that cell and the size.
#[test]
fn a_conflict_in_a_large_cluster_is_traced_to_its_loop() {
    let text = generate::ladder(250).replace(
        r#"{ "id": "tq100", "type": "revolute", "i": { "part": "t100", "marker": "q" }"#,
        r#"{ "id": "tq100", "type": "revolute", "i": { "part": "t100", "position": [40, 0, 1] }"#,
    );
    assert!(
        text.contains("[40, 0, 1]"),
        "the generator's joint text changed"
    );
    let mut m = Mechanism::from_json(&text, None).unwrap();
    let d = m.diagnose().unwrap();
    let c = &d.clusters[0];
    assert_eq!(c.status, tenon::Status::Conflicting);
    let summary: Vec<(Vec<&str>, f64)> = c
        .conflicts
        .iter()
        .map(|k| {
            let ids = k.joints.iter().map(|j| m.joint_id(*j).unwrap()).collect();
            (ids, k.violation)
        })
        .collect();
    assert_eq!(c.conflicts.len(), 1, "{summary:?}");
    assert_eq!(summary[0].0, ["bp100", "bq100", "tp100", "tq100"]);
    let v = summary[0].1;
    assert!((v - 1.0).abs() < 1e-6, "violation {v}");
    // The other cells' loops hold there: they repeat equations but conflict nowhere.
    assert!(c.redundant.len() >= 100, "{} redundant", c.redundant.len());
    for k in &c.conflicts {
        assert!(k.joints.iter().all(|j| !c.redundant.contains(j)));
    }
}

/// A small driven chain (36 tangent columns) is solved in stages on rows of its cluster's
/// tape the first time, and on stage tapes of their own from the second solve on: both
/// land where the whole solve does.
#[test]
fn small_clusters_stages_hold_on_the_cluster_tape_and_on_their_own() {
    let n = 6;
    let text = generate::driven_chain(n);
    let whole = solved(
        &text,
        SolveOptions {
            order: SolveOrder::Whole,
            ..SolveOptions::default()
        },
    );
    let mut staged = solved(&text, SolveOptions::default());
    let parts: Vec<String> = (0..n).map(|k| format!("link{k}")).collect();
    // As above: 1e-10 per equation, added up along the chain.
    let bound = 1e-9 * (n * n) as f64;
    assert!(max_distance(&staged, &whole, &parts) <= bound);
    assert!(staged.report().unwrap().clusters[0].stages > 1);
    // Knocked off its place, the tip comes back on the stages' own tapes.
    for round in 0..3 {
        let tip = format!("link{}", n - 1);
        let mut pose = staged.placement(&tip).unwrap();
        pose.position[0] += 1.5;
        pose.position[2] -= 0.5;
        staged.set_placement(&tip, &pose).unwrap();
        let report = staged.solve().unwrap();
        assert!(report.converged, "round {round}");
        assert!(report.clusters[0].stages > 1, "round {round}");
        let d = max_distance(&staged, &whole, &parts);
        assert!(d <= bound, "round {round}: {d}");
    }
}

/// A long coiled ladder (3,333 cells, 10,000 parts, one cluster) converges in a few
/// Newton steps. Its stiff chords (see `tenon-solve`'s `newton::stiff`) end on a chord
/// that still cuts the residual 1.56 times, below what the linear model left: they are
/// kept, and the full step after them crawls (5% a step along directions softer than the
/// regularisation floor) unless it is solved to the end (`linalg::krylov`). Measured: 6
/// iterations when the stiff chords were undone there; 100 and not converged when kept
/// without the crawl's step; 3 with both.
#[test]
fn a_long_coiled_ladder_converges_in_a_few_newton_steps() {
    converges_in_one_cluster_within("coiled 3,333 cells", &generate::ladder(3333), 4);
}

/// Solves `json` and checks that it converged, every residual within the length
/// tolerance, in one cluster of at most `iterations` Newton iterations.
fn converges_in_one_cluster_within(name: &str, json: &str, iterations: usize) {
    let mut m = Mechanism::from_json(json, None).unwrap();
    let report = m.solve().unwrap();
    assert!(report.converged, "{name}: residual {}", report.max_residual);
    let length = report.tolerances.length;
    assert!(
        report.max_residual <= length,
        "{name}: {} > {length}",
        report.max_residual
    );
    assert_eq!(report.clusters.len(), 1, "{name}");
    let taken = report.clusters[0].iterations;
    assert!(taken <= iterations, "{name}: {taken} iterations");
}

/// Long ladders (10,000 cells, 30,000 parts, one cluster), straight and coiled, converge
/// in a few Newton steps. The first stiff chords of each (see `tenon-solve`'s
/// `newton::stiff`) cut the residual 2.2 and 2.6 times only and are undone; tried again
/// after the next full step, the straight one's take it to the tolerance, and the coiled
/// one's cut it 7,700 times to a stall just below what the linear model left (a second
/// try's stall there is no disagreement: kept). Measured: 3 Newton iterations each,
/// where ending stiff chords at the first undoing took 8 (straight) and 7 (coiled).
#[test]
fn long_ladders_try_stiff_chords_again() {
    for (name, json) in [
        (
            "straight",
            generate::scale::ladder(10_000, 100.0, [0.0, 0.0]),
        ),
        ("coiled", generate::ladder(10_000)),
    ] {
        converges_in_one_cluster_within(name, &json, 4);
    }
}
