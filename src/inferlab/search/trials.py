"""The evaluator of ``inferlab optimize``: each batch of trials (one, on one host) and a fresh
measurement of the incumbent beside it (``t03-ref``, named after the batch's first trial) as
configs of a plan derived from the campaign: one load point, the search's, and a sequential A/B
of every trial against that measurement. A batch whose every trial failed to launch measured
nothing after it: the next batch against the same incumbent reuses it (a launch, not a
measurement, ago) instead of launching the incumbent again. Its results read from the store;
the bounds of the dimensions against a new incumbent read from its levers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from inferlab.campaign.parts.plan import Plan, plan_of, render_plan, select_configs
from inferlab.config.campaign import ConfigSpec
from inferlab.config.pattern import closed_concurrency
from inferlab.config.search import SearchDim, SearchSection
from inferlab.engines import get_engine
from inferlab.engines.logs import primary_failure
from inferlab.errors import InferlabError
from inferlab.server import log_tail
from inferlab.store import Store

from .loop import Bounds, TrialResult
from .objectives import OBJECTIVES, capacity_result
from .prune import bound_dims, levers_of

__all__ = ["Trials", "ref_spec", "trial_alpha"]


def trial_alpha(alpha: float, section: SearchSection) -> float:
    """Each trial's two-sided level: ``alpha`` spent evenly over the trial budget (Bonferroni,
    so that the chance that any of the search's do-nothing trials is accepted is ≤ ``alpha``
    whatever the order and the incumbent's moves; Dunn 1961)."""
    return alpha / section.budget_trials


class Trials:
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
        profiles: bool = True,
    ) -> None:
        self.plan, self.section, self.store, self.run = plan, section, store, run
        self.specs = specs  # the campaign's configs, then every trial's (and its ref's)
        self.text = plan.path.read_text(encoding="utf-8")
        self.profiles = profiles  # False under --ray, where [profile] does not run
        self.refs: dict[str, str] = {}  # trial → the incumbent's measurement it was judged by
        #: the incumbent's measurement whose batch failed to launch, and that incumbent: the
        #: next batch against the same incumbent is judged by it (measured a launch ago)
        self.spare: tuple[str, str] | None = None

    def add(self, trials: Sequence[ConfigSpec], incumbent: str) -> tuple[ConfigSpec, bool]:
        """The trials of one batch, and the incumbent's fresh measurement beside them, as
        configs of the derived plans (the measurement: named after the first trial); True
        when that measurement is the spare one, already made (``settle``)."""
        known = {c.name: c for c in self.specs}
        spare = self.spare[0] if self.spare is not None and self.spare[1] == incumbent else None
        ref = known[spare] if spare in known else ref_spec(trials[0].name, incumbent)
        self.specs += [c for c in (ref, *trials) if c.name not in known]
        self.refs.update((t.name, ref.name) for t in trials)
        return ref, spare in known

    def settle(self, ref: str, incumbent: str, results: Sequence[TrialResult]) -> None:
        """After a batch: when every trial of it failed (nothing was measured after the
        incumbent's measurement ``ref``) and ``ref`` was measured, the next batch against
        ``incumbent`` reuses ``ref`` instead of launching the incumbent again; otherwise the
        next batch gets its own."""
        failed = bool(results) and all(r.status == "failed" for r in results)
        camp, at = self.plan.campaign.campaign.name, self.section.at
        measured = any(
            r.label == at or at is None for r in self.store.runs(campaign=camp, config=ref)
        )  # an incumbent that did not launch leaves nothing to reuse
        self.spare = (ref, incumbent) if failed and measured else None

    def derived(
        self, reference: str, names: list[str], profile: bool = False, confirm: bool = False
    ) -> Plan:
        """The campaign reduced to the search's point for ``names``, judged against
        ``reference``; ``profile``: with the campaign's ``[profile]`` at that point;
        ``confirm``: the winner's confirmation (``search.confirm``): no sequential A/B (each
        launch measured by the precision rule), no verification (the trial passed it)."""
        camp = self.plan.campaign
        capacity = self.section.objective == "capacity"
        at = closed_concurrency(self.section.at) if self.section.at else None
        start = at or (camp.load.concurrency[0] if camp.load.concurrency else 1)
        points: dict[str, Any] = {"concurrency": [start], "rate": [], "requests": "auto"}
        if self.section.capacity_rate_up_to is not None:  # over rate: open loop, a count
            points = {"concurrency": [], "rate": camp.load.rate[:1]}
        load = camp.load.model_copy(
            update={
                **points,
                "sequential": not capacity and not confirm,
                "trials": 1,
                "recheck_baseline": False,
                "interleave": False,  # each trial has its own incumbent measurement (tNN-ref)
                "max_requests": camp.load.max_requests or 2000,
                # [search] min_effect is the trials' A/B's, whatever [load] says; and α is
                # spent over the trial budget (Bonferroni): P(any do-nothing trial accepted)
                # ≤ [load] alpha over the whole search
                "min_effect": self.section.min_effect,
                "alpha": trial_alpha(camp.load.alpha, self.section),
                # the confirmation interleaves its own launches (confirm_launches), once each
                **({"launches": 1, "max_launches": None} if confirm else {}),
            }
        )
        # the A/B and greedy equivalence against the incumbent's fresh measurement; a lossy
        # trial's agreement gate against the baseline (a step never gated against a moved one)
        against = camp.verify.lossy_against or self.plan.baseline.name
        verify = camp.verify.model_copy(
            update={"equivalent_to": reference, "lossy_against": against}
            | ({"enabled": False} if confirm else {})
        )
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
        if self.profiles and prof is not None and self.section.at in prof.at:
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

    def refused(self, name: str) -> tuple[str, ...]:
        """The flags involved when the engine refused ``name``'s last launch (its log's root
        cause is a ``refusal`` signature); () for any other failure."""
        launches = self.store.verifications.launches(self.plan.campaign.campaign.name, config=name)
        log = launches[-1].detail.log_path if launches and not launches[-1].passed else None
        if not log:
            return ()
        spec = get_engine(self.plan.campaign.engine.kind)
        # the lines the launch itself classified its failure from (``server.lifecycle``)
        cause = primary_failure(spec.classify_log(log_tail(Path(log), 2000)))
        return cause.involved() if cause is not None else ()

    def reference_of(self, name: str) -> str:
        """The config ``name`` was judged against (the baseline for itself)."""
        return self.refs.get(name, self.plan.baseline.name)

    def launch_lines(self, best: str) -> list[str]:
        """How to launch ``best``: its plan's lines from its ``[1] `` line on."""
        launch = render_plan(self.derived(self.reference_of(best), [best]))
        shown = next((i for i, line in enumerate(launch) if line.startswith("[1] ")), len(launch))
        return launch[shown:]

    def evaluate(self, config: ConfigSpec, incumbent: str) -> TrialResult:
        return self.evaluate_batch([config], incumbent)[0]

    def evaluate_batch(self, configs: Sequence[ConfigSpec], incumbent: str) -> list[TrialResult]:
        """The batch's trials measured side by side, each against one fresh measurement of
        the incumbent (one plan)."""
        ref, reused = self.add(configs, incumbent)
        names = [c.name for c in configs]
        try:
            outcomes = self.run(self.derived(ref.name, names if reused else [ref.name, *names]))
        except InferlabError as exc:
            results = [TrialResult(status="failed", reason=str(exc)) for _ in configs]
        else:
            results = [self.result(n, ref.name, outcomes) for n in names]
        self.settle(ref.name, incumbent, results)
        return results

    def result(self, name: str, ref: str, outcomes: dict[str, str]) -> TrialResult:
        camp = self.plan.campaign.campaign.name
        if self.section.objective == "capacity":
            if outcomes.get(name, "measured").startswith("failed"):
                return TrialResult(
                    status="failed", reason=outcomes[name], implicated=self.refused(name)
                )
            return capacity_result(self.store, camp, name, ref)
        at = self.section.at
        refs = [r for r in self.store.runs(campaign=camp, config=ref) if r.label == at]
        runs = [r for r in self.store.runs(campaign=camp, config=name) if r.label == at]
        if not runs:
            why = outcomes.get(name, "not measured")
            return TrialResult(status="failed", reason=why, implicated=self.refused(name))
        run = runs[-1]
        value = _value(run.summary, self.section.objective)
        if not refs or refs[-1].trust != "trusted":
            why = "untrusted" if refs else outcomes.get(ref, "not measured")
            return TrialResult(
                status="ok",
                value=value,
                verdict="undecided",
                reason=f"the incumbent's measurement {ref} at {at}: {why}: no verdict",
            )
        if run.trust != "trusted":
            return TrialResult(
                status="ok",
                value=value,
                verdict="undecided",
                reason=f"{name} at {at} untrusted: no verdict",
            )
        judge = OBJECTIVES[self.section.objective].judge
        assert judge is not None
        verdict, reason = judge(run, refs[-1], ref)
        seq = ((run.stop or {}).get("sequential") or {}).get("metrics") or {}
        ab = {
            m: {k: d[k] for k in ("ratio", "low", "high", "status") if k in d}
            for m, d in seq.items()
            if isinstance(d, dict) and "ratio" in d
        }
        return TrialResult(status="ok", value=value, verdict=verdict, reason=reason, ab=ab)


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
