"""Report sections contributed by other parts of inferlab (log findings, recon, profiles, tuning).

A module registers a builder with ``@register_section("key")``; the builder reads the store and
returns a ``Section`` (or ``None`` when the campaign has nothing of its kind). Bodies are
rendered by their owner and must already be escaped: Markdown for ``markdown``, an HTML fragment
(no script, no external reference) for ``html``. Builders run in ``SECTION_MODULES`` order."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from inferlab.store import Store

__all__ = [
    "SECTION_MODULES",
    "Section",
    "SectionBuilder",
    "build_sections",
    "md_text",
    "register_section",
]


@dataclass(frozen=True)
class Section:
    """One report section: an anchor key, a title, and its body in both formats."""

    key: str
    title: str
    markdown: str
    html: str


SectionBuilder = Callable[[Store, str], "Section | None"]

#: modules that register sections, imported (in this order) when a report is built
SECTION_MODULES: tuple[str, ...] = (
    "inferlab.tune.report",
    "inferlab.recon.report",
    "inferlab.profile.report",
    "inferlab.logs.report",
    "inferlab.report.levers",
    "inferlab.cluster.report",
)

_BUILDERS: dict[str, SectionBuilder] = {}


def md_text(text: object) -> str:
    """Text from the store or a server, safe in a Markdown table cell and against raw HTML:
    ``<``, ``>`` and ``&`` as entities, ``|``, ``[`` and ``]`` escaped (no link can form),
    newlines as ``<br>``."""
    return re.sub(r"([|\[\]])", r"\\\1", escape(str(text), quote=False)).replace("\n", "<br>")


def register_section(key: str) -> Callable[[SectionBuilder], SectionBuilder]:
    """Decorator: register ``fn(store, campaign) -> Section | None`` under ``key``."""

    def deco(fn: SectionBuilder) -> SectionBuilder:
        _BUILDERS[key] = fn
        return fn

    return deco


def build_sections(store: Store, campaign: str) -> list[Section]:
    """Every registered section that has something to show for ``campaign``."""
    for mod in SECTION_MODULES:
        importlib.import_module(mod)
    out: list[Section] = []
    for fn in _BUILDERS.values():
        sec = fn(store, campaign)
        if sec is not None:
            out.append(sec)
    return out
