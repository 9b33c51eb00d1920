"""Would the engine run the Triton kernel at all? The rules, per engine, GPU, flags and shape."""

from __future__ import annotations

import pytest

from inferlab.errors import ConfigError
from inferlab.tune.backends import (
    BackendContext,
    capability_from_name,
    flag_value,
    triton_verdict,
)

H200 = (9, 0)


@pytest.mark.parametrize(
    ("name", "cap"),
    [
        ("NVIDIA H200", (9, 0)),
        ("NVIDIA_H100_80GB_HBM3", (9, 0)),
        ("NVIDIA H20", (9, 0)),
        ("NVIDIA_H20-3e", (9, 0)),
        ("NVIDIA B200", (10, 0)),
        ("NVIDIA A100-SXM4-80GB", (8, 0)),
        ("NVIDIA L40S", (8, 9)),
        ("NVIDIA GeForce RTX 4090", (8, 9)),
        ("AMD Instinct MI300X", None),
    ],
)
def test_capability_from_name(name: str, cap: tuple[int, int] | None) -> None:
    assert capability_from_name(name) == cap


def test_flag_value_forms() -> None:
    assert flag_value(["--fp8-gemm-backend", "triton"], "--fp8-gemm-backend") == "triton"
    assert flag_value(["--fp8-gemm-backend=cutlass"], "--fp8-gemm-backend") == "cutlass"
    assert flag_value(["--tp", "8"], "--fp8-gemm-backend") is None


def test_sglang_hopper_default_runs_deepgemm() -> None:
    v = triton_verdict("sglang", BackendContext(2112, 7168, H200))
    assert v.backend == "DeepGEMM" and v.uses_triton is False
    assert v.warning is not None and "--fp8-gemm-backend triton" in v.warning
    assert "N=2112,K=7168" in v.warning


def test_sglang_forced_triton_is_fine() -> None:
    for argv in (["--fp8-gemm-backend", "triton"], ["--fp8-gemm-backend=triton"]):
        v = triton_verdict("sglang", BackendContext(4096, 7168, H200, argv))
        assert v.uses_triton is True and v.warning is None


def test_sglang_deepgemm_off_cutlass_unless_shape_falls_back() -> None:
    env = {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"}
    old = "0.5.15.post1"  # CUTLASS on sm_90 up to 0.5.15.post1 (sm_120 only from 0.5.16)
    v = triton_verdict("sglang", BackendContext(4096, 7168, H200, env=env, version=old))
    assert v.backend == "CUTLASS"
    assert triton_verdict("sglang", BackendContext(4096, 7168, H200, env=env)).backend == "Triton"
    # 2112 is not a multiple of 128: CUTLASS falls back to Triton, the tuned file is read
    v = triton_verdict("sglang", BackendContext(2112, 7168, H200, env=env, version=old))
    assert v.uses_triton is True and v.warning is None
    # DeepGEMM needs N % 64 == 0: N=2088 falls back to Triton even with DeepGEMM on
    assert triton_verdict("sglang", BackendContext(2088, 7168, H200)).uses_triton is True


def test_sglang_older_gpus_and_unknown() -> None:
    assert triton_verdict("sglang", BackendContext(4096, 7168, (8, 0))).uses_triton is True
    v = triton_verdict("sglang", BackendContext(4096, 7168, None))
    assert v.uses_triton is None and v.warning is not None and "cannot tell" in v.warning


def test_vllm_rules() -> None:
    v = triton_verdict("vllm", BackendContext(4096, 7168, H200))
    assert v.backend == "DeepGEMM" and v.warning is not None
    off = {"VLLM_USE_DEEP_GEMM": "0"}
    assert triton_verdict("vllm", BackendContext(4096, 7168, H200, env=off)).backend == "CUTLASS"
    assert triton_verdict("vllm", BackendContext(2112, 7168, H200, env=off)).uses_triton is True
    assert triton_verdict("vllm", BackendContext(2112, 7168, (8, 9))).uses_triton is True


def test_unknown_engine() -> None:
    with pytest.raises(ConfigError, match="known: sglang, vllm"):
        triton_verdict("trtllm", BackendContext(1, 1, H200))
