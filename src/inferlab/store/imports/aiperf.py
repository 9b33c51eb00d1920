"""NVIDIA AIPerf exports: ``profile_export_aiperf.json`` (aggregate) and, with
``--export-level records``, ``profile_export.jsonl`` (one record per request) beside it.
Either file may be given; the other is read when it sits beside it (``X_aiperf.json`` ↔
``X.jsonl``).

What AIPerf measures (``aiperf/metrics/types``; checked against a real 0.13.0 export):

- TTFT = first content response − request start (inferlab's TTFT).
- ``inter_chunk_latency``: gaps between content responses (inferlab's ICL).
- ``request_latency`` = last content response − request start (inferlab's E2E).
- ``inter_token_latency`` = (request_latency − TTFT) / (output_sequence_length − 1) per
  request: that is vLLM's / inferlab's TPOT, not a per-token gap.
- ``output_token_throughput_per_user`` = 1000 / that ITL: inferlab's per-user speed.
- Aggregates: population std (numpy ddof=0); percentiles by linear interpolation (as inferlab).
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.records import ErrorKind, RequestRecord
from inferlab.store.imports._common import (
    Format,
    ImportedRun,
    classify_error,
    events_from_gaps,
    load_label,
    spread_tokens,
    token_workload,
)
from inferlab.store.imports.content import Content, load_content
from inferlab.store.imports.fieldmap import map_distribution, map_scalars
from inferlab.store.imports.source import Source

if TYPE_CHECKING:
    from pydantic import JsonValue

TOOL = "aiperf"
_AGG_SUFFIX = "_aiperf.json"
#: AIPerf metric tag → (inferlab name, unit scale to inferlab's unit)
_DISTS = {
    "time_to_first_token": "ttft_ms",
    "inter_token_latency": "tpot_ms",
    "inter_chunk_latency": "icl_ms",
    "request_latency": "e2e_ms",
    "output_token_throughput_per_user": "user_tok_s",
}
_SCALARS = {
    "request_throughput": "request_s",
    "output_token_throughput": "output_tok_s",
    "input_token_throughput": "input_tok_s",
    "total_token_throughput": "total_tok_s",
    "goodput": "goodput_req_s",
    "request_count": "ok",
    "error_request_count": "failed",
    "completed_request_count": "requests",
    "total_output_tokens": "output_tokens",
    "total_isl": "input_tokens",
}
#: AIPerf statistic → inferlab's ("std" is numpy's population std, converted with "count")
_STATS = {"avg": "mean"} | {
    k: k for k in ("std", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99")
}


def _is_record(o: Any) -> bool:
    return (
        isinstance(o, dict)
        and isinstance(o.get("metadata"), dict)
        and "request_start_ns" in o["metadata"]
        and ("metrics" in o or "error" in o)
    )


def sniff(c: Content) -> bool:
    o = c.docs[0][1]
    if isinstance(o, dict) and "aiperf_version" in o:
        return True
    return (isinstance(o, dict) and "input_config" in o and "benchmark_id" in o) or _is_record(o)


def parse(c: Content) -> list[ImportedRun]:
    first = c.docs[0][1]
    if _is_record(first):
        agg_path = _sibling_aggregate(c.path)
        agg = load_content(agg_path) if agg_path else None
        rec_content: Content | None = c
    else:
        agg = c
        rec_path = _sibling_records(c.path)
        rec_content = load_content(rec_path) if rec_path else None
    return [_run(agg, rec_content)]


def _sibling_aggregate(p: Path) -> Path | None:
    cand = p.with_name(p.stem + _AGG_SUFFIX)
    return cand if cand.is_file() else None


def _sibling_records(p: Path) -> Path | None:
    if not p.name.endswith(_AGG_SUFFIX):
        return None
    cand = p.with_name(p.name[: -len(_AGG_SUFFIX)] + ".jsonl")
    return cand if cand.is_file() else None


def _run(agg: Content | None, recs: Content | None) -> ImportedRun:
    notes: list[str] = []
    summary: dict[str, float] = {}
    tool_summary: dict[str, JsonValue] = {}
    version = model = started = None
    duration: float | None = None
    conc: int | None = None
    rate: float | None = None
    workload: dict[str, JsonValue] = {}
    if agg is not None:
        if len(agg.docs) != 1:
            raise Source(agg, agg.docs[1][0], {}, "").fail(
                "an AIPerf aggregate export is one JSON document, found several"
            )
        line, obj = agg.docs[0]
        a = Source(agg, line, obj, "an AIPerf aggregate export")
        tool_summary = dict(a.obj)
        version = a.str_("aiperf_version")
        started = a.str_("start_time")
        if started:
            try:
                datetime.fromisoformat(started)
            except ValueError:
                raise a.fail(f"'start_time' is not an ISO 8601 time: {started!r}") from None
        dur = a.obj_("benchmark_duration")
        duration = dur.num("avg") if dur else None
        cfg = a.obj_("input_config")
        if cfg is not None:
            model, conc, rate, workload = _config(cfg)
        _aggregates(a, summary, notes)
    else:
        notes.append("no aggregate export beside the records: summary is empty")
    records: list[RequestRecord] = []
    if recs is not None:
        records = _records(recs, notes)
        token_workload(records, workload)
    return ImportedRun(
        tool=TOOL,
        tool_version=version,
        definitions=(
            "aiperf: TTFT to the first content response; ITL = (E2E − TTFT)/(OSL − 1) per "
            "request (= inferlab TPOT); inter-chunk latency = gaps between content responses "
            "(= inferlab ICL); request latency to the last content response"
        ),
        model=model,
        label=load_label(conc, rate),
        concurrency=conc,
        rate=rate,
        started_at=started,
        duration_s=duration,
        records=records,
        summary=summary,
        tool_summary=tool_summary,
        notes=notes,
        workload=workload,
    )


def _config(cfg: Source) -> tuple[str | None, int | None, float | None, dict[str, Any]]:
    model = None
    models = cfg.obj_("models")
    items = models.list_("items") if models else None
    if items:
        model = cfg.sub(items[0], "models.items[0]").str_("name")
    conc: int | None = None
    rate: float | None = None
    for i, ph in enumerate(cfg.list_("phases") or []):
        p = cfg.sub(ph, f"phases[{i}]")
        if p.str_("kind") not in (None, "profiling"):
            continue
        conc = p.int_("concurrency")
        r = p.num("rate")
        rate = r if r is not None and math.isfinite(r) else None
    workload: dict[str, JsonValue] = {}
    ds = cfg.list_("datasets")
    if ds:
        workload["datasets"] = ds
    return model, conc, rate, workload


def _aggregates(a: Source, summary: dict[str, float], notes: list[str]) -> None:
    for tag, name in _DISTS.items():
        d = a.obj_(tag)
        if d is not None:
            map_distribution(d, name, _STATS, summary, std="std")
    map_scalars(_SCALARS, lambda tag: _avg(a, tag), summary)
    notes.append(
        "AIPerf's inter_token_latency is (request_latency − TTFT)/(OSL − 1) per request: "
        "inferlab's TPOT, mapped to tpot_ms_*; its inter_chunk_latency is inferlab's ICL "
        "(icl_ms_*); per-token ITL exists only in the records"
    )
    notes.append(
        "AIPerf's output_token_throughput_per_user = 1000 / its ITL: inferlab's per-user speed "
        "(user_tok_s_*)"
    )
    notes.append(
        "AIPerf's std is numpy's population std: *_std = std × √(n/(n−1)) with n = its count"
    )


def _avg(a: Source, tag: str) -> float | None:
    d = a.obj_(tag)
    return d.num("avg") if d else None


def _records(c: Content, notes: list[str]) -> list[RequestRecord]:
    records: list[RequestRecord] = []
    for line, obj in c.docs:
        records.append(_record(Source(c, line, obj, "one AIPerf request record"), len(records)))
    ok = [r for r in records if r.ok]
    spread = sum(len(r.event_ns) < r.output_tokens for r in ok)
    mismatched = sum(
        r.usage_completion_tokens is not None
        and r.usage_completion_tokens != r.counted_output_tokens
        for r in ok
    )
    notes.append(
        "records: send_ns = request_start_ns (AIPerf's time.time_ns()); event_ns = send + "
        "TTFT + cumulative inter_chunk_latency (one event per content response); "
        "event_tokens spread the output tokens (usage when given, else AIPerf's "
        "output_sequence_length) over the events: the first 1 token, the rest evenly "
        "over the later ones, ≥ 1 each"
        + (f" — {spread} request(s) had fewer chunks than tokens" if spread else "")
    )
    if mismatched:
        notes.append(f"{mismatched} request(s): usage completion_tokens ≠ AIPerf's count")
    return records


def _record(s: Source, index: int) -> RequestRecord:
    """One AIPerf request record: a failure (error or cancelled) or its content events."""
    if not _is_record(s.obj):
        raise s.fail("not an AIPerf record (expected 'metadata.request_start_ns')")
    meta = s.req_obj("metadata")
    start = meta.req_int("request_start_ns")
    end = meta.int_("request_end_ns")
    rec = RequestRecord(
        index=index,
        request_id=meta.str_("x_request_id") or str(index),
        send_ns=start,
        end_ns=end or start,
        warmup=meta.str_("benchmark_phase") == "warmup",
    )
    m = s.obj_("metrics")
    val = _values(m) if m else {}
    isl = val.get("input_sequence_length", val.get("error_isl"))
    rec.input_tokens = int(isl) if isinstance(isl, (int, float)) else None
    up = val.get("usage_prompt_tokens")
    rec.usage_prompt_tokens = int(up) if isinstance(up, (int, float)) else None
    err = s.obj_("error")
    cancelled = meta.obj.get("was_cancelled") is True
    if err is not None or cancelled:
        msg = ""
        code = None
        if err is not None:
            code = err.int_("code")
            msg = " ".join(x for x in (err.str_("type"), err.str_("message")) if x)
        rec.status = code or 0
        rec.error_kind = classify_error(msg) if not code else classify_error("")
        if cancelled and err is None:
            rec.error_kind = ErrorKind.CANCELLED
        rec.error_message = msg or "request failed (AIPerf gives no reason)"
        return rec
    _content_events(s, rec, val)
    return rec


def _content_events(s: Source, rec: RequestRecord, val: dict[str, Any]) -> None:
    """Fill a successful record's events: send + TTFT + cumulative inter-chunk gaps, the
    output tokens spread over them."""
    rec.status = 200
    ttft = val.get("time_to_first_token")
    osl = val.get("output_sequence_length")
    if not isinstance(ttft, (int, float)) or not isinstance(osl, (int, float)):
        raise s.fail(
            "a successful record without metrics time_to_first_token and "
            "output_sequence_length (was it a non-streaming run?)"
        )
    icl = val.get("inter_chunk_latency", [])
    if isinstance(icl, (int, float)):
        icl = [icl]
    if not isinstance(icl, list) or not all(isinstance(x, (int, float)) for x in icl):
        raise s.fail("metrics.inter_chunk_latency.value must be a list of numbers (ms)")
    rec.counted_output_tokens = int(osl)
    uc = val.get("usage_completion_tokens")
    rec.usage_completion_tokens = int(uc) if isinstance(uc, (int, float)) else None
    rec.event_ns = events_from_gaps(rec.send_ns, ttft / 1000.0, [x / 1000.0 for x in icl])
    rec.event_tokens = spread_tokens(len(rec.event_ns), rec.output_tokens)
    if rec.usage_completion_tokens is not None and rec.usage_completion_tokens != int(osl):
        rec.warnings.append(
            f"length: usage says {rec.usage_completion_tokens} tokens, AIPerf counted {int(osl)}"
        )


def _values(m: Source) -> dict[str, JsonValue]:
    """metric tag → value, from ``{"tag": {"value": v, "unit": u}}``."""
    out: dict[str, JsonValue] = {}
    for k, v in m.obj.items():
        if isinstance(v, dict) and "value" in v:
            out[k] = v["value"]
        else:
            raise m.fail(f"metric {k!r} must be an object with 'value', got {v!r}"[:200])
    for k in ("time_to_first_token", "output_sequence_length", "request_latency"):
        x = out.get(k)
        if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float))):
            raise m.fail(f"metric {k!r} must be a number, got {x!r}")
    return out


FORMAT = Format(
    name="aiperf",
    tool=TOOL,
    expects="an AIPerf export (profile_export_aiperf.json with 'aiperf_version', or "
    "profile_export.jsonl records with 'metadata.request_start_ns')",
    sniff=sniff,
    parse=parse,
)
