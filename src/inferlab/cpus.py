"""CPU lists and pinning: the primitives behind server/client CPU isolation.

A CPU list is Linux's syntax (``"0-5"``, ``"0,2,4-7"``). Pinning uses ``os.sched_setaffinity``:
a launched server pins itself in the child before ``exec`` (so its whole process group
inherits the set), the measuring processes pin themselves when they start. The split policy
(which CPUs go where) is ``inferlab.campaign.parts.cpus``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from inferlab.errors import ConfigError

__all__ = ["format_cpu_list", "host_cpus", "parse_cpu_list", "pin_child", "pinned"]

_ITEM = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_cpu_list(text: str, field: str = "cpus") -> tuple[int, ...]:
    """``"0-2,5"`` → (0, 1, 2, 5), sorted, no duplicates. ``ConfigError`` naming ``field``."""
    out: set[int] = set()
    for part in text.split(","):
        m = _ITEM.match(part)
        if not m:
            raise ConfigError(f'{field}: {text!r} is not a CPU list (expected e.g. "0-5" or "6,7")')
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a:
            raise ConfigError(f"{field}: range {part.strip()!r} runs backwards")
        out.update(range(a, b + 1))
    return tuple(sorted(out))


def format_cpu_list(cpus: Sequence[int]) -> str:
    """(0, 1, 2, 5) → ``"0-2,5"``."""
    xs = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)


def host_cpus() -> tuple[int, ...]:
    """The CPUs this process may run on (its affinity; all online CPUs without it)."""
    if hasattr(os, "sched_getaffinity"):
        return tuple(sorted(os.sched_getaffinity(0)))
    return tuple(range(os.cpu_count() or 1))


def pin_child(cpus: Sequence[int] | None) -> Callable[[], None] | None:
    """A ``preexec_fn`` that pins the child to ``cpus`` before it execs (None: no pinning)."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return None
    chosen = tuple(cpus)
    return lambda: os.sched_setaffinity(0, chosen)


@contextmanager
def pinned(cpus: Sequence[int] | None) -> Iterator[None]:
    """While inside, this process (and what it forks) runs on ``cpus`` only (None: as is)."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield
        return
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)
