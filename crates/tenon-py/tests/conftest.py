"""Shared helpers: the repository's root, its fixtures, and the `tenon` command of the
same build (for comparing the module with what the command prints)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "fixtures"


def tenon_command():
    """The `tenon` binary built beside this module (TENON_BIN, else target/debug)."""
    path = Path(os.environ.get("TENON_BIN", ROOT / "target" / "debug" / "tenon"))
    if not path.exists():
        pytest.fail(f"{path} is missing: build it with `cargo build -p tenon-cli` (tools/test-all does)")
    return path


def cli(*args):
    return subprocess.run([str(tenon_command()), *map(str, args)], capture_output=True, text=True)


def malformed_cases():
    """The shared malformed-input cases (tests/malformed/cases.json), as (name, text)."""
    cases = json.loads((ROOT / "tests" / "malformed" / "cases.json").read_text())
    out = []
    for k, case in enumerate(cases):
        base = case["base"]
        text = (ROOT / base).read_text()
        assert case["from"] in text, case
        extension = "asmt" if base.endswith(".asmt") else "json"
        out.append((f"bad{k:02}.{extension}", text.replace(case["from"], case["to"], 1), case["place"]))
    return out
