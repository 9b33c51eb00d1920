"""The search loop: Optuna proposes (ask), an evaluator launches and measures the trial against
the incumbent (a sequential A/B), the loop records and tells. The incumbent changes only on a
``better`` verdict; the loop stops at the budget, after ``patience`` measured trials in a row
without one (a trial that failed to launch measured nothing and is not counted),
when the space is exhausted, or when no dimension is left (every bound below the minimum
effect). The sampler's state is rebuilt from the recorded trials, never kept apart: a resumed
search replays them into a fresh study.

With ``parallel = P > 1`` the loop works in batches: it asks up to P distinct values not tried
yet (TPE with its constant liar, so the pending ones are not proposed again), the evaluator
measures the batch against the one incumbent, and each result is told. When several trials of
a batch are better than the incumbent, it moves to the best-valued one (the others stay
recorded as better than the old one, never judged against the new)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import optuna
from optuna.trial import FrozenTrial, TrialState, create_trial

from inferlab.config.campaign import ConfigSpec
from inferlab.config.search import SearchSection

from .records import Bounds, StopReason, TrialRecord, TrialResult, Verdict
from .refusals import refused_region
from .samplers import choose
from .space import Params, Space
from .untried import REPEATS, UNTRIED, Draw, draw_untried, why_none

__all__ = [
    "BatchEvaluator",
    "Bounds",
    "Evaluator",
    "SearchResult",
    "StopReason",
    "TrialRecord",
    "TrialResult",
    "Verdict",
    "batches",
    "minimizes",
    "run_search",
]


class Evaluator(Protocol):
    """Measures a trial config against the named incumbent (already measured)."""

    def evaluate(self, config: ConfigSpec, incumbent: str) -> TrialResult: ...


@runtime_checkable
class BatchEvaluator(Protocol):
    """Measures several trial configs at once against the named incumbent (``parallel > 1``):
    one result per config, in order."""

    def evaluate(self, config: ConfigSpec, incumbent: str) -> TrialResult: ...

    def evaluate_batch(
        self, configs: Sequence[ConfigSpec], incumbent: str
    ) -> list[TrialResult]: ...


@dataclass
class SearchResult:
    """The trials in order, the incumbent's path (config names, the baseline first), the
    pruned dimensions (key → why) and why the search stopped."""

    trials: list[TrialRecord]
    path: list[str]
    stopped: StopReason
    pruned: dict[str, str] = field(default_factory=dict)
    #: the sampler that proposed the trials, and why it was chosen (``sampler = "auto"``)
    sampler: str = ""
    #: the stop rule's own words (``bounds``: each remaining dimension's bound)
    stop_detail: str = ""
    #: refused trial → how many proposals were not launched because they share the values
    #: that trial's refusal names
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def best(self) -> str:
        return self.path[-1]


def minimizes(objective: str) -> bool:
    """Whether a lower value of ``objective`` is better (TPOT, ms)."""
    return objective == "tpot_ms"


def _direction(section: SearchSection) -> Literal["minimize", "maximize"]:
    return "minimize" if minimizes(section.objective) else "maximize"


def _told_value(section: SearchSection, r: TrialResult, worst: float) -> float:
    """The value a failed trial is told as: worse than every measured one."""
    if r.status == "ok" and r.value is not None and math.isfinite(r.value):
        return r.value
    if _direction(section) == "minimize":
        return worst * 10.0 if worst > 0 else 1e9
    return 0.0


def _frozen(space: Space, rec: TrialRecord, value: float) -> FrozenTrial:
    return create_trial(
        params=space.encode(rec.params),
        distributions=space.distributions(),
        value=value,
        state=TrialState.COMPLETE,
        user_attrs={"name": rec.name},
        constraints={"failed": _infeasible(rec.result)},
    )


def _infeasible(r: TrialResult) -> float:
    """A trial that failed (launch, OOM, verification) violates the "failed" constraint (> 0)."""
    return 0.0 if r.status == "ok" else 1.0


class _Loop:
    """One search's state: the study, the records, the incumbent's path."""

    def __init__(
        self,
        space: Space,
        section: SearchSection,
        history: Sequence[TrialRecord],
        bounds: Bounds | None = None,
        parallel: int = 1,
    ):
        self.space, self.section = space, section
        self.bounds = bounds or Bounds({d.key: None for d in space.dims})
        optuna.logging.set_verbosity(optuna.logging.WARNING)  # the library never prints
        self.chosen = choose(section, space, parallel)
        self.study = optuna.create_study(direction=_direction(section), sampler=self.chosen.sampler)
        self.trials: list[TrialRecord] = []
        self.path = [space.baseline.name]
        self.since_better = 0
        self.skipped: dict[str, int] = {}
        self.drawn: set[int] = set()  # the study's trial numbers the loop drew (``untried``)
        self.draw: Draw | None = None  # the loop's last draw of an untried point
        for group in batches(history):
            for rec in group:
                self.add(rec)
            self.judge(group)
        if section.sampler == "grid":
            for params in space.grid_points(section.seed):
                if self.recorded(params) is None:
                    self.study.enqueue_trial(self.space.encode(params))

    def worst(self) -> float:
        vals = [t.result.value for t in self.trials if t.result.value is not None]
        if not vals:
            return 0.0
        return max(vals) if _direction(self.section) == "minimize" else min(vals)

    def add(self, rec: TrialRecord, asked: optuna.Trial | None = None) -> None:
        """Record a trial and tell the study (the asked trial, or a replayed one)."""
        value = _told_value(self.section, rec.result, self.worst())
        self.trials.append(rec)
        if asked is None:
            self.study.add_trial(_frozen(self.space, rec, value))
        else:
            asked.set_constraint("failed", _infeasible(rec.result))
            asked.set_user_attr("name", rec.name)
            self.study.tell(asked, value)

    def judge(self, batch: Sequence[TrialRecord]) -> None:
        """Move the incumbent to the best-valued trial of ``batch`` judged ``better`` against
        the current incumbent, if any; else count the batch against ``patience``."""
        better = [r for r in batch if r.result.verdict == "better" and r.against == self.path[-1]]
        if not better:  # a trial that failed to launch measured nothing: it does not count
            self.since_better += sum(r.result.status == "ok" for r in batch)
            return
        sign = -1.0 if _direction(self.section) == "minimize" else 1.0
        best = max(
            better, key=lambda r: -math.inf if r.result.value is None else sign * r.result.value
        )
        self.path.append(best.name)
        self.since_better = 0

    def recorded(self, params: Params) -> TrialRecord | None:
        return next((t for t in self.trials if dict(t.params) == dict(params)), None)

    def refused_like(self, params: Params) -> TrialRecord | None:
        """A refused trial whose refusal's values ``params`` share (it would be refused too)."""
        for t in self.trials:
            region = refused_region(self.space, t.params, t.result)
            if region and all(params.get(k) == v for k, v in region.items()):
                return t
        return None

    def chosen_by(self, ahead: int = 0, number: int = -1) -> str:
        """Why the trial ``ahead`` places after the next one (the study's trial ``number``)
        was proposed: the sampler's step, or the loop's draw after its repeats."""
        if number in self.drawn:
            return UNTRIED
        return self.chosen.chosen_by(len(self.trials) + ahead)

    def stop(self, started: float, now: float) -> StopReason | None:
        s = self.section
        if len(self.trials) >= s.budget_trials:
            return "budget_trials"
        if s.budget_minutes is not None and (now - started) / 60.0 >= s.budget_minutes:
            return "budget_minutes"
        if self.since_better >= s.patience:
            return "patience"
        if len(self.trials) >= self.space.size():
            return "exhausted"  # ``run_search`` says how many (``why_none``)
        return None

    def room(self, parallel: int) -> int:
        """How many trials the next batch may hold: ``parallel``, at most what the budget, the
        patience and the space have left (at least 1: ``stop`` said none of them is spent)."""
        s = self.section
        left = min(s.budget_trials - len(self.trials), s.patience - self.since_better)
        size = self.space.size()
        if size != float("inf"):
            left = min(left, int(size) - len(self.trials))
        return max(1, min(parallel, left))

    def rebound(self, rebound: Callable[[str], Bounds | None]) -> tuple[StopReason | None, str]:
        """Re-read the bounds against the incumbent; ``bounds`` when nothing is left."""
        new = rebound(self.path[-1])
        if new is None:
            return None, ""
        self.bounds = new
        return ("bounds", new.nothing_left) if new.nothing_left else (None, "")

    def propose(self, pending: Sequence[Params] = ()) -> tuple[optuna.Trial, Params] | None:
        """The sampler's next values not tried yet (nor ``pending`` in this batch, nor refused
        like a recorded refusal); a repeat is told its recorded value (the sampler learns
        nothing new, the grid marks it visited), one refused like a recorded trial is told
        that trial's failure, a pending one is told failed; after ``REPEATS`` repeats an untried
        point drawn by the loop (``untried``), None when there is none."""
        for _ in range(REPEATS):
            trial = self.study.ask(self.space.distributions())
            params = self.space.decode(trial.params)
            before = self.recorded(params)
            if before is None and (before := self.refused_like(params)) is not None:
                self.skipped[before.name] = self.skipped.get(before.name, 0) + 1
            if before is None and all(dict(p) != dict(params) for p in pending):
                return trial, params
            if before is None:  # pending: its value is not known yet
                self.study.tell(trial, state=TrialState.FAIL)
                continue
            trial.set_constraint("failed", _infeasible(before.result))
            self.study.tell(trial, _told_value(self.section, before.result, self.worst()))
        return self.untried(pending)

    def untried(self, pending: Sequence[Params]) -> tuple[optuna.Trial, Params] | None:
        """An untried point drawn by the loop (``search.untried``), asked of the study."""
        self.draw = draw_untried(
            self.space,
            self.section.seed + len(self.trials),
            pending,
            lambda p: self.recorded(p) is not None,
            lambda p: self.refused_like(p) is not None,
        )
        if self.draw.point is None:
            return None
        self.study.enqueue_trial(self.space.encode(self.draw.point))
        trial = self.study.ask(self.space.distributions())
        self.drawn.add(trial.number)
        return trial, self.space.decode(trial.params)

    def measure(
        self, proposed: list[tuple[optuna.Trial, Params]], evaluator: Evaluator, parallel: int
    ) -> list[TrialRecord]:
        """Measure one batch of ``proposed`` points against the incumbent: their records,
        added to the loop and judged (the incumbent moves when one wins)."""
        first, incumbent = len(self.trials) + 1, self.path[-1]
        configs = [self.space.config(first + i, params) for i, (_, params) in enumerate(proposed)]
        chosen = [self.chosen_by(i, t.number) for i, (t, _) in enumerate(proposed)]
        results = _measure(evaluator, configs, incumbent, parallel)
        batch, high = (first if parallel > 1 else 0), dict(self.bounds.high)
        recs = [
            TrialRecord(
                index=first + i,
                name=c.name,
                params=dict(p),
                result=r,
                against=incumbent,
                chosen_by=chosen[i],
                bounds=dict(high),
                batch=batch,
            )
            for i, ((_, p), c, r) in enumerate(zip(proposed, configs, results, strict=True))
        ]
        for rec, (asked, _) in zip(recs, proposed, strict=True):
            self.add(rec, asked)
        self.judge(recs)
        return recs

    def propose_batch(self, n: int) -> list[tuple[optuna.Trial, Params]]:
        """Up to ``n`` distinct proposals (fewer when the sampler only repeats)."""
        out: list[tuple[optuna.Trial, Params]] = []
        while len(out) < n:
            got = self.propose([p for _, p in out])
            if got is None:
                break
            out.append(got)
        return out


def batches(history: Sequence[TrialRecord]) -> list[list[TrialRecord]]:
    """The recorded trials grouped as they were measured: a batch's trials share ``batch``."""
    out: list[list[TrialRecord]] = []
    for rec in history:
        if rec.batch and out and out[-1][0].batch == rec.batch:
            out[-1].append(rec)
        else:
            out.append([rec])
    return out


def _measure(
    evaluator: Evaluator, batch: list[ConfigSpec], incumbent: str, parallel: int
) -> list[TrialResult]:
    """The batch's results (its trial configs, not the campaign's): one ``evaluate`` when the
    search is serial, else the evaluator's ``evaluate_batch`` (one by one for an evaluator
    that has none)."""
    if parallel == 1:
        return [evaluator.evaluate(batch[0], incumbent)]
    if isinstance(evaluator, BatchEvaluator):
        got = evaluator.evaluate_batch(batch, incumbent)
        if len(got) != len(batch):
            raise ValueError(f"evaluate_batch gave {len(got)} results for {len(batch)} trials")
        return got
    return [evaluator.evaluate(c, incumbent) for c in batch]


def run_search(
    space: Space,
    section: SearchSection,
    evaluator: Evaluator,
    *,
    history: Sequence[TrialRecord] = (),
    pruned: dict[str, str] | None = None,
    on_trial: Callable[[TrialRecord], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    bounds: Bounds | None = None,
    rebound: Callable[[str], Bounds | None] | None = None,
    parallel: int = 1,
) -> SearchResult:
    """Search ``space`` (its dimensions already pruned; ``pruned`` says which went and why)
    until a stop rule holds; ``history`` is a resumed search's recorded trials. ``bounds``:
    the dimensions' bounds against the baseline; ``rebound(incumbent)`` re-reads them against
    a new incumbent (None: no evidence for it), and the search stops (``bounds``) when they
    say nothing is left. ``parallel``: trials measured at once (a batch, see the module
    docstring)."""
    if not space.dims:
        return SearchResult([], [space.baseline.name], "no_dimension", dict(pruned or {}))
    if parallel < 1:
        raise ValueError(f"parallel = {parallel}: at least 1")
    loop = _Loop(space, section, history, bounds, parallel)
    started = clock()
    reason: StopReason | None = None
    detail = ""
    if rebound is not None and len(loop.path) > 1:  # a resumed search's incumbent
        reason, detail = loop.rebound(rebound)
    while reason is None and (reason := loop.stop(started, clock())) is None:
        proposed = loop.propose_batch(loop.room(parallel))
        if not proposed:
            reason, detail = why_none(space, len(loop.trials), loop.draw)
            break
        incumbent = loop.path[-1]
        recs = loop.measure(proposed, evaluator, parallel)
        if on_trial is not None:
            for rec in recs:
                on_trial(rec)
        if rebound is not None and loop.path[-1] != incumbent:
            reason, detail = loop.rebound(rebound)
    if reason == "exhausted" and not detail:
        detail = f"{len(loop.trials)} of {len(loop.trials)} points tried"
    return SearchResult(
        loop.trials,
        loop.path,
        reason,
        dict(pruned or {}),
        loop.chosen.label,
        detail,
        dict(loop.skipped),
    )
