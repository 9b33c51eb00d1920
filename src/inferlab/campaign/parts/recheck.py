"""The baseline recheck (``[load] recheck_baseline``): after the last config, the baseline
launched again (the same config, verified again) and every load point re-measured with the
request count its first pass counted there — a fixed count, not adaptive, so both passes
measure the same thing. Stored as runs with ``purpose = 'recheck'``: no verdict, resume
accounting or sweep table of the measurements reads them; ``stats.recheck`` compares the two
passes; where the baseline moved, ``compare`` keeps a candidate's verdict only when it holds
against both passes (``report.recheck``).
"""

from __future__ import annotations

from collections.abc import Sequence

from inferlab.campaign.parts.bench import StoreSink
from inferlab.campaign.parts.profiled import point_bench
from inferlab.config.bench import BenchConfig
from inferlab.errors import ConnectError, ServerRejected
from inferlab.load.bench import BenchEvents, LoadPoint, ResultSink, run_bench
from inferlab.store import Store

__all__ = ["RecheckTodo", "recheck_pass", "recheck_todo"]

#: label → (the first pass's counted requests there, the trials still to recheck)
RecheckTodo = dict[str, tuple[int, set[int]]]


def recheck_todo(
    store: Store, config_id: int, points: Sequence[LoadPoint], trials: int
) -> RecheckTodo:
    """The (point, trial) cells of config ``config_id`` measured but not yet rechecked (a
    finished recheck is not redone by ``--resume``; an interrupted one is finished)."""
    counts: dict[str, int] = {}
    done: set[tuple[str, int]] = set()
    for m in store.runs.measured_points(config_id):
        if m.purpose == "recheck":
            done.add((m.label, m.trial))
        elif m.label not in counts:
            counts[m.label] = int(m.summary.get("requests") or 0)
    out: RecheckTodo = {}
    for p in points:
        n = counts.get(p.label, 0)
        left = {t for t in range(trials) if (p.label, t) not in done}
        if n > 0 and left:
            out[p.label] = (n, left)
    return out


def recheck_pass(
    bench: BenchConfig,
    points: Sequence[LoadPoint],
    todo: RecheckTodo,
    sink: StoreSink,
    events: BenchEvents,
    watch: Sequence[ResultSink] = (),
) -> tuple[str, str]:
    """Re-measure every point of ``todo`` into ``sink`` (purpose 'recheck'); returns (status,
    message): "measured", "failed" (the server refused or died) or "interrupted"."""
    for p in points:
        if p.label not in todo:
            continue
        n, trials = todo[p.label]
        events.message(f"recheck at {p.label}: {n} requests × {len(trials)} trial(s) ...")
        one = point_bench(bench, p, requests=n).model_copy(update={"trials": max(trials) + 1})
        try:
            res = run_bench(one, events, None, [*watch, sink], cells={(p.label, t) for t in trials})
        except (ServerRejected, ConnectError) as exc:
            return "failed", str(exc)
        exited = getattr(watch[0], "exited", None) if watch else None
        if exited:
            return "failed", str(exited)
        if res.interrupted:
            return "interrupted", "Ctrl-C during the recheck: inferlab run --resume finishes it"
    return "measured", "baseline rechecked"
