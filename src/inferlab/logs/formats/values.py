"""Value types of log-line fields: text as printed → a number (or a ``key: value`` dict)."""

from __future__ import annotations

__all__ = [
    "grouped_float",
    "grouped_int",
    "lenient_float",
    "lenient_int",
    "percent",
    "split_pairs",
]


def lenient_float(v: str | None) -> float | None:
    """``v`` as a float, ignoring thousands commas and a ``%`` sign; None if it is none."""
    if v is None:
        return None
    try:
        return float(v)
    except ValueError:
        try:
            return float(v.replace(",", "").rstrip("%"))
        except ValueError:
            return None


def lenient_int(v: str | None) -> int | None:
    """``v`` as an int (a float's integer part), as ``lenient_float``."""
    x = lenient_float(v)
    return None if x is None else int(x)


def grouped_float(v: str) -> float:
    """``1,234.5`` → 1234.5."""
    return float(v.replace(",", ""))


def grouped_int(v: str) -> int:
    """``1,234`` → 1234."""
    return int(v.replace(",", ""))


def percent(v: str) -> float:
    """``3.0`` (printed as a percentage) → 0.03."""
    return float(v) / 100.0


def split_pairs(text: str) -> dict[str, str]:
    """``k: v, k: v`` items, split at ``", "`` (a later key wins)."""
    out: dict[str, str] = {}
    for part in text.split(", "):
        k, sep, v = part.partition(": ")
        if sep:
            out[k.lstrip()] = v.rstrip(", ")
    return out
