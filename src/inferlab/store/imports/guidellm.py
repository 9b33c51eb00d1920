"""GuideLLM JSON reports (``guidellm run ... --output kind=json,path=report.json``; older
versions: ``guidellm benchmark ... --output-path report.json``).

One report holds one benchmark per load point (a sweep is several). What GuideLLM measures,
per request (``GenerativeRequestStats``; checked against a real 0.8.1 report):

- TTFT = first token iteration − request start (inferlab's TTFT).
- ``time_per_output_token_ms`` = (last token − request start) / output tokens: it INCLUDES TTFT.
- ``inter_token_latency_ms`` = (last token − first token) / (output tokens − 1): inferlab's TPOT.
- ``request_latency`` (s) = request end − request start (end of the HTTP response).
- Aggregates are distributions weighted per token for TPOT (n per request) and ITL
  (n − 1 per request); std is the population std; percentiles are order statistics without
  interpolation (not inferlab's linear interpolation, so they are not mapped).
- Only the first and last token times of each request are kept, not every chunk.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from inferlab.errors import ConfigError
from inferlab.records import ErrorKind, RequestRecord
from inferlab.stats.summary import describe
from inferlab.store.imports._common import (
    Format,
    ImportedRun,
    classify_error,
    load_label,
    token_workload,
)
from inferlab.store.imports.content import Content
from inferlab.store.imports.fieldmap import map_distribution, map_scalars
from inferlab.store.imports.source import Source

if TYPE_CHECKING:
    from pydantic import JsonValue

TOOL = "guidellm"
_NS = 1_000_000_000
#: latency distributions (field, inferlab name, × to ms): mean, min, max mean the same in both
#: tools; std_dev is the population std (converted); percentiles are not mapped
_LATENCIES = (("time_to_first_token_ms", "ttft_ms", 1.0), ("request_latency", "e2e_ms", 1000.0))
_LATENCY_STATS = {"mean": "mean", "min": "min", "max": "max", "std_dev": "std"}
#: distributions whose mean is the inferlab rate
_MEANS = {
    "requests_per_second": "request_s",
    "output_tokens_per_second": "output_tok_s",
    "prompt_tokens_per_second": "input_tok_s",
    "tokens_per_second": "total_tok_s",
    "request_concurrency": "concurrency_mean",
}
#: distributions whose total_sum is the inferlab count
_SUMS = {"output_token_count": "output_tokens", "prompt_token_count": "input_tokens"}
_TOTALS = {"successful": "ok", "errored": "failed", "incomplete": "cancelled", "total": "requests"}
_TPOT_STATS = ("mean", "std", "min", "p50", "p90", "p95", "p99", "max")


def sniff(c: Content) -> bool:
    o = c.docs[0][1]
    if not isinstance(o, dict) or not isinstance(o.get("benchmarks"), list):
        return False
    meta = o.get("metadata")
    if isinstance(meta, dict) and "guidellm_version" in meta:
        return True
    b = o["benchmarks"]
    return bool(b) and isinstance(b[0], dict) and b[0].get("type_") == "generative_benchmark"


def parse(c: Content) -> list[ImportedRun]:
    if len(c.docs) != 1:
        raise ConfigError(f"{c.path}: a GuideLLM report is one JSON document, found JSON Lines")
    line, obj = c.docs[0]
    top = Source(c, line, obj, "a GuideLLM report")
    meta = top.obj_("metadata")
    version = meta.str_("guidellm_version") if meta else None
    benches = top.list_("benchmarks", required=True) or []
    if not benches:
        raise top.fail("'benchmarks' is empty: the report holds no benchmark")
    return [_bench(top.sub(b, f"benchmarks[{i}]"), version, top) for i, b in enumerate(benches)]


def _dist(s: Source, key: str) -> Source | None:
    """metrics[key].successful (a GuideLLM distribution summary), if present."""
    d = s.obj_(key)
    if d is None:
        return None
    return d.obj_("successful")


def _strategy(b: Source) -> tuple[int | None, float | None, str]:
    cfg = b.obj_("config")
    st = (cfg.obj_("strategy") if cfg else None) or (
        b.req_obj("args").obj_("strategy") if "args" in b.obj else None
    )
    if st is None:
        raise b.fail("missing the load strategy ('config.strategy')")
    kind = st.str_("type_") or ""
    conc: int | None = None
    rate: float | None = None
    if kind == "synchronous":
        conc = 1
    elif kind == "concurrent":
        conc = st.int_("streams")
        if conc is None:
            raise st.fail("concurrent strategy without 'streams'")
    elif kind in ("constant", "poisson", "async"):
        rate = st.num("rate")
        if rate is not None and not math.isfinite(rate):
            rate = None
    return conc, rate, kind


def _bench(b: Source, version: str | None, top: Source) -> ImportedRun:
    conc, rate, kind = _strategy(b)
    metrics = b.req_obj("metrics")
    duration = b.num("duration")
    start = b.num("start_time")
    notes: list[str] = []
    summary: dict[str, float] = {}
    _aggregates(metrics, summary, notes)
    records, tpots = _records(b, notes)
    if tpots:
        _tpot_summary(tpots, summary, notes)
    model = _model(b, top)
    workload: dict[str, JsonValue] = {}
    spec = _spec(top)
    data = spec.list_("data") if spec else None
    if data:
        workload["data"] = data
    token_workload(records, workload)
    return ImportedRun(
        tool=TOOL,
        tool_version=version,
        definitions=(
            "guidellm: TTFT to the first token; TPOT = (E2E − TTFT)/n, includes TTFT; "
            "ITL = (E2E − TTFT)/(n − 1) per request (= inferlab TPOT); request latency to the "
            "end of the response; distributions weighted per token"
        ),
        model=model,
        label=load_label(conc, rate) if kind != "throughput" else "rate=inf",
        concurrency=conc,
        rate=rate,
        started_at=(datetime.fromtimestamp(start, tz=timezone.utc).isoformat() if start else None),
        duration_s=duration,
        records=records,
        summary=summary,
        tool_summary={
            k: b.obj[k]
            for k in ("metrics", "scheduler_metrics", "start_time", "end_time", "duration")
            if k in b.obj
        },
        notes=notes,
        workload=workload,
    )


def _aggregates(metrics: Source, summary: dict[str, float], notes: list[str]) -> None:
    """Map the aggregate distributions that mean the same in both tools into ``summary``."""
    for gkey, name, scale in _LATENCIES:
        d = _dist(metrics, gkey)
        if d is not None:
            map_distribution(d, name, _LATENCY_STATS, summary, std="std_dev", scale=scale)
    notes.append(
        "GuideLLM's std_dev is the population std: *_std = std_dev × √(n/(n−1)) with n = its "
        "count; its percentiles are order statistics without interpolation (not inferlab's "
        "linear interpolation) and are not mapped (they stay in tool_summary)"
    )
    notes.append(
        "GuideLLM's request_latency ends at the end of the HTTP response, not at the last "
        "token: e2e_ms_* from it are slightly longer than inferlab's E2E"
    )
    itl = _dist(metrics, "inter_token_latency_ms")
    if itl is not None and itl.num("mean") is not None:
        summary["itl_ms_mean"] = itl.req_num("mean")
        notes.append(
            "GuideLLM's inter_token_latency_ms is each request's (last − first token)/(n − 1), "
            "weighted by n − 1 tokens: its mean is Σ(E2E − TTFT)/Σ(n − 1), the mean of all "
            "per-token gaps = inferlab's mean ITL (itl_ms_mean); its percentiles are not ITL "
            "percentiles and are not mapped"
        )
    map_scalars(_MEANS, lambda k: _dist_stat(metrics, k, "mean"), summary)
    map_scalars(_SUMS, lambda k: _dist_stat(metrics, k, "total_sum"), summary)
    totals = metrics.obj_("request_totals")
    if totals is not None:
        map_scalars(_TOTALS, totals.num, summary)


def _dist_stat(metrics: Source, key: str, stat: str) -> float | None:
    d = _dist(metrics, key)
    return d.num(stat) if d else None


def _tpot_summary(tpots: list[float], summary: dict[str, float], notes: list[str]) -> None:
    """inferlab's TPOT statistics over requests, from the per-request conversions."""
    td = describe(tpots)
    for stat in _TPOT_STATS:
        summary[f"tpot_ms_{stat}"] = float(getattr(td, stat))
    summary["tpot_ms_median"] = td.p50
    notes.append(
        "GuideLLM's time_per_output_token_ms includes TTFT ((last token − start)/n): "
        "converted per request to inferlab's TPOT = (TPOT_guidellm·n − TTFT)/(n − 1) "
        "= (E2E − TTFT)/(n − 1); tpot_ms_* are inferlab statistics over requests "
        "(GuideLLM weights its distribution by output tokens)"
    )


def _spec(top: Source) -> Source | None:
    """The report's ``config.spec`` (newer versions), if present."""
    cfg = top.obj_("config")
    return cfg.obj_("spec") if cfg else None


def _model(b: Source, top: Source) -> str | None:
    """The model name: the benchmark's ``config.backend.model``, else the report spec's."""
    cfg = b.obj_("config")
    be = cfg.obj_("backend") if cfg else None
    model = be.str_("model") if be is not None else None
    if model is None:
        spec = _spec(top)
        be = spec.obj_("backend") if spec else None
        model = be.str_("model") if be else None
    return model


def _t(s: Source, timings: Source | None, key: str, old: str) -> float | None:
    """A request timestamp (s): ``info.timings[key]`` (0.8+), else the older top-level
    field ``old``."""
    if timings is not None and key in timings.obj:
        return timings.num(key)
    return s.num(old)


def _records(b: Source, notes: list[str]) -> tuple[list[RequestRecord], list[float]]:
    reqs = b.obj_("requests")
    if reqs is None:
        return [], []
    records: list[RequestRecord] = []
    tpots: list[float] = []
    for status in ("successful", "errored", "incomplete"):
        for j, raw in enumerate(reqs.list_(status) or []):
            s = reqs.sub(raw, f"requests.{status}[{j}]")
            rec, tpot = _request(s, status, len(records))
            records.append(rec)
            if tpot is not None:
                tpots.append(tpot)
    if records:
        notes.append(
            "records: GuideLLM keeps only the first and last token times of a request, so "
            "each has two events (first token: 1 token; last token: n − 1 tokens). TTFT, E2E "
            "and TPOT are exact; per-token ITL from these records is each request's mean gap "
            "(percentiles of ITL and ICL are not recoverable)"
        )
        notes.append(
            "send_ns/event_ns are GuideLLM's time.time() (wall clock) × 1e9; "
            "output tokens → usage_completion_tokens; prompt tokens → input_tokens"
        )
    return records, tpots


def _request(s: Source, status: str, index: int) -> tuple[RequestRecord, float | None]:
    """One request as a record, and inferlab's TPOT (ms) of a successful one when known."""
    info = s.obj_("info")
    timings = info.obj_("timings") if info else None
    start = _t(s, timings, "request_start", "start_time")
    if start is None and timings is not None:
        start = timings.num("resolve_start")
    end = _t(s, timings, "request_end", "end_time")
    rec = RequestRecord(
        index=index,
        request_id=s.str_("request_id") or str(index),
        send_ns=round(start * _NS) if start else 0,
        end_ns=round(end * _NS) if end else 0,
    )
    rec.input_tokens = s.int_("prompt_tokens")
    if status != "successful":
        err = (info.str_("error") if info else None) or s.str_("error") or ""
        rec.error_kind = ErrorKind.CANCELLED if status == "incomplete" else classify_error(err)
        rec.error_message = err or f"{status} (GuideLLM gives no reason)"
        if not rec.end_ns:
            rec.end_ns = rec.send_ns
        return rec, None
    first = _t(s, timings, "first_token_iteration", "first_token_time")
    last = _t(s, timings, "last_token_iteration", "last_token_time")
    n = s.req_int("output_tokens")
    if start is None or first is None or last is None:
        raise s.fail("a successful request without request start, first and last token times")
    if not start <= first <= last:
        raise s.fail(f"token times out of order (start {start}, first {first}, last {last})")
    rec.usage_completion_tokens = n
    if n >= 2 and last > first:
        rec.event_ns = [round(first * _NS), round(last * _NS)]
        rec.event_tokens = [1, n - 1]
    else:
        rec.event_ns = [round(first * _NS)]
        rec.event_tokens = [max(n, 1)]
    ttft = s.num("time_to_first_token_ms")
    tpot_gl = s.num("time_per_output_token_ms")
    if n >= 2 and ttft is not None and tpot_gl is not None:
        return rec, (tpot_gl * n - ttft) / (n - 1)
    return rec, None


FORMAT = Format(
    name="guidellm",
    tool=TOOL,
    expects="a GuideLLM JSON report (an object with 'benchmarks' and 'metadata.guidellm_version')",
    sniff=sniff,
    parse=parse,
)
