"""Stopping rules through the ``StoppingRule`` protocol (``load.stopping``), chosen by the
registry (``load.adaptive.STOPPING_RULES``).

The existing rules are asked by a ``RuleMonitor`` fed synthetic light summaries (a model of
closed-loop users, times in ns, no wall clock: the duration test injects its clock). Then a
test-only rule is registered and a load point on the reference engine (in-process) stops by
it: one class and one registry line, its config field on a ``BenchConfig`` subclass (in the
code base: a field of ``config/bench.py``). Its verdict reads token counts only, so it does not
depend on the machine's clock; the point is read on the model clock (``campaign.parts.clock``).
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from inferlab.campaign.parts.clock import ModelClock
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.config.campaign import LoadSection
from inferlab.load import adaptive
from inferlab.load.adaptive import (
    STOPPING_RULES,
    BaselineRef,
    FixedCount,
    PointFacts,
    PrecisionRule,
    SequentialRule,
    choose_rule,
)
from inferlab.load.bench import run_bench
from inferlab.load.budget import point_budget
from inferlab.load.progress import LightRecord
from inferlab.load.stopping import Check, RuleMonitor, Stop, StoppingRule
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.stats.stopping import (
    StopRecord,
    batch_means,
    block_bootstrap_median,
    block_length,
    span_batch_rates,
)
from inferlab.stats.trust import too_short
from support.simproc import SimFactory

TOKENS = 10


def stream(
    users: int, n: int, itl_ms: float, *, seed: int = 0, jitter: float = 0.02
) -> list[LightRecord]:
    """``n`` requests of ``users`` closed-loop users, back to back, in completion order:
    TTFT 5 ms, then ``TOKENS`` tokens ``itl_ms`` apart (±``jitter``, a fraction)."""
    rng = random.Random(seed)
    t = [u * 100_000 for u in range(users)]
    out: list[LightRecord] = []
    for i in range(n):
        u = i % users
        send = t[u]
        first = send + 5_000_000
        last = first + int((TOKENS - 1) * itl_ms * 1e6 * rng.uniform(1 - jitter, 1 + jitter))
        out.append(LightRecord(i, send, last, True, first, last, TOKENS, ramp=i < users))
        t[u] = last
    return sorted(out, key=lambda r: r.end_ns)


def feed(mon: RuleMonitor, recs: Sequence[LightRecord]) -> int:
    """Each record as one progress batch, as the workers would; returns the requests done
    when the monitor said stop (every one when it never did)."""
    for i, r in enumerate(recs):
        mon.progress(0, ([r], None))
        if mon.should_finish(i + 1):
            return i + 1
    return len(recs)


def auto(**kw: object) -> BenchConfig:
    base: dict[str, object] = dict(
        url="http://127.0.0.1:1", engine="sim", concurrency=[4], requests="auto"
    )
    return BenchConfig(**{**base, **kw})  # type: ignore[arg-type]


def reference(recs: Sequence[LightRecord], c: int) -> BaselineRef:
    counted = sorted((r for r in recs if not r.ramp), key=lambda r: r.send_ns)
    tpots = [x for x in (r.tpot_ms for r in counted) if x is not None]
    w0 = max(r.end_ns for r in recs if r.ramp)
    w1 = max(r.end_ns for r in recs)
    rates = span_batch_rates(
        [r.first_ns for r in recs], [r.last_ns for r in recs], [r.tokens for r in recs], w0, w1
    )
    return BaselineRef(
        "base", block_bootstrap_median(tpots, block_length(len(tpots), c)), batch_means(rates)
    )


def monitor(rule: StoppingRule, cfg: BenchConfig, c: int = 4) -> RuleMonitor:
    return RuleMonitor(rule, c, cfg.max_requests, cfg.max_duration_s, cfg.seed, clock=lambda: 0)


def mon_check(mon: RuleMonitor) -> Check:
    """The check the monitor would show now (its window over every record)."""
    w0 = max(r.end_ns for r in mon.records if r.ramp)
    w1 = max(r.end_ns for r in mon.records)
    return Check(mon.counted, len(mon.checks) + 1, False, False, mon.records, (w0, w1), 4, 0)


def test_the_registry_chooses_one_rule_from_the_config() -> None:
    ref = reference(stream(4, 200, 4.0), 4)
    fixed = BenchConfig(url="http://127.0.0.1:1", concurrency=[4], requests=8)
    assert isinstance(choose_rule(fixed, PointFacts(4)), FixedCount)
    assert isinstance(choose_rule(fixed, PointFacts(4, ref)), FixedCount)
    assert isinstance(choose_rule(auto(), PointFacts(4)), PrecisionRule)
    assert isinstance(choose_rule(auto(), PointFacts(4, ref)), SequentialRule)
    assert (FixedCount, PrecisionRule, SequentialRule) == STOPPING_RULES


def test_fixed_is_never_asked() -> None:
    rule = choose_rule(BenchConfig(url="http://x:1", concurrency=[1], requests=8), PointFacts(1))
    assert not rule.live and list(rule.schedule()) == []


def test_precision_stops_at_two_precise_checks_in_a_row() -> None:
    cfg = auto(precision=0.05, min_requests=30, max_requests=300)
    rule = choose_rule(cfg, PointFacts(4))
    mon = monitor(rule, cfg)
    feed(mon, stream(4, 400, 3.0))
    assert mon.reason == "precision"
    assert mon.checks[:2] == [30, 45]  # min, then ×1.5, ...: one precise check never stops
    assert rule.check(mon_check(mon)) == Stop("precision")  # precise again: stop
    stop = StopRecord("precision", 45, 4, 0, None, {}, None)
    rule.fill(stop)
    assert stop.precision == 0.05 and stop.look is None and stop.sequential is None


def test_precision_measures_to_the_cap_when_told_not_to_stop() -> None:
    cfg = auto(min_requests=30, max_requests=60, stop_on_precision=False)
    mon = monitor(choose_rule(cfg, PointFacts(4)), cfg)
    done = feed(mon, stream(4, 400, 3.0))
    assert mon.reason == "cap" and done - 4 >= 60 and mon.checks[-1] >= 60


def test_duration_on_the_injected_clock() -> None:
    now = [0]
    cfg = auto(min_requests=30, max_requests=0, max_duration_s=1.0, precision=0.001)
    rule = choose_rule(cfg, PointFacts(4))
    mon = RuleMonitor(rule, 4, 0, 1.0, clock=lambda: now[0])
    recs = stream(4, 400, 3.0)
    for i, r in enumerate(recs):
        now[0] = r.end_ns  # the model's time, not the machine's
        mon.progress(0, ([r], None))
        if mon.should_finish(i + 1):
            break
    assert mon.reason == "duration" and recs[i].end_ns >= 1e9 > recs[i - 1].end_ns


def test_sequential_settles_a_real_difference_at_the_first_look() -> None:
    ref = reference(stream(4, 300, 4.0, seed=1), 4)
    cfg = auto(max_requests=200, looks=4)
    rule = choose_rule(cfg, PointFacts(4, ref))
    assert isinstance(rule, SequentialRule) and list(rule.schedule()) == [50, 100, 150, 200]
    mon = monitor(rule, cfg)
    feed(mon, stream(4, 400, 2.0, seed=2))
    assert mon.reason == "sequential-better" and mon.checks == [50]
    stop = StopRecord("sequential-better", 50, 4, 0, None, {}, None)
    rule.fill(stop)
    assert stop.look == 1 and stop.looks == 4 and stop.precision == 0.05
    assert stop.sequential is not None and stop.sequential["baseline"] == "base"
    assert stop.sequential["metrics"]["tpot_ms"]["status"] == "better"


def test_no_sequential_look_before_the_points_minimum() -> None:
    # SGLang on the H100 (2026-12-07): graph-oom-fix at C=8 stopped "sequential-better, look 1/3
    # after 56 requests" (the first look at 150/3 = 50), and compare then called the point too
    # short (56 < 8 waves of 8); at C=32 it stopped at 96 of the 256 its budget asked for
    ref = reference(stream(8, 400, 4.0, seed=1), 8)
    for c, looks in ((8, [64, 100, 150]), (32, [256])):
        cfg = point_budget(auto(max_requests=150, min_requests=50, looks=3), c)
        rule = choose_rule(cfg, PointFacts(c, ref))
        assert isinstance(rule, SequentialRule) and list(rule.schedule()) == looks
    cfg = point_budget(auto(max_requests=150, min_requests=50, looks=3), 8)
    rule = choose_rule(cfg, PointFacts(8, ref))
    mon = monitor(rule, cfg, c=8)
    feed(mon, stream(8, 400, 2.0, seed=2))  # twice as fast: settled at the first look it gets
    assert mon.reason == "sequential-better" and mon.checks == [64]
    stop = StopRecord("sequential-better", 64, 8, 0, None, {}, None)
    rule.fill(stop)
    assert (stop.look, stop.looks) == (1, 3)
    assert too_short([mon.counted], 8) is None
    # the user's own minimum holds at C=1 too (the demo's looks: 24, 32, 48, not 16, 32, 48)
    one = choose_rule(auto(max_requests=48, min_requests=24, looks=3), PointFacts(1, ref))
    assert list(one.schedule()) == [24, 32, 48]


def test_sequential_against_itself_ends_at_the_last_look() -> None:
    recs = stream(4, 400, 3.0, seed=3)
    cfg = auto(max_requests=120, looks=3, min_effect=0.1)
    rule = choose_rule(cfg, PointFacts(4, reference(recs, 4)))
    mon = monitor(rule, cfg)
    feed(mon, recs)
    assert mon.reason == "sequential-equivalent", (mon.reason, mon.checks)


@pytest.mark.parametrize(("itl_ms", "reason"), [(3.0, "equivalent"), (1.5, "better")])
def test_sequential_on_a_deterministic_engine_reads_an_exact_difference(
    itl_ms: float, reason: str
) -> None:
    """No spread on either side (the batching model): the difference is exact, never a
    division by a zero standard error."""
    ref = reference(stream(4, 300, 3.0, jitter=0.0), 4)
    cfg = auto(max_requests=120, looks=3)
    mon = monitor(choose_rule(cfg, PointFacts(4, ref)), cfg)
    feed(mon, stream(4, 400, itl_ms, seed=5, jitter=0.0))
    assert mon.reason == f"sequential-{reason}", (mon.reason, mon.checks)


def test_information_already_complete_at_the_first_look_still_increases() -> None:
    """A baseline far noisier than the candidate: the first look already holds (almost) all
    the information; the later looks' fractions still increase, up to 1 at the last."""
    ref = reference(stream(4, 300, 3.0, seed=6, jitter=0.4), 4)
    cfg = auto(max_requests=200, looks=4, min_effect=0.001)
    rule = choose_rule(cfg, PointFacts(4, ref))
    mon = monitor(rule, cfg)
    feed(mon, stream(4, 600, 3.0, seed=7, jitter=0.001))
    assert isinstance(rule, SequentialRule) and rule._info is not None
    fractions = rule._info["tpot_ms"]
    assert len(mon.checks) >= 2 and fractions[0] > 0.99  # later looks reuse its boundary
    assert all(b - a >= 0.01 for a, b in itertools.pairwise(fractions))
    assert mon.reason is not None and mon.reason.startswith(("sequential-", "cap")), mon.reason


# a new stopping rule: the one class, its config field, its registry line -------------------


class BudgetConfig(BenchConfig):
    """Where the rule's field goes: in the code base, a field of ``BenchConfig``."""

    token_budget: int | None = None  # auto: stop once the counted requests got this many


@dataclass
class TokenBudget:
    """Stops once the counted requests have received ``budget`` output tokens."""

    budget: int
    live: bool = True

    @classmethod
    def for_point(cls, cfg: BenchConfig, point: PointFacts) -> TokenBudget | None:
        budget = getattr(cfg, "token_budget", None)
        return cls(budget) if cfg.adaptive and budget else None

    @classmethod
    def plan_lines(cls, load: LoadSection, reference: str) -> list[str]:
        return []

    def schedule(self) -> Sequence[int]:
        return range(1, 10**9)  # asked after every counted request

    def check(self, at: Check) -> Stop | None:
        got = sum(r.tokens for r in at.records if not r.ramp and r.ok)
        return Stop("token-budget") if got >= self.budget else None

    def fill(self, stop: StopRecord) -> None:
        pass


@pytest.fixture
def with_budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(adaptive, "STOPPING_RULES", (TokenBudget, *STOPPING_RULES))
    yield


def test_a_registered_rule_stops_a_point_on_the_reference_engine(
    with_budget: None, sim_server: SimFactory, tmp_path: Path
) -> None:
    sim = sim_server("--ttft-ms", "2", "--itl-ms", "1")
    cfg = BudgetConfig(
        url=sim.url,
        engine="sim",
        concurrency=[2],
        requests="auto",
        min_requests=10,
        max_requests=200,
        token_budget=12 * 4,
        workload=WorkloadSpec(input_tokens=8, output_tokens=4),
        tokenizer=WordTokenizer().save_hf(tmp_path / "tok"),
    )
    assert isinstance(choose_rule(cfg, PointFacts(2)), TokenBudget)
    out = tmp_path / "run.jsonl"
    res = run_bench(cfg, out=out, sinks=[ModelClock().sink(sim.url, cfg)])
    stop = res.points[0].stop
    assert stop is not None and stop.reason == "token-budget", stop
    assert 12 <= stop.requests < 200 and stop.checks
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [p["stop"]["reason"] for p in lines if p.get("stop")] == ["token-budget"]
