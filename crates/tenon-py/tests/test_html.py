"""The HTML view through the module: the same page as `tenon check --html`."""

import json
import re

import pytest

import tenon
from conftest import FIXTURES, cli


def data_of(page):
    """The page's data block, parsed."""
    m = re.search(r'<script type="application/json" id="tenon-data">(.*?)</script>', page, re.S)
    assert m, "the page has no data block"
    return json.loads(m.group(1))


def test_the_page_needs_a_diagnosis_and_then_marks_the_conflict(tmp_path):
    m = tenon.Mechanism.open(str(FIXTURES / "conflicting" / "bent-four-bar.json"))
    with pytest.raises(tenon.InputError, match="diagnose"):
        m.report_html()
    m.diagnose()
    page = m.report_html("bent")
    assert "<title>bent - Tenon</title>" in page
    data = data_of(page)
    assert [j["status"] for j in data["joints"]] == ["conflicting"] * 4
    assert data["conflicts"][0]["violation"] == pytest.approx(1.0, abs=1e-6)

    # The command writes the same data for the same file.
    out = tmp_path / "bent.html"
    cli("check", FIXTURES / "conflicting" / "bent-four-bar.json", "--html", out)
    from_command = data_of(out.read_text())
    data.pop("title")
    from_command.pop("title")
    assert data == from_command
