"""The fault matrix: ``inferlab bench`` against the reference engine misbehaving on purpose.

For every fault kind the engine injects (``inferlab.sim.faults.FAULTS``), one sweep runs over
loopback into a real store, and each request is matched to the server's own record of what it
injected (by ``X-Request-Id``): a request the server hit is classified with the kind's error,
every other request succeeds, latency statistics hold only the successful ones, and the store
holds every request as measured.
"""

from __future__ import annotations

import json
import statistics
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.bench import bench_with_record
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.load.bench import BenchResult
from inferlab.load.http import MAX_EVENT_BYTES, Endpoint, Exchange, HttpClient, run_loop
from inferlab.load.sse import parse_stream
from inferlab.records import ErrorKind, RequestRecord
from inferlab.sim.faults import FAULTS, OVERSIZED_BYTES
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support.campaign import write_campaign
from support.cli import Cli
from support.simproc import start_sim

pytestmark = pytest.mark.timeout(120)

FAST = ("--ttft-ms", "2", "--itl-ms", "1")


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return WordTokenizer().save_hf(tmp_path_factory.mktemp("tok"))


def _cfg(url: str, tokdir: Path, **kw: Any) -> BenchConfig:
    base: dict[str, Any] = dict(
        url=url,
        engine="sim",
        concurrency=[2],
        requests=8,
        workload=WorkloadSpec(input_tokens=8, output_tokens=8),
        tokenizer=tokdir,
    )
    base.update(kw)
    return BenchConfig(**base)


def _read_truth(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _sweep(
    tmp: Path, tokdir: Path, sim_args: tuple[str, ...], **bench: Any
) -> tuple[BenchResult, list[int], list[dict[str, Any]], dict[str, Any], Path]:
    """Run one sweep into a fresh store; returns (result, run ids, truth, summary, db)."""
    db = tmp / "f.db"
    truth_path = tmp / "truth.jsonl"
    with start_sim(*FAST, "--truth", str(truth_path), *sim_args) as sim:
        res, ids = bench_with_record(_cfg(sim.url, tokdir, **bench), db=db, campaign="faults")
        alive = sim.proc.poll() is None
        summary = sim.summary() if alive else {}
    return res, ids, _read_truth(truth_path), summary, db


def _classified(
    records: list[RequestRecord], truth: list[dict[str, Any]], kind: str, expect: ErrorKind
) -> int:
    """Every request the server hit has error ``expect``, every other one succeeded; returns
    how many were hit."""
    by_id = {t["request_id"]: t for t in truth}
    hit = 0
    for r in records:
        t = by_id.get(r.request_id)
        assert t is not None, f"{r.request_id}: no ground truth"
        if t["fault"] == kind:
            hit += 1
            assert r.error_kind is expect, (r.error_kind, r.error_message, t["fault"])
        else:
            assert t["fault"] is None and r.ok, (r.error_kind, r.error_message, t)
    return hit


def _latency_excludes_failures(res: BenchResult) -> None:
    for p in res.points:
        good = [r for r in p.records if r.ok and not r.warmup]
        s = p.summary
        assert s.ok == len(good) and s.ttft_ms.count == len(good)
        assert s.e2e_ms.count == len(good)
        if good:
            ttft = [(r.ttft_ns or 0) / 1e6 for r in good]
            assert s.ttft_ms.mean == pytest.approx(statistics.fmean(ttft))
            assert s.ttft_ms.max == pytest.approx(max(ttft))


def _stored_as_measured(db: Path, res: BenchResult, ids: list[int]) -> None:
    assert len(ids) == len(res.points)
    with Store(db) as store:
        for rid, p in zip(ids, res.points):
            stored = {q.request_id: q for q in store.requests(rid)}
            assert set(stored) == {r.request_id for r in p.records}
            for r in p.records:
                q = stored[r.request_id]
                assert (q.error_kind, q.status, q.event_ns) == (r.error_kind, r.status, r.event_ns)


# kind → (sim arguments, bench options, the error it must be classified as)
MATRIX: dict[str, tuple[tuple[str, ...], dict[str, Any], ErrorKind]] = {
    "close": (("--fault-after", "3", "--fault-every", "2"), {}, ErrorKind.TRUNCATED),
    "reset": (("--fault-after", "2", "--fault-every", "2"), {}, ErrorKind.TRUNCATED),
    "hang": (("--fault-every", "3"), {"stall_timeout_s": 1.0}, ErrorKind.STALL),
    "stall": (("--fault-after", "2", "--fault-every", "3"), {"stall_timeout_s": 1.0}, ErrorKind.STALL),
    "drip": (("--fault-after", "1", "--fault-every", "4", "--drip-ms", "2"), {"timeout_s": 1.0}, ErrorKind.TIMEOUT),
    "malformed": (("--fault-after", "1", "--fault-every", "2"), {}, ErrorKind.MALFORMED),
    "nodata": (("--fault-after", "2", "--fault-every", "2"), {}, ErrorKind.MALFORMED),
    "garbage": (("--fault-after", "0", "--fault-every", "3"), {}, ErrorKind.MALFORMED),
    "notsse": (("--fault-every", "2"), {}, ErrorKind.MALFORMED),
    "oversized": (("--fault-after", "2", "--fault-every", "3"), {}, ErrorKind.OVERSIZED),
    "http500": (("--fault-every", "2"), {}, ErrorKind.HTTP),
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(MATRIX))
def test_fault_is_classified_counted_and_stored(kind: str, tokdir: Path, tmp_path: Path) -> None:
    sim_args, bench, expect = MATRIX[kind]
    res, ids, truth, summary, db = _sweep(tmp_path, tokdir, ("--fault", kind, *sim_args), **bench)
    (p,) = res.points
    hit = _classified(p.records, truth, kind, expect)
    assert 0 < hit < len(p.records)
    assert summary["faults"] == {kind: hit}  # the server's own count
    assert p.summary.errors == {expect.value: hit}
    assert any(w.kind == "errors" for w in p.warnings)
    _latency_excludes_failures(res)
    _stored_as_measured(db, res, ids)
    if kind == "reset":
        assert all("reset" in (r.error_message or "") for r in p.records if not r.ok)
    if kind == "oversized":
        assert all("passed 4194304 bytes" in (r.error_message or "") for r in p.records if not r.ok)


def test_every_fault_kind_has_a_test() -> None:
    covered = set(MATRIX) | {"exit", "http429", "http503", "usage"}
    assert covered == set(FAULTS)


def test_429_storm_is_overload_not_a_rejection(tokdir: Path, tmp_path: Path) -> None:
    """Every request answered 429 (the first one too): recorded with Retry-After, the sweep
    goes on through every point (a 4xx on the first request would otherwise stop it)."""
    res, ids, truth, summary, db = _sweep(
        tmp_path, tokdir, ("--fault", "http429"), concurrency=[1, 2], requests=4
    )
    assert [p.point.label for p in res.points] == ["C=1", "C=2"]
    for p in res.points:
        assert p.rejected is None and not p.interrupted
        assert all(r.status == 429 and r.error_kind is ErrorKind.HTTP for r in p.records)
        assert all("(Retry-After: 1)" in (r.error_message or "") for r in p.records)
        assert p.summary.ok == 0 and p.summary.ttft_ms.count == 0
    assert summary["faults"] == {"http429": 8}
    _stored_as_measured(db, res, ids)


def test_503_storm_in_a_time_window(tokdir: Path, tmp_path: Path) -> None:
    """503 for every request received 0.15-0.25 s after the first one, under an open-loop
    load of 200 req/s (sends keep their schedule however fast the failures come back): the
    storm's requests fail, the ones before and after it are measured."""
    res, ids, truth, summary, db = _sweep(
        tmp_path,
        tokdir,
        ("--fault", "http503", "--fault-at-s", "0.15", "--fault-for-s", "0.1"),
        concurrency=[],
        rate=[200.0],
        requests=300,
    )
    (p,) = res.points
    hit = _classified(p.records, truth, "http503", ErrorKind.HTTP)
    assert 0 < hit < len(p.records)
    sends = [r.send_ns for r in p.records if not r.ok]
    assert (max(sends) - min(sends)) / 1e9 < 0.1 + 0.02  # one storm, as long as the window
    first, last = min(sends), max(sends)
    assert any(r.ok and r.send_ns < first for r in p.records)
    assert any(r.ok and r.send_ns > last for r in p.records)
    assert all(r.status == 503 for r in p.records if not r.ok)
    assert summary["faults"] == {"http503": hit}
    _latency_excludes_failures(res)
    _stored_as_measured(db, res, ids)


def test_wrong_usage_is_a_length_warning(tokdir: Path, tmp_path: Path) -> None:
    """A usage event claiming twice the tokens streamed is a length warning on exactly the
    requests the server lied about; none of them fails."""
    res, ids, truth, summary, db = _sweep(
        tmp_path, tokdir, ("--fault", "usage", "--fault-every", "2")
    )
    (p,) = res.points
    lied = {t["request_id"] for t in truth if t["fault"] == "usage"}
    assert summary["faults"] == {"usage": len(lied)} and len(lied) == 4
    assert p.summary.ok == 8 and p.summary.errors == {}
    assert p.summary.length_warnings == len(lied)
    for r in p.records:
        warned = any(
            w == "length: requested 8 output tokens, server reported 16" for w in r.warnings
        )
        assert warned == (r.request_id in lied)
        assert r.counted_output_tokens == 8
    assert any(w.kind == "length-mismatch" for w in p.warnings)
    _stored_as_measured(db, res, ids)


def test_server_exit_mid_run(tokdir: Path, tmp_path: Path) -> None:
    """The server exits at the 6th request: requests in flight are cut (truncated), later ones
    find the port closed (connect); the sweep ends normally with what it measured. The 6th
    request got no byte at all: on a reused connection the client takes that for a stale
    keep-alive, retries once and is refused (connect)."""
    res, ids, truth, summary, db = _sweep(
        tmp_path, tokdir, ("--fault", "exit", "--fault-every", "6"), concurrency=[2, 1], requests=6
    )
    by_id = {t["request_id"]: t for t in truth}
    cut = refused = ok = retried = 0
    for p in res.points:
        for r in p.records:
            t = by_id.get(r.request_id)
            if t is None:
                refused += 1
                assert r.error_kind is ErrorKind.CONNECT, (r.error_kind, r.error_message)
            elif t["fault"] == "exit":
                cut += 1
                assert r.error_kind in (ErrorKind.TRUNCATED, ErrorKind.CONNECT), r.error_message
                retried += r.error_kind is ErrorKind.CONNECT
            else:
                ok += 1
                assert r.ok
    assert cut == sum(1 for t in truth if t["fault"] == "exit") >= 1 and retried <= 1
    assert ok >= 3 and refused >= 6  # the whole C=1 point found the server gone
    assert res.points[1].summary.errors == {"connect": 6}
    _latency_excludes_failures(res)
    _stored_as_measured(db, res, ids)


def _one_request(url: str, max_tokens: int) -> tuple[Exchange, int]:
    """One streamed completion through the timing client; (exchange, peak traced bytes)."""

    async def go() -> tuple[Exchange, int]:
        client = HttpClient(Endpoint.parse(url), timeout_s=30)
        body = {"prompt": "baba bebe", "max_tokens": max_tokens, "stream": True}
        data = client.build("POST", "/v1/completions", json.dumps(body).encode())
        tracemalloc.start()
        try:
            ex = await client.request(data)
            return ex, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            client.close()

    return run_loop(go())


def test_memory_stays_bounded_under_a_10mib_line_and_a_drip() -> None:
    with start_sim(*FAST, "--fault", "oversized", "--fault-after", "1") as sim:
        ex, peak = _one_request(sim.url, 4)
        assert sim.summary()["faults"] == {"oversized": 1}
    assert ex.error_kind is ErrorKind.OVERSIZED
    kept = sum(len(p) for _, p in ex.pieces)
    assert kept <= MAX_EVENT_BYTES + 65536
    assert peak < 1.5 * MAX_EVENT_BYTES < OVERSIZED_BYTES  # never the whole 10 MiB line
    with start_sim(*FAST, "--fault", "drip", "--fault-after", "1", "--drip-ms", "1") as sim:
        ex, peak = _one_request(sim.url, 4)
        (t,) = sim.truth()
    assert ex.error_kind is None and t["fault"] == "drip"
    parsed = parse_stream(ex.pieces, ex.end_ns)
    assert len(parsed.event_ns) == 4 and parsed.saw_done
    body = ex.body()
    assert len(body) > 400 and len(ex.pieces) <= body.count(b"\n") + 2  # not one per byte
    # each event is stamped when its last byte arrived: after the server wrote it (its stamp
    # is taken before the write: no race), and long before the next event's last byte (1 ms a
    # byte): 50 ms is 20× the client's lag p99 on a busy 2-CPU machine
    for arrival, (_, written, _) in zip(parsed.event_ns, t["chunks"], strict=True):
        assert 0 < arrival - written < 50_000_000


def test_campaign_goes_on_after_a_server_exits_mid_run(tmp_path: Path) -> None:
    """crashy's server exits at its 9th request (C=2): C=1 stays stored, C=2 is stored as
    interrupted with its 6 requests, C=4 is never measured against the dead port, the config is
    failed with the exit named, and the next config is measured."""
    crashy = {"name": "crashy", "args": ["--fault", "exit", "--fault-every", "9"]}
    path = write_campaign(
        tmp_path / "c.toml",
        name="crash",
        config=[crashy, {"name": "steady"}],
        load={"concurrency": [1, 2, 4], "requests": 6},
    )
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store)
        out = {o.config: o for o in res.outcomes}
        assert out["crashy"].status == "failed" and out["steady"].status == "measured"
        assert "exited with code 1 during C=2" in out["crashy"].message
        runs = {(r.config, r.label): r for r in store.runs(campaign="crash")}
        assert set(runs) == {
            ("crashy", "C=1"),
            ("crashy", "C=2"),
            *(("steady", f"C={c}") for c in (1, 2, 4)),
        }
        assert not runs["crashy", "C=1"].interrupted and runs["crashy", "C=1"].summary["ok"] == 6
        crashed = runs["crashy", "C=2"]
        assert crashed.interrupted
        kinds = Counter(q.error_kind for q in store.requests(crashed.id))
        # requests 7 and 8 start together; 9, sent when the first of them ends, is the exit:
        # the other one may still be streaming then
        assert 1 <= kinds[None] <= 2 and sum(kinds.values()) == 6
        assert set(kinds) <= {None, ErrorKind.TRUNCATED, ErrorKind.CONNECT}
        stop = store.db.execute(
            "SELECT detail_json FROM verifications v JOIN configs g ON g.id = v.config_id "
            "WHERE g.name = 'crashy' AND v.kind = 'stop'"
        ).fetchone()[0]
        assert "already exited" in stop


def test_cli_bench_reports_faults_and_exits_zero(cli: Cli, tokdir: Path, tmp_path: Path) -> None:
    """``inferlab bench`` itself against a server sending 10 MiB events: exit 0, no traceback,
    the failures counted by kind in the warning."""
    with start_sim(*FAST, "--fault", "oversized", "--fault-every", "2") as sim:
        p = cli(
            "bench", "--url", sim.url, "-c", "2", "--requests", "6", "--input-tokens", "8",
            "--output-tokens", "6", "--engine", "sim", "--tokenizer", str(tokdir),
            "--db", str(tmp_path / "cli.db"),
        )  # fmt: skip
    assert p.exit_code == 0, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert "3 of 6 requests failed (oversized 3)" in p.stderr.replace("\n", " ")
