"""Tenon against Exudyn on the same dynamics problems, on this machine, in one run.

Needs exudyn (`pip install exudyn` in a venv) and a release build of the `tenon`
command (`cargo build --release -p tenon-cli`). Usage:

    python tools/exudyn_compare.py [path/to/tenon]
    python tools/exudyn_compare.py --instructions [path/to/tenon]

The second form counts instructions instead of timing (valgrind's callgrind; a noisy
machine does not move them): each program runs the problem to its end and for one step,
and the difference is what the steps cost (Exudyn: its solve in-process; Tenon: the
whole process, so its CSV output of the frames counts against it).

Problems (both index-3 generalized-alpha, spectral radius 0.9, fixed step, 2D bodies in
Exudyn, revolutes in 3D in Tenon):
- IFToMM A02 four-bar (N = 2), 10 s at h = 1e-3: B0 at t = 10 s against the reference
  of ../shared/bench/REFERENCES.md, and the maximum energy error.
- A planar pendulum chain of 100 rods (0.1 m, 0.1 kg), 1 s at h = 1e-3: the tip
  against each program's own run at h = 1e-5... (Tenon's at h = 1e-4 is the reference
  for both).
Exudyn's linear solver: its default (dense) for the four-bar, EigenSparse for the chain
(its dense default takes 36 s there). Times: Exudyn's SolveDynamic in-process; Tenon's run as its summary reports it (file
already loaded and assembled) and the whole process.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import exudyn as exu
from exudyn.itemInterface import (NodeRigidBody2D, ObjectRigidBody2D, ObjectGround,
                                  MarkerBodyPosition, MarkerBodyMass, RevoluteJoint2D,
                                  LoadMassProportional)

sys.path.insert(0, os.path.dirname(__file__))
import dynamics_models  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
TENON = ARGS[0] if ARGS and "--exudyn-only" not in sys.argv else os.path.join(
    ROOT, "target", "release", "tenon")
G = 9.81


def exudyn_run(build, end, h, sparse=False):
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    probe = build(mbs)
    mbs.Assemble()
    s = exu.SimulationSettings()
    s.timeIntegration.numberOfSteps = int(round(end / h))
    s.timeIntegration.endTime = end
    s.timeIntegration.generalizedAlpha.spectralRadius = 0.9
    s.timeIntegration.generalizedAlpha.useIndex2Constraints = False
    s.timeIntegration.generalizedAlpha.useNewmark = False
    s.timeIntegration.verboseMode = 0
    s.solutionSettings.writeSolutionToFile = False
    s.solutionSettings.sensorsWritePeriod = 1e9
    if sparse:
        s.linearSolverType = exu.LinearSolverType.EigenSparse
    began = time.perf_counter()
    exu.SolveDynamic(mbs, s, showHints=False, showCausingItems=False)
    took = time.perf_counter() - began
    return took, probe(mbs)


def rod_body(mbs, ground_or_none, x, y, phi, v, omega, length=1.0, mass=1.0):
    inertia = mass * length * length / 12.0
    node = mbs.AddNode(NodeRigidBody2D(referenceCoordinates=[x, y, phi],
                                       initialVelocities=[v[0], v[1], omega]))
    body = mbs.AddObject(ObjectRigidBody2D(physicsMass=mass, physicsInertia=inertia,
                                           nodeNumber=node))
    mm = mbs.AddMarker(MarkerBodyMass(bodyNumber=body))
    mbs.AddLoad(LoadMassProportional(markerNumber=mm, loadVector=[0, -G, 0]))
    return node, body


def four_bar(mbs):
    ground = mbs.AddObject(ObjectGround())
    cranks = []
    for k in range(3):
        # Crank k: from (k, 0) up to (k, 1), turning at -1 rad/s; centre of mass mid-way.
        _, b = rod_body(mbs, ground, k, 0.5, math.pi / 2, [0.5, 0.0], -1.0)
        cranks.append(b)
        mg = mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=[k, 0, 0]))
        mc = mbs.AddMarker(MarkerBodyPosition(bodyNumber=b, localPosition=[-0.5, 0, 0]))
        mbs.AddObject(RevoluteJoint2D(markerNumbers=[mg, mc]))
    couplers = []
    for k in range(2):
        n, b = rod_body(mbs, ground, k + 0.5, 1.0, 0.0, [1.0, 0.0], 0.0)
        couplers.append((n, b))
        for end, crank in ((-0.5, cranks[k]), (0.5, cranks[k + 1])):
            m1 = mbs.AddMarker(MarkerBodyPosition(bodyNumber=b, localPosition=[end, 0, 0]))
            m2 = mbs.AddMarker(MarkerBodyPosition(bodyNumber=crank, localPosition=[0.5, 0, 0]))
            mbs.AddObject(RevoluteJoint2D(markerNumbers=[m1, m2]))
    first = couplers[0][0]

    def probe(mbs):
        q = mbs.GetNodeOutput(first, exu.OutputVariableType.Position)
        phi = mbs.GetNodeOutput(first, exu.OutputVariableType.Rotation)
        phi = float(np.ravel(phi)[-1])
        # B0 is the coupler's left end.
        return (q[0] - 0.5 * math.cos(phi), q[1] - 0.5 * math.sin(phi))
    return probe


def chain_builder(n, length=0.1, mass=0.1):
    def build(mbs):
        ground = mbs.AddObject(ObjectGround())
        last, last_end = ground, [0, 0, 0]
        nodes = []
        for k in range(n):
            node, b = rod_body(mbs, ground, k * length + length / 2, 0, 0, [0, 0], 0,
                               length, mass)
            nodes.append(node)
            m1 = mbs.AddMarker(MarkerBodyPosition(bodyNumber=last, localPosition=last_end))
            m2 = mbs.AddMarker(MarkerBodyPosition(bodyNumber=b, localPosition=[-length / 2, 0, 0]))
            mbs.AddObject(RevoluteJoint2D(markerNumbers=[m1, m2]))
            last, last_end = b, [length / 2, 0, 0]

        def probe(mbs):
            q = mbs.GetNodeOutput(nodes[-1], exu.OutputVariableType.Position)
            phi = float(np.ravel(mbs.GetNodeOutput(nodes[-1], exu.OutputVariableType.Rotation))[-1])
            return (q[0] + length / 2 * math.cos(phi), q[1] + length / 2 * math.sin(phi))
        return probe
    return build


def tenon_run(path, end, h, out_csv):
    began = time.perf_counter()
    r = subprocess.run([TENON, "simulate", path, "--end", str(end), "--step", str(h), "-o", out_csv],
                       capture_output=True, text=True)
    whole = time.perf_counter() - began
    if r.returncode != 0:
        raise SystemExit(f"tenon failed: {r.stderr}")
    run_ms = float(r.stdout.splitlines()[0].split(";")[-1].split("ms")[0])
    with open(out_csv) as f:
        header = f.readline().strip().split(",")
        rows = [line.strip().split(",") for line in f]
    last = dict(zip(header, map(float, rows[-1])))
    return run_ms / 1e3, whole, last, header, rows


def quaternion_angle(row, part):
    return 2 * math.atan2(row[f"{part}.qz"], row[f"{part}.qw"])


def main():
    tmp = tempfile.mkdtemp()
    print(f"exudyn {exu.__version__}; tenon {TENON}")
    # A02.
    fb = os.path.join(ROOT, "fixtures", "dynamics", "four-bar-a02.json")
    ex_t, ex_b0 = exudyn_run(four_bar, 10.0, 1e-3)
    te_t, te_whole, last, _, _ = tenon_run(fb, 10.0, 1e-3, os.path.join(tmp, "fb.csv"))
    te_b0 = (last["coupler0.x"], last["coupler0.y"])
    ref = (0.3284581115, 0.9445185382)
    err = lambda p: math.hypot(p[0] - ref[0], p[1] - ref[1])
    print(f"A02 four-bar, 10 s, h = 1e-3: exudyn {ex_t*1e3:.1f} ms (B0 error {err(ex_b0):.2e}); "
          f"tenon {te_t*1e3:.1f} ms run, {te_whole*1e3:.1f} ms whole process (B0 error {err(te_b0):.2e}); "
          f"ratio {ex_t/te_t:.2f}")
    # 100-link chain.
    n = 100
    path = os.path.join(tmp, "chain.json")
    json.dump(dynamics_models.chain(n), open(path, "w"))
    ex_t, ex_tip = exudyn_run(chain_builder(n), 1.0, 1e-3, sparse=True)
    te_t, te_whole, last, _, _ = tenon_run(path, 1.0, 1e-3, os.path.join(tmp, "c.csv"))
    _, _, ref_last, _, _ = tenon_run(path, 1.0, 1e-4, os.path.join(tmp, "cref.csv"))
    def tip(row):
        a = quaternion_angle(row, f"link{n-1}")
        return (row[f"link{n-1}.x"] + 0.1 * math.cos(a), row[f"link{n-1}.y"] + 0.1 * math.sin(a))
    ref = tip(ref_last)
    te_tip = tip(last)
    err = lambda p: math.hypot(p[0] - ref[0], p[1] - ref[1])
    print(f"chain of {n}, 1 s, h = 1e-3: exudyn {ex_t*1e3:.1f} ms (tip error {err(ex_tip):.2e}); "
          f"tenon {te_t*1e3:.1f} ms run, {te_whole*1e3:.1f} ms whole process (tip error {err(te_tip):.2e}); "
          f"ratio {ex_t/te_t:.2f}  (reference: tenon at h = 1e-4)")


def callgrind(command):
    """Instructions executed by `command` (a list), counted by callgrind."""
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
                       + command, capture_output=True, text=True)
    for line in r.stderr.splitlines():
        if "refs:" in line:
            return int(line.split("refs:")[1].strip().replace(",", ""))
    raise SystemExit(f"callgrind failed on {command}: {r.stderr[-500:]}")


def instructions():
    tmp = tempfile.mkdtemp()
    chain = os.path.join(tmp, "chain.json")
    json.dump(dynamics_models.chain(100), open(chain, "w"))
    problems = [
        ("a02", os.path.join(ROOT, "fixtures", "dynamics", "four-bar-a02.json"), 10.0),
        ("chain", chain, 1.0),
    ]
    h = 1e-3
    for name, path, end in problems:
        ex = [callgrind([sys.executable, __file__, "--exudyn-only", name, str(e)])
              for e in (end, h)]
        te = [callgrind([TENON, "simulate", path, "--end", str(e), "--step", str(h),
                         "-o", os.path.join(tmp, "out.csv")]) for e in (end, h)]
        ex_steps, te_steps = ex[0] - ex[1], te[0] - te[1]
        print(f"{name}, {end} s at h = {h}: exudyn {ex_steps / 1e6:.0f} M instructions, "
              f"tenon {te_steps / 1e6:.0f} M (whole process {te[0] / 1e6:.0f} M); "
              f"ratio {ex_steps / te_steps:.2f}")


def exudyn_only(name, end):
    if name == "a02":
        exudyn_run(four_bar, end, 1e-3)
    else:
        exudyn_run(chain_builder(100), end, 1e-3, sparse=True)


if __name__ == "__main__":
    if "--exudyn-only" in sys.argv:
        exudyn_only(ARGS[0], float(ARGS[1]))
    elif "--instructions" in sys.argv:
        instructions()
    else:
        main()
