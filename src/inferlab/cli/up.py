"""``inferlab up`` / ``inferlab down``: one config's server, launched and verified, or stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from inferlab.campaign.drivers.up import down as down_lib
from inferlab.campaign.drivers.up import up as up_lib
from inferlab.campaign.parts.applied import item_lines
from inferlab.cpus import format_cpu_list
from inferlab.errors import InferlabError, LaunchError
from inferlab.logs import analyze_log
from inferlab.store import Store, db_path

from .options import CampaignFileArg, DbOpt, NoVerifyOpt
from .render import stdout_console


def _findings(log: Path | str | None, con: Console) -> None:
    """What the launch log already shows (untuned kernels, engine advice, the cause of death)."""
    if not log:
        return
    try:
        found = analyze_log(log).findings
    except InferlabError:
        return
    for f in found:
        colour = {"error": "red", "warning": "yellow"}.get(f.severity, "dim")
        con.print(f"  [{colour}]{f.kind}[/{colour}]: {escape(f.message)}", highlight=False)
        if f.action:
            con.print(f"    [dim]→ {escape(f.action)}[/dim]", highlight=False)


def up(
    campaign: CampaignFileArg,
    config: Annotated[str, typer.Argument(help="Config to launch")],
    db: DbOpt = None,
    no_verify: NoVerifyOpt = False,
) -> None:
    """Launch CONFIG, wait until ready, verify it, and leave it running.

    The server's state is kept so that `inferlab down` stops it later.
    """
    err = Console(stderr=True)
    err.print(f"launching {escape(config)} ...", highlight=False)
    try:
        with Store(db_path(db)) as store:
            r = up_lib(Path(campaign), config, store=store, no_verify=no_verify)
    except LaunchError as exc:
        err.print(
            f"[red]launch failed[/red] ({escape(exc.kind)}): {escape(str(exc))}", highlight=False
        )
        if exc.remedy:
            err.print(f"  [dim]remedy:[/dim] {escape(exc.remedy)}", highlight=False)
        if exc.log_path:
            err.print(f"  [dim]log:[/dim] {escape(str(exc.log_path))}", highlight=False)
        for line in exc.tail[-15:]:
            err.print(f"  [dim]|[/dim] {escape(line)}", highlight=False)
        _findings(str(exc.log_path) if exc.log_path else None, err)
        raise typer.Exit(3) from None
    con = stdout_console()
    for note in r.notes:
        err.print(f"[dim]{escape(note)}[/dim]", highlight=False)
    if r.verify is not None:
        for c in r.verify.checks:
            mark = "[green]ok[/green]" if c.passed else "[red]FAILED[/red]"
            con.print(f"{mark} {c.kind}: {escape(c.message)}", highlight=False)
    for line in item_lines(r.levers):
        colour = {"✓": "green", "✗": "red"}.get(line[:1], "yellow")
        con.print(f"[{colour}]{escape(line[:1])}[/{colour}] lever {escape(line[2:])}")
    ready = f" ready in {r.ready_s:.1f} s," if r.ready_s is not None else ""
    con.print(f"{escape(r.config)}:{ready} {r.url} (model {escape(r.model)})", highlight=False)
    if r.pid:
        con.print(f"log: {escape(str(r.log_path))}  pid: {r.pid}", highlight=False)
        if r.cpus is not None:
            for line in r.cpus.lines():
                con.print(escape(line), highlight=False)
            if r.cpus.client:
                cpus = format_cpu_list(r.cpus.client)
                con.print(f"  measure from them: inferlab bench --client-cpus {cpus} ...")
        _findings(r.log_path, con)


def down(
    campaign: CampaignFileArg,
    config: Annotated[str | None, typer.Argument(help="Config (default: all)")] = None,
) -> None:
    """Stop servers left running by `inferlab up`.

    SIGTERM, then SIGKILL; then checks that the port and the GPU memory are released."""
    con = stdout_console()
    for name, rep in down_lib(Path(campaign), config):
        con.print(
            f"{escape(name)}: stopped by {rep.signal} in {rep.seconds:.1f} s; port "
            f"{'free' if rep.port_free else 'STILL IN USE'}; GPU memory: {escape(rep.gpu_check)}",
            highlight=False,
        )
        for n in rep.notes:
            con.print(f"  note: {escape(n)}", highlight=False)
