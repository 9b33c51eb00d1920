"""The baseline recheck (``[load] recheck_baseline``): real sim servers launched by
``run_campaign`` through a ``command`` engine whose wrapper counts its launches and serves the
baseline's second launch slower; real SQLite; every point read on the engine's model clock
(``campaign.parts.clock``), so the drift and the verdicts are the timing model's, not the machine's.
The drift is found, the candidate's verdict at that point refused with the reason unless it
holds against both passes of the baseline (A-B-A), the baseline's measured samples untouched."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.plan import make_plan
from inferlab.errors import ConfigError
from inferlab.levers.evidence import gather
from inferlab.report.compare import build_comparison
from inferlab.report.compare_export import render_csv, render_md, to_json
from inferlab.report.data import build_report
from inferlab.report.html_page import render_html
from inferlab.report.markdown import render_markdown
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.stats.recheck import recheck_points
from inferlab.store import Store
from inferlab.store.recheck import recheck_groups
from support.campaign import write_campaign
from support.campaigns import PROBE_HI, SERVE_ON
from support.cli import Cli

#: a candidate with a real effect, larger than the drift (ITL 4 ms → 1.5 ms)
#: a candidate with a real effect, larger than the drift (ITL 4 ms → 1.5 ms)
FAST = {"name": "fast", "extends": "baseline", "set": {"--itl-ms": "1.5"}}

#: the wrapper: counts its launches in a file; on launch number SLOW it multiplies --itl-ms
WRAPPER = """
import os, sys
counter, slow = sys.argv[1], int(sys.argv[2])
argv = sys.argv[sys.argv.index("--") + 1:]
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(n))
if n == slow:
    i = argv.index("--itl-ms") + 1
    argv[i] = str(float(argv[i]) * 2)
os.execv(argv[0], argv)
"""


@dataclass
class Done:
    path: Path
    db: Path
    counter: Path
    name: str


def _campaign(
    tmp: Path, name: str, slow: int, recheck: object = True, *more: dict[str, Any]
) -> tuple[Path, Path]:
    """The reference engine behind the launch-counting wrapper (``WRAPPER``: launch ``slow``
    serves at twice the ITL); baseline, noop (a lever that cannot matter), ``more``."""
    tok = tmp / "tok"
    if not tok.exists():
        WordTokenizer(4096).save_hf(tok)
    wrap = tmp / "wrap.py"
    wrap.write_text(WRAPPER)
    counter = tmp / f"{name}.launches"
    serve = [sys.executable, "-m", "inferlab.cli.main", "sim", "serve", *SERVE_ON]
    engine = {
        "kind": "command",
        "argv": [sys.executable, wrap, counter, str(slow), "--", *serve],
        "args": ["--itl-ms", "4"],
        "model": "recheck-sim",
        "health": "/health",
        "metrics": "/metrics",
        "api": "sim",  # the reference engine: its numbers say SIMULATED
    }
    noop = {"name": "noop", "extends": "baseline", "env": {"INFERLAB_TEST_NOOP": "1"}}
    load = {"requests": 30, "min_effect": 0.1, "recheck_baseline": recheck, "tokenizer": tok}
    path = write_campaign(
        tmp / f"{name}.toml",
        name=name,
        output=tmp / name,
        engine=engine,
        config=[{"name": "baseline"}, noop, *more],
        verify=PROBE_HI,
        load=load,
    )
    return path, counter


def _run(tmp: Path, name: str, slow: int, *more: dict[str, Any]) -> Done:
    path, counter = _campaign(tmp, name, slow, True, *more)
    db = tmp / f"{name}.db"
    with Store(db) as store:
        res = run_campaign(path, store=store, clock=ModelClock())
    configs = ["baseline", "noop", *(c["name"] for c in more), "baseline (recheck)"]
    assert [(o.config, o.status) for o in res.outcomes] == [(c, "measured") for c in configs], [
        o.message for o in res.outcomes
    ]
    return Done(path, db, counter, name)


@pytest.fixture(scope="module")
def drift(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Done]:
    """Launch 4 (the baseline's recheck, after noop and fast) serves at twice the ITL."""
    yield _run(tmp_path_factory.mktemp("drift"), "drift", 4, FAST)


@pytest.fixture(scope="module")
def steady(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Done]:
    """No launch is slowed: the same timing twice."""
    yield _run(tmp_path_factory.mktemp("steady"), "steady", 0)


def test_drift_is_found_and_the_candidate_verdict_refused(drift: Done) -> None:
    with Store(drift.db) as store:
        measured = store.runs(campaign=drift.name, config="baseline")
        again = store.runs(campaign=drift.name, config="baseline", purpose="recheck")
        assert [r.purpose for r in again] == ["recheck"] and again[0].label == "C=1"
        assert len(measured) == 1 and measured[0].n_requests == 30  # the first pass, unchanged
        assert again[0].n_requests == 30  # the count its first pass recorded
        points = recheck_points(recheck_groups(store, drift.name, "baseline"), min_effect=0.1)
        c = build_comparison(store, campaign=drift.name, min_effect=0.1)
        js = to_json(c)
        md = "\n".join(render_md(c))
        csv = render_csv(c)
        ev = gather(store, drift.name)
        html = render_html(build_report(store, drift.name))
        report_md = render_markdown(build_report(store, drift.name))
    assert drift.counter.read_text() == "4"
    (p,) = points
    assert p.untrusted is None, [r.trust_reasons for r in measured + again]
    ratio = p.verdicts["output_tok_s"].ratio
    print(f"drift: {p.line()}")  # the numbers the report quotes
    assert p.drift and ratio.high < 0.9  # ITL ×2: throughput about ×0.5, beyond min_effect
    assert p.verdicts["tpot_ms"].claim == "worse"
    cell = c.cells[("noop", "C=1")]  # ~ against the first pass, better against the recheck
    assert {"output_tok_s", "tpot_ms"} <= set(cell.drift_refused), cell.verdicts
    for m in cell.drift_refused:
        v = cell.verdicts[m]
        assert v.claim == "~" and "the baseline itself moved ×0." in v.reason
        assert "verdicts here are not comparable" in v.reason and "against the recheck" in v.reason
    # fast is better than both passes of the baseline, but the baseline's two launches read
    # ×0.5 apart: one launch of fast against them carries that spread (t with 1 df), and
    # nothing is claimed (the one-launch A/B of before the launch design claimed it)
    fast = c.cells[("fast", "C=1")]
    for m in ("output_tok_s", "tpot_ms"):
        v = fast.verdicts[m]
        assert v.claim == "~", (m, v.reason)
    assert js["recheck"][0]["drift"] is True and js["recheck"][0]["label"] == "C=1"
    noop = next(x for x in js["cells"] if x["config"] == "noop")
    assert "baseline itself moved" in noop["baseline_drift"]
    assert "baseline_drift" in csv
    assert "| C=1 |" in md and "| yes |" in md and "DRIFT" in md
    assert "not comparable: baseline drift" in md
    assert 1 in ev.refused and "baseline itself moved" in ev.refused[1]
    assert "Baseline recheck" in html and "<td>yes</td>" in html
    assert "Baseline recheck" in report_md and "SIMULATED" in report_md


def test_the_cli_shows_the_recheck(cli: Cli, drift: Done) -> None:
    """``inferlab compare`` (table and --json) and ``inferlab report`` carry it."""

    def ok(*args: str) -> str:
        r = cli(*args)
        assert r.exit_code == 0, r.stderr
        return r.stdout

    base = ["compare", "--db", str(drift.db), "--campaign", drift.name, "--min-effect", "0.1"]
    js = json.loads(ok(*base, "--format", "json"))
    assert js["recheck"][0]["drift"] is True
    table = ok(*base)
    assert "Baseline recheck (order effects) — SIMULATED" in table
    assert "not comparable: baseline drift" in table
    out = drift.db.parent / "report"
    ok("report", drift.name, "--db", str(drift.db), "--out-dir", str(out))
    md = (out / "report.md").read_text()
    assert "| C=1 |" in md and "| yes |" in md


def test_no_drift_keeps_the_verdicts(steady: Done) -> None:
    with Store(steady.db) as store:
        c = build_comparison(store, campaign=steady.name, min_effect=0.1)
        ev = gather(store, steady.name)
    (p,) = c.rechecks
    print(f"steady: {p.line()}")
    assert not p.drift and "no drift" in p.line() and "(recheck / first pass)" in p.line()
    assert p.line().startswith("SIMULATED baseline rechecked at C=1: ×")
    cell = c.cells[("noop", "C=1")]
    assert cell.drift is None and cell.blocked != "not comparable: baseline drift"
    assert all("baseline itself moved" not in v.reason for v in cell.verdicts.values())
    assert not ev.refused


def test_resume_does_not_repeat_a_finished_recheck_and_finishes_a_cut_one(steady: Done) -> None:
    with Store(steady.db) as store:
        res = run_campaign(steady.path, store=store, resume=True, clock=ModelClock())
        assert all(o.status == "skipped" for o in res.outcomes)
        assert steady.counter.read_text() == "3"  # nothing launched again
        with store.transaction():  # the recheck cut short by a Ctrl-C: stored interrupted
            store.db.execute("UPDATE runs SET interrupted = 1 WHERE purpose = 'recheck'")
        res = run_campaign(steady.path, store=store, resume=True, clock=ModelClock())
        assert [o.status for o in res.outcomes] == ["skipped", "skipped", "measured"]
        assert steady.counter.read_text() == "4"  # only the baseline, for its recheck
        again = store.runs(campaign=steady.name, purpose="recheck")
        assert [r.interrupted for r in again] == [True, False]
        assert len(store.runs(campaign=steady.name, config="baseline")) == 1


def test_recheck_must_be_a_boolean(tmp_path: Path) -> None:
    path, _ = _campaign(tmp_path, "bad", 0, "yes")
    with pytest.raises(ConfigError, match=r"load\.recheck_baseline"):
        make_plan(path)
