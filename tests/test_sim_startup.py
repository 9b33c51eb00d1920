"""The reference engine's startup lines speak SGLang: its args as ``server_args=ServerArgs(...)``
(and ``/get_server_info``), its block-FP8 GEMM kernel-config lookups in its own package
directory, and NCCL's ``set by environment`` lines with ``NCCL_DEBUG=INFO``."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from inferlab.engines.evidence import SGLANG_SERVER_ARGS
from inferlab.sim.config import sim_config
from inferlab.sim.presets import Levers, get_preset, resolve
from inferlab.sim.startup import fp8_lookup, nccl_lines, prepare, server_args
from inferlab.tune.config import DEFAULT_SGLANG
from inferlab.tune.files import write_config_file
from support.pkgcopy import isolated_inferlab, sim_configs

READY = "inferlab sim (SIMULATED engine) listening on "


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


def test_a_served_engine_reads_its_package_configs(tmp_path: Path) -> None:
    python = isolated_inferlab(tmp_path)
    configs = sim_configs(python)
    configs.mkdir()
    for n, k in get_preset("generic").fp8_gemm_shapes:
        write_config_file(configs, "sglang", n, k, "NVIDIA H100 80GB HBM3", {1: DEFAULT_SGLANG})
    err = tmp_path / "err.log"
    with err.open("w") as fh:
        proc = subprocess.Popen(
            [str(python), "-m", "inferlab.cli.main", "sim", "serve", "--port", "0",
             "--model-mode", "batching"],
            stdout=subprocess.PIPE, stderr=fh, text=True,
            env={**os.environ, "NCCL_DEBUG": "INFO", "NCCL_PROTO": "LL"},
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(READY), line
        url = line[len(READY) :].strip()
        with urllib.request.urlopen(url + "/get_server_info", timeout=5) as r:
            info = json.loads(r.read())
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert info["simulated"] is True and info["tuned_fp8_share"] == 1.0
    log = err.read_text()
    assert log.count("Using configuration from") == 4 and "Using default" not in log
    assert "NCCL INFO NCCL_PROTO set by environment to LL" in log
    assert log.index("server_args=ServerArgs(") < log.index("Using configuration from")
