"""Package faces that import nothing until a name is used (PEP 562 module ``__getattr__``).

A package's ``__init__`` names its public API in ``__all__`` and maps each name to the module
that defines it; the module is imported on the first use of one of its names, so importing one
submodule (``inferlab.campaign.parts.bench`` for ``inferlab bench``) does not import the package
(the CLI's start-up stays what its lazy commands make it). The names are imported under
``TYPE_CHECKING`` too, for the type checker and the import contracts.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(package: str, homes: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``homes`` maps a module to the names it defines.
    A name is imported from its module on first use and then kept on the package."""
    where = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
