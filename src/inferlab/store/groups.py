"""Stored runs in groups (``RunGroup``): one config at one load point, each run's requests.
As ``compare`` and the baseline recheck read them; their samples, values and verdicts are
``stats.groups``."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from inferlab.records import RequestRecord
from inferlab.store.db import Store
from inferlab.store.rows import RunRow

__all__ = ["RunGroup", "group_runs"]

K = TypeVar("K", bound=Hashable)


@dataclass
class RunGroup:
    """The trials of one config at one load point, with each trial's raw request records."""

    runs: list[RunRow]
    records: list[list[RequestRecord]]


def group_runs(
    store: Store, runs: Iterable[RunRow], key: Callable[[RunRow], K]
) -> dict[K, RunGroup]:
    """``runs`` by ``key``, each with its request records, in run order."""
    groups: dict[K, RunGroup] = {}
    for r in runs:
        g = groups.setdefault(key(r), RunGroup([], []))
        g.runs.append(r)
        g.records.append(store.requests(r.id))
    return groups
