//! Every fixture, mutated, through the whole pipeline a host drives: read, build, solve,
//! diagnose, set a parameter, solve again, write, read back. What reads is a valid
//! assembly: it builds, its solves and diagnosis report (never an error), a parameter
//! value the model refuses changes nothing, and the written file reads back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../tenon-model/tests/common/mod.rs"]
mod common;

use proptest::prelude::*;

fn fixtures() -> Vec<(String, String)> {
    common::files("../../fixtures", "json")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn mutated_fixtures_go_through_the_pipeline(
        pick in any::<usize>(),
        cuts in proptest::collection::vec(
            (any::<usize>(), any::<usize>(), proptest::sample::select(b"0123456789.-e\"[]{},: tx".to_vec())),
            0..4,
        ),
        value in -1000.0f64..1000.0,
    ) {
        let files = fixtures();
        let (name, text) = &files[pick % files.len()];
        let mutated = common::mutate(text, &cuts);
        let Ok(assembly) = tenon::read_json(&mutated, Some(name)) else {
            return Ok(());
        };
        let parameter = assembly.parameters().first().map(|p| p.name.clone());
        let mut m = match tenon::Mechanism::new(assembly) {
            Ok(m) => m,
            // Values the model accepts but no equations can be built for are named.
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                return Ok(());
            }
        };
        let report = m.solve();
        prop_assert!(report.is_ok(), "{name}: {report:?}");
        let diagnosis = m.diagnose();
        prop_assert!(diagnosis.is_ok(), "{name}: {diagnosis:?}");
        if let Some(p) = parameter {
            let before = m.to_json();
            if m.set_parameter(&p, value).is_err() {
                prop_assert_eq!(m.to_json(), before, "{}: a refused value changed the mechanism", name);
            }
            let again = m.solve();
            prop_assert!(again.is_ok(), "{name}: {again:?}");
        }
        let written = m.to_json();
        prop_assert!(tenon::read_json(&written, None).is_ok(), "{name}: the written file does not read back");
    }
}
