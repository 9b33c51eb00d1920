"""``python -m sglang.bench_serving --output-file F.jsonl [--output-details]``.

One JSON object per line, one line per run (the tool appends). What the tool measures
(``sglang/bench_serving.py``):

- TTFT: send → first chunk whose text is non-empty.
- ITL: backend ``sglang``/``sglang-native`` (``/generate``): per token — a chunk bringing k new
  tokens after a gap g adds k entries of g/k (inferlab's ITL). OpenAI backends (``sglang-oai``,
  ``vllm``, ``*-chat``, ...): one entry per text-bearing chunk (inferlab's ICL).
- E2E ("latency"): send → the last SSE line read (``[DONE]`` included), not the last token.
- TPOT: (latency − TTFT) / (output_len − 1), for output_len > 1.
- std: numpy's population std; percentiles: numpy linear (same as inferlab).
- ``--output-details`` adds per request (all requests, failures included): ``input_lens``,
  ``output_lens`` (0 for failures), ``ttfts`` (s), ``itls`` (s), ``generated_texts``,
  ``errors``. There are no send times.
"""

from __future__ import annotations

import math
import re
from typing import Any

from inferlab.records import RequestRecord
from inferlab.store.imports._common import (
    Content,
    Format,
    ImportedRun,
    Source,
    classify_error,
    events_from_gaps,
    load_label,
    mmm,
    read_details,
    sample_std,
    spread_tokens,
    stat_key,
)

TOOL = "sglang.bench_serving"
_PER_TOKEN_BACKENDS = frozenset({"sglang", "sglang-native"})
_STAT = re.compile(r"^(mean|median|std|min|max|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2e_latency)_ms$")
_THROUGHPUT = {
    "request_throughput": "request_s",
    "input_throughput": "input_tok_s",
    "output_throughput": "output_tok_s",
    "total_throughput": "total_tok_s",
    "concurrency": "concurrency_mean",
    "accept_length": "spec_accept_length",
}
_COUNTS = {
    "completed": "ok",
    "total_input_tokens": "input_tokens",
    "total_output_tokens": "output_tokens",
    "total_output_tokens_retokenized": "output_tokens_retokenized",
}
_DETAILS = ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors")
_WORKLOAD = (
    "dataset_name",
    "random_input_len",
    "random_output_len",
    "random_range_ratio",
    "sharegpt_output_len",
    "fixed_output_len",
    "num_prompts",
)


def sniff(c: Content) -> bool:
    o = c.docs[0][1]
    return (
        isinstance(o, dict)
        and "backend" in o
        and "completed" in o
        and "total_output_tokens_retokenized" in o
    )


def parse(c: Content) -> list[ImportedRun]:
    return [_run(Source(c, line, obj, "one sglang.bench_serving run")) for line, obj in c.docs]


def _run(s: Source) -> ImportedRun:
    backend = s.str_("backend", required=True) or ""
    completed = s.req_int("completed")
    duration = s.req_num("duration")
    s.req_int("total_output_tokens")
    per_token = backend in _PER_TOKEN_BACKENDS
    itl_name = "itl_ms" if per_token else "icl_ms"
    notes: list[str] = []
    if not per_token:
        notes.append(
            f"backend {backend!r} times one ITL entry per text-bearing chunk: "
            "its ITL statistics are inferlab's ICL (mapped to icl_ms_*)"
        )
    notes.append(
        "sglang's E2E latency ends at the last SSE line read ([DONE] included), not at the "
        "last token event; its TPOT = (that latency − TTFT) / (output_len − 1). Both are "
        "mapped as given (e2e_ms_*, tpot_ms_*)"
    )

    conc = s.int_("max_concurrency")
    trace = s.obj.get("request_rate") == "trace"  # newer versions: replayed trace timestamps
    rate_v = None if trace else s.num("request_rate")
    rate = rate_v if rate_v is not None and math.isfinite(rate_v) else None

    details = all(k in s.obj for k in ("ttfts", "itls", "output_lens"))
    records: list[RequestRecord] = []
    counts: dict[str, int] = {}
    workload: dict[str, Any] = {k: s.obj[k] for k in _WORKLOAD if s.obj.get(k) is not None}
    if details:
        records, counts = _records(s, per_token, notes, workload)

    summary: dict[str, float] = {}
    for key in s.obj:
        m = _STAT.match(key)
        if not m:
            continue
        v = s.num(key)
        if v is None:
            continue
        stat, metric = m.group(1), m.group(2)
        name = {"e2e_latency": "e2e_ms", "itl": itl_name}.get(metric, f"{metric}_ms")
        if stat == "std":
            n = completed if metric in ("ttft", "e2e_latency") else counts.get(metric)
            if n is None:
                notes.append(
                    f"{key}: numpy population std with an unknown sample count "
                    "(no --output-details); left out of the summary"
                )
                continue
            sd = sample_std(v, n)
            if sd is None:
                continue
            summary[f"{name}_std"] = sd
            notes.append(f"{key} is numpy's population std: {name}_std = {key} × √(n/(n−1)), n={n}")
            continue
        for k in stat_key(name, stat):
            summary[k] = v
    for key, name in _THROUGHPUT.items():
        v = s.num(key)
        if v is not None:
            summary[name] = v
    for key, name in _COUNTS.items():
        v = s.num(key)
        if v is not None:
            summary[name] = v
    if details:
        summary["requests"] = float(len(records))
        summary["failed"] = float(sum(1 for r in records if not r.ok))

    tool_summary = {k: v for k, v in s.obj.items() if k not in _DETAILS}
    return ImportedRun(
        tool=TOOL,
        tool_version=None,
        definitions=(
            f"sglang.bench_serving (backend {backend}): TTFT to the first chunk with text; "
            + (
                "ITL per token (chunk gap / new tokens); "
                if per_token
                else "ITL per text chunk gap (= inferlab ICL); "
            )
            + "E2E to the last line read; TPOT = (E2E − TTFT)/(output_len − 1), excludes TTFT"
        ),
        model=s.str_("model_id") or s.str_("model"),
        label=load_label(conc, rate) if not trace else "trace",
        concurrency=conc,
        rate=rate,
        started_at=None,
        duration_s=duration,
        records=records,
        summary=summary,
        tool_summary=tool_summary,
        notes=notes,
        workload=workload,
    )


def _records(
    s: Source, per_token: bool, notes: list[str], workload: dict[str, Any]
) -> tuple[list[RequestRecord], dict[str, int]]:
    d = read_details(s)
    ttfts, itls, out_lens, in_lens, errors, n = (
        d.ttfts,
        d.itls,
        d.out_lens,
        d.in_lens,
        d.errors,
        d.n,
    )
    records: list[RequestRecord] = []
    regrouped = 0
    n_itl = n_tpot = 0
    for i in range(n):
        err = errors[i] if errors else ""
        rec = RequestRecord(index=i, request_id=str(i))
        rec.input_tokens = in_lens[i] if in_lens else None
        if err or (out_lens[i] == 0 and ttfts[i] == 0.0):
            rec.error_kind = classify_error(err)
            rec.error_message = err or "request failed (sglang.bench_serving gives no reason)"
            records.append(rec)
            continue
        gaps, toks = _chunks(itls[i], out_lens[i], per_token)
        if per_token and len(gaps) != len(itls[i]):
            regrouped += 1
        rec.event_ns = events_from_gaps(0, ttfts[i], gaps)
        rec.event_tokens = toks
        rec.end_ns = rec.event_ns[-1]
        rec.usage_completion_tokens = out_lens[i]
        if sum(toks) != out_lens[i]:
            rec.warnings.append(f"length: {len(toks)} token events but output_len {out_lens[i]}")
        records.append(rec)
        n_itl += len(itls[i])
        n_tpot += out_lens[i] > 1
    notes.append(
        "sglang.bench_serving records no send times: each request's send_ns is 0 and its "
        "event times are relative to its own send (TTFT, then cumulative ITL gaps)"
    )
    if per_token:
        notes.append(
            "per-token ITL entries were regrouped into chunks: a run of k identical consecutive "
            "entries g is one event carrying k tokens after a gap k·g; the first event carries "
            "output_len − len(itls) tokens"
        )
    else:
        notes.append(
            "each ITL entry is one text-bearing chunk: event_ns = send + TTFT + cumulative "
            "gaps; event_tokens spread output_len over the events (first event 1 token, "
            "the rest evenly over the later events, ≥ 1 each)"
        )
    notes.append("output_lens (the server's completion_tokens) → usage_completion_tokens")
    ok_in = [in_lens[i] for i in range(n) if records[i].ok] if in_lens else []
    ok_out = [out_lens[i] for i in range(n) if records[i].ok]
    if ok_in:
        workload["input_tokens"] = mmm(ok_in)
    if ok_out:
        workload["output_tokens"] = mmm(ok_out)
    return records, {"itl": n_itl, "tpot": n_tpot}


def _chunks(itl: list[float], out_len: int, per_token: bool) -> tuple[list[float], list[int]]:
    """(gaps between events, tokens per event) from one request's ITL list."""
    if not per_token:
        return itl, spread_tokens(len(itl) + 1, out_len)
    gaps: list[float] = []
    toks: list[int] = [max(1, out_len - len(itl))]
    i = 0
    while i < len(itl):
        j = i
        while j + 1 < len(itl) and itl[j + 1] == itl[i]:
            j += 1
        k = j - i + 1
        gaps.append(itl[i] * k)
        toks.append(k)
        i = j + 1
    return gaps, toks


FORMAT = Format(
    name="sglang.bench_serving",
    tool=TOOL,
    expects="sglang.bench_serving --output-file JSONL (objects with 'backend', 'completed', "
    "'total_output_tokens_retokenized')",
    sniff=sniff,
    parse=parse,
)
