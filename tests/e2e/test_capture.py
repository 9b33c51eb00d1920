"""Profiles captured inside a campaign: the reference engine (SGLang's endpoints), real files,
a real HTTP server for the faults, the real store and report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.report.data import build_report
from inferlab.report.render import render_markdown
from inferlab.store import Store
from support.campaign import write_campaign
from support.campaigns import capture


def write(tmp: Path, kind: str = "sim", url: str | None = None, **profile: Any) -> Path:
    """The profiled campaign (``support.campaigns.capture``); ``profile``: its ``[profile]``."""
    return write_campaign(tmp / "c.toml", **capture(kind, url, **profile))


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    tmp = tmp_path_factory.mktemp("cap")
    path = write(tmp, at=["C=16"], steps=20, requests=32)  # 2 waves: load while it records
    with Store(tmp / "db") as store:
        res = run_campaign(path, store=store)
    assert [o.status for o in res.outcomes] == ["measured", "measured"], res.outcomes
    assert all("profiled C=16: 2 rank trace(s)" in o.message for o in res.outcomes)
    yield path, tmp / "db"


def test_profiled_passes_are_stored_apart(campaign: tuple[Path, Path]) -> None:
    path, db = campaign
    with Store(db) as store:
        measured = store.runs(campaign="cap")
        every = store.runs(campaign="cap", purpose=None)
        rows = store.analyses("profile", campaign="cap")
        launch_detail = store.db.execute(
            "SELECT detail_json FROM verifications WHERE kind = 'launch' AND passed = 1"
        ).fetchall()
    assert sorted((r.config, r.label) for r in measured) == [
        ("A", "C=1"),
        ("A", "C=16"),
        ("baseline", "C=1"),
        ("baseline", "C=16"),
    ]
    prof = [r for r in every if r.purpose == "profiled"]
    assert sorted((r.config, r.label) for r in prof) == [("A", "C=16"), ("baseline", "C=16")]
    with Store(db) as store:  # [profile] requests: the pass's own count, not the point's 1 s
        assert [len([q for q in store.requests(r.id) if not q.warmup]) for r in prof] == [32, 32]
    assert all("profiling on (SGLANG_TORCH_PROFILER_DIR=" in d for (d,) in launch_detail)
    assert len(rows) == 4
    for r in rows:
        cap = r.data.to_json()["capture"]
        f = Path(cap["path"])
        assert f.is_file() and f.stat().st_size == cap["size_bytes"]
        assert f.parent.parent == path.parent / "out" / "profiles" / r.config
        assert cap["point"] == "C=16" and cap["ranks"] == 2 and cap["rank"] in (0, 1)
        assert cap["engine"] == "sim" and cap["simulated"] and cap["mode"] == "gpu"
        assert cap["steps"] == 20 and cap["run_id"] in {x.id for x in prof}
        # under C=16 load the MoE slot GEMV leads; the attention's grid grew with the batch
        top = r.data.to_json()["kernel_rows"][0]
        assert top["category"] == "moe" and "moe_slot_gemv" in top["name"]
        low = {o["name"] for o in r.data.to_json()["occupancy"]}
        assert not any("nsa_sparse_decode" in n for n in low), low
        assert r.data.to_json()["mean_step"]["span_us"] > 0 and r.data.to_json()["verdict"]


def test_report_shows_where_the_time_goes(campaign: tuple[Path, Path]) -> None:
    _, db = campaign
    with Store(db) as store:
        md = render_markdown(build_report(store, "cap"))
    sec = md.split("## Where the time goes", 1)[1]
    assert "### baseline at C=16 (SIMULATED): rank 0" in sec
    assert "### A at C=16 (SIMULATED): rank 0" in sec and "share over 2 ranks" in sec
    assert "SIMULATED trace (synthesized" in sec and "vs baseline at the same point" in sec
    assert "moe_slot_gemv_kernel" in sec and "GPU-bound" in sec and "on 170 SMs" in sec


def test_resume_keeps_captured_profiles(campaign: tuple[Path, Path]) -> None:
    path, db = campaign
    with Store(db) as store:
        again = run_campaign(path, store=store, resume=True)
        assert [o.status for o in again.outcomes] == ["skipped", "skipped"]
        assert len(store.analyses("profile", campaign="cap")) == 4


def test_a_trace_over_the_bound_is_a_finding_and_the_campaign_goes_on(tmp_path: Path) -> None:
    path = write(tmp_path, at=["C=16"], configs=["baseline"], max_trace_mb=0.001)
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store)
        assert [o.status for o in res.outcomes] == ["measured", "measured"]
        assert "profile at C=16 failed (too-large)" in res.outcomes[0].message
        (f,) = [x for x in store.findings("cap") if x.kind == "profile-capture-failed"]
        assert len(store.runs(campaign="cap")) == 4 and store.analyses("profile") == []
    assert f.config == "baseline"
    assert "over max_trace_mb" in f.message and "inferlab profile TRACE" in str(f.action)
