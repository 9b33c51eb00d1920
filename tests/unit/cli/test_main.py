"""The ``inferlab`` entry point: the in-process runner of tests/support/cli.py (env, cwd,
usage errors and typos), and the few true-subprocess smoke tests (exit codes,
``python -m inferlab``, a command's ``--help``).

How long a start takes is measured in benchmarks/cli_startup.py, not here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferlab.cli.main import COMMANDS
from support.cli import Cli


def test_in_process_runs_see_the_env_and_cwd_they_are_given(cli: Cli, tmp_path: Path) -> None:
    r = cli("runs", env={"INFERLAB_DB": str(tmp_path / "from-env.db")})
    assert r.exit_code == 2 and r.stdout == ""
    assert f"error: --db: {tmp_path / 'from-env.db'} does not exist" in r.stderr
    r = cli("runs", env={"INFERLAB_DB": None}, cwd=tmp_path)  # the default: ./inferlab.db
    assert r.exit_code == 2 and "error: --db: inferlab.db does not exist" in r.stderr
    assert os.getcwd() != str(tmp_path)
    assert "from-env" not in os.environ.get("INFERLAB_DB", "")


def test_in_process_usage_errors_and_typos(cli: Cli) -> None:
    r = cli("rnus")
    assert r.exit_code == 2 and r.stdout == ""
    assert "Usage: inferlab [OPTIONS] COMMAND [ARGS]..." in r.stderr
    assert "No such command 'rnus'. Did you mean 'runs'?" in r.stderr
    r = cli("runs", "--nope")
    assert r.exit_code == 2 and "No such option: --nope" in r.stderr


# ---------------------------------------------------------------- true subprocesses: the entry


def _python_m(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferlab", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )


def test_python_m_inferlab_help_and_exit_codes(tmp_path: Path) -> None:
    ok = _python_m("--help")
    assert ok.returncode == 0 and ok.stderr == ""
    assert (
        ok.stdout.splitlines()[1].strip() == "Usage: python -m inferlab [OPTIONS] COMMAND [ARGS]..."
    )
    assert all(f"│ {name} " in ok.stdout for name in COMMANDS)
    bare = _python_m()  # no command: the help, and the usage-error code
    assert bare.returncode == 2 and "Commands" in bare.stdout
    typo = _python_m("rnus")
    assert typo.returncode == 2 and "Did you mean 'runs'?" in typo.stderr
    lib = _python_m("runs", "--db", str(tmp_path / "none.db"))  # an InferlabError: one red line
    assert lib.returncode == 2 and lib.stdout == ""
    assert (
        lib.stderr.strip()
        == f"error: --db: {tmp_path / 'none.db'} does not exist (run inferlab bench first)"
    )


@pytest.mark.parametrize("name", ["bench", "sim"])
def test_a_commands_help_in_a_subprocess(name: str) -> None:
    p = _python_m(name, "--help")
    assert p.returncode == 0 and p.stderr == ""
    assert f"Usage: python -m inferlab {name} [OPTIONS]" in p.stdout
    assert COMMANDS[name].help.split(",")[0].split(":")[0] in " ".join(p.stdout.split())
