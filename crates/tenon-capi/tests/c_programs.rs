//! The C ABI from real C and C++ programs: each is compiled with the system's compiler
//! (`cc`, `c++`) against `include/tenon.h` and the static library this test was built
//! with, then run. The C test program checks placements, a full-turn drag, a conflict's
//! joints, a run and bad input; it also opens every malformed file of
//! `tests/malformed/cases.json`, and each message must equal the facade's (what `tenon
//! solve` prints). The C++ program and the example host loop (`examples/c/`) run too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The directory with this build's libraries (`target/<profile>`): this test binary
/// lives in its `deps`.
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// The static library built with this test: in `deps` (a library built as a test's
/// dependency is not copied up to the profile's directory), or copied up by a `cargo
/// build`.
fn static_library() -> PathBuf {
    let dir = build_dir();
    [
        dir.join("deps/libtenon_capi.a"),
        dir.join("libtenon_capi.a"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .unwrap_or_else(|| panic!("libtenon_capi.a was not built in {}", dir.display()))
}

/// Compiles `sources` with `compiler` into `out`, linking the static library.
fn compile(compiler: &str, standard: &str, sources: &[PathBuf], out: &Path) {
    let include = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include");
    let mut command = Command::new(compiler);
    command
        .arg(standard)
        .args(["-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-I")
        .arg(&include)
        .args(sources)
        .arg(static_library())
        .args(["-lm", "-lpthread", "-ldl", "-o"])
        .arg(out);
    let o = command
        .output()
        .unwrap_or_else(|e| panic!("{compiler}: {e}"));
    assert!(
        o.status.success(),
        "{compiler} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The malformed files of the shared case list, written into `dir`.
fn malformed_files(dir: &Path) -> Vec<PathBuf> {
    let cases: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/malformed/cases.json")).unwrap(),
    )
    .unwrap();
    let mut files = Vec::new();
    for (k, case) in cases.as_array().unwrap().iter().enumerate() {
        let field = |key: &str| case[key].as_str().unwrap().to_string();
        let base = field("base");
        let text = std::fs::read_to_string(root().join(&base)).unwrap();
        let extension = if base.ends_with(".asmt") {
            "asmt"
        } else {
            "json"
        };
        let path = dir.join(format!("bad{k:02}.{extension}"));
        std::fs::write(&path, text.replacen(&field("from"), &field("to"), 1)).unwrap();
        files.push(path);
    }
    files
}

#[test]
fn the_c_test_program_passes_and_reports_bad_files_as_the_facade_does() {
    let dir = std::env::temp_dir().join(format!("tenon-capi-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("host_test");
    compile(
        "cc",
        "-std=c11",
        &[PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/host_test.c")],
        &exe,
    );
    let files = malformed_files(&dir);
    let o = Command::new(&exe).args(&files).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "the C test program failed:\n{}\n{stdout}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), files.len());
    for (file, line) in files.iter().zip(lines) {
        let mut fields = line.splitn(3, '\t');
        let (_, status, message) = (
            fields.next().unwrap(),
            fields.next().unwrap(),
            fields.next().unwrap(),
        );
        let expected = tenon::Mechanism::open(file).unwrap_err().to_string();
        assert_eq!(status, "1", "{}: status", file.display());
        assert_eq!(message, expected, "{}: message", file.display());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_cpp_test_program_and_the_c_example_run() {
    let dir = std::env::temp_dir().join(format!("tenon-capi-cpp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("host_test_cpp");
    compile(
        "c++",
        "-std=c++17",
        &[PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cpp/host_test.cpp")],
        &exe,
    );
    let o = Command::new(&exe)
        .arg(root().join("fixtures"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the C++ test program failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let example = dir.join("host_loop");
    compile(
        "cc",
        "-std=c11",
        &[root().join("examples/c/host_loop.c")],
        &example,
    );
    let o = Command::new(&example)
        .arg(root().join("fixtures/slider-crank.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "the example failed:\n{stderr}");
    assert!(
        stdout.contains("solved") && stdout.contains("degree(s) of freedom left"),
        "{stdout}"
    );
    // The deliberate mistake at its end is reported, not a crash.
    assert!(stderr.contains("no parameter 'strok'"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}
