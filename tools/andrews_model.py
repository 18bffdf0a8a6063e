"""Andrews' squeezing mechanism (Hairer & Wanner; the IVP test set's "andrews") as a
Tenon assembly file: `python3 tools/andrews_model.py fixtures/dynamics/andrews.json`.

Seven bodies in the plane, ten revolute joints about z (so the closed loops carry
redundant out-of-plane rows in 3D), a spring from the fixed point C to body 3, the motor
torque on body 1, no gravity. Each part's frame sits at its pivot (or at its hinge to the
body it hangs from) turned by its absolute angle, so the test set's angles are

    beta = a1, Theta = a2 - a1, gamma = a3, Phi = a4 - a5, delta = a5,
    Omega = a6 - a7, epsilon = a7

with `a_k` the angle of part k about z. Body-fixed points follow the test set's
constraint and mass-matrix formulas (and the centres of mass of Gekeler's drawing of it).
"""
import json
import math
import sys

m = [.04325, .00365, .02373, .00706, .07050, .00706, .05498]
inertia = [2.194e-6, 4.410e-7, 5.255e-6, 5.667e-7, 1.169e-5, 5.667e-7, 1.912e-5]
xa, ya, xb, yb, xc, yc = -.06934, -.00227, -.03635, .03273, .014, .072
c0, l0, mom = 4530.0, 7785e-5, 33e-3
d, da, e, ea, rr, ra = 28e-3, 115e-4, 2e-2, 1421e-5, 7e-3, 92e-5
ss, sa, sb, sc, sd = 35e-3, 1874e-5, 1043e-5, 18e-3, 2e-2
ta, tb, u, ua, ub = 2308e-5, 916e-5, 4e-2, 1228e-5, 449e-5
zf, zt, fa = 2e-2, 4e-2, 1421e-5

# The test set's consistent initial values.
beta, theta = -0.0617138900142764496, 0.0
gamma, phi = 0.455279819163070380, 0.222668390165885885
delta, omega, epsilon = 0.487364979543842550, -0.222668390165885885, 1.23054744454982119


def rotate(a, p):
    c, s = math.cos(a), math.sin(a)
    return [c * p[0] - s * p[1], s * p[0] + c * p[1]]


def add(p, q):
    return [p[0] + q[0], p[1] + q[1]]


# (id, absolute angle, origin, local points, centre of mass)
a1, a2, a3 = beta, beta + theta, gamma
a5, a4 = delta, phi + delta
a7, a6 = epsilon, omega + epsilon
p_hinge = rotate(a1, [rr, 0])           # body 1 - body 2
h45 = add([xa, ya], rotate(a5, [zt, 0]))  # body 5 - body 4
h67 = add([xa, ya], rotate(a7, [0, -u]))  # body 7 - body 6
bodies = [
    ("body1", a1, [0.0, 0.0], {"o": [0, 0], "p": [rr, 0]}, [ra, 0]),
    ("body2", a2, p_hinge, {"p": [0, 0], "e": [-d, 0]}, [-da, 0]),
    ("body3", a3, [xb, yb], {"b": [0, 0], "e": [0, -ss], "spring": [sd, -sc]}, [sb, -sa]),
    ("body4", a4, h45, {"h": [0, 0], "e": [0, -e]}, [0, -(e - ea)]),
    ("body5", a5, [xa, ya], {"a": [0, 0], "h": [zt, 0]}, [ta, tb]),
    ("body6", a6, h67, {"h": [0, 0], "e": [zf, 0]}, [zf - fa, 0]),
    ("body7", a7, [xa, ya], {"a": [0, 0], "h": [0, -u]}, [-ub, -ua]),
]


def marker(p):
    return {"position": [p[0], p[1], 0.0]}


parts = [{"id": "ground", "grounded": True, "markers": {
    "o": marker([0, 0]), "a": marker([xa, ya]), "b": marker([xb, yb]),
    "c": marker([xc, yc])}}]
for k, (name, angle, origin, points, com) in enumerate(bodies):
    i = inertia[k]
    parts.append({
        "id": name,
        "placement": {"position": [origin[0], origin[1], 0.0],
                      "rotation": {"axis": [0, 0, 1], "angle": angle}},
        "markers": {key: marker(p) for key, p in points.items()},
        "mass": {"mass": m[k], "center_of_mass": [com[0], com[1], 0.0],
                 "inertia": [[i, 0, 0], [0, i, 0], [0, 0, i]]},
    })


def revolute(name, i, j):
    return {"id": name, "type": "revolute",
            "i": {"part": i[0], "marker": i[1]}, "j": {"part": j[0], "marker": j[1]}}


# Marker i on the part whose angle is measured from marker j's part.
joints = [
    revolute("O", ("body1", "o"), ("ground", "o")),
    revolute("P", ("body2", "p"), ("body1", "p")),
    revolute("B", ("body3", "b"), ("ground", "b")),
    revolute("A5", ("body5", "a"), ("ground", "a")),
    revolute("H45", ("body4", "h"), ("body5", "h")),
    revolute("A7", ("body7", "a"), ("ground", "a")),
    revolute("H67", ("body6", "h"), ("body7", "h")),
    revolute("E3", ("body3", "e"), ("body2", "e")),
    revolute("E4", ("body4", "e"), ("body2", "e")),
    revolute("E6", ("body6", "e"), ("body2", "e")),
]

assembly = {
    "format": "tenon-assembly", "version": 1,
    "name": "Andrews' squeezing mechanism (Hairer & Wanner; IVP test set 'andrews'): "
            "seven bodies, motor torque 0.033 N m on body 1, spring from C to body 3",
    "units": {"length": "m", "angle": "rad", "mass": "kg", "time": "s"},
    "parts": parts, "joints": joints,
    "forces": {
        "gravity": [0, 0, 0],
        "springs": [{"id": "spring", "i": {"part": "body3", "marker": "spring"},
                     "j": {"part": "ground", "marker": "c"},
                     "stiffness": c0, "rest_length": l0}],
        "loads": [{"part": "body1", "torque": [0, 0, mom]}],
    },
    "simulation": {"end": 0.03, "step": 1e-5, "output_step": 1e-3},
}

if __name__ == "__main__":
    with open(sys.argv[1], "w") as out:
        json.dump(assembly, out, indent=1)
        out.write("\n")
