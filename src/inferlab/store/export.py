"""Export runs or requests from the store as CSV, JSONL or Parquet; ``FORMAT_VERSION``.

``FORMAT_VERSION`` versions the formats scripts read: every JSONL record of ``export``, the
document of ``compare --format json`` and of ``bench --json`` carry it as ``format_version``, a
Parquet file in its schema metadata. CSV (``export``, ``compare --format csv``) carries none:
its header names every column, and a column repeating one number on every row would shift
readers that index columns by position.
History (bump it when a field changes meaning or goes away; a reader should refuse a version
newer than it knows):

- 1: the field introduced; the layout is the one before it (runs: identity, then the export
  columns of ``METRICS`` in table order).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from inferlab.errors import ConfigError
from inferlab.store.db import RunRow, Store

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["FORMAT_VERSION", "export", "request_rows", "run_rows"]

#: version of the export, ``compare --format json`` and ``bench --json`` formats (history above)
FORMAT_VERSION = 1

#: the stored distribution's statistics a ``distribution`` metric exports, one column each
_DIST_STATS = ("mean", "p50", "p99")

Format = Literal["csv", "jsonl", "parquet"]


def run_rows(runs: Sequence[RunRow]) -> list[dict[str, JsonValue]]:
    """One flat row per run: identity, load point, then the summary's columns of each metric
    ``METRICS`` exports."""
    from inferlab.stats.metrics import METRICS  # here: `inferlab runs` never imports numpy

    out = []
    slo = any("slo" in r.summary for r in runs)
    for r in runs:
        s = r.summary
        row: dict[str, JsonValue] = {
            "run_id": r.id,
            "campaign": r.campaign,
            "config": r.config,
            "config_hash": r.config_hash,
            "source": r.source,
            "definitions": r.definitions,
            "label": r.label,
            "concurrency": r.concurrency,
            "rate": r.rate,
            "trial": r.trial,
            "model": r.model,
            "workload_hash": r.workload_hash,
            "started_at": r.started_at,
            "interrupted": r.interrupted,
            "requests": r.n_requests,
            "gpu_name": r.environment.get("gpu_name"),
            "engine_version": r.environment.get("engine_version"),
        }
        row["trust"] = r.trust
        row["stop"] = (r.stop or {}).get("reason")
        for m in METRICS.values():
            if m.export == "value":
                row[m.name] = s.get(m.name)
            elif m.export == "distribution":
                d = s.get(m.name) or {}
                for stat in _DIST_STATS:
                    row[f"{m.name}_{stat}"] = d.get(stat)
        if slo:
            row.update(_slo_columns(s.get("slo")))
        out.append(row)
    return out


def _slo_columns(slo: dict[str, Any] | None) -> dict[str, Any]:
    """The SLO of a run (``stats.slo``): its limits, holds/fails/undecided, goodput as a share
    (0–1) with its Wilson interval; None for a run measured without one."""
    slo = slo or {}
    g = slo.get("goodput") or {}
    return {
        "slo": slo.get("slo"),
        "slo_state": slo.get("state"),
        "goodput_share": g.get("estimate"),
        "goodput_share_low": g.get("low"),
        "goodput_share_high": g.get("high"),
    }


def request_rows(store: Store, runs: Sequence[RunRow]) -> Iterable[dict[str, Any]]:
    """One row per request; token arrival times as ms offsets from send (a JSON list)."""
    for r in runs:
        for q in store.requests(r.id):
            yield {
                "run_id": r.id,
                "config": r.config,
                "label": r.label,
                "trial": r.trial,
                "idx": q.index,
                "request_id": q.request_id,
                "warmup": q.warmup,
                "dropped": q.dropped,
                "session": q.session,
                "turn": q.turn,
                "scheduled_ns": q.scheduled_ns,
                "send_ns": q.send_ns,
                "end_ns": q.end_ns,
                "status": q.status,
                "error_kind": q.error_kind.value if q.error_kind else None,
                "error_message": q.error_message,
                "ttft_ms": q.ttft_ns / 1e6 if q.ttft_ns is not None else None,
                "e2e_ms": q.e2e_ns / 1e6 if q.e2e_ns is not None else None,
                "output_tokens": q.output_tokens if q.ok else None,
                "input_tokens": q.input_tokens,
                "usage_completion_tokens": q.usage_completion_tokens,
                "counted_output_tokens": q.counted_output_tokens,
                "event_ms": json.dumps([(t - q.send_ns) / 1e6 for t in q.event_ns]),
                "event_tokens": json.dumps(q.event_tokens),
            }


def export(
    store: Store,
    runs: Sequence[RunRow],
    what: Literal["runs", "requests"],
    fmt: Format,
    path: Path,
) -> int:
    """Write ``runs`` (or their requests) to ``path``; returns the number of rows. JSONL
    records and Parquet metadata carry ``format_version``; CSV rows are as they were."""
    rows: Iterable[dict[str, Any]] = run_rows(runs) if what == "runs" else request_rows(store, runs)
    if fmt == "jsonl":
        n = 0
        with path.open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps({"format_version": FORMAT_VERSION, **row}, default=str) + "\n")
                n += 1
        return n
    materialized = list(rows)
    if fmt == "csv":
        with path.open("w", encoding="utf-8", newline="") as f:
            if materialized:
                w = csv.DictWriter(f, fieldnames=list(materialized[0]))
                w.writeheader()
                w.writerows(materialized)
        return len(materialized)
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ConfigError(
                "--format parquet needs pyarrow: pip install 'inferlab[parquet]'"
            ) from None
        table = pa.Table.from_pylist(materialized)
        table = table.replace_schema_metadata({"format_version": str(FORMAT_VERSION)})
        pq.write_table(table, str(path))
        return len(materialized)
    raise ConfigError(f"--format: expected csv, jsonl or parquet, got {fmt!r}")
