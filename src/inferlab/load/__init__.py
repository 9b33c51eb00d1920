"""The load generator: workloads, load points, the measuring client and its results."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.load.bench import JsonlSink, plan_points, run_bench
    from inferlab.load.detect import detect_engine
    from inferlab.load.endpoint import Endpoint
    from inferlab.load.results import (
        BenchEvents,
        BenchResult,
        BenchWarning,
        LoadPoint,
        PointResult,
        ResultSink,
    )

__all__ = [
    "BenchEvents",
    "BenchResult",
    "BenchWarning",
    "Endpoint",
    "JsonlSink",
    "LoadPoint",
    "PointResult",
    "ResultSink",
    "detect_engine",
    "plan_points",
    "run_bench",
]

__getattr__ = lazy_face(
    __name__,
    {
        "inferlab.load.bench": ("JsonlSink", "plan_points", "run_bench"),
        "inferlab.load.detect": ("detect_engine",),
        "inferlab.load.endpoint": ("Endpoint",),
        "inferlab.load.results": (
            "BenchEvents",
            "BenchResult",
            "BenchWarning",
            "LoadPoint",
            "PointResult",
            "ResultSink",
        ),
    },
)
