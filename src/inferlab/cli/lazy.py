"""A typer group whose commands are imported only when one is invoked or its own help is shown.

The group's list (``inferlab --help``, "Did you mean", the order) comes from a table of name →
:class:`LazyCommand`: where the command lives and the one line the list shows, so listing the
commands imports none of them (nor scipy, numpy, pandas or pyarrow behind them).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer import _click

__all__ = ["LazyCommand", "LazyGroup", "load_command"]


@dataclass(frozen=True)
class LazyCommand:
    """``target``: ``"module:attr"``, a command function or a ``typer.Typer`` of subcommands;
    ``help``: the first paragraph of its help, as the group's list shows it."""

    target: str
    help: str


class _Listed(TyperCommand):
    """What the group's help lists for a command not yet imported: its name and one line."""


def load_command(name: str, target: str) -> _click.Command:
    """Import ``target`` and build the click command that ``name`` runs, as if it had been
    registered on a plain ``typer.Typer`` (a function's help: its docstring, paragraphs kept)."""
    from inferlab.cli.render import command

    module, _, attr = target.partition(":")
    obj: Any = getattr(importlib.import_module(module), attr)
    host = typer.Typer()
    if isinstance(obj, typer.Typer):
        host.add_typer(obj, name=name)
    else:
        command(host, name)(obj)
    return typer.main.get_group(host).commands[name]


class LazyGroup(TyperGroup):
    """A :class:`TyperGroup` that holds :attr:`table`'s commands as placeholders and imports one
    when it is invoked (or its ``--help`` is asked); the group's own help imports none."""

    table: ClassVar[Mapping[str, LazyCommand]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._listing = False
        for name, entry in self.table.items():
            self.commands.setdefault(name, _Listed(name, help=entry.help))

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        cmd = self.commands.get(cmd_name)
        if isinstance(cmd, _Listed) and not self._listing:
            cmd = self.commands[cmd_name] = load_command(cmd_name, self.table[cmd_name].target)
        return cmd

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
