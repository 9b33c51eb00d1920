"""Field maps: an object's named attributes as a dict, in the order named.

For ``to_json`` methods, and for copying one record's fields into another's constructor."""

from __future__ import annotations

from typing import Any

__all__ = ["pick"]


def pick(obj: object, *names: str) -> dict[str, Any]:
    """``{name: obj.name}`` for each of ``names``, in that order."""
    return {n: getattr(obj, n) for n in names}
