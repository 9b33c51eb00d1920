"""The ``inferlab`` command: parse → validated model → one library call → render → exit code."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer

from inferlab import interrupts
from inferlab.cli.lazy import LazyCommand, LazyGroup
from inferlab.errors import InferlabError

#: every command: where it lives and the line ``inferlab --help`` lists (its help's first
#: paragraph; tests/unit/cli/test_lazy.py holds them equal), in the order the list shows
COMMANDS: dict[str, LazyCommand] = {
    "bench": LazyCommand(
        "inferlab.cli.bench:bench",
        "Measure a running endpoint across concurrency levels, request rates or a trace.",
    ),
    "demo": LazyCommand(
        "inferlab.cli.demo:demo", "Run the whole method on a real vLLM (CPU) campaign, end to end."
    ),
    "runs": LazyCommand(
        "inferlab.cli.store:runs", "List the stored runs (one per load point × trial)."
    ),
    "compare": LazyCommand(
        "inferlab.cli.compare:compare", "Compare configs at each load point against the baseline."
    ),
    "export": LazyCommand(
        "inferlab.cli.store:export", "Write runs or their requests as CSV, JSONL or Parquet."
    ),
    "import": LazyCommand(
        "inferlab.cli.store:import_", "Import other benchmark tools' results into the store."
    ),
    "verify": LazyCommand(
        "inferlab.cli.verify:verify",
        "Check that a running server answers correctly before it is measured.",
    ),
    "run": LazyCommand(
        "inferlab.cli.run:run",
        "Launch, verify, measure, store and stop every config of the campaign, then report.",
    ),
    "optimize": LazyCommand(
        "inferlab.cli.optimize:optimize_cmd",
        "Search the campaign's [search] levers: trials against the incumbent by sequential A/B.",
    ),
    "report": LazyCommand(
        "inferlab.cli.report:report",
        "Write report.md and report.html for a campaign, from the store only.",
    ),
    "profile": LazyCommand(
        "inferlab.cli.profile:profile",
        "Show where the GPU time of a decode (or prefill) step goes.",
    ),
    "levers": LazyCommand(
        "inferlab.cli.levers:levers",
        "Rank each config's levers by their ceiling at every profiled load point.",
    ),
    "up": LazyCommand(
        "inferlab.cli.up:up", "Launch CONFIG, wait until ready, verify it, and leave it running."
    ),
    "down": LazyCommand("inferlab.cli.up:down", "Stop servers left running by `inferlab up`."),
    "recon": LazyCommand(
        "inferlab.cli.recon:recon",
        "Take stock of the GPUs, the engine and its environment; nothing is changed.",
    ),
    "sim": LazyCommand(
        "inferlab.cli.sim:sim_app",
        "The reference engine: a SIMULATED OpenAI-compatible server with known timing.",
    ),
    "model": LazyCommand(
        "inferlab.cli.model:model_app",
        "Models for real engines, no model hub needed.",
    ),
    "logs": LazyCommand(
        "inferlab.cli.logs:logs_app", "Mine server logs (SGLang, vLLM, llama.cpp) for findings."
    ),
    "tune": LazyCommand(
        "inferlab.cli.tune:tune_app",
        "Tune kernel configs for the shapes a server runs, and install them for the engine.",
    ),
}


class _Commands(LazyGroup):
    table = COMMANDS


app = typer.Typer(
    name="inferlab",
    help="Measurement-driven optimization of LLM inference serving.",
    cls=_Commands,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """(no options of its own: the commands are in COMMANDS)"""


def _error(markup: str) -> None:
    """One line on stderr; the console is made here, so it writes to the ``sys.stderr`` and
    width of this invocation (an in-process test swaps both)."""
    from rich.console import Console

    Console(stderr=True).print(markup, highlight=False, soft_wrap=True)


def main(argv: Sequence[str] | None = None, prog_name: str | None = None) -> None:
    """Entry point: the one error boundary. An ``InferlabError`` is a red line and exit code 2.

    ``argv``: the arguments (default ``sys.argv[1:]``); ``prog_name``: the name usage lines show
    (default: as invoked)."""
    try:
        with interrupts.watching():  # a Ctrl-C of this command shortens its later stops
            rc = app(args=argv, prog_name=prog_name, standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except InferlabError as exc:
        from rich.markup import escape

        _error(f"[red]error:[/red] {escape(str(exc))}")
        sys.exit(2)
    except KeyboardInterrupt:
        _error("[yellow]interrupted[/yellow]")
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:  # click's usage errors arrive here with standalone_mode=False
        # typer vendors its own click (typer._click): recognise its exceptions by shape
        show, code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            sys.exit(code)
        if type(exc).__name__ == "Abort":
            sys.exit(130)
        raise


if __name__ == "__main__":
    main()
