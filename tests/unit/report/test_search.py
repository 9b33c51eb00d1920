"""The report's "Search" section, from what ``inferlab optimize`` stored: a real search on the
reference engine in this process (model clock), then ``inferlab report`` in process. Every
trial with its values, verdict and A/B ratio, the path, the recommendation and its launch
command, predicted against measured, why it stopped; a campaign without trials has no section."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.config.search import SEARCH_KIND, TRIAL_KIND
from inferlab.report.sections.search import TRIAL_COLUMNS, search_section, trial_cells
from inferlab.search.driver import optimize
from inferlab.store import Store
from support.campaign import write_campaign
from support.campaigns import optimize_campaign
from support.cli import Cli


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished search over ``--itl-ms`` (2 beats the baseline's 4) and ``--jitter-ms`` (-1:
    the server refuses to start, and the other config with it is not launched): 3 trials; the
    store and the best trial."""
    tmp = tmp_path_factory.mktemp("search")
    path = write_campaign(tmp / "opt.toml", **optimize_campaign(tmp))
    db = tmp / "db"
    with Store(db) as store:
        res = optimize(path, store=store, launcher=InProcessSim(), clock=ModelClock())
    assert res.best != "baseline"
    return db, res.best


def _section(md: str) -> str:
    return md.split("## Search", 1)[1].split("\n## ", 1)[0]


def test_the_report_shows_every_trial_the_path_and_the_recommendation(
    searched: tuple[Path, str], cli: Cli, tmp_path: Path
) -> None:
    db, best = searched
    r = cli("report", "opt", "--db", str(db), "--out-dir", str(tmp_path))
    assert r.exit_code == 0, r.stderr
    md = (tmp_path / "report.md").read_text()
    sec = _section(md)
    assert "SIMULATED" in sec
    rows = [ln for ln in sec.splitlines() if re.match(r"\| \d+ \| t0\d-", ln)]
    assert len(rows) == 3  # every trial, one row each
    fast = next(ln for ln in rows if f"| {best} |" in ln)
    # better, with the A/B's TPOT ratio below 1 and its interval; no capacity stored: —
    ratio = r"×0\.\d{3} \\\[0\.\d{3}, 0\.\d{3}\\\]"  # Markdown-escaped brackets
    assert re.search(rf"\| better \| {ratio} \| baseline \| — \|$", fast), fast
    assert "--itl-ms=2" in fast and "TPE" in fast and "bounds: none (no dimension had one)" in fast
    failed = [ln for ln in rows if "failed:" in ln]
    assert len(failed) == 1 and "launch-failed" in failed[0] and "--jitter-ms=-1" in failed[0]
    # the refused value ruled the other config with it out: said under "Stopped"
    assert re.search(r"- t0\d-im\d-jmn1: refused by the engine \(--jitter-ms\); \d proposals? "
                     "with the same values not launched", sec), sec  # fmt: skip
    assert f"Incumbent's path: baseline → {best}" in sec
    assert "Stopped: " in sec
    # the recommendation: its evidence, its [[config]] table and the engine's command line
    assert f"{best} against baseline: ×0." in sec and "on tpot_ms (better)" in sec
    cmd = sec.split("The command line that launches it:", 1)[1].split("```")[1]
    assert "sim serve" in cmd and "--itl-ms 2" in cmd and "--jitter-ms 0.2" in cmd
    # predicted against measured: --itl-ms has no lever rule, so no bound; speed-up > 1
    pred = sec.split("### Predicted against measured", 1)[1]
    line = next(ln for ln in pred.splitlines() if ln.startswith(f"| {best} |"))
    speedup = float(re.search(r"\| ×(\d+\.\d+) \\\[", line).group(1))  # type: ignore[union-attr]
    assert speedup > 1.2 and "| no bound |" in line
    assert f"| {best} | --itl-ms | — |" in line  # the baseline's own --jitter-ms is unchanged
    html = (tmp_path / "report.html").read_text()
    assert "<h2" in html and ">Search</h2>" in html and best in html
    assert "--itl-ms 2" in html


def test_the_section_reads_the_store_and_says_what_is_absent(
    searched: tuple[Path, str], tmp_path: Path
) -> None:
    db, _ = searched
    with Store(db) as store:
        trials = store.analyses(TRIAL_KIND, campaign="opt")
        sec = search_section(store, "opt")
        assert search_section(store, "another") is None  # no trials: no section
    assert sec is not None and sec.title == "Search"
    cells = trial_cells(trials[0].data.to_json(), "tpot_ms")
    assert len(cells) == len(TRIAL_COLUMNS) and cells[-1] == "—"
    data = trials[0].data.to_json()  # a capacity at SLO, when a trial carries one
    data["result"] = {**data["result"], "capacity": {"estimate": 12, "low": 10, "high": 14}}
    assert trial_cells(data, "tpot_ms")[-1] == "12 [10, 14]"
    # a search still running (trials, no summary yet): the trials, and that it has not stopped
    with Store(tmp_path / "copy.db") as store:
        for t in trials:
            store.add_analysis(TRIAL_KIND, t.name, t.data, campaign="opt")
        part = search_section(store, "opt")
        assert store.analyses(SEARCH_KIND, campaign="opt") == []
    assert part is not None and "has not stopped yet" in part.markdown
    assert len(re.findall(r"^\| \d \| t0\d-", part.markdown, re.M)) == 3
