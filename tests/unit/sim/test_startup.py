"""The reference engine's startup lines speak SGLang: its args as ``server_args=ServerArgs(...)``
(and ``/get_server_info``), its block-FP8 GEMM kernel-config lookups in its own package
directory, and NCCL's ``set by environment`` lines with ``NCCL_DEBUG=INFO``."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.engines.evidence import SGLANG_SERVER_ARGS
from inferlab.sim.config import sim_config
from inferlab.sim.presets import Levers, get_preset, resolve
from inferlab.sim.startup import fp8_lookup, nccl_lines, prepare, server_args
from inferlab.tune.config import DEFAULT_SGLANG
from inferlab.tune.files import write_config_file


def test_server_args_line_parses_as_sglangs() -> None:
    cfg = sim_config(preset="dsv4-flash-8gpu", levers={"mem_fraction_static": 0.6})
    _, lines = prepare(cfg, {})
    args = SGLANG_SERVER_ARGS.find("[SIMULATED] " + lines[0])
    assert args == server_args(cfg)
    assert args["mem_fraction_static"] == 0.6 and args["cuda_graph_max_bs"] == 256
    assert args["preset"] == "dsv4-flash-8gpu" and "nccl_proto" not in args
    fixed, only = prepare(sim_config(itl_ms=3.0), {"NCCL_DEBUG": "INFO"})
    assert len(only) == 1 and SGLANG_SERVER_ARGS.find(only[0])["itl_ms"] == 3.0  # type: ignore[index]


def test_kernel_config_lookup_and_its_saving(tmp_path: Path) -> None:
    preset = get_preset("generic")
    share, lines = fp8_lookup(preset, tmp_path)
    assert share == 0 and all(
        ln.startswith("Using default W8A8 Block FP8 kernel config") for ln in lines
    )
    n, k = preset.fp8_gemm_shapes[0]
    write_config_file(tmp_path, "sglang", n, k, "NVIDIA H100 80GB HBM3", {1: DEFAULT_SGLANG})
    share, lines = fp8_lookup(preset, tmp_path)
    assert share == 0.25 and lines[0].startswith(f"Using configuration from {tmp_path}/N={n},K={k}")
    base = resolve(preset, Levers()).fixed_ms
    quarter = resolve(preset, Levers(tuned_fp8_share=0.25)).fixed_ms
    assert quarter == pytest.approx(base - 0.25 * preset.tuned_fp8_saving_ms)
    assert resolve(preset, Levers(tuned_fp8=True)).fixed_ms == pytest.approx(
        base - preset.tuned_fp8_saving_ms
    )


def test_nccl_lines_only_with_nccl_debug() -> None:
    assert nccl_lines({"NCCL_PROTO": "LL"}) == []
    lines = nccl_lines({"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO"})
    assert lines[0].endswith("NCCL INFO NCCL_ALGO set by environment to Ring")
    assert lines[1].endswith("NCCL INFO NCCL_PROTO set by environment to LL")
