"""Commands registered lazily (``cli.lazy``, the table in ``cli.main``): each command's own
first line, the lazy list equal to the loaded commands, ``--help`` imports none, a command
imports its own module and no other."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

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
