"""The campaign report as one self-contained HTML page: inline CSS and SVG, no script."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from inferlab.config.pattern import closed_concurrency
from inferlab.report.agreement import AGREEMENT_NOTE, agreement_table
from inferlab.report.comparison import Comparison
from inferlab.report.data import ENV_KEYS, SERVER_KEYS, Quantiles, Report
from inferlab.report.definitions import DEFINITIONS
from inferlab.report.interleave import (
    LAUNCH_NOTE,
    PASSES_HEAD,
    PASSES_NOTE,
    launch_title,
    passes_title,
)
from inferlab.report.page import SIM_BANNER, cell_parts, quality_rows, server_runs, value_text
from inferlab.report.recheck import RECHECK_HEAD, RECHECK_NOTE, recheck_rows, recheck_title
from inferlab.report.safe import show_controls
from inferlab.report.svg import Box, Series, box_chart, line_chart
from inferlab.report.verdicts import claim_class, stop_text
from inferlab.stats.metrics import METRICS, listed
from inferlab.stats.recheck import RecheckPoint

__all__ = ["render_html"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
color:#1d2330;margin:0;background:#f6f7f9}
main{max-width:1200px;margin:0 auto;padding:20px 28px 60px;background:#fff}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:19px;margin:28px 0 8px;
border-bottom:1px solid #dde1e7;padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
.sim{background:#fff3cd;border:2px solid #d4a017;color:#5c4400;padding:10px 14px;
font-weight:600;border-radius:6px;margin:10px 0}
.muted,.def{color:#5a6472}.def{font-size:12.5px;margin:4px 0 8px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #dde1e7;padding:4px 8px;vertical-align:top}
th{background:#f0f2f5;text-align:left}td.n{text-align:right;white-space:nowrap;
font-variant-numeric:tabular-nums}
.better{color:#0a7a32;font-weight:600}.worse{color:#b42318;font-weight:600}
.noise{color:#6b7280}.ratio{color:#374151;font-size:12px;display:block}
.pass{color:#0a7a32;font-weight:600}.fail{color:#b42318;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{background:#fff;border:1px solid #e5e7eb;border-radius:4px;max-width:100%;height:auto}
svg .ct{font-size:13px;font-weight:600}svg .al{font-size:12px;fill:#374151}
svg .tk{font-size:11px;fill:#4b5563}svg .lg{font-size:12px}
svg .grid{stroke:#eceef1}svg .axis{stroke:#6b7280}
pre{background:#111827;color:#e5e7eb;padding:10px 12px;overflow-x:auto;font-size:12px;
border-radius:4px}code{font-size:12.5px;background:#f0f2f5;padding:1px 4px;border-radius:3px}
.fail-box{border-left:4px solid #b42318;padding:2px 12px;margin:10px 0;background:#fdf3f2}
ul{margin:4px 0 10px;padding-left:22px}dl.defs dt{font-weight:600;margin-top:6px}
dl.defs dd{margin-left:16px;color:#374151}
"""


def _h(text: object) -> str:
    return escape(str(text))


def render_html(report: Report) -> str:
    """One self-contained HTML page: inline CSS and SVG, no script, nothing fetched."""
    title = f"inferlab report: {report.campaign}" + (" (SIMULATED)" if report.simulated else "")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{_h(title)}</title><style>{_CSS}</style></head><body><main>",
        f"<h1>Campaign report: {_h(report.campaign)}</h1>",
    ]
    if report.simulated:
        out.append(f'<div class="sim" role="alert">{_h(SIM_BANNER)}</div>')
    out.append(
        '<p class="muted">Built from the store only: re-run <code>inferlab report</code> to '
        'rebuild it without measuring. Every number links to its <a href="#definitions">'
        "definition</a> (docs/metrics.md, docs/compare.md).</p>"
    )
    for part in (_html_verdicts, _html_charts, _html_checks, _html_server, _html_configs):
        out += part(report)
    for sec in report.sections:
        out += [f'<h2 id="{_h(sec.key)}">{_h(sec.title)}</h2>', sec.html]
    out += _html_quality(report)
    out += ['<h2 id="definitions">Definitions</h2><dl class="defs">']
    for key, text in DEFINITIONS.items():
        out.append(f'<dt id="def-{key}">{_h(key)}</dt><dd>{_h(text)}</dd>')
    out += ["</dl></main></body></html>", ""]
    return show_controls("\n".join(out))


def _def(key: str) -> str:
    return f'<p class="def">{_h(DEFINITIONS[key])} <a href="#def-{key}">[def]</a></p>'


def _html_verdicts(report: Report) -> list[str]:
    out = ['<h2 id="verdicts">Verdicts</h2>']
    c = report.comparison
    if c is None:
        return [*out, f"<p>No verdict table: {_h(report.no_comparison or 'no runs')}.</p>"]
    out.append(f"<p>Baseline: <b>{_h(c.baseline)}</b>.</p>")
    out.append(_def("ratio"))
    for metric in listed(lambda m: m.primary):
        m = metric.name
        out += [
            f"<h3>{_h(metric.title)} ({_h(metric.unit)})</h3>",
            _def(m),
            "<table><tr><th>config</th>",
        ]
        out += [f"<th>{_h(lb)}</th>" for lb in c.labels]
        out.append("</tr>")
        for cfg in c.configs:
            mark = " (baseline)" if cfg == c.baseline else ""
            row = [f"<tr><th>{_h(cfg)}{mark}</th>"]
            for lb in c.labels:
                value, ratio, claim, says = cell_parts(c, cfg, lb, m)
                inner = _h(value)
                if ratio or says:
                    inner += (
                        f'<span class="ratio">{_h(ratio)} '
                        f'<span class="{claim_class(claim)}">{_h(says)}</span>'
                        "</span>"
                    )
                row.append(f'<td class="n">{inner}</td>')
            out.append("".join(row) + "</tr>")
        out.append("</table>")
    if c.forced:
        out.append("<p><b>Not comparable (compared anyway):</b></p><ul>")
        out += [
            f"<li>{_h(cfg)}: "
            + ", ".join(_h(f"{d.field} {d.a!r} vs {d.b!r}") for d in ds)
            + "</li>"
            for cfg, ds in c.differences.items()
            if ds
        ]
        out.append("</ul>")
    out += ["<h3>Saturation</h3>", _def("saturation"), "<ul>"]
    if c.saturation:
        out += [f"<li><b>{_h(cfg)}</b>: {_h(s.sentence)}</li>" for cfg, s in c.saturation.items()]
    else:
        out.append("<li>fewer than two concurrency points: no saturation estimate</li>")
    out.append("</ul>")
    return out + _html_recheck(c.rechecks) + _html_passes(c) + _html_launch(c)


def _html_launch(c: Comparison) -> list[str]:
    """The launch-to-launch spread (nothing when no config was launched twice)."""
    lines = c.launch_lines()
    if not lines:
        return []
    out = [f"<h3>{_h(launch_title(c.launch_simulated))}</h3>", f"<p>{_h(LAUNCH_NOTE)}</p>"]
    return [*out, "<ul>", *(f"<li>{_h(x)}</li>" for x in lines), "</ul>"]


def _html_passes(c: Comparison) -> list[str]:
    """The baseline's interleaved passes (nothing when it was not interleaved)."""
    if not c.passes:
        return []
    title = passes_title(c.passes, c.passes_simulated)
    out = [f"<h3>{_h(title)}</h3>", f"<p>{_h(PASSES_NOTE)}</p>", "<table><tr>"]
    out += [f"<th>{_h(x)}</th>" for x in PASSES_HEAD]
    out.append("</tr>")
    out += ["<tr>" + "".join(f"<td>{_h(x)}</td>" for x in row) + "</tr>" for row in c.passes]
    return [*out, "</table>"]


def _html_recheck(rechecks: Sequence[RecheckPoint]) -> list[str]:
    """The baseline recheck table (nothing when the baseline was not rechecked)."""
    if not rechecks:
        return []
    out = [f"<h3>{_h(recheck_title(rechecks))}</h3>", f"<p>{_h(RECHECK_NOTE)}</p>", "<table><tr>"]
    out += [f"<th>{_h(x)}</th>" for x in RECHECK_HEAD]
    out.append("</tr>")
    for row in recheck_rows(rechecks):
        out.append("<tr>" + "".join(f"<td>{_h(x)}</td>" for x in row) + "</tr>")
    out.append("</table><ul>")
    return [*out, *(f"<li>{_h(p.line())}</li>" for p in rechecks), "</ul>"]


def _boxes(dist: dict[tuple[str, str], Quantiles], order: Sequence[str]) -> list[Box]:
    def label_key(lb: str) -> tuple[int, float, str]:
        c = closed_concurrency(lb)
        return (0, float(c), lb) if c is not None else (1, 0.0, lb)

    keys = sorted(
        dist,
        key=lambda k: (
            label_key(k[1]),
            order.index(k[0]) if k[0] in order else len(order),
        ),
    )
    return [Box(lb, cfg, q) for cfg, lb in keys for q in [dist[(cfg, lb)]]]


def _axis(name: str) -> str:
    """A metric as an axis label: "median TPOT (ms)"."""
    return f"{METRICS[name].title} ({METRICS[name].unit})"


def _html_charts(report: Report) -> list[str]:
    out = ['<h2 id="charts">Throughput, latency and concurrency</h2>']
    if report.curves:
        tput = [Series(cv.config, [(c, t) for c, t, _ in cv.points]) for cv in report.curves]
        tpot = [Series(cv.config, [(c, p) for c, _, p in cv.points]) for cv in report.curves]
        out += [
            '<div class="charts">',
            line_chart(
                tput,
                title="Output throughput vs concurrency",
                x_label="concurrency (requests in flight)",
                y_label=_axis("output_tok_s"),
            ),
            line_chart(
                tpot,
                title="Median TPOT vs concurrency",
                x_label="concurrency (requests in flight)",
                y_label=_axis("tpot_ms"),
            ),
            "</div>",
            _def("output_tok_s"),
            _def("tpot_ms"),
        ]
    else:
        out.append("<p>No concurrency sweep: no throughput or TPOT curves.</p>")
    order = report.comparison.configs if report.comparison is not None else []
    if report.ttft or report.itl:
        out += [
            '<div class="charts">',
            box_chart(
                _boxes(report.ttft, order),
                title="TTFT distribution per load point",
                x_label="load point",
                y_label="TTFT (ms)",
            ),
            box_chart(
                _boxes(report.itl, order),
                title="ITL distribution per load point",
                x_label="load point",
                y_label="ITL (ms)",
            ),
            "</div>",
            '<p class="def">Boxes: p25–p75 with the median as a bar; whiskers p5–p95; '
            "dot p99; requests (TTFT) or token gaps (ITL) pooled over trials.</p>",
            _def("ttft_ms"),
            _def("itl_ms"),
        ]
    return out


def _html_checks(report: Report) -> list[str]:
    out = ['<h2 id="verification">Verification</h2>']
    if report.verifications:
        out.append("<table><tr><th>config</th><th>check</th><th>result</th><th>detail</th></tr>")
        for v in report.verifications:
            res = '<span class="pass">pass</span>' if v.passed else '<span class="fail">FAIL</span>'
            out.append(
                f"<tr><td>{_h(v.config)}</td><td>{_h(v.kind)}</td><td>{res}</td>"
                f"<td>{_h(v.message)}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append("<p>No verification results stored for this campaign.</p>")
    if report.agreement:
        out += [
            "<h3>Distribution agreement with the baseline</h3>",
            f'<p class="def">{_h(AGREEMENT_NOTE)}</p>',
            agreement_table(report.agreement)[1],
        ]
    if report.launch_failures:
        out.append('<h2 id="launch-failures">Launch and runtime failures</h2>')
        for f in report.launch_failures:
            out += [
                '<div class="fail-box">',
                f'<h3>{_h(f.config)}: <span class="fail">{_h(f.kind)}</span></h3>',
                f"<p>{_h(f.message)}</p>",
                f"<p><b>Remedy:</b> {_h(f.remedy or '–')}</p>",
                f'<p class="muted">log: <code>{_h(f.log_path or "–")}</code></p>',
                "<pre>" + "\n".join(_h(line) for line in f.tail) + "</pre>",
                "</div>",
            ]
    return out


def _html_server(report: Report) -> list[str]:
    out = ['<h2 id="server">Server metrics</h2>']
    rows = server_runs(report)
    if not rows:
        return [
            *out,
            "<p>No server metrics were scraped (the engine exposes no /metrics, or scraping "
            "was off).</p>",
        ]
    keys = [k for k in SERVER_KEYS if any(k in r[3] for r in rows)]
    out += [_def("server"), "<table><tr><th>config</th><th>load</th><th>trial</th>"]
    out += [f"<th>{_h(SERVER_KEYS[k])}</th>" for k in keys]
    out.append("</tr>")
    for cfg, lb, trial, vals in rows:
        cells = "".join(
            f'<td class="n">{_h(value_text(vals[k])) if k in vals else "–"}</td>' for k in keys
        )
        out.append(f'<tr><td>{_h(cfg)}</td><td>{_h(lb)}</td><td class="n">{trial}</td>{cells}</tr>')
    out.append("</table>")
    return out


def _html_configs(report: Report) -> list[str]:
    out = [
        '<h2 id="configs">Configs and environment</h2>',
        "<table><tr><th>config</th><th>engine / model</th><th>argv</th><th>env</th>"
        "<th>vs baseline</th><th>environment</th></tr>",
    ]
    for cfg in report.configs:
        base = " (baseline)" if cfg.name == report.baseline else ""
        if cfg.name == report.baseline:
            changes = "–"
        else:
            lines = report.argv_diff.get(cfg.name, []) + report.env_diff.get(cfg.name, [])
            changes = "<br>".join(f"<code>{_h(x)}</code>" for x in lines) or "no change"
        envs = "<br>".join(
            ", ".join(f"{_h(k)}: {_h(e[k])}" for k in ENV_KEYS if k in e)
            for e in report.environments.get(cfg.name, [])
        )
        env = "<br>".join(f"<code>{_h(k)}={_h(v)}</code>" for k, v in cfg.env.items())
        out.append(
            f'<tr><td><b>{_h(cfg.name)}</b>{base}<br><span class="muted">{_h(cfg.hash)}'
            f"</span></td><td>{_h(cfg.engine or '–')}<br>{_h(cfg.model or '–')}</td>"
            f"<td><code>{_h(' '.join(cfg.argv)) or '(none)'}</code></td><td>{env or '–'}</td>"
            f"<td>{changes}</td><td>{envs or '–'}</td></tr>"
        )
    out.append("</table>")
    return out


def _html_quality(report: Report) -> list[str]:
    out = [
        f"<p><b>{_h(r.config)} {_h(r.label)} trial {r.trial}</b> stopped: "
        f"{_h(stop_text(r.stop))}</p>"
        for r in report.runs
        if r.stop
    ]
    out.append('<h2 id="quality">Measurement-quality warnings</h2>')
    rows = quality_rows(report)
    if not rows:
        return [*out, "<p>None.</p>"]
    out.append(
        "<table><tr><th>config</th><th>load</th><th>kind</th><th>warning</th><th>fix</th></tr>"
    )
    out += [
        f"<tr><td>{_h(cfg)}</td><td>{_h(lb)}</td><td>{_h(kind)}</td><td>{_h(msg)}</td>"
        f"<td>{_h(fix)}</td></tr>"
        for cfg, lb, kind, msg, fix in rows
    ]
    out.append("</table>")
    return out
