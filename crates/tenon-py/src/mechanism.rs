//! The `Mechanism` class: what a workbench does with an assembly.

use pyo3::prelude::*;

use crate::errors::{guarded, input_error, to_py, unknown_name, SolveError};
use crate::report::{self, Report};
use crate::runs::{self, Run};

type Position = (f64, f64, f64);
type Quaternion = (f64, f64, f64, f64);

/// An assembly with its equations built: solve it, diagnose it, drag its parts, run it.
///
/// Build one with `Mechanism.open(path)`, `Mechanism.from_json(text)`,
/// `Mechanism.from_asmt(text)`, or `Mechanism(units)` (empty) and `add_part` /
/// `add_marker` / `add_joint`. A call that fails changes nothing.
#[pyclass(module = "tenon")]
#[derive(Debug)]
pub struct Mechanism {
    inner: tenon::Mechanism,
    /// The last diagnosis, until a change.
    diagnosis: Option<tenon::Diagnosis>,
    /// The parts a drag moves, between `drag_begin` and `drag_end`.
    dragging: Option<Vec<String>>,
}

impl Mechanism {
    fn wrap(inner: tenon::Mechanism) -> Mechanism {
        Mechanism {
            inner,
            diagnosis: None,
            dragging: None,
        }
    }

    fn changed(&mut self) {
        self.diagnosis = None;
    }
}

/// A dict (converted with `json.dumps`) or a JSON string.
fn json_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = value.extract::<String>() {
        return Ok(text);
    }
    let json = value.py().import("json")?;
    json.call_method1("dumps", (value,))?.extract()
}

/// A built mechanism for Python, or its error as the matching exception.
fn built(py: Python<'_>, result: Result<tenon::Mechanism, tenon::Error>) -> PyResult<Mechanism> {
    result.map(Mechanism::wrap).map_err(|e| to_py(py, e))
}

fn model_error(py: Python<'_>, e: tenon::ModelError) -> PyErr {
    to_py(py, tenon::Error::Model(e))
}

#[pymethods]
impl Mechanism {
    /// An empty mechanism to build in code, in `units` (a dict or JSON text as a file's
    /// `units`; default mm, deg, kg, s).
    #[new]
    #[pyo3(signature = (units=None))]
    fn new(py: Python<'_>, units: Option<&Bound<'_, PyAny>>) -> PyResult<Mechanism> {
        let units = match units {
            Some(u) => Some(json_text(u)?),
            None => None,
        };
        guarded(|| {
            let units: serde_json::Value = match units {
                Some(text) => serde_json::from_str(&text).map_err(|e| {
                    input_error(
                        py,
                        None,
                        Some("units".into()),
                        &format!("not valid JSON: {e}"),
                    )
                })?,
                None => serde_json::json!({}),
            };
            let document = serde_json::json!({
                "format": tenon::FORMAT_NAME,
                "version": tenon::FORMAT_VERSION,
                "units": units,
            });
            built(py, tenon::Mechanism::from_json(&document.to_string(), None))
        })
    }

    /// Reads an assembly file (`.json`, or `.asmt` by its extension) and builds it.
    #[staticmethod]
    fn open(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Mechanism> {
        guarded(|| built(py, py.allow_threads(|| tenon::Mechanism::open(&path))))
    }

    /// From assembly JSON text (`source` names it in errors).
    #[staticmethod]
    #[pyo3(signature = (text, source=None))]
    fn from_json(py: Python<'_>, text: &str, source: Option<&str>) -> PyResult<Mechanism> {
        guarded(|| built(py, tenon::Mechanism::from_json(text, source)))
    }

    /// From OndselSolver / FreeCAD `.asmt` text.
    #[staticmethod]
    #[pyo3(signature = (text, source=None))]
    fn from_asmt(py: Python<'_>, text: &str, source: Option<&str>) -> PyResult<Mechanism> {
        guarded(|| built(py, tenon::Mechanism::from_asmt(text, source)))
    }

    /// Adds a part: a dict (or JSON text) as in a file's `parts` array.
    fn add_part(&mut self, py: Python<'_>, part: &Bound<'_, PyAny>) -> PyResult<()> {
        let text = json_text(part)?;
        guarded(|| {
            let part = tenon::read_part_json(&text).map_err(|e| model_error(py, e))?;
            self.inner.add_part(part).map_err(|e| to_py(py, e))?;
            self.changed();
            Ok(())
        })
    }

    /// Adds marker `name` to `part` at `position` (the part's frame), turned by
    /// `quaternion` (w, x, y, z).
    #[pyo3(signature = (part, name, position=(0.0, 0.0, 0.0), quaternion=(1.0, 0.0, 0.0, 0.0)))]
    fn add_marker(
        &mut self,
        py: Python<'_>,
        part: &str,
        name: &str,
        position: Position,
        quaternion: Quaternion,
    ) -> PyResult<()> {
        guarded(|| {
            let placement = tenon::Placement::from_numbers(
                [position.0, position.1, position.2],
                [quaternion.0, quaternion.1, quaternion.2, quaternion.3],
            );
            self.inner
                .add_marker(part, name, placement)
                .map_err(|e| to_py(py, e))?;
            self.changed();
            Ok(())
        })
    }

    /// Adds a joint: a dict (or JSON text) as in a file's `joints` array.
    fn add_joint(&mut self, py: Python<'_>, joint: &Bound<'_, PyAny>) -> PyResult<()> {
        let text = json_text(joint)?;
        guarded(|| {
            let joint = tenon::read_joint_json(&text, self.inner.model())
                .map_err(|e| model_error(py, e))?;
            self.inner.add_joint(joint).map_err(|e| to_py(py, e))?;
            self.changed();
            Ok(())
        })
    }

    /// Removes a joint (and the motions that drive it).
    fn remove_joint(&mut self, py: Python<'_>, joint: &str) -> PyResult<()> {
        guarded(|| {
            self.inner.remove_joint(joint).map_err(|e| to_py(py, e))?;
            self.changed();
            Ok(())
        })
    }

    /// Suppresses a joint (kept, left out of the solve) or brings it back.
    #[pyo3(signature = (joint, suppressed=true))]
    fn suppress_joint(&mut self, py: Python<'_>, joint: &str, suppressed: bool) -> PyResult<()> {
        guarded(|| {
            self.inner
                .set_suppressed(joint, suppressed)
                .map_err(|e| to_py(py, e))?;
            self.changed();
            Ok(())
        })
    }

    /// Assembles from the current placements, moving the parts as little as possible.
    /// Returns the report (a failed solve is a report with `converged` False, the parts
    /// left where they were).
    fn solve(&mut self, py: Python<'_>) -> PyResult<Report> {
        guarded(|| {
            self.changed();
            let inner = &mut self.inner;
            let r = py
                .allow_threads(|| inner.solve())
                .map_err(|e| to_py(py, e))?;
            Ok(report::make(&self.inner, &r, None))
        })
    }

    /// The static equilibrium under the file's loads and gravity, compliant joints as
    /// springs (see the format notes); raises `SolveError` where there is none (a load
    /// pushing along a freedom no joint holds), the poses unchanged.
    fn equilibrium(&mut self, py: Python<'_>) -> PyResult<Report> {
        guarded(|| {
            self.changed();
            let inner = &mut self.inner;
            let r = py
                .allow_threads(|| inner.equilibrium())
                .map_err(|e| to_py(py, e))?;
            Ok(report::make(&self.inner, &r, None))
        })
    }

    /// Solves, then diagnoses: degrees of freedom, redundant and conflicting joints,
    /// free motions (the whole in `report_json()`).
    fn diagnose(&mut self, py: Python<'_>) -> PyResult<Report> {
        guarded(|| {
            let inner = &mut self.inner;
            let d = py
                .allow_threads(|| inner.diagnose())
                .map_err(|e| to_py(py, e))?;
            let r = self.inner.report().cloned().ok_or_else(|| {
                crate::errors::InternalError::new_err("no report after a diagnosis")
            })?;
            let out = report::make(&self.inner, &r, Some(&d));
            self.diagnosis = Some(d);
            Ok(out)
        })
    }

    /// A part's current placement: ((x, y, z), (w, x, y, z)).
    fn placement(&self, py: Python<'_>, part: &str) -> PyResult<(Position, Quaternion)> {
        guarded(|| {
            let p = self
                .inner
                .placement(part)
                .ok_or_else(|| unknown_name(py, part, &format!("no part '{part}'")))?;
            Ok((
                (p.position[0], p.position[1], p.position[2]),
                (
                    p.quaternion[0],
                    p.quaternion[1],
                    p.quaternion[2],
                    p.quaternion[3],
                ),
            ))
        })
    }

    /// Places a part by hand (a free part: the next solve starts there; a grounded one
    /// is held there).
    fn set_placement(
        &mut self,
        py: Python<'_>,
        part: &str,
        position: Position,
        quaternion: Quaternion,
    ) -> PyResult<()> {
        guarded(|| {
            let pose = tenon::Pose {
                position: [position.0, position.1, position.2],
                quaternion: [quaternion.0, quaternion.1, quaternion.2, quaternion.3],
            };
            self.inner
                .set_placement(part, &pose)
                .map_err(|e| to_py(py, e))?;
            self.changed();
            Ok(())
        })
    }

    /// Sets a parameter (those defined from it follow); the next solve uses it.
    fn set_parameter(&mut self, py: Python<'_>, name: &str, value: f64) -> PyResult<()> {
        guarded(|| {
            self.inner
                .set_parameter(name, value)
                .map_err(|e| to_py(py, e))?;
            self.changed();
            Ok(())
        })
    }

    /// A parameter's current value.
    fn parameter(&self, py: Python<'_>, name: &str) -> PyResult<f64> {
        self.inner
            .parameter(name)
            .ok_or_else(|| unknown_name(py, name, &format!("no parameter '{name}'")))
    }

    /// The parameters' current values, by name.
    #[getter]
    fn parameters(&self) -> std::collections::BTreeMap<String, f64> {
        self.inner
            .model()
            .parameters()
            .iter()
            .filter_map(|p| Some((p.name.clone(), self.inner.parameter(&p.name)?)))
            .collect()
    }

    /// The geometric tolerance (model length units): repeated joints that disagree by
    /// less are placed by least squares and reported over-constrained; None: the
    /// length tolerance (the default, unless the file gave one).
    #[getter]
    fn tolerance(&self) -> Option<f64> {
        self.inner.options().geometric_tolerance
    }

    #[setter]
    fn set_tolerance(&mut self, py: Python<'_>, tolerance: Option<f64>) -> PyResult<()> {
        self.inner
            .set_tolerance(tolerance)
            .map_err(|e| to_py(py, e))
    }

    /// The parts' ids, in file order.
    #[getter]
    fn parts(&self) -> Vec<String> {
        self.inner
            .model()
            .parts()
            .map(|(_, p)| p.id.clone())
            .collect()
    }

    /// The joints' ids, in file order.
    #[getter]
    fn joints(&self) -> Vec<String> {
        self.inner
            .model()
            .joints()
            .map(|(_, j)| j.id.clone())
            .collect()
    }

    /// Begins a drag of `parts` (each must exist and move).
    fn drag_begin(&mut self, py: Python<'_>, parts: Vec<String>) -> PyResult<()> {
        for part in &parts {
            let key = self
                .inner
                .part_key(part)
                .ok_or_else(|| unknown_name(py, part, &format!("no part '{part}'")))?;
            if self.inner.model().part(key).is_some_and(|p| p.grounded) {
                return Err(input_error(
                    py,
                    None,
                    None,
                    &format!("part '{part}' is grounded: it cannot be dragged"),
                ));
            }
        }
        self.dragging = Some(parts);
        Ok(())
    }

    /// One drag step: moves `part` (one the drag began with) toward `position` and
    /// `quaternion` as far as the joints allow, the rest following on its branch.
    /// Raises `SolveError` when the step cannot be taken or would flip a joint (the
    /// parts stay where they were).
    fn drag_step(
        &mut self,
        py: Python<'_>,
        part: &str,
        position: Position,
        quaternion: Quaternion,
    ) -> PyResult<Report> {
        let Some(dragging) = &self.dragging else {
            return Err(input_error(
                py,
                None,
                None,
                "no drag begun: call drag_begin first",
            ));
        };
        if !dragging.iter().any(|p| p == part) {
            return Err(input_error(
                py,
                None,
                None,
                &format!("part '{part}' is not among the parts this drag began with"),
            ));
        }
        let report = self.drag(py, part, position, quaternion)?;
        if !report.flipped.is_empty() {
            return Err(SolveError::new_err(format!(
                "the step would flip joint(s) {:?}: refused, the parts stay where they were",
                report.flipped
            )));
        }
        if !report.converged {
            return Err(SolveError::new_err(format!(
                "the step cannot be taken (largest residual {:.3e}): the parts stay where \
                 they were",
                report.max_residual
            )));
        }
        Ok(report)
    }

    /// Ends the drag.
    fn drag_end(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.dragging.take().is_none() {
            return Err(input_error(py, None, None, "no drag begun"));
        }
        Ok(())
    }

    /// One drag step without begin / end: the report says whether it was taken
    /// (`converged`; refused steps leave the parts where they were).
    fn drag(
        &mut self,
        py: Python<'_>,
        part: &str,
        position: Position,
        quaternion: Quaternion,
    ) -> PyResult<Report> {
        guarded(|| {
            self.changed();
            let pose = tenon::Pose {
                position: [position.0, position.1, position.2],
                quaternion: [quaternion.0, quaternion.1, quaternion.2, quaternion.3],
            };
            let inner = &mut self.inner;
            let r = py
                .allow_threads(|| inner.drag(part, &pose))
                .map_err(|e| to_py(py, e))?;
            Ok(report::make(&self.inner, &r, None))
        })
    }

    /// The spec's JSON report of the last solve or drag (`tenon solve --json`), or of
    /// the last diagnosis since (`tenon check --json`), as text.
    fn report_json(&self, py: Python<'_>) -> PyResult<String> {
        let report = self
            .inner
            .report()
            .ok_or_else(|| input_error(py, None, None, "no solve yet: call solve() first"))?;
        let assembly = self.inner.assembly();
        let value = match &self.diagnosis {
            Some(d) => tenon_report::check_json(&assembly, report, d),
            None => tenon_report::solve_json(&assembly, report, None),
        };
        serde_json::to_string_pretty(&value)
            .map_err(|e| crate::errors::InternalError::new_err(e.to_string()))
    }

    /// The last diagnosis as one self-contained HTML page (`tenon check --html`): the
    /// assembly's diagram to turn and zoom, the joints coloured by what `diagnose()`
    /// found, the free motions, the report beside it. `title` defaults to the
    /// assembly's name.
    #[pyo3(signature = (title=None))]
    fn report_html(&self, py: Python<'_>, title: Option<&str>) -> PyResult<String> {
        let report = self
            .inner
            .report()
            .ok_or_else(|| input_error(py, None, None, "no solve yet: call diagnose() first"))?;
        let diagnosis = self.diagnosis.as_ref().ok_or_else(|| {
            input_error(py, None, None, "no diagnosis yet: call diagnose() first")
        })?;
        let assembly = self.inner.assembly();
        let title = title.map_or_else(|| assembly.name().to_string(), str::to_string);
        Ok(tenon_report::check_html(
            &assembly, report, diagnosis, &title,
        ))
    }

    /// The assembly as JSON text (format v1) at its current placements.
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// Runs the kinematics (the file's motions) to `end` in steps of `step` (None: the
    /// file's `simulation` values).
    #[pyo3(signature = (end=None, step=None))]
    fn kinematics(&mut self, py: Python<'_>, end: Option<f64>, step: Option<f64>) -> PyResult<Run> {
        guarded(|| {
            let settings = tenon::RunSettings::for_assembly(self.inner.model(), end, step)
                .map_err(|e| to_py(py, e))?;
            let inner = &mut self.inner;
            let t = py
                .allow_threads(|| inner.kinematics(settings))
                .map_err(|e| to_py(py, e))?;
            let (frames, events) = (t.frame_views(), t.event_sentences());
            Ok(runs::make(&self.inner, &frames, events, t.completed))
        })
    }

    /// Runs the dynamics (gravity, springs, loads, drives) to `end` in steps of `step`
    /// (None: the file's). Raises `InputError` for mass data or rates a run cannot use.
    #[pyo3(signature = (end=None, step=None))]
    fn simulate(&mut self, py: Python<'_>, end: Option<f64>, step: Option<f64>) -> PyResult<Run> {
        guarded(|| {
            let settings = tenon::SimulationSettings::for_assembly(self.inner.model(), end, step)
                .map_err(|e| to_py(py, e))?;
            let inner = &mut self.inner;
            let t = py
                .allow_threads(|| inner.simulate(settings))
                .map_err(|e| to_py(py, e))?;
            let (frames, events) = (t.frame_views(), t.event_sentences());
            Ok(runs::make(&self.inner, &frames, events, t.completed))
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Mechanism({} parts, {} joints)",
            self.inner.model().part_count(),
            self.inner.model().joints().count()
        )
    }
}
