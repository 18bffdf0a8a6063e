//! Any bytes to the JSON v1 reader: no panic, no hang; what reads also writes and reads
//! back to the same text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(a) = tenon_model::read_json(text, Some("fuzz.json")) {
        let written = tenon_model::write_json(&a);
        let again = tenon_model::read_json(&written, None).expect("written JSON reads back");
        assert_eq!(tenon_model::write_json(&again), written);
    }
});
