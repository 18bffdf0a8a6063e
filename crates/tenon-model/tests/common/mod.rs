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
