"""CPU isolation end to end: the measuring client of a sweep against the reference engine (a
real subprocess) runs on the client's CPUs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.cpus import host_cpus, pinned
from inferlab.load.bench import BenchEvents, LoadPoint, run_bench
from inferlab.sim.tokenizer import WordTokenizer
from support.simproc import start_sim


class _Seen(BenchEvents):
    def __init__(self) -> None:
        self.cpus: list[set[int]] = []

    def point_started(self, point: LoadPoint, total: int | None, warmup: bool) -> None:
        self.cpus.append(set(os.sched_getaffinity(0)))


@pytest.mark.skipif(len(host_cpus()) < 2, reason="needs 2 CPUs")
def test_the_measuring_client_runs_on_client_cpus(tmp_path: Path) -> None:
    tok = WordTokenizer().save_hf(tmp_path / "tok")
    before = set(os.sched_getaffinity(0))
    seen = _Seen()
    with start_sim("--ttft-ms", "2", "--itl-ms", "1") as sim:
        cfg = BenchConfig(
            url=sim.url,
            engine="sim",
            concurrency=[2],
            requests=4,
            tokenizer=tok,
            workload=WorkloadSpec(input_tokens=8, output_tokens=4),
            client_cpus=(1,),
        )
        res = run_bench(cfg, seen)
    assert res.points[0].summary.ok == 4
    assert seen.cpus == [{1}] and set(os.sched_getaffinity(0)) == before
    with pinned((0,)):
        assert os.sched_getaffinity(0) == {0}
    assert set(os.sched_getaffinity(0)) == before
