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

from inferlab.records import RequestRecord
from inferlab.store.imports._common import (
    Format,
    ImportedRun,
    events_from_gaps,
    load_label,
    spread_tokens,
)
from inferlab.store.imports.content import Content
from inferlab.store.imports.details import (
    DetailedFields,
    detail_record,
    detailed_run,
    read_detailed,
    read_details,
)
from inferlab.store.imports.fieldmap import StatFields
from inferlab.store.imports.source import Source

TOOL = "sglang.bench_serving"
_PER_TOKEN_BACKENDS = frozenset({"sglang", "sglang-native"})
_STAT = re.compile(r"^(mean|median|std|min|max|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2e_latency)_ms$")
_NAMES = {"ttft": "ttft_ms", "tpot": "tpot_ms", "e2e_latency": "e2e_ms"}
_SCALARS = {
    "request_throughput": "request_s",
    "input_throughput": "input_tok_s",
    "output_throughput": "output_tok_s",
    "total_throughput": "total_tok_s",
    "concurrency": "concurrency_mean",
    "accept_length": "spec_accept_length",
    "completed": "ok",
    "total_input_tokens": "input_tokens",
    "total_output_tokens": "output_tokens",
    "total_output_tokens_retokenized": "output_tokens_retokenized",
}
#: backend times ITL per token (inferlab's ITL: True) or per text chunk (ICL: False) → fields
_FIELDS = {
    per_token: DetailedFields(
        tool=TOOL,
        stats=StatFields(
            _STAT,
            {**_NAMES, "itl": "itl_ms" if per_token else "icl_ms"},
            frozenset({"ttft", "e2e_latency"}),
            "--output-details",
        ),
        scalars=_SCALARS,
        workload=(
            "dataset_name",
            "random_input_len",
            "random_output_len",
            "random_range_ratio",
            "sharegpt_output_len",
            "fixed_output_len",
            "num_prompts",
        ),
        arrays=("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"),
    )
    for per_token in (True, False)
}


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
    s.req_int("completed")
    s.req_num("duration")
    s.req_int("total_output_tokens")
    per_token = backend in _PER_TOKEN_BACKENDS
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

    det = read_detailed(s, _FIELDS[per_token], lambda: _records(s, per_token, notes), notes)
    if det.details:
        det.summary["requests"] = float(len(det.records))
        det.summary["failed"] = float(sum(1 for r in det.records if not r.ok))
    return detailed_run(
        s,
        _FIELDS[per_token],
        det,
        notes,
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
        load=(conc, rate),
        label=load_label(conc, rate) if not trace else "trace",
    )


def _records(
    s: Source, per_token: bool, notes: list[str]
) -> tuple[list[RequestRecord], dict[str, int]]:
    d = read_details(s)
    records: list[RequestRecord] = []
    n_itl = n_tpot = 0
    for i in range(d.n):
        rec = detail_record(d, i, 0, TOOL)
        records.append(rec)
        if not rec.ok:
            continue
        out_len = d.out_lens[i]
        gaps, toks = _chunks(d.itls[i], out_len, per_token)
        rec.event_ns = events_from_gaps(0, d.ttfts[i], gaps)
        rec.event_tokens = toks
        rec.end_ns = rec.event_ns[-1]
        rec.usage_completion_tokens = out_len
        if sum(toks) != out_len:
            rec.warnings.append(f"length: {len(toks)} token events but output_len {out_len}")
        n_itl += len(d.itls[i])
        n_tpot += out_len > 1
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
