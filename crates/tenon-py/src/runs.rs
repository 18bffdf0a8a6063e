//! `Run`: a finished kinematic or dynamic run, its frames as numpy arrays.

use pyo3::prelude::*;
use pyo3::types::PyList;

/// A finished run: times, placements and joint coordinates per frame (numpy arrays,
/// built on first access), its events, and whether it reached its end.
#[pyclass(module = "tenon", frozen)]
#[derive(Debug)]
pub struct Run {
    /// Time per frame.
    pub(crate) times: Vec<f64>,
    /// The moving parts' ids, in the arrays' order.
    pub(crate) parts: Vec<String>,
    /// Per frame, per part: x y z.
    pub(crate) positions: Vec<f64>,
    /// Per frame, per part: w x y z.
    pub(crate) quaternions: Vec<f64>,
    /// The joint coordinates' names (`joint.angle`, `joint.distance`).
    pub(crate) coordinates: Vec<String>,
    /// Per frame, per coordinate.
    pub(crate) values: Vec<f64>,
    /// Per frame, per coordinate.
    pub(crate) rates: Vec<f64>,
    /// (time, sentence).
    pub(crate) events: Vec<(f64, String)>,
    pub(crate) completed: bool,
}

/// `data` as a numpy array of `shape`.
fn array(py: Python<'_>, data: &[f64], shape: Vec<usize>) -> PyResult<PyObject> {
    let numpy = py.import("numpy").map_err(|e| {
        pyo3::exceptions::PyImportError::new_err(format!(
            "runs give numpy arrays: install numpy ({e})"
        ))
    })?;
    let list = PyList::new(py, data)?;
    let a = numpy.call_method1("array", (list,))?;
    Ok(a.call_method1("reshape", (shape,))?.unbind())
}

#[pymethods]
impl Run {
    /// Times, shape (frames,).
    #[getter]
    fn t(&self, py: Python<'_>) -> PyResult<PyObject> {
        array(py, &self.times, vec![self.times.len()])
    }

    /// The moving parts' ids, the order of `positions` and `quaternions`.
    #[getter]
    fn parts(&self) -> Vec<String> {
        self.parts.clone()
    }

    /// Positions, shape (frames, parts, 3).
    #[getter]
    fn positions(&self, py: Python<'_>) -> PyResult<PyObject> {
        array(
            py,
            &self.positions,
            vec![self.times.len(), self.parts.len(), 3],
        )
    }

    /// Quaternions (w x y z), shape (frames, parts, 4).
    #[getter]
    fn quaternions(&self, py: Python<'_>) -> PyResult<PyObject> {
        array(
            py,
            &self.quaternions,
            vec![self.times.len(), self.parts.len(), 4],
        )
    }

    /// The joint coordinates' names (`crank-pivot.angle`), the order of `values` and
    /// `rates`.
    #[getter]
    fn coordinates(&self) -> Vec<String> {
        self.coordinates.clone()
    }

    /// Joint coordinates (file units; angles multi-turn), shape (frames, coordinates).
    #[getter]
    fn values(&self, py: Python<'_>) -> PyResult<PyObject> {
        array(
            py,
            &self.values,
            vec![self.times.len(), self.coordinates.len()],
        )
    }

    /// Their rates, shape (frames, coordinates).
    #[getter]
    fn rates(&self, py: Python<'_>) -> PyResult<PyObject> {
        array(
            py,
            &self.rates,
            vec![self.times.len(), self.coordinates.len()],
        )
    }

    /// Events: (time, sentence).
    #[getter]
    fn events(&self) -> Vec<(f64, String)> {
        self.events.clone()
    }

    /// Whether the run reached its end (else the last event says why it stopped).
    #[getter]
    fn completed(&self) -> bool {
        self.completed
    }

    fn __len__(&self) -> usize {
        self.times.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Run(frames={}, parts={}, completed={})",
            self.times.len(),
            self.parts.len(),
            self.completed
        )
    }
}

/// A run from the facade's frames.
pub(crate) fn make(
    m: &tenon::Mechanism,
    frames: &[tenon::FrameView<'_>],
    events: Vec<(f64, String)>,
    completed: bool,
) -> Run {
    let parts: Vec<String> = frames
        .first()
        .map(|(_, p, _)| {
            p.iter()
                .map(|f| m.part_id(f.part).unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default();
    let coordinates: Vec<String> = frames
        .first()
        .map(|(_, _, j)| {
            j.iter()
                .map(|c| {
                    let which = match c.coordinate {
                        tenon::Coordinate::Angle => "angle",
                        tenon::Coordinate::Distance => "distance",
                    };
                    format!("{}.{which}", m.joint_id(c.joint).unwrap_or("?"))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut run = Run {
        times: Vec::with_capacity(frames.len()),
        parts,
        positions: Vec::new(),
        quaternions: Vec::new(),
        coordinates,
        values: Vec::new(),
        rates: Vec::new(),
        events,
        completed,
    };
    for (t, p, j) in frames {
        run.times.push(*t);
        for f in p.iter() {
            run.positions.extend_from_slice(&f.position);
            run.quaternions.extend_from_slice(&f.quaternion);
        }
        for c in j.iter() {
            run.values.push(c.value);
            run.rates.push(c.rate);
        }
    }
    run
}
