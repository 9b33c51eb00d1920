"""``inferlab optimize CAMPAIGN.toml``: the closed loop over a campaign's ``[search]``.

1. The baseline (the campaign's first config) is measured at every load point of the file, and
   profiled where ``[profile]`` says (``campaign.drivers.runner``).
2. Each dimension's Amdahl bound is read from the baseline's levers (``search.prune``); a
   dimension whose bound is below ``1 + min_effect`` at the search's point is pruned, and said.
3. Optuna proposes trials over the rest (``search.loop``). Each trial is a stored config
   (``t03-mns32-mnbt2048``, the baseline extended by its values), measured at the search's
   point beside a fresh measurement of the incumbent (``t03-ref``, the incumbent unchanged,
   launched just before it: drift between the two is minutes, not the whole search), by a
   sequential A/B against that measurement; greedy equivalence is checked against it too
   (unless ``lossless = false``). The incumbent moves only on "better" for the objective.
4. Every trial is stored as an analysis (``search-trial``) as it ends; ``--resume`` replays
   them into a fresh study and goes on (the sampler's state is the store's).

With ``ray`` (``optimize --ray ADDRESS``) every plan runs on the Ray cluster
(``cluster.campaign.run_plan_ray``) and the trials go in batches of ``parallel``: one derived
plan holds the incumbent's fresh measurement (``t03-ref``, named after the batch's first
trial) and the batch's trials side by side, each trial's A/B against that measurement.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inferlab.campaign import passes
from inferlab.campaign.context import CampaignEvents, Launcher
from inferlab.campaign.drivers.runner import CampaignResult, run_plan
from inferlab.campaign.parts.capacity import CONCURRENCY, Ladder
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import SUBPROCESS
from inferlab.campaign.parts.plan import Plan, baseline_of, make_plan, select_configs
from inferlab.cluster.campaign import check_plan, run_plan_ray, side_by_side
from inferlab.config.campaign import ConfigSpec
from inferlab.config.pattern import closed_concurrency
from inferlab.config.resolve import ResolvedConfig
from inferlab.config.search import SEARCH_KIND, STOPPED, TRIAL_KIND, SearchSection
from inferlab.engines import is_simulated
from inferlab.errors import ConfigError, InferlabError
from inferlab.store import Store
from inferlab.store.outcomes import TrialBody

from .confirm import Confirmation, defend, resumed_stop
from .flags import check_flags
from .loop import Bounds, SearchResult, TrialRecord, batches, run_search
from .objectives import slo_problem
from .prune import DimBound, bound_search
from .refusals import refusal_lines
from .samplers import resolve
from .space import Space, check_resumed
from .summary import baseline_values, command_line, predicted_rows
from .trials import Trials, ref_spec

__all__ = [
    "NO_PROFILE",
    "OBJECTIVE_METRIC",
    "SEARCH_KIND",
    "TRIAL_KIND",
    "OptimizeResult",
    "optimize",
    "ref_spec",
    "search_plan",
]

#: said (and shown by ``--dry-run``) when a campaign with ``[profile]`` is searched under --ray
NO_PROFILE = (
    "[profile] does not run under --ray: the baseline and the incumbents are not profiled, so "
    "a dimension's bound has only the other evidence the store holds (none: it is searched "
    "without a bound, never pruned)"
)

#: objective → the sequential A/B's metric whose status decides a trial (the others:
#: ``search.objectives``)
OBJECTIVE_METRIC = {"output_tok_s": "output_tok_s", "tpot_ms": "tpot_ms"}


@dataclass
class OptimizeResult:
    """A search: its campaign, baseline, objective and point, each dimension's bound, the
    trials, the incumbent's path and why it stopped."""

    campaign: str
    baseline: str
    objective: str
    at: str
    bounds: list[DimBound]
    search: SearchResult
    #: every trial's config (and each incumbent re-measurement's), by name
    configs: dict[str, ConfigSpec] = field(default_factory=dict)
    #: the best config's resolved launch (argv, env) as ``run --dry-run`` prints it
    launch: list[str] = field(default_factory=list)
    #: the winner's confirmation A/B on fresh launches (``search.confirm``); None: the
    #: baseline won, or the objective has none (goodput, capacity)
    confirmation: Confirmation | None = None

    @property
    def recommended(self) -> str | None:
        """The config recommended: the winner when it confirmed (or has no confirmation for
        its objective); None when nothing beat the baseline or the winner did not confirm."""
        if self.best == self.baseline:
            return None
        ok = self.confirmation is None or self.confirmation.confirmed
        return self.best if ok else None

    @property
    def best(self) -> str:
        return self.search.best

    @property
    def command(self) -> str:
        """The engine command line that launches the recommendation."""
        return command_line(self.launch)

    def snippet(self) -> str:
        """The best config as a ``[[config]]`` table to add to the campaign file."""
        best = self.configs.get(self.best)
        if best is None:
            return ""
        lines = ["[[config]]", f"name = {json.dumps(best.name)}"]
        if best.extends:
            lines.append(f"extends = {json.dumps(best.extends)}")
        for key in ("set", "env", "files"):
            table: dict[str, Any] = dict(getattr(best, key))
            if table:
                body = ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in table.items())
                lines.append(f"{key} = {{ {body} }}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        best = self.configs.get(self.best)
        return {
            "campaign": self.campaign,
            "baseline": self.baseline,
            "objective": self.objective,
            "at": self.at,
            "best": {
                "name": self.best,
                "args": dict(best.set) if best is not None else {},
                "env": dict(best.env) if best is not None else {},
                "files": dict(best.files) if best is not None else {},
            },
            "trials": len(self.search.trials),
            "stopped": self.search.stopped,
            "path": list(self.search.path),
            "pruned": dict(self.search.pruned),
            "bounds": [asdict(b) for b in self.bounds],
            "trial_list": [_record_json(t) for t in self.search.trials],
            "launch": list(self.launch),
            "command": self.command,
            "sampler": self.search.sampler,
            "stop_detail": self.search.stop_detail,
            "skipped": dict(self.search.skipped),
            "recommended": self.recommended,
            "confirmation": self.confirmation.to_json() if self.confirmation else None,
        }

    def refused(self) -> list[str]:
        """The refusals that kept proposals from launching, one sentence each."""
        flags = {t.name: t.result.implicated for t in self.search.trials}
        return refusal_lines(self.search.skipped, flags)

    def summary(self, section: SearchSection, base: ResolvedConfig) -> dict[str, Any]:
        """What the report shows beside the trials (stored as the ``search`` analysis)."""
        out = self.to_json()
        del out["trial_list"]
        by_name = {t.name: t for t in self.search.trials}
        steps = [by_name[n] for n in self.search.path[1:] if n in by_name]
        metric = OBJECTIVE_METRIC.get(self.objective, self.objective)  # goodput, capacity: own
        out.update(
            min_effect=section.min_effect,
            budget_trials=section.budget_trials,
            stop_text=STOPPED.get(self.search.stopped, self.search.stopped),
            refused=self.refused(),
            snippet=self.snippet(),
            metric=metric,
            dims=[f"{b.key}: {b.why(self.at)}" for b in self.bounds],
            evidence=[
                {"name": t.name, "against": t.against, **t.result.ab.get(metric, {})} for t in steps
            ],
            predicted=predicted_rows(
                self.search.trials, self.baseline, baseline_values(section.dim, base)
            ),
        )
        return out


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return json.dumps(str(v))


def _record_json(t: TrialRecord) -> dict[str, Any]:
    out = t.model_dump()
    if not t.batch:  # a batch of one (a search on one host): stored as before batches
        del out["batch"]
    return out


def _record_of(data: TrialBody) -> TrialRecord:
    return TrialRecord.model_validate({**data.model_dump(), "batch": data.batch or 0})


def search_plan(path: Path) -> tuple[Plan, SearchSection]:
    """The campaign's plan and its ``[search]``, checked before anything launches."""
    plan = make_plan(path)
    section = plan.campaign.search
    if section is None:
        raise ConfigError(f"{path}: no [search] section: inferlab optimize searches one")
    problem = slo_problem(section.objective, plan.campaign.slo)
    if problem is not None:
        raise ConfigError(f"{path}: search.objective: {problem}")
    lossy = [d.key for d in section.dim if not d.lossless]
    if lossy and plan.campaign.verify.lossy is None:
        raise ConfigError(
            f"{path}: search.dim {lossy[0]!r}: lossless = false needs [verify] lossy (the "
            "distribution-agreement gate, docs/verify.md): without it a lossy trial is not gated"
        )
    if section.capacity_rate_up_to is not None:
        ld = plan.campaign.load
        if not ld.rate or not (isinstance(ld.requests, int) or ld.duration_s):
            raise ConfigError(
                f"{path}: search.capacity_rate_up_to: a capacity over request rate needs [load] "
                "rate = [START] and requests = N or duration_s (an open-loop probe does not "
                "stop adaptively)"
            )
    if section.objective == "capacity" and section.at is None:
        return plan, section
    labels = [p.label for p in plan.points]
    if section.at not in labels:
        raise ConfigError(
            f"{path}: search.at: {section.at!r} is not a load point of the campaign "
            f"({', '.join(labels)})"
        )
    if closed_concurrency(section.at) is None:
        raise ConfigError(f"{path}: search.at: the A/B needs a closed-loop point (C=N)")
    check_flags(path, path.read_text(encoding="utf-8"), section, plan.baseline)
    try:
        resolve(section, Space.of(section, plan.campaign.config))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return plan, section


@dataclass
class _Runs:
    """Where the search's plans run: on this host (``run_plan``), or on the Ray cluster at
    ``ray`` (``run_plan_ray``; no model clock, no ``[profile]``, no capacity pass there)."""

    store: Store
    events: CampaignEvents
    launcher: Launcher
    clock: ModelClock | None
    ray: str | None
    hint: str = ""

    def __call__(
        self, p: Plan, resume: bool = True, measure: passes.PassFactory = passes.sweep
    ) -> CampaignResult:
        if self.ray is not None:
            return run_plan_ray(
                p,
                store=self.store,
                address=self.ray,
                events=self.events,
                resume=resume,
                resume_hint=self.hint,
            )
        return run_plan(
            p,
            store=self.store,
            events=self.events,
            resume=resume,
            launcher=self.launcher,
            clock=self.clock,
            measure=measure,
        )

    def trials(self, section: SearchSection) -> Callable[[Plan], dict[str, str]]:
        """A trials' plan run, each config's outcome in words (Ctrl-C: ``KeyboardInterrupt``):
        the sweep, or for the capacity objective its bisection."""
        capacity = section.objective == "capacity"
        measure = passes.capacity(*capacity_ladder(section)) if capacity else passes.sweep

        def run(p: Plan) -> dict[str, str]:
            res = self(p, measure=measure)
            if res.interrupted:
                raise KeyboardInterrupt
            return {
                o.config: o.status + (f": {o.message}" if o.message else "") for o in res.outcomes
            }

        return run

    def parallel(self, plan: Plan, section: SearchSection) -> int:
        """Trials per batch: 1 on this host; under Ray ``[search] parallel``, else as many as
        the alive nodes hold beside the incumbent's measurement (the baseline's need)."""
        if self.ray is None:
            return 1
        if section.objective == "capacity":
            raise ConfigError(
                f"{plan.path}: search.objective: 'capacity' is not searched under --ray yet "
                "(its bisection runs on one host): run without --ray"
            )
        needs = check_plan(select_configs(copy.copy(plan), [plan.baseline.name]), self.ray)
        return section.parallel or max(1, side_by_side(needs, self.ray) - 1)


def capacity_ladder(section: SearchSection) -> tuple[float, Ladder]:
    """The capacity objective's top and ladder: over request rate with
    ``capacity_rate_up_to``, else over concurrency."""
    top = section.capacity_rate_up_to
    if top is None:
        return float(section.capacity_up_to), CONCURRENCY
    return top, Ladder.rates(top, section.capacity_rate_step)


def _resumed(store: Store, plan: Plan, space: Space, trials: Trials) -> list[TrialRecord]:
    """The trials a resumed search stored, checked against today's ``space`` and each batch
    settled into ``trials`` again (they are configs of the derived plan); [] on a new one."""
    name = plan.campaign.campaign.name
    history = [_record_of(a.data) for a in store.analyses.of(TrialBody, TRIAL_KIND, name)]
    check_resumed(plan.path, space, [(r.name, r.params) for r in history])
    for batch in batches(history):
        ref, _ = trials.add([space.config(r.index, r.params) for r in batch], batch[0].against)
        trials.settle(ref.name, batch[0].against, [r.result for r in batch])
    return history


def optimize(
    path: str | Path,
    *,
    store: Store,
    events: CampaignEvents | None = None,
    resume: bool = False,
    launcher: Launcher = SUBPROCESS,
    clock: ModelClock | None = None,
    ray: str | None = None,
) -> OptimizeResult:
    """The search of the campaign at ``path`` (see the module docstring); ``ray``: a Ray
    cluster's address, where the plans run and the trials go in batches."""
    plan, section = search_plan(Path(path))
    events = events or CampaignEvents()
    name = plan.campaign.campaign.name
    at = str(section.at) if section.at else f"SLO {plan.campaign.slo.text}"  # capacity
    hint = f"inferlab optimize {plan.path} --ray {ray} --resume"
    runs = _Runs(store, events, launcher, clock, ray, hint)
    parallel = runs.parallel(plan, section)
    if ray is not None and plan.campaign.profile is not None:
        events.message(NO_PROFILE)

    base = plan.baseline.name
    runs(select_configs(plan, [base]), resume=resume)
    measured = [r for r in store.runs(campaign=name, config=base) if r.label == at]
    if section.at is not None and not measured:
        raise InferlabError(f"optimize: the baseline {base!r} was not measured at {at}")
    bounds, pruned, kept = bound_search(store, section, name, base, at)
    space = Space(kept, baseline_of(plan.campaign.config))
    trials = Trials(
        plan, section, store, runs.trials(section), list(plan.campaign.config), ray is None
    )
    history = _resumed(store, plan, space, trials)

    def stored(rec: TrialRecord) -> None:
        store.add_analysis(TRIAL_KIND, rec.name, _record_json(rec), campaign=name)

    first = Bounds({b.key: b.high for b in bounds if not b.pruned})
    left = resumed_stop(store, name, section, len(history))  # stopped: only to confirm
    result = run_search(
        space,
        left.section if left else section,
        trials,
        history=history,
        pruned=pruned,
        on_trial=stored,
        bounds=first,
        parallel=parallel,
        rebound=lambda incumbent: trials.bounds_of(incumbent, kept),
    )
    confirmation = defend(trials, result, OBJECTIVE_METRIC.get(section.objective), left)
    configs = {c.name: c for c in trials.specs}
    launch = trials.launch_lines(result.best)
    out = OptimizeResult(
        name, base, section.objective, at, bounds, result, configs, launch, confirmation
    )
    data = out.summary(section, plan.baseline)
    data["simulated"] = is_simulated(plan.campaign.engine.kind)
    store.add_analysis(SEARCH_KIND, name, data, campaign=name)
    return out
