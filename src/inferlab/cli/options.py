"""Typer option aliases that several ``inferlab`` commands share (same flag, same help)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["DbOpt"]

#: ``--db``: the store a command reads or writes
DbOpt = Annotated[
    Path | None, typer.Option("--db", help="Database (default $INFERLAB_DB or ./inferlab.db)")
]
