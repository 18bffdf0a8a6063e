"""Tenon assembly files for the dynamics comparisons (written, not read by tests).

`chain(n)`: a planar pendulum chain of n uniform rods (0.1 m, 0.1 kg each), pinned at
the origin, laid out straight along +x, released at rest under g = 9.81 (-y).
"""
import json


def rod(length, mass):
    i = mass * length * length / 12.0
    return {"mass": mass, "center_of_mass": [length / 2, 0, 0],
            "inertia": [[0, 0, 0], [0, i, 0], [0, 0, i]]}


def chain(n, length=0.1, mass=0.1, end=1.0, step=1e-3):
    parts = [{"id": "ground", "grounded": True, "markers": {"o": {}}}]
    joints = []
    for k in range(n):
        parts.append({"id": f"link{k}", "placement": {"position": [k * length, 0, 0]},
                      "markers": {"a": {}, "b": {"position": [length, 0, 0]}},
                      "mass": rod(length, mass)})
        j = ("ground", "o") if k == 0 else (f"link{k-1}", "b")
        joints.append({"id": f"pin{k}", "type": "revolute",
                       "i": {"part": f"link{k}", "marker": "a"},
                       "j": {"part": j[0], "marker": j[1]}})
    return {"format": "tenon-assembly", "version": 1,
            "name": f"planar pendulum chain of {n} rods",
            "units": {"length": "m", "angle": "rad", "mass": "kg", "time": "s"},
            "parts": parts, "joints": joints, "forces": {"gravity": [0, -9.81, 0]},
            "simulation": {"end": end, "step": step, "output_step": end / 10}}


if __name__ == "__main__":
    import sys
    n = int(sys.argv[1])
    json.dump(chain(n), open(sys.argv[2], "w"), indent=1)
