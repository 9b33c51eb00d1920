"""``inferlab bench`` with its record: every finished load point committed to the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferlab import METRICS_VERSION
from inferlab.config.bench import BenchConfig
from inferlab.environment import snapshot
from inferlab.load.bench import BenchEvents, BenchResult, PointResult, ResultSink, run_bench
from inferlab.store import Store

__all__ = ["StoreSink", "bench_with_record"]

DEFINITIONS = f"inferlab/{METRICS_VERSION}"


class StoreSink:
    """Commits each load point (run + every request) in one transaction as soon as it ends:
    killing the process loses at most the point in progress."""

    def __init__(self, db: Path, cfg: BenchConfig, campaign: str, config: str | None) -> None:
        self.store = Store(db)
        self.cfg = cfg
        self.campaign = campaign
        self.config = config
        self.run_ids: list[int] = []
        self._ids: tuple[int, int, int] | None = None
        self._meta: dict[str, Any] = {}

    def start(self, meta: dict[str, Any]) -> None:
        cfg = self.cfg
        self._meta = meta
        with self.store.transaction():
            cid = self.store.campaign_id(self.campaign)
            gid = self.store.config_id(
                cid,
                self.config or f"{cfg.engine}:{meta['model']}",
                engine=cfg.engine,
                model=meta["model"],
                extra={"url": cfg.url, "endpoint": cfg.endpoint},
            )
            eid = self.store.environment_id(
                snapshot(engine_name=cfg.engine, engine_version=meta.get("engine_version"))
            )
        self._ids = (cid, gid, eid)

    def point(self, res: PointResult) -> None:
        assert self._ids is not None
        cid, gid, eid = self._ids
        p = res.point
        with self.store.transaction():
            rid = self.store.add_run(
                campaign_id=cid,
                config_id=gid,
                environment_id=eid,
                source="inferlab bench",
                definitions=DEFINITIONS,
                metrics_version=METRICS_VERSION,
                label=p.label,
                concurrency=p.concurrency,
                rate=p.rate,
                max_concurrency=p.max_concurrency,
                trial=res.trial,
                model=self._meta.get("model"),
                workload=self._meta["workload"],
                records=res.records,
                summary=res.summary.to_json(),
                started_at=res.started_at,
                ended_at=res.ended_at,
                workers=res.workers,
                client_lag=res.loop_lag_ms.to_json(),
                warnings=[w.to_json() for w in res.warnings],
                interrupted=res.interrupted,
                rejected=res.rejected,
            )
        self.run_ids.append(rid)

    def close(self) -> None:
        self.store.close()


def bench_with_record(
    cfg: BenchConfig,
    events: BenchEvents | None = None,
    *,
    out: Path | None = None,
    db: Path | None = None,
    campaign: str = "bench",
    config: str | None = None,
) -> tuple[BenchResult, list[int]]:
    """Run the sweep; with ``db``, store every point as it ends. Returns the stored run ids."""
    sinks: list[ResultSink] = []
    store_sink = StoreSink(db, cfg, campaign, config) if db is not None else None
    if store_sink is not None:
        sinks.append(store_sink)
    result = run_bench(cfg, events, out, sinks)
    return result, store_sink.run_ids if store_sink is not None else []
