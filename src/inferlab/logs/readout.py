"""The model objects ``analyze_log`` and the detectors read out of a ``LogState``."""

from __future__ import annotations

from inferlab.logs.model import Milestone, OomEvent, UntunedGemm, UntunedMoe
from inferlab.logs.state import LogState

__all__ = ["milestone_list", "ooms", "untuned_gemms", "untuned_moes"]


def milestone_list(st: LogState) -> list[Milestone]:
    return sorted(st.milestones.values(), key=lambda m: m.line)


def ooms(st: LogState) -> list[OomEvent]:
    return [
        OomEvent(o.where, o.where_from, tuple(o.lines), o.message, o.asked, o.free, o.total, o.gpu)
        for o in st.ooms
    ]


def untuned_gemms(st: LogState) -> list[UntunedGemm]:
    """Default-config FP8 GEMM shapes, first-seen order, minus shapes proven tuned."""
    return [
        UntunedGemm(k[0], k[1], k[2], k[3], k[4], tuple(s.lines), s.extra.get("dir"))
        for k, s in st.gemms.items()
        if k not in st.tuned_gemms
    ]


def untuned_moes(st: LogState) -> list[UntunedMoe]:
    """Untuned fused-MoE shapes, first-seen order, minus shapes proven tuned."""
    out = []
    for k, s in st.moes.items():
        if k[:5] in st.tuned_moes and k[5] == "default":
            continue
        out.append(
            UntunedMoe(
                e=k[0],
                n=k[1],
                device=k[2],
                dtype=k[3],
                lines=tuple(s.lines),
                block_shape=k[4],
                reason=k[5],
                triton_version=s.extra.get("triton_version"),
            )
        )
    return out
