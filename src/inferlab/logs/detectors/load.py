"""Detectors of what load did: the decode-throughput plateau, speculative acceptance, KV
pressure, queueing below a full KV cache, prompts longer than a slot's context."""

from __future__ import annotations

import statistics
from typing import Any

from inferlab.logs.detectors.registry import detector, num
from inferlab.logs.model import Finding
from inferlab.logs.state import LogState

__all__ = ["KV_FULL", "LEVEL_MIN_N", "PLATEAU_WITHIN"]

#: throughput within this fraction of the peak counts as the plateau
PLATEAU_WITHIN = 0.10
#: a running level counts when it has at least this many samples
LEVEL_MIN_N = 2
#: KV usage at or above this fraction is "near full"
KV_FULL = 0.9


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
            f"decode throughput plateaus at ~{num(plateau)} tok/s from {start} running "
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
    algo = str(f.get("speculative_algorithm", {}).get("value", "")).strip("'\"").upper()
    steps = f.get("speculative_num_steps", {}).get("value")
    # NGRAM drafts no steps (SGLang 0.5.17 logs speculative_num_steps=0): its verify tree holds
    # --speculative-num-draft-tokens positions, the bonus token among them
    if (algo == "NGRAM" or str(steps) in ("0", "None")) and "speculative_num_draft_tokens" in f:
        v = f["speculative_num_draft_tokens"]
        return int(v["value"]), f"--speculative-num-draft-tokens {v['value']} (line {v['line']})"
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
