"""``inferlab compare``: configs × load points from the store, deltas vs a baseline with
noise-aware verdicts, built into the comparison model (``report.comparison``) from raw samples
only. Which runs a cell reads: ``report.compare_runs``; rendered by ``report.compare_export``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from inferlab.config.pattern import closed_concurrency, label_key
from inferlab.errors import ConfigError, NotComparable
from inferlab.report.applied import not_applied, unclaimed
from inferlab.report.capacity import capacity_rows, stored_capacities
from inferlab.report.compare_runs import config_keys, identity, select_runs
from inferlab.report.comparison import Cell, Comparison
from inferlab.report.interleave import pass_rows
from inferlab.report.recheck import apply_rechecks
from inferlab.report.verdicts import group_trust, sequential_verdict, untrusted_verdict
from inferlab.stats.compare import (
    Difference,
    Saturation,
    Verdict,
    check_comparable,
    find_saturation,
    quality_warnings,
)
from inferlab.stats.groups import group_value, group_verdict, measured
from inferlab.stats.launch_ab import compare_launches, undecided
from inferlab.stats.launches import Launches, launches_of
from inferlab.stats.metrics import listed
from inferlab.stats.spread import LaunchSpread
from inferlab.stats.trust import too_short, trust_from_json
from inferlab.store import RunRow, Store
from inferlab.store.groups import RunGroup, group_runs
from inferlab.store.interleave import BaselinePass, baseline_passes, nearest_pass
from inferlab.store.launches import campaign_launches, one_launch
from inferlab.store.spreads import SpreadKey, prior_spread, spread_key

__all__ = ["build_comparison"]


@dataclass
class _LaunchView:
    """What a cell's launch-level verdicts read: every config's launches at every point
    (``stats.launches``), the spreads stored for this engine, model and host by other
    campaigns (``store.spreads``), and this campaign's name."""

    launches: Launches
    store: Store
    key: SpreadKey
    campaign: str

    def sides(
        self, label: str, metric: str, base: RunGroup, cand: RunGroup
    ) -> tuple[list[tuple[float, float]], list[tuple[float, float]], set[int]] | None:
        """Each side's launches at ``label`` (all of its config's: every pass, every round)
        and their run ids; None when a side has no estimate of ``metric``."""
        configs = self.launches.estimates.get((label, metric), [])
        got = []
        for g in (base, cand):
            ids = {r.id for r in g.runs}
            mine = next((c for c in configs if any(i & ids for i, _ in c)), None)
            if not mine:
                return None
            got.append(mine)
        ids = {i for c in got for run_ids, _ in c for i in run_ids}
        return [e for _, e in got[0]], [e for _, e in got[1]], ids

    def prior(self, label: str, metric: str, without: set[int]) -> LaunchSpread | None:
        """The spread of the campaign's other configs at ``label`` pooled with the stored."""
        own = self.launches.spread(label, metric, without)
        return prior_spread(self.store, self.key, label, metric, own, campaign=self.campaign)

    def verdict(
        self,
        label: str,
        metric: str,
        base: RunGroup,
        cand: RunGroup,
        alpha: float,
        min_effect: float,
    ) -> Verdict | None:
        """The launch-level verdict (``stats.launch_ab``); None without estimates."""
        sides = self.sides(label, metric, base, cand)
        if sides is None:
            return None
        b, c, ids = sides
        prior = self.prior(label, metric, ids)
        return compare_launches(metric, b, c, prior=prior, alpha=alpha, min_effect=min_effect)


def _verdicts(
    bg: RunGroup,
    cg: RunGroup,
    base: str,
    cand: Cell,
    base_cell: Cell,
    metrics: Sequence[str],
    alpha: float,
    min_effect: float,
    view: _LaunchView,
) -> dict[str, Verdict]:
    """One cell's verdicts: none claimed from an untrusted side; a sequentially stopped
    candidate's primary metrics from its stored look, unless the launches leave it
    undecided; the rest over each side's launches (``stats.launch_ab``: the launch is the
    unit); each naming the baseline measurement it was taken against (``cand.against``)."""
    for who, c in (("candidate", cand), ("baseline", base_cell)):
        if c.untrusted:
            cand.blocked = c.untrusted if who == "candidate" else f"{c.untrusted} (baseline)"
            v = untrusted_verdict(c.untrusted, c.untrusted_reasons, f"{who} {c.label}")
            return {m: _against(v, cand.against) if cand.against else v for m in metrics}
    out: dict[str, Verdict] = {}
    single = one_launch(bg.runs) and one_launch(cg.runs)
    for m in metrics:
        lv = view.verdict(cand.label, m, bg, cg, alpha, min_effect)
        spread = view.prior(cand.label, m, set()) if single else None
        # a stored look stands where a spread can decide it again (``relook``), or where
        # there are no launch estimates; else the launches decide (undecided, or borrowed),
        # and a look that read the same is named beside them
        seq = (
            sequential_verdict(cg.runs[0], m, base, min_effect, spread)
            if len(cg.runs) == 1
            else None
        )
        if seq is not None and (lv is None or (spread is not None and not undecided(lv))):
            out[m], cand.looks[m] = seq
        elif lv is not None:
            out[m] = lv
            if seq is not None and seq[0].claim == lv.claim != "~":
                cand.looks[m] = seq[1]
                out[m] = replace(lv, reason=f"{lv.reason}; in-run sequential A/B: {seq[0].reason}")
        else:
            out[m] = group_verdict(m, bg, cg, alpha=alpha, min_effect=min_effect, launch=spread)
        if cand.against and lv is None:  # interleaved: which baseline measurement
            out[m] = _against(out[m], cand.against)
    return out


def _nearest(
    store: Store,
    passes: Sequence[BaselinePass],
    cand: Cell,
    cg: RunGroup,
    groups: Mapping[tuple[str, str], RunGroup],
    cells: Mapping[tuple[str, str], Cell],
    base: str,
) -> tuple[RunGroup, Cell]:
    """The baseline group and cell ``cand`` is judged against: its nearest pass when the
    baseline was interleaved (``store.interleave``; said in ``cand.against``), else the first."""
    key = (base, cand.label)
    near = nearest_pass(passes, cg.runs)
    if near is None:
        return groups[key], cells[key]
    cand.against, cand.interleaved = near.describe(), near.before is not None
    if near.before is None:
        return groups[key], cells[key]
    bg = group_runs(store, near.runs, lambda r: 0)[0]
    return bg, _cell(store, base, cand.label, bg)


def _against(v: Verdict, against: str) -> Verdict:
    """``v`` with the baseline measurement it was taken against in its reason."""
    return replace(v, reason=f"{v.reason} (against {against}, the nearest)")


def _saturation(
    cells: dict[tuple[str, str], Cell], cfg: str, labels: list[str]
) -> Saturation | None:
    """Where ``cfg``'s throughput stops growing over its closed-loop points; the sentence
    says so when it rests on untrusted points, and names the other points it left out."""
    mine = [
        (c, cells[(cfg, lb)])
        for lb in labels
        if (cfg, lb) in cells
        for c in [closed_concurrency(lb)]
        if c is not None
    ]
    other = [lb for lb in labels if (cfg, lb) in cells and closed_concurrency(lb) is None]
    if len(mine) < 2:
        return None
    sat = find_saturation([(c, x.values["output_tok_s"], x.values["tpot_ms"]) for c, x in mine])
    bad = sorted({x.untrusted for _, x in mine if x.untrusted})
    if bad:
        sat = replace(sat, sentence=f"{sat.sentence} — from {', '.join(bad)} points")
    if other:
        sat = replace(sat, sentence=f"{sat.sentence} ({', '.join(other)}: not C=N, left out)")
    return sat


def _ordered_configs(
    runs: Sequence[RunRow], keys: dict[int, str], baseline: str | None
) -> tuple[str, list[str]]:
    """(the baseline, every config key with it moved to the front, the rest in run order).
    Default baseline: the config of the first run (a campaign measures its baseline first)."""
    configs = list(dict.fromkeys(keys[r.id] for r in runs))
    base = baseline or keys[runs[0].id]
    if base not in configs:
        raise ConfigError(f"--baseline: {base!r} is not among the configs ({', '.join(configs)})")
    return base, [base] + [c for c in configs if c != base]


def _refusal(base: str, bad: dict[str, list[Difference]]) -> NotComparable:
    lines = [
        f"{c} vs {base}: " + ", ".join(f"{d.field} ({d.a!r} vs {d.b!r})" for d in ds)
        for c, ds in bad.items()
    ]
    return NotComparable(
        "comparison refused, the runs differ in: "
        + "; ".join(lines)
        + " (--force compares anyway and marks every affected cell)"
    )


def _cell(store: Store, cfg: str, label: str, g: RunGroup) -> Cell:
    """One group's value of each compared metric (``group_value``), trust and warnings."""
    tok_s = [float(r.summary.get("output_tok_s") or 0.0) for r in g.runs]
    values = {m.name: group_value(m.name, g) for m in listed(lambda m: m.compared)}
    n_ok = sum(len(measured(recs)) for recs in g.records)
    errors = sum(int(sum((r.summary.get("errors") or {}).values())) for r in g.runs)
    lags = [
        float((store.runs.meta(r.id).get("client_lag") or {}).get("p99") or 0.0)
        for r in g.runs
        if r.source == "inferlab bench"
    ]
    cell = Cell(cfg, label, len(g.runs), values)
    cell.untrusted, cell.untrusted_reasons = group_trust(g.runs)
    short = too_short([len(measured(recs)) for recs in g.records], closed_concurrency(label))
    if short is not None:  # < MIN_WAVES waves of C in its steady window: no claim
        cell.untrusted_reasons = [*cell.untrusted_reasons, short.to_json()]
        cell.untrusted = trust_from_json(cell.untrusted_reasons).label
    cell.warnings = quality_warnings(
        samples=n_ok,
        trial_tok_s=tok_s,
        lag_p99_ms=max(lags) if lags else None,
        length_mismatches=sum(int(r.summary.get("length_warnings") or 0) for r in g.runs),
        errors=errors,
    )
    return cell


def _compared(metrics: Sequence[str] | None) -> list[str]:
    """``metrics``, default every compared metric of ``METRICS``; ConfigError naming another."""
    compared = [m.name for m in listed(lambda m: m.compared)]
    for m in metrics or ():
        if m not in compared:
            raise ConfigError(f"--metric: unknown metric {m!r}; expected {', '.join(compared)}")
    return compared if metrics is None else list(metrics)


def build_comparison(
    store: Store,
    *,
    campaign: str | None = None,
    selectors: Sequence[str] = (),
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    min_effect: float = 0.02,
    alpha: float = 0.05,
    force: bool = False,
) -> Comparison:
    """Group runs by config and load point, check comparability against the baseline, and
    decide every cell on ``metrics`` (default: every compared metric of ``METRICS``). Raises
    ``NotComparable`` naming the differing fields unless ``force``."""
    metrics = _compared(metrics)
    runs = [r for r in select_runs(store, campaign, selectors) if not r.interrupted]
    if not runs:
        raise ConfigError("compare: no finished runs selected")
    keys = config_keys(runs)
    base, configs = _ordered_configs(runs, keys, baseline)
    groups = group_runs(store, runs, lambda r: (keys[r.id], r.label))
    labels = sorted({lb for _, lb in groups}, key=label_key)
    first = {c: next(r for r in runs if keys[r.id] == c) for c in configs}
    differences = {
        c: check_comparable(identity(first[base]), identity(first[c])) for c in configs[1:]
    }
    bad = {c: d for c, d in differences.items() if d}
    if bad and not force:
        raise _refusal(base, bad)
    cells = {(cfg, label): _cell(store, cfg, label, g) for (cfg, label), g in groups.items()}
    b = first[base]
    passes = baseline_passes(store, b.campaign, b.config, b.config_hash)
    primary = [m.name for m in listed(lambda m: m.primary)]  # the recheck's and passes' too
    wanted = list(dict.fromkeys([*metrics, *primary]))
    launch = launches_of(campaign_launches(store, b.campaign), wanted)
    view = _LaunchView(launch, store, spread_key(b), b.campaign)
    for (cfg, label), cand in cells.items():
        if cfg == base or (base, label) not in cells:
            continue
        cand.forced = bad.get(cfg, [])
        cand.levers = not_applied(store, first[cfg])
        cg = groups[(cfg, label)]
        bg, base_cell = _nearest(store, passes.get(label, []), cand, cg, groups, cells, base)
        cand.verdicts = _verdicts(bg, cg, base, cand, base_cell, metrics, alpha, min_effect, view)
    rechecks = apply_rechecks(store, first[base], cells, groups, alpha, min_effect, launch)
    for cand in cells.values():  # a diff item that did not take effect: no claim
        if cand.levers and not force:
            cand.verdicts = {m: unclaimed(v, cand.levers) for m, v in cand.verdicts.items()}
    saturation = {cfg: sat for cfg in configs if (sat := _saturation(cells, cfg, labels))}
    return Comparison(
        base,
        configs,
        labels,
        metrics,
        cells,
        saturation,
        differences,
        min_effect,
        alpha,
        bool(bad),
        rechecks,
        *pass_rows(store, passes, cells, alpha, min_effect, launch),
        capacity_rows(stored_capacities(store, runs[0].campaign), configs, base),
        launch.all(),
    )
