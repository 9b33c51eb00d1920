"""The one TOML shim: ``tomllib`` on Python 3.11+, its backport ``tomli`` on 3.10.

Every TOML reader imports it: ``from inferlab.config.tomlcompat import tomllib``."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["tomllib"]
