"""``vllm bench serve --save-result [--save-detailed]`` JSON (``--append-result``: one object per
line).

What the tool measures (``vllm/benchmarks/lib/endpoint_request_func.py``, ``serve.py``):

- TTFT: send → the first SSE chunk that has ``choices`` — whether or not it carries text. On
  chat endpoints that is the role-only chunk.
- ITL: one entry per further chunk with ``choices`` (per-chunk gaps: inferlab's ICL).
- E2E ("e2el"): send → the last chunk with ``choices``.
- TPOT: (E2E − TTFT) / (output_tokens − 1), excludes TTFT.
- std: numpy's population std; percentiles: numpy linear (same as inferlab).
- ``--save-detailed`` adds per request (all requests, failures included): ``input_lens``,
  ``output_lens`` (0 for failures), ``ttfts`` (s), ``itls`` (s), ``start_times`` (the client's
  ``time.perf_counter()`` at send, s; newer versions), ``generated_texts``, ``errors``.
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
    Details,
    detail_record,
    detailed_run,
    read_detailed,
    read_details,
)
from inferlab.store.imports.fieldmap import StatFields
from inferlab.store.imports.source import Source

TOOL = "vllm bench serve"
_FIELDS = DetailedFields(
    tool=TOOL,
    stats=StatFields(
        re.compile(r"^(mean|median|std|min|max|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$"),
        {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "icl_ms", "e2el": "e2e_ms"},
        frozenset({"ttft", "e2el"}),
        "--save-detailed",
    ),
    scalars={
        "completed": "ok",
        "failed": "failed",
        "total_input_tokens": "input_tokens",
        "total_output_tokens": "output_tokens",
        "request_throughput": "request_s",
        "request_goodput": "goodput_req_s",
        "output_throughput": "output_tok_s",
        "total_token_throughput": "total_tok_s",
        "max_output_tokens_per_s": "output_tok_s_max_1s",
    },
    workload=(
        "dataset_name",
        "num_prompts",
        "random_input_len",
        "random_output_len",
        "input_len",
        "output_len",
    ),
    arrays=(
        "input_lens",
        "output_lens",
        "start_times",
        "ttfts",
        "itls",
        "generated_texts",
        "errors",
    ),
)
_NS = 1_000_000_000


def sniff(c: Content) -> bool:
    o = c.docs[0][1]
    return (
        isinstance(o, dict)
        and "completed" in o
        and "total_output_tokens_retokenized" not in o
        and ("endpoint_type" in o or ("date" in o and "model_id" in o) or "mean_e2el_ms" in o)
    )


def parse(c: Content) -> list[ImportedRun]:
    return [_run(Source(c, line, obj, "one vllm bench serve result")) for line, obj in c.docs]


def _rate(s: Source) -> float | None:
    v = s.obj.get("request_rate")
    if v is None or v == "inf":
        return None
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            raise s.fail(f"field 'request_rate' must be a number or 'inf', got {v!r}") from None
    elif isinstance(v, bool) or not isinstance(v, (int, float)):
        raise s.fail("field 'request_rate' must be a number or 'inf'")
    else:
        f = float(v)
    return f if math.isfinite(f) else None


def _run(s: Source) -> ImportedRun:
    completed = s.req_int("completed")
    s.req_num("duration")
    s.req_int("total_output_tokens")
    backend = s.str_("endpoint_type") or s.str_("backend") or ""
    notes = [
        "vLLM's ITL is one gap per chunk (inferlab's ICL): its itl statistics are mapped to "
        "icl_ms_*; per-token ITL exists only in the records",
    ]
    rate = _rate(s)
    conc = s.int_("max_concurrency")
    det = read_detailed(s, _FIELDS, lambda: _records(s, notes), notes)
    failed = s.int_("failed") or 0
    det.summary["requests"] = float(completed + failed)

    date = s.str_("date")
    if date:
        notes.append(
            f"vLLM's 'date' ({date}, local time, no zone) is when the result was written, "
            "after the run: started_at is left unset"
        )
    return detailed_run(
        s,
        _FIELDS,
        det,
        notes,
        definitions=(
            f"vllm bench serve ({backend or 'unknown endpoint'}): TTFT to the first chunk with "
            "choices (role-only chunk on chat); ITL per chunk gap (= inferlab ICL); "
            "E2E to the last chunk; TPOT = (E2E − TTFT)/(output_tokens − 1), excludes TTFT"
        ),
        model=s.str_("model_id"),
        load=(conc, rate),
        label=load_label(conc, rate),
    )


def _records(s: Source, notes: list[str]) -> tuple[list[RequestRecord], dict[str, int]]:
    d = read_details(s)
    starts = s.num_list("start_times", d.n) if "start_times" in s.obj else None
    records: list[RequestRecord] = []
    dropped: list[float] = []  # TTFT shift of requests whose leading chunks were dropped
    spread = 0
    n_itl = n_tpot = 0
    for i in range(d.n):
        rec = detail_record(d, i, round(starts[i] * _NS) if starts else 0, TOOL)
        records.append(rec)
        if not rec.ok:
            continue
        itl, out_len = d.itls[i], d.out_lens[i]
        n_itl += len(itl)
        n_tpot += out_len > 1
        events = events_from_gaps(rec.send_ns, d.ttfts[i], itl)
        surplus = len(events) - max(out_len, 1)
        if surplus > 0:
            # more chunks than tokens: the leading ones carried no token (chat's role chunk)
            dropped.append(sum(itl[:surplus]) * 1000.0)
            events = events[surplus:]
        spread += len(events) < out_len
        rec.event_ns = events
        rec.event_tokens = spread_tokens(len(events), out_len)
        rec.end_ns = events[-1]
        rec.usage_completion_tokens = out_len
    _record_notes(s, d, records, notes, spread, dropped, bool(starts))
    return records, {"itl": n_itl, "tpot": n_tpot}


def _record_notes(
    s: Source,
    d: Details,
    records: list[RequestRecord],
    notes: list[str],
    spread: int,
    dropped: list[float],
    starts: bool,
) -> None:
    """The notes on how the records were rebuilt, and on a client whose mean E2E the
    records cannot reproduce."""
    notes.append(
        "records: event_ns = send + TTFT + cumulative ITL gaps (one event per chunk); "
        "event_tokens spread output_len over the events (first event 1 token, "
        "the rest evenly over the later events, ≥ 1 each)"
        + (f" — {spread} request(s) had fewer chunks than tokens" if spread else "")
    )
    if dropped:
        notes.append(
            f"{len(dropped)} request(s) had more chunks than output tokens: vLLM times TTFT at "
            "the first chunk with choices, which on chat endpoints is the role-only chunk. "
            "The surplus leading chunks carry no token and were dropped, so inferlab's "
            "TTFT = vLLM ttft + the dropped gaps (mean shift "
            f"+{sum(dropped) / len(dropped):.4f} ms) and TPOT shrinks accordingly"
        )
    if starts:
        notes.append(
            "send_ns = start_times × 1e9 (the vLLM client's time.perf_counter(), monotonic)"
        )
    else:
        notes.append("no start_times: each request's send_ns is 0 (times relative to its send)")
    notes.append(
        "output_lens (usage completion_tokens, else vLLM's tokenizer count) → "
        "usage_completion_tokens"
    )
    ok = [i for i in range(d.n) if records[i].ok]
    tool_e2e = s.num("mean_e2el_ms")
    if tool_e2e is not None and ok:
        rebuilt = sum(d.ttfts[i] + sum(d.itls[i]) for i in ok) / len(ok) * 1000.0
        if abs(tool_e2e - rebuilt) > 1e-3:
            notes.append(
                f"vLLM's mean E2E ({tool_e2e:.4f} ms) exceeds mean(TTFT + ΣITL) = "
                f"{rebuilt:.4f} ms by {tool_e2e - rebuilt:.4f} ms: this client version most "
                "likely moved the request end at chunks that are not in its ITL list "
                "(the trailing usage chunk); "
                "the records end at the last chunk in the ITL list"
            )


FORMAT = Format(
    name="vllm bench serve",
    tool=TOOL,
    expects="vllm bench serve --save-result JSON (an object with 'completed', 'duration' and "
    "'endpoint_type' or 'date' + 'model_id')",
    sniff=sniff,
    parse=parse,
)
