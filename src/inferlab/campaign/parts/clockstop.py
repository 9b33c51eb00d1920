"""An adaptive point's stop decided again on the reference engine's model clock.

A live stopping rule (``load.adaptive``: the precision rule, the sequential A/B) decides from
the client's own timestamps while the point runs, so on a loaded machine where it stops, and
what the stored test says, depend on the wall clock. Under ``campaign.parts.clock`` a sweep whose
points are all closed loop is measured live as a fixed count instead (``live_config``: the cap
and two requests a user more, ``max_requests + 2·C``, no rule asked while it runs), and
``replay_stop`` asks a fresh rule (the one ``load.adaptive.choose_rule`` picks for the point,
against its real baseline) at the same schedule over the records re-timed on the model clock,
in the order they ended there, each user's first request its ramp-up: the first check at which
it stops is the model clock's stop. The requests sent after it are taken out (they would not
have been sent), those in flight at it are the drain, and the stop record is made again from
them (``load.steady.final_stop``). A point the rule does not stop keeps every request (reason
``cap``). Other sweeps (open loop, sessions, no cap) keep their live rule, measured to its cap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from inferlab.config.bench import BenchConfig
from inferlab.load.adaptive import BaselineRef, PointFacts, PrecisionRule, choose_rule
from inferlab.load.bench import plan_points
from inferlab.load.progress import LightRecord
from inferlab.load.results import PointResult
from inferlab.load.steady import final_stop
from inferlab.load.stopping import Check, RuleMonitor, Stop
from inferlab.records import RequestRecord
from inferlab.stats.stopping import StopRecord

__all__ = ["live_config", "replay_stop"]


def live_config(
    cfg: BenchConfig, baselines: Mapping[str, BaselineRef]
) -> tuple[BenchConfig, dict[str, BaselineRef]]:
    """What the live sweep runs with under the model clock (see the module docstring): an
    adaptive closed-loop sweep as a fixed count of ``max_requests + 2·C`` a point, else its
    rule measured to its cap; no sequential baseline either way (its stop is decided after)."""
    if not cfg.adaptive:
        return cfg, dict(baselines)
    points = plan_points(cfg)
    if cfg.max_requests and all(p.pattern.closed_loop for p in points):
        top = max(p.pattern.loop_concurrency or 1 for p in points)
        fixed = {"requests": cfg.max_requests + 2 * top, "stop_on_precision": False}
        return cfg.model_copy(update=fixed), {}
    return cfg.model_copy(update={"stop_on_precision": False}), {}


def _light(rec: RequestRecord) -> LightRecord:
    ev = rec.event_ns
    ok = rec.ok and bool(ev)
    tokens = rec.usage_completion_tokens or rec.requested_output_tokens or rec.output_tokens
    first, last = (ev[0], ev[-1]) if ok else (0, 0)
    ramp = rec.dropped == "ramp-up"
    return LightRecord(rec.index, rec.send_ns, rec.end_ns, ok, first, last, tokens, ramp)


class _CapOnly:
    """A rule that cannot stop before the cap (the precision rule of a sequential reference,
    ``stop_on_precision`` False): asked at the cap only, without computing its intervals."""

    live = True

    def __init__(self, rule: PrecisionRule) -> None:
        self.rule = rule

    def schedule(self) -> Sequence[int]:
        return ()

    def check(self, at: Check) -> Stop | None:
        return None

    def fill(self, stop: StopRecord) -> None:
        self.rule.fill(stop)


class _Now:
    """The replay's clock (model ns), for the rule's duration limit."""

    def __init__(self, t: int) -> None:
        self.t = t

    def __call__(self) -> int:
        return self.t


def _replay(
    cfg: BenchConfig, res: PointResult, baseline: BaselineRef | None, done: Sequence[RequestRecord]
) -> tuple[RuleMonitor, int | None] | None:
    """The monitor after the replay, and the model-clock time it stopped (None: not stopped)."""
    c = res.point.pattern.loop_concurrency or 1
    rule = choose_rule(cfg, PointFacts(c, baseline))
    if not rule.live:
        return None
    if isinstance(rule, PrecisionRule) and not rule.stop_on_precision:
        rule = _CapOnly(rule)
    now = _Now(min(r.send_ns for r in done))
    mon = RuleMonitor(rule, c, cfg.max_requests, cfg.max_duration_s, cfg.seed, now, now.t)
    # the earliest send among the requests not yet ended, after each end
    later: list[int | None] = [None] * (len(done) + 1)
    for i in range(len(done) - 1, -1, -1):
        nxt = later[i + 1]
        later[i] = done[i].send_ns if nxt is None else min(nxt, done[i].send_ns)
    for i, rec in enumerate(done):
        now.t = rec.end_ns
        mon.progress(0, ([_light(rec)], later[i + 1]))
        if mon.should_finish(i + 1):
            return mon, rec.end_ns
    return mon, None


def _ramp_up(res: PointResult, c: int) -> None:
    """Mark each user's first request (the first ``c`` sent, back to back) as the ramp-up, as
    the live rule's workers do; a point measured as a fixed count has none marked."""
    if any(r.dropped == "ramp-up" for r in res.records):
        return
    todo = sorted((r for r in res.records if not r.warmup and r.end_ns), key=lambda r: r.send_ns)
    for rec in todo[:c]:
        rec.dropped = "ramp-up"


def replay_stop(cfg: BenchConfig, res: PointResult, baseline: BaselineRef | None) -> None:
    """Decide ``res``'s stop on the model clock (see the module docstring); ``res``'s records
    must already be re-timed (back to back). A point of a fixed count, or interrupted, or not
    closed loop, is left as it is."""
    c = res.point.pattern.loop_concurrency
    if not cfg.adaptive or res.interrupted or c is None:
        return
    _ramp_up(res, c)
    done = sorted((r for r in res.records if not r.warmup and r.end_ns), key=lambda r: r.end_ns)
    if not done:
        return
    out = _replay(cfg, res, baseline, done)
    if out is None:
        return
    mon, finish = out
    if finish is None:  # never stopped by the rule: every request
        mon.reason = "cap"
    kept: list[RequestRecord] = []
    for rec in res.records:
        if not rec.warmup and finish is not None and rec.send_ns > finish:
            continue  # sent after the model clock's stop: it would not have been sent
        if rec.dropped == "drain":
            rec.dropped = None
        if not rec.warmup and rec.dropped is None and finish is not None and rec.end_ns > finish:
            rec.dropped = "drain"
        kept.append(rec)
    res.records = kept
    res.stop = final_stop(kept, mon, finish, False, c)
