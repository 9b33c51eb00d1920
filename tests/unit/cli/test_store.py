"""``inferlab import`` in process: real result files of other tools into the store."""

from __future__ import annotations

from pathlib import Path

from support import FIXTURES
from support.cli import Cli

FIX = FIXTURES / "imports"
VLLM = FIX / "vllm-0.17.1_bench-serve_save-result_llama31-8b_conc12_run1.json"


def test_cli_import(cli: Cli, tmp_path: Path) -> None:
    db = str(tmp_path / "i.db")
    ok = cli("import", str(VLLM), "--db", db)
    assert ok.exit_code == 0, ok.stderr
    assert "vllm bench serve, 1 run(s)" in ok.stderr
    unknown = tmp_path / "x.json"
    unknown.write_text('{"hello": 1}')
    bad = cli("import", str(unknown), "--db", db)
    assert bad.exit_code == 2 and "x.json" in bad.stderr and "Traceback" not in bad.stderr
