"""W8A8 block-FP8 GEMM tuning (``inferlab tune fp8-gemm``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.tune.config import KernelConfig
    from inferlab.tune.report import store_run
    from inferlab.tune.workflow import (
        DEFAULT_OUT,
        Fp8GemmRequest,
        RayTune,
        TuneOutcome,
        tune_fp8_gemm,
    )

__all__ = [
    "DEFAULT_OUT",
    "Fp8GemmRequest",
    "KernelConfig",
    "RayTune",
    "TuneOutcome",
    "store_run",
    "tune_fp8_gemm",
]

__getattr__ = lazy_face(
    __name__,
    {
        "inferlab.tune.config": ("KernelConfig",),
        "inferlab.tune.report": ("store_run",),
        "inferlab.tune.workflow": (
            "DEFAULT_OUT",
            "Fp8GemmRequest",
            "RayTune",
            "TuneOutcome",
            "tune_fp8_gemm",
        ),
    },
)
