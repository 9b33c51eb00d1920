"""Open-loop points (``rate=R/s``) are left out of the lever rules and of saturation, which
read closed-loop C=N points, and both say so rather than skip them silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.parts.bench import bench_with_record
from inferlab.campaign.parts.clock import ModelClock
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.levers.decide import decide
from inferlab.report.compare import build_comparison
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support.simproc import start_sim_thread


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Campaign 'mix': configs base and fast, each at C=1, C=4 and rate=50/s."""
    tmp = tmp_path_factory.mktemp("openloop")
    tok = WordTokenizer().save_hf(tmp / "tok")
    path = tmp / "mix.db"
    for name, itl in (("base", "6"), ("fast", "4")):
        with start_sim_thread("--ttft-ms", "8", "--itl-ms", itl) as sim:
            cfg = BenchConfig(
                url=sim.url,
                engine="sim",
                concurrency=[1, 4],
                rate=[50.0],
                requests=12,
                tokenizer=tok,
                workload=WorkloadSpec(input_tokens=8, output_tokens=8),
            )
            bench_with_record(cfg, db=path, campaign="mix", config=name, clock=ModelClock())
    return path


def test_saturation_names_the_open_loop_points_it_left_out(db: Path) -> None:
    with Store(db) as store:
        c = build_comparison(store, campaign="mix", baseline="base")
    assert "rate=50/s" in c.labels
    for cfg in ("base", "fast"):
        assert c.saturation[cfg].sentence.endswith("(rate=50/s: not C=N, left out)")


def test_levers_note_the_open_loop_points_they_left_out(db: Path) -> None:
    with Store(db) as store:
        d = decide(store, "mix", check=False)
        checked = decide(store, "mix")
    note = "base: rate=50/s left out: the lever rules read closed-loop C=N points"
    assert note in d.notes and note in checked.notes
    assert sorted(d.notes) == sorted(n for n in checked.notes if "left out" in n)
