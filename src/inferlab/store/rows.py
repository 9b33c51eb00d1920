"""A stored run as listed (``RunRow``): its row, its trust (assessed now when it was stored
before schema 5) and its stop record. Requests are ``inferlab.store.requests``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.stats.trust import assess

__all__ = ["RunRow", "run_row"]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class RunRow:
    """One stored load point (a run) with its config and environment, as listed."""

    id: int
    campaign: str
    config: str
    config_hash: str
    source: str
    definitions: str
    label: str
    concurrency: int | None
    rate: float | None
    trial: int
    model: str | None
    workload_hash: str
    started_at: str | None
    interrupted: bool
    summary: dict[str, Any]
    environment: dict[str, Any]
    metrics_version: int | None
    n_requests: int
    #: "measure", "profiled" (the load replayed while a profile was captured) or "recheck"
    #: (the baseline measured again after the last config, ``store.recheck``)
    purpose: str = "measure"
    #: 'trusted' | 'untrusted' (runs stored before schema 5 are assessed when read)
    trust: str = "trusted"
    #: why it is untrusted: ``[{"reason", "message", "fix"}]``
    trust_reasons: tuple[dict[str, str], ...] = ()
    #: why the point stopped (adaptive/sequential points; None for a fixed count)
    stop: dict[str, Any] | None = None


def run_row(r: Sequence[Any]) -> RunRow:
    summary = json.loads(r[14])
    reasons = [dict(x) for x in json.loads(r[20] or "[]")]
    trust = r[19]
    if trust is None and r[4] == "inferlab bench":  # stored before schema 5: assess now
        lag = json.loads(r[22]) if r[22] else {}
        t = assess(
            lag_p99_ms=lag.get("p99"),
            tpot_median_ms=(summary.get("tpot_ms") or {}).get("p50"),
            interrupted=bool(r[13]),
        )
        trust, reasons = t.state, t.to_json()
    return RunRow(
        id=r[0],
        campaign=r[1],
        config=r[2],
        config_hash=r[3],
        source=r[4],
        definitions=r[5],
        label=r[6],
        concurrency=r[7],
        rate=r[8],
        trial=r[9],
        model=r[10],
        workload_hash=r[11],
        started_at=r[12],
        interrupted=bool(r[13]),
        summary=summary,
        environment=json.loads(r[15]) if r[15] else {},
        metrics_version=r[16],
        n_requests=r[17],
        purpose=r[18],
        trust=trust or "trusted",
        trust_reasons=tuple(reasons),
        stop=json.loads(r[21]) if r[21] else None,
    )
