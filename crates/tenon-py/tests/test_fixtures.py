"""Every bundled fixture solved through the module gives the placements `tenon solve
--json` prints for the same file, to 1e-12."""

import json

import pytest

import tenon
from conftest import FIXTURES, cli

FILES = sorted(FIXTURES.glob("*.json")) + sorted((FIXTURES / "dynamics").glob("*.json")) + sorted(
    (FIXTURES / "asmt").glob("*.asmt")
)


def test_there_are_fixtures():
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_placements_equal_the_commands(path):
    m = tenon.Mechanism.open(path)
    report = m.solve()
    o = cli("solve", path, "--json")
    assert o.returncode in (0, 1), o.stderr
    printed = json.loads(o.stdout)
    assert printed["status"] == report.status
    for part, pose in printed["parts"].items():
        position, quaternion = m.placement(part)
        assert position == pytest.approx(pose["position"], abs=1e-12), part
        assert quaternion == pytest.approx(pose["quaternion"], abs=1e-12), part
