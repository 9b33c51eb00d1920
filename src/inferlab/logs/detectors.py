"""Finding detectors: one per kind of finding, registered with ``@detector(kind)``.

A detector reads the parsers' ``LogState`` (and the log's path, for the suggested command) and
returns its findings; detectors run in registration order.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from inferlab.logs.model import ENGINES, Finding
from inferlab.logs.parsers import ADVICE, LogState, ooms, untuned_gemms, untuned_moes

__all__ = ["DETECTORS", "detect", "detector"]

Detector = Callable[[LogState], list[Finding]]
DETECTORS: dict[str, Detector] = {}

#: throughput within this fraction of the peak counts as the plateau
PLATEAU_WITHIN = 0.10
#: a running level counts when it has at least this many samples
LEVEL_MIN_N = 2
#: KV usage at or above this fraction is "near full"
KV_FULL = 0.9


def detector(kind: str) -> Callable[[Detector], Detector]:
    """Register ``fn(state) -> [Finding]`` as the detector of findings of ``kind``."""

    def deco(fn: Detector) -> Detector:
        DETECTORS[kind] = fn
        return fn

    return deco


def detect(st: LogState) -> list[Finding]:
    out: list[Finding] = []
    for fn in DETECTORS.values():
        out.extend(fn(st))
    if st.simulated:
        out = [
            Finding(f.kind, f.severity, f.message, {**f.evidence, "simulated": True}, f.action)
            for f in out
        ]
    return out


def _num(v: float) -> str:
    """A rate as a person would say it: 3 significant figures, no exponent."""
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def _shapes(items: list[str], cap: int = 8) -> str:
    more = len(items) - cap
    return ", ".join(items[:cap]) + (f" and {more} more" if more > 0 else "")


@detector("untuned-fp8-gemm")
def _untuned_fp8(st: LogState) -> list[Finding]:
    by_dev: dict[str, list[Any]] = {}
    for g in untuned_gemms(st):
        by_dev.setdefault(g.device, []).append(g)
    out = []
    for dev, gs in by_dev.items():
        n = len(gs)
        out.append(
            Finding(
                "untuned-fp8-gemm",
                "warning",
                f"{n} FP8 GEMM shape{'s' if n != 1 else ''} use{'s' if n == 1 else ''} the "
                f"default Triton config on {dev}: " + _shapes([f"N={g.n},K={g.k}" for g in gs]),
                {
                    "lines": sorted({g.lines[0] for g in gs})[:20],
                    "device": dev,
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
                + _shapes(shapes),
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


@detector("decode-plateau")
def _plateau(st: LogState) -> list[Finding]:
    if not st.levels:
        return []
    # levels passed through while requests ramp up or drain have few samples: leave them out
    levels = {
        r: statistics.median(lv.samples) for r, lv in st.levels.items() if lv.n >= LEVEL_MIN_N
    }
    levels = {r: v for r, v in levels.items() if v > 0}
    if len(levels) < 3:
        return []
    peak = max(levels.values())
    rs = sorted(levels)
    start = next(r for r in rs if levels[r] >= (1 - PLATEAU_WITHIN) * peak)
    above = [r for r in rs if r > start]
    n_above = sum(st.levels[r].n for r in above)
    if not above or max(rs) < 1.5 * start or n_above < 2:
        return []
    plateau = statistics.median([levels[r] for r in rs if r >= start])
    first_tps = levels[rs[0]]
    cap = st.flags.get("max_running_requests") or st.flags.get("max_num_seqs")
    return [
        Finding(
            "decode-plateau",
            "info",
            f"decode throughput plateaus at ~{_num(plateau)} tok/s from {start} running "
            f"request{'s' if start != 1 else ''}: more concurrency will not help",
            {
                "lines": [st.levels[r].first_line for r in rs if r >= start][:20],
                "plateau_tok_s": round(plateau, 2),
                "from_running": start,
                "max_running_seen": max(rs),
                "median_tok_s_by_running": {str(r): round(levels[r], 2) for r in rs},
                "samples_by_running": {str(r): st.levels[r].n for r in rs},
                "at_lowest_running": {"running": rs[0], "tok_s": round(first_tps, 2)},
                "definition": "median of the engine's logged generation throughput per "
                "#running level (levels with at least 2 samples); plateau = lowest level "
                "within 10% of the peak, with higher levels seen",
                "running_cap": cap,
            },
            "measure below this concurrency (latency is lower there at the same throughput); "
            "to raise the ceiling change the step time (kernels, tensor parallelism, "
            "speculative decoding), not the number of requests",
        )
    ]


def _possible(st: LogState) -> tuple[int | None, str]:
    """The longest accept length possible, and where it comes from."""
    f = st.flags
    if "speculative_num_steps" in f:
        return int(f["speculative_num_steps"]["value"]) + 1, (
            f"--speculative-num-steps {f['speculative_num_steps']['value']} + 1 "
            f"(line {f['speculative_num_steps']['line']})"
        )
    if "speculative_num_draft_tokens" in f:
        v = f["speculative_num_draft_tokens"]
        return int(v["value"]), f"--speculative-num-draft-tokens {v['value']} (line {v['line']})"
    if "num_speculative_tokens" in f:
        v = f["num_speculative_tokens"]
        return int(v["value"]) + 1, f"num_speculative_tokens {v['value']} + 1 (line {v['line']})"
    if st.spec.draft_tokens:
        return st.spec.draft_tokens + 1, (
            f"{st.spec.draft_tokens} draft positions in the metrics + 1 "
            f"(line {st.spec.draft_tokens_line})"
        )
    return None, ""


@detector("spec-accept")
def _spec(st: LogState) -> list[Finding]:
    s = st.spec
    if not s.n:
        return []
    mean = s.total / s.n
    possible, source = _possible(st)
    ev: dict[str, Any] = {
        "lines": s.lines,
        "accept_length_mean": round(mean, 3),
        "accept_length_min": round(s.lo, 3),
        "accept_length_max": round(s.hi, 3),
        "samples": s.n,
        "possible": possible,
        "possible_from": source or None,
        "definition": "accepted tokens per sequence per decode step, incl. the bonus token; "
        "mean of the logged values",
    }
    if s.rate_n:
        ev["accept_rate_mean"] = round(s.rate_total / s.rate_n, 3)
    if possible:
        share = mean / possible
        ev["share_of_possible"] = round(share, 3)
        msg = f"speculative accept length {mean:.2f} of a possible {possible} ({share:.0%})"
        sev = "warning" if share < 0.5 else "info"
    else:
        msg = (
            f"speculative accept length {mean:.2f} of an unknown possible (the log shows no "
            "draft-token setting)"
        )
        sev = "info"
    return [
        Finding(
            "spec-accept",
            sev,  # type: ignore[arg-type]
            msg,
            ev,
            "compare tokens/s with and without speculative decoding at your concurrency; with "
            "a low share, fewer draft tokens (or a better-matched draft model) cost less",
        )
    ]


_WHERE = {
    "graph-capture": "during CUDA-graph capture",
    "weight-loading": "while loading weights",
    "kv-cache": "while allocating the KV cache",
    "sampler-warmup": "during the sampler warm-up",
    "warm-up": "during warm-up",
    "serving": "while serving",
    "unknown": "at an unknown step",
}


def _mem_flag(st: LogState) -> tuple[str, float] | None:
    for name in ("mem_fraction_static", "gpu_memory_utilization"):
        if name in st.flags:
            try:
                return name, float(st.flags[name]["value"])
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
        ev[mf[0]] = mf[1]
        ev[mf[0] + "_line"] = st.flags[mf[0]]["line"]
    return ev


@detector("oom-graph-capture")
def _oom_capture(st: LogState) -> list[Finding]:
    out = []
    for o in ooms(st):
        if o.where != "graph-capture":
            continue
        mf = _mem_flag(st)
        if mf and mf[0] == "mem_fraction_static":
            at = f" at --mem-fraction-static {mf[1]:.2f}"
            act = f"lower it (e.g. {max(0.05, mf[1] - 0.10):.2f}) or cap --cuda-graph-max-bs"
        elif mf:
            at = f" at --gpu-memory-utilization {mf[1]:.2f}"
            act = (
                f"lower it (e.g. {max(0.05, mf[1] - 0.05):.2f}) or capture fewer sizes "
                "(--max-num-seqs, compilation_config cudagraph_capture_sizes)"
            )
        elif st.detected == "vllm":
            at = ""
            act = "lower --gpu-memory-utilization or capture fewer sizes (--max-num-seqs)"
        else:
            at = ""
            act = "lower --mem-fraction-static or cap --cuda-graph-max-bs"
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
        at = f" at {mf[0].replace('_', '-')} {mf[1]:.2f}" if mf else ""
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


@detector("perf-advice")
def _advice(st: LogState) -> list[Finding]:
    out = []
    for a in ADVICE:
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


@detector("kv-pressure")
def _kv_pressure(st: LogState) -> list[Finding]:
    ld = st.load
    full = ld.get("full", 0)
    retracted = ld.get("retracted", 0)
    if not full and not retracted:
        return []
    parts = []
    if full:
        parts.append(
            f"requests waited in the queue while the KV cache was ≥{KV_FULL:.0%} full in "
            f"{full} of {ld.get('samples', 0)} stats lines (max queue {ld.get('max_queue', 0)}, "
            f"max KV usage {ld.get('max_kv', 0.0):.2f})"
        )
    if retracted:
        parts.append(f"{retracted} requests were retracted (KV cache exhausted)")
    return [
        Finding(
            "kv-pressure",
            "warning",
            "; ".join(parts) + ": KV capacity limits concurrency",
            {
                "lines": (ld.get("full_lines", []) + ld.get("retracted_lines", []))[:20],
                "samples": ld.get("samples", 0),
                "queued_with_kv_full": full,
                "max_queue": ld.get("max_queue", 0),
                "max_kv_usage": ld.get("max_kv"),
                "retracted": retracted,
            },
            "more KV memory (raise --mem-fraction-static / --gpu-memory-utilization, FP8 KV "
            "cache), shorter contexts, or more GPUs; or lower the offered concurrency",
        )
    ]


@detector("queueing")
def _queueing(st: LogState) -> list[Finding]:
    ld = st.load
    below = ld.get("below", 0)
    if below < 3 or below < 0.05 * ld.get("samples", 0):
        return []
    cap = st.flags.get("max_running_requests") or st.flags.get("max_num_seqs")
    cap_s = f" (cap {cap['value']}, line {cap['line']})" if cap else ""
    return [
        Finding(
            "queueing",
            "info",
            f"requests waited in the queue in {below} of {ld.get('samples', 0)} stats lines "
            f"(max {ld.get('max_queue', 0)}) while KV usage stayed ≤ {ld.get('below_kv', 0):.2f}"
            f" and up to {ld.get('queued_running_max', 0)} requests ran{cap_s}: the KV cache "
            "was not full",
            {
                "lines": ld.get("queued_lines", [])[:20],
                "samples": ld.get("samples", 0),
                "queued_below_kv_full": below,
                "max_queue": ld.get("max_queue", 0),
                "running_cap": cap,
            },
            "check the running-request cap (--max-running-requests / --max-num-seqs) and the "
            "prefill budget (--chunked-prefill-size / --max-num-batched-tokens)",
        )
    ]


@detector("context-overflow")
def _context_overflow(st: LogState) -> list[Finding]:
    over = [s for s in st.slots if s["n_prompt_tokens"] > s["n_ctx_slot"]]
    if not over:
        return []
    worst = max(over, key=lambda s: s["n_prompt_tokens"])
    return [
        Finding(
            "context-overflow",
            "warning",
            f"a prompt of {worst['n_prompt_tokens']:,} tokens exceeds its llama.cpp slot's "
            f"context of {worst['n_ctx_slot']:,} tokens ({len(over)} such prompt"
            f"{'s' if len(over) != 1 else ''})",
            {"lines": [s["line"] for s in over][:20], "slots": over[:20]},
            "raise --ctx-size (each slot gets ctx-size / --parallel tokens) or lower --parallel",
        )
    ]


#: signature kinds (``inferlab.engines``) whose failure another detector already reports
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
