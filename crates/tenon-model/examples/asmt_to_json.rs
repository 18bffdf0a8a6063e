//! Converts an .asmt (or JSON v1) file to JSON v1 on standard output.
#![allow(clippy::print_stdout)]
use std::process::ExitCode;
fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: asmt_to_json FILE.asmt");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let read = if path.ends_with(".json") {
        tenon_model::read_json(&text, Some(&path))
    } else {
        tenon_model::read_asmt(&text, Some(&path))
    };
    match read {
        Ok(a) => {
            print!("{}", tenon_model::write_json(&a));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}
