"""Rendering helpers shared by commands: tables and warnings as rich renderables."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from inferlab.load.bench import BenchResult, PointResult

__all__ = [
    "bench_table",
    "command",
    "fmt",
    "goodput_share",
    "help_text",
    "print_turns",
    "slo_state",
    "stdout_console",
]

F = TypeVar("F", bound=Callable[..., Any])


def help_text(doc: str | None) -> str:
    """A command's docstring as its help: the paragraphs kept, the source's line breaks within
    each joined, so the terminal wraps the sentences (typer would show the breaks)."""
    paras = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(" ".join(ln.strip() for ln in p.splitlines()) for p in paras)


def command(app: typer.Typer, name: str) -> Callable[[F], F]:
    """Register the decorated function as command ``name`` of ``app``, help from its docstring."""

    def register(fn: F) -> F:
        app.command(name, help=help_text(fn.__doc__))(fn)
        return fn

    return register


def stdout_console() -> Console:
    """Results go to stdout; when it is not a terminal, do not wrap tables at 80 columns."""
    c = Console()
    return c if c.is_terminal else Console(width=160)


def fmt(x: float | None, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:,.{digits}f}"


def bench_table(result: BenchResult, points: list[PointResult] | None = None) -> Table:
    """One row per load point: latency medians/p99 in ms, throughput with its 95% interval."""
    pts = result.points if points is None else points
    slo = any(p.summary.goodput_req_s is not None for p in pts)
    states = any(p.summary.slo is not None and p.summary.slo.state for p in pts)
    t = Table(
        title=f"{result.model} @ {result.url}",
        caption="TTFT/TPOT/ITL in ms as p50 / p99; out tok/s ± half-width of its 95% bootstrap "
        "interval; errors never enter latency",
        caption_justify="left",
    )
    t.add_column("load", no_wrap=True)
    t.add_column("ok", justify="right")
    t.add_column("err", justify="right")
    t.add_column("TTFT", justify="right")
    t.add_column("TPOT", justify="right")
    t.add_column("ITL", justify="right")
    t.add_column("out tok/s", justify="right")
    t.add_column("req/s", justify="right")
    t.add_column("peak C", justify="right")
    if slo:
        t.add_column("goodput req/s (share [95%])", justify="right")
    if states:
        t.add_column("SLO (worst limit, ms)", justify="right")
    for p in pts:
        s = p.summary
        ci = s.output_tok_s_ci
        half = (ci.high - ci.low) / 2 if not math.isnan(ci.high) else float("nan")
        row = [
            p.point.label + (" (interrupted)" if p.interrupted else ""),
            str(s.ok),
            str(s.requests - s.ok) if s.requests - s.ok else "0",
            f"{fmt(s.ttft_ms.p50)} / {fmt(s.ttft_ms.p99)}",
            f"{fmt(s.tpot_ms.p50, 2)} / {fmt(s.tpot_ms.p99, 2)}",
            f"{fmt(s.itl_ms.p50, 2)} / {fmt(s.itl_ms.p99, 2)}",
            f"{fmt(s.output_tok_s)} ± {fmt(half)}",
            fmt(s.request_s, 2),
            str(s.peak_concurrency),
        ]
        if slo:
            row.append(f"{fmt(s.goodput_req_s, 2)} ({goodput_share(p)})")
        if states:
            row.append(slo_state(p))
        t.add_row(*row)
    return t


def print_turns(console: Console, result: BenchResult) -> None:
    """A sessions point's TTFT by turn (median, order-statistic interval over users)."""
    from inferlab.stats.turns import by_turn, turn_interval_text

    for res in result.points:
        turns = by_turn(res.records)
        if not turns:
            continue
        console.print(
            f"{res.point.label}: TTFT by turn (median ms [interval ≥ 95%, its coverage], "
            "prompt tokens)"
        )
        for t in turns:
            prompt = f"{t.prompt_tokens_mean:.0f}" if t.prompt_tokens_mean is not None else "?"
            failed = f", {t.failed} failed" if t.failed else ""
            console.print(
                f"  turn {t.turn + 1}: {turn_interval_text(t)}  {prompt} tokens  "
                f"({t.requests} requests{failed})",
                highlight=False,
            )


def goodput_share(p: PointResult) -> str:
    """``93% [88–96]``: the share of requests that met every SLO limit, its Wilson interval."""
    s = p.summary
    if s.slo is None:
        return f"{fmt((s.slo_attainment or 0) * 100, 0)}%"
    g = s.slo.goodput
    return f"{fmt(g.estimate * 100, 0)}% [{fmt(g.low * 100, 0)}–{fmt(g.high * 100, 0)}]"


def slo_state(p: PointResult) -> str:
    """Holds / fails / undecided, with the limit that decided it."""
    slo = p.summary.slo
    if slo is None or slo.state is None:
        return "–"
    worst = max(slo.checks, key=lambda c: c.value_ms / c.limit_ms)
    return f"{slo.state} ({worst.key} {fmt(worst.value_ms, 2)})"
