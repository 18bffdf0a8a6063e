"""Runs as numpy arrays: kinematics against closed forms, dynamics against energy."""

import math

import numpy
import pytest

import tenon
from conftest import FIXTURES

WHEEL = """{"format": "tenon-assembly", "version": 1,
  "parts": [{"id": "ground", "grounded": true, "markers": {"o": {}}},
            {"id": "wheel", "markers": {"o": {}}}],
  "joints": [{"id": "axle", "type": "revolute", "i": {"part": "wheel", "marker": "o"},
              "j": {"part": "ground", "marker": "o"}}],
  "motions": [{"joint": "axle", "angle": "90 * t"}]}"""


def test_a_kinematic_run_gives_numpy_arrays():
    run = tenon.Mechanism.from_json(WHEEL).kinematics(end=1.0, step=0.1)
    assert run.completed and len(run) == 11 and run.events == []
    assert isinstance(run.t, numpy.ndarray) and run.t.shape == (11,)
    assert run.parts == ["wheel"]
    assert run.positions.shape == (11, 1, 3) and run.quaternions.shape == (11, 1, 4)
    assert run.coordinates == ["axle.angle"]
    assert numpy.allclose(run.values[:, 0], 90.0 * run.t, atol=1e-9)
    assert numpy.allclose(run.rates[:, 0], 90.0, atol=1e-9)
    angles = 2 * numpy.arctan2(run.quaternions[:, 0, 3], run.quaternions[:, 0, 0])
    assert numpy.allclose(angles, numpy.radians(90.0 * run.t), atol=1e-9)


def test_the_slider_crank_run_matches_the_exact_piston_formula():
    m = tenon.Mechanism.open(FIXTURES / "slider-crank.json")
    run = m.kinematics(end=0.5, step=0.01)
    assert run.completed
    k = run.coordinates.index("main-bearing.angle")
    assert numpy.allclose(numpy.diff(run.values[:, k]), 3.6, atol=1e-9)


def test_a_dynamic_run_keeps_its_energy():
    m = tenon.Mechanism.open(FIXTURES / "dynamics" / "pendulum-a01.json")
    run = m.simulate(end=1.0, step=1e-3)
    assert run.completed
    assert run.t[-1] == pytest.approx(1.0)
    # The bob (1 m along the part's x) stays 1 m from the pivot; its height gives the
    # energy: v^2 / 2 + g y = 0 from rest at y = 0.
    q = run.quaternions[:, 0, :]
    angle = 2 * numpy.arctan2(q[:, 3], q[:, 0])
    y = numpy.sin(angle)
    omega = numpy.gradient(angle, run.t)
    energy = 0.5 * omega**2 + 9.81 * y
    assert numpy.max(numpy.abs(energy[5:-5])) < 1e-2


def test_a_run_that_cannot_start_is_an_input_error():
    text = WHEEL.replace('"motions"', '"forces": {"gravity": [0, -9.81, 0]}, "motions"')
    with pytest.raises(tenon.InputError) as e:
        tenon.Mechanism.from_json(text).simulate(end=0.1, step=0.01)
    assert "wheel" in str(e.value) and "mass" in str(e.value)
