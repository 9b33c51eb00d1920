"""A new load pattern is one class and one registry line (docs/design.md, "Worked example: a
new load pattern"): a toy pattern registered here, in the test, runs through a point on the
reference engine, is stored with its columns and pattern, and a profiled pass runs it alone."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from inferlab.campaign.parts.bench import StoreSink
from inferlab.campaign.parts.profiled import point_bench
from inferlab.config.bench import BenchConfig
from inferlab.config.pattern import PATTERNS, LoadPattern
from inferlab.config.schedule import Budget, Schedule, Tools
from inferlab.config.workload import WorkloadSpec
from inferlab.errors import ConfigError
from inferlab.load.bench import plan_points, run_bench
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support.simproc import SimFactory


@dataclass(frozen=True)
class Burst(LoadPattern):
    """``waves`` waves of ``width`` requests sent at once, ``gap_s`` seconds apart."""

    width: int
    waves: int
    gap_s: float = 0.2

    kind: ClassVar[str] = "burst"
    spellings: ClassVar[tuple[str, ...]] = ("burst:WxN",)
    counted: ClassVar[bool] = False  # it brings its own count

    @property
    def label(self) -> str:
        return f"burst:{self.width}x{self.waves}"

    @property
    def streams(self) -> int:  # at most one wave in flight
        return self.width

    @property
    def size(self) -> float:  # what its labels sort by
        return float(self.width)

    def fields(self) -> dict[str, Any]:
        return {"width": self.width, "waves": self.waves, "gap_s": self.gap_s}

    @classmethod
    def from_label(cls, label: str) -> Burst | None:
        m = re.fullmatch(r"burst:(\d+)x(\d+)", label)
        return cls(int(m.group(1)), int(m.group(2))) if m else None

    def schedule(self, budget: Budget, tools: Tools) -> Schedule:
        offsets = [w * self.gap_s for w in range(self.waves) for _ in range(self.width)]
        return Schedule(len(offsets), self.width, offsets)


@pytest.fixture
def burst(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one registry line, for this test only."""
    monkeypatch.setitem(PATTERNS, Burst.kind, Burst)


@pytest.mark.usefixtures("burst")
def test_a_toy_pattern_runs_through_a_point_on_the_reference_engine(
    sim_server: SimFactory, tmp_path: Path
) -> None:
    sim = sim_server("--ttft-ms", "5", "--itl-ms", "1")
    tok = WordTokenizer().save_hf(tmp_path / "tok")
    cfg = BenchConfig(
        url=sim.url, engine="sim", tokenizer=tok, concurrency=[2], requests=4,
        points=[{"kind": "burst", "width": 3, "waves": 2, "gap_s": 0.2}],
        workload=WorkloadSpec(input_tokens=8, output_tokens=4),
    )  # fmt: skip
    assert [p.label for p in plan_points(cfg)] == ["C=2", "burst:3x2"]
    sink = StoreSink(tmp_path / "t.db", cfg, "toy", "sim")
    result = run_bench(cfg, sinks=[sink])
    closed, toy = result.points
    assert toy.point.pattern == Burst(3, 2, 0.2) and toy.summary.ok == toy.summary.requests == 6
    due = sorted(r.scheduled_ns or 0 for r in toy.records)
    assert [round((t - due[0]) / 1e9, 1) for t in due] == [0.0] * 3 + [0.2] * 3  # two waves
    assert closed.summary.requests == 4
    with Store(tmp_path / "t.db") as st:
        runs = {r.label: r for r in st.runs()}
    stored = runs["burst:3x2"]
    assert (stored.concurrency, stored.rate) == (None, None)
    assert stored.summary["pattern"] == {"kind": "burst", "width": 3, "waves": 2, "gap_s": 0.2}
    assert runs["C=2"].concurrency == 2 and "pattern" not in runs["C=2"].summary
    # a profiled or recheck pass at it: the toy alone, as a [[load.points]] entry
    alone = point_bench(cfg, plan_points(cfg)[1])
    assert [p.label for p in plan_points(alone)] == ["burst:3x2"] and alone.concurrency == []


@pytest.mark.usefixtures("burst")
def test_load_points_take_any_registered_kind_and_refuse_what_does_not_fit() -> None:
    cfg = BenchConfig(url="http://h", points=[{"kind": "burst", "width": 2, "waves": 1},
                                              {"kind": "open", "rate": 4, "arrival": "gamma",
                                               "burstiness": 0.5}], requests=5)  # fmt: skip
    assert [p.label for p in cfg.patterns()] == ["burst:2x1", "rate=4/s"]
    assert cfg.model_dump(mode="json")["points"][1] == {
        "kind": "open", "rate": 4.0, "arrival": "gamma", "burstiness": 0.5, "max_concurrency": None
    }  # fmt: skip
    assert "points" not in BenchConfig(url="http://h", concurrency=[1], requests=1).model_dump()
    with pytest.raises(ValueError, match="unknown load pattern kind 'wave'; expected closed, open"):
        BenchConfig(url="http://h", points=[{"kind": "wave"}])
    with pytest.raises(ValueError, match="two load points share the label 'C=4'"):
        BenchConfig(url="http://h", concurrency=[4], points=[{"kind": "closed", "concurrency": 4}],
                    requests=2)  # fmt: skip
    with pytest.raises(ValueError, match="give --requests or --duration"):
        BenchConfig(url="http://h", points=[{"kind": "open", "rate": 2}])
    with pytest.raises(ValueError, match="'auto' stops closed-loop points; points: burst:2x1"):
        BenchConfig(url="http://h", concurrency=[2], requests="auto",
                    points=[{"kind": "burst", "width": 2, "waves": 1}])  # fmt: skip
    with pytest.raises(ConfigError, match="load pattern 'burst'"):
        LoadPattern.from_json({"kind": "burst", "width": 2})
