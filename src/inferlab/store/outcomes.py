"""The bodies of the ``analyses`` that record what a campaign decided (``store.bodies``): its
launch rounds (``launches``) and launch-to-launch spreads (``launch_spread``), each config's
capacity at SLO (``capacity``) and the search's trials, summary and confirmation
(``search-trial``, ``search``, ``search-confirm``). Each matches what its writers store."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from inferlab.store.bodies import ANALYSES, Body, Json

__all__ = [
    "CONFIRM",
    "BudgetBody",
    "CapacityBody",
    "ConfirmBody",
    "IntervalBody",
    "LaunchRoundsBody",
    "LaunchTally",
    "LaunchTermBody",
    "ProbeBody",
    "SearchBody",
    "SpreadBody",
    "TrialBody",
    "TrialResultBody",
]

#: the analyses kind of the search's confirmation (``search.confirm``)
CONFIRM = "search-confirm"


class LaunchTally(Body):
    """How many times a config was launched and why it stopped (``campaign.rounds.Tally``)."""

    config: str
    launches: int
    stopped: str


@ANALYSES.register("launches")
class LaunchRoundsBody(Body):
    """The campaign's launch rounds (``campaign.runner``): the budget, the launches asked
    for and each config's tally."""

    budget: int
    launches: int
    configs: list[LaunchTally]


@ANALYSES.register("launch_spread")
class SpreadBody(Body):
    """One campaign's launch-to-launch spread of ``metric`` at ``label`` (``store.spreads``),
    under the engine, model and host it was measured on: ``tau`` the launch term (log scale),
    ``df`` its degrees of freedom, ``within`` the within-launch spread."""

    engine: str
    model: str
    host: str
    label: str
    metric: str
    tau: float
    df: int
    launches: int
    within: float | None = None


class IntervalBody(Body):
    """A point estimate and its confidence interval (``stats.summary.Interval``; NaN → None)."""

    estimate: float | None
    low: float | None
    high: float | None
    level: float


class BudgetBody(Body):
    """How confident a capacity's bracket is (``stats.capacity_error.ErrorBudget``): the
    bracket's ``level``, spread by ``method`` over its probes and limits."""

    level: float
    probes: int
    limits: int
    probe_level: float
    method: str


class LaunchTermBody(Body):
    """The launch-to-launch spread a capacity's bracket covers (``stats.capacity_error``)."""

    tau: float
    df: int
    launches: int
    source: str


class ProbeBody(Body):
    """One probe of a capacity search: the point, whether the SLO held there (``state``)."""

    point: float
    state: str
    goodput: float | None = None
    margin: float | None = None
    requests: int
    run_ids: list[int]
    seed: int
    stop: str | None = None
    trusted: bool


@ANALYSES.register("capacity")
class CapacityBody(Body):
    """A config's capacity at SLO (``campaign.capacity.CapacityResult.to_json()``): the
    bracket (``holds_at``/``fails_at``, ``low``/``high`` in ``unit``), its isotonic
    ``estimate`` and how confident the bracket is (``confidence``, ``launch``)."""

    slo: str
    engine: str | None = None
    simulated: bool = False
    unit: str = "concurrency"
    step: float | None = None
    holds_at: float | None = None
    fails_at: float | None = None
    low: float | None = None
    high: float | None = None
    estimate: IntervalBody | None = None
    stopped: str = ""
    up_to: float | None = None
    workload: str = ""
    confidence: BudgetBody | None = None
    launch: LaunchTermBody | None = None
    #: what the bracket covers (absent from analyses stored before it was said)
    definition: str | None = None
    probes: list[ProbeBody] = Field(default_factory=list)


class TrialResultBody(Body):
    """How a search trial ended, as stored (``search.records.TrialResult`` derives from it)."""

    status: Literal["ok", "failed"]
    value: float | None = None
    #: the trial's verdict against its reference (None: failed)
    verdict: Literal["better", "worse", "equivalent", "undecided"] | None = None
    reason: str = ""
    #: metric → the trial's A/B against its reference
    ab: dict[str, dict[str, Json]] = Field(default_factory=dict)
    #: a launch the engine refused: the flags involved
    implicated: tuple[str, ...] = ()
    #: a capacity trial's capacity at SLO: estimate, low, high, unit, launches
    capacity: dict[str, float | str | None] = Field(default_factory=dict)


@ANALYSES.register("search-trial")
class TrialBody(Body):
    """One trial of a search, as stored (``search.records.TrialRecord`` derives from it): the
    config it tried, what it
    measured against which reference, and the bounds it was chosen within."""

    index: int
    name: str
    #: the search's dimensions (a flag, an env var) → the value tried
    params: dict[str, Json]
    result: TrialResultBody
    against: str
    chosen_by: str
    bounds: dict[str, float | None] = Field(default_factory=dict)
    #: the batch it ran in (absent: a search on one host)
    batch: int | None = None


@ANALYSES.register("search")
class SearchBody(Body):
    """What the report shows beside a search's trials (``search.driver.OptimizeResult``'s
    summary): the incumbent's path, why it stopped, the recommendation."""

    campaign: str
    baseline: str
    objective: str
    at: str = ""
    metric: str = ""
    sampler: str = ""
    min_effect: float = 0.0
    budget_trials: int | None = None
    trials: int | None = None
    simulated: bool = False
    #: the best config: name, args, env, files
    best: dict[str, Json] | None = None
    bounds: list[dict[str, Json]] = Field(default_factory=list)
    dims: list[str] = Field(default_factory=list)
    path: list[str] = Field(default_factory=list)
    evidence: list[dict[str, Json]] = Field(default_factory=list)
    predicted: list[dict[str, Json]] = Field(default_factory=list)
    pruned: dict[str, Json] = Field(default_factory=dict)
    skipped: dict[str, int] = Field(default_factory=dict)
    refused: list[str] = Field(default_factory=list)
    stopped: str = ""
    stop_text: str = ""
    stop_detail: str = ""
    recommended: str | None = None
    snippet: str = ""
    command: str = ""
    launch: list[str] = Field(default_factory=list)
    confirmation: dict[str, Json] | None = None


@ANALYSES.register(CONFIRM)
class ConfirmBody(Body):
    """The search's confirmation of its winner (``search.confirm``): ``started`` with the
    configs it launches and the search's stop (``trials``, ``budget_trials``, ``stopped``),
    then ``decided`` with the verdict (``search.confirm.Confirmation``)."""

    #: "started" | "decided"
    status: str
    #: the winner (decided; the analysis's name says it in both)
    winner: str | None = None
    configs: list[str] = Field(default_factory=list)
    trials: int | None = None
    budget_trials: int | None = None
    stopped: str | None = None
    stop_detail: str | None = None
    baseline: str | None = None
    metric: str | None = None
    confirmed: bool | None = None
    claim: str | None = None
    reason: str | None = None
    sentence: str | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    launches: list[int] = Field(default_factory=list)
    alpha: float | None = None
    min_effect: float | None = None
