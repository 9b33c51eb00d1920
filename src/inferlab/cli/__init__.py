"""The ``inferlab`` command: parse, validate into a model, one library call, render, exit
code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.cli.main import app

# the entry point is ``inferlab.cli.main:main`` (pyproject's console script); ``main`` is not on
# the face because ``inferlab.cli.main`` is its module's name, which the package attribute becomes
__all__ = ["app"]

__getattr__ = lazy_face(__name__, {"inferlab.cli.main": ("app",)})
