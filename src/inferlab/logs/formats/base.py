"""A log-line format as a declaration (``LineFormat``), and the record a line read with it
makes (``Record``); ``inferlab.logs.formats.match.read`` is the matcher.

A ``LineFormat`` says what one kind of line an engine prints holds: its ``name``, the
``engine`` it belongs to, the literals a line must hold (``prefix``: one of them, tested with
``in`` before any regex runs; ``need``: all of these too), where its values are (``pattern``,
``pairs``, or a field's own pattern), the ``fields`` (name, type, unit) and the ``kind`` of
record it makes, which names the sink that applies it to the log's state
(``inferlab.logs.sinks``).

Values come from, per field:

- a named group of ``pattern`` (searched in the line; with ``full``, matched against all of
  the line from where the prefix starts);
- ``keys``: the line is a list of ``key: value`` items (``pairs`` splits it, from the end of
  the prefix) and the field takes the first of its keys with a value;
- its own ``pattern``, searched in the whole line (its group of the field's name, or group 1).

``wrap``: a record a terminal may have hard-wrapped; the following lines that continue it are
joined (up to 3) until it is complete, and the record says how many it used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from inferlab.logs.formats.values import grouped_float, grouped_int

__all__ = [
    "AT",
    "END",
    "FMT",
    "GEN_TPS",
    "MORE",
    "QUEUED",
    "RUNNING",
    "TEXT",
    "USED",
    "VALUES",
    "Advice",
    "Field",
    "LineFormat",
    "Record",
    "Wrap",
    "by_name",
    "f_",
    "i_",
    "own_values",
    "s_",
    "step",
]


# -- declarations -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """One value of a line format: ``name`` in the record, ``type`` (text → value), ``unit``.

    ``optional``: the group may be empty or absent (the value is None then). ``keys``: for a
    ``pairs`` format, the log's keys for this value (the first with a value wins).
    ``pattern``: found by its own search of the whole line instead (of a full-line format:
    of the line before its prefix, the rest being the format's pattern)."""

    name: str
    type: Callable[[str], Any]
    unit: str = ""
    optional: bool = False
    keys: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None


#: the values of a series point that every engine's stats line prints as plain numbers
#: (``SeriesPoint``'s names and units)
RUNNING = Field("running", int, "requests")
QUEUED = Field("queued", int, "requests")
GEN_TPS = Field("gen_tps", float, "tokens/s")


@dataclass(frozen=True)
class Wrap:
    """A record a terminal may have hard-wrapped: it is complete once ``until`` is found in it
    (or, before any join, once ``whole_if`` is in the line after its prefix)."""

    until: re.Pattern[str]
    whole_if: str = ""


@dataclass(frozen=True)
class LineFormat:
    """One kind of log line (see the module docstring). ``always``: read whatever engine
    ``--engine`` names; ``each``: a line may hold several records (glued by a lost newline),
    each from this literal on; ``tags``: constants the sink reads (a step's name, ...)."""

    name: str
    engine: str | None
    kind: str
    prefix: tuple[str, ...]
    fields: tuple[Field, ...] = ()
    pattern: re.Pattern[str] | None = None
    full: bool = False
    pairs: Callable[[str], dict[str, str]] | None = None
    need: tuple[str, ...] = ()
    need_keys: tuple[str, ...] = ()
    skip: int = 0
    wrap: Wrap | None = None
    each: str = ""
    named: tuple[str, ...] = ()
    always: bool = False
    tags: Mapping[str, Any] = field(default_factory=dict)
    #: the fields found by their own pattern: (index, field)
    own: tuple[tuple[int, Field], ...] = field(init=False, repr=False, compare=False)
    #: the pattern's match → the typed values (compiled from ``fields``, see ``_compile``)
    convert: Callable[[re.Match[str]], tuple[Any, ...]] = field(
        init=False, repr=False, compare=False
    )
    #: a full-line format's ``read`` of a line whose prefix starts at ``at`` (compiled)
    read_at: Callable[[str, int], Record | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.full and (len(self.prefix) != 1 or self.need or self.wrap or self.pairs):
            raise ValueError(f"{self.name}: a full-line format has one prefix, no wrap, no pairs")
        if self.pattern is not None:
            names = {f.name for f in self.fields}
            extra = set(self.pattern.groupindex) - names
            if extra or self.pattern.groups != len(self.pattern.groupindex):
                raise ValueError(f"{self.name}: groups {sorted(extra)} / unnamed groups")
        own = tuple((k, f) for k, f in enumerate(self.fields) if f.pattern is not None)
        object.__setattr__(self, "own", own)
        convert, read_at = _compile(self)
        object.__setattr__(self, "convert", convert)
        object.__setattr__(self, "read_at", read_at)

    def engine_of(self, text: str) -> str | None:
        """The engine a read line counts for: ``engine``, else the first of ``named`` that
        the line names."""
        if self.engine is not None:
            return self.engine
        return next((e for e in self.named if e in text), None)


#: A line read by a format, as one tuple (the stats lines are most of a busy log: a tuple is
#: the cheapest record to build and unpack, a third of the cost of a ``NamedTuple``):
#: ``(fmt, text, at, end, values, used, more)`` — ``values`` in the order of ``fmt.fields``
#: (None where the line has none); ``text``, joined with the ``used`` continuation lines of a
#: wrap; ``at``, where the prefix starts in it; ``end``, where the pattern's match ends;
#: ``more``, the values of further records glued into the same line (formats with ``each``).
Record = tuple["LineFormat", str, int, int, tuple[Any, ...], int, tuple[tuple[Any, ...], ...]]
#: the places in a ``Record``
FMT: Final = 0
TEXT: Final = 1
AT: Final = 2
END: Final = 3
VALUES: Final = 4
USED: Final = 5
MORE: Final = 6


def by_name(fmt: LineFormat, values: tuple[Any, ...]) -> dict[str, Any]:
    """The values a record has, by field name."""
    return {f.name: v for f, v in zip(fmt.fields, values) if v is not None}


_Convert = Callable[[re.Match[str]], tuple[Any, ...]]
_ReadAt = Callable[[str, int], Record | None]


def _compile(fmt: LineFormat) -> tuple[_Convert, _ReadAt]:
    """``convert`` (``fmt.pattern``'s match → the typed values of the fields in its groups) and
    a full-line format's ``read_at`` (the whole ``read``, own-pattern fields too), compiled from
    the fields as ``namedtuple`` compiles its ``__new__``: the stats lines are most of a busy
    log, and a loop over the fields cost ~10% more per stats line (benchmarks/RESULTS.md)."""
    index = fmt.pattern.groupindex if fmt.pattern is not None else {}
    ns: dict[str, Any] = {"fmt": fmt}
    groups: list[str] = []
    whole: list[str] = []
    searches: dict[int, str] = {}
    for k, f in enumerate(fmt.fields):
        ns[f"t{k}"] = f.type
        if f.name in index:
            g = f"g{index[f.name]}"
            groups.append(f"(t{k}({g}) if {g} else None)" if f.optional else f"t{k}({g})")
            whole.append(groups[-1])
            continue
        groups.append("None")
        if f.pattern is None:
            whole.append("None")
            continue
        o = searches.setdefault(id(f.pattern), f"o{len(searches)}")  # one search a pattern
        ns[f"search_{o}"] = f.pattern.search
        grp = f.name if f.name in f.pattern.groupindex else 1
        whole.append(
            f"(t{k}(v) if {o} is not None and (v := {o}.group({grp!r})) is not None"
            f"{' and v' if f.optional else ''} else None)"
        )
    n = len(index)
    unpack = f"    {''.join(f'g{i + 1}, ' for i in range(n))}= m.groups()\n" if n else ""
    src = "def convert(m):\n" + unpack + f"    return ({''.join(g + ', ' for g in groups)})\n"
    if fmt.full:
        assert fmt.pattern is not None
        ns["fullmatch"] = fmt.pattern.fullmatch
        src += (
            "def read_at(text, at):\n"
            "    m = fullmatch(text, at)\n"
            "    if m is None:\n"
            "        return None\n"
            + unpack
            # the line from the prefix on is the pattern's: an own pattern is in the head
            + "".join(f"    {o} = search_{o}(text, 0, at)\n" for o in searches.values())
            + f"    values = ({''.join(w + ', ' for w in whole)})\n"
            # a full match ends where the line does
            + "    return (fmt, text, at, len(text), values, 0, ())\n"
        )
    exec(src, ns)  # field indices and names only: nothing from a log
    return ns["convert"], ns.get("read_at", _not_full)


def _not_full(text: str, at: int) -> Record | None:
    raise TypeError("read_at is for full-line formats")


@dataclass(frozen=True)
class Advice:
    """An engine's performance warning (finding ``perf-advice``): the line's ``pattern``, what
    it means (``message``, with the pattern's named groups), what to do and the env that does
    it. ``line_format``: the format that reads its line (kind ``advice``)."""

    name: str
    pattern: re.Pattern[str]
    engine: str
    message: str
    action: str
    env: dict[str, str] = field(default_factory=dict)
    severity: str = "warning"
    prefix: tuple[str, ...] = ("LD_PRELOAD", "suboptimal performance")

    def line_format(self) -> LineFormat:
        fields = tuple(Field(g, str) for g in self.pattern.groupindex)
        return LineFormat(
            self.name,
            self.engine,
            "advice",
            self.prefix,
            fields,
            self.pattern,
            tags={"advice": self},
        )


def f_(name: str, unit: str) -> Field:
    """An optional float field (thousands commas allowed)."""
    return Field(name, grouped_float, unit, optional=True)


def i_(name: str, unit: str) -> Field:
    """An optional int field (thousands commas allowed)."""
    return Field(name, grouped_int, unit, optional=True)


def s_(name: str) -> Field:
    """An optional text field."""
    return Field(name, str, optional=True)


def step(
    engine: str | None,
    name: str,
    prefix: str,
    pattern: str,
    phase: str | None,
    *fields: Field,
    flags: tuple[str, ...] = (),
    then: tuple[LineFormat, tuple[str, ...]] | None = None,
) -> LineFormat:
    """A startup (or shutdown) step, kind ``step``: the milestone ``name`` and its values, and
    the ``phase`` the server is in from it on (None: unchanged). ``flags``: values that are
    also launch flags; ``then``: values read from the next line by another format."""
    tags = {"step": name, "phase": phase, "flags": flags, "then": then}
    label = f"{engine or 'any'}-{name}-{prefix.lower().replace(' ', '-')}"
    return LineFormat(label, engine, "step", (prefix,), fields, re.compile(pattern), tags=tags)


def own_values(fmt: LineFormat, text: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` with the fields found by their own pattern filled in (one search each)."""
    filled = list(values)
    found: dict[int, re.Match[str] | None] = {}
    for k, f in fmt.own:
        assert f.pattern is not None
        key = id(f.pattern)
        if key not in found:
            found[key] = f.pattern.search(text)
        m = found[key]
        v = None if m is None else m.group(f.name if f.name in f.pattern.groupindex else 1)
        if v is not None and (v or not f.optional):
            filled[k] = f.type(v)
    return tuple(filled)
