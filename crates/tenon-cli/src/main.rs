//! The `tenon` command (see `../shared/spec/assembly-format.md`, "The `tenon` command").
//!
//! Exit status: 0 done, 1 not solved, 2 bad input or usage. Messages go to stderr and
//! name the file and the place in it. Files are written by writing a temporary file
//! beside the target and renaming it, so an interrupted or failed write never leaves a
//! half-written file, and the input is never changed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use clap::{Parser, Subcommand};

/// Tenon, a parametric assembly solver for CAD.
#[derive(Debug, Parser)]
#[command(name = "tenon", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Assemble the parts so every joint holds (motions are left out: the coordinates
    /// they drive stay free).
    Solve {
        /// Assembly file (.json or .asmt).
        file: PathBuf,
        /// Set a parameter before solving (repeatable).
        #[arg(long = "set", value_name = "NAME=NUMBER")]
        set: Vec<String>,
        /// Write the solved assembly (JSON v1) here; `-` for standard output.
        #[arg(short = 'o', value_name = "OUT.json")]
        output: Option<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Solve, then report degrees of freedom, redundant and conflicting joints and the
    /// motions each part has left.
    Check {
        /// Assembly file (.json or .asmt).
        file: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Convert an assembly (.asmt or JSON v1) to JSON v1.
    Convert {
        /// Input file (.asmt or .json).
        input: PathBuf,
        /// Output file (JSON v1); `-` for standard output.
        output: PathBuf,
    },
}

mod check;
mod render;
mod solve;

/// A failure and the exit status it maps to.
pub(crate) struct Failure {
    pub(crate) status: u8,
    pub(crate) error: anyhow::Error,
}

/// Writes a report to standard output. A reader that stops early (`tenon check | head`)
/// closes the pipe: the rest is dropped quietly rather than panicking.
pub(crate) fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

pub(crate) fn bad_input(error: anyhow::Error) -> Failure {
    Failure { status: 2, error }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let status = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(status);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            // A closed stderr is no reason to panic: the status still says it.
            let _ = writeln!(std::io::stderr(), "tenon: {:#}", f.error);
            ExitCode::from(f.status)
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Solve {
            file,
            set,
            output,
            json,
        } => solve::run(&file, &set, output.as_deref(), json),
        Command::Check { file, json } => check::run(&file, json),
        Command::Convert { input, output } => {
            let assembly = tenon::load(&input).map_err(|e| bad_input(anyhow!(e)))?;
            write_atomically(&output, tenon::write_json(&assembly).as_bytes())
                .map_err(bad_input)?;
            // Said on stderr, so piping the JSON (`-`) stays clean.
            if output.as_os_str() == "-" {
                return Ok(());
            }
            let _ = writeln!(
                std::io::stderr(),
                "{}: wrote {} ({} parts, {} joints)",
                input.display(),
                output.display(),
                assembly.part_count(),
                assembly.joint_count()
            );
            Ok(())
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename;
/// `-` is standard output.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
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
