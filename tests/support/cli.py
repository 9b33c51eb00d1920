"""``inferlab`` run in this process: the real entry point (``inferlab.cli.main.main``, its error
boundary and exit codes) under typer's ``CliRunner`` isolation, about 70 ms a call where a
subprocess costs a Python start and the imports.

What a subprocess would give the command, the isolation gives it here and takes back after:
``sys.stdin`` (``input``), ``sys.stdout`` and ``sys.stderr`` (captured apart), ``os.environ``
(``env``: a value of None unsets the variable) and the working directory (``cwd``).
``COLUMNS`` is 200 unless ``env`` says otherwise, so rich wraps no line a test reads.

An exception that is no ``SystemExit`` is not caught: where a subprocess would print a
traceback and exit 1, the test fails with the traceback itself.

A command must leave the process as it found it: a call that changes ``os.environ``, the
working directory, a signal handler or the root logger's handlers fails (a subprocess would
hide such a leak; in process it reaches every later test).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from typer.testing import CliRunner

__all__ = ["Cli", "CliResult", "run_cli"]

#: the environment every in-process call starts from (a test's ``env`` overrides it)
BASE_ENV: Mapping[str, str | None] = {"COLUMNS": "200"}


@dataclass(frozen=True)
class CliResult:
    """What a call returned: the exit code and the two streams, decoded."""

    exit_code: int
    stdout: str
    stderr: str
    args: tuple[str, ...]

    def __repr__(self) -> str:
        return (
            f"<inferlab {' '.join(self.args)}: exit {self.exit_code}\n"
            f"--- stdout\n{self.stdout}--- stderr\n{self.stderr}>"
        )


#: the ``cli`` fixture's type: ``cli(*args, input=None, env=None, cwd=None) -> CliResult``
Cli = Callable[..., CliResult]


def _code(code: object) -> int:
    """``SystemExit.code`` as a process exit status (None: 0; a message: 1, as Python does)."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


@contextlib.contextmanager
def _chdir(path: str | os.PathLike[str] | None) -> Iterator[None]:
    """``contextlib.chdir`` (Python ≥ 3.11), and nothing for None."""
    if path is None:
        yield
        return
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _runner() -> CliRunner:
    """Stdout and stderr apart: click < 8.2 mixes them unless told; click ≥ 8.2, and the copy
    of click that newer typer vendors (typer._click), always keep them apart (no
    ``mix_stderr``)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP)


def _state() -> dict[str, object]:
    """What a command may not change for the commands and tests after it."""
    return {
        "os.environ": dict(os.environ),
        "cwd": os.getcwd(),
        "signals": {s.name: signal.getsignal(s) for s in _SIGNALS},
        "root log handlers": list(logging.getLogger().handlers),
    }


def _leaks(before: dict[str, object], after: dict[str, object]) -> list[str]:
    out = []
    for key, was in before.items():
        now = after[key]
        if was == now:
            continue
        if isinstance(was, dict) and isinstance(now, dict):
            diff = sorted(k for k in was.keys() | now.keys() if was.get(k) != now.get(k))
            out.append(f"{key}: {', '.join(diff)}")
        else:
            out.append(f"{key}: {was!r} -> {now!r}")
    return out


def run_cli(
    *args: str | os.PathLike[str],
    input: str | bytes | None = None,
    env: Mapping[str, str | None] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> CliResult:
    """Run ``inferlab ARGS...`` in this process; its usage lines name it ``inferlab``."""
    argv = tuple(os.fspath(a) for a in args)
    before = _state()
    result = _invoke(argv, input, env, cwd)
    leaked = _leaks(before, _state())
    assert not leaked, f"inferlab {' '.join(argv)} changed the process: {'; '.join(leaked)}"
    return result


def _invoke(
    argv: tuple[str, ...],
    input: str | bytes | None,
    env: Mapping[str, str | None] | None,
    cwd: str | os.PathLike[str] | None,
) -> CliResult:
    from inferlab.cli.main import main

    runner = _runner()
    with _chdir(cwd), runner.isolation(input=input, env={**BASE_ENV, **(env or {})}) as streams:
        code = 0
        try:
            main(list(argv), prog_name="inferlab")
        except SystemExit as exc:
            code = _code(exc.code)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = streams[0], streams[1]
        return CliResult(
            code,
            out.getvalue().decode(runner.charset, "replace"),
            err.getvalue().decode(runner.charset, "replace"),
            argv,
        )
