"""``inferlab run CAMPAIGN.toml``: the main job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

from inferlab.campaign.context import CampaignEvents, ConfigOutcome
from inferlab.campaign.drivers.runner import CampaignResult, run_plan
from inferlab.campaign.parts.notes import plan_notes
from inferlab.campaign.parts.plan import Plan, make_plan, render_plan, select_configs
from inferlab.config.resolve import ResolvedConfig
from inferlab.store import Store, db_path

from .bench import _RichEvents
from .options import (
    CampaignFileArg,
    ConfigsOpt,
    DbOpt,
    DryRunOpt,
    NoVerifyOpt,
    RayOpt,
    ResumeOpt,
)

if TYPE_CHECKING:
    from inferlab.cluster.placement import Need

from .render import stdout_console


class _Events(_RichEvents, CampaignEvents):
    def config_started(self, cfg: ResolvedConfig, index: int, total: int) -> None:
        self.console.rule(f"[bold]config {index + 1}/{total}: {escape(cfg.name)}")

    def config_done(self, outcome: ConfigOutcome) -> None:
        self.progress_done()
        color = {"measured": "green", "skipped": "dim"}.get(outcome.status, "red")
        self.console.print(
            f"[{color}]{escape(outcome.config)}: {outcome.status}[/{color}]"
            + (f" — {escape(outcome.message)}" if outcome.message else ""),
            highlight=False,
        )
        if outcome.remedy:
            self.console.print(f"  [dim]remedy:[/dim] {escape(outcome.remedy)}", highlight=False)
        for line in outcome.log_tail:
            self.console.print(f"  [dim]|[/dim] {escape(line)}", highlight=False)


def run(
    campaign: CampaignFileArg,
    db: DbOpt = None,
    resume: ResumeOpt = False,
    dry_run: DryRunOpt = False,
    no_verify: NoVerifyOpt = False,
    config: ConfigsOpt = None,
    ray: RayOpt = None,
) -> None:
    """Launch, verify, measure, store and stop every config of the campaign, then report.

    Config by config (side by side on a Ray cluster with --ray); --resume continues an
    interrupted run."""
    campaign_file = Path(campaign)
    plan = select_configs(make_plan(campaign_file), config or ())
    err = Console(stderr=True)
    out = stdout_console()
    lines = render_plan(plan)
    needs = None
    if ray is not None:
        from inferlab.cluster.campaign import check_plan, placement_lines

        needs = check_plan(plan, ray)
        lines += placement_lines(needs)
    for line in lines:
        (out if dry_run else err).print(escape(line), highlight=False, soft_wrap=True)
    if dry_run:
        if db_path(db).exists():  # what the store knows: drifted engine dirs, lever evidence
            with Store(db_path(db)) as store:
                for line in plan_notes(plan, store):
                    out.print(escape(line), highlight=False, soft_wrap=True)
        return
    events = _Events(err, out)
    with Store(db_path(db)) as store:
        try:
            result = _campaign(plan, store, events, resume, no_verify, ray, needs)
        finally:
            events.progress_done()
        report_paths = _report(store, plan.campaign.campaign.name)
    _summary(out, result.outcomes)
    for t in result.launches:  # [load] max_launches > 1: each config's launches, why it stopped
        out.print(escape(t.line()), highlight=False, soft_wrap=True)
    for p in report_paths:
        out.print(f"report: {escape(str(p))}", highlight=False)
    if result.interrupted:
        again = f" --ray {ray}" if ray is not None else ""
        err.print(
            "[yellow]interrupted: the server was stopped; "
            f"inferlab run {escape(str(campaign_file))}{escape(again)} --resume continues[/yellow]"
        )
        raise typer.Exit(130)


def _summary(out: Console, outcomes: list[ConfigOutcome]) -> None:
    """One line a config: its status, runs stored, and why verification stopped it."""
    for o in outcomes:
        out.print(
            f"{escape(o.config)}: {o.status}"
            + (f" ({len(o.run_ids)} runs stored)" if o.run_ids else "")
            + (f" — {escape(o.message)}" if o.status == "verify-failed" else ""),
            highlight=False,
            soft_wrap=True,
        )


def _campaign(
    plan: Plan,
    store: Store,
    events: _Events,
    resume: bool,
    no_verify: bool,
    ray: str | None,
    needs: dict[str, Need] | None,
) -> CampaignResult:
    """The plan made above, on this host or side by side on the Ray cluster at ``ray``."""
    if ray is None:
        return run_plan(plan, store=store, events=events, resume=resume, no_verify=no_verify)
    from inferlab.cluster.campaign import run_plan_ray

    return run_plan_ray(
        plan,
        store=store,
        address=ray,
        needs=needs,
        events=events,
        resume=resume,
        no_verify=no_verify,
    )


def _report(store: Store, campaign: str) -> list[Path]:
    try:
        from inferlab.report.render import (  # type: ignore[import-not-found,unused-ignore]
            write_report,
        )
    except ImportError:
        return []
    if not store.runs(campaign=campaign):
        return []
    md, html = write_report(store, campaign, None)
    return [Path(md), Path(html)]
