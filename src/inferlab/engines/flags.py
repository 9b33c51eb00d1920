"""Command-line flags of an engine as data: parse an argv tail, edit it, diff two of them.

An argv tail (the flags after the launcher, e.g. ``["--tp", "4", "--enforce-eager"]``) is parsed
into an ordered mapping canonical flag → values, with the engine's own rules:

- ``--flag value``, ``--flag=value``, ``--flag v1 v2 ...`` (every token up to the next flag),
  and boolean flags (``--enforce-eager``: no values);
- a token is a flag when it is a dash followed by a letter (``-1`` and ``-0.5`` are values);
- aliases are folded to one spelling per engine (``-tp`` → ``--tensor-parallel-size`` for vLLM,
  ``--tp`` → ``--tp-size`` for SGLang, ``-c`` → ``--ctx-size`` for llama.cpp);
- engines that accept ``--max_model_len`` for ``--max-model-len`` (vLLM) fold underscores;
- a flag given twice keeps its first position and its last value, as argparse does, unless the
  engine lists it as repeatable (each occurrence then adds values).

Argparse's prefix abbreviations (``--mem-frac``) and ``--no-X`` negations are not folded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from inferlab.errors import ConfigError

__all__ = [
    "Change",
    "FlagSyntax",
    "FlagValue",
    "ParsedArgs",
    "apply",
    "diff",
    "is_flag",
    "parse",
    "render",
]

#: a value for ``set``: True → a bare boolean flag, False → the flag removed,
#: a sequence → several values (``--cuda-graph-bs 1 2 4``), anything else → one value
FlagValue = str | int | float | bool | Sequence[str | int | float]

_FLAG_RE = re.compile(r"-{1,2}[A-Za-z]")


def is_flag(token: str) -> bool:
    """True for ``--name`` / ``-n``; False for values, including negative numbers."""
    return bool(_FLAG_RE.match(token))


@dataclass(frozen=True)
class FlagSyntax:
    """One engine's flag spelling rules."""

    #: alias → canonical spelling (both with their dashes)
    aliases: Mapping[str, str] = field(default_factory=dict)
    #: fold ``--a_b`` to ``--a-b`` (vLLM's parser accepts both)
    underscores_are_dashes: bool = False
    #: flags that may be given several times, each occurrence adding values
    repeatable: frozenset[str] = frozenset()

    def canonical(self, flag: str) -> str:
        """The engine's one spelling of ``flag`` (``--flag=value`` is not accepted here)."""
        if not is_flag(flag):
            raise ConfigError(f"{flag!r} is not a flag (flags start with - or --)")
        name = flag
        if self.underscores_are_dashes and name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        return self.aliases.get(name, self.aliases.get(flag, name))


@dataclass(frozen=True)
class ParsedArgs:
    """An argv tail as positionals (tokens before the first flag) and ordered flags."""

    positionals: tuple[str, ...]
    flags: Mapping[str, tuple[str, ...]]

    def __contains__(self, flag: object) -> bool:
        return flag in self.flags

    def get(self, flag: str) -> tuple[str, ...] | None:
        return self.flags.get(flag)


def parse(argv: Sequence[str], syntax: FlagSyntax = FlagSyntax()) -> ParsedArgs:
    """Parse an argv tail into canonical flags (see the module docstring for the rules)."""
    positionals: list[str] = []
    flags: dict[str, tuple[str, ...]] = {}
    current: str | None = None
    values: list[str] = []

    def close() -> None:
        if current is None:
            return
        if current in flags and current in syntax.repeatable:
            flags[current] = flags[current] + tuple(values)
        else:
            flags[current] = tuple(values)

    for token in argv:
        if is_flag(token):
            close()
            name, eq, value = token.partition("=")
            if eq and not name.startswith("--"):
                name, value, eq = token, "", ""  # short flags take no =value
            current = syntax.canonical(name)
            values = [value] if eq else []
        elif current is None:
            positionals.append(token)
        else:
            values.append(token)
    close()
    return ParsedArgs(tuple(positionals), flags)


def render(parsed: ParsedArgs, syntax: FlagSyntax = FlagSyntax()) -> list[str]:
    """Back to argv: canonical spellings, one ``--flag v`` per value for repeatable flags."""
    out = list(parsed.positionals)
    for name, values in parsed.flags.items():
        if name in syntax.repeatable and len(values) > 1:
            for v in values:
                out += _one(name, (v,))
        else:
            out += _one(name, values)
    return out


def _one(name: str, values: tuple[str, ...]) -> list[str]:
    if len(values) == 1 and is_flag(values[0]):
        if not name.startswith("--"):
            raise ConfigError(f"{name}: value {values[0]!r} looks like a flag")
        return [f"{name}={values[0]}"]  # keeps the round trip exact
    if any(is_flag(v) for v in values):
        raise ConfigError(
            f"{name}: values {list(values)!r} contain something that looks like a flag"
        )
    return [name, *values]


def _values(flag: str, value: FlagValue) -> tuple[str, ...] | None:
    if isinstance(value, bool):
        return () if value else None
    if isinstance(value, (str, int, float)):
        return (_text(value),)
    if isinstance(value, Sequence):
        return tuple(_text(v) for v in value)
    raise ConfigError(f"set {flag}: unsupported value {value!r}")


def _text(value: str | int | float) -> str:
    return value if isinstance(value, str) else repr(value)


def apply(
    argv: Sequence[str],
    syntax: FlagSyntax = FlagSyntax(),
    *,
    set: Mapping[str, FlagValue] | None = None,
    unset: Iterable[str] = (),
    missing_ok: bool = False,
) -> list[str]:
    """``argv`` with ``unset`` flags removed, then ``set`` flags replaced in place or appended.

    ``set`` values: ``True`` adds a bare boolean flag, ``False`` removes the flag, a sequence
    gives several values. Unsetting a flag that is not there is a ``ConfigError`` (a likely typo)
    unless ``missing_ok``. The result uses canonical spellings.
    """
    parsed = parse(argv, syntax)
    flags = dict(parsed.flags)
    for raw in unset:
        name = syntax.canonical(raw)
        if name in flags:
            del flags[name]
        elif not missing_ok:
            have = ", ".join(flags) or "none"
            raise ConfigError(f"unset {raw}: not in the args (flags there: {have})")
    for raw, value in (set or {}).items():
        name = syntax.canonical(raw)
        values = _values(raw, value)
        if values is None:
            flags.pop(name, None)
        else:
            flags[name] = values  # keeps its position when it was already there
    return render(ParsedArgs(parsed.positionals, flags), syntax)


@dataclass(frozen=True)
class Change:
    """One difference between two argv tails; ``old``/``new`` are None when absent."""

    flag: str
    kind: Literal["added", "removed", "changed"]
    old: tuple[str, ...] | None
    new: tuple[str, ...] | None

    def __str__(self) -> str:
        def show(v: tuple[str, ...] | None) -> str:
            return " ".join(v) if v else "(on)"

        if self.kind == "added":
            return f"+ {self.flag} {show(self.new)}".rstrip()
        if self.kind == "removed":
            return f"- {self.flag}"
        return f"~ {self.flag}: {show(self.old)} → {show(self.new)}"


def _same(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Equal values; numbers compare as numbers ("0.70" == "0.7")."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if not (fx == fy or (math.isnan(fx) and math.isnan(fy))):
            return False
    return True


def diff(a: Sequence[str], b: Sequence[str], syntax: FlagSyntax = FlagSyntax()) -> list[Change]:
    """Changes from argv ``a`` to argv ``b``: ``a``'s flags in order, then ``b``'s new ones."""
    pa, pb = parse(a, syntax), parse(b, syntax)
    out: list[Change] = []
    if pa.positionals != pb.positionals:
        out.append(Change("(positional)", "changed", pa.positionals, pb.positionals))
    for name, old in pa.flags.items():
        new = pb.flags.get(name)
        if new is None:
            out.append(Change(name, "removed", old, None))
        elif not _same(old, new):
            out.append(Change(name, "changed", old, new))
    for name, new in pb.flags.items():
        if name not in pa.flags:
            out.append(Change(name, "added", None, new))
    return out
