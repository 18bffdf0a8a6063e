"""Tenon assembly files for the dynamics comparisons (written, not read by tests).

`chain(n)`: a planar pendulum chain of n uniform rods (0.1 m, 0.1 kg each), pinned at
the origin, laid out straight along +x, released at rest under g = 9.81 (-y).
`truss(floors)`: the dynamics issue's mass-spring crane truss (the fixture
`fixtures/dynamics/crane-truss.json`): `python3 tools/dynamics_models.py truss 10 OUT`.
`swing()`: the pendulum energy test (`fixtures/dynamics/pendulum-swing.json`).
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


SI = {"length": "m", "angle": "rad", "mass": "kg", "time": "s"}


def truss(floors, width=1.0, height=1.0, mass=1.0, stiffness=1e4, damping=0.0):
    """A planar tower of `floors` floors in the xy plane: two nodes per floor (x = 0 and
    x = width), 1 kg point masses (a small inertia keeps their turning defined), joined
    by springs along the posts, the floors and both diagonals of each storey; the two
    base nodes are markers on the ground. Gravity -y; released at rest at the springs'
    rest lengths, it sags and oscillates, staying symmetric about x = width / 2."""
    parts = [{"id": "ground", "grounded": True,
              "markers": {"n0l": {}, "n0r": {"position": [width, 0, 0]}}}]
    small = 1e-3 * mass * width * width

    def node(f, side):
        return ("ground", f"n0{side}") if f == 0 else (f"n{f}{side}", "c")

    for f in range(1, floors + 1):
        for side, x in (("l", 0.0), ("r", width)):
            parts.append({"id": f"n{f}{side}",
                          "placement": {"position": [x, f * height, 0]},
                          "markers": {"c": {}},
                          "mass": {"mass": mass,
                                   "inertia": [[small, 0, 0], [0, small, 0],
                                               [0, 0, small]]}})
    springs = []
    diagonal = (width ** 2 + height ** 2) ** 0.5

    def spring(name, a, b, rest):
        springs.append({"id": name, "i": {"part": a[0], "marker": a[1]},
                        "j": {"part": b[0], "marker": b[1]},
                        "stiffness": stiffness, "rest_length": rest,
                        "damping": damping})

    for f in range(1, floors + 1):
        spring(f"post{f}l", node(f, "l"), node(f - 1, "l"), height)
        spring(f"post{f}r", node(f, "r"), node(f - 1, "r"), height)
        spring(f"floor{f}", node(f, "r"), node(f, "l"), width)
        spring(f"diag{f}a", node(f, "r"), node(f - 1, "l"), diagonal)
        spring(f"diag{f}b", node(f, "l"), node(f - 1, "r"), diagonal)
    return {"format": "tenon-assembly", "version": 1,
            "name": f"mass-spring crane truss of {floors} floors: 1 kg nodes, springs "
                    "of 1e4 N/m along posts, floors and diagonals, released at rest",
            "units": SI, "parts": parts, "joints": [],
            "forces": {"gravity": [0, -9.81, 0], "springs": springs},
            "simulation": {"end": 2.0, "step": 1e-3, "output_step": 1e-2}}


def swing():
    """The dynamics issue's pendulum energy test: 1 kg at 1 m on a pin, released at
    rest 0.6 rad from hanging; 2,500 steps of 2e-3."""
    return {"format": "tenon-assembly", "version": 1,
            "name": "pendulum released at 0.6 rad from hanging (L = 1 m, m = 1 kg); "
                    "the part's frame at the pivot, its centre of mass at the bob",
            "units": SI,
            "parts": [{"id": "ground", "grounded": True, "markers": {"pivot": {}}},
                      {"id": "pendulum",
                       "placement": {"position": [0, 0, 0],
                                     "rotation": {"axis": [0, 0, 1],
                                                  "angle": "-pi / 2 + 0.6"}},
                       "markers": {"pin": {}},
                       "mass": {"mass": 1, "center_of_mass": [1, 0, 0],
                                "inertia": [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}}],
            "joints": [{"id": "pin", "type": "revolute",
                        "i": {"part": "pendulum", "marker": "pin"},
                        "j": {"part": "ground", "marker": "pivot"}}],
            "forces": {"gravity": [0, -9.81, 0]},
            "simulation": {"end": 5.0, "step": 2e-3, "output_step": 2e-3}}


if __name__ == "__main__":
    import sys
    if sys.argv[1] == "truss":
        model, out = truss(int(sys.argv[2])), sys.argv[3]
    elif sys.argv[1] == "swing":
        model, out = swing(), sys.argv[2]
    else:
        model, out = chain(int(sys.argv[1])), sys.argv[2]
    with open(out, "w") as f:
        json.dump(model, f, indent=1)
        f.write("\n")
