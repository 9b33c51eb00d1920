"""Detectors of failures: CUDA OOM (during graph capture or elsewhere), a failed CUDA-graph
capture, NCCL errors and timeouts, and the fatal line the launch died of."""

from __future__ import annotations

from typing import Any

from inferlab.engines import OomAdvice, specs
from inferlab.logs.detectors.registry import detector
from inferlab.logs.model import ENGINES, Finding
from inferlab.logs.readout import ooms
from inferlab.logs.state import LogState

__all__: list[str] = []


_WHERE = {
    "graph-capture": "during CUDA-graph capture",
    "weight-loading": "while loading weights",
    "kv-cache": "while allocating the KV cache",
    "sampler-warmup": "during the sampler warm-up",
    "warm-up": "during warm-up",
    "serving": "while serving",
    "unknown": "at an unknown step",
}


def _advices() -> dict[str, OomAdvice]:
    """Engine → its OOM advice (``EngineSpec.oom``), in registry order."""
    return {s.name: s.oom for s in specs() if s.oom is not None}


def _mem_flag(st: LogState) -> tuple[OomAdvice, float] | None:
    """The first engine's memory-share flag the log shows, with its value."""
    for a in _advices().values():
        if a.memory_flag in st.flags:
            try:
                return a, float(st.flags[a.memory_flag]["value"])
            except ValueError:
                continue
    return None


def _amounts(o: Any) -> str:
    if o.asked is None:
        return ""
    parts = [f"asked {o.asked}"]
    if o.free is not None:
        parts.append(f"{o.free} free")
    if o.total is not None:
        parts.append(f"total {o.total}" + (f" on GPU {o.gpu}" if o.gpu is not None else ""))
    return f" ({', '.join(parts)})"


def _oom_evidence(st: LogState, o: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "lines": list(o.lines),
        "where": o.where,
        "where_from": o.where_from,
        "asked": o.asked,
        "free": o.free,
        "total": o.total,
        "gpu": o.gpu,
        "error": o.message,
    }
    if st.remedies:
        ev["engine_remedies"] = st.remedies
        ev["engine_remedies_line"] = st.remedies_line
    mf = _mem_flag(st)
    if mf:
        name = mf[0].memory_flag
        ev[name] = mf[1]
        ev[name + "_line"] = st.flags[name]["line"]
    return ev


@detector("oom-graph-capture")
def _oom_capture(st: LogState) -> list[Finding]:
    out = []
    for o in ooms(st):
        if o.where != "graph-capture":
            continue
        at, act = _capture_advice(st)
        out.append(
            Finding(
                "oom-graph-capture",
                "error",
                f"OOM during CUDA-graph capture{at}{_amounts(o)}: {act}",
                _oom_evidence(st, o),
                act[0].upper() + act[1:],
            )
        )
    return out


def _capture_advice(st: LogState) -> tuple[str, str]:
    """(" at FLAG VALUE", what to do) for an OOM during CUDA-graph capture: from the memory
    flag the log shows, else the detected engine's advice, else the first engine's."""
    mf = _mem_flag(st)
    if mf:
        a, value = mf
        return f" at {a.memory_cli} {value:.2f}", (
            f"lower it (e.g. {max(0.05, value - a.step):.2f}) {a.capture_more}"
        )
    advices = _advices()
    first = advices.get(st.detected or "") or next(iter(advices.values()), None)
    return "", first.capture_no_flag if first else "leave more memory for the CUDA-graph capture"


_OOM_ACTION = {
    "weight-loading": "the weights do not fit: more tensor parallelism, a quantized "
    "checkpoint, or a GPU with more memory",
    "kv-cache": "too little memory is left for the KV cache: raise --mem-fraction-static / "
    "--gpu-memory-utilization, or lower the context length (--max-model-len / "
    "--context-length)",
    "sampler-warmup": "lower --max-num-seqs or --gpu-memory-utilization (vLLM's own advice)",
    "warm-up": "lower --gpu-memory-utilization / --mem-fraction-static or the batch caps "
    "(--max-num-seqs / --max-running-requests)",
    "serving": "leave more headroom: lower --mem-fraction-static / --gpu-memory-utilization, "
    "or the batch caps (--max-num-seqs / --max-running-requests, --chunked-prefill-size)",
    "unknown": "read the lines before the error for the step that failed; leave more headroom "
    "(--mem-fraction-static / --gpu-memory-utilization)",
}


@detector("oom")
def _oom_other(st: LogState) -> list[Finding]:
    out = []
    for o in ooms(st):
        if o.where == "graph-capture":
            continue
        mf = _mem_flag(st)
        at = f" at {mf[0].memory_flag.replace('_', '-')} {mf[1]:.2f}" if mf else ""
        out.append(
            Finding(
                "oom",
                "error",
                f"CUDA out of memory {_WHERE.get(o.where, o.where)}{at}{_amounts(o)}",
                _oom_evidence(st, o),
                _OOM_ACTION.get(o.where, _OOM_ACTION["unknown"]),
            )
        )
    return out


@detector("graph-capture-failed")
def _capture_failed(st: LogState) -> list[Finding]:
    if not st.capture_failures:
        return _capture_traceback(st)
    if any(o.where == "graph-capture" for o in st.ooms):
        return []
    reason = next((r for _, r in st.capture_failures if r), "")
    ev: dict[str, Any] = {
        "lines": [ln for ln, _ in st.capture_failures][:20],
        "reason": reason or None,
    }
    if st.remedies:
        ev["engine_remedies"] = st.remedies
        ev["engine_remedies_line"] = st.remedies_line
    return [
        Finding(
            "graph-capture-failed",
            "error",
            "CUDA-graph capture failed"
            + (f": {reason}" if reason else " (the cause is not in the log)"),
            ev,
            "; ".join(st.remedies[:2])
            if st.remedies
            else "lower --mem-fraction-static or --cuda-graph-max-bs; --disable-cuda-graph "
            "to confirm the cause",
        )
    ]


def _capture_traceback(st: LogState) -> list[Finding]:
    """A traceback after a capture began and never ended, that nothing more specific (an OOM,
    NCCL, the engine's own failure signatures) explains."""
    tb = st.capture_traceback
    if tb is None or st.ooms or st.nccl_errors or st.nccl_timeouts or st.launch_failure:
        return []
    fr, exc = tb["last_frame"], tb["exception"]
    where = ""
    if fr is not None:
        where = f"; last frame {fr['file'].rsplit('/', 1)[-1]}:{fr['lineno']}, {fr['function']}"
        where += f': "{fr["code"]}"' if fr["code"] else ""
    cause = f": {exc['text']}" if exc else "; the log ends before its cause"
    lines = [tb["capture_line"], tb["traceback_line"]]
    lines += [x["line"] for x in (fr, exc) if x is not None]
    return [
        Finding(
            "graph-capture-failed",
            "error",
            f"an exception during CUDA-graph capture{cause} (traceback at line "
            f"{tb['traceback_line']}{where})",
            {
                "lines": lines,
                "capture_line": tb["capture_line"],
                "traceback_line": tb["traceback_line"],
                "last_frame": fr,
                "exception": exc,
                "reason": exc["text"] if exc else None,
            },
            "keep the whole launch log (the exception that stopped the capture is "
            + ("in it" if exc else "cut off")
            + "); --disable-cuda-graph (SGLang) / --enforce-eager (vLLM) tells whether the "
            "capture is what fails; lower --cuda-graph-max-bs / the capture sizes if it is",
        )
    ]


@detector("nccl-error")
def _nccl_error(st: LogState) -> list[Finding]:
    if not st.nccl_errors and not st.nccl_warns:
        return []
    lines = sorted({ln for v in (*st.nccl_errors.values(), *st.nccl_warns.values()) for ln in v})
    errs = list(st.nccl_errors)
    msg = (
        f"NCCL error: {errs[0]}" + (f" (+{len(errs) - 1} other)" if len(errs) > 1 else "")
        if errs
        else f"NCCL warning: {next(iter(st.nccl_warns))}"
    )
    return [
        Finding(
            "nccl-error",
            "error" if errs else "warning",
            msg,
            {"lines": lines[:20], "errors": st.nccl_errors, "warnings": st.nccl_warns},
            "rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) to see the failing "
            "transport; check that every rank started and that the nodes reach each other on "
            "the chosen interface (NCCL_SOCKET_IFNAME)",
        )
    ]


@detector("nccl-timeout")
def _nccl_timeout(st: LogState) -> list[Finding]:
    if not st.nccl_timeouts:
        return []
    t = st.nccl_timeouts[0]
    ranks = sorted({x["rank"] for x in st.nccl_timeouts if x["rank"] is not None})
    op = t["op"] or "a collective"
    detail = ""
    if t["ran_ms"] is not None:
        detail = f" after {t['ran_ms'] / 1000:.0f} s (timeout {t['timeout_ms'] / 1000:.0f} s)"
    return [
        Finding(
            "nccl-timeout",
            "error",
            f"NCCL watchdog: {op} (SeqNum {t['seq']}) timed out{detail}"
            + (f" on rank {', '.join(map(str, ranks))}" if ranks else ""),
            {"lines": [x["line"] for x in st.nccl_timeouts][:20], "timeouts": st.nccl_timeouts},
            "a peer rank stalled or died before the collective: find the first error on the "
            "other ranks/nodes; check the network (NCCL_DEBUG=INFO, NCCL_SOCKET_IFNAME, "
            "NCCL_IB_HCA); raise the timeout only when a long first step is expected",
        )
    ]


_COVERED = ("oom", "cuda_oom", "nccl", "capture")


@detector("launch-failure")
def _launch_failure(st: LogState) -> list[Finding]:
    """The fatal line at the log's end, classified by the engine's own signatures (the same
    ones ``inferlab up`` uses), unless an OOM/NCCL/capture finding already explains it."""
    lf = st.launch_failure
    if lf is None:
        return []
    engine, kind, line, text, remedy = lf
    explained = st.ooms or st.nccl_errors or st.nccl_timeouts or st.capture_failures
    if explained and any(c in kind for c in _COVERED):
        return []
    short = text if len(text) <= 160 else text[:157] + "..."
    return [
        Finding(
            "launch-failure",
            "error",
            f"{ENGINES.get(engine, engine)} failed: {kind.replace('_', ' ')} "
            f"(line {line}: {short})",
            {"lines": [line], "signature": kind, "engine": engine, "text": text},
            remedy or None,
        )
    ]
