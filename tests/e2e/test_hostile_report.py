"""Hostile strings in every free-text field the report shows, opened in headless Chromium.

Config names are validated (no markup can get in); what a server, a log, a trace, the
environment or another tool's file says is not. Each such field gets its own tagged payload —
a ``<script>``, an attribute break-out with ``onerror``, ``javascript:`` links (HTML and
Markdown) and bidi-override characters — through the command that stores it. The HTML report,
and the Markdown report rendered by a CommonMark renderer with raw HTML on, are then opened in
a real browser: no script runs (the payloads would set ``window.__pwned`` and mark the
document), no element carries an event handler, no link or source is ``javascript:``, and the
bidi controls are shown, not obeyed.
"""

from __future__ import annotations

import gzip
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.logs import store_log_findings
from inferlab.report.render import write_report
from inferlab.store import Store
from inferlab.verify.checks import GreedyOutputs, _equivalence
from support import ROOT
from support.browser import browser_dom
from support.campaign import write_campaign
from support.cli import run_cli

pytestmark = pytest.mark.timeout(300)

FIX = ROOT / "tests/fixtures"
MARK = "document.documentElement.setAttribute('data-pwned','1');window.__pwned=1"
BIDI = "\u202e\u2066\u2067\u2068\u2069\u202a\u202b\u202c\u202d\u200e\u200f\u061c"


def hostile(field: str) -> str:
    """The payload for ``field``: tagged, so the test sees it reached the report."""
    return (
        f"HOSTILE-{field} <script>{MARK}</script>"
        f'"><img src=x onerror="{MARK}">'
        f"'><svg onload='{MARK}'>"
        f'<a href="javascript:{MARK}">link</a> [md link](javascript:{MARK}) '
        f"javascript:{MARK} gnp.{BIDI[0]}exe{BIDI[1:]}"
    )


FIELDS = ("model", "probe", "output", "log", "kernel", "recon", "import")


def _fill(tmp: Path) -> Path:
    """A store where each field of FIELDS carries its payload, each put there by its command."""
    db = tmp / "h.db"
    path = write_campaign(
        tmp / "c.toml",
        name="hostile",
        engine={"model": hostile("model")},
        config=[{"name": "base"}],
        verify={"probes": [{"prompt": hostile("probe"), "expect": r"\w"}]},
    )
    with Store(db) as store:
        res = run_campaign(path, store=store)
        assert [o.status for o in res.outcomes] == ["measured"], res.outcomes
        gid = store.db.execute("SELECT id FROM configs WHERE name = 'base'").fetchone()[0]
        # greedy outputs that diverge, as verify's equivalence check reports them (its
        # message quotes the prompt and 20 characters of each output from the divergence)
        outs = GreedyOutputs([hostile("output")], [f"<script>{MARK}</script>"], 8)
        other = GreedyOutputs([hostile("output")], [f'<img src=x onerror="{MARK}">'], 8)
        check = _equivalence(outs, other)
        with store.transaction():
            store.add_verification(gid, check.kind, check.passed, check.to_json())
        log = tmp / "server.log"
        oom = (
            FIX
            / "engine_logs/oom_graph_capture/sglang-issue5285_deepep-h20-capture-oom-traceback.log"
        )
        log.write_text(
            oom.read_text() + f"[2025-01-01 00:00:00 TP0] NCCL error: {hostile('log')}\n"
        )
        assert store_log_findings(store, log, campaign="hostile", config_id=gid) is not None
    with gzip.open(FIX / "traces/fp8_decode_default.json.gz", "rt") as fh:
        trace = json.load(fh)
    time_of: dict[str, float] = {}
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel":
            time_of[e["name"]] = time_of.get(e["name"], 0.0) + e["dur"]
    top = max(time_of, key=time_of.__getitem__)  # the kernel the report lists first
    for e in trace["traceEvents"]:
        if e.get("name") == top:
            e["name"] = hostile("kernel")
    (tmp / "t.json").write_text(json.dumps(trace))
    imported = json.loads(
        (
            FIX / "imports/vllm-0.17.1_bench-serve_save-result_llama31-8b_conc12_run1.json"
        ).read_text()
    )
    imported["model_id"] = imported["tokenizer_id"] = hostile("import")
    (tmp / "vllm.json").write_text(json.dumps(imported))
    for args, env in (
        (["profile", str(tmp / "t.json"), "--campaign", "hostile"], None),
        (["recon", "--campaign", "hostile"], {"NCCL_DEBUG": hostile("recon")}),
        (["import", str(tmp / "vllm.json"), "--campaign", "hostile"], None),
    ):
        r = run_cli(*args, "--db", str(db), env=env)
        assert r.exit_code == 0, (args, r.stderr[-2000:])
    return db


class _Audit(HTMLParser):
    """Every element, attribute and text of a rendered DOM, for the checks below."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend((tag, k, v or "") for k, v in attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _inert(dom: str, expect: tuple[str, ...]) -> None:
    audit = _Audit()
    audit.feed(dom)
    text = "".join(audit.text)
    for field in expect:
        assert f"HOSTILE-{field}" in text, f"{field}: its payload did not reach the report"
    assert not [a for a in audit.attrs if a[1] == "data-pwned"]  # no payload ran
    for bad in ("script", "iframe", "object", "embed", "form", "base"):  # (the charts are svg)
        assert bad not in audit.tags, bad
    handlers = [(t, k) for t, k, _ in audit.attrs if k.lower().startswith("on")]
    assert not handlers, handlers
    for tag, k, v in audit.attrs:
        if k.lower() in ("href", "src", "action", "formaction", "xlink:href"):
            scheme = re.sub(r"[\x00-\x20]", "", v).lower()
            assert not scheme.startswith(("javascript:", "vbscript:", "data:")), (tag, k, v)
    assert not any(c in text for c in BIDI), "a bidi control reached the page unshown"


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _fill(tmp_path_factory.mktemp("hostile"))


def test_html_report_keeps_every_payload_inert(hostile_db: Path, tmp_path: Path) -> None:
    with Store(hostile_db) as store:
        md, html = write_report(store, "hostile", tmp_path / "out")
    dom = browser_dom(html, tmp_path)
    _inert(dom, FIELDS)


def test_markdown_report_keeps_every_payload_inert(hostile_db: Path, tmp_path: Path) -> None:
    """The Markdown report through a CommonMark renderer that passes raw HTML (the most
    permissive way a ticket or wiki would show it), then the same browser checks."""
    markdown_it = pytest.importorskip("markdown_it")
    with Store(hostile_db) as store:
        md, _ = write_report(store, "hostile", tmp_path / "out")
    body = (
        markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(md.read_text())
    )
    page = tmp_path / "md.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{body}</body></html>"
    )
    dom = browser_dom(page, tmp_path)
    _inert(dom, FIELDS)
