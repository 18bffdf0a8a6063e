"""The Python module's overhead: re-solving the 100-part driven assembly after a
parameter change, the same input and loop as `cargo bench -p tenon-capi --bench
overhead` (run that first: it writes target/bench-inputs/four-bars-33-driven.json).

    python crates/tenon-py/bench/overhead.py   # with the module built --release

Prints the median of repeated timings of 200 re-solves, per re-solve.
"""

import statistics
import sys
import time
from pathlib import Path

import tenon

ROOT = Path(__file__).resolve().parents[3]
INPUT = ROOT / "target" / "bench-inputs" / "four-bars-33-driven.json"


def main():
    if not INPUT.exists():
        sys.exit(f"{INPUT} is missing: run `cargo bench -p tenon-capi --bench overhead` first")
    m = tenon.Mechanism.from_json(INPUT.read_text())
    assert m.solve().converged
    toggle = False
    runs = []
    for _ in range(15):
        began = time.perf_counter()
        for _ in range(200):
            toggle = not toggle
            m.set_parameter("crank", 61.0 if toggle else 60.0)
            assert m.solve().converged
        runs.append((time.perf_counter() - began) / 200)
    print(f"resolve_100_parts/python: median {statistics.median(runs) * 1e6:.1f} us "
          f"(min {min(runs) * 1e6:.1f}, max {max(runs) * 1e6:.1f}) per re-solve")


if __name__ == "__main__":
    main()
