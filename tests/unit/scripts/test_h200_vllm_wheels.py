"""``scripts/h200_vllm_wheels.py``: the pinned wheel list, a bad pin line, the pruned wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from support import ROOT


def _wheels_module() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("h200w", ROOT / "scripts" / "h200_vllm_wheels.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_pinned_wheel_list_is_one_version_each_and_leaves_the_image_torch() -> None:
    w = _wheels_module()
    pins = w.read_pins()  # type: ignore[attr-defined]
    assert pins["vllm"] == "0.26.0" and len(pins) >= 80
    for name in ("torch", "triton", "torchvision", "numpy", "numba", "nvidia-nccl-cu13"):
        assert name not in pins  # the image's own (torch 2.11.0+cu130, triton 3.6.0)
    for name in ("flashinfer-python", "nvidia-cutlass-dsl-libs-cu13", "quack-kernels", "pydantic"):
        assert name in pins
    r = subprocess.run([sys.executable, "scripts/h200_vllm_wheels.py", "check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    assert r.returncode == 0 and "vllm==0.26.0" in r.stdout


def test_a_bad_pin_line_is_named(tmp_path: Path) -> None:
    w = _wheels_module()
    bad = tmp_path / "pins.txt"
    bad.write_text("# head\nfoo==1.0\nbar>=2\n")
    with pytest.raises(ValueError, match=r"pins.txt:3: expected NAME==VERSION, got 'bar>=2'"):
        w.read_pins(bad)  # type: ignore[attr-defined]
    bad.write_text("foo==1.0\nFoo==1.1\n")
    with pytest.raises(ValueError, match="foo is pinned twice"):
        w.read_pins(bad)  # type: ignore[attr-defined]


def test_pruning_drops_the_listed_members_and_rewrites_record(tmp_path: Path) -> None:
    w = _wheels_module()
    src = tmp_path / "vllm-0.26.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    members = {
        "vllm/__init__.py": b"x",
        "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so": b"fa2" * 100,
        "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so": b"fa3",
        "vllm/third_party/deep_gemm/_C.cpython-311-x86_64-linux-gnu.so": b"c311",
        "vllm/third_party/deep_gemm/_C.cpython-312-x86_64-linux-gnu.so": b"c312",
    }
    record = "".join(f"{k},sha256=x,1\n" for k in members) + "vllm-0.26.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(src, "w") as z:
        for k, v in members.items():
            z.writestr(k, v)
        z.writestr("vllm-0.26.0.dist-info/RECORD", record)
    out = tmp_path / "pruned.whl"
    n, size = w.prune_wheel(src, out)  # type: ignore[attr-defined]
    assert n == 2 and size == 300 + 4
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        kept = z.read("vllm-0.26.0.dist-info/RECORD").decode()
    assert "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so" in names
    assert "vllm/third_party/deep_gemm/_C.cpython-312-x86_64-linux-gnu.so" in names
    assert "_vllm_fa2_C" not in kept and "cpython-311" not in kept and "cpython-312" in kept
