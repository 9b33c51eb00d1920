"""``scripts/h200_sglang.sh`` and ``scripts/h200_sglang_wheels.py``: arguments, a part that was
not carried, the local run of the script's steps, the pinned list and the pruned kernel wheel."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from support import ROOT


def _sh(*args: str, tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "OUT": str(tmp / "out"), "H200_WORK": str(tmp / "w"),
            "H200_STAGE": str(tmp / "stage"), **env}  # fmt: skip
    return subprocess.run(
        ["bash", "scripts/h200_sglang.sh", *args], cwd=ROOT, env=full, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("args", [(), ("stage",), ("stage", "x"), ("run", "part9"), ("go",)])
def test_the_device_script_refuses_bad_arguments(tmp_path: Path, args: tuple[str, ...]) -> None:
    r = _sh(*args, tmp=tmp_path)
    assert r.returncode == 2 and "usage:" in r.stderr


def test_staging_a_part_that_was_not_carried_fails_naming_it(tmp_path: Path) -> None:
    r = _sh("stage", "42", tmp=tmp_path)
    assert r.returncode == 1 and ".sglang/42/site.tar.xz.part not carried" in r.stdout


def test_the_local_run_makes_the_fp8_model_and_stops_before_sglang(tmp_path: Path) -> None:
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    r = _sh("run", "check", tmp=tmp_path, H200_LOCAL_TEST="1", PATH=path)
    assert r.returncode == 0, r.stdout + r.stderr
    model = tmp_path / "w" / "m1b-fp8ct"  # compressed-tensors: what SGLang 0.5.17's Llama loads
    assert (model / "model.safetensors").is_file()
    assert '"quant_method": "compressed-tensors"' in (model / "config.json").read_text()
    assert "local test: stopping before SGLang" in r.stdout


def _wheels() -> ModuleType:
    spec = importlib.util.spec_from_file_location("h200s", ROOT / "scripts/h200_sglang_wheels.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_pinned_list_is_sglang_0_5_17_without_the_image_or_deepgemm() -> None:
    pins = _wheels().read_pins(ROOT / "scripts/h200_sglang_wheels.txt")
    assert pins["sglang"] == "0.5.17" and pins["sglang-kernel"] == "0.4.5"
    assert pins["flashinfer-python"] == "0.6.15.post1" and pins["transformers"] == "5.12.1"
    for name in ("torch", "triton", "torchvision", "numpy", "numba", "sgl-deep-gemm", "cuda-tile"):
        assert name not in pins  # the image's own, or not on the triton path
    r = subprocess.run([sys.executable, "scripts/h200_sglang_wheels.py", "check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    assert r.returncode == 0 and "sglang==0.5.17" in r.stdout


def test_pruning_the_kernel_wheel_keeps_sm90_and_drops_fa3(tmp_path: Path) -> None:
    src = tmp_path / "sglang_kernel-0.4.5-cp310-abi3-manylinux2014_x86_64.whl"
    members = {
        "sgl_kernel/__init__.py": b"x",
        "sgl_kernel/flash_ops.abi3.so": b"fa3" * 100,
        "sgl_kernel/sm90/common_ops.abi3.so": b"sm90",
        "sgl_kernel/sm100/common_ops.abi3.so": b"sm100",
        "sgl_kernel/infllm_ops.cpython-310-x86_64-linux-gnu.so": b"inf",
        "sgl_kernel/flash_attn.py": b"py",
    }
    info = "sglang_kernel-0.4.5.dist-info"
    record = "".join(f"{k},sha256=x,1\n" for k in members) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(src, "w") as z:
        for k, v in members.items():
            z.writestr(k, v)
        z.writestr(f"{info}/METADATA", "Name: sglang-kernel\nVersion: 0.4.5\n")
        z.writestr(f"{info}/RECORD", record)
    out = tmp_path / "pruned.whl"
    n, size = _wheels().prune_wheel(src, out)
    assert n == 3 and size == 300 + 5 + 3
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        kept = z.read(f"{info}/RECORD").decode()
    assert {"sgl_kernel/sm90/common_ops.abi3.so", "sgl_kernel/flash_attn.py"} <= names
    assert f"{info}/METADATA" in names  # sglang checks the version of sglang-kernel at start
    assert "flash_ops" not in kept and "sm100" not in kept and "sm90" in kept
