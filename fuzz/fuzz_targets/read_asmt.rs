//! Any bytes to the .asmt reader (and its TimeSeries reader): no panic, no hang; what
//! reads also converts to JSON v1 that reads back.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = tenon_model::read_asmt_time_series(text);
    if let Ok(a) = tenon_model::read_asmt(text, Some("fuzz.asmt")) {
        let written = tenon_model::write_json(&a);
        tenon_model::read_json(&written, None).expect("converted JSON reads back");
    }
});
