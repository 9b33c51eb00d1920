"""The confirmation A/B of a search's winner (issue 42: ``optimize`` defends its winner).

The winner was selected as the best of many trials, so its own A/B flatters it (the winner's
curse), and each trial's A/B counted one launch. Before a recommendation, the baseline and the
winner are launched again, fresh and interleaved — baseline, winner, winner, baseline
(``confirm-t03-b1``, ``-w1``, ``-w2``, ``-b2``: stored configs extending them; ``[search]
confirm_launches``, default 4, an even count, the pattern repeated: ``order``) — and measured
at the search's point; the verdict is ``stats.launch_ab.compare_launches`` over those
launches only, on the objective's metric, at the campaign's ``[load] alpha`` and ``[search]
min_effect``. The launches before (the winner's trial, its incumbents' measurements) are left
out of the two sides: the winner's were chosen for reading well, and would carry that bias
into the ratio. They are the prior of the launch spread (the campaign's configs launched more
than once at the point, pooled with the spreads stored for this engine, model and host by
other campaigns: ``store.spreads``), which is not what selected the winner. A winner the
confirmation does not call *better* is not recommended ("not confirmed: …").

Each launch is a config of a derived plan, so ``--resume`` measures only the ones missing; the
confirmation is stored as an analysis (``search-confirm``) when it starts (what was being
confirmed, and the search's stop, so that a resumed search goes straight to it) and when it is
decided."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from inferlab.config.campaign import ConfigSpec
from inferlab.config.search import SearchSection
from inferlab.stats.launch_ab import compare_launches
from inferlab.stats.launches import launch_estimate, launches_of
from inferlab.store import Store
from inferlab.store.launches import campaign_launches, launch_groups
from inferlab.store.outcomes import ConfirmBody
from inferlab.store.spreads import prior_spread, spread_key

from .loop import SearchResult
from .trials import Trials

__all__ = [
    "CONFIRM_KIND",
    "ORDER",
    "Confirmation",
    "Resumed",
    "confirm_names",
    "confirm_winner",
    "defend",
    "in_words",
    "judge",
    "order",
    "resumed_stop",
]

#: the analysis kind a confirmation is stored as
CONFIRM_KIND = "search-confirm"


def order(launches: int = 4) -> tuple[str, ...]:
    """The confirmation's ``launches`` (even) in order, b = the baseline, w = the winner, each
    pair's order alternating: 2: b1 w1; 4: b1 w1 w2 b2; 6: b1 w1 w2 b2 b3 w3; ..."""
    out: list[str] = []
    for pair in range(launches // 2):
        first, second = ("b", "w") if pair % 2 == 0 else ("w", "b")
        out += [f"{first}{pair + 1}", f"{second}{pair + 1}"]
    return tuple(out)


#: the default confirmation's launches in order
ORDER = order()


def in_words(launches: int = 4) -> str:
    """The confirmation's launch order in words: "baseline, winner, winner, baseline"."""
    return ", ".join("baseline" if x[0] == "b" else "winner" for x in order(launches))


def confirm_names(winner: str, launches: int = 4) -> list[str]:
    """The confirmation's configs, in launch order: ``confirm-t03-b1`` ... ``confirm-t03-b2``."""
    tag = winner.split("-", 1)[0]
    return [f"confirm-{tag}-{x}" for x in order(launches)]


def _side(name: str) -> str:
    """A confirmation config's side: ``b`` (the baseline) or ``w`` (the winner)."""
    return name.rsplit("-", 1)[1][0]


def _specs(names: list[str], winner: str, baseline: str) -> list[ConfigSpec]:
    return [
        ConfigSpec(
            name=n,
            extends=baseline if _side(n) == "b" else winner,
            description=f"confirmation of {winner} against {baseline}: "
            f"launch {i + 1} of {len(names)}",
        )
        for i, n in enumerate(names)
    ]


@dataclass(frozen=True)
class Confirmation:
    """A confirmation's verdict: the winner against the baseline on ``metric`` over the fresh
    launches (ratio winner / baseline with its ``1 − alpha`` interval; None: no interval)."""

    winner: str
    baseline: str
    metric: str
    configs: tuple[str, ...]
    confirmed: bool
    claim: str  # "better", "worse" or "~"
    reason: str
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    launches: tuple[int, int] = (0, 0)  # baseline, winner
    alpha: float = 0.05
    min_effect: float = 0.02

    def sentence(self) -> str:
        """ "confirmed: tpot_ms ×0.912 [0.871, 0.955] …" or "not confirmed: …"."""
        head = "confirmed" if self.confirmed else "not confirmed"
        band = ""
        if self.ratio is not None:
            band = f"{self.metric} ×{self.ratio:.3f}"
            if self.low is not None and self.high is not None:
                band += f" [{self.low:.3f}, {self.high:.3f}]"
            band += f" ({1 - self.alpha:.0%}), "
        b, w = self.launches
        seq = in_words(len(self.configs) or len(ORDER))
        return (
            f"{head}: {band}{self.winner} against {self.baseline} on {b} + {w} fresh launches "
            f"({seq}): {self.claim} — {self.reason}"
        )

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["configs"], out["launches"] = list(self.configs), list(self.launches)
        out["sentence"] = self.sentence()
        return out


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def judge(
    store: Store,
    campaign: str,
    at: str,
    names: list[str],
    metric: str,
    *,
    winner: str,
    baseline: str,
    alpha: float,
    min_effect: float,
) -> Confirmation:
    """The confirmation's verdict from the stored launches of ``names`` at ``at``."""
    none = Confirmation(
        winner, baseline, metric, tuple(names), False, "~", "", alpha=alpha, min_effect=min_effect
    )
    sides: dict[str, list[tuple[float, float]]] = {"b": [], "w": []}
    ids: set[int] = set()
    missing = []
    for n in names:
        runs = [r for r in store.runs(campaign=campaign, config=n) if r.label == at]
        groups = [g for cs in launch_groups(store, runs).get(at, []) for g in cs]
        est = [e for g in groups if (e := launch_estimate(metric, g)) is not None]
        if not est:
            missing.append(n)
        sides[_side(n)] += est
        ids |= {r.id for r in runs}
    if missing:
        why = f"{', '.join(missing)}: no trusted measurement of {metric} at {at}"
        return replace(none, reason=why)
    own = launches_of(campaign_launches(store, campaign), [metric]).spread(at, metric, without=ids)
    key = spread_key(store.runs(campaign=campaign, config=names[0])[-1])
    prior = prior_spread(store, key, at, metric, own, campaign=campaign)
    v = compare_launches(
        metric,
        sides["b"],
        sides["w"],
        prior=prior,
        alpha=alpha,
        min_effect=min_effect,
        level=1.0 - alpha,
    )
    r = v.ratio
    return replace(
        none,
        confirmed=v.claim == "better",
        claim=v.claim,
        reason=v.reason,
        ratio=_finite(r.estimate),
        low=_finite(r.low),
        high=_finite(r.high),
        launches=(len(sides["b"]), len(sides["w"])),
    )


def confirm_winner(
    trials: Trials, winner: str, metric: str, marker: dict[str, Any]
) -> Confirmation:
    """Launch the baseline and ``winner`` again (``ORDER``), measure the search's point and
    judge; ``marker``: what the started confirmation is stored with (the search's stop)."""
    plan, section, store = trials.plan, trials.section, trials.store
    camp, base = plan.campaign.campaign.name, plan.baseline.name
    names = confirm_names(winner, section.confirm_launches)
    known = {c.name for c in trials.specs}
    trials.specs += [c for c in _specs(names, winner, base) if c.name not in known]
    store.add_analysis(
        CONFIRM_KIND, winner, {**marker, "status": "started", "configs": names}, campaign=camp
    )
    trials.run(trials.derived(base, names, confirm=True))
    out = judge(
        store,
        camp,
        str(section.at),
        names,
        metric,
        winner=winner,
        baseline=base,
        alpha=plan.campaign.load.alpha,
        min_effect=section.min_effect,
    )
    store.add_analysis(
        CONFIRM_KIND, winner, {**marker, "status": "decided", **out.to_json()}, campaign=camp
    )
    return out


@dataclass(frozen=True)
class Resumed:
    """A resumed search that had stopped and started its confirmation: its stop as stored, and
    the section it is replayed under (the budget its trials already spent: nothing proposed)."""

    marker: dict[str, Any]
    section: SearchSection


def resumed_stop(
    store: Store, campaign: str, section: SearchSection, trials: int
) -> Resumed | None:
    """The stored start of a confirmation whose search stopped with ``trials`` trials under
    today's trial budget (a resumed search then goes straight to it); None otherwise."""
    got = store.analyses.of(ConfirmBody, CONFIRM_KIND, campaign)
    last = got[-1].data if got else None
    if last is None or not trials or last.trials != trials:
        return None
    if last.budget_trials != section.budget_trials:
        return None
    return Resumed(last.to_json(), section.model_copy(update={"budget_trials": trials}))


def defend(
    trials: Trials, result: SearchResult, metric: str | None, resumed: Resumed | None
) -> Confirmation | None:
    """The winner's confirmation (``confirm_winner``) when the search found one and its
    objective has a metric to confirm (None: nothing to confirm); a resumed search's stop is
    the stored one."""
    if resumed is not None:
        result.stopped = resumed.marker["stopped"]
        result.stop_detail = str(resumed.marker.get("stop_detail") or "")
    if result.best == result.path[0] or metric is None:
        return None
    budget = trials.section.budget_trials
    marker = {
        "stopped": result.stopped,
        "stop_detail": result.stop_detail,
        "trials": len(result.trials),
        "budget_trials": budget,
    }
    return confirm_winner(trials, result.best, metric, marker)
