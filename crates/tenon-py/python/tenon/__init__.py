"""Tenon, a parametric assembly solver for CAD.

    import tenon
    m = tenon.Mechanism.open("four-bar.json")
    report = m.solve()
    position, quaternion = m.placement("crank")

Build in code with ``tenon.Mechanism(units)`` and ``add_part`` / ``add_marker`` /
``add_joint`` (dicts in the file format's shape); diagnose with ``diagnose()``; drag
with ``drag_begin`` / ``drag_step`` / ``drag_end``; run with ``kinematics()`` and
``simulate()`` (numpy arrays). Errors: ``InputError`` (``file``, ``place``,
``message``), its subclass ``UnknownNameError`` (``name``), ``SolveError`` and
``InternalError``, all ``TenonError``. See docs/api.md.
"""

from ._tenon import (  # noqa: F401
    Cluster,
    InputError,
    InternalError,
    Mechanism,
    Report,
    Run,
    SolveError,
    TenonError,
    UnknownNameError,
    __version__,
)

__all__ = [
    "Cluster",
    "InputError",
    "InternalError",
    "Mechanism",
    "Report",
    "Run",
    "SolveError",
    "TenonError",
    "UnknownNameError",
    "__version__",
]
