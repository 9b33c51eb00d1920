"""The campaign report as Markdown: tables and sentences (the charts are in the HTML)."""

from __future__ import annotations

import re
from html import escape

from inferlab.report.agreement import AGREEMENT_NOTE, agreement_table
from inferlab.report.data import ENV_KEYS, SERVER_KEYS, Report
from inferlab.report.definitions import DEFINITIONS
from inferlab.report.interleave import launch_md, passes_md
from inferlab.report.page import SIM_BANNER, cell_parts, quality_rows, server_runs, value_text
from inferlab.report.recheck import recheck_md
from inferlab.report.safe import show_controls
from inferlab.report.verdicts import num, stop_text
from inferlab.stats.metrics import listed

__all__ = ["render_markdown"]


def _md(text: object) -> str:
    """Text from the store, safe in Markdown tables, against raw HTML and links."""
    return re.sub(r"([|\[\]])", r"\\\1", escape(str(text))).replace("\n", " ")


def render_markdown(report: Report) -> str:
    """The report as Markdown (tables and sentences; the charts are in the HTML)."""
    out = [f"# Campaign report: {_md(report.campaign)}", ""]
    if report.simulated:
        out += [f"> **{SIM_BANNER}**", ""]
    out += [
        "Built from the store only (re-run `inferlab report` to rebuild it); charts are in "
        "report.html. Metric definitions: docs/metrics.md.",
        "",
    ]
    for part in (_md_verdicts, _md_latency, _md_checks, _md_server, _md_configs):
        out += part(report)
    for sec in report.sections:
        out += [f"## {_md(sec.title)}", "", sec.markdown.rstrip(), ""]
    return show_controls("\n".join([*out, *_md_quality(report)]))


def _md_verdicts(report: Report) -> list[str]:
    """One table per headline metric, the forced differences, then saturation."""
    out = ["## Verdicts", ""]
    c = report.comparison
    if c is None:
        return [*out, f"No verdict table: {_md(report.no_comparison or 'no runs')}.", ""]
    out += [f"Baseline: **{_md(c.baseline)}**. {_md(DEFINITIONS['ratio'])}.", ""]
    for metric in listed(lambda m: m.primary):
        m = metric.name
        out += [
            f"### {metric.title} ({metric.unit})",
            "",
            f"_{_md(DEFINITIONS[m])}._",
            "",
            "| config | " + " | ".join(_md(lb) for lb in c.labels) + " |",
            "|---|" + "---:|" * len(c.labels),
        ]
        for cfg in c.configs:
            cells = []
            for lb in c.labels:
                value, ratio, _, says = cell_parts(c, cfg, lb, m)
                text = " ".join(x for x in (value, ratio, says) if x)
                cells.append(_md(text))
            out.append(f"| {_md(cfg)} | " + " | ".join(cells) + " |")
        out.append("")
    if c.forced:
        out += ["Not comparable (compared anyway):", ""]
        out += [
            f"- {_md(cfg)}: " + ", ".join(_md(f"{d.field} {d.a!r} vs {d.b!r}") for d in ds)
            for cfg, ds in c.differences.items()
            if ds
        ]
        out.append("")
    out += ["### Saturation", "", f"_{_md(DEFINITIONS['saturation'])}._", ""]
    if c.saturation:
        out += [f"- **{_md(cfg)}**: {_md(s.sentence)}" for cfg, s in c.saturation.items()]
    else:
        out.append("- fewer than two concurrency points: no saturation estimate")
    passes = passes_md(c.passes, c.passes_simulated, _md)
    launch = launch_md(c.launch_lines(), c.launch_simulated, _md)
    return [*out, *recheck_md(c.rechecks, _md), *passes, *launch, ""]


def _md_latency(report: Report) -> list[str]:
    """TTFT and ITL quantiles per config and load point; nothing when there are none."""
    if not (report.ttft or report.itl):
        return []
    out = [
        "## Latency distributions (ms)",
        "",
        f"_{_md(DEFINITIONS['ttft_ms'])}; {_md(DEFINITIONS['itl_ms'])}; pooled over trials._",
        "",
        "| config | load | metric | n | p5 | p25 | p50 | p75 | p95 | p99 |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, dist in (("TTFT", report.ttft), ("ITL", report.itl)):
        for (cfg, lb), q in dist.items():
            out.append(
                f"| {_md(cfg)} | {_md(lb)} | {name} | {q.n} | "
                + " | ".join(num(x, 2) for x in (q.p5, q.p25, q.p50, q.p75, q.p95, q.p99))
                + " |"
            )
    return [*out, ""]


def _md_quality(report: Report) -> list[str]:
    """How each adaptive point stopped, then every measurement-quality warning with its fix."""
    out: list[str] = []
    stops = [
        (r.config, f"{r.label} trial {r.trial}", stop_text(r.stop)) for r in report.runs if r.stop
    ]
    if stops:
        out += ["## How each point stopped", ""]
        out += [f"- {_md(cfg)} {_md(lb)}: {_md(text)}" for cfg, lb, text in stops] + [""]
    quality = quality_rows(report)
    out += ["## Measurement-quality warnings", ""]
    out += [
        f"- {_md(cfg)} {_md(lb)} ({_md(kind)}): {_md(msg)}" + (f" — fix: {_md(fix)}" if fix else "")
        for cfg, lb, kind, msg, fix in quality
    ] or ["None."]
    return [*out, ""]


def _md_checks(report: Report) -> list[str]:
    out = ["## Verification", ""]
    if report.verifications:
        out += ["| config | check | result | detail |", "|---|---|---|---|"]
        out += [
            f"| {_md(v.config)} | {_md(v.kind)} | {'pass' if v.passed else '**FAIL**'} | "
            f"{_md(v.message)} |"
            for v in report.verifications
        ]
    else:
        out.append("No verification results stored for this campaign.")
    out.append("")
    if report.agreement:
        md, _ = agreement_table(report.agreement)
        out += [
            "### Distribution agreement with the baseline",
            "",
            f"_{AGREEMENT_NOTE}_",
            "",
            *md,
            "",
        ]
    if report.launch_failures:
        out += ["## Launch and runtime failures", ""]
        for f in report.launch_failures:
            out += [
                f"### {_md(f.config)}: {_md(f.kind)}",
                "",
                f"- message: {_md(f.message)}",
                f"- remedy: {_md(f.remedy) or '–'}",
                f"- log: `{_md(f.log_path)}`" if f.log_path else "- log: –",
                "",
                "```",
                *(escape(line) for line in f.tail),
                "```",
                "",
            ]
    return out


def _md_server(report: Report) -> list[str]:
    rows = server_runs(report)
    if not rows:
        return [
            "## Server metrics",
            "",
            "No server metrics were scraped (the engine exposes no /metrics, or scraping was off).",
            "",
        ]
    keys = [k for k in SERVER_KEYS if any(k in r[3] for r in rows)]
    out = [
        "## Server metrics",
        "",
        f"_{_md(DEFINITIONS['server'])}._",
        "",
        "| config | load | trial | " + " | ".join(SERVER_KEYS[k] for k in keys) + " |",
        "|---|---|---:|" + "---:|" * len(keys),
    ]
    for cfg, lb, trial, vals in rows:
        cells = [_md(value_text(vals[k])) if k in vals else "–" for k in keys]
        out.append(f"| {_md(cfg)} | {_md(lb)} | {trial} | " + " | ".join(cells) + " |")
    return [*out, ""]


def _md_configs(report: Report) -> list[str]:
    out = ["## Configs and environment", ""]
    for cfg in report.configs:
        base = " (baseline)" if cfg.name == report.baseline else ""
        out += [
            f"### {_md(cfg.name)}{base}",
            "",
            f"- engine: {_md(cfg.engine or '–')}, model: {_md(cfg.model or '–')}, "
            f"hash {_md(cfg.hash)}",
            f"- argv: `{_md(' '.join(cfg.argv)) or '(none)'}`",
        ]
        if cfg.env:
            out.append("- env: " + ", ".join(f"`{_md(k)}={_md(v)}`" for k, v in cfg.env.items()))
        if cfg.name in report.argv_diff or cfg.name in report.env_diff:
            changes = report.argv_diff.get(cfg.name, []) + report.env_diff.get(cfg.name, [])
            out.append(
                "- vs baseline: " + (", ".join(f"`{_md(x)}`" for x in changes) or "no change")
            )
        for e in report.environments.get(cfg.name, []):
            out.append(
                "- environment: " + ", ".join(f"{k} {_md(e[k])}" for k in ENV_KEYS if k in e)
            )
        out.append("")
    return out
