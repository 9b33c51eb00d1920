"""``inferlab recon``: look at the GPUs, the engine and its environment before acting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferlab.errors import ConfigError
from inferlab.recon import ReconOptions, run_recon
from inferlab.recon.tables import ReconTable, recon_tables
from inferlab.store import Store, db_path

from .options import CampaignScopeOpt, DbOpt, JsonAlias, TableJsonFormatOpt, output_format
from .render import stdout_console

__all__ = ["recon"]


def _rich(t: ReconTable) -> Table | str:
    if not t.rows:
        return f"[bold]{escape(t.title)}[/bold]: [yellow]{escape(t.note or 'nothing')}[/yellow]"
    table = Table(
        title=t.title,
        caption=t.caption,
        caption_justify="left",
        title_justify="left",
    )
    for c in t.columns:
        table.add_column(c, overflow="fold")
    for row in t.rows:
        table.add_row(*(escape(x) for x in row))
    return table


_EngineOpt = Annotated[
    str | None,
    typer.Option(help="sglang | vllm | transformers (default: detected in --python)"),
]
_PythonOpt = Annotated[
    str | None,
    typer.Option("--python", help="The engine's Python interpreter (default python3)"),
]
_RepoOpt = Annotated[
    Path | None, typer.Option(help="The engine's git checkout (commit, commits behind)")
]
_UrlOpt = Annotated[str | None, typer.Option(help="A running server to probe")]
_LogOpt = Annotated[
    Path | None, typer.Option(help="Server log: which untuned kernel shapes it needed")
]
_FetchOpt = Annotated[bool, typer.Option("--fetch", help="git fetch the upstream before counting")]
_DeviceOpt = Annotated[
    list[str] | None,
    typer.Option("--device", help="Also check tuned configs for this GPU (repeatable)"),
]


def recon(
    engine: _EngineOpt = None,
    python: _PythonOpt = None,
    repo: _RepoOpt = None,
    url: _UrlOpt = None,
    log: _LogOpt = None,
    fetch: _FetchOpt = False,
    device: _DeviceOpt = None,
    campaign: CampaignScopeOpt = None,
    db: DbOpt = None,
    format_: TableJsonFormatOpt = "table",
    json_alias: JsonAlias = False,
) -> None:
    """Take stock of the GPUs, the engine and its environment; nothing is changed.

    GPUs, CUDA/torch/triton in the engine's Python, engine version and checkout, the
    speculative / FP8 / CUDA-graph flags it offers, its tuned kernel configs versus a log's
    needs, NCCL variables, and a running server. Nothing is fetched without --fetch.
    --campaign stores the snapshot under that campaign.
    """
    as_json = output_format(format_, json_alias) == "json"
    if log is not None and not log.is_file():
        raise ConfigError(f"--log: {log} is not a file")
    if db is not None and campaign is None:
        raise ConfigError("--db: only used with --campaign (where to store the snapshot)")
    opts = ReconOptions(
        engine=engine,
        python=python,
        repo=repo,
        url=url,
        log=log,
        fetch=fetch,
        devices=tuple(device or ()),
    )
    err = Console(stderr=True)
    with err.status("recon: probing the engine's Python and its --help", spinner="dots"):
        result = run_recon(opts)
    data = result.to_dict()
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=str))
    else:
        con = stdout_console()
        for t in recon_tables(data):
            con.print(_rich(t), highlight=False)
            con.print()
    if campaign is not None:
        path = db_path(db)
        with Store(path) as store:
            aid = store.add_analysis("recon", result.host, data, campaign=campaign)
        err.print(
            f"[dim]stored as analysis {aid} (recon) in {escape(str(path))}, "
            f"campaign {escape(campaign)}[/dim]",
            highlight=False,
        )
