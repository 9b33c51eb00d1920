"""The cluster's load, no Ray started (``cluster.bench``): split so it adds up, merged and
summarized on the driver's clock."""

from __future__ import annotations

import pytest

from inferlab.cluster.actors import Measured, Placed
from inferlab.cluster.bench import merge_point, split_config
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.config.pattern import ClosedLoop
from inferlab.errors import ConfigError
from inferlab.load.bench import LoadPoint, PointResult
from inferlab.stats.metrics import summarize
from inferlab.stats.summary import describe
from support.records import rec


def test_the_load_is_split_so_it_adds_up() -> None:
    cfg = BenchConfig(
        url="http://h:1",
        concurrency=[3, 8],
        rate=[4.0],
        max_concurrency=5,
        requests=10,
        warmup=3,
        workload=WorkloadSpec(input_tokens=8, output_tokens=8, seed=1),
    )
    parts = split_config(cfg, 2)
    assert [p.concurrency for p in parts] == [[2, 4], [1, 4]]
    assert [p.rate for p in parts] == [[2.0], [2.0]]
    assert [p.max_concurrency for p in parts] == [3, 2]
    assert [p.requests for p in parts] == [5, 5] and [p.warmup for p in parts] == [2, 2]
    assert len({p.workload.seed for p in parts}) == 2 and len({p.seed for p in parts}) == 2
    with pytest.raises(ConfigError, match=r"--concurrency 3 is below --clients 4"):
        split_config(cfg, 4)


def test_merged_point_is_summarized_on_the_driver_clock() -> None:
    cfg = BenchConfig(url="http://h:1", concurrency=[2], requests=2)
    placed = Placed("n" * 40, "h", "1.1.1.1", 1, None)
    from inferlab.cluster.clock import ClockOffset

    parts = []
    for i, (host, skew) in enumerate([("a", 3_000_000_000), ("b", -2_000_000_000)]):
        recs = [rec(i, 10_000_000_000 + skew + i * 10_000_000)]
        pr = PointResult(LoadPoint.of(ClosedLoop(1)), recs, summarize(recs), describe([]), 1)
        parts.append((host, Measured(pr, [], {}, placed), ClockOffset(skew, 1_000_000, 8)))
    res = merge_point(LoadPoint.of(ClosedLoop(2)), 0, parts, cfg, 10_000_000_000)
    assert [r.client for r in res.records] == ["a", "b"]
    assert [r.send_ns for r in res.records] == [10_000_000_000, 10_010_000_000]
    assert res.summary.requests == 2 and abs(res.summary.duration_s - 0.06) < 1e-9
    assert res.clients is not None and res.clients["window_error_ms"] == 1.0
    assert [h["late_start_ms"] for h in res.clients["hosts"]] == [0.0, 10.0]


def test_a_trace_is_not_split_across_hosts() -> None:
    cfg = BenchConfig(url="http://h", trace="t.jsonl")
    with pytest.raises(ConfigError, match="--trace: replay from one client"):
        split_config(cfg, 2)
    assert [c.trace for c in split_config(cfg, 1)] == [cfg.trace]


def test_named_load_points_are_not_split_across_hosts() -> None:
    cfg = BenchConfig(url="http://h", points=[{"kind": "sessions", "users": 4, "turns": 2}])
    with pytest.raises(ConfigError, match=r"\[\[load.points\]\]: not split across client hosts"):
        split_config(cfg, 2)
    assert [c.points for c in split_config(cfg, 1)] == [cfg.points]
