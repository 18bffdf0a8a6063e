//! Tenon, a parametric assembly solver for CAD: the small, stable API a plugin calls.
//!
//! Load an assembly (a file, or JSON v1 / `.asmt` text), build its equations once, then
//! solve, change parameters and re-solve, drag parts, and read placements and reports.
//! Everything else (`tenon-model`, `tenon-system`, `tenon-solve`) is internal and may
//! change.
//!
//! ```
//! # fn main() -> Result<(), tenon::Error> {
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/slider-crank.json");
//! let mut mechanism = tenon::Mechanism::open(path)?;
//! let report = mechanism.solve()?;
//! assert!(report.converged);
//! let piston = mechanism.placement("piston").expect("the fixture has a piston");
//! assert!(piston.position[0] > 100.0);
//! # Ok(())
//! # }
//! ```
//!
//! Changing a dimension re-evaluates the same compiled equations:
//!
//! ```
//! # fn main() -> Result<(), tenon::Error> {
//! let text = r#"{ "format": "tenon-assembly", "version": 1, "parameters": { "L": 100 },
//!   "parts": [ { "id": "ground", "grounded": true },
//!              { "id": "slide", "placement": { "position": [0, 0, 100] } } ],
//!   "joints": [ { "id": "rail", "type": "slider", "i": { "part": "slide" },
//!                 "j": { "part": "ground" }, "distance": "L" } ] }"#;
//! let mut m = tenon::Mechanism::from_json(text, Some("rail.json"))?;
//! m.set_parameter("L", 120.0)?;
//! assert!(m.solve()?.converged);
//! let z = m.placement("slide").expect("part exists").position[2];
//! assert!((z - 120.0).abs() < 1e-9);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

use std::path::Path;

pub use tenon_model::{Assembly, JointKey, ModelError, PartKey, Pose};
pub use tenon_solve::{
    ClusterDiagnosis, ClusterReport, Conflict, Diagnosis, FreeMotion, LimitReport, LimitSide,
    Motion, SolveOptions, SolveOrder, SolveReport, Status,
};

use tenon_model::{Parameter, Scalar};
use tenon_solve::Problem;
use tenon_system::{Compiled, System};

/// What can go wrong: input that cannot be used, or a name that does not exist.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or text that is not a usable assembly (names the place).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The assembly cannot be turned into equations.
    #[error(transparent)]
    System(#[from] tenon_system::SystemError),
    /// The solver could not evaluate the equations (a bug if it happens).
    #[error(transparent)]
    Solve(#[from] tenon_solve::SolveError),
    /// A file could not be read.
    #[error("{path}: cannot read: {message}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// No parameter of that name.
    #[error("no parameter '{0}'")]
    UnknownParameter(String),
    /// No free part of that name.
    #[error("no free part '{0}'")]
    UnknownPart(String),
}

/// An assembly with its equations built once, and its current state.
#[derive(Debug, Clone)]
pub struct Mechanism {
    assembly: Assembly,
    system: System,
    compiled: Compiled,
    state: Vec<f64>,
    params: Vec<f64>,
    options: SolveOptions,
    last: Option<SolveReport>,
}

impl Mechanism {
    /// Reads a file: `.asmt` by its extension, JSON v1 otherwise.
    pub fn open(path: impl AsRef<Path>) -> Result<Mechanism, Error> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: name.clone(),
            message: e.to_string(),
        })?;
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("asmt"))
        {
            Mechanism::from_asmt(&text, Some(&name))
        } else {
            Mechanism::from_json(&text, Some(&name))
        }
    }

    /// From JSON v1 text (`source` names it in errors).
    pub fn from_json(text: &str, source: Option<&str>) -> Result<Mechanism, Error> {
        Mechanism::new(tenon_model::read_json(text, source)?)
    }

    /// From `.asmt` text.
    pub fn from_asmt(text: &str, source: Option<&str>) -> Result<Mechanism, Error> {
        Mechanism::new(tenon_model::read_asmt(text, source)?)
    }

    /// From an assembly built in code. Builds and compiles its equations once, with the
    /// stage tapes of the default solve (options changed later compile theirs at the
    /// next solve).
    pub fn new(assembly: Assembly) -> Result<Mechanism, Error> {
        let mut system = System::build(&assembly)?;
        let compiled = system.compile()?;
        let state = system.initial_state();
        let params = system.initial_parameters();
        let mut m = Mechanism {
            assembly,
            system,
            compiled,
            state,
            params,
            options: SolveOptions::default(),
            last: None,
        };
        // Built once: the stage tapes of the default solve too.
        m.prepare()?;
        Ok(m)
    }

    /// Compiles the stage tapes the current options solve with (once per kind).
    fn prepare(&mut self) -> Result<(), Error> {
        tenon_solve::prepare(&mut self.system, &mut self.compiled, self.options)?;
        Ok(())
    }

    fn problem(&self) -> Problem<'_> {
        Problem {
            system: &self.system,
            compiled: &self.compiled,
            assembly: &self.assembly,
        }
    }

    /// The options every solve and drag uses.
    pub fn options(&self) -> SolveOptions {
        self.options
    }

    /// Changes the options (tolerance, iteration limit, dense/sparse threshold).
    pub fn set_options(&mut self, options: SolveOptions) {
        self.options = options;
    }

    /// Assembles from the current state; the parts move as little as possible.
    pub fn solve(&mut self) -> Result<&SolveReport, Error> {
        let mut state = self.state.clone();
        let mut params = self.params.clone();
        self.prepare()?;
        let report = tenon_solve::solve(&self.problem(), &mut state, &mut params, self.options)?;
        // A failed solve leaves the state as it was.
        if report.converged {
            self.state = state;
            self.params = params;
        }
        Ok(self.last.insert(report))
    }

    /// Solves, then diagnoses at the result (or at the best point a failed solve reached,
    /// which is kept only for the diagnosis: the state stays as it was): degrees of
    /// freedom, redundant and conflicting joints, free motions.
    pub fn diagnose(&mut self) -> Result<Diagnosis, Error> {
        let mut state = self.state.clone();
        let mut params = self.params.clone();
        self.prepare()?;
        let report = tenon_solve::solve(&self.problem(), &mut state, &mut params, self.options)?;
        let diagnosis =
            tenon_solve::diagnose(&self.problem(), &state, &params, &report, self.options)?;
        if report.converged {
            self.state = state;
            self.params = params;
        }
        self.last = Some(report);
        Ok(diagnosis)
    }

    /// Sets a parameter (parameters defined from it follow); no rebuild. Call
    /// [`solve`](Self::solve) to re-assemble.
    pub fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), Error> {
        let old: Vec<Parameter> = self.assembly.parameters().to_vec();
        let mut parameters = old.clone();
        let p = parameters
            .iter_mut()
            .find(|p| p.name == name)
            .ok_or_else(|| Error::UnknownParameter(name.to_string()))?;
        p.value = Scalar::Number(value);
        // Set in place and put back if they cannot be evaluated (the assembly, which
        // holds every part, is not cloned).
        self.assembly.set_parameters(parameters);
        let values = match self.assembly.parameter_values() {
            Ok(v) => v,
            Err(e) => {
                self.assembly.set_parameters(old);
                return Err(e.into());
            }
        };
        for p in self.assembly.parameters() {
            if let (Some(id), Some(v)) = (self.system.parameter(&p.name), values.get(&p.name)) {
                if let Some(slot) = self.params.get_mut(id.index()) {
                    *slot = v;
                }
            }
        }
        Ok(())
    }

    /// A parameter's current value.
    pub fn parameter(&self, name: &str) -> Option<f64> {
        let id = self.system.parameter(name)?;
        self.params.get(id.index()).copied()
    }

    /// One drag step: moves part `part` toward `target` as far as the joints allow, the
    /// rest following on its current branch.
    pub fn drag(&mut self, part: &str, target: &Pose) -> Result<&SolveReport, Error> {
        let key = self
            .assembly
            .part_by_id(part)
            .ok_or_else(|| Error::UnknownPart(part.to_string()))?;
        let index = self
            .system
            .free_parts()
            .iter()
            .position(|f| f.part == key)
            .ok_or_else(|| Error::UnknownPart(part.to_string()))?;
        self.prepare()?;
        let mut state = self.state.clone();
        let mut params = self.params.clone();
        let report = tenon_solve::drag(
            &self.problem(),
            &mut state,
            &mut params,
            index,
            target,
            self.options,
        )?;
        if report.converged {
            self.state = state;
            self.params = params;
        }
        Ok(self.last.insert(report))
    }

    /// The current placement of a part (grounded parts included).
    pub fn placement(&self, part: &str) -> Option<Pose> {
        let key = self.assembly.part_by_id(part)?;
        if let Some(fp) = self.system.free_parts().iter().find(|f| f.part == key) {
            let v: Vec<f64> = fp
                .vars
                .iter()
                .map(|x| self.state.get(x.index()).copied().unwrap_or(0.0))
                .collect();
            return Some(Pose {
                position: [v[0], v[1], v[2]],
                quaternion: [v[3], v[4], v[5], v[6]],
            });
        }
        let values = self.assembly.parameter_values().ok()?;
        self.assembly
            .part(key)?
            .placement
            .numbers(&values, self.assembly.units())
    }

    /// The id (as the file gives it) of a part.
    pub fn part_id(&self, key: PartKey) -> Option<&str> {
        self.assembly.part(key).map(|p| p.id.as_str())
    }

    /// The id (as the file gives it) of a joint.
    pub fn joint_id(&self, key: JointKey) -> Option<&str> {
        self.assembly.joint(key).map(|j| j.id.as_str())
    }

    /// The report of the last solve or drag.
    pub fn report(&self) -> Option<&SolveReport> {
        self.last.as_ref()
    }

    /// The assembly with every free part at its current placement (to write a file).
    pub fn assembly(&self) -> Assembly {
        let mut out = self.assembly.clone();
        for fp in self.system.free_parts() {
            if let Some(pose) = out.part(fp.part).and_then(|p| self.placement(&p.id)) {
                out.set_part_placement(
                    fp.part,
                    tenon_model::Placement::from_numbers(pose.position, pose.quaternion),
                );
            }
        }
        out
    }
}
