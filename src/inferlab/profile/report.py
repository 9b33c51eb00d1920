"""The report section "profile": every stored profile of a campaign (``inferlab profile
--campaign``), as its headline, category table, top kernels, occupancy and Amdahl bounds."""

from __future__ import annotations

from html import escape
from typing import Any

from inferlab.report.sections import Section, register_section
from inferlab.report.sections import md_text as _md
from inferlab.store import Store

from .render import (
    amdahl_sentences,
    category_rows,
    headline,
    kernel_rows,
    occupancy_sentence,
)

__all__ = ["profile_section"]

_CAT_COLS = ["category", "ms", "share", "count", "mean µs", "ms/step", "≤ if 2×", "≤ if free"]
_K_COLS = ["kernel", "category", "ms", "share", "count", "mean µs", "≤ if free"]
TOP = 10


def _md_table(cols: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_md(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    return [*out, *("| " + " | ".join(_md(x) for x in r) + " |" for r in rows), ""]


def _html_table(cols: list[str], rows: list[list[str]]) -> str:
    head = "<tr>" + "".join(f"<th>{escape(c)}</th>" for c in cols) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table>{head}{body}</table>"


def _one(name: str, p: dict[str, Any]) -> tuple[list[str], list[str]]:
    title = f"{name}: {p['segment']}"
    sentences = [*headline(p), occupancy_sentence(p), *amdahl_sentences(p)]
    md = [f"### {_md(title)}", "", *(f"- {_md(s)}" for s in sentences), ""]
    md += _md_table(_CAT_COLS, category_rows(p))
    md += _md_table(_K_COLS, kernel_rows(p, TOP))
    html = [f"<h3>{escape(title)}</h3>", "<ul>"]
    html += [f"<li>{escape(s)}</li>" for s in sentences]
    html += [
        "</ul>",
        _html_table(_CAT_COLS, category_rows(p)),
        _html_table(_K_COLS, kernel_rows(p, TOP)),
    ]
    return md, html


@register_section("profile")
def profile_section(store: Store, campaign: str) -> Section | None:
    """Every profile stored under ``campaign``, oldest first; ``None`` when it has none."""
    rows = store.analyses("profile", campaign=campaign)
    if not rows:
        return None
    md: list[str] = [
        "Shares are of the segment's kernel time; ≤ bounds are Amdahl's law on the whole step "
        "(docs/profile.md).",
        "",
    ]
    html: list[str] = [
        "<p class=\"muted\">Shares are of the segment's kernel time; ≤ bounds are Amdahl's law "
        "on the whole step (docs/profile.md).</p>"
    ]
    for r in rows:
        m, h = _one(str(r["name"]), r["data"])
        md += m
        html += h
    return Section("profile", "Where the GPU time goes", "\n".join(md), "\n".join(html))
