"""Tolerances through the module: the ones a solve judged by, and the geometric
tolerance under which repeated joints that disagree a little are placed."""

import json

import pytest

import tenon
from conftest import FIXTURES

# A bar held twice: fixed at the origin, and its tip asked to be 141.43 from a ground
# point at (0, 100, 0), where it is 141.4214: 0.0086 short.
ALMOST = json.dumps(
    {
        "format": "tenon-assembly",
        "version": 1,
        "parts": [
            {
                "id": "ground",
                "grounded": True,
                "markers": {"o": {}, "far": {"position": [0, 100, 0]}},
            },
            {"id": "bar", "markers": {"o": {}, "tip": {"position": [100, 0, 0]}}},
        ],
        "joints": [
            {
                "id": "fix",
                "type": "fixed",
                "i": {"part": "bar", "marker": "o"},
                "j": {"part": "ground", "marker": "o"},
            },
            {
                "id": "reach",
                "type": "distance",
                "distance": 141.43,
                "i": {"part": "bar", "marker": "tip"},
                "j": {"part": "ground", "marker": "far"},
            },
        ],
    }
)


def test_a_solve_states_its_tolerances():
    m = tenon.Mechanism.from_json(ALMOST)
    report = m.solve()
    assert not report.converged
    assert report.tolerances["length"] == 1e-10
    assert report.tolerances["angle"] == 1e-10
    assert report.tolerances["geometric"] == 1e-10
    assert report.tolerances["reach"] == pytest.approx(100.0)
    assert m.tolerance is None


def test_disagreements_within_the_tolerance_are_placed_and_named():
    m = tenon.Mechanism.from_json(ALMOST)
    m.tolerance = 0.05
    report = m.solve()
    assert report.converged
    assert report.clusters[0].placed
    assert report.clusters[0].status == "over_constrained"
    assert report.tolerances["geometric"] == 0.05
    diagnosis = m.diagnose()
    assert diagnosis.conflicting == []
    assert "reach" in diagnosis.redundant
    [(joints, size)] = diagnosis.disagreements
    assert joints == ["fix", "reach"]
    assert size == pytest.approx(141.43 - 100 * 2**0.5, rel=1e-6)
    report_json = json.loads(m.report_json())
    assert report_json["clusters"][0]["disagreements"][0]["joints"] == ["fix", "reach"]


def test_a_bad_tolerance_is_refused_and_changes_nothing():
    m = tenon.Mechanism.from_json(ALMOST)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(tenon.InputError):
            m.tolerance = bad
    assert m.tolerance is None
    m.tolerance = 0.05
    m.tolerance = None
    assert not m.solve().converged


def test_nearly_repeated_joints_are_named_with_the_condition_estimate():
    m = tenon.Mechanism.open(str(FIXTURES / "conflicting" / "near-duplicate-couplings.json"))
    d = m.diagnose()
    [cluster] = d.clusters
    assert cluster.dof == 1
    assert 1e5 < cluster.condition < 1e8
    assert cluster.nearly_dependent == ["c1", "c2"]
    assert m.solve().clusters[0].condition is None


def test_a_compliant_joint_gives_way_and_says_how_far():
    m = tenon.Mechanism.open(str(FIXTURES / "compliant" / "compliant-carriage.json"))
    report = m.solve()
    assert report.converged
    assert [y[0] for y in report.yielded] == ["strap"]
    assert report.yielded[0][1] == pytest.approx(10.0, abs=1e-9)
    assert m.placement("carriage")[0][0] == pytest.approx(100.0, abs=1e-9)


def test_equilibrium_stretches_a_compliant_joint_and_refuses_a_free_push():
    doc = json.loads((FIXTURES / "compliant" / "compliant-carriage.json").read_text())
    # Only the strap holds the carriage along the rail, pulled 100 mm from the anchor.
    doc["joints"] = [j for j in doc["joints"] if j["id"] != "stop"]
    doc["joints"][1]["compliance"] = 0.002
    doc["parts"][1]["placement"]["position"] = [110, 0, 0]
    doc["forces"] = {"loads": [{"part": "carriage", "force": [-50, 0, 0], "torque": [0, 0, 0]}]}
    m = tenon.Mechanism.from_json(json.dumps(doc))
    report = m.equilibrium()
    assert report.converged
    # Pushed toward the anchor's far side: the strap (to x = 210) stretches by 0.1.
    assert m.placement("carriage")[0][0] == pytest.approx(110.0 - 0.1, abs=1e-9)
    assert report.yielded[0][0] == "strap"
    del doc["joints"][1]
    m = tenon.Mechanism.from_json(json.dumps(doc))
    with pytest.raises(tenon.SolveError, match="no static equilibrium"):
        m.equilibrium()
