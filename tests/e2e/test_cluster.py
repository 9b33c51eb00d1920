"""``run --ray`` and ``bench --ray --clients`` on one local Ray cluster shared by this module
(tests/support/ray_cluster.py; ``optimize --ray`` and ``tune fp8-gemm --ray`` have their own in
test_cluster_search.py).
The engines are real ``inferlab sim`` servers with a startup delay standing in for weight
loading; the store is real SQLite; only the tuner's GPU work is faked (at its seam)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from inferlab.campaign.context import CampaignEvents  # noqa: E402
from inferlab.campaign.drivers.runner import run_campaign  # noqa: E402
from inferlab.campaign.stages import table  # noqa: E402
from inferlab.cluster.bench import bench_ray  # noqa: E402
from inferlab.cluster.campaign import run_campaign_ray  # noqa: E402
from inferlab.cluster.connect import CLIENT_RESOURCE, is_subreaper  # noqa: E402
from inferlab.config.bench import BenchConfig, WorkloadSpec  # noqa: E402
from inferlab.errors import ConfigError  # noqa: E402
from inferlab.report.sections.cluster import client_rows, cluster_section, placement_rows  # noqa: E402
from inferlab.sim.presets import get_preset  # noqa: E402
from inferlab.store import Store  # noqa: E402
from inferlab.store.checks import LeverCheck  # noqa: E402
from inferlab.store.models import FilesManifest  # noqa: E402
from support import ROOT  # noqa: E402
from support.campaign import write_campaign  # noqa: E402
from support.campaigns import files  # noqa: E402
from support.pkgcopy import tuned_dir  # noqa: E402
from support.ray_cluster import OBJ, launch_records, local_cluster, measured_windows  # noqa: E402
from support.simproc import group_pids, start_sim  # noqa: E402
from support.warmup import WarmupRecord, with_warmup  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]

FIVE = [
    {"name": "baseline"},
    {"name": "fast", "extends": "baseline", "set": {"--itl-ms": "3"}},
    {"name": "slow", "extends": "baseline", "set": {"--itl-ms": "15"}},
    {"name": "broken", "set": {"--ttft-ms": "-1"}},
    {"name": "reseeded", "extends": "baseline", "args": ["--seed", "4"]},
]
TWO = [{"name": "keeper"}, {"name": "victim", "set": {"--itl-ms": "5"}}]


def _items(store: Store, campaign: str, config: str) -> list[dict[str, Any]] | None:
    """The stored lever items of ``config`` as JSON (None: no lever check stored)."""
    got = store.verifications.latest_of(LeverCheck, campaign, config, "lever")
    return None if got is None else [i.to_json() for i in got.items]


def campaign(
    tmp: Path,
    name: str,
    configs: list[dict[str, Any]],
    *,
    gpus: int = 1,
    cpus: float = 0.5,
    equiv: bool = True,
    conc: tuple[int, ...] = (1, 2),
    requests: int = 8,
    trials: int = 2,
) -> Path:
    """``configs`` of the reference engine (1 s to start), each ``gpus`` GPUs, server and
    client ``cpus`` each; greedy equivalence to the baseline unless not ``equiv``."""
    verify: dict[str, Any] = {"probes": [{"prompt": "hi", "expect": r"\w"}]}
    if equiv:
        verify["equivalent_to"] = configs[0]["name"]  # the baseline: the first config
    verify["equivalence_prompts"] = 2
    return write_campaign(
        tmp / f"{name}.toml",
        name=name,
        engine={
            "args": ["--ttft-ms", "10", "--itl-ms", "4", "--startup-s", "1"],
            "ready_timeout_s": 60,
            "gpus": gpus,
        },
        cluster={"server_cpus": cpus, "client_cpus": cpus},
        config=configs,
        verify=verify,
        load={
            "workload": {"input_tokens": 16, "output_tokens": 16},
            "concurrency": list(conc),
            "requests": requests,
            "trials": trials,
        },
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with local_cluster() as c:
        yield c


def test_connecting_leaves_this_process_reaped_by_init(cluster: Any) -> None:
    # ray.init with child-process reaping makes the driver a child subreaper (and
    # ray.shutdown leaves it one): every orphan of a server would stay a zombie of inferlab
    assert sys.platform != "linux" or is_subreaper() is False


def _content(store: Store, name: str) -> dict[str, Any]:
    """Everything a campaign stored, without timestamps, ids, ports, paths or timings."""
    q = store.db.execute
    runs = []
    for r in store.runs(campaign=name):
        reqs = tuple(
            (x.index, x.warmup, x.status, x.error_kind, x.input_tokens, x.requested_output_tokens,
             x.usage_completion_tokens, x.counted_output_tokens, x.finish_reason,
             len(x.event_ns), tuple(x.event_tokens))
            for x in store.requests(r.id)
        )  # fmt: skip
        runs.append(
            (r.config, r.config_hash, r.label, r.trial, r.workload_hash, r.interrupted, reqs)
        )
    checks = q(
        "SELECT g.name, v.kind, v.passed, CASE WHEN v.kind = 'greedy-outputs' THEN v.detail_json "
        "ELSE '' END FROM verifications v JOIN configs g ON g.id = v.config_id "
        "JOIN campaigns c ON c.id = g.campaign_id WHERE c.name = ?",
        (name,),
    ).fetchall()
    finds = [(f.config, f.kind, f.severity) for f in store.findings(name)]
    return {"runs": sorted(runs), "checks": Counter(checks), "findings": Counter(finds)}


def test_configs_run_side_by_side_and_store_what_one_host_would(
    cluster: Any, tmp_path: Path
) -> None:
    with Store(tmp_path / "seq.db") as st:
        seq = run_campaign(campaign(tmp_path / "s", "five", FIVE), store=st)
        want = _content(st, "five")
    t0 = time.monotonic()
    with Store(tmp_path / "ray.db") as st:
        res = run_campaign_ray(
            campaign(tmp_path / "r", "five", FIVE), store=st, address=cluster.address
        )
        took = time.monotonic() - t0
        assert (
            [(o.config, o.status) for o in res.outcomes]
            == [(o.config, o.status) for o in seq.outcomes]
            == [
                ("baseline", "measured"),
                ("fast", "measured"),
                ("slow", "measured"),
                ("broken", "launch-failed"),
                ("reseeded", "verify-failed"),
            ]
        )
        got = _content(st, "five")
        assert got == want  # complete, and the same content as on one host
        launches, windows = launch_records(st), measured_windows(st, "five")
        recon = {a.name for a in st.analyses("recon", campaign="five")}
        placed = {r[0]: r for r in placement_rows(st, "five")}
        env = {r.config: r.environment for r in st.runs(campaign="five")}
    assert len(got["runs"]) == 3 * 4 and recon
    assert set(placed) == {o.config for o in res.outcomes} and placed["broken"][5] == "failed"
    for name, d in launches.items():
        # the server inherited the GPUs Ray gave its actor
        assert (
            d["server_cuda_visible_devices"]
            == d["cuda_visible_devices"]
            == ",".join(d["ray_gpu_ids"])
        )
        if name in env:
            assert env[name]["ray_node_id"] == d["node_id"]
            assert env[name]["cuda_visible_devices"] == d["cuda_visible_devices"]
    measured = sorted(windows)

    def overlap(a: str, b: str) -> bool:
        return windows[a][0] < windows[b][1] and windows[b][0] < windows[a][1]

    pairs = [(a, b) for i, a in enumerate(measured) for b in measured[i + 1 :] if overlap(a, b)]
    apart = [(a, b) for a, b in pairs if launches[a]["node_id"] != launches[b]["node_id"]]
    assert apart, (windows, launches)  # two configs measured at once on different nodes
    for a, b in pairs:  # configs at once on one node never share a GPU
        if launches[a]["node_id"] == launches[b]["node_id"]:
            assert launches[a]["cuda_visible_devices"] != launches[b]["cuda_visible_devices"]
    print(f"five configs on the cluster: {took:.1f} s")


def test_a_config_no_node_can_hold_is_named_before_anything_starts(
    cluster: Any, tmp_path: Path
) -> None:
    assert subprocess.run(["sh", "-c", "exit 3"]).returncode == 3  # reaping on: still ours
    path = campaign(tmp_path, "huge", TWO, gpus=4)
    with Store(tmp_path / "h.db") as st, pytest.raises(ConfigError) as exc:
        run_campaign_ray(path, store=st, address=cluster.address)
    msg = str(exc.value)
    assert "config 'keeper' needs 4 GPU(s) and 1 CPU(s) on one node" in msg
    assert "has 2 GPU(s) and 2 CPU(s)" in msg and "'victim'" in msg
    assert all(v["state"] == "REMOVED" for v in ray.util.placement_group_table().values())


def test_load_from_two_client_hosts_merges_on_the_driver_clock(
    cluster: Any, tmp_path: Path
) -> None:
    with start_sim("--ttft-ms", "20", "--itl-ms", "5") as sim:
        cfg = BenchConfig(
            url=sim.url,
            engine="sim",
            concurrency=[2, 4],
            requests=16,
            workload=WorkloadSpec(input_tokens=16, output_tokens=16),
        )
        with pytest.raises(ConfigError, match=r"--clients 2: the cluster has 1 client node\(s\)"):
            bench_ray(cfg, address=cluster.address, clients=2)
        extra = cluster.add_node(
            num_cpus=1, resources={CLIENT_RESOURCE: 1}, object_store_memory=OBJ
        )
        try:
            cluster.wait_for_nodes()
            skews = [3_000_000_000, -2_000_000_000]  # the two hosts' clocks, vs the driver's
            before = time.perf_counter_ns()
            res, ids = bench_ray(
                cfg, address=cluster.address, clients=2, db=tmp_path / "b.db", skews_ns=skews
            )
            after = time.perf_counter_ns()
        finally:
            cluster.remove_node(extra)
    assert len(res.points) == 2 and len(ids) == 2
    for p in res.points:
        assert p.clients is not None
        hosts = p.clients["hosts"]
        assert len({h["client"] for h in hosts}) == 2 and sum(h["requests"] for h in hosts) == 16
        for h, skew in zip(hosts, skews):
            assert abs(h["offset_ns"] - skew) <= h["bound_ns"] + 1_000_000, h
        # uncorrected, one host's sends would be 3 s in the future and the other's 2 s ago
        assert all(before < r.send_ns < r.end_ns < after for r in p.records)
        # latencies are durations, untouched by the ±2-3 s clock skews: bounds wide enough for a
        # loaded machine (this module runs in the parallel pass), far below a skew's error
        assert 18 < p.summary.ttft_ms.p50 < 1000
        assert p.summary.duration_s < 2.5
    with Store(tmp_path / "b.db") as st:
        stored = st.requests(ids[0])
        assert len({r.client for r in stored}) == 2 and None not in {r.client for r in stored}
        assert st.runs(run_ids=[ids[0]])[0].summary["clients"]["window_error_ms"] >= 0
        rows = client_rows(st, "bench")  # the report splits latency by client host
        assert len(rows) == 2 * 2 and {r[3] for r in rows} == {r.client for r in stored}
        assert all(18 < float(r[5]) < 1000 for r in rows)
        sec = cluster_section(st, "bench")
        assert sec is not None and all(r[3] in sec.markdown for r in rows)


def test_the_cli_plans_and_runs_a_campaign_on_the_cluster(cluster: Any, tmp_path: Path) -> None:
    # "dies" exits at its 6th generation request, inside a measured trial whatever the load
    # (a time-based exit, 4 s after its first request, fell before the trials on a loaded host)
    dies = {"name": "dies", "args": ["--fault", "exit", "--fault-every", "6"]}
    two = [{"name": "solo"}, dies]
    path = campaign(tmp_path, "cli", two, equiv=False, conc=(1,), requests=4, trials=3)
    env = {**os.environ, "COLUMNS": "200", "INFERLAB_DB": str(tmp_path / "cli.db")}
    cmd = [sys.executable, "-m", "inferlab.cli.main", "run", str(path), "--ray", cluster.address]
    kw: dict[str, Any] = {"capture_output": True, "text": True, "env": env, "cwd": tmp_path}
    dry = subprocess.run([*cmd, "--dry-run"], timeout=120, **kw)
    assert dry.returncode == 0, dry.stderr
    assert "[ray] solo: STRICT_PACK [{'GPU': 1.0, 'CPU': 0.5}, {'CPU': 0.5}]" in dry.stdout
    done = subprocess.run(cmd, timeout=300, **kw)
    assert done.returncode == 0, done.stderr
    assert "solo: measured (3 runs stored)" in done.stdout and "dies: failed" in done.stdout
    with Store(tmp_path / "cli.db") as st:  # the server watch under --ray, as on one host
        runs = st.runs(campaign="cli", config="dies")
        assert len([r for r in runs if not r.interrupted]) < 3 and "exited with code" in done.stderr
        for r in runs:  # a point it died in is stored interrupted, with the warning
            warns = [w["kind"] for w in st.runs.meta(r.id)["warnings"]]
            assert r.interrupted == ("server-exited" in warns)
    report = Path(next(ln for ln in done.stdout.splitlines() if ln.endswith(".md"))[8:])
    text = (tmp_path / report).read_text()
    assert "Cluster" in text and "Where each config ran" in text


class _LoseNode(CampaignEvents):
    """Removes the node of config ``victim`` once its first point is stored."""

    def __init__(self, cluster: Any, store: Store) -> None:
        self.cluster, self.store = cluster, store
        self.removed: str | None = None

    def point_finished(self, result: Any) -> None:
        last = self.store.db.execute(
            "SELECT g.name FROM runs r JOIN configs g ON g.id = r.config_id "
            "ORDER BY r.id DESC LIMIT 1"
        ).fetchone()[0]
        if last != "victim" or self.removed:
            return
        self.removed = launch_records(self.store)["victim"]["node_id"]
        node = next(n for n in self.cluster.list_all_nodes() if n.node_id == self.removed)
        self.cluster.remove_node(node)


def test_a_lost_node_fails_only_its_configs_cells_and_resume_reruns_them(
    cluster: Any, tmp_path: Path
) -> None:
    path = campaign(tmp_path, "lossy", TWO, cpus=1, equiv=False, conc=(1,), requests=6, trials=3)
    with Store(tmp_path / "l.db") as st:
        events = _LoseNode(cluster, st)
        res = run_campaign_ray(path, store=st, address=cluster.address, events=events)
        status = {o.config: o for o in res.outcomes}
        assert events.removed and status["keeper"].status == "measured"
        victim = status["victim"]
        assert victim.status == "failed" and "was lost" in victim.message
        assert "C=1#1, C=1#2 failed" in victim.message and "--resume reruns them" in victim.message
        lost = [f for f in st.findings("lossy") if f.kind == "node-lost"]
        assert len(lost) == 1 and lost[0].evidence["cells"] == [["C=1", 1], ["C=1", 2]]
        cells = Counter((r.config, r.trial) for r in st.runs(campaign="lossy"))
        assert cells == Counter(
            {("keeper", 0): 1, ("keeper", 1): 1, ("keeper", 2): 1, ("victim", 0): 1}
        )
        group = int(launch_records(st)["victim"]["server_pid"])  # its process group
        deadline = time.monotonic() + 20
        while group_pids(group) and time.monotonic() < deadline:
            time.sleep(0.2)
        leaked = group_pids(group)
        if leaked:
            os.killpg(group, 9)
        assert not leaked, "the lost node's server outlived its actor"
        cluster.add_node(num_cpus=2, num_gpus=2, object_store_memory=OBJ)
        cluster.wait_for_nodes()
        again = run_campaign_ray(path, store=st, address=cluster.address, resume=True)
        assert {o.config: o.status for o in again.outcomes} == {
            "keeper": "skipped",
            "victim": "measured",
        }
        cells = Counter((r.config, r.trial) for r in st.runs(campaign="lossy"))
        assert set(cells.values()) == {1} and len(cells) == 6


class _Told(CampaignEvents):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def test_files_go_into_the_package_on_the_servers_node_and_are_proved_read(
    cluster: Any, tmp_path: Path, engine_python: Path, configs_dir: Path
) -> None:
    shapes = get_preset("generic").fp8_gemm_shapes
    tuned_dir(tmp_path / "tuned", shapes, "NVIDIA H100 80GB HBM3")
    saved_run = ROOT / "benchmarks/fp8_gemm_tune_h200x2/tune_cli_2gpu.json"  # real, 2×H200
    saved = {"name": "S", "extends": "baseline", "tune": {"fp8_gemm": saved_run}}
    logged = {"name": "T", "extends": "baseline", "tune": {"fp8_gemm": "from-log"}}
    spec = files(engine_python, saved, logged)
    spec["cluster"] = {"server_cpus": 0.5, "client_cpus": 0.5}
    events = _Told()
    with Store(tmp_path / "f.db") as st:
        res = run_campaign_ray(
            write_campaign(tmp_path / "c.toml", **spec), store=st, address=cluster.address,
            events=events,
        )  # fmt: skip
        status = {o.config: (o.status, o.message) for o in res.outcomes}
        levers = {c: _items(st, "files", c) for c in ("A", "S", "baseline")}
        states = [(a.name, a.data.state) for a in st.analyses.of(FilesManifest, "files", "files")]
        base_log = Path(
            st.verifications.launches("files", config="baseline")[-1].detail.log_path or ""
        )
        windows, lines = measured_windows(st, "files"), events.lines
    assert all(status[c][0] == "measured" for c in ("baseline", "A", "S")), status
    # tuned on its node's GPUs from the baseline's log (sent by the driver): there are none here
    assert status["T"][0] == "failed" and "needs an NVIDIA GPU" in status["T"][1], status["T"]
    assert "tune = { fp8_gemm = " in status["T"][1]
    assert levers["baseline"] is None
    items = {i["item"]: i for i in levers["A"] or []}
    assert items["files fp8_gemm"]["status"] == "applied", items  # read, as under `run`
    assert "Using configuration from" in items["files fp8_gemm"]["evidence"]
    assert items["env NCCL_PROTO"]["status"] == "applied"
    s_items = {i["item"]: i for i in levers["S"] or []}  # a saved run, made on the node
    assert s_items["files fp8_gemm"]["status"] == "not-applied", s_items
    assert sorted(states) == sorted(
        [(f"{c}:fp8_gemm", s) for c in ("A", "S") for s in ("installed", "restored")]
    )
    assert not configs_dir.exists()  # restored exactly on the node: the sim shipped none
    assert "Using default W8A8 Block FP8 kernel config" in base_log.read_text()
    assert any(ln.startswith("A: files fp8_gemm: ") for ln in lines), lines
    assert any(ln.startswith("A: files restored") and "as before" in ln for ln in lines), lines
    assert (tmp_path / "out/tuned/T-baseline.log").read_text() == base_log.read_text()
    for c in ("A", "S"):  # a config that installs files ran alone
        others = [w for n, w in windows.items() if n != c]
        assert all(w[1] < windows[c][0] or windows[c][1] < w[0] for w in others), windows


def test_a_new_stage_runs_on_the_cluster_too(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worked example's stage (tests/support/warmup.py, docs/design.md "The campaign
    pipeline"): one line in the stage table, and the ``--ray`` driver enters it for every
    config, in the driver, on the same context as ``run`` and ``up``
    (tests/unit/campaign/test_new_stage.py)."""
    monkeypatch.setattr(table, "STAGES", with_warmup)
    configs = [{"name": "keeper"}, {"name": "fast", "extends": "keeper", "set": {"--itl-ms": "3"}}]
    path = campaign(tmp_path, "warm", configs, conc=(1,), requests=4, trials=1)
    with Store(tmp_path / "db.sqlite") as store:
        res = run_campaign_ray(path, store=store, address=cluster.address)
        assert [o.status for o in res.outcomes] == ["measured", "measured"]
        for name in ("keeper", "fast"):
            assert store.latest_verification("warm", name, "warmup") == WarmupRecord(requests=3)
