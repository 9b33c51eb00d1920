"""The store's runs (``store.runs``): one load point and all its raw requests written in one
go, the environment it ran in, the server's metrics beside it, and the runs read back as
typed rows. Called, the stored runs."""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab.errors import StoreError
from inferlab.records import RequestRecord
from inferlab.store.jsoncols import dumps, explain, now
from inferlab.store.requests import INSERT_REQUEST, SELECT_REQUESTS, pack_request, unpack_request
from inferlab.store.rows import RunRow, run_row

__all__ = ["MeasuredPoint", "Runs", "workload_hash"]


def workload_hash(workload: Mapping[str, Any]) -> str:
    """Hash of the prompt and output length distribution (what makes workloads comparable)."""
    return hashlib.sha256(dumps(dict(workload)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class MeasuredPoint:
    """A finished (not interrupted, not rejected) load point of one config, as stored."""

    label: str
    trial: int
    #: "measure" or "recheck" (``store.recheck``)
    purpose: str
    summary: dict[str, Any]


class Runs:
    """The runs of a store, their requests and environments."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db = db
        self.path = path

    def environment_id(self, snap: Mapping[str, Any]) -> int:
        """A new environments row for ``snap`` (``inferlab.environment``)."""
        cur = self.db.execute(
            "INSERT INTO environments(inferlab_version, host, cpu, gpu_name, gpu_count, "
            "gpu_memory_mib, driver, engine_name, engine_version, snapshot_json, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (*(snap.get(k) for k in _ENV_COLUMNS.split()), dumps(dict(snap)), now()),
        )
        return int(cur.lastrowid or 0)

    def add(  # noqa: PLR0913  keyword-only, one per column of a run row
        self,
        *,
        campaign_id: int,
        config_id: int,
        environment_id: int | None,
        source: str,
        definitions: str,
        metrics_version: int | None,
        label: str,
        concurrency: int | None,
        rate: float | None,
        max_concurrency: int | None = None,
        trial: int = 0,
        model: str | None,
        workload: Mapping[str, Any],
        records: Sequence[RequestRecord],
        summary: Mapping[str, Any],
        started_at: str | None = None,
        ended_at: str | None = None,
        workers: int | None = None,
        client_lag: Mapping[str, Any] | None = None,
        warnings: Sequence[Mapping[str, Any]] = (),
        interrupted: bool = False,
        rejected: str | None = None,
        notes: Sequence[str] = (),
        purpose: str = "measure",
        trust: str | None = None,
        trust_reasons: Sequence[Mapping[str, Any]] = (),
        stop: Mapping[str, Any] | None = None,
    ) -> int:
        """Insert one load point and all its requests. Call inside ``transaction()``.
        ``purpose`` "profiled": a pass replayed while capturing a profile (never a verdict).
        ``trust`` None: not assessed (imports); it is assessed from the summary when read."""
        args = locals()
        row = {k: args[k] for k in _RUN_COLUMNS}
        row.update(
            _run_json(
                records,
                workload=workload,
                summary=summary,
                client_lag=client_lag,
                warnings=warnings,
                notes=notes,
                trust_reasons=trust_reasons,
                stop=stop,
            )
        )
        row["interrupted"] = int(interrupted)
        sql = f"INSERT INTO runs({', '.join(row)}) VALUES ({','.join('?' * len(row))})"
        run_id = int(self.db.execute(sql, tuple(row.values())).lastrowid or 0)
        self.db.executemany(
            INSERT_REQUEST, (pack_request(run_id, i, r) for i, r in enumerate(records))
        )
        return run_id

    def add_server_metrics(
        self, run_id: int, samples: Sequence[tuple[int, str, dict[str, str], float]]
    ) -> None:
        """The server's metric samples of run ``run_id``: (t_ns, name, labels, value). A NaN
        sample (SGLang 0.5.17 exports some gauges as NaN before their first event) is not
        stored: SQLite would turn it into NULL."""
        self.db.executemany(
            "INSERT INTO server_metrics(run_id, t_ns, name, labels_json, value) VALUES (?,?,?,?,?)",
            ((run_id, t, n, dumps(lb), v) for t, n, lb, v in samples if not math.isnan(v)),
        )

    def __call__(
        self,
        campaign: str | None = None,
        run_ids: Sequence[int] | None = None,
        config: str | None = None,
        purpose: str | None = "measure",
    ) -> list[RunRow]:
        """Stored runs, oldest first; by default only measurements (``purpose=None``: all,
        the profiled passes included)."""
        q = _SELECT_RUNS
        args: list[str | int] = []
        for clause, value in (
            ("c.name = ?", campaign),
            ("g.name = ?", config),
            ("r.purpose = ?", purpose),
        ):
            if value is not None:
                q += f" AND {clause}"
                args.append(value)
        if run_ids is not None:
            q += f" AND r.id IN ({','.join('?' * len(run_ids))})"
            args.extend(run_ids)
        try:
            rows = self.db.execute(q + " ORDER BY r.id", args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(explain(self.path, exc)) from None
        return [run_row(r) for r in rows]

    def requests(self, run_id: int) -> list[RequestRecord]:
        """Every request of run ``run_id``, in the order they were stored."""
        rows = self.db.execute(SELECT_REQUESTS, (run_id,)).fetchall()
        return [unpack_request(r) for r in rows]

    def meta(self, run_id: int) -> dict[str, Any]:
        """Every column of a run (JSON columns decoded), for export and comparability checks."""
        cur = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,))
        row = cur.fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no run {run_id}")
        out = dict(zip([d[0] for d in cur.description], row))
        for k in list(out):
            if k.endswith("_json") and out[k] is not None:
                out[k[: -len("_json")]] = json.loads(out.pop(k))
        return out

    def measured_cells(self, campaign: str, config_id: int) -> set[tuple[str, int]]:
        """(label, trial) cells of config row ``config_id`` measured to the end (what
        ``--resume`` skips): not interrupted, not rejected, purpose "measure"."""
        rows = self.db.execute(
            "SELECT r.label, r.trial FROM runs r JOIN campaigns c ON c.id = r.campaign_id "
            "WHERE c.name = ? AND r.config_id = ? AND r.interrupted = 0 AND r.rejected IS NULL "
            "AND r.purpose = 'measure'",
            (campaign, config_id),
        ).fetchall()
        return {(str(a), int(b)) for a, b in rows}

    def measured_points(self, config_id: int) -> list[MeasuredPoint]:
        """The finished measurements and rechecks of config row ``config_id``, oldest first
        (what the baseline's recheck still has to do)."""
        rows = self.db.execute(
            "SELECT label, trial, purpose, summary_json FROM runs WHERE config_id = ? "
            "AND interrupted = 0 AND rejected IS NULL AND purpose IN ('measure', 'recheck') "
            "ORDER BY id",
            (config_id,),
        ).fetchall()
        return [MeasuredPoint(str(a), int(b), str(c), json.loads(d)) for a, b, c, d in rows]


_SELECT_RUNS = (
    "SELECT r.id, c.name, g.name, g.hash, r.source, r.definitions, r.label, "
    "r.concurrency, r.rate, r.trial, r.model, r.workload_hash, r.started_at, "
    "r.interrupted, r.summary_json, e.snapshot_json, r.metrics_version, "
    "(SELECT count(*) FROM requests q WHERE q.run_id = r.id), r.purpose, "
    "r.trust, r.trust_json, r.stop_json, r.client_lag_json "
    "FROM runs r JOIN campaigns c ON c.id = r.campaign_id "
    "JOIN configs g ON g.id = r.config_id "
    "LEFT JOIN environments e ON e.id = r.environment_id WHERE 1=1"
)

#: the environments columns read from a snapshot, in the table's order
_ENV_COLUMNS = "inferlab_version host cpu gpu_name gpu_count gpu_memory_mib driver engine_name"
_ENV_COLUMNS += " engine_version"

#: the runs columns stored as given to ``add``
_RUN_COLUMNS = (
    "campaign_id",
    "config_id",
    "environment_id",
    "source",
    "definitions",
    "metrics_version",
    "label",
    "concurrency",
    "rate",
    "max_concurrency",
    "trial",
    "model",
    "started_at",
    "ended_at",
    "workers",
    "rejected",
    "purpose",
    "trust",
)


def _run_json(
    records: Sequence[RequestRecord],
    *,
    workload: Mapping[str, Any],
    summary: Mapping[str, Any],
    client_lag: Mapping[str, Any] | None,
    warnings: Sequence[Mapping[str, Any]],
    notes: Sequence[str],
    trust_reasons: Sequence[Mapping[str, Any]],
    stop: Mapping[str, Any] | None,
) -> dict[str, str | int | None]:
    """The runs columns derived from ``add``'s arguments: the JSON ones, the workload's
    hash, and the first send / last end (ns) of the records."""
    sends = [r.send_ns for r in records if r.send_ns]
    ends = [r.end_ns for r in records if r.end_ns]
    return {
        "workload_json": dumps(dict(workload)),
        "workload_hash": workload_hash(workload),
        "start_ns": min(sends) if sends else None,
        "end_ns": max(ends) if ends else None,
        "client_lag_json": dumps(dict(client_lag)) if client_lag is not None else None,
        "warnings_json": dumps(list(warnings)),
        "summary_json": dumps(dict(summary)),
        "notes_json": dumps(list(notes)),
        "trust_json": dumps([dict(x) for x in trust_reasons]),
        "stop_json": dumps(dict(stop)) if stop is not None else None,
    }
