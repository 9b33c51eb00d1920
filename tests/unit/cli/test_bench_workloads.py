"""``bench --trace``: a measured run exported (``inferlab export --what requests``) and
replayed with ``--trace-format inferlab``, sliced by ``--limit``; bad trace options named.
``bench --workload shared-prefix``: prompts sharing P prefixes, token for token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.sim.tokenizer import WordTokenizer
from support.cli import Cli
from support.simproc import SimFactory


def test_a_measured_run_is_replayed_from_its_export(
    sim_server: SimFactory, cli: Cli, tmp_path: Path
) -> None:
    sim = sim_server("--ttft-ms", "1", "--itl-ms", "0.5")
    tok = str(WordTokenizer().save_hf(tmp_path / "tok"))
    env = {"INFERLAB_DB": str(tmp_path / "t.db")}
    p = cli(
        "bench", "--url", sim.url, "--engine", "sim", "--rate", "50", "--requests", "6",
        "--input-tokens", "12", "--output-tokens", "5", "--tokenizer", tok, env=env,
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    out = tmp_path / "requests.jsonl"
    p = cli("export", "--out", str(out), "--what", "requests", "--run", "1", env=env)
    assert p.exit_code == 0, p.stderr
    measured = [json.loads(x) for x in out.read_text().splitlines()]
    p = cli(
        "bench", "--url", sim.url, "--engine", "sim", "--trace", str(out), "--trace-format",
        "inferlab", "--speed", "2", "--limit", "4", "--tokenizer", tok, "--format", "json", env=env,
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    [point] = json.loads(p.stdout)["points"]
    assert point["label"] == "replay:inferlab@2.0x"
    assert point["summary"]["requests"] == 4 and point["pattern"]["limit"] == 4
    first = sorted(measured, key=lambda r: r["scheduled_ns"])[:4]
    span = (first[-1]["scheduled_ns"] - first[0]["scheduled_ns"]) / 1e9
    assert point["pattern"]["speed"] == 2.0 and span > 0
    assert "replay:inferlab@2.0x" in p.stderr  # the table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--trace-window", "5"], "--trace-window: expected START:END seconds"),
        (["--trace-window", "9:3"], "trace_end_s must be after trace_start_s"),
        (["--speed", "fast"], "--speed: expected comma-separated numbers"),
        (["--trace-format", "bailian"], "'--trace-format': Value error, 'bailian' is not one of"),
    ],
)
def test_bad_trace_options_are_named(
    cli: Cli, tmp_path: Path, args: list[str], message: str
) -> None:
    p = cli("bench", "--url", "http://127.0.0.1:1", "--trace", "t.jsonl", *args, "--no-db")
    assert p.exit_code != 0 and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_a_shared_prefix_workload_runs_with_its_label(
    sim_server: SimFactory, cli: Cli, tmp_path: Path
) -> None:
    from inferlab.store import Store

    sim = sim_server("--ttft-ms", "1", "--itl-ms", "0.5")
    tok = str(WordTokenizer().save_hf(tmp_path / "tok"))
    db = tmp_path / "t.db"
    p = cli(
        "bench", "--url", sim.url, "--engine", "sim", "--concurrency", "4", "--requests", "24",
        "--workload", "shared-prefix", "--prefixes", "3", "--prefix-tokens", "40",
        "--suffix-tokens", "6", "--prefix-dist", "zipf:1.1", "--output-tokens", "3",
        "--tokenizer", tok, env={"INFERLAB_DB": str(db)},
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    assert "C=4: preparing 24 prompts (prefix:3x40)" in p.stderr
    with Store(db) as store:
        [run] = store.runs(campaign="bench")
        reqs = store.requests(run.id)
    assert len(reqs) == 24 and all(r.usage_prompt_tokens == 46 for r in reqs)  # engine's count
    from inferlab.store.db import workload_hash

    want = {"kind": "shared-prefix", "output_tokens": 3, "endpoint": "completions",
            "label": "prefix:3x40", "prefix_tokens": 40, "suffix_tokens": 6,
            "prefix_dist": "zipf:1.1"}  # fmt: skip
    assert run.workload_hash == workload_hash(want)
