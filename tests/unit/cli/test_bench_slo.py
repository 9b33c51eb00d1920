"""``bench --slo`` with distribution limits: goodput and holds/fails per point, in the table,
the JSON, the store's report and the export."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from inferlab.sim.tokenizer import WordTokenizer
from support.cli import Cli
from support.simproc import SimFactory


def test_bench_slo_reports_goodput_and_state_per_point(
    sim_server: SimFactory, cli: Cli, tmp_path: Path
) -> None:
    sim = sim_server("--ttft-ms", "2", "--itl-ms", "1")
    tok = WordTokenizer().save_hf(tmp_path / "tok")
    env = {"INFERLAB_DB": str(tmp_path / "t.db")}
    # TPOT is at least the engine's 1 ms gap however loaded the machine: 50 ms holds, 0.5 fails
    for slo in ("tpot_p50_ms=50,ttft_p99_ms=5000", "tpot_p99_ms=0.5"):
        p = cli(
            "bench", "--url", sim.url, "--engine", "sim", "-c", "2", "--requests", "30",
            "--input-tokens", "8", "--output-tokens", "5", "--tokenizer", str(tok), "--format", "json",
            "--slo", slo, "--campaign", "s", "--as", slo.split("=")[0], env=env,
        )  # fmt: skip
        assert p.exit_code == 0, p.stderr
        (point,) = json.loads(p.stdout)["points"]
        got = point["summary"]["slo"]
        want = "holds" if "50" in slo else "fails"
        assert got["state"] == want, got
        assert got["requests"] == 30 and (
            got["good"] >= 25 if want == "holds" else got["good"] < 15
        )
        assert 0 <= got["goodput"]["low"] <= got["goodput"]["estimate"] <= got["goodput"]["high"]
        assert f"{want} (tpot_p" in p.stderr  # the table's SLO column
    rep = cli("report", "s", "--out-dir", str(tmp_path / "rep"), env=env)
    assert rep.exit_code == 0, rep.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## SLO" in md and "| holds |" in md and "| fails |" in md
    out = tmp_path / "runs.csv"
    ex = cli("export", "--out", str(out), "--what", "runs", "--campaign", "s", env=env)
    assert ex.exit_code == 0, ex.stderr
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [r["slo_state"] for r in rows] == ["holds", "fails"]
    assert float(rows[0]["goodput_share"]) >= 25 / 30 and rows[1]["slo"] == "tpot_p99_ms=0.5"


def test_bench_capacity_refuses_an_slo_without_a_percentile_limit(cli: Cli) -> None:
    base = ("bench", "--url", "http://127.0.0.1:9", "-c", "1", "--requests", "auto")
    bad = cli(*base, "--slo", "ttft_ms=500", "--capacity", "8")
    assert bad.exit_code == 2 and "--capacity: needs a percentile limit" in bad.stderr
    assert "Traceback" not in bad.stderr
    bad = cli(*base, "--slo", "tpot_p99_ms=50", "--capacity", "0")
    assert bad.exit_code == 2 and "must be ≥ 1" in bad.stderr


def test_bench_capacity_rate_prints_rates_and_refuses_what_it_cannot_do(
    sim_server: SimFactory, cli: Cli, tmp_path: Path
) -> None:
    base = ("bench", "--url", "http://127.0.0.1:9", "--requests", "20")
    slo = ("--slo", "tpot_p99_ms=50")
    for args, said in (
        (("-c", "1", "--capacity-rate", "8"), "give no --concurrency"),
        (("--rate", "1", "--capacity", "8", "--capacity-rate", "8"), "give one"),
        (("--rate", "1", "--rate-step", "1"), "--rate-step: only with --capacity-rate"),
        (("--rate", "1", "--capacity-rate", "8", "--rate-step", "0"), "must be > 0 req/s"),
        (("--rate", "1", "--capacity-rate", "0.5", "--rate-step", "1"), "below one --rate-step"),
    ):
        bad = cli(*base, *slo, *args)
        assert bad.exit_code == 2 and said in bad.stderr, (args, bad.stderr)
        assert "Traceback" not in bad.stderr
    # TPOT is at least the engine's 1 ms gap: a 0.5 ms limit fails at every rate
    sim = sim_server("--ttft-ms", "2", "--itl-ms", "1")
    tok = WordTokenizer().save_hf(tmp_path / "tok")
    p = cli(
        "bench", "--url", sim.url, "--engine", "sim", "--rate", "20", "--requests", "20",
        "--input-tokens", "8",
        "--output-tokens", "5", "--tokenizer", str(tok), "--slo", "tpot_p99_ms=0.5",
        "--capacity-rate", "40", "--rate-step", "10", "--format", "json", "--no-db",
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    cap = json.loads(p.stdout)["capacity"]
    assert cap["unit"] == "rate" and cap["step"] == 10.0 and cap["up_to"] == 40.0
    # on the ladder, from --rate; never holding (a loaded client may leave a probe untrusted,
    # undecided: the wall clock decides how many probes, the ladder where they are)
    points = [x["point"] for x in cap["probes"]]
    assert points[0] == 20.0 and all(p in (10.0, 20.0, 30.0, 40.0) for p in points)
    assert all(x["state"] != "holds" for x in cap["probes"])
    assert "req/s" in p.stderr and "capacity at SLO tpot_p99_ms=0.5: rate" in p.stderr
