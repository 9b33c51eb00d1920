"""The log-line formats inferlab reads: one table per engine, named by the engine's own spec
(``EngineSpec.logs.formats``, e.g. ``inferlab.logs.formats.vllm``), and one of engine-neutral
lines (``common``), all read by ``base.read``.

``tables()`` gathers them from the engine registry: every format of the engines with log facts
(in registry order), then the neutral ones; within a record kind (``inferlab.logs.parsers``
applies the kinds in its own order) a format comes before those of the tables after it.
Adding a line: add a ``LineFormat`` to its engine's table, of the kind whose meaning it has
(``step`` for a startup milestone, ``flag``, ...), or of a new kind with its sink
(``inferlab.logs.sinks``). Adding an engine: its table module, named by its ``LogFacts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module

from inferlab.engines import LogFacts, specs
from inferlab.logs.formats import common
from inferlab.logs.formats.base import Advice, Field, LineFormat, Record
from inferlab.logs.formats.match import read

__all__ = ["Advice", "Field", "LineFormat", "Record", "Tables", "read", "tables"]


@dataclass(frozen=True)
class Tables:
    """Every format the log miner applies, and what goes with them."""

    #: every table's formats in order (the engines', then the engine-neutral ones)
    formats: tuple[LineFormat, ...]
    #: engine → the names in a line that hint at it (weak evidence, when no format read the line)
    markers: dict[str, tuple[str, ...]]
    #: every engine's performance advice (finding ``perf-advice``)
    advice: tuple[Advice, ...]
    #: byte strings the reader searches for besides ``parsers.ANCHORS``: a table's own
    #: ``ANCHORS``, for prefixes that hold none of those
    anchors: tuple[bytes, ...]


Logged = tuple[tuple[str, LogFacts], ...]


def _logged() -> Logged:
    return tuple((s.name, s.logs) for s in specs() if s.logs is not None)


@lru_cache(maxsize=8)
def _tables(logged: Logged) -> Tables:
    mods = [(name, import_module(facts.formats)) for name, facts in logged]
    named = tuple(name for name, facts in logged if facts.named_in_lines)
    return Tables(
        formats=(*(f for _, m in mods for f in m.FORMATS), *common.formats(named)),
        markers={name: tuple(m.MARKERS) for name, m in mods},
        advice=tuple(a for _, m in mods for a in getattr(m, "ADVICE", ())),
        anchors=tuple(dict.fromkeys(a for _, m in mods for a in getattr(m, "ANCHORS", ()))),
    )


def tables() -> Tables:
    """The formats of the engines registered now (built once per set of engines)."""
    return _tables(_logged())
