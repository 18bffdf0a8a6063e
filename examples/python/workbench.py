"""A workbench's use of Tenon from Python: build a slider-crank in code, solve it, read
the placements, change the crank's length, drag the crank round, and diagnose. Run by
the Python tests (crates/tenon-py/tests/test_examples.py), so it stays working.

    python examples/python/workbench.py
"""

import math

import tenon


def build():
    """A slider-crank in millimetres: crank 40, rod 120, the piston sliding along x."""
    m = tenon.Mechanism({"length": "mm", "angle": "deg"})
    m.add_part({"id": "ground", "grounded": True,
                "markers": {"o": {}, "bore": {"rotation": {"axis": [0, 1, 0], "angle": 90}}}})
    m.add_part({"id": "crank", "markers": {"o": {}, "pin": {"position": [40, 0, 0]}}})
    m.add_part({"id": "rod", "placement": {"position": [40, 0, 0]},
                "markers": {"big": {}, "small": {"position": [120, 0, 0]}}})
    m.add_part({"id": "piston", "placement": {"position": [160, 0, 0]},
                "markers": {"pin": {}, "bore": {"rotation": {"axis": [0, 1, 0], "angle": 90}}}})
    joints = [
        ("main", "revolute", ("crank", "o"), ("ground", "o")),
        ("big-end", "revolute", ("rod", "big"), ("crank", "pin")),
        ("gudgeon", "revolute", ("rod", "small"), ("piston", "pin")),
        ("bore", "slider", ("piston", "bore"), ("ground", "bore")),
    ]
    for name, kind, i, j in joints:
        m.add_joint({"id": name, "type": kind,
                     "i": {"part": i[0], "marker": i[1]}, "j": {"part": j[0], "marker": j[1]}})
    return m


def show(m, title):
    print(title)
    for part in ("crank", "piston"):
        (x, y, _), q = m.placement(part)
        print(f"  {part:7s} at ({x:8.3f}, {y:8.3f}), turned {math.degrees(2 * math.atan2(q[3], q[0])):7.2f} deg")


def main():
    m = build()
    report = m.solve()
    print(f"solve: {report.status}, {report.dof} degree(s) of freedom left")
    show(m, "assembled:")

    m.drag_begin(["crank"])
    for k in range(1, 91):
        a = math.radians(k)
        m.drag_step("crank", (0.0, 0.0, 0.0), (math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)))
    m.drag_end()
    show(m, "after a quarter turn of the crank:")
    (x, _, _), _ = m.placement("piston")
    expected = math.sqrt(120**2 - 40**2)  # crank at 90 degrees
    print(f"  piston at {x:.6f}, the formula says {expected:.6f}")

    diagnosis = m.diagnose()
    print(f"diagnosis: {diagnosis.status}; redundant joints: {diagnosis.redundant or 'none'}")
    try:
        m.set_parameter("crank_length", 50.0)
    except tenon.UnknownNameError as e:
        print(f"as expected: {e}")
    return abs(x - expected)


if __name__ == "__main__":
    error = main()
    raise SystemExit(0 if error < 1e-6 else 1)
