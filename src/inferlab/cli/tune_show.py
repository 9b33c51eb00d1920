"""What ``inferlab tune fp8-gemm`` prints: the plan, the results table, the files written."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferlab.tune.files import config_file_name
from inferlab.tune.report import COLUMNS, table_rows

from .render import stdout_console

if TYPE_CHECKING:
    from inferlab.tune.workflow import TuneOutcome

__all__ = ["show"]


def _plan_lines(o: TuneOutcome, split_k: bool) -> list[str]:
    p = o.plan
    dev = (o.device_name or "<this GPU>").replace(" ", "_")
    lines = [
        f"{len(o.shapes)} shape(s) × {len(o.batch_sizes)} batch sizes "
        f"(M = {', '.join(map(str, o.batch_sizes))}); engine {o.engine}; files into {o.target_dir}",
    ]
    for s in o.shapes:
        cells = [c for c in p.cells if (c.n, c.k) == (s.n, s.k)]
        counts = [c.candidates for c in cells]
        lines.append(
            f"  N={s.n},K={s.k}  [{s.source}]  candidates per M {min(counts)}–{max(counts)}, "
            f"{sum(counts):,} timings → {config_file_name(o.engine, s.n, s.k, dev)}"
        )
    lines.append(
        f"planned: {p.timings:,} timings ({p.split_k_timings:,} split-K"
        f"{'' if split_k else ', disabled'}), {p.distinct_binaries} distinct binaries to compile; "
        f"the engines' tuners: {p.exhaustive_timings:,} timings (1,280 configs × "
        f"{len(o.batch_sizes)} M × {len(o.shapes)} shapes), {p.exhaustive_binaries:,} binaries "
        f"— {p.saving:.1f}× fewer timings"
    )
    return lines


def _result_table(o: TuneOutcome) -> Table:
    assert o.run is not None
    t = Table(
        title=f"W8A8 block-FP8 GEMM on {o.run.device_name}",
        caption=(
            "median µs; tuned = best config the engine can run; TFLOP/s, GB/s and % of the "
            "measured roofline at the tuned time; split-K runs only in inferlab's kernel"
        ),
        caption_justify="left",
    )
    for col in ("N,K", *COLUMNS):
        t.add_column(col, justify="left" if "config" in col or col == "N,K" else "right")
    for n, k in o.run.shapes():
        cells = [c.to_json(o.run.ceilings) for c in o.run.cells if (c.n, c.k) == (n, k)]
        for row in table_rows(cells):
            t.add_row(f"{n},{k}", *row)
    return t


def show(
    o: TuneOutcome, from_results: Path | None, split_k: bool, campaign: str | None, as_json: bool
) -> None:
    """Warnings, the plan (or what was read), results, files written, and the JSON summary."""
    err = Console(stderr=True)
    info = err if as_json else stdout_console()
    for w in o.warnings:
        err.print(f"[yellow]warning:[/yellow] {escape(w)}", highlight=False, soft_wrap=True)
    if from_results is None:
        for line in _plan_lines(o, split_k):
            info.print(escape(line), highlight=False, soft_wrap=True)
    elif o.run is not None:
        info.print(
            f"read {escape(str(from_results))}: {len(o.shapes)} shape(s) × "
            f"{len(o.batch_sizes)} batch sizes tuned on {escape(o.run.device_name)}; "
            f"files into {escape(str(o.target_dir))}",
            highlight=False,
            soft_wrap=True,
        )
    if o.run is not None:
        info.print(_result_table(o))
        if o.run.wall_s is not None:
            info.print(
                f"tuned in {o.run.wall_s:.1f} s wall"
                + (f" ({o.run.compile_s:.1f} s compiling)" if o.run.compile_s is not None else "")
                + f" on {escape(o.run.device_name)}",
                highlight=False,
            )
        for f in o.files:
            info.print(
                f"wrote {escape(str(f.path))}: M added {f.added}, replaced {f.replaced}, "
                f"unchanged {f.unchanged}, kept {f.kept}",
                highlight=False,
                soft_wrap=True,
            )
        if o.run_path:
            info.print(f"run saved to {escape(str(o.run_path))}", highlight=False)
        if o.stored:
            info.print(f"stored {len(o.stored)} analyses in campaign {escape(str(campaign))}")
    if as_json:
        sys.stdout.write(json.dumps(o.to_json(), indent=2) + "\n")
