"""The reference engine as a real subprocess starting: its startup delay before it listens,
and the kernel configs a served engine reads from its own package copy."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

from inferlab.sim.presets import get_preset
from inferlab.tune.config import DEFAULT_SGLANG
from inferlab.tune.files import write_config_file
from support.pkgcopy import isolated_inferlab, sim_configs
from support.simproc import start_sim


def test_the_sim_waits_its_startup_delay_before_listening() -> None:
    t0 = time.monotonic()
    with start_sim("--startup-s", "1.5") as sim:
        took = time.monotonic() - t0
        assert took >= 1.5
        assert "loading weights (a 1.5 s startup delay)" in sim.stderr()


# --- the package's own kernel configs read by a served engine (an isolated inferlab copy)


READY = "inferlab sim (SIMULATED engine) listening on "


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
