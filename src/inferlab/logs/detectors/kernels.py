"""Detectors of kernels running untuned (FP8 GEMM, fused MoE) and of the engine's own
performance advice."""

from __future__ import annotations

from typing import Any

from inferlab.engines import specs
from inferlab.logs.detectors.registry import detector, listing
from inferlab.logs.formats import tables
from inferlab.logs.model import ENGINES, Finding
from inferlab.logs.readout import untuned_gemms, untuned_moes
from inferlab.logs.state import LogState

__all__: list[str] = []


@detector("untuned-fp8-gemm")
def _untuned_fp8(st: LogState) -> list[Finding]:
    by_dev: dict[str, list[Any]] = {}
    for g in untuned_gemms(st):
        by_dev.setdefault(g.device, []).append(g)
    out = []
    for dev, gs in by_dev.items():
        n = len(gs)
        where = next((g.dir for g in gs if g.dir), None)
        read_by = releases_reading(where) if where else None
        out.append(
            Finding(
                "untuned-fp8-gemm",
                "warning",
                f"{n} FP8 GEMM shape{'s' if n != 1 else ''} use{'s' if n == 1 else ''} the "
                f"default Triton config on {dev}: "
                + listing([f"N={g.n},K={g.k}" for g in gs])
                + (f"; looked in {where}" if where else "")
                + (f" (the directory of {read_by})" if read_by else ""),
                {
                    "lines": sorted({g.lines[0] for g in gs})[:20],
                    "device": dev,
                    "config_dir": where,
                    "read_by": read_by,
                    "shapes": [
                        {
                            "n": g.n,
                            "k": g.k,
                            "dtype": g.dtype,
                            "block_shape": list(g.block_shape) if g.block_shape else None,
                            "lines": list(g.lines),
                        }
                        for g in gs
                    ],
                    "tuned_elsewhere": len(st.tuned_gemms),
                },
                f"inferlab tune fp8-gemm --from-log {st.path}",
            )
        )
    return out


def releases_reading(path: str) -> str | None:
    """Which engine releases read FP8 GEMM configs from ``path`` (``SGLang 0.5.16–0.5.20``),
    from the engines' per-release directory tables; None when no table holds it."""
    for spec in specs():
        for d in spec.config_dirs:
            got = d.releases_of(path) if d.kind == "fp8_gemm" else None
            if got:
                return f"{spec.logs.display if spec.logs else spec.name} {got}"
    return None


_MOE_WHY = {
    "default": ("use{s} the default fused-MoE config", "warning"),
    "down": ("ha{ve} no tuned down-projection (_down) config", "warning"),
    "fallback": ("use{s} a config tuned for another Triton version", "info"),
}


@detector("untuned-moe")
def _untuned_moe(st: LogState) -> list[Finding]:
    groups: dict[tuple[str, str], list[Any]] = {}
    for m in untuned_moes(st):
        groups.setdefault((m.reason, m.device), []).append(m)
    out = []
    for (reason, dev), ms in groups.items():
        n = len(ms)
        what, sev = _MOE_WHY[reason]
        what = what.format(s="s" if n == 1 else "", ve="s" if n == 1 else "ve")
        extra = ""
        if reason == "fallback" and ms[0].triton_version:
            extra = f" ({ms[0].triton_version})"
        shapes = [f"E={m.e},N={m.n}" + (f",{m.dtype}" if m.dtype else "") for m in ms]
        out.append(
            Finding(
                "untuned-moe",
                sev,  # type: ignore[arg-type]
                f"{n} fused-MoE shape{'s' if n != 1 else ''} {what}{extra} on {dev}: "
                + listing(shapes),
                {
                    "lines": sorted({m.lines[0] for m in ms})[:20],
                    "device": dev,
                    "reason": reason,
                    "shapes": [
                        {"e": m.e, "n": m.n, "dtype": m.dtype, "lines": list(m.lines)} for m in ms
                    ],
                },
                "tune the fused-MoE kernel for these shapes on this GPU (SGLang: "
                "benchmark/kernels/fused_moe_triton; vLLM: benchmarks/kernels/benchmark_moe.py "
                "--tune) and put the JSON in the engine's configs directory",
            )
        )
    return out


@detector("perf-advice")
def _advice(st: LogState) -> list[Finding]:
    out = []
    for a in tables().advice:
        lines = st.advice.get(a.name)
        if not lines:
            continue
        vals = st.advice_values.get(a.name, {})
        out.append(
            Finding(
                "perf-advice",
                a.severity,  # type: ignore[arg-type]
                f"{a.message.format(**vals)} (said {len(lines)}×)"
                if len(lines) > 1
                else a.message.format(**vals),
                {"lines": lines, "advice": a.name, "env": a.env, "engine": ENGINES[a.engine]},
                a.action,
            )
        )
    return out
