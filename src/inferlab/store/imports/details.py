"""The per-request detail arrays that sglang.bench_serving (``--output-details``) and vLLM
(``--save-detailed``) share, and the summary both build beside them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inferlab.records import RequestRecord
from inferlab.store.imports._common import ImportedRun, classify_error, token_workload
from inferlab.store.imports.fieldmap import StatFields, map_scalars, map_stat_fields
from inferlab.store.imports.source import Source

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["Detailed", "Details", "detail_record", "read_detailed", "read_details"]

#: the arrays whose presence means the file has per-request details
_REQUIRED = ("ttfts", "itls", "output_lens")


@dataclass
class Details:
    """The per-request arrays that sglang.bench_serving (``--output-details``) and vLLM
    (``--save-detailed``) share: TTFTs (s), chunk gaps (s), lengths, error texts."""

    ttfts: list[float]
    itls: list[list[float]]
    out_lens: list[int]
    in_lens: list[int] | None
    errors: list[str] | None

    @property
    def n(self) -> int:
        return len(self.ttfts)


def read_details(s: Source) -> Details:
    """Read and cross-check the per-request arrays (same length; output lengths summing to
    ``total_output_tokens``, else the details belong to another run)."""
    ttfts = s.num_list("ttfts") or []
    n = len(ttfts)
    d = Details(
        ttfts=ttfts,
        itls=s.nested_num_list("itls", n) or [],
        out_lens=s.int_list("output_lens", n) or [],
        in_lens=s.int_list("input_lens", n) if "input_lens" in s.obj else None,
        errors=s.str_list("errors", n) if "errors" in s.obj else None,
    )
    total_out = s.req_int("total_output_tokens")
    if sum(d.out_lens) != total_out:
        raise s.fail(
            f"sum(output_lens) = {sum(d.out_lens)} but total_output_tokens = {total_out}: "
            "the per-request details do not belong to this run"
        )
    return d


def detail_record(d: Details, i: int, send_ns: int, tool: str) -> RequestRecord:
    """Request ``i`` of the details as a record: its input length, and when it failed (an
    error text, or no output and no TTFT) the classified error, ending at its send."""
    err = d.errors[i] if d.errors else ""
    rec = RequestRecord(index=i, request_id=str(i), send_ns=send_ns)
    rec.input_tokens = d.in_lens[i] if d.in_lens else None
    if err or (d.out_lens[i] == 0 and d.ttfts[i] == 0.0):
        rec.error_kind = classify_error(err)
        rec.error_message = err or f"request failed ({tool} gives no reason)"
        rec.end_ns = send_ns
    return rec


@dataclass(frozen=True)
class DetailedFields:
    """The field map of a bench_serving-style result (sglang's and vLLM's clients): its
    ``<stat>_<metric>_ms`` aggregates, scalar fields, workload fields kept as given, and the
    per-request arrays (left out of the tool's summary)."""

    tool: str
    stats: StatFields
    scalars: Mapping[str, str]
    workload: tuple[str, ...]
    arrays: tuple[str, ...]


@dataclass
class Detailed:
    """One run's records (empty without details), mapped summary and workload."""

    details: bool  # the file has the per-request arrays
    records: list[RequestRecord]
    summary: dict[str, float]
    workload: dict[str, Any]


def read_detailed(
    s: Source,
    fields: DetailedFields,
    records: Callable[[], tuple[list[RequestRecord], dict[str, int]]],
    notes: list[str],
) -> Detailed:
    """Records (``records()``, when the details are there: the records and the sample count
    per gap metric), the workload fields and token lengths, then the aggregate fields."""
    recs: list[RequestRecord] = []
    counts: dict[str, int] = {}
    workload: dict[str, JsonValue] = {
        k: s.obj[k] for k in fields.workload if s.obj.get(k) is not None
    }
    details = all(k in s.obj for k in _REQUIRED)
    if details:
        recs, counts = records()
        token_workload(recs, workload)
    summary: dict[str, float] = {}
    map_stat_fields(s, fields.stats, s.req_int("completed"), counts, summary, notes)
    map_scalars(fields.scalars, s.num, summary)
    return Detailed(details, recs, summary, workload)


def detailed_run(
    s: Source,
    fields: DetailedFields,
    det: Detailed,
    notes: list[str],
    *,
    definitions: str,
    model: str | None,
    load: tuple[int | None, float | None],
    label: str,
) -> ImportedRun:
    """The imported run at ``load`` = (concurrency, rate); the tool's summary is its object
    without the per-request arrays."""
    conc, rate = load
    return ImportedRun(
        tool=fields.tool,
        tool_version=None,
        definitions=definitions,
        model=model,
        label=label,
        concurrency=conc,
        rate=rate,
        started_at=None,
        duration_s=s.req_num("duration"),
        records=det.records,
        summary=det.summary,
        tool_summary={k: v for k, v in s.obj.items() if k not in fields.arrays},
        notes=notes,
        workload=det.workload,
    )
