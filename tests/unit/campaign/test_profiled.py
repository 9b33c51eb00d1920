"""Profiled passes (``campaign.parts.profiled``): a server that died during the capture is a
classified launch failure; an adaptive pass runs enough requests for its p99s."""

from __future__ import annotations

import sys
from pathlib import Path

from inferlab.campaign.parts.profiled import record_death
from inferlab.config.resolve import ResolvedConfig
from inferlab.report.data import build_report
from inferlab.server import LaunchSpec, launch
from inferlab.store import Store


def test_a_server_that_died_during_the_capture_is_a_classified_launch_failure(
    tmp_path: Path,
) -> None:
    lines = "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB"
    argv = [sys.executable, "-c", f"print({lines!r}, flush=True); raise SystemExit(1)"]
    spec = LaunchSpec(
        name="sglang", argv=argv, env={}, port=9, log_path=tmp_path / "s.log",
        health_url="http://127.0.0.1:9/health",
    )  # fmt: skip
    server = launch(spec)
    server.proc.wait(20)
    cfg = ResolvedConfig("B", "sglang", "m", [], {}, ["B"])
    with Store(tmp_path / "db") as store:
        with store.transaction():
            gid = store.config_id(store.campaign_id("cap"), "B", engine="sglang", model="m")
        msg = record_death(store, cfg, gid, server, "C=16")
        rep = build_report(store, "cap")
    assert msg is not None and "died (exit code 1) during the profiled pass at C=16" in msg
    (fail,) = rep.launch_failures
    assert fail.config == "B" and fail.kind.startswith("oom") and "profiled pass" in fail.message
    assert "--mem-fraction-static" in fail.remedy


def test_an_adaptive_profiled_pass_runs_enough_requests_for_its_p99s() -> None:
    from inferlab.campaign.parts.profiled import point_bench
    from inferlab.config.bench import BenchConfig
    from inferlab.config.pattern import ClosedLoop
    from inferlab.load.quality import FEW_SAMPLES
    from inferlab.load.results import LoadPoint

    def bench(min_requests: int) -> BenchConfig:
        auto = BenchConfig(
            url="http://127.0.0.1:1",
            concurrency=[1, 8],
            requests="auto",
            min_requests=min_requests,
            max_requests=400,
        )
        return point_bench(auto, LoadPoint.of(ClosedLoop(1)))

    assert bench(50).requests == FEW_SAMPLES == 100  # no few-samples warning on a stored pass
    assert bench(150).requests == 150 and bench(150).concurrency == [1]


def test_a_profiled_pass_at_a_replay_point_replays_that_trace_alone() -> None:
    from inferlab.campaign.parts.profiled import point_bench
    from inferlab.config.bench import BenchConfig
    from inferlab.load.bench import plan_points

    bench = BenchConfig(url="http://127.0.0.1:1", concurrency=[4], requests=20,
                        trace="t.jsonl", speed=[1, 2], trace_limit=50)  # fmt: skip
    c4, _, fast = plan_points(bench)
    at_replay = point_bench(bench, fast)
    assert [p.label for p in plan_points(at_replay)] == ["replay:mooncake@2.0x"]
    assert at_replay.trace_limit == 50
    assert [p.label for p in plan_points(point_bench(bench, c4))] == ["C=4"]


def test_a_profiled_or_recheck_pass_at_a_sessions_point_runs_that_point_alone() -> None:
    from inferlab.campaign.parts.profiled import point_bench
    from inferlab.config.bench import BenchConfig
    from inferlab.load.bench import plan_points

    bench = BenchConfig(url="http://127.0.0.1:1", concurrency=[4], rate=[2.0], requests=20,
                        sessions=[{"users": 2, "turns": 3}, {"users": 4, "turns": 2,
                                                             "think_s": 0.5}])  # fmt: skip
    *_, first, second = plan_points(bench)
    for requests in (None, 12):  # a profiled pass; a recheck's count
        alone = point_bench(bench, second, requests=requests)
        (only,) = plan_points(alone)
        assert only.label == "sessions:4x2" and only.pattern == second.pattern
        assert alone.trials == 1 and alone.concurrency == [] and alone.rate == []
    assert [p.label for p in plan_points(point_bench(bench, first))] == ["sessions:2x3"]
