"""An adaptive closed-loop point measures at least 8 waves of C (``load.budget``): its
min_requests and max_requests are raised to 8 × C, never lowered; on the reference engine."""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.config.bench import BenchConfig
from inferlab.load.budget import point_budget
from inferlab.stats.groups import measured
from inferlab.store import Store
from support.cli import Cli
from support.simproc import SimFactory


def test_an_adaptive_point_at_c8_measures_eight_waves_past_a_smaller_cap(
    sim_server: SimFactory, cli: Cli, tmp_path: Path
) -> None:
    sim = sim_server("--ttft-ms", "10", "--itl-ms", "3")
    db = tmp_path / "b.db"
    p = cli(
        "bench", "--url", sim.url, "--engine", "sim", "-c", "8", "--requests", "auto",
        "--min-requests", "10", "--max-requests", "20", "--input-tokens", "8",
        "--output-tokens", "8", "--format", "json", env={"INFERLAB_DB": str(db)},
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    assert [pt["label"] for pt in json.loads(p.stdout)["points"]] == ["C=8"]
    with Store(db) as st:
        counted = {r.label: len(measured(st.requests(r.id))) for r in st.runs()}
    assert counted["C=8"] >= 64, counted  # was capped at 20: 2.5 waves


def test_the_budget_grows_with_c_and_is_never_lowered() -> None:
    base = dict(url="http://x", concurrency=[1], requests="auto")
    cfg = BenchConfig(**base, min_requests=50, max_requests=150)  # type: ignore[arg-type]
    assert point_budget(cfg, 1) is cfg and point_budget(cfg, 4) is cfg  # 50 ≥ 32
    at128 = point_budget(cfg, 128)
    assert (at128.min_requests, at128.max_requests) == (1024, 1024)
    big = BenchConfig(**base, min_requests=50, max_requests=5000)  # type: ignore[arg-type]
    assert point_budget(big, 16).max_requests == 5000 and point_budget(big, 16).min_requests == 128
    nocap = BenchConfig(**base, max_requests=0, max_duration_s=60)  # type: ignore[arg-type]
    assert point_budget(nocap, 16).max_requests == 0
    fixed = BenchConfig(url="http://x", concurrency=[128], requests=256)
    assert point_budget(fixed, 128) is fixed  # a fixed count is the user's: compare judges it
