"""A new compared metric is one row of ``stats.metrics.METRICS``: a test-only row (p99 ITL, the
issue's example) appears in the verdicts, ``compare`` (Markdown, JSON, CSV, the CLI), the
report's definitions, the stored summary and ``export`` with no other edit."""

from __future__ import annotations

import csv
import io
import json
import lzma
import math
from dataclasses import replace
from pathlib import Path

import pytest

import inferlab.cli.compare  # noqa: F401 (its --metric help is built on import: before the row)
from inferlab.report.compare import build_comparison
from inferlab.report.compare_export import render_csv, render_md, to_json
from inferlab.report.definitions import DEFINITIONS
from inferlab.stats import metrics
from inferlab.stats.metrics import Metric, PerRequest, itl_ms, summarize
from inferlab.stats.summary import percentile
from inferlab.stats.verdict import HIGHER_IS_BETTER
from inferlab.store import Store
from inferlab.store.export import run_rows
from support.cli import Cli

STORE = Path(__file__).parents[2] / "fixtures" / "golden" / "stores" / "demo-sim.db.xz"

P99_ITL = Metric(
    "itl_p99_ms",
    "p99 ITL",
    "ms",
    2,
    "lower",
    PerRequest(itl_ms, "p99"),
    "p99 ITL = the 99th percentile of the ITL gaps of the measured requests, ms",
    export="value",
    compared=True,
)


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the demo --sim store (campaign sim-dsv4), with the p99 ITL row in the table."""
    monkeypatch.setitem(metrics._ROWS, P99_ITL.name, P99_ITL)
    path = tmp_path / "demo.db"
    path.write_bytes(lzma.decompress(STORE.read_bytes()))  # committed packed (xz)
    return path


def test_one_row_is_a_verdict_a_column_and_a_definition(db: Path) -> None:
    with Store(db) as store:
        c = build_comparison(store, campaign="sim-dsv4")
        base = store.runs(campaign="sim-dsv4", config="baseline")[0]
        recs = store.requests(base.id)
    assert c.metrics == ["output_tok_s", "tpot_ms", "ttft_ms", "itl_p99_ms"]
    gaps = [x for r in recs if r.counted and r.ok and r.event_ns for x in itl_ms(r)]
    assert c.cells[("baseline", base.label)].values["itl_p99_ms"] == percentile(gaps, 99)
    assert HIGHER_IS_BETTER["itl_p99_ms"] is False
    verdicts = [cell.verdicts["itl_p99_ms"] for cell in c.cells.values() if cell.verdicts]
    assert len(verdicts) == 6
    # the stored demo is one launch a side: each row decided by the launch rule (undecided,
    # the ratio shown), the C=16 points too short to carry one (7 waves)
    decided = [v for v in verdicts if not v.reason.startswith("untrusted")]
    assert decided and all(math.isfinite(v.ratio.estimate) for v in decided)
    assert all(v.reason.startswith("undecided:") for v in decided)
    md = "\n".join(render_md(c))
    assert "### p99 ITL (ms)" in md and " itl_p99_ms: " in md
    doc = to_json(c)
    assert all("itl_p99_ms" in cell["values"] for cell in doc["cells"])
    rows = [r for r in csv.DictReader(io.StringIO(render_csv(c))) if r["metric"] == "itl_p99_ms"]
    assert len(rows) == 9
    assert DEFINITIONS["itl_p99_ms"] == P99_ITL.definition and "itl_p99_ms" in list(DEFINITIONS)


def test_one_row_is_in_the_cli(db: Path, cli: Cli) -> None:
    p = cli("compare", "--db", str(db), "--campaign", "sim-dsv4", "--metric", "itl_p99_ms")
    assert p.exit_code == 0, p.stderr
    assert "p99 ITL (ms) — baseline baseline" in p.stdout
    j = json.loads(
        cli("compare", "--db", str(db), "--campaign", "sim-dsv4", "--format", "json").stdout
    )
    assert "itl_p99_ms" in j["cells"][0]["values"]


def test_one_row_is_in_the_stored_summary_and_the_export(db: Path) -> None:
    with Store(db) as store:
        run = store.runs(campaign="sim-dsv4")[0]
        recs = store.requests(run.id)
    # a run stored before the row: the column is there, empty
    assert run_rows([run])[0]["itl_p99_ms"] is None
    # a run summarized with the row: its value, in the summary and the export
    s = summarize(recs).to_json()
    gaps = [x for r in recs if not r.warmup and r.ok and r.event_ns for x in itl_ms(r)]
    assert s["itl_p99_ms"] == percentile(gaps, 99)
    row = run_rows([replace(run, summary=s)])[0]
    assert row["itl_p99_ms"] == s["itl_p99_ms"]
    assert list(row)[-1] == "itl_p99_ms"  # a new row's column comes after the others
