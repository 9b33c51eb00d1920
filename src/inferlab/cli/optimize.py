"""``inferlab optimize CAMPAIGN.toml``: search the campaign's ``[search]`` levers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferlab.campaign.parts.plan import Plan, baseline_of
from inferlab.config.search import STOPPED, SearchDim, SearchSection
from inferlab.engines import is_simulated
from inferlab.search.confirm import in_words
from inferlab.search.driver import (
    NO_PROFILE,
    OBJECTIVE_METRIC,
    OptimizeResult,
    optimize,
    search_plan,
)
from inferlab.search.flags import check_flags
from inferlab.search.loop import TrialRecord, minimizes
from inferlab.search.samplers import resolve
from inferlab.search.space import Space, ordinal
from inferlab.search.trials import trial_alpha
from inferlab.store import Store, db_path

from .options import (
    CampaignFileArg,
    DbOpt,
    DryRunOpt,
    JsonAlias,
    RayOpt,
    ResumeOpt,
    TableJsonFormatOpt,
    output_format,
)
from .render import stdout_console
from .run import _Events


def print_search(r: OptimizeResult, simulated: bool) -> None:
    """A search's result as `optimize` prints it: the bounds, the trials, the path, the stop
    and the recommendation with its evidence."""
    con = stdout_console()
    if simulated:
        con.print(
            "[bold magenta]SIMULATED: the reference engine's timing model, not a real "
            "engine[/bold magenta]",
            highlight=False,
        )
    con.print(
        f"search of {escape(r.campaign)}: {r.objective} at {r.at}, baseline {escape(r.baseline)}",
        highlight=False,
    )
    for b in r.bounds:
        con.print(f"  {escape(b.key)}: {escape(b.why(r.at))}", highlight=False)
    t = Table(title="Trials", title_justify="left")
    for c in ("#", "config", "chosen by", r.objective, "verdict", "against", "note"):
        t.add_column(c, overflow="fold")
    for tr in r.search.trials:
        value = "–" if tr.result.value is None else f"{tr.result.value:.4g}"
        verdict = tr.result.verdict or tr.result.status
        t.add_row(
            str(tr.index),
            escape(tr.name),
            escape(tr.chosen_by),
            value,
            verdict,
            escape(tr.against),
            escape(_short(tr.result.reason)),
        )
    con.print(t)
    con.print("incumbent: " + " → ".join(escape(n) for n in r.search.path), highlight=False)
    detail = f" ({r.search.stop_detail})" if r.search.stop_detail else ""
    stop = STOPPED.get(r.search.stopped, r.search.stopped)
    con.print(f"stopped: {escape(stop + detail)}; sampler: {r.search.sampler}", highlight=False)
    for line in r.refused():
        con.print(escape(line), highlight=False)
    undecided = [t for t in r.search.trials if t.result.verdict == "undecided"]
    if undecided:
        con.print(
            f"{len(undecided)} of {len(r.search.trials)} trials carry no verdict (an untrusted "
            "or unsettled measurement): they can never replace the incumbent",
            highlight=False,
        )
    if r.best == r.baseline:
        con.print(
            f"nothing was shown better than the baseline {escape(r.baseline)} at {r.at}",
            highlight=False,
        )
        ok = [t for t in r.search.trials if t.result.value is not None]
        if ok:
            sign = -1.0 if minimizes(r.objective) else 1.0
            top = max(ok, key=lambda t: sign * (t.result.value or 0.0))
            con.print(f"its closest: {escape(_evidence(r, top))}", highlight=False)
        return
    _recommendation(con, r)


def _recommendation(con: Console, r: OptimizeResult) -> None:
    """The winner: recommended with its confirmation's interval, or not, and why."""
    conf = r.confirmation
    head = "recommended" if r.recommended else "not recommended (the search's winner)"
    con.print(f"\n[bold]{head}: {escape(r.best)}[/bold]", highlight=False)
    if conf is not None:  # the winner's interval is the confirmation's (search.confirm)
        con.print(f"  {escape(conf.sentence())}", highlight=False)
    by_name = {t.name: t for t in r.search.trials}
    for name in r.search.path[1:]:
        con.print(f"  selected by: {escape(_evidence(r, by_name[name]))}", highlight=False)
    if not r.recommended:
        return
    con.print(escape(r.snippet()), highlight=False)
    for line in r.launch:
        con.print(escape(line), highlight=False, soft_wrap=True)


def _short(reason: str, width: int = 110) -> str:
    """A trial's reason cut for the table (the report and --format json keep it whole)."""
    return reason if len(reason) <= width else reason[: width - 1].rstrip() + "…"


def _evidence(r: OptimizeResult, t: TrialRecord) -> str:
    """A trial's A/B against the incumbent it was judged against, in words."""
    metric = OBJECTIVE_METRIC.get(r.objective, r.objective)
    ab = t.result.ab.get(metric) or {}
    if "ratio" not in ab:
        return f"{t.name}: {t.result.verdict or t.result.status} against {t.against}"
    interval = f"[{ab['low']:.3f}, {ab['high']:.3f}]" if ab.get("low") is not None else ""
    return (
        f"{t.name}: {metric} ×{ab['ratio']:.3f} {interval} against {t.against} (95%, sequential "
        f"A/B: {t.result.verdict})"
    )


def _values(d: SearchDim) -> str:
    """A dimension's values as the dry run says them."""
    if d.presence:
        return "given or not"
    if d.values is not None:
        kind = " (ordinal: the sampler sees their rank)" if ordinal(d) else ""
        into = f" into {d.template} (false: left out)" if d.template else ""
        return "values " + ", ".join(map(str, d.values)) + kind + into
    scale = ", log scale" if d.log else ""
    return f"{'integers' if d.integer else 'numbers'} {d.low:g} … {d.high:g}{scale}"


def _where(section: SearchSection) -> str:
    """Where the objective is read: ``at C=8``; a capacity's range (req/s, or concurrency)."""
    up, step = section.capacity_rate_up_to, section.capacity_rate_step
    if up is not None:
        return f"over request rate (up to {up:g} req/s, step {step or up / 32:g})"
    if section.objective == "capacity":
        start = f" from {section.at}" if section.at else ""
        return f"over concurrency (up to {section.capacity_up_to}{start})"
    return f"at {section.at}"


def _dry_run(campaign_file: Path, plan: Plan, section: SearchSection, ray: str | None) -> None:
    """The search's space, sampler, budget and flag check, as ``--dry-run`` prints them (and,
    with ``--ray``, how the trials are batched)."""
    space = Space(tuple(section.dim), baseline_of(plan.campaign.config))
    con = stdout_console()
    kind, why = resolve(section, space)
    sampler = f"{section.sampler} → {kind} ({why})" if why else section.sampler
    size = "∞" if space.size() == float("inf") else f"{space.size():.0f}"
    con.print(
        f"search of {escape(plan.campaign.campaign.name)}: {section.objective} "
        f"{_where(section)}, {sampler} sampler (seed {section.seed}), budget "
        f"{section.budget_trials} trials"
        + (f" / {section.budget_minutes:g} min" if section.budget_minutes else "")
        + f", patience {section.patience}, min effect {section.min_effect:.0%}; "
        f"{size} points",
        highlight=False,
    )
    for d in section.dim:
        con.print(f"  {escape(d.key)} ({d.label}): {escape(_values(d))}", highlight=False)
    alpha, n = plan.campaign.load.alpha, section.confirm_launches
    con.print(
        escape(
            f"each trial's A/B at α = {trial_alpha(alpha, section):.3g} ([load] alpha {alpha:g}"
            f" / {section.budget_trials} trials, Bonferroni); the winner confirmed on "
            f"{n} fresh launches ({in_words(n)}) at α = {alpha:g} before it is recommended"
            + (
                "; one launch a side: decided only on a launch spread measured before "
                "(else undecided, and not recommended)"
                if n == 2
                else ""
            )
        ),
        highlight=False,
        soft_wrap=True,
    )
    text = campaign_file.read_text(encoding="utf-8")
    check = check_flags(campaign_file, text, section, plan.baseline)
    n_flags = sum(d.flag is not None for d in section.dim)
    con.print(escape(check.sentence(n_flags)), highlight=False)
    if ray is None:
        return
    size = (
        f"{section.parallel} ([search] parallel)"
        if section.parallel
        else "as many as the alive nodes hold beside it"
    )
    con.print(
        escape(
            f"--ray {ray}: trials in batches of {size}, side by side, each with a "
            "sequential A/B against one fresh measurement of the incumbent (tNN-ref)"
        ),
        highlight=False,
    )
    if plan.campaign.profile is not None:
        con.print(escape(NO_PROFILE), highlight=False)


def optimize_cmd(
    campaign: CampaignFileArg,
    db: DbOpt = None,
    resume: ResumeOpt = False,
    dry_run: DryRunOpt = False,
    format_: TableJsonFormatOpt = "table",
    json_alias: JsonAlias = False,
    ray: RayOpt = None,
) -> None:
    """Search the campaign's [search] levers: trials against the incumbent by sequential A/B.

    The baseline (first config) is measured and its levers bound each dimension; Optuna
    proposes trials over the rest; a trial replaces the incumbent only when the A/B says
    better. --dry-run prints the search space; --resume continues a stopped search from the
    store. --ray: in batches on a Ray cluster, each batch's trials beside one fresh
    measurement of the incumbent."""
    campaign_file, fmt = Path(campaign), output_format(format_, json_alias)
    plan, section = search_plan(campaign_file)
    if dry_run:
        _dry_run(campaign_file, plan, section, ray)
        return
    err = Console(stderr=True)
    events = _Events(err, stdout_console())
    with Store(db_path(db)) as store:
        try:
            result = optimize(campaign_file, store=store, events=events, resume=resume, ray=ray)
        except KeyboardInterrupt:
            events.progress_done()
            again = f" --ray {ray}" if ray is not None else ""
            err.print(
                "[yellow]interrupted: the running trial's server was stopped; inferlab optimize "
                f"{escape(str(campaign_file))}{escape(again)} --resume continues[/yellow]"
            )
            raise typer.Exit(130) from None
        finally:
            events.progress_done()
    if fmt == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
        return
    print_search(result, is_simulated(plan.campaign.engine.kind))
