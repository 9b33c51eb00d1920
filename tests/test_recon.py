"""``inferlab recon`` without an engine: bad input, git checkouts, --help parsing, tuned-config
matching, NCCL variables, a real server, the store and the report. Everything real: git
subprocesses, argparse help text, the reference engine over HTTP, SQLite."""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferlab.config.secrets import REDACTED
from inferlab.environment import gpu_info, nvml_gpus
from inferlab.errors import ConfigError
from inferlab.recon.engines import config_dirs_for, engine_config_dirs
from inferlab.recon.envvars import env_in_effect
from inferlab.recon.flags import classify, parse_help
from inferlab.recon.git import repo_info
from inferlab.recon.probe import probe_python
from inferlab.recon.server import probe_server
from inferlab.recon.tuned import NeededShape, match_needed, parse_config_name, scan_dir
from inferlab.store import Store
from support import FIXTURES
from support.cli import Cli, CliResult
from support.simproc import start_sim


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


def test_python_without_engine_is_recorded_not_raised(cli: Cli) -> None:
    info = probe_python(sys.executable)
    assert info.version == ".".join(map(str, sys.version_info[:3]))
    assert "vllm" not in info.packages and "sglang" not in info.packages
    with pytest.raises(ConfigError, match="--python: vllm is not installed in"):
        engine_config_dirs("vllm", sys.executable)
    with pytest.raises(ConfigError, match="--engine: unknown engine 'tgi'"):
        engine_config_dirs("tgi", sys.executable)
    p = cli("recon", "--python", sys.executable, "--json")
    assert p.exit_code == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["python"]["executable"] == sys.executable
    assert data["engine"] is None
    assert any("none of vllm, sglang, transformers is installed" in e for e in data["errors"])
    p = cli("recon", "--engine", "sglang", "--python", sys.executable, "--json")
    data = json.loads(p.stdout)
    assert any(f"sglang is not installed in {sys.executable}" in e for e in data["errors"])


def test_bad_engine_repo_url_log_are_named(cli: Cli, tmp_path: Path) -> None:
    _one_red_line(cli("recon", "--engine", "tgi"), "--engine", "known: sglang, transformers, vllm")
    _one_red_line(cli("recon", "--repo", str(tmp_path)), "--repo", "is not a git checkout")
    _one_red_line(cli("recon", "--repo", str(tmp_path / "x")), "--repo", "is not a directory")
    _one_red_line(cli("recon", "--url", "localhost:8000"), "--url", "http(s)://HOST")
    _one_red_line(cli("recon", "--log", str(tmp_path / "x.log")), "--log", "is not a file")


# -- git -------------------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def _commit(repo: Path, name: str) -> str:
    (repo / name).write_text(name + "\n")
    _git(repo, "add", name)
    _git(repo, "commit", "-q", "-m", f"add {name}")
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A bare "upstream", a clone of it (the checkout), and a second clone that pushes two
    more commits upstream after the checkout was cloned."""
    upstream = tmp_path / "upstream.git"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(upstream))
    seed = tmp_path / "seed"
    _git(tmp_path, "clone", "-q", str(upstream), str(seed))
    _git(seed, "checkout", "-q", "-b", "main")
    _commit(seed, "a")
    _git(seed, "push", "-q", "origin", "main")
    work = tmp_path / "work"
    _git(tmp_path, "clone", "-q", str(upstream), str(work))
    _commit(seed, "b")
    _commit(seed, "c")
    _git(seed, "push", "-q", "origin", "main")
    return upstream, work


def test_commits_behind_need_a_fetch(checkout: tuple[Path, Path]) -> None:
    upstream, work = checkout
    head = _git(work, "rev-parse", "HEAD")
    before = set(os.listdir(work / ".git"))
    info = repo_info(work)
    assert info.commit == head and info.branch == "main" and info.upstream == "origin/main"
    assert info.behind == 0 and info.ahead == 0 and not info.fetched and not info.dirty
    assert info.subject == "add a"
    # no fetch happened: nothing new in .git (a fetch writes FETCH_HEAD), refs unchanged
    assert set(os.listdir(work / ".git")) == before and "FETCH_HEAD" not in before
    assert _git(work, "rev-parse", "origin/main") == head

    fetched = repo_info(work, fetch=True)
    assert fetched.fetched and fetched.behind == 2 and fetched.ahead == 0
    assert fetched.last_fetch is not None and fetched.errors == []
    _commit(work, "local")
    (work / "a").write_text("changed\n")
    again = repo_info(work)
    assert again.behind == 2 and again.ahead == 1 and again.dirty and not again.fetched


def test_no_network_without_fetch_and_a_failed_fetch_is_recorded(
    checkout: tuple[Path, Path], tmp_path: Path
) -> None:
    _, work = checkout
    _git(work, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    quiet = repo_info(work)  # the remote is unreachable, but nothing tries to reach it
    assert quiet.errors == [] and quiet.behind == 0
    loud = repo_info(work, fetch=True)
    assert not loud.fetched and loud.behind == 0
    assert len(loud.errors) == 1 and loud.errors[0].startswith("git fetch failed")


def test_checkout_without_upstream_and_cli_table(cli: Cli, tmp_path: Path) -> None:
    repo = tmp_path / "solo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "dev")
    sha = _commit(repo, "x")
    info = repo_info(repo)
    assert info.commit == sha and info.upstream is None and info.behind is None
    assert info.errors == ["no upstream tracking branch: commits behind cannot be counted"]
    p = cli("recon", "--repo", str(repo))
    assert p.exit_code == 0, p.stderr
    assert sha[:12] in p.stdout and "no upstream tracking branch" in p.stdout


def test_cli_json_behind_after_fetch(cli: Cli, checkout: tuple[Path, Path]) -> None:
    _, work = checkout
    plain = json.loads(cli("recon", "--repo", str(work), "--json").stdout)
    assert plain["repo"]["behind"] == 0 and plain["repo_source"] == "--repo"
    p = cli("recon", "--repo", str(work), "--fetch")
    assert p.exit_code == 0, p.stderr
    assert "2 (ahead 0), fetched now" in p.stdout


# -- --help parsing --------------------------------------------------------------------------


def _sglang_like_help() -> str:
    """Real argparse output for flags SGLang's launch_server has (names and choices)."""
    ap = argparse.ArgumentParser(prog="launch_server.py")
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--quantization", choices=["fp8", "w8a8_fp8", "awq", "gptq"])
    ap.add_argument("--kv-cache-dtype", choices=["auto", "fp8_e5m2", "fp8_e4m3"])
    ap.add_argument("--speculative-algorithm", choices=["EAGLE", "EAGLE3", "NEXTN", "NGRAM"])
    ap.add_argument("--speculative-draft-model-path")
    ap.add_argument("--speculative-num-steps", type=int)
    ap.add_argument("--cuda-graph-max-bs", type=int)
    ap.add_argument("--cuda-graph-bs", type=int, nargs="+")
    ap.add_argument("--disable-cuda-graph", action="store_true")
    ap.add_argument("--enable-torch-compile", action="store_true")
    ap.add_argument(
        "--enable-mixed-chunk",
        action="store_true",
        help="unlike --made-up-flag, see --cuda-graph-max-bs",
    )
    ap.add_argument("--enable-eager-mode", action=argparse.BooleanOptionalAction, help="eager mode")
    ap.add_argument("--mem-fraction-static", type=float)
    return ap.format_help()


def test_help_families_from_real_argparse_output() -> None:
    flags = parse_help(_sglang_like_help())
    names = [f.name for f in flags]
    assert names.count("--cuda-graph-max-bs") == 1  # usage, options and a description mention
    assert "--help" in names and "--no-enable-eager-mode" not in names
    assert "--made-up-flag" not in names  # mentioned in a description, not offered
    eager = next(f for f in flags if f.name == "--enable-eager-mode")
    assert eager.negatable
    fam = {k: [f.name for f in v] for k, v in classify(flags).items()}
    assert fam["speculative"] == [
        "--speculative-algorithm",
        "--speculative-draft-model-path",
        "--speculative-num-steps",
    ]
    assert fam["fp8"] == ["--quantization", "--kv-cache-dtype"]
    assert fam["cuda_graph"] == [
        "--cuda-graph-max-bs",
        "--cuda-graph-bs",
        "--disable-cuda-graph",
        "--enable-torch-compile",
    ]
    kv = next(f for f in flags if f.name == "--kv-cache-dtype")
    assert kv.choices == ("auto", "fp8_e5m2", "fp8_e4m3")


# -- tuned configs ---------------------------------------------------------------------------

H100 = "NVIDIA_H100_80GB_HBM3"


def test_sglang_names_and_triton_subdirs(tmp_path: Path) -> None:
    """SGLang spells block shapes '[128, 128]' and keeps MoE files per Triton version."""
    pkg = tmp_path / "sglang"
    dirs = config_dirs_for("sglang", pkg, "3.5.1")
    assert dirs["fused_moe"] == pkg / "srt/layers/moe/fused_moe_triton/configs/triton_3_5_1"
    assert dirs["fp8_gemm"] == pkg / "srt/layers/quantization/configs"
    fp8 = dirs["fp8_gemm"]
    fp8.mkdir(parents=True)
    (
        fp8 / f"N=2112,K=7168,device_name={H100},dtype=fp8_w8a8,block_shape=[128, 128].json"
    ).write_text("{}")
    (fp8 / "README.md").write_text("")
    moe_root = dirs["fused_moe"].parent
    (moe_root / "triton_3_4_0").mkdir(parents=True)
    moe = f"E=257,N=128,device_name={H100},dtype=fp8_w8a8,block_shape=[128, 128]"
    (moe_root / "triton_3_4_0" / f"{moe}.json").write_text("{}")
    (moe_root / "triton_3_4_0" / f"{moe}_down.json").write_text("{}")
    (moe_root / "triton_3_4_0" / "not-a-config.json").write_text("{}")
    g, m = scan_dir("fp8_gemm", fp8), scan_dir("fused_moe", moe_root)
    assert [(f.n, f.k, f.block_shape) for f in g.files] == [(2112, 7168, (128, 128))]
    assert [(f.e, f.n, f.subdir, f.down) for f in m.files] == [
        (257, 128, "triton_3_4_0", False),
        (257, 128, "triton_3_4_0", True),
    ]
    assert m.unparsed == 1

    def need(kind: str, n: int, k: int | None, e: int | None, dev: str = H100) -> NeededShape:
        return NeededShape(kind, dev, n, k, e, "fp8_w8a8", (128, 128), [7], None)

    rows = match_needed(
        [
            need("fp8_gemm", 2112, 7168, None),
            need("fp8_gemm", 2112, 7168, None, dev="NVIDIA_H20"),
            need("fused_moe", 128, None, 257),
            need("fused_moe", 256, None, 257),
        ],
        [g, m],
        current_subdir="triton_3_5_1",
    )
    assert [r.present for r in rows] == [True, False, True, False]
    assert rows[2].files == [f"triton_3_4_0/{moe}.json"]  # the _down file is not the same
    assert rows[2].in_current_subdir is False and rows[2].current_subdir == "triton_3_5_1"
    # without any searched directory the answer is unknown, not "no"
    assert match_needed([need("fp8_gemm", 1, 2, None)], [])[0].present is None
    assert parse_config_name("E=8,N=7168,device_name=NVIDIA_A100-SXM4-80GB.json") is not None
    assert parse_config_name("N=7168,device_name=X.json") is None


# -- environment and server ------------------------------------------------------------------


def test_env_groups_and_secrets() -> None:
    got = env_in_effect(
        {
            "NCCL_IB_HCA": "mlx5_0",
            "NCCL_SOCKET_IFNAME": "eth0",
            "TORCH_NCCL_BLOCKING_WAIT": "1",
            "CUDA_VISIBLE_DEVICES": "0,1",
            "VLLM_API_KEY": "sk-live-123",
            "SGLANG_TOKEN": "hf_abc",
            "HOME": "/root",
            "MY_NCCL_NOTE": "x",
        }
    )
    assert got["nccl"] == {
        "NCCL_IB_HCA": "mlx5_0",
        "NCCL_SOCKET_IFNAME": "eth0",
        "TORCH_NCCL_BLOCKING_WAIT": "1",
    }
    assert got["cuda"] == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert got["engine"] == {"SGLANG_TOKEN": REDACTED, "VLLM_API_KEY": REDACTED}


def test_cli_shows_nccl_env_never_secrets(cli: Cli) -> None:
    p = cli(
        "recon",
        "--json",
        env={"NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "1", "SGLANG_API_KEY": "hunter2-secret"},
    )
    assert p.exit_code == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["env"]["nccl"]["NCCL_DEBUG"] == "INFO"
    assert data["env"]["nccl"]["NCCL_P2P_DISABLE"] == "1"
    assert data["env"]["engine"]["SGLANG_API_KEY"] == REDACTED
    assert "hunter2" not in p.stdout and "hunter2" not in p.stderr


def test_server_probe_against_the_reference_engine() -> None:
    with start_sim() as sim:
        probe = probe_server(sim.url)
    by = {e.path: e for e in probe.endpoints}
    assert by["/v1/models"].status == 200 and by["/v1/models"].summary["models"]
    assert by["/version"].status == 200
    assert by["/metrics"].status == 200 and by["/metrics"].summary["series"] > 0
    info = by["/get_server_info"]  # the reference engine answers it, as SGLang does
    assert info.status == 200 and info.summary["fields"] > 20, info
    assert all(e.ms is not None and e.ms >= 0 for e in probe.endpoints)
    dead = probe_server(sim.url, timeout_s=2)  # the server is gone now
    assert dead.endpoints[0].status is None and "refused" in str(dead.endpoints[0].error).lower()
    assert all(str(e.error).startswith("not tried") for e in dead.endpoints[1:])


# -- store and report ------------------------------------------------------------------------


def _stored(db: Path, campaign: str) -> list[dict[str, Any]]:
    with Store(db) as store:
        return store.analyses("recon", campaign=campaign)


def test_stored_and_reported(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with start_sim() as sim:
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
    assert row["data"]["recon_version"] == 1
    assert row["data"]["env"]["nccl"]["NCCL_ALGO"] == "Ring<script>"
    assert row["name"] == row["data"]["host"]
    assert [e["path"] for e in row["data"]["server"]["endpoints"]][0] == "/v1/models"
    out = tmp_path / "out"
    rep = cli("report", "c1", "--db", str(db), "--out", str(out))
    assert rep.exit_code == 0, rep.stderr
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert "## Environment recon" in md and f"### Recon of {row['name']}" in md
    assert "| nccl | NCCL_ALGO | Ring&lt;script&gt; |" in md
    assert "/v1/models" in md and "NCCL, CUDA and engine variables in effect" in md
    assert '<h2 id="recon">Environment recon</h2>' in html
    assert "Ring&lt;script&gt;" in html and "Ring<script>" not in html
    _one_red_line(cli("recon", "--db", str(db)), "--db", "--campaign")


def test_moe_shapes_from_a_real_sglang_log(tmp_path: Path) -> None:
    """SGLang 0.5.8 on Triton 3.5.1 fell back to a triton_3_4_0 MoE config and had no _down
    file: with that file installed under triton_3_4_0 only, the table says 'present, but a
    fallback' for the first and 'no' for the _down file."""
    from inferlab.recon.core import needed_from_log

    log = (
        FIXTURES
        / "engine_logs/sglang_fp8_default/sglang-0.5.8post1_moe-config-fallback-triton_h100.log"
    )
    moe_root = tmp_path / "configs"
    (moe_root / "triton_3_4_0").mkdir(parents=True)
    name = f"E=257,N=128,device_name={H100},dtype=fp8_w8a8,block_shape=[128, 128].json"
    (moe_root / "triton_3_4_0" / name).write_text("{}")
    rows = match_needed(needed_from_log(log), [scan_dir("fused_moe", moe_root)], "triton_3_5_1")
    by_reason = {r.reason: r for r in rows}
    assert set(by_reason) == {"fallback", "down"}
    fb, down = by_reason["fallback"], by_reason["down"]
    assert (fb.e, fb.n, fb.device, fb.block_shape) == (257, 128, H100, (128, 128))
    assert fb.present is True and fb.in_current_subdir is False
    assert fb.files == [f"triton_3_4_0/{name}"]
    assert down.down and down.present is False and down.shape == "E=257,N=128 (down)"
    assert fb.lines[0] == 2 and down.lines[0] == 3


def test_engine_package_in_a_checkout_is_recognised_only_when_tracked(tmp_path: Path) -> None:
    from inferlab.recon.git import is_tracked_package

    repo = tmp_path / "sglang-src"
    (repo / "python" / "sglang").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "python" / "sglang" / "__init__.py").write_text("")
    assert is_tracked_package(repo / "python" / "sglang") is None  # not committed yet
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "sglang")
    assert is_tracked_package(repo / "python" / "sglang") == repo.resolve()
    venv_pkg = repo / ".venv" / "site-packages" / "vllm"  # a venv that sits in a checkout
    venv_pkg.mkdir(parents=True)
    (venv_pkg / "__init__.py").write_text("")
    assert is_tracked_package(venv_pkg) is None
