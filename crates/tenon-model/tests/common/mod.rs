//! Test support: the files of a folder.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

/// `(file name, text)` of every file with extension `ext` in `dir` (relative to this
/// crate), sorted by name.
pub fn files(dir: &str, ext: &str) -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Where the external `.asmt` corpus is when the project sits in the steering checkout
/// (as in CI): `../shared/external/ondsel-asmt`.
const CORPUS: &str = "../../../shared/external/ondsel-asmt";

/// The external corpus's files, or none when it is not beside the project (a bare
/// clone). Says on stderr, past the test harness's capture, how many files `test`
/// covered.
pub fn corpus(test: &str) -> Vec<(String, String)> {
    use std::io::Write;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(CORPUS);
    let files = if dir.is_dir() {
        files(CORPUS, "asmt")
    } else {
        Vec::new()
    };
    let _ = writeln!(
        std::io::stderr(),
        "{test}: {} external corpus files covered{}",
        files.len(),
        if files.is_empty() {
            " (../shared/external is not beside the project)"
        } else {
            ""
        }
    );
    files
}

/// One corpus file by name, when the corpus is there.
#[allow(dead_code)]
pub fn corpus_file(test: &str, name: &str) -> Option<String> {
    corpus(test)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, text)| text.replace("\r\n", "\n"))
}

/// The project's own `.asmt` fixture (a crank-slider written by hand): present in every
/// checkout.
#[allow(dead_code)]
pub fn own_asmt() -> String {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/asmt/crank-slider.asmt");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` with a few byte runs replaced (for mutation proptests).
pub fn mutate(text: &str, cuts: &[(usize, usize, u8)]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for &(at, len, byte) in cuts {
        if bytes.is_empty() {
            break;
        }
        let at = at % bytes.len();
        let end = (at + len % 8).min(bytes.len());
        bytes.splice(at..end, [byte]);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
