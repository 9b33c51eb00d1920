"""A report section: its type, the builder's signature, and Markdown-safe text.

A builder reads the store and returns a ``Section`` (or ``None`` when the campaign has nothing
of its kind). Bodies are rendered by the builder and must already be escaped: Markdown for
``markdown``, an HTML fragment (no script, no external reference) for ``html``."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from inferlab.store import Store

__all__ = ["Section", "SectionBuilder", "md_text", "table"]


@dataclass(frozen=True)
class Section:
    """One report section: an anchor key, a title, and its body in both formats."""

    key: str
    title: str
    markdown: str
    html: str


SectionBuilder = Callable[[Store, str], "Section | None"]


def md_text(text: object) -> str:
    """Text from the store or a server, safe in a Markdown table cell and against raw HTML:
    ``<``, ``>`` and ``&`` as entities, ``|``, ``[`` and ``]`` escaped (no link can form),
    newlines as ``<br>``."""
    return re.sub(r"([|\[\]])", r"\\\1", escape(str(text), quote=False)).replace("\n", "<br>")


def table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> tuple[list[str], str]:
    """``rows`` under ``head`` as Markdown lines and as an HTML table (both escaped)."""
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return md, f"<table><tr>{th}</tr>{trs}</table>"
