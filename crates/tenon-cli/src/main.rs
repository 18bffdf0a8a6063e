//! The `tenon` command (see `../shared/spec/assembly-format.md`, "The `tenon` command").
//!
//! Exit status: 0 done, 1 not solved, 2 bad input or usage. Messages go to stderr and
//! name the file and the place in it. Files are written by writing a temporary file
//! beside the target and renaming it, so an interrupted or failed write never leaves a
//! half-written file, and the input is never changed.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::anyhow;
use clap::{Parser, Subcommand};

/// The command's allocator: a large assembly is read, built and compiled as millions of
/// small allocations, which mimalloc serves about a fifth faster than the system's
/// (`benches/whole_process.sh`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        /// Repeated joints that disagree by less than TOL (model length units) are
        /// placed by least squares and reported with their disagreement; by more,
        /// conflicting (default: the file's `tolerance`, else the length tolerance).
        #[arg(long, value_name = "TOL")]
        tolerance: Option<f64>,
        /// Write the solved assembly (JSON v1) here; `-` for standard output.
        #[arg(short = 'o', value_name = "OUT.json")]
        output: Option<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Find the static equilibrium under the file's loads and gravity, compliant
        /// joints acting as springs (a plain solve does not read forces).
        #[arg(long)]
        equilibrium: bool,
    },
    /// Solve, then report degrees of freedom, redundant and conflicting joints and the
    /// motions each part has left.
    Check {
        /// Assembly file (.json or .asmt).
        file: PathBuf,
        /// Set a parameter before solving (repeatable).
        #[arg(long = "set", value_name = "NAME=NUMBER")]
        set: Vec<String>,
        /// Repeated joints that disagree by less than TOL (model length units) are
        /// placed by least squares and reported with their disagreement; by more,
        /// conflicting (default: the file's `tolerance`, else the length tolerance).
        #[arg(long, value_name = "TOL")]
        tolerance: Option<f64>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Also write the diagnosis as one self-contained HTML page (a diagram to turn
        /// and zoom, the joints coloured by what was found, the report beside it); `-`
        /// prints the page instead of the report.
        #[arg(long, value_name = "OUT.html")]
        html: Option<PathBuf>,
    },
    /// Run the motions over time: positions, velocities and accelerations of every
    /// part, frame by frame (the file's `simulation` settings, or `--end` / `--step`).
    Kinematics {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run the dynamics: the parts move under gravity, springs, loads and drives with
    /// the joints held (the file's `simulation` settings, or `--end` / `--step`);
    /// positions, velocities, accelerations, joint reactions, drive efforts, energies.
    Simulate {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Convert an assembly (.asmt or JSON v1) to JSON v1.
    Convert {
        /// Input file (.asmt or .json).
        input: PathBuf,
        /// Output file (JSON v1); `-` for standard output.
        output: PathBuf,
    },
}

/// What a run over time takes (`kinematics`, `simulate`).
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Assembly file (.json or .asmt).
    file: PathBuf,
    /// End time (default: the file's, else 1).
    #[arg(long, value_name = "T")]
    end: Option<f64>,
    /// Step (default: the file's, else 0.01).
    #[arg(long, value_name = "H")]
    step: Option<f64>,
    /// Write the trajectory here, as CSV (`.csv`) or JSON (`.json`).
    #[arg(short = 'o', value_name = "OUT.csv|OUT.json")]
    output: Option<PathBuf>,
    /// Also write the run as one self-contained HTML page: the assembly moving through
    /// the frames (play, pause, time slider, speed) and plots of the joint coordinates
    /// and rates (for dynamics also reactions, drive efforts, energies) under it.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
    /// Also write the plots alone, as one SVG document.
    #[arg(long, value_name = "OUT.svg")]
    plot: Option<PathBuf>,
}

impl RunArgs {
    fn outputs(&self) -> kinematics::Outputs<'_> {
        kinematics::Outputs {
            trajectory: self.output.as_deref(),
            html: self.html.as_deref(),
            plot: self.plot.as_deref(),
        }
    }
}

mod check;
mod kinematics;
mod output;
mod render;
mod simulate;
mod solve;
mod timings;

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

/// The environment variable that changes the input size limit (bytes).
const MAX_INPUT_VARIABLE: &str = "TENON_MAX_INPUT_BYTES";

/// Reads an assembly file (not built), with the size limit of the environment.
pub(crate) fn read(path: &std::path::Path) -> Result<tenon::Assembly, Failure> {
    let mut options = tenon::LoadOptions::default();
    if let Ok(value) = std::env::var(MAX_INPUT_VARIABLE) {
        options.max_bytes = value.trim().parse().map_err(|_| {
            bad_input(anyhow!(
                "{MAX_INPUT_VARIABLE}={value}: expected a number of bytes"
            ))
        })?;
    }
    tenon::load_with(path, options).map_err(|e| match e {
        tenon::Error::TooLarge { .. } => bad_input(anyhow!(
            "{e} (set {MAX_INPUT_VARIABLE} to read larger files)"
        )),
        e => bad_input(anyhow!(e)),
    })
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
    let result = run(cli);
    timings::report();
    match result {
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
            tolerance,
            output,
            json,
            equilibrium,
        } => solve::run(
            &file,
            &solve::Given {
                sets: &set,
                tolerance,
            },
            output.as_deref(),
            solve::Show { json, equilibrium },
        ),
        Command::Check {
            file,
            set,
            tolerance,
            json,
            html,
        } => check::run(
            &file,
            &solve::Given {
                sets: &set,
                tolerance,
            },
            check::Shown {
                json,
                html: html.as_deref(),
            },
        ),
        Command::Kinematics { run } => {
            kinematics::run(&run.file, (run.end, run.step), &run.outputs())
        }
        Command::Simulate { run } => simulate::run(&run.file, (run.end, run.step), &run.outputs()),
        Command::Convert { input, output } => {
            output::check(&output, &[&input])?;
            let assembly = read(&input)?;
            output::write(&output, tenon::write_json(&assembly).as_bytes()).map_err(bad_input)?;
            // Said on stderr, so piping the JSON (`-`) stays clean.
            if output::is_stdout(&output) {
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
