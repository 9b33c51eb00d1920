"""``inferlab tune fp8-gemm`` as a user runs it: the plan, the errors, and the CPU half of a real
run — a saved run (``TuneRun.to_json()``) written into real engine files, stored in a real
SQLite store, installed into a real interpreter's engine package, and shown by
``inferlab report``."""

from __future__ import annotations

import json
import shutil
import venv
from pathlib import Path

import pytest

from inferlab.store import Store
from inferlab.store.models import TuneBody
from inferlab.tune.config import DEFAULT_SGLANG
from inferlab.tune.runner import TuneRun
from inferlab.tune.saved import RESULT_VERSION
from support import FIXTURES
from support.cli import Cli
from support.tunerun import CEIL, cell, config, run_json

FIX = FIXTURES
VLLM_FILE = (
    FIX
    / "tune"
    / "vllm"
    / "N=2112,K=7168,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json"
)
SGL_FILE = (
    FIX
    / "tune"
    / "sglang"
    / "N=2304,K=7168,device_name=NVIDIA_H20,dtype=fp8_w8a8,block_shape=[128, 128].json"
)
V3 = FIX / "tune" / "deepseek-v3-config.json"


def test_dry_run_shows_plan_and_saving(cli: Cli) -> None:
    p = cli("tune", "fp8-gemm", "--shape", "7168,2048", "--shape", "2112,7168", "--dry-run")
    assert p.exit_code == 0, p.stderr
    out = p.stdout
    assert "2 shape(s) × 18 batch sizes" in out
    assert "N=7168,K=2048" in out and "N=2112,K=7168" in out
    assert "1,280 configs × 18 M × 2 shapes" in out and "46,080 timings" in out
    assert "dtype=fp8_w8a8,block_shape=[128, 128].json" in out
    assert "fewer timings" in out


def test_dry_run_vllm_model_config_and_json(cli: Cli) -> None:
    p = cli(
        "tune", "fp8-gemm", "--model-config", str(V3), "--tp", "8", "--engine", "vllm",
        "--batch-sizes", "1,16", "--no-split-k", "--dry-run", "--format", "json",
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["shapes"]) == 8 and doc["batch_sizes"] == [1, 16]
    assert doc["plan"]["split_k_timings"] == 0
    assert doc["plan"]["exhaustive_timings"] == 1280 * 2 * 8
    assert doc["cells"] == [] and doc["files"] == []
    assert "block_shape=[128,128].json" in p.stderr  # the plan goes to stderr with --json


def test_dry_run_warns_when_engine_would_not_run_triton(cli: Cli) -> None:
    # no GPU and no device named: the capability is unknown, so the verdict says so
    p = cli("tune", "fp8-gemm", "--shape", "4096,7168", "--dry-run")
    assert p.exit_code == 0
    assert "cannot tell" in p.stderr
    p = cli(
        "tune", "fp8-gemm", "--shape", "4096,7168", "--dry-run",
        "--server-args", "--tp 8 --fp8-gemm-backend triton",
    )  # fmt: skip
    assert p.exit_code == 0 and "warning" not in p.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "no shapes: give --shape N,K"),
        (("--shape", "7168"), "--shape '7168': expected N,K"),
        (("--shape", "1,128", "--engine", "trt"), "--engine 'trt'"),
        (("--shape", "1,128", "--batch-sizes", "1,a"), "--batch-sizes '1,a'"),
        (("--model-config", "nope.json", "--tp", "1"), "--model-config: cannot read nope.json"),
        (("--shape", "1,128", "--python", "/usr/bin/python3"), "--python only applies"),
        (("--shape", "1,128", "--devices", "x"), "--devices 'x'"),
    ],
)
def test_errors_are_one_red_line(cli: Cli, args: tuple[str, ...], needle: str) -> None:
    p = cli("tune", "fp8-gemm", *args, "--dry-run")
    assert p.exit_code == 2
    assert needle in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.strip().startswith("error:")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--shape", "7168"), "--shape '7168': expected N,K"),
        (("--shape", "1,128", "--batch-sizes", "0"), "--batch-sizes '0'"),
    ],
)
def test_bad_values_are_named_before_the_gpu_is_looked_for(
    cli: Cli, args: tuple[str, ...], needle: str
) -> None:
    """Without --dry-run (and without a GPU here) a mistyped value is still the error shown."""
    p = cli("tune", "fp8-gemm", *args)
    assert p.exit_code == 2 and needle in p.stderr and "needs an NVIDIA GPU" not in p.stderr


def test_without_gpu_says_what_is_missing(cli: Cli) -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("torch is installed here")
    p = cli("tune", "fp8-gemm", "--shape", "7168,2048")
    assert p.exit_code == 2 and "Traceback" not in p.stderr
    assert "tuning needs an NVIDIA GPU with torch and triton (found: torch not installed)" in (
        p.stderr.replace("\n", " ")
    )
    assert "--dry-run" in p.stderr


def test_from_results_merges_stores_and_reports(cli: Cli, tmp_path: Path) -> None:
    run = run_json(tmp_path / "run.json")
    out = tmp_path / "configs"
    out.mkdir()
    shipped = out / VLLM_FILE.name
    shutil.copyfile(VLLM_FILE, shipped)
    db = tmp_path / "t.db"
    p = cli(
        "tune", "fp8-gemm", "--from-results", str(run), "--engine", "vllm", "--out-dir", str(out),
        "--campaign", "dsv3", "--db", str(db), "--format", "json",
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [(f["n"], f["k"]) for f in doc["files"]] == [(2112, 7168), (7168, 2048)]

    # merged into the shipped vLLM file: M=1,16,64 replaced by the engine-usable winners,
    # the 15 other batch sizes untouched; the split-K winner is not in the file
    merged = json.loads(shipped.read_text())
    original = json.loads(VLLM_FILE.read_text())
    assert list(merged) == list(original)
    assert merged["1"] == config("BM16_BN64_G1_w8_s5").to_engine()
    assert merged["64"] == config("BM64_BN64_G1_w4_s5").to_engine()
    assert {m: merged[m] for m in merged if m not in ("1", "16", "64")} == {
        m: original[m] for m in original if m not in ("1", "16", "64")
    }
    new = out / "N=7168,K=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json"
    assert list(json.loads(new.read_text())) == ["1", "16", "64"]

    # the table: speedup and roofline from the stored ceilings
    cell = next(c for c in doc["cells"] if (c["n"], c["m"]) == (7168, 16))
    assert cell["speedup"] == pytest.approx(18.8 / 9.0)
    assert cell["gbps"] == pytest.approx(1654, rel=0.01)  # the fixture's "best GB/s"
    assert cell["roof_pct"] == pytest.approx(39, abs=0.6)  # the fixture's "%roof meas"
    split = next(c for c in doc["cells"] if (c["n"], c["m"]) == (2112, 1))
    assert split["split"] == "BM16_BN64_G1_w4_s4_k4" and split["split_us"] == 11.0
    assert split["tuned"] == "BM16_BN64_G1_w8_s5"

    with Store(db) as store:
        rows = store.analyses.of(TuneBody, "tune", "dsv3")
    assert [r.name for r in rows] == ["N=2112,K=7168", "N=7168,K=2048"]
    assert [c["m"] for c in rows[0].data.cells] == [1, 16, 64]
    assert rows[0].data.files[0]["replaced"] == [1, 16, 64]
    assert rows[0].data.cells[0]["default_samples_us"] == [62.8]

    rep = tmp_path / "rep"
    p = cli("report", "dsv3", "--db", str(db), "--out-dir", str(rep))
    assert p.exit_code == 0, p.stderr
    md = (rep / "report.md").read_text()
    html = (rep / "report.html").read_text()
    assert "## FP8 GEMM tuning" in md
    assert "N=2112,K=7168 on NVIDIA_H200 (vllm)" in md
    assert "| 16 | 18.8 | 9.0 | 2.09× |" in md
    assert "BM16_BN64_G1_w4_s4_k4" in md
    assert '<h2 id="tuning">' in html and "<script" not in html


def test_from_results_rewrites_identically(cli: Cli, tmp_path: Path) -> None:
    run = run_json(tmp_path / "run.json")
    out = tmp_path / "o"
    for _ in range(2):
        p = cli("tune", "fp8-gemm", "--from-results", str(run), "--out-dir", str(out))
        assert p.exit_code == 0, p.stderr
    f = out / "N=7168,K=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json"
    assert "unchanged [1, 16, 64]" in p.stdout
    assert len(json.loads(f.read_text())) == 3


def test_from_results_subset_and_errors(cli: Cli, tmp_path: Path) -> None:
    run = run_json(tmp_path / "run.json")
    p = cli(
        "tune", "fp8-gemm", "--from-results", str(run), "--shape", "7168,2048",
        "--batch-sizes", "16", "--out-dir", str(tmp_path / "o"), "--format", "json",
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    assert [(c["n"], c["m"]) for c in json.loads(p.stdout)["cells"]] == [(7168, 16)]
    p = cli("tune", "fp8-gemm", "--from-results", str(run), "--shape", "1,128")
    assert p.exit_code == 2 and "no results for N=1,K=128" in p.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"device_name": "x", "results": [{"n": 1}]}')
    p = cli("tune", "fp8-gemm", "--from-results", str(bad))
    assert p.exit_code == 2 and str(bad) in p.stderr and "results[0]" in p.stderr
    newer = json.loads(run.read_text()) | {"version": RESULT_VERSION + 1}
    bad.write_text(json.dumps(newer))
    p = cli("tune", "fp8-gemm", "--from-results", str(bad))
    assert p.exit_code == 2 and "upgrade inferlab" in p.stderr


def test_corrupt_existing_engine_file_stops_before_writing(cli: Cli, tmp_path: Path) -> None:
    run = run_json(tmp_path / "run.json")
    out = tmp_path / "o"
    out.mkdir()
    broken = out / VLLM_FILE.name
    broken.write_text('{"1": ')
    p = cli(
        "tune", "fp8-gemm", "--from-results", str(run), "--engine", "vllm", "--out-dir", str(out)
    )
    assert p.exit_code == 2 and str(broken) in p.stderr and "not valid JSON" in p.stderr
    assert broken.read_text() == '{"1": '


def test_install_into_a_real_interpreters_engine(cli: Cli, tmp_path: Path) -> None:
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    site = next((env / "lib").glob("python3*/site-packages"))
    pkg = site / "sglang"
    (pkg / "srt" / "layers" / "quantization" / "configs").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    # a release that reads srt/layers/quantization/configs (up to 0.5.15.post1): the directory
    # is chosen by the installed version (engines/configdir.py), the newest one's without it
    meta = site / "sglang-0.5.15.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.15\n")
    (meta / "top_level.txt").write_text("sglang\n")  # the package's distribution, found
    target = pkg / "srt" / "layers" / "quantization" / "configs" / SGL_FILE.name
    shutil.copyfile(SGL_FILE, target)
    cells = [
        cell(2304, 7168, 8, 60.0, "BM16_BN32_G1_w4_s4", 20.0, default=DEFAULT_SGLANG),
        cell(2304, 7168, 200, 70.0, "BM64_BN64_G1_w4_s3", 30.0, default=DEFAULT_SGLANG),
    ]
    run = tmp_path / "run.json"
    run.write_text(json.dumps(TuneRun("NVIDIA_H20", 1, CEIL, cells, 5.0, 1.0).to_json()))
    p = cli(
        "tune", "fp8-gemm", "--from-results", str(run), "--install-into", "sglang",
        "--python", str(env / "bin" / "python"),
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    data = json.loads(target.read_text())
    assert len(data) == 19 and data["8"] == config("BM16_BN32_G1_w4_s4").to_engine()
    assert list(data).index("200") == list(data).index("128") + 1
    assert str(target) in p.stdout.replace("\n", "")
    p = cli(
        "tune", "fp8-gemm", "--from-results", str(run), "--install-into", "vllm",
        "--python", str(env / "bin" / "python"),
    )  # fmt: skip
    assert p.exit_code == 2 and "vllm is not installed" in p.stderr


def test_from_log_dry_run_names_files_for_the_logs_gpu(cli: Cli) -> None:
    log = (
        FIX
        / "engine_logs"
        / "sglang_fp8_default"
        / "sglang-pr5675_h20-w8a8-default-single-line.log"
    )
    p = cli("tune", "fp8-gemm", "--from-log", str(log), "--dry-run")
    assert p.exit_code == 0, p.stderr
    assert "N=2112,K=7168" in p.stdout and f"{log.name}:1" in p.stdout
    assert "device_name=NVIDIA_H20,dtype=fp8_w8a8,block_shape=[128, 128].json" in p.stdout
    # H20 is sm_90: SGLang's default would run DeepGEMM for this shape
    assert "would run DeepGEMM" in p.stderr
    p = cli("tune", "fp8-gemm", "--from-log", str(log), "--dry-run", "--device-name", "NVIDIA H200")
    assert p.exit_code == 0, p.stderr
    err = p.stderr.replace("\n", " ")
    assert "the log was written on NVIDIA_H20, but this GPU is NVIDIA_H200" in err
    assert "device_name=NVIDIA_H200" in p.stdout
