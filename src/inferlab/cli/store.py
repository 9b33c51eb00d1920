"""``inferlab runs`` and ``inferlab export``: what the store holds."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferlab.errors import ConfigError
from inferlab.store import Store, db_path
from inferlab.store.export import FORMAT_VERSION
from inferlab.store.export import export as export_lib

from .options import (
    AsAlias,
    AsOpt,
    CampaignOpt,
    CampaignScopeOpt,
    ConfigOpt,
    DbOpt,
    ExportFormatOpt,
    TableJsonFormatOpt,
    pick,
)
from .render import fmt, stdout_console


def _open(db: Path | None) -> Store:
    path = db_path(db)
    if not path.exists():
        raise ConfigError(f"--db: {path} does not exist (run inferlab bench first)")
    return Store(path)


def runs(
    db: DbOpt = None,
    campaign: CampaignScopeOpt = None,
    config: ConfigOpt = None,
    format_: TableJsonFormatOpt = "table",
) -> None:
    """List the stored runs (one per load point × trial).

    One row each: campaign, config, load point, trial, source, requests, output tok/s and
    the TPOT / TTFT medians; --campaign and --config filter; --format json: every field.
    """
    with _open(db) as store:
        rows = store.runs(campaign=campaign, config=config)
    if format_ == "json":
        doc = {"format_version": FORMAT_VERSION, "runs": [asdict(r) for r in rows]}
        sys.stdout.write(json.dumps(doc, indent=1, default=str) + "\n")
        return
    t = Table(title=f"runs in {db_path(db)}")
    for col in (
        "id",
        "campaign",
        "config",
        "load",
        "trial",
        "source",
        "requests",
        "ok",
        "out tok/s",
        "TPOT p50 ms",
        "TTFT p50 ms",
        "started",
    ):
        t.add_column(
            col,
            justify="right"
            if col not in ("campaign", "config", "load", "source", "started")
            else "left",
        )
    for r in rows:
        s = r.summary
        t.add_row(
            str(r.id),
            escape(r.campaign),
            escape(r.config),
            escape(r.label) + (" (interrupted)" if r.interrupted else ""),
            str(r.trial),
            escape(r.source),
            str(r.n_requests),
            str(s.get("ok", "–")),
            fmt(s.get("output_tok_s")),
            fmt((s.get("tpot_ms") or {}).get("p50"), 2),
            fmt((s.get("ttft_ms") or {}).get("p50")),
            r.started_at or "–",
        )
    stdout_console().print(t)


def export(
    out_arg: Annotated[
        Path | None, typer.Argument(metavar="OUT", help="deprecated: use --out", hidden=True)
    ] = None,
    out_opt: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="The file to write")
    ] = None,
    db: DbOpt = None,
    what: Annotated[str, typer.Option("--what", help="runs | requests")] = "runs",
    format_: ExportFormatOpt = None,
    campaign: CampaignScopeOpt = None,
    run: Annotated[list[int] | None, typer.Option("--run", help="Only these run ids")] = None,
) -> None:
    """Write runs or their requests as CSV, JSONL or Parquet.

    --what runs or requests, one row each, into the file --out; its format follows the
    file's suffix unless --format names it.
    """
    out = pick(out_opt, out_arg, "export OUT", "export --out OUT")
    if out is None:
        raise ConfigError("--out: the file to write is missing (e.g. --out runs.csv)")
    if what not in ("runs", "requests"):
        raise ConfigError(f"--what: expected runs or requests, got {what!r}")
    f = format_ or out.suffix.lstrip(".").lower()
    if f not in ("csv", "jsonl", "parquet"):
        raise ConfigError(f"--format: expected csv, jsonl or parquet, got {f!r}")
    with _open(db) as store:
        rows = store.runs(campaign=campaign, run_ids=run or None)
        n = export_lib(store, rows, what, f, out)  # type: ignore[arg-type]
    Console(stderr=True).print(f"{n} {what} rows written to {escape(str(out))}")


def import_(
    files: Annotated[list[Path], typer.Argument(help="Result files of other tools")],
    db: DbOpt = None,
    campaign: CampaignOpt = "imported",
    as_: AsOpt = None,
    config_alias: AsAlias = None,
) -> None:
    """Import other benchmark tools' results into the store.

    sglang.bench_serving JSONL, vllm bench serve JSON, GuideLLM and AIPerf exports, each
    format recognized by its content; stored under --campaign, named by --as (default
    TOOL:MODEL).
    """
    from inferlab.store.ingest import import_files

    config = pick(as_, config_alias, "--config", "--as")

    for f in files:
        if not f.is_file():
            raise ConfigError(f"{f}: no such file")
    with Store(db_path(db)) as store:
        done = import_files(store, files, campaign=campaign, config=config)
    err = Console(stderr=True)
    for d in done:
        ids = ", ".join(str(i) for i in d.run_ids)
        err.print(
            f"{escape(str(d.path))}: {d.tool}, {len(d.run_ids)} run(s) [{ids}], "
            f"{d.with_requests} with per-request data",
            highlight=False,
        )
