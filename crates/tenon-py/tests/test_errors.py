"""Errors: every exception with its attributes, the shared malformed-input cases giving
the command's own messages, and a panic inside turned into an exception."""

import pytest

import tenon
from conftest import FIXTURES, cli, malformed_cases


def test_every_error_derives_from_tenon_error():
    for kind in (tenon.InputError, tenon.UnknownNameError, tenon.SolveError, tenon.InternalError):
        assert issubclass(kind, tenon.TenonError) and issubclass(kind, Exception)
    assert issubclass(tenon.UnknownNameError, tenon.InputError)


def test_a_missing_file_names_itself(tmp_path):
    path = tmp_path / "missing.json"
    with pytest.raises(tenon.InputError) as e:
        tenon.Mechanism.open(path)
    assert e.value.file == str(path) and e.value.place is None
    assert "cannot read" in str(e.value)


def test_json_syntax_errors_give_line_and_column():
    with pytest.raises(tenon.InputError) as e:
        tenon.Mechanism.from_json('{"format": "tenon-assembly", "vers', "cut.json")
    assert e.value.file == "cut.json"
    assert e.value.place.startswith("line 1, column")
    assert "not valid JSON" in e.value.message


def test_unknown_names_say_which():
    m = tenon.Mechanism.open(FIXTURES / "four-bar.json")
    for call in (lambda: m.placement("nope"), lambda: m.set_parameter("nope", 1.0),
                 lambda: m.parameter("nope"), lambda: m.suppress_joint("nope"),
                 lambda: m.remove_joint("nope")):
        with pytest.raises(tenon.UnknownNameError) as e:
            call()
        assert e.value.name == "nope" and "'nope'" in str(e.value)


def test_an_unknown_joint_type_is_refused_and_nothing_changes():
    m = tenon.Mechanism.open(FIXTURES / "four-bar.json")
    joints = m.joints
    with pytest.raises(tenon.InputError) as e:
        m.add_joint({"id": "x", "type": "rivet", "i": {"part": "crank", "marker": "a"},
                     "j": {"part": "ground", "marker": "o"}})
    assert e.value.place == "joint.type" and "unknown joint type 'rivet'" in e.value.message
    assert m.joints == joints


def test_a_duplicate_part_is_refused():
    m = tenon.Mechanism.open(FIXTURES / "four-bar.json")
    with pytest.raises(tenon.InputError) as e:
        m.add_part({"id": "crank"})
    assert "crank" in str(e.value)


def test_bad_units_and_bad_numbers():
    with pytest.raises(tenon.InputError) as e:
        tenon.Mechanism({"length": "furlong"})
    assert e.value.place == "units.length"
    m = tenon.Mechanism.open(FIXTURES / "four-bar.json")
    with pytest.raises(tenon.InputError):
        m.set_placement("crank", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0))
    with pytest.raises(tenon.InputError):
        m.set_placement("crank", (float("nan"), 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    with pytest.raises(ValueError):  # a wrong length: Python's own error, before Tenon
        m.set_placement("crank", (0.0, 0.0), (1.0, 0.0, 0.0, 0.0))


def test_a_panic_inside_is_an_internal_error_not_an_abort():
    with pytest.raises(tenon.InternalError) as e:
        tenon._tenon._selftest_panic()
    assert "internal error" in str(e.value)
    # The interpreter and other mechanisms carry on.
    assert tenon.Mechanism.open(FIXTURES / "four-bar.json").solve().converged


@pytest.mark.parametrize("name,text,place", malformed_cases(), ids=[c[0] for c in malformed_cases()])
def test_malformed_files_give_the_commands_message(tmp_path, name, text, place):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(tenon.InputError) as e:
        tenon.Mechanism.open(path)
    assert e.value.file == str(path)
    assert str(e.value).startswith(f"{path}: {place}")
    o = cli("solve", path)
    assert o.returncode == 2
    assert o.stderr.strip() == f"tenon: {e.value}"


def test_a_refused_drag_step_is_a_solve_error_and_nothing_moves():
    m = tenon.Mechanism({"length": "mm"})
    m.add_part({"id": "ground", "grounded": True,
                "markers": {"o": {}, "far": {"position": [300, 0, 0]}}})
    m.add_part({"id": "bar", "markers": {"o": {}, "tip": {"position": [100, 0, 0]}}})
    m.add_joint({"id": "pin", "type": "revolute",
                 "i": {"part": "bar", "marker": "o"}, "j": {"part": "ground", "marker": "o"}})
    m.add_joint({"id": "reach", "type": "distance", "distance": 50,
                 "i": {"part": "bar", "marker": "tip"}, "j": {"part": "ground", "marker": "far"}})
    before = m.placement("bar")
    m.drag_begin(["bar"])
    with pytest.raises(tenon.SolveError) as e:
        m.drag_step("bar", (0.0, 0.0, 0.0), (0.9, 0.0, 0.0, 0.1))
    assert "stay where they were" in str(e.value)
    assert m.placement("bar") == before
