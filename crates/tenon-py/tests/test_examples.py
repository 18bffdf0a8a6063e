"""The Python example runs (so it cannot rot) and its piston lands where the formula says."""

import subprocess
import sys

from conftest import ROOT


def test_the_workbench_example_runs():
    o = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "workbench.py")],
                       capture_output=True, text=True, timeout=300)
    assert o.returncode == 0, o.stdout + o.stderr
    assert "solve: solved" in o.stdout and "after a quarter turn" in o.stdout
