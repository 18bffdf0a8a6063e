//! Any bytes through the whole pipeline a CAD host drives: read (JSON v1), build, solve,
//! diagnose, change a parameter, solve again, write, read back. No panic, no hang:
//! errors come back as values. Assemblies are capped at 40 parts and 80 joints so each
//! run stays short (the size limits of the build are another target's business).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(assembly) = tenon::read_json(text, Some("fuzz.json")) else {
        return;
    };
    if assembly.part_count() > 40 || assembly.joint_count() > 80 {
        return;
    }
    let parameter = assembly.parameters().first().map(|p| p.name.clone());
    let Ok(mut m) = tenon::Mechanism::new(assembly) else {
        return;
    };
    // A valid assembly solves to a report (converged or not), never an error.
    let report = m.solve().expect("a solve of a valid assembly reports");
    assert_eq!(report.converged, m.report().is_some_and(|r| r.converged));
    m.diagnose().expect("a diagnosis of a valid assembly reports");
    if let Some(name) = parameter {
        let before = m.to_json();
        let value = f64::from(data.len() as u32 % 97) - 13.0;
        if m.set_parameter(&name, value).is_err() {
            assert_eq!(m.to_json(), before, "a refused change changes nothing");
        }
        m.solve().expect("a re-solve reports");
    }
    let written = m.to_json();
    tenon::read_json(&written, None).expect("the solved assembly reads back");
});
