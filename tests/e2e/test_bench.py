"""``inferlab bench`` against the reference engine as a real subprocess on loopback (the command
in process, but for Ctrl-C: a real SIGINT to a real ``inferlab bench``)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.errors import ServerRejected
from inferlab.load.bench import run_bench
from inferlab.records import ErrorKind
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.stats.metrics import itl_ms
from support.cli import Cli
from support.simproc import SimFactory, ctrl_c_default, start_sim


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return WordTokenizer().save_hf(tmp_path_factory.mktemp("tok"))


def cfg(url: str, tokdir: Path | None = None, **kw: object) -> BenchConfig:
    base: dict[str, object] = dict(
        url=url,
        engine="sim",
        concurrency=[2],
        requests=8,
        workload=WorkloadSpec(input_tokens=16, output_tokens=12),
        tokenizer=tokdir,
    )
    base.update(kw)
    return BenchConfig(**base)  # type: ignore[arg-type]


def test_sweep_matches_ground_truth_per_request(sim_server: SimFactory, tokdir: Path) -> None:
    sim = sim_server("--ttft-ms", "30", "--itl-ms", "4")
    res = run_bench(cfg(sim.url, tokdir, concurrency=[1, 4], requests=12, warmup=2))
    truth = {t["request_id"]: t for t in sim.truth()}
    assert [p.point.label for p in res.points] == ["C=1", "C=4"]
    for p in res.points:
        assert p.summary.requests == 12 and p.summary.ok == 12
        warm = [r for r in p.records if r.warmup]
        assert len(warm) == 2  # stored, but not in the statistics
        assert p.summary.ttft_ms.count == 12
        assert p.summary.peak_concurrency <= (p.point.pattern.loop_concurrency or 0)
        for r in p.records:
            t = truth[r.request_id]
            assert r.usage_completion_tokens == 12 == r.counted_output_tokens == sum(r.event_tokens)
            assert r.input_tokens == 16 == t["prompt_tokens"]
            assert len(r.event_ns) == len(t["chunks"]) == 12
            # every token event arrives after the server wrote it, and not much later
            for arrival, (_, written, _) in zip(r.event_ns, t["chunks"], strict=True):
                assert 0 < arrival - written < 50_000_000
            assert r.send_ns < t["recv_ns"]
            assert r.warnings == []
    # the summary is its definition over the records (no wall-clock ceiling, which a loaded
    # machine breaks): TTFT is first token event - send, at least the 30 ms the server waited
    # before its first chunk (it never writes early); TPOT is (last - first) / (n - 1)
    c1 = res.points[0].summary
    timed = [r for r in res.points[0].records if not r.warmup]
    ttft = sorted((r.event_ns[0] - r.send_ns) / 1e6 for r in timed)
    tpot = sorted((r.event_ns[-1] - r.event_ns[0]) / 1e6 / 11 for r in timed)
    assert c1.ttft_ms.min == pytest.approx(ttft[0]) and c1.ttft_ms.max == pytest.approx(ttft[-1])
    assert c1.tpot_ms.min == pytest.approx(tpot[0]) and c1.tpot_ms.max == pytest.approx(tpot[-1])
    assert c1.ttft_ms.min >= 30.0
    assert c1.output_tok_s > 0 and c1.ttft_mean_ci.low <= c1.ttft_ms.mean <= c1.ttft_mean_ci.high


def test_multi_token_chunks_spread_itl(sim_server: SimFactory, tokdir: Path) -> None:
    sim = sim_server("--ttft-ms", "10", "--itl-ms", "5", "--tokens-per-chunk", "4")
    res = run_bench(
        cfg(
            sim.url,
            tokdir,
            concurrency=[1],
            requests=4,
            workload=WorkloadSpec(input_tokens=8, output_tokens=13),
        )
    )
    r = res.points[0].records[0]
    assert r.event_tokens == [1, 4, 4, 4]
    gaps = itl_ms(r)
    assert len(gaps) == 12  # one per token after the first event
    # each chunk's gap is spread over its 4 tokens: 4 equal gaps a chunk, summing to the gap
    # between the events (the sim's 5 ms are wall-clock sleeps: their size is sim_capacity's
    # figure, not a test's; on a loaded machine one read 8+ ms)
    ev = r.event_ns
    want = [(ev[i] - ev[i - 1]) / 1e6 / 4 for i in (1, 2, 3) for _ in range(4)]
    assert gaps == pytest.approx(want) and all(g > 0 for g in gaps)
    s = res.points[0].summary
    assert s.icl_ms.p50 > 3 * s.itl_ms.p50


def test_open_loop_rate_and_queue_delay(sim_server: SimFactory, tokdir: Path) -> None:
    sim = sim_server("--ttft-ms", "5", "--itl-ms", "1")
    res = run_bench(
        cfg(
            sim.url,
            tokdir,
            concurrency=[],
            rate=[40.0],
            requests=20,
            arrival="gamma",
            burstiness=0.5,
            max_concurrency=4,
        )
    )
    p = res.points[0]
    assert p.point.label.startswith("rate=40/s")
    assert p.summary.ok == 20
    assert all(r.scheduled_ns is not None for r in p.records)
    assert p.summary.queue_delay_ms.count == 20
    assert p.summary.peak_concurrency <= 4


def test_duration_stop(sim_server: SimFactory, tokdir: Path) -> None:
    sim = sim_server("--ttft-ms", "5", "--itl-ms", "1")
    t0 = time.monotonic()
    res = run_bench(cfg(sim.url, tokdir, requests=None, duration_s=1.0))
    took = time.monotonic() - t0
    s = res.points[0].summary
    assert s.ok > 10
    assert took < 20
    assert s.duration_s < 1.5


def test_server_tokenizer_when_no_local_one(sim_server: SimFactory) -> None:
    sim = sim_server("--ttft-ms", "1", "--itl-ms", "1")
    res = run_bench(cfg(sim.url, None, requests=4))
    r = res.points[0].records[0]
    assert r.input_tokens == 16 and r.counted_output_tokens == 12


def test_faults_are_classified_not_raised(sim_server: SimFactory, tokdir: Path) -> None:
    sim = sim_server(
        "--ttft-ms",
        "2",
        "--itl-ms",
        "1",
        "--fault",
        "close",
        "--fault-after",
        "3",
        "--fault-every",
        "2",
    )
    res = run_bench(cfg(sim.url, tokdir, requests=8))
    s = res.points[0].summary
    assert s.ok == 4 and s.errors == {"truncated": 4}
    assert any(w.kind == "errors" for w in res.points[0].warnings)
    assert s.ttft_ms.count == 4  # errors never enter latency


def test_stall_hits_the_stall_timeout(sim_server: SimFactory, tokdir: Path) -> None:
    sim = sim_server("--ttft-ms", "2", "--itl-ms", "1", "--fault", "stall", "--fault-after", "2")
    t0 = time.monotonic()
    res = run_bench(cfg(sim.url, tokdir, requests=2, stall_timeout_s=0.5))
    took = time.monotonic() - t0
    recs = res.points[0].records
    assert {r.error_kind for r in recs} == {ErrorKind.STALL}
    assert all(len(r.event_ns) == 2 for r in recs)
    assert took < 15


def test_malformed_and_http500(sim_server: SimFactory, tokdir: Path) -> None:
    sim = sim_server(
        "--fault", "malformed", "--fault-after", "1", "--ttft-ms", "1", "--itl-ms", "1"
    )
    res = run_bench(cfg(sim.url, tokdir, requests=2))
    assert {r.error_kind for r in res.points[0].records} == {ErrorKind.MALFORMED}
    sim = sim_server("--fault", "http500", "--fault-every", "2", "--ttft-ms", "1", "--itl-ms", "1")
    res = run_bench(cfg(sim.url, tokdir, concurrency=[1], requests=4))
    bad = [r for r in res.points[0].records if not r.ok]
    assert len(bad) == 2 and all(r.status == 500 for r in bad)
    assert all("simulated internal error" in (r.error_message or "") for r in bad)


def test_wrong_model_stops_with_the_servers_message(tokdir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with start_sim() as sim, pytest.raises(ServerRejected, match="does not exist"):
        run_bench(cfg(sim.url, tokdir, model="nope", requests=50), out=out)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    point = [x for x in lines if x["type"] == "point"]
    assert point and point[0]["rejected"].startswith("HTTP 404")
    assert len([x for x in lines if x["type"] == "request"]) < 50  # it stopped early


def test_cli_bench_out_json_and_no_secret(
    sim_server: SimFactory, cli: Cli, tokdir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run.jsonl"
    secret = "sk-test-SECRET-1234567890"
    sim = sim_server("--ttft-ms", "2", "--itl-ms", "1")
    p = cli(
        "bench",
        "--url",
        sim.url,
        "--concurrency",
        "1,2",
        "--requests",
        "6",
        "--input-tokens",
        "8",
        "--output-tokens",
        "5",
        "--engine",
        "sim",
        "--tokenizer",
        str(tokdir),
        "--api-key-env",
        "MY_KEY",
        "--out",
        str(out),
        "--format",
        "json",
        env={"MY_KEY": secret, "INFERLAB_DB": str(tmp_path / "t.db")},
    )
    assert p.exit_code == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [x["label"] for x in doc["points"]] == ["C=1", "C=2"]
    assert doc["points"][0]["summary"]["ok"] == 6
    text = out.read_text()
    lines = [json.loads(x) for x in text.splitlines()]
    assert lines[0]["type"] == "meta" and lines[0]["format"] == "inferlab.bench/2"
    assert lines[0]["config"]["api_key_env"] == "MY_KEY"
    assert sum(x["type"] == "request" for x in lines) == 12
    assert secret not in text and secret not in p.stdout and secret not in p.stderr
    assert "C=1" in p.stderr  # the table goes to stderr with --json


def test_cli_table_and_user_errors(
    sim_server: SimFactory, cli: Cli, tokdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERLAB_DB", str(tmp_path / "t.db"))
    sim = sim_server("--ttft-ms", "2", "--itl-ms", "1")
    p = cli(
        "bench",
        "--url",
        sim.url,
        "-c",
        "2",
        "--requests",
        "4",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--engine",
        "sim",
        "--tokenizer",
        str(tokdir),
    )
    assert p.exit_code == 0, p.stderr
    assert "C=2" in p.stdout and "TTFT" in p.stdout
    bad = cli("bench", "--url", sim.url, "-c", "1,x", "--requests", "4")
    assert bad.exit_code == 2 and "--concurrency" in bad.stderr
    assert "Traceback" not in bad.stderr
    bad = cli("bench", "--url", sim.url, "-c", "1")
    assert bad.exit_code == 2 and "--requests or --duration" in bad.stderr
    bad = cli("bench", "--url", sim.url, "-c", "1", "--requests", "2", "--slo", "ttft=3")
    assert bad.exit_code == 2 and "unknown key 'ttft'" in bad.stderr
    bad = cli(
        "bench", "--url", sim.url, "-c", "1", "--requests", "2", "--tokenizer", "/nonexistent"
    )
    assert bad.exit_code == 2 and "/nonexistent" in bad.stderr
    bad = cli("bench", "--url", "ftp://x", "-c", "1", "--requests", "2")
    assert bad.exit_code == 2 and "--url" in bad.stderr
    bad = cli(
        "bench",
        "--url",
        sim.url,
        "-c",
        "1",
        "--requests",
        "2",
        "--api-key-env",
        "SURELY_UNSET_VAR",
    )
    assert bad.exit_code == 2 and "SURELY_UNSET_VAR" in bad.stderr


def test_ctrl_c_writes_what_was_measured(tokdir: Path, tmp_path: Path) -> None:
    out = tmp_path / "int.jsonl"
    with start_sim("--ttft-ms", "5", "--itl-ms", "20") as sim:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inferlab.cli.main",
                "bench",
                "--url",
                sim.url,
                "-c",
                "2",
                "--requests",
                "400",
                "--input-tokens",
                "8",
                "--output-tokens",
                "10",
                "--engine",
                "sim",
                "--tokenizer",
                str(tokdir),
                "--out",
                str(out),
                "--db",
                str(tmp_path / "int.db"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=ctrl_c_default,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until some requests have finished
            time.sleep(0.5)
            if len(sim.truth()) >= 6:
                break
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    point = [x for x in lines if x["type"] == "point"][0]
    assert point["interrupted"] is True
    reqs = [x for x in lines if x["type"] == "request"]
    assert point["summary"]["ok"] >= 4
    assert 4 <= len(reqs) < 400
    assert "C=2 (interrupted)" in stdout


def test_several_worker_processes_closed_and_open(sim_server: SimFactory, tokdir: Path) -> None:
    sim = sim_server("--ttft-ms", "5", "--itl-ms", "2")
    res = run_bench(cfg(sim.url, tokdir, concurrency=[5], rate=[50.0], requests=20, workers=2))
    truth = {t["request_id"] for t in sim.truth()}
    closed, opened = res.points
    for p in (closed, opened):
        assert p.workers == 2
        assert p.summary.ok == 20
        assert {r.worker for r in p.records} == {0, 1}
        assert len({r.request_id for r in p.records}) == 20
        assert {r.request_id for r in p.records} <= truth
    assert closed.summary.peak_concurrency <= 5
