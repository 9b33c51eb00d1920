"""``inferlab bench`` with its record: every finished load point committed to the store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab import METRICS_VERSION
from inferlab.campaign.context import Clock
from inferlab.config.bench import BenchConfig, LoadSpec
from inferlab.config.campaign import CampaignFile
from inferlab.config.urls import redact_url
from inferlab.cpus import format_cpu_list
from inferlab.engines import get_engine
from inferlab.environment import snapshot
from inferlab.load.bench import (
    BenchEvents,
    BenchResult,
    LoadPoint,
    PointResult,
    ResultSink,
    replay_json,
    run_bench,
)
from inferlab.load.http import Endpoint
from inferlab.picks import pick
from inferlab.server.scrape import Scrape, Scraper, derive
from inferlab.store import Store

__all__ = ["NOT_STORED", "Recording", "StoreSink", "bench_config", "bench_with_record"]

DEFINITIONS = f"inferlab/{METRICS_VERSION}"


class StoreSink:
    """Commits each load point (run + every request) in one transaction as soon as it ends:
    killing the process loses at most the point in progress."""

    def __init__(
        self,
        db: Path | Store,
        cfg: BenchConfig,
        campaign: str,
        config: str | None,
        scrape: bool = True,
        config_id: int | None = None,
        purpose: str = "measure",
        environment: dict[str, Any] | None = None,
        environment_extra: dict[str, Any] | None = None,
    ) -> None:
        self._own = not isinstance(db, Store)
        self.store = Store(db) if not isinstance(db, Store) else db
        self._config_id = config_id
        self.spec = get_engine(cfg.engine or "openai")  # the detected one once started
        self._want_scrape = scrape
        self.scrape = scrape and self.spec.metrics_path is not None
        self._scraper: Scraper | None = None
        self.cfg = cfg
        self.campaign = campaign
        self.config = config
        self.run_ids: list[int] = []
        self.purpose = purpose  # "profiled": a pass replayed while a profile is captured
        self._ids: tuple[int, int, int] | None = None
        self._meta: dict[str, Any] = {}
        self._environment = environment  # a snapshot taken elsewhere (a server's node)
        self._env_extra = dict(environment_extra or {})  # recorded beside it: the CPU split

    def start(self, meta: dict[str, Any]) -> None:
        cfg = self.cfg
        self._meta = meta
        engine = str(meta.get("engine") or cfg.engine or "openai")
        self.spec = get_engine(engine)
        self.scrape = self._want_scrape and self.spec.metrics_path is not None
        with self.store.transaction():
            cid = self.store.campaign_id(self.campaign)
            gid = self._config_id or self.store.config_id(
                cid,
                self.config or f"{engine}:{meta['model']}",
                engine=engine,
                model=meta["model"],
                extra={"url": redact_url(cfg.url), "endpoint": cfg.endpoint},
            )
            snap = self._environment or snapshot(engine_name=engine)
            snap = {**snap, "engine_version": meta.get("engine_version"), **self._env_extra}
            eid = self.store.runs.environment_id(snap)
        self._ids = (cid, gid, eid)

    def begin(self, point: LoadPoint, trial: int) -> None:
        if self.scrape:
            base = Endpoint.parse(self.cfg.url).base
            self._scraper = Scraper(base + str(self.spec.metrics_path), interval_s=2.0).start()

    def point(self, res: PointResult) -> None:
        scrapes = self._scraper.stop() if self._scraper is not None else []
        self._scraper = None
        self.commit(res, scrapes)

    def commit(self, res: PointResult, scrapes: list[Scrape]) -> None:
        """Store one finished point with the ``/metrics`` scrapes taken around it."""
        assert self._ids is not None
        cid, gid, eid = self._ids
        p = res.point
        summary = res.summary.to_json()
        if res.clients:
            summary["clients"] = res.clients
        summary.update(replay_json(res))  # a replay: its pattern, stored with the run
        if scrapes:
            summary["server"] = derive(self.spec, scrapes)
        with self.store.transaction():
            rid = self.store.runs.add(
                campaign_id=cid,
                config_id=gid,
                environment_id=eid,
                source="inferlab bench",
                definitions=DEFINITIONS,
                metrics_version=METRICS_VERSION,
                label=p.label,
                **p.pattern.columns(),
                model=self._meta.get("model"),
                workload=self._meta["workload"],
                summary=summary,
                **pick(res, "trial", "records", "started_at", "ended_at", "workers"),
                client_lag=res.loop_lag_ms.to_json(),
                warnings=[w.to_json() for w in res.warnings],
                **pick(res, "interrupted", "rejected"),
                purpose=self.purpose,
                trust=res.trust.state,
                trust_reasons=res.trust.to_json(),
                stop=res.stop.to_json() if res.stop is not None else None,
            )
            self.store.runs.add_server_metrics(
                rid,
                [(sc.t_ns, x.name, dict(x.labels), x.value) for sc in scrapes for x in sc.samples],
            )
        self.run_ids.append(rid)

    def close(self) -> None:
        if self._scraper is not None:
            self._scraper.stop()
        if self._own:
            self.store.close()


def bench_config(
    camp: CampaignFile,
    url: str,
    model: str,
    engine: str,
    client_cpus: tuple[int, ...] | None = None,
    reference: bool = False,
) -> BenchConfig:
    """The campaign's load section as one sweep against ``url``; ``reference``: the baseline
    of a sequential A/B, measured to the cap (a reference stopped on a lucky narrow interval
    would make candidates look different when they are not)."""
    return BenchConfig(
        url=url,
        model=model,
        engine=engine,
        **pick(camp.load, *LoadSpec.model_fields),  # the fields both share, as they are
        slo=camp.slo,
        lag_limit_ms=camp.load.max_client_lag_ms,
        client_cpus=client_cpus,
        stop_on_precision=not reference,
    )


@dataclass(frozen=True)
class Recording:
    """Where a sweep's points go: into ``db`` (None: not stored) as config ``config`` of
    ``campaign`` (None: ``engine:model``; ``config_id``: a config row already made);
    ``clock``: the reference engine's points read on its model clock (``campaign.parts.clock``).
    """

    db: Path | Store | None = None
    campaign: str = "bench"
    config: str | None = None
    clock: Clock | None = None
    config_id: int | None = None

    def sink(
        self,
        cfg: BenchConfig,
        purpose: str = "measure",
        environment_extra: dict[str, object] | None = None,
    ) -> StoreSink:
        """The sink that stores ``cfg``'s points here (``StoreSink``; ``db`` must be given)."""
        assert self.db is not None
        return StoreSink(
            self.db,
            cfg,
            self.campaign,
            self.config,
            config_id=self.config_id,
            purpose=purpose,
            environment_extra=environment_extra,
        )

    def sweep(
        self, cfg: BenchConfig, events: BenchEvents | None = None, out: Path | None = None
    ) -> tuple[BenchResult, list[int]]:
        """Run the sweep, every point stored as it ends. Returns the stored run ids."""
        clock = self.clock
        sinks: list[ResultSink] = [clock.sink(cfg.url, cfg)] if clock is not None else []
        env: dict[str, object] | None = None
        if cfg.client_cpus:
            cpus = format_cpu_list(cfg.client_cpus)
            env = {"cpu_split": {"server": None, "client": cpus, "source": "--client-cpus"}}
        store_sink = self.sink(cfg, environment_extra=env) if self.db is not None else None
        if store_sink is not None:
            sinks.append(store_sink)
        live = clock.live(cfg)[0] if clock is not None else cfg  # to the cap: stop on its clock
        result = run_bench(live, events, out, sinks)
        return result, store_sink.run_ids if store_sink is not None else []


#: a sweep stored nowhere, on no model clock
NOT_STORED = Recording()


def bench_with_record(
    cfg: BenchConfig,
    events: BenchEvents | None = None,
    *,
    out: Path | None = None,
    db: Path | Store | None = None,
    campaign: str = "bench",
    config: str | None = None,
    clock: Clock | None = None,
    config_id: int | None = None,
) -> tuple[BenchResult, list[int]]:
    """``Recording(db, campaign, config, clock, config_id).sweep(cfg, events, out)``: the sweep
    with ``db``, every point stored as it ends. Returns the stored run ids."""
    return Recording(db, campaign, config, clock, config_id).sweep(cfg, events, out)
