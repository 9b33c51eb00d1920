"""``inferlab recon`` in process without an engine: bad input, a Python without the engine,
git checkouts (real git subprocesses), the table and JSON, NCCL variables without secrets."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import pytest

from inferlab.environment import gpu_info, nvml_gpus
from inferlab.recon.git import repo_info
from inferlab.secrets import REDACTED
from inferlab.store import Store
from inferlab.store.analyses import StoredAnalysis
from inferlab.store.models import ReconBody
from support.cli import Cli, CliResult
from support.git import commit, git, make_checkout
from support.simproc import SimFactory


def _has_nvidia_driver() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


# -- GPUs ------------------------------------------------------------------------------------


@pytest.mark.skipif(_has_nvidia_driver(), reason="this machine has an NVIDIA driver")
def test_no_gpu_is_said_plainly_and_nothing_crashes(cli: Cli) -> None:
    gpus, system = nvml_gpus()
    assert gpus == []
    assert system["note"].startswith("NVML not available: no NVIDIA driver")
    assert gpu_info() == {"gpu_count": 0, "gpu_note": system["note"]}
    p = cli("recon")
    assert p.exit_code == 0, p.stderr
    assert "NVML not available: no NVIDIA driver" in p.stdout
    assert "not inspected (pass --engine and/or --python)" in p.stdout


# -- bad input -------------------------------------------------------------------------------


def _one_red_line(p: CliResult, *needles: str) -> None:
    assert p.exit_code == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    assert p.stderr.startswith("error: "), p.stderr
    for n in needles:
        assert n in p.stderr, p.stderr


def test_bad_python_is_named(cli: Cli, tmp_path: Path) -> None:
    _one_red_line(cli("recon", "--python", str(tmp_path / "nope")), "--python", "does not exist")
    _one_red_line(cli("recon", "--python", str(tmp_path)), "--python", "is a directory")
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    _one_red_line(cli("recon", "--python", str(text)), "--python", "not executable")
    sh = tmp_path / "fake-python"
    sh.write_text("#!/bin/sh\necho 'I am not python' >&2\nexit 3\n")
    sh.chmod(0o755)
    _one_red_line(
        cli("recon", "--python", str(sh)),
        "--python",
        "is not a Python interpreter",
        "exit 3",
        "I am not python",
    )


def test_bad_engine_repo_url_log_are_named(cli: Cli, tmp_path: Path) -> None:
    _one_red_line(cli("recon", "--engine", "tgi"), "--engine", "known: sglang, transformers, vllm")
    _one_red_line(cli("recon", "--repo", str(tmp_path)), "--repo", "is not a git checkout")
    _one_red_line(cli("recon", "--repo", str(tmp_path / "x")), "--repo", "is not a directory")
    _one_red_line(cli("recon", "--url", "localhost:8000"), "--url", "http(s)://HOST")
    _one_red_line(cli("recon", "--log", str(tmp_path / "x.log")), "--log", "is not a file")


# -- git -------------------------------------------------------------------------------------


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[Path, Path]:
    """(upstream, checkout): the checkout two commits behind (``support.git.make_checkout``)."""
    return make_checkout(tmp_path)


def test_checkout_without_upstream_and_cli_table(cli: Cli, tmp_path: Path) -> None:
    repo = tmp_path / "solo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "dev")
    sha = commit(repo, "x")
    info = repo_info(repo)
    assert info.commit == sha and info.upstream is None and info.behind is None
    assert info.errors == ["no upstream tracking branch: commits behind cannot be counted"]
    p = cli("recon", "--repo", str(repo))
    assert p.exit_code == 0, p.stderr
    assert sha[:12] in p.stdout and "no upstream tracking branch" in p.stdout


def test_cli_json_behind_after_fetch(cli: Cli, checkout: tuple[Path, Path]) -> None:
    _, work = checkout
    plain = json.loads(cli("recon", "--repo", str(work), "--format", "json").stdout)
    assert plain["repo"]["behind"] == 0 and plain["repo_source"] == "--repo"
    p = cli("recon", "--repo", str(work), "--fetch")
    assert p.exit_code == 0, p.stderr
    assert "2 (ahead 0), fetched now" in p.stdout


def test_cli_shows_nccl_env_never_secrets(cli: Cli) -> None:
    p = cli(
        "recon",
        "--format",
        "json",
        env={"NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "1", "SGLANG_API_KEY": "hunter2-secret"},
    )
    assert p.exit_code == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["env"]["nccl"]["NCCL_DEBUG"] == "INFO"
    assert data["env"]["nccl"]["NCCL_P2P_DISABLE"] == "1"
    assert data["env"]["engine"]["SGLANG_API_KEY"] == REDACTED
    assert "hunter2" not in p.stdout and "hunter2" not in p.stderr


# -- store and report ------------------------------------------------------------------------


def _stored(db: Path, campaign: str) -> list[StoredAnalysis[ReconBody]]:
    with Store(db) as store:
        return store.analyses.of(ReconBody, "recon", campaign)


def test_stored_and_reported(cli: Cli, tmp_path: Path, sim_server: SimFactory) -> None:
    db = tmp_path / "r.db"
    sim = sim_server()
    p = cli(
        "recon",
        "--url",
        sim.url,
        "--campaign",
        "c1",
        "--db",
        str(db),
        env={"NCCL_ALGO": "Ring<script>"},
    )
    assert p.exit_code == 0, p.stderr
    assert "stored as analysis" in p.stderr
    (row,) = _stored(db, "c1")
    assert row.data.recon_version == 1
    assert row.data.env["nccl"]["NCCL_ALGO"] == "Ring<script>"
    assert row.name == row.data.host and row.data.server is not None
    assert [e["path"] for e in row.data.to_json()["server"]["endpoints"]][0] == "/v1/models"
    out = tmp_path / "out"
    rep = cli("report", "c1", "--db", str(db), "--out-dir", str(out))
    assert rep.exit_code == 0, rep.stderr
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert "## Environment recon" in md and f"### Recon of {row.name}" in md
    assert "| nccl | NCCL_ALGO | Ring&lt;script&gt; |" in md
    assert "/v1/models" in md and "NCCL, CUDA and engine variables in effect" in md
    assert '<h2 id="recon">Environment recon</h2>' in html
    assert "Ring&lt;script&gt;" in html and "Ring<script>" not in html
    _one_red_line(cli("recon", "--db", str(db)), "--db", "--campaign")
