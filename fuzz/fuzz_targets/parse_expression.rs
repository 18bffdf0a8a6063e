//! Any string to the expression parser: no panic; what parses lowers and evaluates.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(parsed) = tenon_expr::parse(text) {
        let mut g = tenon_expr::ExprGraph::new();
        let opts = tenon_expr::ParseOptions::default();
        if let Ok(e) = parsed.lower(&mut g, opts, &mut |_, g| Some(g.one())) {
            let _ = g.evaluate(&[e], &[], &[]);
        }
    }
});
