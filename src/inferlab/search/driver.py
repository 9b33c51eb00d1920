"""``inferlab optimize CAMPAIGN.toml``: the closed loop over a campaign's ``[search]``.

1. The baseline (the campaign's first config) is measured at every load point of the file, and
   profiled where ``[profile]`` says (``campaign.runner``).
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
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inferlab.campaign import passes
from inferlab.campaign.clock import ModelClock
from inferlab.campaign.context import CampaignEvents
from inferlab.campaign.launch import SUBPROCESS, Launcher
from inferlab.campaign.plan import Plan, make_plan, plan_of, render_plan, select_configs
from inferlab.campaign.runner import run_plan
from inferlab.config.campaign import ConfigSpec
from inferlab.config.pattern import closed_concurrency
from inferlab.config.resolve import ResolvedConfig
from inferlab.config.search import SEARCH_KIND, STOPPED, TRIAL_KIND, SearchDim, SearchSection
from inferlab.errors import ConfigError, InferlabError
from inferlab.store import Store

from .flags import check_flags
from .loop import Bounds, SearchResult, TrialRecord, TrialResult, run_search
from .objectives import OBJECTIVES, capacity_result, slo_problem
from .prune import DimBound, bound_dims, levers_of
from .samplers import resolve
from .space import Space
from .summary import baseline_values, command_line, predicted_rows

__all__ = [
    "OBJECTIVE_METRIC",
    "SEARCH_KIND",
    "TRIAL_KIND",
    "OptimizeResult",
    "optimize",
    "ref_spec",
    "search_plan",
]

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
        }

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
    return {**asdict(t), "result": asdict(t.result)}


def _record_of(data: dict[str, Any]) -> TrialRecord:
    r = data["result"]
    result = TrialResult(
        r["status"], r.get("value"), r.get("verdict"), r.get("reason", ""), dict(r.get("ab") or {})
    )
    return TrialRecord(
        int(data["index"]), str(data["name"]), dict(data["params"]), result,
        str(data["against"]), str(data["chosen_by"]), dict(data.get("bounds") or {}),
    )  # fmt: skip


def search_plan(path: Path) -> tuple[Plan, SearchSection]:
    """The campaign's plan and its ``[search]``, checked before anything launches."""
    plan = make_plan(path)
    section = plan.campaign.search
    if section is None:
        raise ConfigError(f"{path}: no [search] section: inferlab optimize searches one")
    problem = slo_problem(section.objective, plan.campaign.slo)
    if problem is not None:
        raise ConfigError(f"{path}: search.objective: {problem}")
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
        resolve(section, Space(tuple(section.dim), plan.campaign.config[0]))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return plan, section


class _Trials:
    """The evaluator: each trial and its incumbent's fresh measurement as configs of a plan
    derived from the campaign (one point: the search's; a sequential A/B against the
    incumbent's measurement)."""

    def __init__(
        self,
        plan: Plan,
        section: SearchSection,
        store: Store,
        run: Callable[[Plan], dict[str, str]],
        specs: list[ConfigSpec],
    ) -> None:
        self.plan, self.section, self.store, self.run = plan, section, store, run
        self.specs = specs  # the campaign's configs, then every trial's (and its ref's)
        self.text = plan.path.read_text(encoding="utf-8")

    def derived(self, reference: str, names: list[str], profile: bool = False) -> Plan:
        """The campaign reduced to the search's point for ``names``, judged against
        ``reference``; ``profile``: with the campaign's ``[profile]`` at that point."""
        camp = self.plan.campaign
        capacity = self.section.objective == "capacity"
        at = closed_concurrency(self.section.at) if self.section.at else None
        start = at or (camp.load.concurrency[0] if camp.load.concurrency else 1)
        load = camp.load.model_copy(
            update={
                "concurrency": [start],
                "rate": [],
                "requests": "auto",
                "sequential": not capacity,
                "trials": 1,
                "recheck_baseline": False,
                "interleave": False,  # each trial has its own incumbent measurement (tNN-ref)
                "max_requests": camp.load.max_requests or 2000,
            }
        )
        verify = camp.verify.model_copy(update={"equivalent_to": reference})
        prof = None
        if profile and camp.profile is not None:
            prof = camp.profile.model_copy(update={"at": [self.section.at], "configs": names})
        derived = camp.model_copy(
            update={"config": list(self.specs), "load": load, "verify": verify, "profile": prof}
        )
        return select_configs(plan_of(derived, self.plan.path, self.text), names)

    def bounds_of(self, incumbent: str, dims: tuple[SearchDim, ...]) -> Bounds | None:
        """The dimensions' bounds against a new incumbent, from its levers: its profile at the
        search's point is captured first where ``[profile]`` asks for that point; None when no
        lever has evidence for it."""
        prof = self.plan.campaign.profile
        if prof is not None and self.section.at in prof.at:
            self.run(self.derived(self.reference_of(incumbent), [incumbent], profile=True))
        camp = self.plan.campaign.campaign.name
        levers = levers_of(self.store, camp, incumbent)
        if not levers:
            return None
        at, eff = str(self.section.at), self.section.min_effect
        bounds = bound_dims(dims, levers, at, eff)
        said = "; ".join(f"{b.key}: {b.why(at)}" for b in bounds)
        nothing = all(b.pruned for b in bounds)
        why = f"against {incumbent}, below ×{1 + eff:.3f}: {said}" if nothing else None
        return Bounds({b.key: b.high for b in bounds}, why)

    def reference_of(self, name: str) -> str:
        """The config ``name`` was judged against (the baseline for itself)."""
        ref = f"{name.split('-', 1)[0]}-ref"
        return ref if any(c.name == ref for c in self.specs) else self.plan.baseline.name

    def evaluate(self, config: ConfigSpec, incumbent: str) -> TrialResult:
        ref = ref_spec(config.name, incumbent)
        self.specs += [ref, config]
        try:
            outcomes = self.run(self.derived(ref.name, [ref.name, config.name]))
        except InferlabError as exc:
            return TrialResult("failed", reason=str(exc))
        return self.result(config.name, ref.name, outcomes)

    def result(self, name: str, ref: str, outcomes: dict[str, str]) -> TrialResult:
        camp = self.plan.campaign.campaign.name
        if self.section.objective == "capacity":
            if outcomes.get(name, "measured").startswith("failed"):
                return TrialResult("failed", reason=outcomes[name])
            return capacity_result(self.store, camp, name, ref)
        at = self.section.at
        refs = [r for r in self.store.runs(campaign=camp, config=ref) if r.label == at]
        runs = [r for r in self.store.runs(campaign=camp, config=name) if r.label == at]
        if not runs:
            return TrialResult("failed", reason=outcomes.get(name, "not measured"))
        run = runs[-1]
        value = _value(run.summary, self.section.objective)
        if not refs or refs[-1].trust != "trusted":
            why = "untrusted" if refs else outcomes.get(ref, "not measured")
            return TrialResult("ok", value, "undecided", f"the incumbent's measurement {ref} at "
                               f"{at}: {why}: no verdict")  # fmt: skip
        if run.trust != "trusted":
            return TrialResult("ok", value, "undecided", f"{name} at {at} untrusted: no verdict")
        judge = OBJECTIVES[self.section.objective].judge
        assert judge is not None
        verdict, reason = judge(run, refs[-1], ref)
        seq = ((run.stop or {}).get("sequential") or {}).get("metrics") or {}
        ab = {
            m: {k: d[k] for k in ("ratio", "low", "high", "status") if k in d}
            for m, d in seq.items()
            if isinstance(d, dict) and "ratio" in d
        }
        return TrialResult("ok", value, verdict, reason, ab)


def _value(summary: dict[str, Any], objective: str) -> float | None:
    """The objective's estimate from a run's summary: output tok/s, median TPOT (ms) or the
    goodput share (0–1)."""
    read = OBJECTIVES[objective].value
    v = read(summary) if read is not None else None
    return float(v) if isinstance(v, int | float) else None


def ref_spec(trial: str, incumbent: str) -> ConfigSpec:
    """The incumbent, unchanged, as the config measured again just before ``trial``."""
    return ConfigSpec(
        name=f"{trial.split('-', 1)[0]}-ref",
        extends=incumbent,
        description=f"the incumbent {incumbent}, measured again beside {trial}",
    )


def optimize(
    path: str | Path,
    *,
    store: Store,
    events: CampaignEvents | None = None,
    resume: bool = False,
    launcher: Launcher = SUBPROCESS,
    clock: ModelClock | None = None,
) -> OptimizeResult:
    """The search of the campaign at ``path`` (see the module docstring)."""
    plan, section = search_plan(Path(path))
    events = events or CampaignEvents()
    name = plan.campaign.campaign.name
    at = str(section.at) if section.at else f"SLO {plan.campaign.slo.text}"  # capacity
    capacity = section.objective == "capacity"
    measure = passes.capacity(section.capacity_up_to) if capacity else passes.sweep

    def run(p: Plan) -> dict[str, str]:
        res = run_plan(p, store=store, events=events, resume=True, launcher=launcher,
                       clock=clock, measure=measure)  # fmt: skip
        if res.interrupted:
            raise KeyboardInterrupt
        return {o.config: o.status + (f": {o.message}" if o.message else "") for o in res.outcomes}

    base = plan.baseline.name
    run_plan(select_configs(plan, [base]), store=store, events=events, resume=resume,
             launcher=launcher, clock=clock)  # fmt: skip
    measured = [r for r in store.runs(campaign=name, config=base) if r.label == at]
    if section.at is not None and not measured:
        raise InferlabError(f"optimize: the baseline {base!r} was not measured at {at}")
    bounds = bound_dims(section.dim, levers_of(store, name, base), at, section.min_effect)
    pruned = {b.key: b.why(at) for b in bounds if b.pruned}
    kept = tuple(d for d, b in zip(section.dim, bounds, strict=True) if not b.pruned)
    base_spec = plan.campaign.config[0]
    space = Space(kept, base_spec)
    history = [_record_of(a["data"]) for a in store.analyses(TRIAL_KIND, campaign=name)]
    specs = list(plan.campaign.config)
    for rec in history:  # the trials already stored are configs of the derived plan
        specs += [ref_spec(rec.name, rec.against), space.config(rec.index, rec.params)]
    trials = _Trials(plan, section, store, run, specs)

    def stored(rec: TrialRecord) -> None:
        store.add_analysis(TRIAL_KIND, rec.name, _record_json(rec), campaign=name)

    first = Bounds({b.key: b.high for b in bounds if not b.pruned})
    result = run_search(
        space, section, trials, history=history, pruned=pruned, on_trial=stored, bounds=first,
        rebound=lambda incumbent: trials.bounds_of(incumbent, kept),
    )  # fmt: skip
    configs = {c.name: c for c in trials.specs}
    launch = render_plan(trials.derived(trials.reference_of(result.best), [result.best]))
    shown = next((i for i, line in enumerate(launch) if line.startswith("[1] ")), len(launch))
    out = OptimizeResult(name, base, section.objective, at, bounds, result, configs, launch[shown:])
    data = out.summary(section, plan.baseline)
    data["simulated"] = plan.campaign.engine.kind == "sim"
    store.add_analysis(SEARCH_KIND, name, data, campaign=name)
    return out
