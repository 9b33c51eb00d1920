"""The ``inferlab`` command's start: commands registered lazily (inferlab.cli.lazy, the table in
inferlab.cli.main), what a start imports, the in-process runner of tests/support/cli.py, and the
few true-subprocess smoke tests of the entry point (exit codes, ``python -m inferlab``).

How long a start takes is measured in benchmarks/cli_startup.py, not here."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from inferlab.cli.lazy import LazyGroup, load_command
from inferlab.cli.main import COMMANDS, app
from support.cli import Cli

HEAVY = ("scipy", "numpy", "pandas", "pyarrow")

_PROBE = """
import json, sys
sys.argv = ["inferlab", *sys.argv[1:]]
import inferlab.cli.main as m
after_import = sorted(sys.modules)
try:
    m.main() if len(sys.argv) > 1 else None
except SystemExit:
    pass
print(json.dumps({"import": after_import, "run": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules(*args: str) -> dict[str, set[str]]:
    """The modules a fresh Python holds after ``import inferlab.cli.main`` and after
    ``inferlab ARGS...`` (a subprocess: this one has imported everything already)."""
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=60
    )
    got = json.loads(p.stderr.strip().splitlines()[-1])
    return {k: set(v) for k, v in got.items()}


def _top(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def _first_paragraph(cmd: object) -> str:
    """What a group's help lists for ``cmd``: its help's first paragraph (as typer shows it)."""
    text = getattr(cmd, "short_help", None) or getattr(cmd, "help", None) or ""
    return inspect.cleandoc(text).split("\n\n")[0].replace("\n", " ").strip()


def test_the_table_says_each_commands_own_first_line() -> None:
    for name, entry in COMMANDS.items():
        cmd = load_command(name, entry.target)
        assert cmd.name == name
        assert entry.help == _first_paragraph(cmd), name


def test_the_lazy_list_is_the_list_of_the_loaded_commands() -> None:
    """``inferlab --help`` from the placeholders is byte for byte the help the same group
    prints once every command is imported."""

    def root_help(load_all: bool) -> str:
        group = typer.main.get_command(app)
        assert isinstance(group, LazyGroup)
        if load_all:
            for name in COMMANDS:
                group.get_command(typer.Context(group), name)
        with CliRunner().isolation() as streams:
            group.get_help(typer.Context(group, info_name="inferlab"))
            return streams[0].getvalue().decode()

    lazy, loaded = root_help(False), root_help(True)
    assert lazy == loaded
    for name, entry in COMMANDS.items():
        assert f" {name} " in lazy and entry.help.split()[0] in lazy


def test_the_help_lists_every_command_and_imports_none(cli: Cli) -> None:
    r = cli("--help")
    assert r.exit_code == 0 and r.stderr == ""
    listed = [ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith("│ ") and "  " in ln]
    assert [n for n in listed if n in COMMANDS] == list(COMMANDS)
    mods = _modules("--help")
    assert not _top(mods["import"]) & set(HEAVY)
    assert not _top(mods["run"]) & set(HEAVY), "inferlab --help imported a heavy library"
    commands = {m for m in mods["run"] if m.startswith("inferlab.cli.")}
    assert commands == {"inferlab.cli.lazy", "inferlab.cli.main"}


def test_a_command_imports_its_own_module_and_no_other_command() -> None:
    mods = _modules("runs", "--help")["run"]
    assert "inferlab.cli.store" in mods
    assert not {"inferlab.cli.bench", "inferlab.cli.run", "inferlab.cli.sim"} & mods
    assert not _top(mods) & {"scipy", "numpy"}
    # the reference engine a campaign launches: no scipy on its way up
    assert "scipy" not in _top(_modules("sim", "serve", "--help")["run"])


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
