"""Importers: other tools' benchmark results in inferlab's data model.

``parse_file(path)`` recognizes the format by content (``detect``), then converts each run in
the file to an :class:`ImportedRun`: the tool's per-request data as ``RequestRecord``s (when the
file has it) and the tool's aggregates mapped to inferlab names and units, with every
conversion by formula written in ``notes``. Unknown or damaged input raises ``ConfigError``
naming the file (and line) and the reason; nothing is returned partially.

Formats live in :data:`FORMATS`, one module each; adding a tool is adding a module and a
registry entry.
"""

from __future__ import annotations

from pathlib import Path

from inferlab.errors import ConfigError
from inferlab.store.imports import aiperf, guidellm, sglang, vllm
from inferlab.store.imports._common import Format, ImportedRun
from inferlab.store.imports.content import Content, load_content

__all__ = ["FORMATS", "Format", "ImportedRun", "detect", "parse_file"]

#: format name → format (sniffed in this order; the first that recognizes the content wins)
FORMATS: dict[str, Format] = {
    f.name: f for f in (sglang.FORMAT, vllm.FORMAT, guidellm.FORMAT, aiperf.FORMAT)
}


def _detect(c: Content) -> str:
    for name, fmt in FORMATS.items():
        if fmt.sniff(c):
            return name
    expected = "; ".join(f.expects for f in FORMATS.values())
    first = c.docs[0][1]
    got = (
        "an object with fields " + ", ".join(repr(k) for k in list(first)[:8])
        if isinstance(first, dict)
        else f"a JSON {type(first).__name__}"
    )
    raise ConfigError(
        f"{c.path}: not a benchmark result inferlab can import (found {got}); expected one of: "
        f"{expected}"
    )


def detect(path: Path) -> str:
    """The format of ``path``, recognized by its content (a key of :data:`FORMATS`)."""
    return _detect(load_content(Path(path)))


def parse_file(path: Path) -> list[ImportedRun]:
    """Every run in ``path`` (one file can hold several: sglang JSONL, GuideLLM sweeps)."""
    c = load_content(Path(path))
    runs = FORMATS[_detect(c)].parse(c)
    if not runs:
        raise ConfigError(f"{path}: holds no benchmark run")
    return runs
