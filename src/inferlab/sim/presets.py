"""Presets of the SIMULATED engine's batching model, and how SGLang's levers change them.

A preset is a named set of timing and memory parameters (:class:`Preset`); :func:`resolve`
applies the launch levers a user passes as SGLang flags (:class:`Levers`) and returns the
:class:`~inferlab.sim.model.StepModel` the server runs, or raises :class:`StartupFailure` with
the log lines SGLang prints when that launch dies (CUDA-graph capture out of memory).

``dsv4-flash-8gpu`` is solved from the seed campaign (DeepSeek-V4-Flash, SGLang, 8 GPUs; see
``docs/sim.md``): TPOT 94 ms at C=1, 24 tok/s total at C=8, 23.2 at C=16; tuned FP8 GEMM
configs + ``NCCL_PROTO=LL`` save 4.5 + 1.5 ms per step; MTP/EAGLE with one draft token
accepted 60% of the time (accept length 1.6) gives 15.7 tok/s at C=1 and the same total as
config A at C=8 and C=16. The presets stated as they are (``generic``) are data: ``presets.toml``
beside this module.
"""

from __future__ import annotations

from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from inferlab.config.tomlcompat import tomllib
from inferlab.errors import ConfigError, lookup
from inferlab.sim.model import (
    MemoryModel,
    SpecCosts,
    SpecModel,
    StepCosts,
    StepModel,
    graph_capture_need,
    mean_accept_length,
)

__all__ = [
    "PRESETS",
    "Levers",
    "Preset",
    "StartupFailure",
    "expected_accept_length",
    "get_preset",
    "resolve",
]


class Preset(StepCosts):
    """One simulated deployment: baseline step costs, lever effects, memory."""

    name: str
    description: str
    eager_penalty: float = Field(ge=1.0)
    default_max_running: int = Field(ge=1)
    default_cuda_graph_max_bs: int = Field(ge=1)
    default_mem_fraction: float = Field(gt=0.0, lt=1.0)
    tuned_fp8_saving_ms: float = Field(ge=0.0, description="per step, from --tuned-fp8")
    nccl_ll_saving_ms: float = Field(ge=0.0, description="per step, from NCCL_PROTO=LL")
    memory: MemoryModel
    spec: SpecCosts
    #: block-FP8 GEMM (N, K per rank) shapes the deployment runs: the engine looks up a tuned file
    #: for each at start (``inferlab.sim.startup``) and logs SGLang's line; the share found
    #: scales ``tuned_fp8_saving_ms``
    fp8_gemm_shapes: tuple[tuple[int, int], ...] = ()
    device_name: str = "NVIDIA_H100_80GB_HBM3"  # as the engines spell it in file names


class Levers(BaseModel):
    """The SGLang launch flags (and ``NCCL_PROTO``) the simulated engine interprets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = Field(default=None, ge=1, le=32)
    speculative_eagle_topk: int | None = Field(default=None, ge=1, le=32)
    speculative_num_draft_tokens: int | None = Field(default=None, ge=2, le=64)
    mem_fraction_static: float | None = Field(default=None, gt=0.0, lt=1.0)
    cuda_graph_max_bs: int | None = Field(default=None, ge=1, le=4096)
    max_running_requests: int | None = Field(default=None, ge=1)
    tuned_fp8: bool = False
    #: share of the preset's GEMM shapes with a tuned file installed (``sim/configs/``)
    tuned_fp8_share: float = Field(default=0.0, ge=0.0, le=1.0)
    nccl_proto: str | None = None


class StartupFailure(Exception):
    """The simulated launch dies; ``lines`` is what SGLang would have logged."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(lines[-1] if lines else "startup failure")
        self.lines = lines


_SPEC_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "MTP")


def _dsv4() -> Preset:
    """Solve the step model from the seed campaign's numbers (see the module docstring)."""
    tpot1, tput8, tput16 = 94.0, 24.0, 23.2  # baseline: ms at C=1; total tok/s at C=8, C=16
    sat = 8.0  # decode saturated by C=8
    step8, step16 = 8_000.0 / tput8, 16_000.0 / tput16
    per_seq = (step8 - tpot1) / (sat - 1.0)
    fixed = tpot1 - per_seq
    over = (step16 - step8) / 8.0
    fp8, ll = 4.5, 1.5  # config A: 94 → 88 ms at C=1 (Amdahl: FP8 GEMM ~6%, NCCL ~2% of it)
    fixed_a = fixed - fp8 - ll

    def step_a(b: float) -> float:
        return fixed_a + per_seq * min(b, sat) + over * max(0.0, b - sat)

    # config B: one MTP draft (verify width 2), accept length 1.6 → p = 0.6
    p, width, alen = 0.6, 2.0, 1.6
    d0, d1 = 6.0, 0.5  # the draft head: one light layer
    b1 = alen * 1000.0 / 15.7  # step at C=1 for 15.7 tok/s
    b8 = 8.0 * alen * 1000.0 / (8_000.0 / step_a(8))  # same total as A at C=8
    b16 = 16.0 * alen * 1000.0 / (16_000.0 / step_a(16))  # ... and at C=16
    v = (b1 - d0 - d1 - fixed_a) / width
    v_over = (b16 - d0 - 16 * d1 - (b8 - d0 - 8 * d1)) / (width * 8.0)
    rest8 = b8 - d0 - 8 * d1 - fixed_a  # = v·S + v_over·(16 − S)
    v_sat = (v_over * width * 8.0 - rest8) / (v_over - v)
    return Preset(
        name="dsv4-flash-8gpu",
        description="DeepSeek-V4-Flash (MoE, 13B active) on SGLang, 8 GPUs: the seed campaign",
        fixed_ms=fixed,
        per_seq_ms=per_seq,
        saturation=sat,
        per_seq_over_ms=over,
        prefill_per_token_ms=0.3,
        eager_penalty=1.25,
        default_max_running=256,
        default_cuda_graph_max_bs=256,
        default_mem_fraction=0.70,
        tuned_fp8_saving_ms=fp8,
        nccl_ll_saving_ms=ll,
        memory=MemoryModel(
            gpu_gib=178.0,
            weights_fraction=0.45,
            kv_tokens_per_fraction=2_000_000.0,
            reserve_fraction=0.22,
            graph_per_bs_fraction=0.00025,
            spec_extra_fraction=0.09,
        ),
        # DeepSeek-V3-class attention and MLP projections at TP 8 (N, K)
        fp8_gemm_shapes=((2112, 7168), (3072, 1536), (4096, 512), (7168, 2048), (4608, 7168)),
        device_name="NVIDIA_B200",
        spec=SpecCosts(
            accept_prob=p,
            draft_fixed_ms=d0,
            draft_per_seq_ms=d1,
            verify_per_token_ms=v,
            verify_sat_tokens=v_sat,
            verify_per_token_over_ms=v_over,
        ),
    )


def _stated() -> list[Preset]:
    """The presets stated as they are, from the package's ``presets.toml``."""
    text = resources.files("inferlab.sim").joinpath("presets.toml").read_text("utf-8")
    return [Preset.model_validate({"name": n, **p}) for n, p in tomllib.loads(text).items()]


#: name → preset; ``--model-mode batching`` without ``--preset`` runs ``generic``.
PRESETS: dict[str, Preset] = {p.name: p for p in (_dsv4(), *_stated())}


def get_preset(name: str) -> Preset:
    return lookup(
        PRESETS, name, "--preset: unknown preset {name}; expected one of {known}", sorted(PRESETS)
    )


def _draft_tokens(lv: Levers) -> int:
    """Drafted tokens per step, as SGLang reads its flags (chain when topk = 1)."""
    algo = (lv.speculative_algorithm or "").upper()
    if algo not in _SPEC_ALGORITHMS:
        raise ConfigError(
            f"--speculative-algorithm: {lv.speculative_algorithm!r} is not simulated; "
            f"expected one of {', '.join(_SPEC_ALGORITHMS)}"
        )
    steps = lv.speculative_num_steps or 1
    topk = lv.speculative_eagle_topk or 1
    if topk != 1:
        raise ConfigError("--speculative-eagle-topk: only 1 (a draft chain) is simulated")
    # SGLang: with topk 1, num_draft_tokens is num_steps + 1 (the verify width)
    width = lv.speculative_num_draft_tokens or steps + 1
    if width != steps + 1:
        raise ConfigError(
            f"--speculative-num-draft-tokens: {width} with --speculative-num-steps {steps} "
            f"and topk 1 must be {steps + 1} (SGLang's chain: steps + 1)"
        )
    return steps


def _oom_lines(need_gib: float, free_gib: float, total_gib: float) -> list[str]:
    """SGLang's CUDA-graph capture failure (cuda_graph_runner.py), as it logs it."""
    tried = max(0.5, need_gib - free_gib) * 1024.0
    return [
        "Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", '
        "line 216, in initialize",
        "    self.init_cuda_graphs()",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py",'
        " line 269, in __init__",
        "    raise Exception(",
        f"Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate "
        f"{tried:.2f} MiB. GPU 0 has a total capacity of {total_gib:.2f} GiB of which "
        f"{free_gib * 1024.0:.2f} MiB is free.",
        "Possible solutions:",
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
        "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
        "3. disable torch compile by not using --enable-torch-compile",
        "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
        "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ",
        "Scheduler hit an exception: Exception: Capture cuda graph failed: CUDA out of memory.",
    ]


def resolve(preset: Preset, lv: Levers) -> StepModel:
    """The step model of ``preset`` launched with ``lv``; raises :class:`StartupFailure`."""
    mem = preset.memory
    frac = lv.mem_fraction_static or preset.default_mem_fraction
    if frac <= mem.weights_fraction:
        raise StartupFailure(
            [
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                f"(SIMULATED: the weights take {mem.weights_fraction:.2f} of each GPU)"
            ]
        )
    spec: SpecModel | None = None
    if lv.speculative_algorithm is not None:
        k = _draft_tokens(lv)
        spec = SpecModel(draft_tokens=k, **preset.spec.model_dump())
    elif any(
        x is not None
        for x in (
            lv.speculative_num_steps,
            lv.speculative_eagle_topk,
            lv.speculative_num_draft_tokens,
        )
    ):
        raise ConfigError("--speculative-*: needs --speculative-algorithm")
    max_bs = lv.cuda_graph_max_bs or preset.default_cuda_graph_max_bs
    width = spec.draft_tokens + 1 if spec is not None else 1
    need = graph_capture_need(mem, max_bs, width, spec is not None)
    free = 1.0 - frac
    if need > free:
        raise StartupFailure(_oom_lines(need * mem.gpu_gib, free * mem.gpu_gib, mem.gpu_gib))
    fixed = preset.fixed_ms
    fixed -= preset.tuned_fp8_saving_ms * (1.0 if lv.tuned_fp8 else lv.tuned_fp8_share)
    if (lv.nccl_proto or "").upper() == "LL":
        fixed -= preset.nccl_ll_saving_ms
    return StepModel(
        fixed_ms=max(0.0, fixed),
        per_seq_ms=preset.per_seq_ms,
        saturation=preset.saturation,
        per_seq_over_ms=preset.per_seq_over_ms,
        prefill_per_token_ms=preset.prefill_per_token_ms,
        max_running=lv.max_running_requests or preset.default_max_running,
        kv_tokens=max(1, int((frac - mem.weights_fraction) * mem.kv_tokens_per_fraction)),
        cuda_graph_max_bs=max_bs,
        eager_penalty=preset.eager_penalty,
        spec=spec,
    )


def expected_accept_length(model: StepModel) -> float:
    """Mean tokens per sequence per step (1 without speculative decoding)."""
    s = model.spec
    return 1.0 if s is None else mean_accept_length(s.draft_tokens, s.accept_prob)
