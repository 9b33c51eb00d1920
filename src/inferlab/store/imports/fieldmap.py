"""The importers' declarative field maps (a tool's aggregate field → inferlab summary name) and
the functions that apply them to one JSON object."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from inferlab.store.imports._common import sample_std, stat_key
from inferlab.store.imports.source import Source

__all__ = ["StatFields", "map_distribution", "map_scalars", "map_stat_fields"]


@dataclass(frozen=True)
class StatFields:
    """Aggregates named ``<stat>_<metric>_ms`` (sglang.bench_serving, vllm bench serve): the
    pattern (groups: stat, metric), metric → inferlab name, the metrics with one sample per
    completed request (their std's n), and the tool option that adds per-request data."""

    pattern: re.Pattern[str]
    names: Mapping[str, str]
    per_request: frozenset[str]
    details_option: str


def map_stat_fields(
    s: Source,
    fields: StatFields,
    completed: int,
    counts: Mapping[str, int],
    summary: dict[str, float],
    notes: list[str],
) -> None:
    """Map every ``<stat>_<metric>_ms`` field of ``s`` into ``summary``: a numpy population
    std becomes the sample std with n = ``completed`` (per-request metrics) or ``counts``
    (per-gap metrics, known only from the details), else it is left out with a note."""
    for key in s.obj:
        m = fields.pattern.match(key)
        if not m:
            continue
        v = s.num(key)
        if v is None:
            continue
        stat, metric = m.group(1), m.group(2)
        name = fields.names[metric]
        if stat != "std":
            for k in stat_key(name, stat):
                summary[k] = v
            continue
        n = completed if metric in fields.per_request else counts.get(metric)
        if n is None:
            notes.append(
                f"{key}: numpy population std with an unknown sample count "
                f"(no {fields.details_option}); left out of the summary"
            )
            continue
        sd = sample_std(v, n)
        if sd is not None:
            summary[f"{name}_std"] = sd
            notes.append(f"{key} is numpy's population std: {name}_std = {key} × √(n/(n−1)), n={n}")


def map_scalars(
    table: Mapping[str, str], value: Callable[[str], float | None], summary: dict[str, float]
) -> None:
    """``summary[name] = value(field)`` for each field → name of ``table`` that has a value."""
    for key, name in table.items():
        v = value(key)
        if v is not None:
            summary[name] = v


def map_distribution(
    d: Source,
    name: str,
    stats: Mapping[str, str],
    summary: dict[str, float],
    *,
    std: str,
    scale: float = 1.0,
) -> None:
    """Map one distribution object (``{stat: value, ..., "count": n}``) into ``summary`` as
    ``name_<stat>``: ``stats`` maps the tool's stat keys to inferlab's; the ``std`` key is a
    population std, converted to the sample std with n = ``count``; values × ``scale``."""
    for key, stat in stats.items():
        v = d.num(key)
        if v is None:
            continue
        if key == std:
            n = d.int_("count")
            sd = sample_std(v * scale, n) if n is not None else None
            if sd is not None:
                summary[f"{name}_std"] = sd
            continue
        for k in stat_key(name, stat):
            summary[k] = v * scale
