"""``inferlab import``: other tools' result files into the store, one transaction per file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.picks import pick
from inferlab.records import RequestRecord
from inferlab.stats.metrics import summarize
from inferlab.store.db import Store
from inferlab.store.imports import parse_file

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["Imported", "import_files"]


@dataclass(frozen=True)
class Imported:
    path: Path
    tool: str
    run_ids: list[int]
    with_requests: int  # runs that brought per-request data


def import_files(
    store: Store, paths: Sequence[Path], *, campaign: str = "imported", config: str | None = None
) -> list[Imported]:
    """Parse every file first (a damaged one raises ``ConfigError`` naming it), then store each
    file's runs in one transaction: nothing is half-imported."""
    parsed = [(p, parse_file(p)) for p in paths]
    out: list[Imported] = []
    for path, runs in parsed:
        ids: list[int] = []
        with store.transaction():
            cid = store.campaign_id(campaign)
            for run in runs:
                name = config or f"{run.tool}:{run.model or 'unknown-model'}"
                gid = store.config_id(
                    cid, name, engine=None, model=run.model, extra={"imported_from": run.tool}
                )
                eid = store.runs.environment_id(
                    {"tool": run.tool, "tool_version": run.tool_version, "source_file": str(path)}
                )
                summary = _summary(run.records, run.summary)
                ids.append(
                    store.runs.add(
                        campaign_id=cid,
                        config_id=gid,
                        environment_id=eid,
                        source=f"import:{run.tool}",
                        metrics_version=None,
                        **pick(run, "definitions", "label", "concurrency", "rate", "model"),
                        **pick(run, "workload", "records", "started_at"),
                        summary=summary,
                        notes=[*run.notes, f"tool summary: {run.tool_summary}"],
                    )
                )
        out.append(
            Imported(path, runs[0].tool if runs else "?", ids, sum(1 for r in runs if r.records))
        )
    return out


#: window-based numbers: the tool's own values win (per-request send times may be synthetic)
_WINDOW_KEYS = ("output_tok_s", "total_tok_s", "request_s", "duration_s")


def _summary(records: list[RequestRecord], mapped: dict[str, float]) -> dict[str, JsonValue]:
    """inferlab's summary of the per-request data (latency distributions by inferlab's
    definitions) with the tool's window-based throughputs; the tool's mapped values alone
    when the file has no per-request data."""
    out: dict[str, Any] = summarize(records).to_json() if records else {}
    for k in _WINDOW_KEYS:
        if k in mapped:
            out[k] = mapped[k]
    if not records:
        for k in ("ok", "input_tokens", "output_tokens"):
            if k in mapped:
                out[k] = mapped[k]
        for metric in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
            dist = {
                stat: mapped[f"{metric}_{key}"]
                for key, stat in (
                    ("mean", "mean"),
                    ("median", "p50"),
                    ("p50", "p50"),
                    ("p90", "p90"),
                    ("p95", "p95"),
                    ("p99", "p99"),
                    ("std", "std"),
                    ("min", "min"),
                    ("max", "max"),
                )
                if f"{metric}_{key}" in mapped
            }
            if dist:
                out[metric] = dist
    out["tool"] = dict(mapped)
    out["imported"] = True
    return out
