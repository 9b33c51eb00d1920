"""The flags an engine offers, read from its ``--help``, grouped into families by regex.

A family (speculative decoding, FP8 / quantization, CUDA graphs / compilation) is one registry
entry: a regex on the flag name and, optionally, one on its choices (``--kv-cache-dtype
{auto,fp8,...}`` is an FP8 flag because of a choice)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from inferlab.recon.engines import ReconEngine
from inferlab.recon.probe import run_python

__all__ = ["FLAG_FAMILIES", "FlagFamily", "FlagInfo", "HelpResult", "classify", "parse_help"]


@dataclass(frozen=True)
class FlagFamily:
    """Flags whose name matches ``name_re`` (or whose choices match ``choices_re``)."""

    key: str
    title: str
    name_re: re.Pattern[str]
    choices_re: re.Pattern[str] | None = None

    def matches(self, flag: FlagInfo) -> bool:
        if self.name_re.search(flag.name):
            return True
        return bool(self.choices_re and any(self.choices_re.search(c) for c in flag.choices))


FLAG_FAMILIES: dict[str, FlagFamily] = {}


def _family(f: FlagFamily) -> None:
    FLAG_FAMILIES[f.key] = f


_family(
    FlagFamily(
        "speculative",
        "speculative decoding",
        re.compile(
            r"speculative|^--spec-|-spec-decode|\b(?:draft|eagle|medusa|mtp|ngram|lookahead)"
        ),
    )
)
_family(
    FlagFamily(
        "fp8",
        "FP8 / quantization",
        re.compile(r"fp8|fp4|quant|w8a8|kv-cache-dtype|deep-?gemm"),
        re.compile(r"^fp8"),
    )
)
_family(
    FlagFamily(
        "cuda_graph",
        "CUDA graphs / compilation",
        re.compile(
            r"cuda-?graph|enforce-eager|compilation-config|torch-compile|piecewise|^--compile$"
        ),
    )
)


@dataclass(frozen=True)
class FlagInfo:
    """One flag: its name, its choices when ``--help`` lists them, and whether a ``--no-``
    form exists."""

    name: str
    choices: tuple[str, ...] = ()
    negatable: bool = False


@dataclass
class HelpResult:
    """What ``--help`` gave: the command, every flag, the families, timing and failures."""

    argv: list[str]
    flags: list[FlagInfo] = field(default_factory=list)
    families: dict[str, list[FlagInfo]] = field(default_factory=dict)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


# a flag where an option starts: "[--x", "| --no-x", "  --x" at a line start, "-h, --help",
# click's "--x / --no-x"
_FLAG = re.compile(
    r"(?:^[ \t]*|\[|\|[ \t]*|,[ \t]*|[ \t]/[ \t]+)(--[A-Za-z0-9][A-Za-z0-9_-]*)"
    r"(?:[ \t]+\{([^{}]*)\})?",
    re.MULTILINE,
)


def parse_help(text: str) -> list[FlagInfo]:
    """Every ``--flag`` of an argparse (or click) help text, in first-seen order; ``--no-x``
    folds into ``--x`` (``negatable``) when both exist."""
    seen: dict[str, tuple[str, ...]] = {}
    for m in _FLAG.finditer(text):
        name, choices = m.group(1), m.group(2)
        got = tuple(c.strip() for c in choices.split(",") if c.strip()) if choices else ()
        if name not in seen or (got and not seen[name]):
            seen[name] = got
    out: list[FlagInfo] = []
    for name, choices in seen.items():
        if name.startswith("--no-") and "--" + name[5:] in seen:
            continue
        out.append(FlagInfo(name, choices, negatable="--no-" + name[2:] in seen))
    return out


def classify(flags: Iterable[FlagInfo]) -> dict[str, list[FlagInfo]]:
    """Flags per family key (every family present, possibly empty)."""
    fl = list(flags)
    return {k: [f for f in fl if fam.matches(f)] for k, fam in FLAG_FAMILIES.items()}


def engine_help(engine: ReconEngine, python: str, timeout_s: float = 120.0) -> HelpResult:
    """Run the engine's ``--help`` commands in turn until one lists flags; failures recorded."""
    errors: list[str] = []
    t0 = time.monotonic()
    for tail in engine.help_argvs:
        argv = [python, *tail]
        try:
            proc = run_python(argv, timeout_s)
        except subprocess.TimeoutExpired:
            errors.append(f"{' '.join(tail)}: no answer within {timeout_s:.0f} s")
            continue
        except OSError as exc:
            errors.append(f"{' '.join(tail)}: {exc}")
            continue
        flags = parse_help(proc.stdout)
        if proc.returncode == 0 and flags:
            return HelpResult(argv, flags, classify(flags), time.monotonic() - t0, errors)
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        errors.append(f"{' '.join(tail)}: exit {proc.returncode}, {last[0][:200]}")
    return HelpResult([], seconds=time.monotonic() - t0, errors=errors)
