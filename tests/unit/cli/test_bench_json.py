"""``bench --json``: the document carries ``format_version`` (``store.export.FORMAT_VERSION``)."""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store.export import FORMAT_VERSION
from support.cli import Cli
from support.simproc import SimFactory


def test_bench_json_carries_the_format_version(
    sim_server: SimFactory, cli: Cli, tmp_path: Path
) -> None:
    sim = sim_server("--ttft-ms", "2", "--itl-ms", "1")
    tok = WordTokenizer().save_hf(tmp_path / "tok")
    p = cli(
        "bench", "--url", sim.url, "--engine", "sim", "--concurrency", "1", "--requests", "3",
        "--input-tokens", "8", "--output-tokens", "4", "--tokenizer", str(tok), "--format", "json",
        env={"INFERLAB_DB": str(tmp_path / "t.db")},
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    doc = json.loads(p.stdout)
    assert list(doc)[0] == "format_version" and doc["format_version"] == FORMAT_VERSION == 1
    assert [x["label"] for x in doc["points"]] == ["C=1"]
