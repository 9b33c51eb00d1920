"""The report section "Search": what ``inferlab optimize`` stored for a campaign. Every trial
(its values, why it was chosen, its A/B verdict against the incumbent with the ratio and
interval, its capacity at SLO where stored), the incumbent's path, the recommendation with its
evidence and launch command, each trial's bound next to its measured speed-up, and why the
search stopped. Reads the ``search-trial`` and ``search`` analyses only: every verdict and
number was decided when the search ran (``inferlab.search``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape
from typing import Any

from inferlab.config.search import SEARCH_KIND, STOPPED, TRIAL_KIND
from inferlab.report.sections.base import Section
from inferlab.report.sections.base import md_text as _md
from inferlab.store import Store
from inferlab.store.outcomes import SearchBody, TrialBody

__all__ = ["TRIAL_COLUMNS", "search_section", "trial_cells"]

TRIAL_COLUMNS = (
    "#",
    "config",
    "values",
    "chosen by",
    "verdict",
    "×ratio [95%]",
    "against",
    "capacity at SLO",
)
PRED_COLUMNS = ("trial", "changed", "predicted ≤", "measured TPOT speed-up [95%]", "check")
SIM = "SIMULATED: the reference engine's timing model, not a real engine."
NONE = "—"


def _x(v: Any) -> str:
    return f"×{float(v):.3f}" if isinstance(v, int | float) and math.isfinite(v) else "∞"


def _band(d: Mapping[str, object], spec: str) -> str:
    """`` [low, high]`` of a stored interval in format ``spec``; empty unless both are numbers."""
    lo, hi = d.get("low"), d.get("high")
    if isinstance(lo, int | float) and isinstance(hi, int | float):
        return f" [{lo:{spec}}, {hi:{spec}}]"
    return ""


def _ratio(d: Any) -> str:
    """``×1.060 [1.020, 1.100]`` from a stored A/B record; — when there is none."""
    if not isinstance(d, dict) or not isinstance(d.get("ratio"), int | float):
        return NONE
    return f"×{float(d['ratio']):.3f}{_band(d, '.3f')}"


def _capacity(r: dict[str, Any]) -> str:
    """Capacity at SLO as stored with the trial (a number, or its estimate and interval)."""
    c = r.get("capacity")
    if isinstance(c, int | float):
        return f"{c:g}"
    if isinstance(c, dict) and isinstance(c.get("estimate", c.get("value")), int | float):
        est = c.get("estimate", c.get("value"))
        return f"{est:g}{_band(c, 'g')}"
    return NONE


def _chosen(t: dict[str, Any]) -> str:
    """The sampler's step, and the bounds of the dimensions that had one when it was chosen."""
    bounds = t.get("bounds") or {}
    said = ", ".join(f"{k} ≤ {_x(v)}" for k, v in bounds.items() if v is not None)
    if bounds and not said:
        said = "none (no dimension had one)"
    return f"{t.get('chosen_by', '')}; bounds: {said}" if said else str(t.get("chosen_by", ""))


def trial_cells(t: dict[str, Any], metric: str) -> tuple[str, ...]:
    """One stored trial as the cells of ``TRIAL_COLUMNS``."""
    r = t.get("result") or {}
    values = ", ".join(f"{k}={v}" for k, v in (t.get("params") or {}).items())
    if r.get("status") == "failed":
        verdict = f"failed: {r.get('reason', '')}"
    elif r.get("verdict") == "undecided" and r.get("reason"):
        verdict = f"undecided: {r['reason']}"
    else:
        verdict = str(r.get("verdict") or r.get("status") or "")
    return (
        str(t.get("index", "")),
        str(t.get("name", "")),
        values,
        _chosen(t),
        verdict,
        _ratio((r.get("ab") or {}).get(metric)),
        str(t.get("against", "")),
        _capacity(r),
    )


class _Out:
    def __init__(self) -> None:
        self.md: list[str] = []
        self.html: list[str] = []

    def para(self, text: str, cls: str = "") -> None:
        self.md += [_md(text), ""]
        self.html.append(
            f'<p class="{cls}">{escape(text)}</p>' if cls else f"<p>{escape(text)}</p>"
        )

    def code(self, text: str) -> None:
        self.md += ["```", text, "```", ""]
        self.html.append(f"<pre>{escape(text)}</pre>")

    def table(self, head: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
        self.md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        self.md += ["| " + " | ".join(_md(c) for c in r) + " |" for r in rows]
        self.md.append("")
        th = "".join(f"<th>{escape(h)}</th>" for h in head)
        trs = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
        self.html.append(f"<table><tr>{th}</tr>{trs}</table>")

    def bullets(self, items: list[str]) -> None:
        if items:
            self.md += [f"- {_md(x)}" for x in items] + [""]
            self.html.append("<ul>" + "".join(f"<li>{escape(x)}</li>" for x in items) + "</ul>")

    def head(self, text: str) -> None:
        self.md += [f"### {_md(text)}", ""]
        self.html.append(f"<h3>{escape(text)}</h3>")


def _predicted(out: _Out, rows: list[dict[str, Any]]) -> None:
    out.head("Predicted against measured")
    out.para(
        "predicted: the Amdahl bound of the dimensions the trial changed against its incumbent "
        "(a TPOT speed-up; several: Amdahl on the sum of their fractions); measured: the A/B's "
        "TPOT speed-up, incumbent / trial, with its repeated 95% interval.",
        "muted",
    )
    cells: list[tuple[str, ...]] = []
    for p in rows:
        m = p.get("measured") or [math.nan] * 3
        bound = p.get("predicted")
        cells.append(
            (
                str(p.get("trial", "")),
                ", ".join(p.get("changed") or []) or "nothing",
                NONE if bound is None else _x(bound),
                f"×{m[0]:.3f} [{m[1]:.3f}, {m[2]:.3f}]",
                str(p.get("check", "")),
            )
        )
    out.table(PRED_COLUMNS, cells)


def _recommendation(out: _Out, s: dict[str, Any]) -> None:
    best = str(s.get("best", {}).get("name", s.get("baseline", "")))
    out.head("Recommendation")
    if best == s.get("baseline"):
        out.para(f"Nothing was shown better than the baseline {best} at {s.get('at')}.")
        return
    ev = [
        f"{e['name']} against {e['against']}: {_ratio(e)} on {s.get('metric')} (better)"
        for e in s.get("evidence") or []
    ]
    conf = s.get("confirmation") or {}
    if conf:  # the winner's interval is its confirmation's (search.confirm)
        lead = "Recommended" if conf.get("confirmed") else "Not recommended (the search's winner)"
        out.para(f"{lead}: {best}. {conf.get('sentence', '')}")
        if ev:
            out.para("Selected by: " + "; ".join(ev), "muted")
        if not conf.get("confirmed"):
            return
    else:
        out.para(f"{best}: " + "; ".join(ev) if ev else best)
    if s.get("snippet"):
        out.code(str(s["snippet"]))
    if s.get("command"):
        out.para("The command line that launches it:")
        out.code(str(s["command"]))


def search_section(store: Store, campaign: str) -> Section | None:
    """The campaign's search (its latest stored summary and every stored trial); None when no
    trial is stored."""
    trials = store.analyses.of(TrialBody, TRIAL_KIND, campaign)
    if not trials:
        return None
    summaries = store.analyses.of(SearchBody, SEARCH_KIND, campaign)
    s: dict[str, Any] = summaries[-1].data.to_json() if summaries else {}
    out = _Out()
    if s.get("simulated"):
        out.para(SIM, "sim")
    metric = str(s.get("metric") or s.get("objective") or "")
    if s:
        out.para(
            f"{s.get('objective')} at {s.get('at')}, baseline {s.get('baseline')}, "
            f"{s.get('sampler')} sampler, minimum effect {float(s.get('min_effect', 0)):.0%}; "
            f"×ratio = trial / incumbent on {metric} (sequential A/B, measured beside a fresh "
            "measurement of the incumbent)."
        )
        out.bullets([str(x) for x in s.get("dims") or []])
    else:
        out.para("The search has not stopped yet (no summary stored): its trials so far.")
    out.head("Trials")
    out.table(TRIAL_COLUMNS, [trial_cells(t.data.to_json(), metric) for t in trials])
    if s:
        out.para("Incumbent's path: " + " → ".join(str(n) for n in s.get("path") or []))
        stop = str(s.get("stop_text") or STOPPED.get(str(s.get("stopped")), s.get("stopped")))
        detail = f" ({s['stop_detail']})" if s.get("stop_detail") else ""
        out.para(f"Stopped: {stop}{detail}.")
        out.bullets([str(x) for x in s.get("refused") or []])
        _recommendation(out, s)
        if s.get("predicted"):
            _predicted(out, s["predicted"])
    return Section("search", "Search", "\n".join(out.md), "\n".join(out.html))
