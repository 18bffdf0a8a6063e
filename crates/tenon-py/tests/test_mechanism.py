"""The Mechanism class: every method, on fixtures and on assemblies built in code."""

import json
import math
import threading

import pytest

import tenon
from conftest import FIXTURES

# A crank-rocker: ground pivots 100 mm apart, crank 30, coupler 90, rocker 80.
D, A, B, C = 100.0, 30.0, 90.0, 80.0


def rocker_angle(crank):
    """The rocker's angle for a crank angle, coupler above the ground line (loop closure)."""
    px, py = A * math.cos(crank), A * math.sin(crank)
    dx, dy = D - px, -py
    e = math.hypot(dx, dy)
    return math.atan2(-dy, -dx) - math.acos((C * C + e * e - B * B) / (2 * C * e))


def flat(placement):
    position, quaternion = placement
    return list(position) + list(quaternion)


def z_angle(q):
    return 2 * math.atan2(q[3], q[0])


def wrap(a):
    return (a + math.pi) % (2 * math.pi) - math.pi


def four_bar(drive=None):
    m = tenon.Mechanism({"length": "mm", "angle": "deg"})
    m.add_part({"id": "ground", "grounded": True,
                "markers": {"o": {}, "d": {"position": [D, 0, 0]}}})
    m.add_part({"id": "crank", "markers": {"o": {}, "t": {"position": [A, 0, 0]}}})
    r0 = rocker_angle(0.0)
    m.add_part({"id": "rocker",
                "placement": {"position": [D, 0, 0],
                              "rotation": {"axis": [0, 0, 1], "angle": math.degrees(r0)}},
                "markers": {"o": {}, "t": {"position": [C, 0, 0]}}})
    tip = (D + C * math.cos(r0) + 1, C * math.sin(r0) - 1)
    m.add_part({"id": "coupler",
                "placement": {"position": [A, 0, 0],
                              "rotation": {"axis": [0, 0, 1],
                                           "angle": math.degrees(math.atan2(tip[1], tip[0] - A))}},
                "markers": {"o": {}}})
    m.add_marker("coupler", "t", (B, 0, 0))
    pivot = {"id": "pivot", "type": "revolute",
             "i": {"part": "crank", "marker": "o"}, "j": {"part": "ground", "marker": "o"}}
    if drive is not None:
        pivot["angle"] = drive
    m.add_joint(pivot)
    m.add_joint(json.dumps({"id": "elbow", "type": "revolute",
                            "i": {"part": "coupler", "marker": "o"},
                            "j": {"part": "crank", "marker": "t"}}))
    m.add_joint({"id": "wrist", "type": "revolute",
                 "i": {"part": "coupler", "marker": "t"}, "j": {"part": "rocker", "marker": "t"}})
    m.add_joint({"id": "rocker-pivot", "type": "revolute",
                 "i": {"part": "rocker", "marker": "o"}, "j": {"part": "ground", "marker": "d"}})
    return m


def test_version_is_a_string():
    assert isinstance(tenon.__version__, str) and tenon.__version__.count(".") == 2


def test_open_and_solve_a_fixture():
    m = tenon.Mechanism.open(FIXTURES / "four-bar.json")
    report = m.solve()
    assert report.converged and report.status == "solved" and bool(report)
    assert report.dof == 1
    assert report.max_residual < 1e-9
    assert [c.status for c in report.clusters] == ["over_constrained"]
    assert set(report.clusters[0].parts) == {"crank", "coupler", "rocker"}
    assert m.parts == ["ground", "crank", "coupler", "rocker"]
    assert "crank-pivot" in m.joints


def test_from_json_text_names_its_source_in_errors():
    text = (FIXTURES / "four-bar.json").read_text()
    m = tenon.Mechanism.from_json(text, "mine.json")
    assert m.solve().converged
    with pytest.raises(tenon.InputError) as e:
        tenon.Mechanism.from_json(text.replace('"revolute"', '"rivet"', 1), "mine.json")
    assert e.value.file == "mine.json" and e.value.place == "joints[0].type"


def test_from_asmt_text():
    text = (FIXTURES / "asmt" / "crank-slider.asmt").read_text()
    m = tenon.Mechanism.from_asmt(text)
    assert m.solve().converged
    assert len(m.parts) >= 3


def test_a_four_bar_built_in_code_solves_to_the_loop_closure():
    m = four_bar(drive=30.0)
    report = m.solve()
    assert report.converged and report.dof == 0
    _, q = m.placement("crank")
    assert abs(z_angle(q) - math.radians(30)) < 1e-9
    p, q = m.placement("rocker")
    assert abs(p[0] - D) < 1e-9 and abs(p[1]) < 1e-9
    assert abs(wrap(z_angle(q) - rocker_angle(math.radians(30)))) < 1e-9
    assert repr(m) == "Mechanism(4 parts, 4 joints)"


def test_placements_in_and_out():
    m = four_bar()
    m.solve()
    m.set_placement("ground", (5.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    assert m.solve().converged
    p, _ = m.placement("rocker")
    assert abs(p[0] - (D + 5.0)) < 1e-9
    # Quaternions need not be unit; they come back unit.
    m.set_placement("crank", (5.0, 0.0, 0.0), (2.0, 0.0, 0.0, 0.0))
    _, q = m.placement("crank")
    assert abs(sum(x * x for x in q) - 1.0) < 1e-12


def test_parameters():
    m = tenon.Mechanism.open(FIXTURES / "slider-crank.json")
    assert m.parameters == {"stroke": 60.0}
    assert m.parameter("stroke") == 60.0
    m.set_parameter("stroke", 80.0)
    assert m.parameter("stroke") == 80.0
    assert m.solve().converged


def test_suppressing_a_joint_frees_a_part():
    m = four_bar(drive=30.0)
    assert m.solve().dof == 0
    m.suppress_joint("pivot")
    # The crank, coupler and rocker then hang from the rocker's pivot: a chain of three
    # revolutes.
    assert m.solve().dof == 3
    m.suppress_joint("pivot", False)
    assert m.solve().dof == 0


def test_removing_a_joint():
    m = four_bar(drive=30.0)
    m.remove_joint("wrist")
    assert "wrist" not in m.joints
    # The driven crank with the coupler on it (1), the rocker on its own (1).
    report = m.solve()
    assert report.dof == 2 and len(report.clusters) == 2


def test_the_diagnosis_names_redundant_joints():
    m = tenon.Mechanism.open(FIXTURES / "four-bar.json")
    report = m.diagnose()
    assert report.status == "solved"
    assert report.redundant  # a planar loop of revolutes in 3D repeats equations
    assert set(report.redundant) <= set(m.joints)
    assert report.conflicting == []


def test_the_diagnosis_names_conflicting_joints():
    m = tenon.Mechanism({"length": "mm"})
    m.add_part({"id": "ground", "grounded": True,
                "markers": {"o": {}, "far": {"position": [300, 0, 0]}}})
    m.add_part({"id": "bar", "markers": {"o": {}, "tip": {"position": [100, 0, 0]}}})
    m.add_joint({"id": "pin", "type": "revolute",
                 "i": {"part": "bar", "marker": "o"}, "j": {"part": "ground", "marker": "o"}})
    m.add_joint({"id": "reach", "type": "distance", "distance": 50,
                 "i": {"part": "bar", "marker": "tip"}, "j": {"part": "ground", "marker": "far"}})
    assert not m.solve().converged
    report = m.diagnose()
    assert report.status == "failed"
    assert sorted(report.conflicting) == ["pin", "reach"]
    assert report.clusters[0].status == "conflicting"


def test_the_report_json_is_the_spec_document():
    m = tenon.Mechanism.open(FIXTURES / "four-bar.json")
    with pytest.raises(tenon.InputError):
        m.report_json()
    m.solve()
    solved = json.loads(m.report_json())
    assert solved["status"] == "solved" and "crank" in solved["parts"]
    m.diagnose()
    checked = json.loads(m.report_json())
    assert {"free_motions", "clusters", "dof"} <= set(checked)


def test_dragging_the_crank_a_full_turn_never_flips():
    m = four_bar()
    m.solve()
    m.drag_begin(["crank"])
    previous = None
    for k in range(1, 361):
        angle = math.radians(k)
        report = m.drag_step("crank", (0.0, 0.0, 0.0), (math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)))
        assert report.converged and not report.flipped
        _, q = m.placement("rocker")
        rocker = z_angle(q)
        assert abs(wrap(rocker - rocker_angle(angle))) < 1e-6, k
        if previous is not None:
            assert abs(wrap(rocker - previous)) < 0.05
        previous = rocker
    m.drag_end()


def test_drag_steps_need_a_drag_begun_with_that_part():
    m = four_bar()
    m.solve()
    with pytest.raises(tenon.InputError):
        m.drag_step("crank", (0, 0, 0), (1, 0, 0, 0))
    m.drag_begin(["crank"])
    with pytest.raises(tenon.InputError):
        m.drag_step("rocker", (0, 0, 0), (1, 0, 0, 0))
    with pytest.raises(tenon.InputError):
        m.drag_begin(["ground"])
    with pytest.raises(tenon.UnknownNameError):
        m.drag_begin(["nope"])
    m.drag_end()
    with pytest.raises(tenon.InputError):
        m.drag_end()


def test_a_single_drag_reports_and_a_locked_crank_stays():
    m = four_bar(drive=30.0)
    m.solve()
    before = m.placement("crank")
    report = m.drag("crank", (0.0, 0.0, 0.0), (math.cos(0.5), 0.0, 0.0, math.sin(0.5)))
    assert isinstance(report, tenon.Report)
    assert flat(m.placement("crank")) == pytest.approx(flat(before), abs=1e-9) or not report.converged


def test_to_json_reads_back():
    m = four_bar(drive=30.0)
    m.solve()
    again = tenon.Mechanism.from_json(m.to_json())
    assert again.solve().converged
    assert flat(again.placement("rocker")) == pytest.approx(flat(m.placement("rocker")), abs=1e-12)


def test_solves_release_the_gil():
    # Four solves on four threads at once (each its own mechanism) all finish.
    results = []

    def work():
        m = tenon.Mechanism.open(FIXTURES / "robot-arm.json")
        results.append(m.solve().converged)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [True] * 4
