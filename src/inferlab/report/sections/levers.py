"""The report sections "What to try next" (each config's levers, ranked by ceiling) and
"Predictions" (each stored prediction next to what was measured), from ``inferlab.levers``.
Both read the store only; the predictions are stored by ``inferlab levers`` and ``run``."""

from __future__ import annotations

from html import escape

from inferlab.errors import ConfigError
from inferlab.levers import NOTHING_TO_RANK, Decision, decide
from inferlab.levers.render import (
    PREDICTION_COLUMNS,
    SIM_NOTE,
    config_title,
    lever_details,
    prediction_cells,
)
from inferlab.report.sections.base import Section, md_text
from inferlab.store import Store

__all__ = ["levers_section", "predictions_section"]

INTRO = (
    "Ceilings are TPOT speed-ups (the config's TPOT / its TPOT with the lever): Amdahl's law on "
    "the decode step's share in the profile at each load point, or the speculative-decoding "
    "band from the sweep; ranked by ceiling (docs/levers.md)."
)
PRED_INTRO = (
    "predicted: an Amdahl bound (≤) or a band, for the reference config's profile and sweep; "
    "measured: TPOT speed-up reference / config (median ratio, bootstrap 95% interval); made: "
    "when the prediction was stored (docs/levers.md)."
)


def _decide(store: Store, campaign: str, check: bool) -> Decision | None:
    try:
        return decide(store, campaign, check=check)
    except ConfigError as exc:
        if str(exc) == NOTHING_TO_RANK:
            return None
        raise


def _intro(d: Decision, text: str) -> tuple[list[str], list[str]]:
    md = [f"**{md_text(SIM_NOTE)}**", ""] if d.simulated else []
    html = [f'<p class="sim">{escape(SIM_NOTE)}</p>'] if d.simulated else []
    return [*md, f"_{md_text(text)}_", ""], [*html, f'<p class="def">{escape(text)}</p>']


def levers_section(store: Store, campaign: str) -> Section | None:
    """Each config's levers, ranked; None when the campaign has no profile and no sweep."""
    d = _decide(store, campaign, check=False)
    if d is None or not d.levers:
        return None
    md, html = _intro(d, INTRO)
    for name, levers in d.levers.items():
        title = f"Levers for {config_title(d, name)}"
        md += [f"### {md_text(title)}", ""]
        html += [f"<h3>{escape(title)}</h3>", "<ol>"]
        for i, lv in enumerate(levers, 1):
            md.append(f"{i}. {md_text(lv.summary)}")
            md += [f"    - {md_text(x)}" for x in lever_details(lv)]
            html.append(f"<li>{escape(lv.summary)}<ul>")
            html += [f'<li class="muted">{escape(x)}</li>' for x in lever_details(lv)]
            html.append("</ul></li>")
        md.append("")
        html.append("</ol>")
    return Section("levers", "What to try next", "\n".join(md), "\n".join(html))


def predictions_section(store: Store, campaign: str) -> Section | None:
    """Predicted vs measured for configs whose change a lever explains; None when none."""
    d = _decide(store, campaign, check=True)
    if d is None or not (d.predictions or d.notes):
        return None
    md, html = _intro(d, PRED_INTRO)
    if d.predictions:
        md += [
            "| " + " | ".join(PREDICTION_COLUMNS) + " |",
            "|" + "---|" * len(PREDICTION_COLUMNS),
        ]
        md += [
            "| " + " | ".join(md_text(x) for x in prediction_cells(r)) + " |" for r in d.predictions
        ]
        md.append("")
        html.append("<table><tr>" + "".join(f"<th>{escape(c)}</th>" for c in PREDICTION_COLUMNS))
        html.append("</tr>")
        for r in d.predictions:
            cells = prediction_cells(r)
            cls = ' class="fail"' if r.verdict == "above" else ""
            html.append(
                "<tr>"
                + "".join(
                    f"<td{cls if i == 5 else ''}>{escape(x)}</td>" for i, x in enumerate(cells)
                )
                + "</tr>"
            )
        html.append("</table>")
    if d.notes:
        md += ["Not predicted:", "", *(f"- {md_text(n)}" for n in d.notes), ""]
        html += ["<p>Not predicted:</p><ul>", *(f"<li>{escape(n)}</li>" for n in d.notes)]
        html.append("</ul>")
    return Section("predictions", "Predictions", "\n".join(md), "\n".join(html))
