//! Where a command may write, in one place for every command: standard output (`-`), a
//! new path, or an existing regular file that is not one of the command's inputs. A
//! device, a directory, a symbolic link or the input itself is refused before any work
//! is done, and nothing is written. Files are written to a temporary file beside the
//! target and renamed over it, so an interrupted or failed write never leaves a
//! half-written file.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};

use crate::{bad_input, Failure};

/// Whether `path` means standard output.
pub(crate) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The same file, however it is named (through links, `..`, a second hard link).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Checks that `output` may be written by a command reading `inputs`.
pub(crate) fn check(output: &Path, inputs: &[&Path]) -> Result<(), Failure> {
    if is_stdout(output) {
        return Ok(());
    }
    let refuse = |why: &str| {
        bad_input(anyhow!(
            "{}: cannot write: {why}; nothing written",
            output.display()
        ))
    };
    if let Some(input) = inputs.iter().find(|i| same_file(output, i)) {
        return Err(refuse(&format!(
            "it is the input {} (Tenon never changes its input: write elsewhere)",
            input.display()
        )));
    }
    match std::fs::symlink_metadata(output) {
        Err(_) => Ok(()),
        Ok(m) if m.file_type().is_file() => Ok(()),
        Ok(m) if m.file_type().is_symlink() => Err(refuse(
            "it is a symbolic link (give the path of the file itself)",
        )),
        Ok(m) if m.is_dir() => Err(refuse("it is a directory")),
        Ok(_) => Err(refuse(
            "it is not a regular file (a device, a pipe or a socket)",
        )),
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename;
/// `-` is standard output.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if is_stdout(path) {
        let mut out = std::io::stdout().lock();
        // A reader that closed the pipe early is no error worth a status.
        let _ = out.write_all(bytes).and_then(|()| out.flush());
        return Ok(());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| anyhow!("{}: not a file name", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tenon-tmp-{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> anyhow::Result<()> {
        let mut f = std::fs::File::create(&tmp)
            .with_context(|| format!("{}: cannot write", path.display()))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .with_context(|| format!("{}: cannot write", path.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
