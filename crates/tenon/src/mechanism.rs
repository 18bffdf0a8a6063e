//! `Mechanism`: an assembly with its equations built once, its current state, and what
//! a CAD host does with it: solve, diagnose, drag, change a dimension and re-solve.
//!
//! **Invariant:** `system` and `compiled` are built from `assembly` (module `edit`
//! rebuilds them after every structural change); `state` and `params` have the
//! system's lengths. A call that fails leaves all of it as it was.

use std::path::Path;

use tenon_model::{Assembly, JointKey, PartKey, Placement, Pose, Scalar};
use tenon_solve::{Diagnosis, Problem, SolveOptions, Stages, Status};
use tenon_system::{Compiled, System};

use crate::compliance::Yield;
use crate::report::{Phase, Report};
use crate::Error;

/// An assembly with its equations built once, and its current state.
#[derive(Debug, Clone)]
pub struct Mechanism {
    pub(crate) assembly: Assembly,
    pub(crate) built: Built,
    pub(crate) options: SolveOptions,
    pub(crate) last: Option<Report>,
}

/// The equations of an assembly, compiled, and the state they are solved from.
///
/// The system and its tapes are boxed: a mechanism is moved whole from one place to the
/// next as it is built and returned, and with them inline it was 3.6 kB, each move a
/// copy of that much.
#[derive(Debug, Clone)]
pub(crate) struct Built {
    pub(crate) system: Box<System>,
    pub(crate) compiled: Box<Compiled>,
    /// Stage tapes cut for the options solved with so far (the solver's).
    pub(crate) stages: Stages,
    pub(crate) state: Vec<f64>,
    pub(crate) params: Vec<f64>,
    /// The velocity and acceleration equations of kinematic runs, made at the first
    /// (boxed: a static solve never makes them, and a mechanism, moved whole from one
    /// place to the next as it is built and returned, was 1.4 kB larger with them).
    pub(crate) rates: Option<Box<tenon_system::RateTape>>,
    /// Whether it has been solved (or dragged) since it was built: from the second
    /// solve on, small clusters' stages get tapes of their own.
    pub(crate) solved: bool,
}

impl Built {
    /// Builds and compiles `assembly`'s equations, with the stage tapes `options`
    /// solve with.
    pub(crate) fn new(
        assembly: &Assembly,
        options: SolveOptions,
        progress: &mut dyn FnMut(Phase),
    ) -> Result<Built, Error> {
        progress(Phase::Building);
        let mut system = System::build(assembly)?;
        progress(Phase::Compiling);
        let compiled = system.compile()?;
        let mut stages = Stages::new();
        tenon_solve::prepare(&mut system, &compiled, &mut stages, options)?;
        Ok(Built {
            state: system.initial_state(),
            params: system.initial_parameters(),
            system: Box::new(system),
            compiled: Box::new(compiled),
            stages,
            rates: None,
            solved: false,
        })
    }
}

/// Files larger than this are refused by [`load`] (256 MiB: a 10,000-part assembly is
/// a few megabytes); [`load_with`] takes another limit.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// How [`load_with`] reads a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Files larger than this many bytes are refused.
    pub max_bytes: u64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_bytes: MAX_INPUT_BYTES,
        }
    }
}

/// Reads an assembly file without building it: `.asmt` by its extension, JSON v1
/// otherwise. Errors name the file and the place in it. Only regular files are read
/// (not a device, a pipe or a directory), up to [`MAX_INPUT_BYTES`].
pub fn load(path: impl AsRef<Path>) -> Result<Assembly, Error> {
    load_with(path, LoadOptions::default())
}

/// [`load`] with other options (a larger or smaller size limit).
pub fn load_with(path: impl AsRef<Path>, options: LoadOptions) -> Result<Assembly, Error> {
    use std::io::Read;
    let path = path.as_ref();
    let name = path.display().to_string();
    let io = |message: String| Error::Io {
        path: name.clone(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a device, a pipe or a socket)"
        };
        return Err(io(format!("{what}: refused")));
    }
    let too_large = |size: u64| Error::TooLarge {
        path: name.clone(),
        size,
        limit: options.max_bytes,
    };
    if meta.len() > options.max_bytes {
        return Err(too_large(meta.len()));
    }
    // Read no more than the limit even if the file grows meanwhile.
    let file = std::fs::File::open(path).map_err(|e| io(e.to_string()))?;
    let mut text = String::new();
    file.take(options.max_bytes.saturating_add(1))
        .read_to_string(&mut text)
        .map_err(|e| io(e.to_string()))?;
    if text.len() as u64 > options.max_bytes {
        return Err(too_large(text.len() as u64));
    }
    let is_asmt = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("asmt"));
    let assembly = if is_asmt {
        tenon_model::read_asmt(&text, Some(&name))?
    } else {
        tenon_model::read_json(&text, Some(&name))?
    };
    Ok(assembly)
}

impl Mechanism {
    /// Reads a file (see [`load`]) and builds it.
    pub fn open(path: impl AsRef<Path>) -> Result<Mechanism, Error> {
        Mechanism::new(load(path)?)
    }

    /// From JSON v1 text (`source` names it in errors).
    pub fn from_json(text: &str, source: Option<&str>) -> Result<Mechanism, Error> {
        Mechanism::new(tenon_model::read_json(text, source)?)
    }

    /// From `.asmt` text.
    pub fn from_asmt(text: &str, source: Option<&str>) -> Result<Mechanism, Error> {
        Mechanism::new(tenon_model::read_asmt(text, source)?)
    }

    /// From an assembly (read, or built in code: its builders validated every element).
    /// Builds and compiles its equations once, with the stage tapes of the default
    /// solve.
    pub fn new(assembly: Assembly) -> Result<Mechanism, Error> {
        Mechanism::new_with_progress(assembly, &mut |_| {})
    }

    /// [`new`](Self::new), telling `progress` each phase (for a progress display on
    /// large assemblies).
    pub fn new_with_progress(
        assembly: Assembly,
        progress: &mut dyn FnMut(Phase),
    ) -> Result<Mechanism, Error> {
        let options = SolveOptions {
            geometric_tolerance: assembly.tolerance(),
            ..SolveOptions::default()
        };
        let built = Built::new(&assembly, options, progress)?;
        Ok(Mechanism {
            assembly,
            built,
            options,
            last: None,
        })
    }

    pub(crate) fn problem(&self) -> Problem<'_> {
        Problem {
            system: &self.built.system,
            compiled: &self.built.compiled,
            assembly: &self.assembly,
            stages: Some(&self.built.stages),
        }
    }

    /// The options every solve and drag uses.
    pub fn options(&self) -> SolveOptions {
        self.options
    }

    /// Changes the options (tolerances, iteration limit, dense/sparse threshold,
    /// staging). The geometric tolerance starts as the assembly's (its file's
    /// `tolerance`).
    pub fn set_options(&mut self, options: SolveOptions) {
        self.options = options;
    }

    /// Sets the geometric tolerance (model length units, a finite number of 0 or more;
    /// `None`: the length tolerance): repeated joints that disagree by less are placed
    /// by least squares (`docs/tolerances.md`). The assembly, and a file written from
    /// it, keep their own `tolerance`.
    pub fn set_tolerance(&mut self, tolerance: Option<f64>) -> Result<(), Error> {
        if let Some(t) = tolerance.filter(|t| !(t.is_finite() && *t >= 0.0)) {
            return Err(Error::NotFinite {
                what: "tolerance (a length of 0 or more)".to_string(),
                value: t,
            });
        }
        self.options.geometric_tolerance = tolerance;
        Ok(())
    }

    /// Compiles the stage tapes the current options solve with (once per kind); from the
    /// second solve on, small clusters' stages too (the first solves them on rows of
    /// their cluster's tape, see `Stages::compile_own_tapes`).
    fn prepare(&mut self) -> Result<(), Error> {
        let Built {
            system,
            compiled,
            stages,
            solved,
            ..
        } = &mut self.built;
        tenon_solve::prepare(system, compiled, stages, self.options)?;
        if *solved {
            stages.compile_own_tapes(system, compiled, self.options)?;
        }
        *solved = true;
        Ok(())
    }

    /// Assembles from the current state; the parts move as little as possible. A
    /// solve that does not converge leaves the state as it was (the report says why).
    pub fn solve(&mut self) -> Result<Report, Error> {
        self.solve_with_progress(&mut |_| {})
    }

    /// [`solve`](Self::solve), telling `progress` what it does.
    pub fn solve_with_progress(
        &mut self,
        progress: &mut dyn FnMut(Phase),
    ) -> Result<Report, Error> {
        let (state, params, raw, yielded) = self.yielding_solve(progress)?;
        let mut report = Report::new(&self.built.system, raw);
        report.yielded = yielded;
        Ok(self.settle(state, params, report))
    }

    /// A trial solve; where it fails because joints disagree and some are compliant,
    /// those give way (the rigid ones must hold: see `crate::compliance`), and their
    /// yields in file order.
    #[allow(clippy::type_complexity)]
    pub(crate) fn yielding_solve(
        &mut self,
        progress: &mut dyn FnMut(Phase),
    ) -> Result<(Vec<f64>, Vec<f64>, tenon_solve::SolveReport, Vec<Yield>), Error> {
        let (state, params, raw) = self.trial_solve(progress)?;
        if raw.converged {
            return Ok((state, params, raw, Vec::new()));
        }
        let Some(compliance) = crate::compliance::compliances(&self.assembly, &self.built.system)
        else {
            return Ok((state, params, raw, Vec::new()));
        };
        let (mut s, mut p, mut r) = (state.clone(), params.clone(), raw.clone());
        let equations = (&*self.built.system, &*self.built.compiled);
        let Some(mut yielded) =
            crate::compliance::yield_compliant(equations, &compliance, (&mut s, &mut p), &mut r)
        else {
            return Ok((state, params, raw, Vec::new()));
        };
        let order: Vec<JointKey> = self.assembly.joints().map(|(k, _)| k).collect();
        yielded.sort_by_key(|y| order.iter().position(|&k| k == y.joint));
        Ok((s, p, r, yielded))
    }

    /// Solves from the current state into copies of it.
    fn trial_solve(
        &mut self,
        progress: &mut dyn FnMut(Phase),
    ) -> Result<(Vec<f64>, Vec<f64>, tenon_solve::SolveReport), Error> {
        self.prepare()?;
        progress(Phase::Solving {
            clusters: self.built.compiled.clusters().len(),
        });
        let mut state = self.built.state.clone();
        let mut params = self.built.params.clone();
        let raw = tenon_solve::solve(&self.problem(), &mut state, &mut params, self.options)?;
        Ok((state, params, raw))
    }

    /// Keeps a trial's state when it converged (a failed solve or drag leaves the state
    /// as it was), and its report as the last.
    pub(crate) fn settle(&mut self, state: Vec<f64>, params: Vec<f64>, report: Report) -> Report {
        if report.converged {
            self.built.state = state;
            self.built.params = params;
        }
        self.last = Some(report.clone());
        report
    }

    /// Solves, then diagnoses at the result (or at the best point a failed solve
    /// reached, kept for the diagnosis only: the state stays as it was): degrees of
    /// freedom, redundant and conflicting joints, free motions. The solve's report is
    /// [`report`](Self::report) afterwards.
    pub fn diagnose(&mut self) -> Result<Diagnosis, Error> {
        self.diagnose_with_progress(&mut |_| {})
    }

    /// [`diagnose`](Self::diagnose), telling `progress` what it does.
    pub fn diagnose_with_progress(
        &mut self,
        progress: &mut dyn FnMut(Phase),
    ) -> Result<Diagnosis, Error> {
        let (state, params, raw, yielded) = self.yielding_solve(progress)?;
        progress(Phase::Diagnosing);
        let mut diagnosis =
            tenon_solve::diagnose(&self.problem(), &state, &params, &raw, self.options)?;
        if !yielded.is_empty() {
            // Joints that disagree where compliant ones gave way are not a conflict: the
            // compliant ones repeat what the others hold (redundant), and the report's
            // notes say how far each gave way.
            let gave: Vec<JointKey> = yielded.iter().map(|y| y.joint).collect();
            for c in &mut diagnosis.clusters {
                let (kept, eased): (Vec<_>, Vec<_>) = std::mem::take(&mut c.conflicts)
                    .into_iter()
                    .partition(|k| !k.joints.iter().any(|j| gave.contains(j)));
                c.conflicts = kept;
                for j in eased.iter().flat_map(|k| k.joints.iter()) {
                    if gave.contains(j) && !c.redundant.contains(j) {
                        c.redundant.push(*j);
                    }
                }
                if !eased.is_empty() && c.conflicts.is_empty() {
                    c.status = Status::OverConstrained;
                }
            }
        }
        let mut report = Report::new(&self.built.system, raw);
        report.yielded = yielded;
        self.settle(state, params, report);
        Ok(diagnosis)
    }

    /// Sets a parameter (parameters defined from it follow). Every element is checked
    /// again with the new values, as at load (a radius that became 0, an axis that
    /// became zero: an error naming the element, and nothing changes). No rebuild:
    /// call [`solve`](Self::solve) to re-assemble.
    pub fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), Error> {
        if self.assembly.parameters().iter().all(|p| p.name != name) {
            return Err(Error::UnknownParameter(name.to_string()));
        }
        if !value.is_finite() {
            return Err(Error::NotFinite {
                what: format!("parameter '{name}'"),
                value,
            });
        }
        self.assembly.set_parameter(name, Scalar::Number(value))?;
        let values = self.assembly.parameter_values();
        for p in self.assembly.parameters() {
            if let (Some(id), Some(v)) = (self.built.system.parameter(&p.name), values.get(&p.name))
            {
                self.built.params[id.index()] = v;
            }
        }
        Ok(())
    }

    /// A parameter's current value.
    pub fn parameter(&self, name: &str) -> Option<f64> {
        let id = self.built.system.parameter(name)?;
        self.built.params.get(id.index()).copied()
    }

    /// One drag step: moves part `part` toward `target` as far as the joints allow, the
    /// rest following on its current branch. A step that would flip a joint (an aligned
    /// axis ending reversed) is refused like one that does not converge: the parts stay
    /// where they were, and the report (not converged) names the joints in `flipped`.
    pub fn drag(&mut self, part: &str, target: &Pose) -> Result<Report, Error> {
        let index = self.free_index(part)?;
        self.prepare()?;
        let mut state = self.built.state.clone();
        let mut params = self.built.params.clone();
        let raw = tenon_solve::drag(
            &self.problem(),
            &mut state,
            &mut params,
            index,
            target,
            self.options,
        )?;
        let mut report = Report::new(&self.built.system, raw);
        if !report.flipped.is_empty() {
            report.converged = false;
        }
        Ok(self.settle(state, params, report))
    }

    /// The index among the system's free parts of the part with id `part`.
    pub(crate) fn free_index(&self, part: &str) -> Result<usize, Error> {
        let key = self
            .assembly
            .part_by_id(part)
            .ok_or_else(|| Error::UnknownPart(part.to_string()))?;
        self.built
            .system
            .free_index_of(key)
            .ok_or_else(|| Error::GroundedPart(part.to_string()))
    }

    /// The current placement of a part (grounded parts included).
    pub fn placement(&self, part: &str) -> Option<Pose> {
        self.placement_of(self.assembly.part_by_id(part)?)
    }

    /// The current placement of a part, by key.
    pub fn placement_of(&self, key: PartKey) -> Option<Pose> {
        let system = &self.built.system;
        if let Some(fp) = system
            .free_index_of(key)
            .and_then(|k| system.free_parts().get(k))
        {
            let v = fp.vars.map(|x| self.built.state[x.index()]);
            return Some(Pose {
                position: [v[0], v[1], v[2]],
                quaternion: [v[3], v[4], v[5], v[6]],
            });
        }
        self.assembly
            .part(key)?
            .placement
            .numbers(self.assembly.parameter_values(), self.assembly.units())
    }

    /// Every part's current placement, by key (one pass).
    pub(crate) fn poses(&self) -> std::collections::HashMap<PartKey, Pose> {
        let mut out: std::collections::HashMap<PartKey, Pose> = self
            .built
            .system
            .free_parts()
            .iter()
            .map(|fp| {
                let v = fp.vars.map(|x| self.built.state[x.index()]);
                (
                    fp.part,
                    Pose {
                        position: [v[0], v[1], v[2]],
                        quaternion: [v[3], v[4], v[5], v[6]],
                    },
                )
            })
            .collect();
        for (key, part) in self.assembly.parts() {
            if out.contains_key(&key) {
                continue;
            }
            if let Some(pose) = part
                .placement
                .numbers(self.assembly.parameter_values(), self.assembly.units())
            {
                out.insert(key, pose);
            }
        }
        out
    }

    /// The key of the part with this id.
    pub fn part_key(&self, id: &str) -> Option<PartKey> {
        self.assembly.part_by_id(id)
    }

    /// The key of the joint with this id.
    pub fn joint_key(&self, id: &str) -> Option<JointKey> {
        self.assembly.joint_by_id(id)
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
    pub fn report(&self) -> Option<&Report> {
        self.last.as_ref()
    }

    /// The assembly as loaded or edited (placements as given, not solved).
    pub fn model(&self) -> &Assembly {
        &self.assembly
    }

    /// The assembly with every free part at its current placement (to write a file).
    pub fn assembly(&self) -> Assembly {
        let mut out = self.assembly.clone();
        for fp in self.built.system.free_parts() {
            if let Some(pose) = self.placement_of(fp.part) {
                // A pose from the state is finite and its quaternion unit: accepted.
                let _ = out.set_part_placement(
                    fp.part,
                    Placement::from_numbers(pose.position, pose.quaternion),
                );
            }
        }
        out
    }

    /// The assembly at its current placements as JSON v1 text.
    pub fn to_json(&self) -> String {
        tenon_model::write_json(&self.assembly())
    }
}
