"""SGLang's per-release facts against what its wheels ship: where the Triton block-FP8 GEMM and
the fused MoE read tuned configs, the log lines they print, and which GEMM backend runs.

``tests/fixtures/engine_src/sglang_wheels_fp8_facts.json`` was read from the sglang wheels on
PyPI (0.5.9–0.5.21; tests/fixtures/engine_logs/SOURCES.md says how)."""

from __future__ import annotations

import json
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest

from inferlab.engines import get_engine
from inferlab.engines.base import ConfigDir, release_key
from inferlab.engines.sglang import FP8_CONFIG_FOUND, FP8_CONFIG_MISSING
from inferlab.logs import analyze_log, untuned_fp8_gemms
from inferlab.recon.engines import config_dirs_for
from inferlab.tune.backends import BackendContext, sglang_rules, triton_verdict

ROOT = Path(__file__).resolve().parents[3]
FACTS = json.loads((ROOT / "tests/fixtures/engine_src/sglang_wheels_fp8_facts.json").read_text())
LOGS = ROOT / "tests/fixtures/engine_logs"
H200 = (9, 0)


def _dir(kind: str) -> ConfigDir:
    return next(d for d in get_engine("sglang").config_dirs if d.kind == kind)


@pytest.mark.parametrize("version", sorted(FACTS, key=release_key))
def test_fp8_and_moe_directories_are_the_wheels(version: str) -> None:
    row = FACTS[version]
    shipped = posixpath.join(posixpath.dirname(row["fp8_kernel"]), "configs")
    assert "sglang/" + _dir("fp8_gemm").path_for(version) == shipped
    assert ["sglang/" + _dir("moe").path_for(version)] == row["moe_dirs"]
    # the directory tells which releases read it
    releases = _dir("fp8_gemm").releases_of("/site-packages/" + shipped + "/N=1,K=2.json")
    assert releases is not None and releases != "every release"


def test_the_three_fp8_directories() -> None:
    d = _dir("fp8_gemm")
    assert d.path_for("0.5.15.post1") == "srt/layers/quantization/configs"
    assert d.path_for("0.5.17") == "kernels/ops/quantization/configs"
    assert d.path_for("0.5.21") == d.path_for(None) == "kernels/ops/gemm/configs"
    assert d.releases_of("sglang/kernels/ops/quantization/configs") == "0.5.16–0.5.20"
    assert d.releases_of("a/sglang/srt/layers/quantization/configs/x.json") == "up to 0.5.15.post1"
    assert d.releases_of("vllm/model_executor/layers/quantization/utils/configs") is None


def test_recon_directories_follow_the_release(tmp_path: Path) -> None:
    dirs = config_dirs_for("sglang", tmp_path, "3.6.0", "0.5.17")
    assert dirs["fp8_gemm"] == tmp_path / "kernels/ops/quantization/configs"
    moe = tmp_path / "srt/layers/moe/moe_runner/triton_utils/configs/triton_3_6_0"
    assert dirs["fused_moe"] == moe


@pytest.mark.parametrize("version", sorted(FACTS, key=release_key))
def test_log_lines_are_the_source_strings(version: str) -> None:
    lines = FACTS[version]["fp8_lines"]
    found = FP8_CONFIG_FOUND.replace("{path}", "{config_file_path}")
    assert any(f'f"{found}"' in line for line in lines)
    default, missing = FP8_CONFIG_MISSING.split("! ")
    assert f'"{default}! "' in lines
    assert f'"{missing.replace("{path}", "%s")}"' in lines


def test_not_found_lines_of_0_5_17_are_mined(tmp_path: Path) -> None:
    """The four shapes of the 1.1 B Llama, logged as 0.5.17 logs them, become tuning work."""
    site = "/tmp/sgl-site/sglang/" + _dir("fp8_gemm").path_for("0.5.17")
    shapes = [(11264, 2048), (2048, 2048), (2048, 5632), (4096, 2048)]
    name = "N={},K={},device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json"
    text = [
        f"[2026-12-07 07:00:0{i} TP0] "
        + FP8_CONFIG_MISSING.format(path=f"{site}/{name.format(n, k)}")
        for i, (n, k) in enumerate(shapes)
    ]
    text.append("[2026-12-07 07:00:09 TP0] " + FP8_CONFIG_FOUND.format(path=f"{site}/x.json"))
    log = tmp_path / "serve.log"
    log.write_text("\n".join(text) + "\n")
    got = untuned_fp8_gemms(log)
    assert sorted((g.n, g.k) for g in got) == sorted(shapes)
    assert {g.device for g in got} == {"NVIDIA_H200"} and {g.block_shape for g in got} == {
        (128, 128)
    }
    assert {g.dir for g in got} == {site}
    (f,) = [f for f in analyze_log(log).findings if f.kind == "untuned-fp8-gemm"]
    assert f.evidence["config_dir"] == site
    assert f.evidence["read_by"] == "SGLang 0.5.16–0.5.20"
    assert "kernels/ops/quantization/configs (the directory of SGLang 0.5.16–0.5.20)" in f.message


def test_not_found_directory_of_a_real_log() -> None:
    """A real pre-0.5.16 line (sglang PR 5675, H20) names the old directory."""
    log = LOGS / "sglang_fp8_default/sglang-pr5675_h20-w8a8-default-single-line.log"
    (f,) = [f for f in analyze_log(log).findings if f.kind == "untuned-fp8-gemm"]
    assert f.evidence["read_by"] == "SGLang up to 0.5.15.post1"
    assert f.evidence["config_dir"].endswith("sglang/srt/layers/quantization/configs")
    vllm = LOGS / (
        "sglang_fp8_default/vllm-benchmarks-deepgemm-readme_h100_w8a8-default-and-using-"
        "configuration.log"
    )
    (g,) = [f for f in analyze_log(vllm).findings if f.kind == "untuned-fp8-gemm"]
    assert g.evidence["read_by"] is None  # vLLM's directory has no per-release table
    assert g.evidence["config_dir"].endswith("quantization/utils/configs")


def test_moe_fallback_line_of_either_directory() -> None:
    spec = get_engine("sglang")
    real = (
        LOGS / "sglang_fp8_default/sglang-0.5.8post1_moe-config-fallback-triton_h100.log"
    ).read_text()
    assert "moe_config_fallback" in {m.kind for m in spec.classify_log(real)}
    newer = (
        "Config file not found at /s/sglang/srt/layers/moe/moe_runner/triton_utils/configs/"
        "triton_3_6_0/E=8,N=7168,device_name=NVIDIA_H200.json. Fallback to triton version 3.5.1 "
        "and use MoE kernel config from /s/x.json. Performance might be sub-optimal!"
    )
    assert "moe_config_fallback" in {m.kind for m in spec.classify_log(newer)}


@pytest.mark.parametrize("version", sorted(FACTS, key=release_key))
def test_dispatch_rules_are_the_wheels(version: str) -> None:
    row = FACTS[version]
    rules = sglang_rules(version)
    sm120_only = "sm120" in row["auto_cutlass_branch"]
    assert rules.cutlass == ({12} if sm120_only else {9, 10})
    assert rules.env_overrides is row["env_overrides"]


def test_h200_without_deepgemm_runs_triton_from_0_5_16() -> None:
    off = {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"}
    old = triton_verdict(
        "sglang", BackendContext(4096, 2048, H200, env=off, version="0.5.15.post1")
    )
    assert old.backend == "CUTLASS" and old.uses_triton is False
    for version in ("0.5.16", "0.5.17", "0.5.21", None):
        v = triton_verdict("sglang", BackendContext(4096, 2048, H200, env=off, version=version))
        assert v.backend == "Triton" and v.uses_triton is True and v.warning is None
    flag = ["--fp8-gemm-backend", "triton"]
    assert triton_verdict(
        "sglang", BackendContext(4096, 2048, H200, flag, version="0.5.17")
    ).uses_triton
    cutlass = ["--fp8-gemm-backend", "cutlass"]
    v = triton_verdict("sglang", BackendContext(4096, 2048, H200, cutlass, version="0.5.17"))
    assert v.uses_triton is False and "start-up error" in v.backend
    # DeepGEMM is still the default where deep_gemm is installed
    assert triton_verdict("sglang", BackendContext(4096, 2048, H200, version="0.5.17")).backend == (
        "DeepGEMM"
    )


def _dry_run(tmp: Path, example: str) -> str:
    """``inferlab run examples/EXAMPLE --dry-run`` on this CPU host, as the device's script
    sets it up (models under ``tmp``); its plan."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "src"),
        "INFERLAB_GPU_MODEL": str(tmp / "m1b-fp8"),
        "INFERLAB_GPU_BF16": str(tmp / "m1b"),
        "INFERLAB_SGLANG_PYTHON": sys.executable,
        "INFERLAB_SERVE_PYTHONPATH": str(tmp / "site"),
        "COLUMNS": "200",
        "HOME": str(tmp),
    }
    argv = [sys.executable, "-m", "inferlab", "run", f"examples/{example}", "--dry-run"]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_h200_campaign_dry_run(tmp_path: Path) -> None:
    """``inferlab run examples/sglang-h200.toml --dry-run`` plans every config on a CPU host."""
    out = _dry_run(tmp_path, "sglang-h200.toml")
    for name in ("baseline", "A", "ngram", "graph-oom", "graph-oom-fix"):
        assert f"] {name}" in out
    assert "-m sglang.launch_server" in out and "--fp8-gemm-backend triton" in out
    assert "tune fp8_gemm: from-log" in out
    assert "--speculative-algorithm NGRAM" in out
    assert "--mem-fraction-static 0.998" in out and "--cuda-graph-max-bs 1024" in out
    assert "SGLANG_TORCH_PROFILER_DIR=" in out


def test_h200_fp8_gate_campaign_dry_run(tmp_path: Path) -> None:
    """``examples/sglang-h200-fp8.toml``: block FP8 gated against its bf16 twin on SGLang."""
    out = _dry_run(tmp_path, "sglang-h200-fp8.toml")
    assert "] bf16" in out and "] fp8 (extends bf16)" in out
    assert f"--model-path {tmp_path / 'm1b-fp8'}" in out
    assert "lossy gate: KL ≤ 0.01 nats/token, top-1 ≥ 95.00%" in out
    assert "--cuda-graph-backend-prefill disabled" in out


def test_tune_reads_the_release_from_the_logs_directory(tmp_path: Path) -> None:
    """``tune fp8-gemm --from-log``: the not-found directory says which dispatch rules apply."""
    from inferlab.tune.workflow import Fp8GemmRequest, tune_fp8_gemm

    off = ["SGLANG_ENABLE_JIT_DEEPGEMM=0"]
    # constructed: the real pre-0.5.16 line (H20, sm_90) with N=4096, which CUTLASS can run
    real = (LOGS / "sglang_fp8_default/sglang-pr5675_h20-w8a8-default-single-line.log").read_text()
    old = tmp_path / "old.log"
    old.write_text(real.replace("N=2112,K=7168", "N=4096,K=7168"))
    got = tune_fp8_gemm(Fp8GemmRequest(log=old, dry_run=True, server_env=off, out=tmp_path))
    (w,) = [w for w in got.warnings if "would run" in w]
    assert "would run CUTLASS" in w and "up to 0.5.15.post1 (the log's config directory)" in w
    # the same line from 0.5.17's directory: Triton runs it (CUTLASS is sm_120 only), no warning
    here = "sglang/" + _dir("fp8_gemm").path_for("0.5.17")
    new = tmp_path / "new.log"
    new.write_text(old.read_text().replace("sglang/srt/layers/quantization/configs", here))
    got = tune_fp8_gemm(Fp8GemmRequest(log=new, dry_run=True, server_env=off, out=tmp_path))
    assert not [w for w in got.warnings if "would run" in w]
    assert untuned_fp8_gemms(new)[0].dir == "/xxx/sglang/python/" + here


@pytest.mark.parametrize(
    ("version", "want"),
    [
        ("0.5.15.post1", "srt/layers/quantization/configs"),
        ("0.5.17", "kernels/ops/quantization/configs"),
        ("0.5.21", "kernels/ops/gemm/configs"),
    ],
)
def test_files_go_where_the_installed_release_reads(
    tmp_path: Path, version: str, want: str
) -> None:
    """A config's ``files`` land in the directory of the sglang release its Python has (a
    package tree with its dist-info, found by a real interpreter through PYTHONPATH)."""
    from types import SimpleNamespace

    from inferlab.campaign.parts.files import target_dir

    site = tmp_path / "site"
    (site / "sglang").mkdir(parents=True)
    (site / "sglang" / "__init__.py").write_text("")
    info = site / f"sglang-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
    cfg = SimpleNamespace(
        engine="sglang",
        python=sys.executable,
        host="local",
        is_local=True,
        name="A",
        env={"PYTHONPATH": str(site)},
    )
    got = target_dir(cfg, "fp8_gemm")  # type: ignore[arg-type]
    assert got == str((site / "sglang").resolve() / want)
