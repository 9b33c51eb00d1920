"""The ``inferlab`` command: parse → validated model → one library call → render → exit code."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape

from inferlab.errors import InferlabError

app = typer.Typer(
    name="inferlab",
    help="Measurement-driven optimization of LLM inference serving.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

err_console = Console(stderr=True)


def _register() -> None:
    from inferlab.cli import sim as sim_cli
    from inferlab.cli.bench import bench
    from inferlab.cli.compare import compare
    from inferlab.cli.demo import demo
    from inferlab.cli.levers import levers
    from inferlab.cli.logs import logs_app
    from inferlab.cli.model import model_app
    from inferlab.cli.profile import profile
    from inferlab.cli.recon import recon
    from inferlab.cli.render import command
    from inferlab.cli.report import report
    from inferlab.cli.run import run
    from inferlab.cli.store import export, import_, runs
    from inferlab.cli.tune import tune_app
    from inferlab.cli.up import down, up
    from inferlab.cli.verify import verify

    for name, fn in (
        ("bench", bench),
        ("demo", demo),
        ("runs", runs),
        ("compare", compare),
        ("export", export),
        ("import", import_),
        ("verify", verify),
        ("run", run),
        ("report", report),
        ("profile", profile),
        ("levers", levers),
        ("up", up),
        ("down", down),
        ("recon", recon),
    ):
        command(app, name)(fn)
    app.add_typer(sim_cli.sim_app, name="sim")
    app.add_typer(model_app, name="model")
    app.add_typer(logs_app, name="logs")
    app.add_typer(tune_app, name="tune")


def main() -> None:
    """Entry point: the one error boundary. An ``InferlabError`` is a red line and exit code 2."""
    _register()
    try:
        rc = app(standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except InferlabError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/yellow]")
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
