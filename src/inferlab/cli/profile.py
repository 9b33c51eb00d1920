"""``inferlab profile``: where the GPU time of a step goes, from a Kineto or Nsight trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferlab.errors import ConfigError
from inferlab.profile import Categorizer, analyze, diff_profiles, load_rules, read_trace
from inferlab.profile.render import (
    amdahl_sentences,
    category_rows,
    headline,
    kernel_rows,
    ms,
    occupancy_rows,
    occupancy_sentence,
    share_caption,
)
from inferlab.profile.stored import check_point, store_profile
from inferlab.store import Store, db_path
from inferlab.store.models import ProfileBody

from .options import (
    STORE,
    AsAlias,
    AsOpt,
    CampaignScopeOpt,
    DbOpt,
    JsonAlias,
    TableJsonFormatOpt,
    output_format,
    pick,
)
from .render import stdout_console


def _table(title: str, cols: list[str], rows: list[list[str]], caption: str = "") -> Table:
    t = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for i, c in enumerate(cols):
        t.add_column(c, justify="left" if i == 0 else "right", overflow="fold")
    for r in rows:
        t.add_row(*(escape(x) for x in r))
    return t


def _print_diff(con: Console, diff: dict[str, Any], top: int) -> None:
    con.print(escape(f"A = {diff['a']}, B = {diff['b']}"), highlight=False)
    sa, sb = diff["span_a_us"], diff["span_b_us"]
    dk = sum(r["delta_us"] for r in diff["categories"])
    span = f"step span A {ms(sa)} ms, B {ms(sb)} ms"
    if sa > 0:
        span += (
            f" (B / A ×{sb / sa:.3f}); the kernel-time change alone ({'+' if dk >= 0 else ''}"
            f"{ms(dk)} ms) predicts ×{(sa + dk) / sa:.3f} when kernels are the critical path"
        )
    for key, head in (("categories", "category"), ("kernels", "kernel")):
        rows = [
            [
                r["short"],
                ms(r["a_us"]),
                ms(r["b_us"]),
                f"{'+' if r['delta_us'] >= 0 else ''}{ms(r['delta_us'])}",
                "–" if r["ratio"] is None else f"×{r['ratio']:.2f}",
            ]
            for r in diff[key][:top]
        ]
        con.print(
            _table(
                f"{key}: B vs A (ms {diff['unit']})",
                [head, "A", "B", "B − A", "B / A"],
                rows,
                span,
            )
        )


def _print(p: dict[str, Any], top: int, diff: dict[str, Any] | None) -> None:
    con = stdout_console()
    body = ProfileBody.model_validate(p)
    for line in headline(body):
        con.print(escape(line), highlight=False)
    con.print(
        _table(
            "categories",
            ["category", "ms", "share", "count", "mean µs", "ms/step", "≤ if 2×", "≤ if free"],
            category_rows(body),
            share_caption(body),
        )
    )
    con.print(
        _table(
            f"top {top} {'CPU ops (self time)' if p.get('mode') == 'cpu' else 'kernels'}",
            [
                "op" if p.get("mode") == "cpu" else "kernel",
                "category",
                "ms",
                "share",
                "count",
                "mean µs",
                "≤ if free",
            ],
            kernel_rows(body, top),
        )
    )
    con.print(escape(occupancy_sentence(body)), highlight=False)
    if p["occupancy"]:
        con.print(
            _table(
                "under-occupied kernels",
                ["kernel", "blocks", "≤ SMs busy", "share", "count"],
                occupancy_rows(body, top),
            )
        )
    for s in amdahl_sentences(body):
        con.print(escape(s), highlight=False)
    if p["unknown"]:
        con.print(
            escape(
                f"{len(p['unknown'])} {'op' if p.get('mode') == 'cpu' else 'kernel'} name(s) "
                "in no category (listed as other): "
            )
            + escape("; ".join(n[:80] for n in p["unknown"][:10])),
            highlight=False,
        )
    if diff is not None:
        _print_diff(con, diff, top)
    err = Console(stderr=True)
    for w in p["warnings"]:
        err.print(f"[yellow]warning[/yellow] {escape(w)}", highlight=False)


def profile(
    trace: Annotated[Path, typer.Argument(help="Kineto .json/.json.gz or nsys .sqlite export")],
    segment: Annotated[str, typer.Option(help="decode | prefill | all")] = "decode",
    steps: Annotated[
        str | None,
        typer.Option("--steps", help="Regex naming the step ranges (default by segment)"),
    ] = None,
    sms: Annotated[
        int | None, typer.Option("--sms", help="SM count (default: from the trace)")
    ] = None,
    vs: Annotated[Path | None, typer.Option("--vs", help="A second trace to diff against")] = None,
    top: Annotated[int, typer.Option(help="Kernels shown")] = 20,
    format_: TableJsonFormatOpt = "table",
    json_alias: JsonAlias = False,
    campaign: CampaignScopeOpt = None,
    db: DbOpt = None,
    categories: Annotated[
        Path | None, typer.Option("--categories", help="TOML/JSON file of extra [[rule]]s")
    ] = None,
    as_: AsOpt = None,
    config_alias: AsAlias = None,
    point: Annotated[
        str | None,
        typer.Option(
            "--point", help="With --campaign: its load point, e.g. C=16", rich_help_panel=STORE
        ),
    ] = None,
) -> None:
    """Show where the GPU time of a decode (or prefill) step goes.

    Steps and busy time, categories and kernels with their shares, under-occupied kernels and
    Amdahl bounds. A trace without GPU activity (a CPU engine's) is analyzed in CPU mode.
    --campaign stores the profile (--as: the config it profiles, --point: its load point)."""
    config = pick(as_, config_alias, "--config", "--as")
    if top < 1:
        raise ConfigError(f"--top: expected a positive count, got {top}")
    if sms is not None and sms < 1:
        raise ConfigError(f"--sms: expected a positive SM count, got {sms}")
    cat = Categorizer(load_rules(categories) if categories else None)
    p = analyze(read_trace(trace), segment=segment, steps_pattern=steps, sms=sms, categorizer=cat)
    data = p.to_dict()
    diff = None
    if vs is not None:
        q = analyze(read_trace(vs), segment=segment, steps_pattern=steps, sms=sms, categorizer=cat)
        diff = diff_profiles(p, q, top=top).to_dict()
        data["vs"] = {"profile": q.to_dict(), "diff": diff}
    if (config or point) and not campaign:
        raise ConfigError("--as/--point: they say where to store the profile; add --campaign")
    if point is not None:
        check_point(point)
    if campaign:
        with Store(db_path(db)) as store:
            store_profile(store, campaign, trace, data, config=config, point=point)
    if output_format(format_, json_alias) == "json":
        sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")
    else:
        _print(data, top, diff)
