"""``optimize --ray`` and ``tune fp8-gemm --ray`` on a local Ray cluster of this module's own
(tests/support/ray_cluster.py): the search's batches side by side against one fresh incumbent,
and the tuner's items spread over every logical GPU. The engines are real ``inferlab sim``
servers; the store is real SQLite; only the tuner's GPU work is faked (at its seam). Apart from
test_cluster.py so that the two modules' chains run in two xdist workers (each its own head)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from inferlab.cluster.tune import tune_shapes_ray  # noqa: E402
from inferlab.errors import TuneError  # noqa: E402
from inferlab.store import Store  # noqa: E402
from inferlab.tune.space import candidates  # noqa: E402
from support import ray_fakes  # noqa: E402
from support.campaign import write_campaign  # noqa: E402
from support.campaigns import optimize_campaign  # noqa: E402
from support.ray_cluster import launch_records, local_cluster, measured_windows  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with local_cluster() as c:
        yield c


def test_tuning_spreads_items_over_every_gpu_and_merges_each_shape(cluster: Any) -> None:
    shapes, ms = [(7168, 2048), (2112, 7168)], [1, 16, 64, 128]
    lines: list[str] = []
    run = tune_shapes_ray(
        shapes, ms, address=cluster.address, work=ray_fakes.FakeWork, chunk=24,
        progress=lines.append,
    )  # fmt: skip
    assert [(c.n, c.k, c.m) for c in run.results] == [(n, k, m) for n, k in shapes for m in ms]
    assert run.devices == 4 and run.device_name == "Fake_GPU_80GB"
    assert any("on 4 actor(s)" in line for line in lines), lines  # every GPU took items
    assert run.compile_failed and all("fake: no such binary" in x for x in run.compile_failed)
    for c in run.results:
        assert c.gpu_name == ray_fakes.FAKE_GPU and c.triton == "0.0-fake"
        assert not ray_fakes.not_built(c.best) and c.best.num_stages != 5
        allowed = [
            x
            for x in candidates(c.m, c.n, c.k, split_k=True)
            if not ray_fakes.not_built(x) and x.num_stages != 5
        ]
        if c.source == "screen":  # an anchor: the optimum over every chunk of every GPU
            best = min(allowed, key=lambda x: (ray_fakes.fake_us(x, c.m), x.key))
            assert c.best == best and c.screened == len(allowed)
        else:
            assert c.source.startswith("neighbour:") and c.screened < len(allowed)
    with pytest.raises(TuneError, match="a tuning actor failed"):
        tune_shapes_ray(shapes[:1], ms, address=cluster.address, work=ray_fakes.DyingWork, chunk=64)


DIMS_OPT = [
    {"flag": "--itl-ms", "values": ["4", "2"]},
    {"flag": "--jitter-ms", "values": ["0.2", "0.1"]},
]


def test_optimize_runs_each_batch_side_by_side_against_one_fresh_incumbent(
    cluster: Any, tmp_path: Path
) -> None:
    # structure only: under Ray the reference engine runs on the wall clock (no model clock)
    camp = optimize_campaign(
        tmp_path,
        max_requests=40,
        load={
            "max_client_lag_ms": 10_000
        },  # trusted on a loaded host: the A/B runs (no verdict read)
        budget_trials=2,
        parallel=2,
        confirm_launches=2,  # the confirmation's batch on Ray, not its power: 2 launches, not 4
        dim=DIMS_OPT,
    )
    path = write_campaign(
        tmp_path / "opt.toml",
        **camp
        | {"name": "ropt", "args": ["--ttft-ms", "4", "--itl-ms", "4", "--startup-s", "0.2"]},
        engine={"gpus": 1},
        cluster={"server_cpus": 0.5, "client_cpus": 0.5},
    )
    env = {**os.environ, "COLUMNS": "200", "INFERLAB_DB": str(tmp_path / "o.db")}
    cmd = [sys.executable, "-m", "inferlab.cli.main", "optimize", str(path), "--ray"]
    kw: dict[str, Any] = {"capture_output": True, "text": True, "env": env, "cwd": tmp_path}
    dry = subprocess.run([*cmd, cluster.address, "--dry-run"], timeout=120, **kw)
    assert dry.returncode == 0, dry.stderr
    assert "trials in batches of 2 ([search] parallel)" in dry.stdout
    assert "the winner confirmed on 2 fresh launches (baseline, winner)" in dry.stdout
    done = subprocess.run([*cmd, cluster.address, "--format", "json"], timeout=300, **kw)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["trials"] == 2 and out["stopped"] == "budget_trials"
    assert out["best"]["name"] in out["path"] and out["path"][0] == "baseline"
    trials = [t["name"] for t in out["trial_list"]]
    assert [t["batch"] for t in out["trial_list"]] == [1, 1]  # one batch of two
    assert {t["against"] for t in out["trial_list"]} == {"baseline"}
    with Store(tmp_path / "o.db") as st:
        # a winner is confirmed on fresh launches (search.confirm; [search] confirm_launches = 2)
        # before it is recommended
        confirm = {n for n in st.configs.config_names("ropt") if n.startswith("confirm-")}
        assert len(confirm) == (2 if out["best"]["name"] != "baseline" else 0)
        assert set(st.configs.config_names("ropt")) - confirm == {"baseline", "t01-ref", *trials}
        runs = {r.config: r for r in st.runs(campaign="ropt")}
        windows = measured_windows(st, "ropt")
        nodes = {n: d["node_id"] for n, d in launch_records(st).items()}
    assert windows["baseline"][1] <= windows["t01-ref"][0]  # the baseline first, on Ray too
    a, b = (windows[n] for n in trials)
    assert a[0] < b[1] and b[0] < a[1]  # the two trials' servers measured at the same time
    for name in trials:  # each after its batch's incumbent measurement, by an A/B against it
        assert windows[name][0] >= windows["t01-ref"][1]
        seq = (runs[name].stop or {}).get("sequential") or {}
        assert seq.get("baseline") == "t01-ref" and seq.get("metrics"), runs[name].stop
    assert not (runs["t01-ref"].stop or {}).get("sequential")  # the reference: to the cap
    assert len(nodes) == 4 + len(confirm)  # baseline, ref, the trials (+ confirmation): each
