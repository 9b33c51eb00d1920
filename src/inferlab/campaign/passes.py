"""What runs on a config's live server once its stages are up (``campaign.pipeline``): each
pass takes the :class:`~inferlab.campaign.context.ConfigContext` and gives the config's outcome.

``sweep``: the config's unfinished cells (load point × trial), every finished point committed
at once (``campaign.parts.bench.StoreSink``), stopped early when its server exits; then
``profiled``: the profiled passes of ``[profile]`` (``campaign.parts.profiled``).
``sweep(..., before=NAME)``: the
baseline's interleaved pass just before candidate NAME (``[load] interleave``, purpose
'interleave', tagged with NAME; no profiled passes). A config's later launches
(``ConfigContext.launch`` ≥ 2, ``campaign.parts.rounds``) are tagged with their number
(``store.launches.LAUNCH_TAG``) and have no profiled passes. ``recheck``: the baseline,
launched again, rechecked at the points it has not been rechecked at (``campaign.parts.recheck``).
``kept``: nothing measured (``up``). ``capacity``: capacity at SLO on the live server
(``campaign.parts.capacity``; ``optimize``'s capacity objective).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from inferlab import interrupts
from inferlab.campaign.context import ConfigContext, ConfigOutcome
from inferlab.campaign.parts import profiled as profiled_passes
from inferlab.campaign.parts.bench import Recording, StoreSink, bench_config
from inferlab.campaign.parts.capacity import CONCURRENCY, Ladder, find_capacity
from inferlab.campaign.parts.recheck import RecheckTodo, recheck_pass
from inferlab.campaign.parts.stopping import baseline_refs
from inferlab.campaign.parts.watch import ServerWatch
from inferlab.config.bench import BenchConfig
from inferlab.errors import ConnectError, ServerRejected
from inferlab.load.adaptive import BaselineRef
from inferlab.load.bench import LoadPoint, run_bench
from inferlab.load.results import ResultSink
from inferlab.store.interleave import INTERLEAVE_TAG
from inferlab.store.launches import LAUNCH_TAG

__all__ = ["Pass", "PassFactory", "capacity", "kept", "profiled", "recheck", "sweep"]

Pass = Callable[[ConfigContext], ConfigOutcome]
#: a config's measuring pass from the plan's load points and the cells still to measure
PassFactory = Callable[[list[LoadPoint], set[tuple[str, int]]], Pass]


def _sink(
    cx: ConfigContext, bench: BenchConfig, purpose: str = "measure", before: str | None = None
) -> StoreSink:
    run = cx.run
    assert run.store is not None and cx.config_id is not None  # ``run`` always stores
    env: dict[str, object] = {"cpu_split": run.cpus.to_json()}
    if before is not None:
        env[INTERLEAVE_TAG] = before
    if cx.launch > 1:
        env[LAUNCH_TAG] = cx.launch
    here = Recording(run.store, run.name, cx.name, config_id=cx.config_id)
    return here.sink(bench, purpose, environment_extra=env)


def _watch(cx: ConfigContext) -> list[ServerWatch]:
    """The server's exit watch (none for an endpoint this run did not launch)."""
    return [ServerWatch(cx.held.server, cx.name)] if cx.held.server is not None else []


def _clock(
    cx: ConfigContext, bench: BenchConfig, refs: Mapping[str, BaselineRef] | None = None
) -> list[ResultSink]:
    """With a model clock (``campaign.parts.clock``), its sink (``refs``: the sequential A/B's)."""
    return [cx.held.clock.sink(cx.url, bench, refs)] if cx.held.clock is not None else []


def sweep(points: list[LoadPoint], todo: set[tuple[str, int]], before: str | None = None) -> Pass:
    """The ``todo`` cells of the config's load points, then its profiled passes; with
    ``before``, the baseline's interleaved pass before that candidate (no profiled passes)."""

    def measure(cx: ConfigContext) -> ConfigOutcome:
        run, cfg = cx.run, cx.cfg
        camp, store = run.campaign, run.store
        assert store is not None
        ref = camp.load.sequential and cfg.name == run.reference
        api = cfg.api or cfg.engine
        bench = bench_config(camp, cx.url, cx.model, api, run.cpus.client, reference=ref)
        sink = _sink(cx, bench, "interleave", before) if before else _sink(cx, bench)
        refs = {}
        if camp.load.sequential and cfg.name != run.reference:
            refs = baseline_refs(store, run.name, run.reference)
        watch, clock = _watch(cx), _clock(cx, bench, refs)
        sinks: list[ResultSink] = [*watch, *clock, sink]
        # on the model clock the live sweep runs to the cap; the sink decides its stop
        live, live_refs = cx.held.clock.live(bench, refs) if cx.held.clock else (bench, refs)
        try:
            res = (
                run_bench(live, run.events, None, sinks, cells=todo, baselines=live_refs)
                if todo
                else None
            )
        except (ServerRejected, ConnectError) as exc:
            return cx.outcome("failed", str(exc), run_ids=sink.run_ids)
        if watch and watch[0].exited:  # the server exited mid-run: the rest is not measured
            return cx.outcome("failed", watch[0].exited, run_ids=sink.run_ids)
        if res is not None and res.interrupted:
            return cx.outcome("interrupted", "", run_ids=sink.run_ids)
        notes = profiled(cx, bench, points) if before is None and cx.launch == 1 else []
        if interrupts.seen():  # a Ctrl-C in a profiled pass ends the run, not only the pass
            return cx.outcome("interrupted", "; ".join(notes), run_ids=sink.run_ids)
        return cx.outcome("measured", "; ".join(notes), run_ids=sink.run_ids)

    return measure


def profiled(cx: ConfigContext, bench: BenchConfig, points: list[LoadPoint]) -> list[str]:
    """The profiled passes of ``[profile]`` for this config, one note each."""
    run = cx.run
    assert run.store is not None and cx.config_id is not None
    return profiled_passes.profile_config(
        run.campaign, cx.cfg, cx.config_id, bench, points, run.store, run.events, cx.held.server
    )


def recheck(points: list[LoadPoint], todo: RecheckTodo) -> Pass:
    """The baseline's recheck pass on its server, launched again."""

    def measure(cx: ConfigContext) -> ConfigOutcome:
        run, cfg = cx.run, cx.cfg
        bench = bench_config(run.campaign, cx.url, cx.model, cfg.api or cfg.engine, run.cpus.client)
        sink = _sink(cx, bench, purpose="recheck")
        status, message = recheck_pass(
            bench, points, todo, sink, run.events, [*_watch(cx), *_clock(cx, bench)]
        )
        return cx.outcome(status, message, run_ids=sink.run_ids)

    return measure


def capacity(up_to: float, ladder: Ladder = CONCURRENCY) -> PassFactory:
    """Capacity at SLO up to ``up_to`` on ``ladder`` (concurrency, or request rate in req/s),
    from the campaign's first concurrency or rate; the probes and the result stored with the
    config."""

    def make(points: list[LoadPoint], todo: set[tuple[str, int]]) -> Pass:
        def measure(cx: ConfigContext) -> ConfigOutcome:
            run, cfg = cx.run, cx.cfg
            assert run.store is not None
            bench = bench_config(
                run.campaign, cx.url, cx.model, cfg.api or cfg.engine, run.cpus.client
            )
            try:
                res, ids = find_capacity(
                    bench,
                    up_to,
                    ladder=ladder,
                    events=run.events,
                    record=Recording(run.store, run.name, cx.name, cx.held.clock, cx.config_id),
                )
            except (ServerRejected, ConnectError) as exc:
                return cx.outcome("failed", str(exc))
            status = "interrupted" if res.stopped == "interrupted" else "measured"
            return cx.outcome(status, res.sentence, run_ids=ids)

        return measure

    return make


def kept(cx: ConfigContext) -> ConfigOutcome:
    """Nothing measured: the server stays up (``up``)."""
    return cx.outcome("up")
