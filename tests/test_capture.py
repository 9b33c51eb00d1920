"""Profiles captured inside a campaign: the reference engine (SGLang's endpoints), real files,
a real HTTP server for the faults, the real store and report."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.campaign.capture import Controller
from inferlab.campaign.collect import CaptureFailed, LocalFiles, SshFiles, wait_complete
from inferlab.campaign.profiled import record_death
from inferlab.campaign.runner import make_plan, render_plan, run_campaign
from inferlab.config.campaign import ProfileSection
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines.capture import SGLANG_CAPTURE
from inferlab.errors import ConfigError
from inferlab.report.data import build_report
from inferlab.report.render import render_markdown
from inferlab.server import LaunchSpec, launch
from inferlab.store import Store
from support import FIXTURES
from support.cli import Cli

CAMPAIGN = """
[campaign]
name = "cap"
output = "{out}"

[engine]
kind = "{kind}"
# --time-scale 0.1: a decode step at C=16 takes ~69 ms, so the batch stays at ~16 while the
# client's turnaround is under a step (its lag p99 on a busy 2-CPU machine: 1.5-2.5 ms); at
# 0.01 a step was ~7 ms and a loaded machine's turnaround let the batch sag (attention led)
args = ["--preset", "dsv4-flash-8gpu", "--time-scale", "0.1", "--tp-size", "2"]
{url}
ready_timeout_s = 30
stop_grace_s = 5

[[config]]
name = "baseline"

[[config]]
name = "A"
extends = "baseline"
args = ["--tuned-fp8"]
env = {{ NCCL_PROTO = "LL" }}

[verify]
enabled = false

[load]
workload = {{ kind = "random", input_tokens = 32, output_tokens = 24 }}
concurrency = [1, 16]
duration_s = 1.0

[profile]
{profile}
"""


def write(tmp: Path, profile: str = 'at = ["C=16"]', kind: str = "sim", url: str = "") -> Path:
    p = tmp / "c.toml"
    p.write_text(CAMPAIGN.format(out=tmp / "out", kind=kind, url=url, profile=profile))
    return p


def test_plan_time_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c\.toml:\d+: profile\.at: 'C=32' is not a load point"):
        make_plan(write(tmp_path, 'at = ["C=1", "C=32"]'))
    with pytest.raises(ConfigError, match=r"profile\.configs: no config 'B'"):
        make_plan(write(tmp_path, 'at = ["C=16"]\nconfigs = ["B"]'))
    with pytest.raises(ConfigError, match=r"c\.toml:\d+: profile: .*'openai' has no capture"):
        make_plan(write(tmp_path, kind="openai", url='url = "http://127.0.0.1:9"'))
    with pytest.raises(ConfigError, match=r"inferlab profile TRACE --campaign cap --config"):
        make_plan(write(tmp_path, kind="openai", url='url = "http://127.0.0.1:9"'))


def test_plan_says_profiling_on(tmp_path: Path) -> None:
    text = "\n".join(render_plan(make_plan(write(tmp_path, 'at = ["C=16"]\nconfigs = ["A"]'))))
    assert text.count("profiling on (SGLANG_TORCH_PROFILER_DIR=") == 1
    assert "vs baseline: + --tuned-fp8 (on); env NCCL_PROTO=LL; profiling on" in text
    assert not (tmp_path / "out").exists()  # a plan creates nothing


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    tmp = tmp_path_factory.mktemp("cap")
    path = write(tmp, 'at = ["C=16"]\nsteps = 20')
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
    assert all("profiling on (SGLANG_TORCH_PROFILER_DIR=" in d for (d,) in launch_detail)
    assert len(rows) == 4
    for r in rows:
        cap = r["data"]["capture"]
        f = Path(cap["path"])
        assert f.is_file() and f.stat().st_size == cap["size_bytes"]
        assert f.parent.parent == path.parent / "out" / "profiles" / r["config"]
        assert cap["point"] == "C=16" and cap["ranks"] == 2 and cap["rank"] in (0, 1)
        assert cap["engine"] == "sim" and cap["simulated"] and cap["mode"] == "gpu"
        assert cap["steps"] == 20 and cap["run_id"] in {x.id for x in prof}
        # under C=16 load the MoE slot GEMV leads; the attention's grid grew with the batch
        top = r["data"]["kernel_rows"][0]
        assert top["category"] == "moe" and "moe_slot_gemv" in top["name"]
        low = {o["name"] for o in r["data"]["occupancy"]}
        assert not any("nsa_sparse_decode" in n for n in low), low
        assert r["data"]["mean_step"]["span_us"] > 0 and r["data"]["verdict"]


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
    path = write(tmp_path, 'at = ["C=16"]\nconfigs = ["baseline"]\nmax_trace_mb = 0.001')
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store)
        assert [o.status for o in res.outcomes] == ["measured", "measured"]
        assert "profile at C=16 failed (too-large)" in res.outcomes[0].message
        (f,) = [x for x in store.findings("cap") if x["kind"] == "profile-capture-failed"]
        assert len(store.runs(campaign="cap")) == 4 and store.analyses("profile") == []
    assert f["config"] == "baseline"
    assert "over max_trace_mb" in f["message"] and "inferlab profile TRACE" in f["action"]


class _NoProfiling(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(404)
        self.end_headers()
        self.wfile.write(b'{"detail":"Not Found"}')

    def log_message(self, *args: object) -> None:
        pass


def test_an_absent_endpoint_is_named(tmp_path: Path) -> None:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoProfiling)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        ctl = Controller(
            SGLANG_CAPTURE, url, ProfileSection(at=["C=1"]), "p", str(tmp_path), LocalFiles(), 1
        )
        ctl.steady.set()
        ctl.run()
    finally:
        srv.shutdown()
        srv.server_close()
    assert ctl.error is not None and ctl.error.reason == "endpoint-absent"
    assert "/start_profile answered 404" in str(ctl.error)


def _gz(path: Path, n: int = 20000) -> bytes:
    data = gzip.compress(json.dumps({"traceEvents": [{"i": i} for i in range(n)]}).encode())
    path.write_bytes(data)
    return data


def _wait(d: Path, ranks: int = 1, timeout: float = 1.0, max_bytes: int = 1 << 30) -> list[str]:
    end = time.monotonic() + timeout
    found = wait_complete(
        LocalFiles(), str(d), "p-*-TP-*.trace.json.gz", (), ranks,
        deadline=lambda: end, timeout_s=timeout, max_bytes=max_bytes, poll_s=0.05,
    )  # fmt: skip
    return [f.name for f in found]


def test_rank_files_are_waited_for_and_checked(tmp_path: Path) -> None:
    with pytest.raises(CaptureFailed, match="no trace matching") as e:
        _wait(tmp_path)
    assert e.value.reason == "no-files"
    data = _gz(tmp_path / "p-1-TP-0.trace.json.gz")
    (tmp_path / "p-1-TP-0.trace.json.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CaptureFailed) as e:
        _wait(tmp_path)
    assert e.value.reason == "truncated"
    _gz(tmp_path / "p-1-TP-0.trace.json.gz")
    with pytest.raises(CaptureFailed, match="over max_trace_mb") as e:
        _wait(tmp_path, max_bytes=100)
    assert e.value.reason == "too-large"
    # the second rank appears while we wait, written in two pieces
    part = tmp_path / "p-1-TP-1.trace.json.gz"

    def writer() -> None:
        blob = gzip.compress(b'{"traceEvents": []}' * 5000)
        part.write_bytes(blob[:100])
        time.sleep(0.3)
        part.write_bytes(blob)

    t = threading.Thread(target=writer)
    t.start()
    assert _wait(tmp_path, ranks=2, timeout=5.0) == [
        "p-1-TP-0.trace.json.gz",
        "p-1-TP-1.trace.json.gz",
    ]
    t.join()
    (tmp_path / "p-1-TP-1.trace.json.gz").unlink()
    with pytest.raises(CaptureFailed, match="1 of 2 rank traces") as e:
        _wait(tmp_path, ranks=2, timeout=0.3)
    assert e.value.reason == "timeout"


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


def test_cli_stores_a_manual_profile_for_a_config_and_point(cli: Cli, tmp_path: Path) -> None:
    trace = FIXTURES / "traces" / "vllm_cpu_decode_c1.pt.trace.json.gz"
    db = tmp_path / "db"
    with Store(db) as store, store.transaction():
        store.config_id(store.campaign_id("cap"), "baseline", engine="vllm", model="m")
    profile = ("profile", str(trace), "--db", str(db))
    r = cli(*profile, "--campaign", "cap", "--config", "baseline", "--point", "16")
    assert r.exit_code == 2 and "--point: expected a closed-loop load point" in r.stderr
    assert cli(*profile, "--config", "baseline").exit_code == 2  # where to? needs --campaign
    r = cli(*profile, "--campaign", "cap", "--config", "baseline", "--point", "C=1", "--json")
    assert r.exit_code == 0, r.stderr
    with Store(db) as store:
        (row,) = store.analyses("profile", campaign="cap")
        md = render_markdown(build_report(store, "cap"))
    cap = row["data"]["capture"]
    assert row["config"] == "baseline" and cap["point"] == "C=1" and cap["mode"] == "cpu"
    assert cap["engine"] == "vllm" and cap.get("rank") is None and not cap["simulated"]
    assert "### baseline at C=1\n" in md and "CPU mode" in md


def test_rank_files_of_a_remote_server_go_through_ssh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ssh seam: a stand-in for the ssh client that runs the (quoted) remote command on this
    host, so the listing, the gzip check and the copy-back are the real commands."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    (bin_dir / "ssh").write_text(
        f'#!/bin/sh\necho "ssh $*" >> {log}\nfor last; do :; done\nexec sh -c "$last"\n'
    )
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    remote = tmp_path / "remote dir"
    remote.mkdir()
    _gz(remote / "p-1-TP-0.trace.json.gz", 2000)
    (remote / "p-1-TP-1.trace.json.gz").write_bytes(b"\x1f\x8b truncated")
    (remote / "other.txt").write_text("x")
    files = SshFiles("user@gpu-host")
    found = files.list(str(remote), "p-*-TP-*.trace.json.gz", ())
    assert [f.name for f in found] == ["p-1-TP-0.trace.json.gz", "p-1-TP-1.trace.json.gz"]
    assert found[0].size == (remote / "p-1-TP-0.trace.json.gz").stat().st_size
    assert files.complete(found[0]) and not files.complete(found[1])
    got = files.fetch(found[0], tmp_path / "local")
    assert got.read_bytes() == (remote / "p-1-TP-0.trace.json.gz").read_bytes()
    calls = log.read_text()
    assert "-o BatchMode=yes -o ConnectTimeout=10 user@gpu-host" in calls
    assert "gzip -t" in calls and "cat -- '" in calls


def test_an_adaptive_profiled_pass_runs_enough_requests_for_its_p99s() -> None:
    from inferlab.campaign.profiled import point_bench
    from inferlab.config.bench import BenchConfig
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
        return point_bench(auto, LoadPoint("C=1", concurrency=1))

    assert bench(50).requests == FEW_SAMPLES == 100  # no few-samples warning on a stored pass
    assert bench(150).requests == 150 and bench(150).concurrency == [1]
