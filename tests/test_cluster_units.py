"""The cluster's pure parts (no Ray started): GPUs per config, placement, clocks, the load
split, GPU identity under CUDA_VISIBLE_DEVICES, the client column, the sim's startup delay,
and the bad input that needs no cluster."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferlab.cluster.actors import Measured, Placed
from inferlab.cluster.bench import merge_point, split_config
from inferlab.cluster.clock import (
    ClockSample,
    estimate_offset,
    measure_offset,
    on_driver_clock,
    window_error_ns,
)
from inferlab.cluster.connect import NodeInfo, connect, resolve_address
from inferlab.cluster.placement import Need, check_fit, config_need
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.config.campaign import ClusterSection
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.environment import visible_gpus
from inferlab.errors import ConfigError
from inferlab.load.bench import LoadPoint, PointResult
from inferlab.records import RequestRecord
from inferlab.stats.metrics import summarize
from inferlab.stats.summary import describe
from inferlab.store import Store
from support.cli import Cli
from support.simproc import group_pids, start_sim


@pytest.mark.parametrize(
    ("engine", "args", "gpus"),
    [
        ("sglang", [], 1),
        ("sglang", ["--tp", "4"], 4),
        ("sglang", ["--tp-size", "4", "--pp-size", "2", "--dp", "2"], 16),
        ("sglang", ["--tp", "8", "--dp", "8", "--enable-dp-attention"], 8),
        ("vllm", ["-tp", "2", "--pipeline-parallel-size", "2"], 4),
        ("vllm", ["--tensor_parallel_size", "8"], 8),
        ("sim", ["--itl-ms", "4"], 0),
    ],
)
def test_gpus_from_the_engines_parallel_flags(engine: str, args: list[str], gpus: int) -> None:
    assert get_engine(engine).gpus_needed(args) == gpus


def test_a_bad_parallel_value_names_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"--tp-size needs a positive integer.*'x'"):
        get_engine("sglang").gpus_needed(["--tp", "x"])


def _cfg(name: str, engine: str = "sglang", args: tuple[str, ...] = (), gpus: int | None = None):
    return ResolvedConfig(name, engine, "m", list(args), {}, [name], gpus=gpus)


def test_bundles_and_the_fit_check_name_the_config_and_the_largest_node() -> None:
    sec = ClusterSection(server_cpus=4, client_cpus=2)
    need = config_need(_cfg("big", args=("--tp", "16")), sec)
    assert need.bundles() == [{"GPU": 16.0, "CPU": 4.0}, {"CPU": 2.0}]
    assert config_need(_cfg("cpu", "sim"), sec).bundles() == [{"CPU": 4.0}, {"CPU": 2.0}]
    assert config_need(_cfg("forced", "sim", gpus=2), sec).gpus == 2
    nodes = [
        NodeInfo("a" * 40, "10.0.0.1", "gpu1", 64, 8),
        NodeInfo("b" * 40, "10.0.0.2", "c", 8, 0),
    ]
    check_fit([Need("ok", 8, 4, 2)], nodes, "c.toml")
    with pytest.raises(ConfigError) as exc:
        check_fit([need, Need("ok", 8, 4, 2)], nodes, "c.toml")
    msg = str(exc.value)
    assert "config 'big' needs 16 GPU(s) and 6 CPU(s) on one node" in msg and "'ok'" not in msg
    assert "gpu1 (aaaaaaaa), has 8 GPU(s) and 64 CPU(s)" in msg


def test_cristian_offset_keeps_the_minimum_rtt_exchange() -> None:
    # host clock = driver + 5 s; the reply's one-way delays vary (asymmetric on purpose)
    true = 5_000_000_000
    samples = [
        ClockSample(1_000, 1_000 + true + 900, 3_000),  # rtt 2000
        ClockSample(10_000, 10_000 + true + 100, 10_400),  # rtt 400: kept
        ClockSample(20_000, 20_000 + true + 50, 21_000),
    ]
    off = estimate_offset(samples)
    assert off.rtt_ns == 400 and off.bound_ns == 200 and off.samples == 3
    assert off.offset_ns == true + 100 - 200
    assert abs(off.offset_ns - true) <= off.bound_ns
    with pytest.raises(ValueError):
        estimate_offset([])


def test_measure_offset_against_a_skewed_clock() -> None:
    skew = -123_456_789
    off = measure_offset(lambda: time.perf_counter_ns() + skew, rounds=20)
    assert abs(off.offset_ns - skew) <= off.bound_ns + 1000


def _rec(i: int, send: int, client: str | None = None) -> RequestRecord:
    return RequestRecord(
        index=i,
        request_id=f"r{i}",
        send_ns=send,
        end_ns=send + 50_000_000,
        status=200,
        event_ns=[send + 20_000_000, send + 30_000_000, send + 50_000_000],
        event_tokens=[1, 1, 1],
        usage_completion_tokens=3,
        client=client,
    )


def test_records_move_to_the_driver_clock_with_durations_unchanged() -> None:
    r = _rec(0, 7_000_000_000)
    r.scheduled_ns = 6_999_000_000
    d = on_driver_clock(r, 5_000_000_000, "h1:abcd")
    assert (d.send_ns, d.scheduled_ns, d.client) == (2_000_000_000, 1_999_000_000, "h1:abcd")
    assert (d.ttft_ns, d.e2e_ns, d.end_ns - d.send_ns) == (r.ttft_ns, r.e2e_ns, 50_000_000)
    assert r.client is None  # the original is left alone
    recs = [on_driver_clock(_rec(0, 100), 0, "a"), on_driver_clock(_rec(1, 200), 0, "b")]
    assert window_error_ns(recs, {"a": 300, "b": 400}) == 700
    assert window_error_ns(recs[:1], {"a": 300}) == 0


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
        recs = [_rec(i, 10_000_000_000 + skew + i * 10_000_000)]
        pr = PointResult(LoadPoint("C=1", concurrency=1), recs, summarize(recs), describe([]), 1)
        parts.append((host, Measured(pr, [], {}, placed), ClockOffset(skew, 1_000_000, 8)))
    res = merge_point(LoadPoint("C=2", concurrency=2), 0, parts, cfg, 10_000_000_000)
    assert [r.client for r in res.records] == ["a", "b"]
    assert [r.send_ns for r in res.records] == [10_000_000_000, 10_010_000_000]
    assert res.summary.requests == 2 and abs(res.summary.duration_s - 0.06) < 1e-9
    assert res.clients is not None and res.clients["window_error_ms"] == 1.0
    assert [h["late_start_ms"] for h in res.clients["hosts"]] == [0.0, 10.0]


def test_cuda_visible_devices_maps_to_nvml_devices() -> None:
    gpus = [{"index": i, "name": "NVIDIA H200", "uuid": f"GPU-{i}aaa-{i}"} for i in range(4)]
    got, notes = visible_gpus(gpus, "2,3")
    assert [g["index"] for g in got] == [2, 3] and notes == []
    got, _ = visible_gpus(gpus, "GPU-1aaa")
    assert [g["index"] for g in got] == [1]
    got, notes = visible_gpus(gpus, "1,7,2")  # CUDA stops at the first invalid entry
    assert [g["index"] for g in got] == [1] and "'7'" in notes[0]
    assert visible_gpus(gpus, None)[0] == gpus and visible_gpus(gpus, "")[0] == []
    mixed = [*gpus[:1], {"index": 1, "name": "NVIDIA L4", "uuid": "GPU-x"}]
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_ORDER"}
    os.environ.pop("CUDA_DEVICE_ORDER", None)
    try:
        assert "CUDA_DEVICE_ORDER" in visible_gpus(mixed, "1")[1][-1]
    finally:
        os.environ.clear()
        os.environ.update(env)


def test_the_client_host_of_each_request_is_stored(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as st:
        with st.transaction():
            cid = st.campaign_id("c")
            gid = st.config_id(cid, "x", engine="sim", model="m")
            rid = st.add_run(
                campaign_id=cid,
                config_id=gid,
                environment_id=None,
                source="inferlab bench",
                definitions="inferlab/1",
                metrics_version=1,
                label="C=2",
                concurrency=2,
                rate=None,
                model="m",
                workload={},
                records=[_rec(0, 100, "h1:aa"), _rec(1, 200)],
                summary={},
            )
        assert [r.client for r in st.requests(rid)] == ["h1:aa", None]


def test_the_sim_waits_its_startup_delay_before_listening() -> None:
    t0 = time.monotonic()
    with start_sim("--startup-s", "1.5") as sim:
        took = time.monotonic() - t0
        assert took >= 1.5
        assert "loading weights (a 1.5 s startup delay)" in sim.stderr()


def test_bad_addresses_are_refused_quickly() -> None:
    with pytest.raises(ConfigError, match="expected HOST:PORT"):
        resolve_address("nowhere")
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=r"cannot reach a Ray cluster at 192\.0\.2\.1:6379"):
        connect("192.0.2.1:6379", timeout_s=1.0)  # TEST-NET-1: never answers
    assert time.monotonic() - t0 < 5


def test_cli_bad_input_without_a_cluster(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    camp = tmp_path / "c.toml"
    camp.write_text(
        '[campaign]\nname = "x"\n[engine]\nkind = "sim"\n[[config]]\nname = "a"\n'
        "[load]\nconcurrency = [1]\nrequests = 2\n"
    )
    with monkeypatch.context() as m:  # the extra not installed: `import ray` fails
        m.setitem(sys.modules, "ray", None)
        p = cli("run", str(camp), "--ray", "auto")
    assert p.exit_code == 2 and "pip install 'inferlab[ray]'" in p.stderr, p.stderr
    t0 = time.monotonic()
    p = cli("run", str(camp), "--ray", "127.0.0.1:1")
    assert p.exit_code == 2 and "cannot reach a Ray cluster at 127.0.0.1:1" in p.stderr
    assert time.monotonic() - t0 < 10
    p = cli("bench", "--url", "http://127.0.0.1:1", "-c", "1", "--requests", "1", "--clients", "2")
    assert p.exit_code == 2 and "--clients: needs --ray" in p.stderr
    p = cli("tune", "fp8-gemm", "--shape", "7168,2048", "--ray", "auto", "--devices", "0")
    assert p.exit_code == 2 and "--ray: Ray gives each actor one GPU" in p.stderr


def test_configs_that_ran_on_different_gpu_models_are_refused_without_force(
    tmp_path: Path,
) -> None:
    from inferlab.errors import NotComparable
    from inferlab.report.compare import build_comparison

    base = {"host": "vm", "ray_node_id": "a" * 40, "gpu_count": 1, "cuda_visible_devices": "0"}
    with Store(tmp_path / "g.db") as st:
        with st.transaction():
            cid = st.campaign_id("c")
            for name, gpu, node in (("base", "NVIDIA H200", "a"), ("other", "NVIDIA H100", "b")):
                gid = st.config_id(cid, name, engine="sim", model="m")
                eid = st.environment_id({**base, "gpu_name": gpu, "ray_node_id": node * 40})
                for trial in range(2):
                    recs = [_rec(i, 10**9 * (i + 1)) for i in range(4)]
                    st.add_run(
                        campaign_id=cid, config_id=gid, environment_id=eid,
                        source="inferlab bench", definitions="inferlab/1", metrics_version=1,
                        label="C=1", concurrency=1, rate=None, trial=trial, model="m",
                        workload={"kind": "random"}, records=recs,
                        summary=summarize(recs).to_json(),
                    )  # fmt: skip
        with pytest.raises(NotComparable, match=r"gpu_name \('NVIDIA H200' vs 'NVIDIA H100'\)"):
            build_comparison(st, campaign="c", baseline="base")
        forced = build_comparison(st, campaign="c", baseline="base", force=True)
        assert forced.cells[("other", "C=1")].forced


def test_the_guard_takes_the_server_down_with_its_launcher() -> None:
    from inferlab.server.lifecycle import guarded

    ok = subprocess.run(guarded(["sh", "-c", "exit 3"]), timeout=30)
    assert ok.returncode == 3  # an ordinary exit passes through
    # the server's environment may not reach inferlab (the H200 run: PYTHONPATH=/tmp/site)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": "/nonexistent", "X": "kept"}
    ok = subprocess.run(guarded(["sh", "-c", 'exit "${#X}"']), env=env, timeout=30)
    assert ok.returncode == 4
    launcher = (
        "import subprocess, sys, time; from inferlab.server.lifecycle import guarded; "
        "p = subprocess.Popen(guarded([sys.executable, '-c', 'import time; time.sleep(120)']), "
        "start_new_session=True); print(p.pid, flush=True); time.sleep(120)"
    )
    parent = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pgid = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + 20
        while len(group_pids(pgid)) < 2 and time.monotonic() < deadline:  # guard + server
            time.sleep(0.1)
        assert len(group_pids(pgid)) == 2
        parent.kill()  # the launcher dies without a word (an actor killed or crashed)
        parent.wait()
        deadline = time.monotonic() + 10
        while group_pids(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_pids(pgid) == []
    finally:
        parent.stdout.close()
        if group_pids(pgid):
            os.killpg(pgid, 9)
