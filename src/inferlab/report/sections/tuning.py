"""The report section "FP8 GEMM tuning": the latest stored tune run of each shape of a
campaign, as the per-M table of ``inferlab tune show`` (definitions: ``inferlab.tune.report``)."""

from __future__ import annotations

from html import escape

from inferlab.report.sections.base import Section
from inferlab.report.sections.base import md_text as _md
from inferlab.store import Store
from inferlab.store.models import TuneBody
from inferlab.tune.report import COLUMNS, num, table_rows

__all__ = ["tuning_section"]


_DEFINITION = (
    "Median kernel times (CUDA-graph replay over rotating inputs larger than L2). Tuned: the best "
    "config the engine can run. TFLOP/s = 2MNK / tuned time; GB/s = (A + B + C + scales bytes) / "
    "tuned time; % roof = max(2MNK / fp8 peak, bytes / copy bandwidth) / tuned time, ceilings "
    "measured at the start of the run. Split-K configs run only in the inferlab kernel and are "
    "never written to engine files."
)


def tuning_section(store: Store, campaign: str) -> Section | None:
    """W8A8 block-FP8 GEMM tuning results of ``campaign`` (latest run per shape)."""
    rows = store.analyses.of(TuneBody, "tune", campaign)
    if not rows:
        return None
    latest = {r.name: r for r in rows}
    md: list[str] = [_md(_DEFINITION), ""]
    html: list[str] = [f'<p class="muted">{escape(_DEFINITION)}</p>']
    for name, r in latest.items():
        d = r.data
        ceil = d.ceilings
        head = (
            f"{name} on {d.device_name} ({d.engine}); ceilings: copy "
            f"{num(ceil.get('copy_gbps'), 0)} GB/s, fp8 {num(ceil.get('fp8_tflops'), 0)} TFLOP/s; "
            f"stored {r.created_at}"
        )
        md += [f"### {_md(head)}", ""]
        md.append("| " + " | ".join(COLUMNS) + " |")
        md.append("|" + "---|" * len(COLUMNS))
        html.append(f"<h3>{escape(head)}</h3>")
        html.append("<table><thead><tr>" + "".join(f"<th>{escape(c)}</th>" for c in COLUMNS))
        html.append("</tr></thead><tbody>")
        for row in table_rows(d.cells):
            md.append("| " + " | ".join(_md(x) for x in row) + " |")
            html.append("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in row) + "</tr>")
        html.append("</tbody></table>")
        md.append("")
        for f in d.files:
            line = f"wrote {f.get('path')} (M added {f.get('added')}, replaced {f.get('replaced')})"
            md.append(f"- {_md(line)}")
            html.append(f"<p>{escape(line)}</p>")
        for w in d.warnings:
            md.append(f"- warning: {_md(w)}")
            html.append(f'<p class="warn">warning: {escape(w)}</p>')
        md.append("")
    return Section("tuning", "FP8 GEMM tuning", "\n".join(md), "\n".join(html))
