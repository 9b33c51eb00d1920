"""``inferlab optimize examples/optimize-vllm-h200.toml --dry-run`` on a machine without a GPU:
the example parses, its seven dimensions and the capacity-over-rate objective are said, and its
six flags are checked against vLLM 0.26's own ``--help``, captured on the H200
(tests/fixtures/vllm_gpu/api-server-help.txt), served by a stand-in engine Python."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

from support import ROOT
from support.cli import Cli

EXAMPLE = ROOT / "src" / "inferlab" / "examples" / "optimize-vllm-h200.toml"
HELP = ROOT / "tests" / "fixtures" / "vllm_gpu" / "api-server-help.txt"


def _vllm_026(tmp: Path) -> Path:
    """A Python whose package ``vllm`` (0.26.0) prints the H200's ``--help`` (also for
    ``--help=all``)."""
    site = tmp / "site"
    mod = site / "vllm" / "entrypoints" / "openai"
    mod.mkdir(parents=True)
    for d in (site / "vllm", site / "vllm" / "entrypoints", mod):
        (d / "__init__.py").write_text("")
    (mod / "api_server.py").write_text(f"print(open({str(HELP)!r}).read())\n")
    info = site / "vllm-0.26.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.26.0\n")
    (info / "top_level.txt").write_text("vllm\n")
    py = tmp / "python"
    py.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    return py


def test_the_h200_example_dry_runs_here_with_its_flags_checked(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "tiles").mkdir()
    env = {
        "INFERLAB_VLLM_PYTHON": str(_vllm_026(tmp_path)),
        "INFERLAB_GPU_MODEL": str(tmp_path / "m1b-fp8"),
        "INFERLAB_SERVE_PYTHONPATH": str(tmp_path / "site"),
        "INFERLAB_TUNED_TILES": str(tmp_path / "tiles"),
        "INFERLAB_CACHE": str(tmp_path / "cache"),
    }
    r = cli("optimize", str(EXAMPLE), "--dry-run", "--db", str(tmp_path / "db"), env=env)
    assert r.exit_code == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "capacity over request rate (up to 64 req/s, step 2)" in out
    for dim in (
        "--max-num-seqs (mns): values 64, 128, 256, 512",
        "--max-num-batched-tokens (mnbt): values 2048, 4096, 8192, 16384",
        "--compilation-config (cg): values 64, 128, 256, 512 (ordinal: the sampler sees their "
        'rank) into {"max_cudagraph_capture_size":{value}}',
        "--no-async-scheduling (noasync): given or not",
        f"files fp8_gemm (tiles): values none, {tmp_path / 'tiles'}",
        "--speculative-config (k): values False, 1, 2, 3, 4",
        "--gpu-memory-utilization (gmu): values 0.85, 0.9, 0.95",
    ):
        assert dim in out, dim
    assert "6 dimension flag(s) checked against vllm 0.26.0" in out, out
    assert "all accepted" in out
    assert not (tmp_path / "db").exists()  # nothing ran
