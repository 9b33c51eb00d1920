"""Capture recipes: how each engine records a PyTorch-profiler trace while it serves (pure data).

One :class:`CaptureRecipe` per engine that can record a trace on request; the generic capture
code (``inferlab.campaign.parts.capture``) runs any of them. An engine without one (``openai``,
``llamacpp``) cannot be profiled by a campaign: record the trace yourself and run
``inferlab profile TRACE --campaign C --config NAME --point C=16``.

* SGLang (``python/sglang/srt/managers/io_struct.py`` ``ProfileReqInput``,
  ``srt/utils/profile_utils.py``): ``POST /start_profile`` with ``output_dir``, ``num_steps``,
  ``activities`` (default ``["CPU", "GPU"]``), ``profile_prefix``, ``with_stack``,
  ``record_shapes``. With ``num_steps`` the scheduler stops by itself and answers nothing more:
  one ``{prefix}-{profile_id}-TP-{r}[-DP-..][-PP-..][-EP-..].trace.json.gz`` per rank appears.
  ``SGLANG_TORCH_PROFILER_DIR`` (read by the server process) is the default ``output_dir``.
* vLLM ≥ 0.13 (``vllm/config/profiler.py``, ``entrypoints/serve/profile/api_router.py``): the
  endpoints exist only with ``--profiler-config '{"profiler": "torch", "torch_profiler_dir":
  DIR, ...}'``; older versions read ``VLLM_TORCH_PROFILER_DIR``. ``POST /start_profile`` takes
  ``{profile_prefix, delay_iterations, max_iterations}`` (newer versions; older ones ignore the
  body); each worker writes ``{prefix}_{dp0_pp0_tp0_..._}rank{r}.{ns}.pt.trace.json.gz`` when
  its ``max_iterations`` are done, and ``POST /stop_profile`` returns once everything is flushed
  (minutes on big models). The frontend's CPU-only ``*.async_llm.*`` trace is turned off
  (``ignore_frontend``) and excluded; the CPU build records CPU activity only.
* inferlab's reference engine speaks SGLang's endpoints and file naming (SIMULATED traces).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from inferlab.engines.flags import ParsedArgs

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "SGLANG_CAPTURE",
    "SIM_CAPTURE",
    "VLLM_CAPTURE",
    "CaptureLaunch",
    "CaptureRecipe",
    "rank_of",
    "sglang_ranks",
    "vllm_ranks",
]


@dataclass(frozen=True)
class CaptureLaunch:
    """What a launch needs so that the server can record traces into ``dir``."""

    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """For the plan and the config's diff: "profiling on (...)"."""
        parts = [*(f"{k}={v}" for k, v in self.env.items()), *self.args]
        return "profiling on (" + " ".join(parts) + ")"


@dataclass(frozen=True)
class CaptureRecipe:
    """How one engine records traces on request (see the module docstring)."""

    engine: str
    #: (output dir, engine version or None, steps per capture) → launch additions
    launch: Callable[[str, str | None, int], CaptureLaunch]
    #: (capture dir, prefix, steps, activities, stack) → the JSON body of ``start_path``
    body: Callable[[str, str, int, Sequence[str], bool], dict[str, JsonValue]]
    #: the engine args → how many rank files one capture writes
    ranks: Callable[[ParsedArgs], int]
    #: fnmatch pattern of a rank file of a capture with this prefix (``{prefix}`` replaced)
    rank_glob: str
    #: fnmatch patterns of files of the capture that are not rank traces
    exclude: tuple[str, ...] = ()
    start_path: str = "/start_profile"
    stop_path: str = "/stop_profile"
    #: the server stops by itself after the steps it was asked for (SGLang ``num_steps``)
    self_stopping: bool = False
    #: each capture gets its own ``output_dir`` in the body; else one dir fixed at launch
    dir_per_capture: bool = True
    #: its traces are synthesized (the reference engine): everything derived says SIMULATED
    simulated: bool = False
    source: str = ""

    def rank_pattern(self, prefix: str) -> str:
        return self.rank_glob.replace("{prefix}", prefix)


def _flag_int(args: ParsedArgs, flag: str, default: int = 1) -> int:
    v = args.get(flag)
    try:
        return int(v[-1]) if v else default
    except ValueError:
        return default


def sglang_ranks(args: ParsedArgs) -> int:
    """Scheduler processes: TP × PP, × DP unless DP attention splits the TP group."""
    tp, pp, dp = (_flag_int(args, f) for f in ("--tp-size", "--pp-size", "--dp-size"))
    return tp * pp * (1 if "--enable-dp-attention" in args else dp)


def vllm_ranks(args: ParsedArgs) -> int:
    """Workers: TP × PP × DP (``--data-parallel-size-local`` when given, per host)."""
    tp = _flag_int(args, "--tensor-parallel-size")
    pp = _flag_int(args, "--pipeline-parallel-size")
    dp = _flag_int(args, "--data-parallel-size-local", _flag_int(args, "--data-parallel-size"))
    return tp * pp * dp


_RANK = re.compile(r"-TP-(\d+)|rank(\d+)")


def rank_of(file_name: str) -> int | None:
    """The TP/worker rank in a rank file's name (``...-TP-3...``, ``..._rank3.``)."""
    m = _RANK.search(file_name)
    if m is None:
        return None
    return int(m.group(1) or m.group(2))


def _sglang_body(
    out: str, prefix: str, steps: int, activities: Sequence[str], stack: bool
) -> dict[str, JsonValue]:
    return {
        "output_dir": out,
        "num_steps": steps,
        "activities": list(activities),
        "profile_prefix": prefix,
        "with_stack": stack,
        "record_shapes": False,
    }


def _sglang_launch(out: str, version: str | None, steps: int) -> CaptureLaunch:
    return CaptureLaunch(env={"SGLANG_TORCH_PROFILER_DIR": out})


SGLANG_CAPTURE = CaptureRecipe(
    engine="sglang",
    launch=_sglang_launch,
    body=_sglang_body,
    ranks=sglang_ranks,
    rank_glob="{prefix}-*-TP-*.trace.json.gz",
    exclude=("*-memory*.pickle", "merged-*"),
    self_stopping=True,
    source="sglang python/sglang/srt/utils/profile_utils.py (_ProfilerTorch.stop file name)",
)

#: the simulated engine speaks SGLang's profiler endpoints and file names
SIM_CAPTURE = replace(
    SGLANG_CAPTURE,
    engine="sim",
    exclude=(),
    simulated=True,
    source="src/inferlab/sim/profiler.py (SGLang's endpoints and file names)",
)


def _version_tuple(v: str | None) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", v or "")
    return (int(m.group(1)), int(m.group(2))) if m else (999, 0)


def _vllm_launch(out: str, version: str | None, steps: int) -> CaptureLaunch:
    """``--profiler-config`` from 0.13 on (unknown version: assumed recent), else the env.
    From 0.26 on it carries ``max_iterations`` too: 0.26's ``/start_profile`` takes no body
    (``entrypoints/serve/profile/api_router.py``), so the limit must be set at launch."""
    v = _version_tuple(version)
    if v < (0, 13):
        return CaptureLaunch(
            env={"VLLM_TORCH_PROFILER_DIR": out, "VLLM_TORCH_PROFILER_WITH_STACK": "0"}
        )
    cfg: dict[str, JsonValue] = {
        "profiler": "torch",
        "torch_profiler_dir": out,
        "ignore_frontend": True,
        "torch_profiler_with_stack": False,
    }
    if v >= (0, 26):
        cfg["max_iterations"] = steps + 1
    return CaptureLaunch(args=("--profiler-config", json.dumps(cfg, separators=(",", ":"))))


def _vllm_body(
    out: str, prefix: str, steps: int, activities: Sequence[str], stack: bool
) -> dict[str, JsonValue]:
    # one more iteration than asked: CPU mode closes each step at the next step's start
    return {"profile_prefix": prefix, "max_iterations": steps + 1}


VLLM_CAPTURE = CaptureRecipe(
    engine="vllm",
    launch=_vllm_launch,
    body=_vllm_body,
    ranks=vllm_ranks,
    # 0.32 names a capture's files {prefix}_dp0_..._rank0.{ns}.pt.trace.json.gz; 0.26 ignores
    # the prefix (dp0_..._rank0.{ns}...): a capture's files are the new ones in the directory
    rank_glob="*rank*.pt.trace.json*",
    exclude=("*async_llm*", "*.txt"),
    dir_per_capture=False,
    source="vllm 0.32.0 and 0.26.0 vllm/v1/worker/gpu_worker.py (Worker.profile trace name), "
    "vllm/profiler/wrapper.py (tensorboard_trace_handler)",
)
