"""``inferlab logs analyze FILE...``: findings, time series and timeline of server logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferlab.errors import InferlabError
from inferlab.logs import LogAnalysis, analyze_log
from inferlab.logs.model import ENGINES
from inferlab.logs.plot import series_lines

from .options import JsonAlias, TableJsonFormatOpt, output_format
from .render import command, stdout_console

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["logs_app"]

logs_app = typer.Typer(
    help="Mine server logs (SGLang, vLLM, llama.cpp) for findings.", no_args_is_help=True
)

_SEV = {"error": "red", "warning": "yellow", "info": "cyan"}
_ENGINE_HELP = f"auto, {', '.join(list(ENGINES)[:-1])} or {list(ENGINES)[-1]} (auto: detected)."


@logs_app.callback()
def _logs() -> None:
    """Mine server logs (SGLang, vLLM, llama.cpp) for findings."""


def _lines(ev: dict[str, object]) -> str:
    lines = ev.get("lines") or []
    assert isinstance(lines, list)
    s = ",".join(str(x) for x in lines[:6])
    return s + ("…" if len(lines) > 6 else "")


def render_analysis(a: LogAnalysis, console: Console) -> None:
    """Print one analysis: header, findings table, sparklines, timeline."""
    eng = ENGINES.get(a.engine or "", "engine not identified")
    sim = " [bold magenta]SIMULATED[/bold magenta]" if a.simulated else ""
    console.print(
        f"[bold]{escape(a.path)}[/bold]: {eng}{sim} · {a.lines:,} lines "
        f"({a.bytes / 1e6:,.1f} MB{', ' + a.compressed if a.compressed else ''}) "
        f"in {a.seconds:.2f} s",
        highlight=False,
    )
    if a.findings:
        t = Table(show_lines=False, pad_edge=False)
        for col in ("kind", "severity", "finding", "lines", "action"):
            t.add_column(col, overflow="fold")
        for f in a.findings:
            sev = _SEV.get(f.severity, "white")
            t.add_row(
                f.kind,
                f"[{sev}]{f.severity}[/{sev}]",
                escape(f.message),
                _lines(f.evidence),
                escape(f.action or ""),
            )
        console.print(t)
    else:
        console.print("no findings")
    sl = series_lines(a.series)
    if sl:
        thin = f", every {a.series_stride}th of {a.series_total}" if a.series_stride > 1 else ""
        console.print(f"time series ({len(a.series)} points{thin}, in log order):")
        for line in sl:
            console.print("  " + escape(line), highlight=False)
    if a.timeline:
        t = Table(title="timeline", title_justify="left", pad_edge=False)
        for col in ("line", "time", "step", "values"):
            t.add_column(col, overflow="fold")
        for m in a.timeline:
            vals = ", ".join(f"{k}={v}" for k, v in m.values.items())
            more = f" (×{m.count})" if m.count > 1 else ""
            t.add_row(str(m.line), m.time or "", m.name + more, escape(vals))
        console.print(t)


@command(logs_app, "analyze")
def analyze(
    files: Annotated[list[Path], typer.Argument(help="Server logs (plain text or .gz).")],
    engine: Annotated[
        str,
        typer.Option("--engine", help=_ENGINE_HELP),
    ] = "auto",
    format_: TableJsonFormatOpt = "table",
    json_alias: JsonAlias = False,
) -> int:
    """Mine each server log FILE for findings, time series and the startup timeline.

    Findings come with kind, severity, evidence lines and action; the time series are shown
    as sparklines; --format json: everything. Exit 2 when a file is not a log of a known
    engine."""
    as_json = output_format(format_, json_alias) == "json"
    console = stdout_console()
    err = Console(stderr=True)
    rc = 0
    out: list[dict[str, JsonValue]] = []
    for f in files:
        try:
            a = analyze_log(f, engine=engine)
        except InferlabError as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
            out.append({"path": str(f), "error": str(exc)})
            rc = 2
            continue
        if not a.recognized:
            err.print(
                f"[red]error:[/red] {escape(a.unknown_reason())}", highlight=False, soft_wrap=True
            )
            rc = 2
        if as_json:
            out.append(a.to_json())
        elif a.recognized:
            render_analysis(a, console)
    if as_json:
        print(json.dumps({"files": out}, indent=2))
    return rc
