"""What the SIMULATED engine says at startup, in SGLang's words (every line marked).

- its parsed args, as SGLang logs them: ``server_args=ServerArgs(field=value, ...)`` with one
  field per ``inferlab sim serve`` flag (``--mem-fraction-static`` → ``mem_fraction_static``),
  the batching model's effective values filled in; the same dict answers
  ``/get_server_info``;
- with a preset, its block-FP8 GEMM kernel configs: for each shape of the preset it looks for
  SGLang's file name in its package directory ``inferlab/sim/configs/`` and logs SGLang's
  ``Using configuration from <path> for W8A8 Block FP8 kernel.`` or ``Using default W8A8 Block
  FP8 kernel config. Performance might be sub-optimal! Config file not found at <path>``; the
  found share of the shapes scales the preset's tuned-FP8 saving;
- with ``NCCL_DEBUG=INFO``, NCCL's ``NCCL INFO <VAR> set by environment to <value>`` for each
  ``NCCL_*`` variable it was given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.sim.config import SimConfig
from inferlab.sim.presets import Preset, get_preset

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "CONFIG_DIR",
    "fp8_lookup",
    "nccl_lines",
    "prepare",
    "server_args",
    "server_args_line",
]

#: where the simulated engine reads tuned block-FP8 GEMM files (SGLang's names)
CONFIG_DIR = Path(__file__).resolve().parent / "configs"


def _file_name(n: int, k: int, device: str) -> str:
    return f"N={n},K={k},device_name={device},dtype=fp8_w8a8,block_shape=[128, 128].json"


def fp8_lookup(preset: Preset, config_dir: Path = CONFIG_DIR) -> tuple[float, list[str]]:
    """(share of the preset's GEMM shapes with a tuned file, SGLang's log line per shape)."""
    lines = []
    found = 0
    for n, k in preset.fp8_gemm_shapes:
        path = config_dir / _file_name(n, k, preset.device_name)
        if path.is_file():
            found += 1
            lines.append(f"Using configuration from {path} for W8A8 Block FP8 kernel.")
        else:
            lines.append(
                "Using default W8A8 Block FP8 kernel config. Performance might be sub-optimal! "
                f"Config file not found at {path}"
            )
    share = found / len(preset.fp8_gemm_shapes) if preset.fp8_gemm_shapes else 0.0
    return share, lines


def nccl_lines(env: Mapping[str, str]) -> list[str]:
    """NCCL's own lines for the ``NCCL_*`` variables, when ``NCCL_DEBUG`` asks for INFO."""
    if env.get("NCCL_DEBUG", "").upper() not in ("INFO", "TRACE"):
        return []
    pid = os.getpid()
    head = f"sim:{pid}:{pid} [0] NCCL INFO"
    out = [
        f"{head} {k} set by environment to {v}"
        for k, v in sorted(env.items())
        if k.startswith("NCCL_") and k != "NCCL_DEBUG"
    ]
    return [*out, f"{head} comm 0x0 rank 0 nranks 8 cudaDev 0 - Init COMPLETE (SIMULATED)"]


def server_args(config: SimConfig) -> dict[str, JsonValue]:
    """Every ``inferlab sim serve`` arg by its field name, effective values filled in."""
    # the launch's factor and number: drawn at start-up, logged on their own line
    drawn = {"launch_factor", "launch_index"}
    d = config.model_dump(mode="json", exclude={"levers", "truth_path", *drawn})
    d["truth"] = str(config.truth_path) if config.truth_path else None
    lv = config.levers.model_dump(mode="json")
    if config.batching:
        preset = get_preset(config.preset or "generic")
        lv["mem_fraction_static"] = lv["mem_fraction_static"] or preset.default_mem_fraction
        lv["cuda_graph_max_bs"] = lv["cuda_graph_max_bs"] or preset.default_cuda_graph_max_bs
        lv["max_running_requests"] = lv["max_running_requests"] or preset.default_max_running
    lv.pop("nccl_proto", None)  # an environment variable, not an arg
    return {**d, **lv}


def server_args_line(config: SimConfig) -> str:
    """``server_args=ServerArgs(...)``, as SGLang prints it (Python reprs of the values)."""
    body = ", ".join(f"{k}={v!r}" for k, v in server_args(config).items())
    return f"server_args=ServerArgs({body})"


def prepare(config: SimConfig, env: Mapping[str, str]) -> tuple[SimConfig, list[str]]:
    """The config with the share of tuned GEMM shapes found, and the startup lines (without
    their ``[SIMULATED]`` mark): args, kernel configs, NCCL, the batching model's banner."""
    if not config.batching:
        return config, [server_args_line(config)]
    name = config.preset or "generic"
    if config.levers.tuned_fp8:
        kernels = [
            "--tuned-fp8: every W8A8 Block FP8 GEMM shape runs a tuned config (a sim-only "
            "stand-in: no config file read)"
        ]
    else:
        share, kernels = fp8_lookup(get_preset(name))
        lv = config.levers.model_copy(update={"tuned_fp8_share": share})
        config = config.model_copy(update={"levers": lv})
    banner = (
        f"inferlab sim: continuous-batching model, preset {name}, time scale "
        f"{config.time_scale:g}; every line marked [SIMULATED] imitates SGLang's log"
    )
    return config, [server_args_line(config), *kernels, *nccl_lines(env), banner]
