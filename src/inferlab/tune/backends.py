"""Would the engine run the Triton block-FP8 kernel for this shape at all? A registry of rules.

Tuning a kernel that never runs is the mistake to prevent. Both engines pick their W8A8
block-FP8 GEMM backend from the GPU, their flags and environment, and the shape:

- SGLang (``fp8_utils.dispatch_w8a8_block_fp8_linear``), ``--fp8-gemm-backend auto``: DeepGEMM
  when JIT DeepGEMM is on (default on sm_90/sm_100 when ``deep_gemm`` is installed; off with
  ``SGLANG_ENABLE_JIT_DEEPGEMM=0``), then FlashInfer on Blackwell, then CUTLASS (on sm_90+ up to
  0.5.15.post1; on sm_120 only from 0.5.16: ``SGLANG_FP8_RULES``), else Triton. So SGLang 0.5.17
  on an H200 without ``deep_gemm`` runs Triton. DeepGEMM falls back to Triton when N % 64 or
  K % 128 ≠ 0, CUTLASS when N % 128 or K % 128 ≠ 0, FlashInfer when K < 256.
  ``--fp8-gemm-backend triton`` forces Triton.
- vLLM (``W8A8BlockFp8LinearOp``, before 0.2x): DeepGEMM when ``VLLM_USE_DEEP_GEMM`` is on and
  N % 64 = K % 128 = 0 on sm_90/sm_100, else CUTLASS block-FP8 on sm_90+ when N and K are
  multiples of 128, else Triton. vLLM 0.26 (``model_executor/kernels/linear/__init__.py``,
  ``_POSSIBLE_FP8_BLOCK_KERNELS``) tries FlashInfer+DeepGEMM, DeepGEMM, CUTLASS, Marlin, then
  Triton; ``--linear-backend triton`` keeps only Triton, and ``VLLM_DISABLED_KERNELS`` (class
  names, comma-separated) removes kernels from the list.

These rules follow the engines' source; versions differ, so a verdict says what it assumed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol

from inferlab.engines.base import release_key
from inferlab.tune.config import tuning_of

__all__ = [
    "BACKEND_RULES",
    "SGLANG_FP8_RULES",
    "BackendContext",
    "BackendVerdict",
    "SglangFp8Rules",
    "capability_from_name",
    "flag_value",
    "sglang_rules",
    "summarize",
    "triton_verdict",
]


@dataclass(frozen=True)
class BackendContext:
    """What decides the backend: the GPU's compute capability (None: unknown), the server's
    flags and environment, the weight shape (N, K) and the engine's release."""

    n: int
    k: int
    capability: tuple[int, int] | None
    argv: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    #: the engine's release (None: unknown; a rule then assumes its newest known release)
    version: str | None = None
    #: how ``version`` was found, when not from the engine itself (said in the verdict)
    version_note: str = ""


@dataclass(frozen=True)
class BackendVerdict:
    """``backend`` the engine would run; ``uses_triton`` whether a tuned file is read."""

    engine: str
    n: int
    k: int
    backend: str
    uses_triton: bool | None
    reason: str
    fix: str | None = None

    @property
    def warning(self) -> str | None:
        """The warning to print, or None when the Triton kernel (and so the file) is used."""
        if self.uses_triton:
            return None
        head = (
            f"{self.engine} would run {self.backend} for N={self.n},K={self.k}, not the Triton "
            "kernel tuned here: the file would never be read"
            if self.uses_triton is False
            else f"{self.engine}: cannot tell whether N={self.n},K={self.k} runs the Triton kernel"
        )
        return f"{head} ({self.reason})" + (f"; {self.fix}" if self.fix else "")

    def to_json(self) -> dict[str, object]:
        return asdict(self)


# (pattern on the device name, capability): datasheet compute capabilities
_NAME_CAPS: tuple[tuple[str, tuple[int, int]], ...] = (
    (r"\bGB?300\b|\bB300\b", (10, 3)),
    (r"\bGB?200\b|\bB200\b|\bB100\b", (10, 0)),
    (r"RTX PRO 6000 Blackwell|RTX 50\d0|\bGB10\b", (12, 0)),
    (r"\bGH200\b|\bH100\b|\bH200\b|\bH800\b|\bH20\b", (9, 0)),
    (r"\bL40S?\b|\bL20Y?\b|\bL4\b|RTX 40\d0|RTX 6000 Ada", (8, 9)),
    (r"\bA100\b|\bA800\b|\bA30\b", (8, 0)),
    (r"\bA10G?\b|\bA40\b|RTX 30\d0|RTX A6000", (8, 6)),
)


def capability_from_name(device_name: str) -> tuple[int, int] | None:
    """Compute capability from a device name (``NVIDIA H200``, ``NVIDIA_H100_80GB_HBM3``), or
    None when the name is not recognized."""
    name = device_name.replace("_", " ")
    for pattern, cap in _NAME_CAPS:
        if re.search(pattern, name):
            return cap
    return None


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value of ``--flag V`` or ``--flag=V`` in ``argv`` (last one wins), else None."""
    value: str | None = None
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(flag + "="):
            value = a.split("=", 1)[1]
    return value


def _env_off(env: Mapping[str, str], key: str) -> bool:
    return env.get(key, "").strip().lower() in ("0", "false", "no", "off")


def _env_on(env: Mapping[str, str], key: str) -> bool:
    return env.get(key, "").strip().lower() in ("1", "true", "yes", "on")


_SGLANG_FIX = "start SGLang with --fp8-gemm-backend triton to run the tuned kernel"


@dataclass(frozen=True)
class SglangFp8Rules:
    """How a range of SGLang releases picks its block-FP8 GEMM on CUDA, read in
    ``srt/layers/quantization/fp8_utils.py`` (``_dispatch_auto_backend``,
    ``_dispatch_explicit_backend``, ``initialize_fp8_gemm_config``) of the releases named.

    ``since``: the first release; ``cutlass``: the compute-capability majors on which ``auto``
    picks CUTLASS and ``--fp8-gemm-backend cutlass`` runs (elsewhere it raises);
    ``env_overrides``: ``SGLANG_ENABLE_FLASHINFER_FP8_GEMM`` / ``SGLANG_SUPPORT_CUTLASS_BLOCK_FP8``
    still choose the backend under ``auto``."""

    since: str
    cutlass: frozenset[int]
    env_overrides: bool
    source: str


#: oldest first; a version older than the table's first row, or none, gets the newest row
SGLANG_FP8_RULES: tuple[SglangFp8Rules, ...] = (
    SglangFp8Rules(
        "0",
        frozenset({9, 10}),
        True,
        "0.5.9 wheel: _check_cutlass_block_fp8_hardware_support() = is_sm90_supported() or "
        "is_blackwell_supported(); the two environment variables read in fp8_utils",
    ),
    SglangFp8Rules(
        "0.5.10",
        frozenset({9, 10}),
        False,
        "0.5.10–0.5.15.post1 wheels: the same CUTLASS check; neither environment variable",
    ),
    SglangFp8Rules(
        "0.5.16",
        frozenset({12}),
        False,
        "0.5.16–0.5.21 wheels: auto picks CUTLASS only `elif is_sm120_supported()`, and an "
        "explicit cutlass elsewhere raises '--fp8-gemm-backend=cutlass is deprecated on this "
        "hardware'",
    ),
)


def sglang_rules(version: str | None) -> SglangFp8Rules:
    """The dispatch rules of SGLang release ``version`` (None: the newest row)."""
    key = release_key(version) if version else ()
    if not key:
        return SGLANG_FP8_RULES[-1]
    got = SGLANG_FP8_RULES[0]
    for row in SGLANG_FP8_RULES:
        if release_key(row.since) <= key:
            got = row
    return got


class _Verdict(Protocol):
    """A verdict for one engine and shape: (backend name, runs Triton?, reason, fix)."""

    def __call__(
        self, name: str, triton: bool | None, reason: str, fix: str | None = None
    ) -> BackendVerdict: ...


def _sglang(ctx: BackendContext) -> BackendVerdict:
    env = ctx.env
    n, k = ctx.n, ctx.k
    rules = sglang_rules(ctx.version)
    backend = (flag_value(ctx.argv, "--fp8-gemm-backend") or "auto").lower()
    fix_triton = _SGLANG_FIX
    which = (
        f"SGLang {ctx.version_note or ctx.version}"
        if ctx.version
        else f"SGLang {rules.since}+ (version unknown)"
    )

    def v(name: str, triton: bool | None, reason: str, fix: str | None = None) -> BackendVerdict:
        return BackendVerdict("sglang", n, k, name, triton, f"{reason}; {which}", fix)

    if backend == "triton":
        return v("Triton", True, "--fp8-gemm-backend triton")
    if backend == "auto" and rules.env_overrides:
        if _env_on(env, "SGLANG_ENABLE_FLASHINFER_FP8_GEMM"):
            backend = "flashinfer_trtllm"
        elif _env_on(env, "SGLANG_SUPPORT_CUTLASS_BLOCK_FP8"):
            backend = "cutlass"
    dg_shape = n % 64 == 0 and k % 128 == 0
    cutlass_shape = n % 128 == 0 and k % 128 == 0
    if backend == "deep_gemm":
        if dg_shape:
            return v("DeepGEMM", False, "--fp8-gemm-backend deep_gemm", fix_triton)
        return v("Triton", True, "DeepGEMM falls back to Triton: N % 64 or K % 128 ≠ 0")
    if backend == "cutlass":
        return _sglang_cutlass(ctx, rules, v, cutlass_shape)
    if backend == "flashinfer_trtllm":
        if k >= 256:
            return v("FlashInfer TRT-LLM", False, "FlashInfer FP8 GEMM selected", fix_triton)
        return v("Triton", True, "FlashInfer falls back to Triton for K < 256")
    if backend not in ("auto",):
        return v(backend, False, f"--fp8-gemm-backend {backend}", fix_triton)
    return _sglang_auto(ctx, rules, v)


def _sglang_cutlass(
    ctx: BackendContext, rules: SglangFp8Rules, v: _Verdict, cutlass_shape: bool
) -> BackendVerdict:
    """``--fp8-gemm-backend cutlass``: a start-up error on a GPU the release does not run
    CUTLASS block FP8 on; else CUTLASS, or Triton for a shape CUTLASS cannot take."""
    cap = ctx.capability
    if cap is not None and cap[0] not in rules.cutlass:
        return v(
            "none (start-up error)",
            False,
            f"--fp8-gemm-backend cutlass on sm_{cap[0]}{cap[1]}: this release runs CUTLASS "
            f"block FP8 only on sm_{'/'.join(f'{m}x' for m in sorted(rules.cutlass))}",
            _SGLANG_FIX,
        )
    if cutlass_shape:
        return v("CUTLASS", False, "CUTLASS block-FP8 selected", _SGLANG_FIX)
    return v("Triton", True, "CUTLASS falls back to Triton: N or K not a multiple of 128")


def _sglang_auto(ctx: BackendContext, rules: SglangFp8Rules, v: _Verdict) -> BackendVerdict:
    """SGLang's ``--fp8-gemm-backend auto`` without an env override: by compute capability."""
    env, n, k, cap = ctx.env, ctx.n, ctx.k, ctx.capability
    fix_triton = _SGLANG_FIX
    dg_shape = n % 64 == 0 and k % 128 == 0
    cutlass_shape = n % 128 == 0 and k % 128 == 0
    if cap is None:
        return v(
            "unknown",
            None,
            "GPU compute capability unknown; on sm_90+ the default (auto) prefers DeepGEMM",
            fix_triton,
        )
    if cap < (9, 0):
        return v("Triton", True, f"sm_{cap[0]}{cap[1]}: auto falls through to Triton")
    if cap[0] in (9, 10) and not _env_off(env, "SGLANG_ENABLE_JIT_DEEPGEMM"):
        if dg_shape:
            return v(
                "DeepGEMM",
                False,
                f"sm_{cap[0]}{cap[1]}, --fp8-gemm-backend auto, JIT DeepGEMM on (default when "
                "deep_gemm is installed)",
                fix_triton + " (or set SGLANG_ENABLE_JIT_DEEPGEMM=0, or leave sgl-deep-gemm out)",
            )
        return v("Triton", True, "DeepGEMM falls back to Triton: N % 64 or K % 128 ≠ 0")
    if cap[0] == 10:
        if k >= 256:
            return v(
                "FlashInfer TRT-LLM",
                False,
                f"sm_{cap[0]}{cap[1]}: auto prefers FlashInfer when installed",
                fix_triton,
            )
        return v("Triton", True, "FlashInfer falls back to Triton for K < 256")
    if cap[0] not in rules.cutlass:
        return v(
            "Triton",
            True,
            f"sm_{cap[0]}{cap[1]}, JIT DeepGEMM off: auto runs Triton (CUTLASS block FP8 only "
            f"on sm_{'/'.join(f'{m}x' for m in sorted(rules.cutlass))})",
        )
    if cutlass_shape:
        return v(
            "CUTLASS",
            False,
            f"sm_{cap[0]}{cap[1]}, JIT DeepGEMM off: auto picks CUTLASS block-FP8",
            fix_triton,
        )
    return v("Triton", True, "CUTLASS falls back to Triton: N or K not a multiple of 128")


#: vLLM 0.26's block-FP8 kernels tried before Triton (VLLM_DISABLED_KERNELS names)
_VLLM_BEFORE_TRITON = frozenset(
    {
        "FlashInferFp8DeepGEMMDynamicBlockScaledKernel",
        "DeepGemmFp8BlockScaledMMKernel",
        "CutlassFp8BlockScaledMMKernel",
        "MarlinFP8ScaledMMLinearKernel",
    }
)


def _vllm(ctx: BackendContext) -> BackendVerdict:
    env = ctx.env
    n, k, cap = ctx.n, ctx.k, ctx.capability

    def v(name: str, triton: bool | None, reason: str, fix: str | None = None) -> BackendVerdict:
        return BackendVerdict("vllm", n, k, name, triton, reason, fix)

    forced = flag_value(ctx.argv, "--linear-backend")
    if forced is not None and forced.lower().replace("-", "_") == "triton":
        return v("Triton", True, "--linear-backend triton: vLLM runs only its Triton kernels")
    disabled = set(env.get("VLLM_DISABLED_KERNELS", "").split(","))
    if disabled >= _VLLM_BEFORE_TRITON:
        return v("Triton", True, "VLLM_DISABLED_KERNELS disables every kernel tried before Triton")
    if cap is None:
        return v(
            "unknown",
            None,
            "GPU compute capability unknown; on sm_90+ vLLM prefers DeepGEMM or CUTLASS",
        )
    if cap < (9, 0):
        return v("Triton", True, f"sm_{cap[0]}{cap[1]}: no CUTLASS/DeepGEMM block-FP8 path")
    if (
        cap[0] in (9, 10)
        and not _env_off(env, "VLLM_USE_DEEP_GEMM")
        and n % 64 == 0
        and k % 128 == 0
    ):
        return v(
            "DeepGEMM",
            False,
            f"sm_{cap[0]}{cap[1]}, VLLM_USE_DEEP_GEMM on (the default in recent vLLM when "
            "deep_gemm is installed)",
            "pass --linear-backend triton (vLLM 0.26+), or set VLLM_USE_DEEP_GEMM=0 (older "
            "vLLM then uses CUTLASS where N and K are multiples of 128)",
        )
    if n % 128 == 0 and k % 128 == 0:
        return v(
            "CUTLASS",
            False,
            f"sm_{cap[0]}{cap[1]}: CUTLASS block-FP8 runs every shape with N, K multiples of 128",
            "pass --linear-backend triton (vLLM 0.26+) so that the tuned files are read",
        )
    return v("Triton", True, "N or K not a multiple of 128: CUTLASS cannot run it")


#: engine → rule; a rule never raises for a known engine. Optional: an engine that reads tuned
#: files (``EngineSpec.fp8_tuning``) without a rule gets an "unknown" verdict (a warning)
BACKEND_RULES: dict[str, Callable[[BackendContext], BackendVerdict]] = {
    "sglang": _sglang,
    "vllm": _vllm,
}


def triton_verdict(engine: str, ctx: BackendContext) -> BackendVerdict:
    """Which backend ``engine`` would run for ``ctx``; raises ``ConfigError`` for an unknown
    engine (naming the known ones)."""
    rule = BACKEND_RULES.get(engine)
    if rule is None:  # an engine that reads tuned files, without a rule here: cannot tell
        tuning_of(engine)
        return BackendVerdict(
            engine, ctx.n, ctx.k, "unknown", None, "inferlab has no backend rule for this engine"
        )
    return rule(ctx)


def summarize(verdicts: Sequence[BackendVerdict]) -> list[str]:
    """One warning per distinct (backend, reason), naming every shape it applies to."""
    groups: dict[tuple[object, ...], list[BackendVerdict]] = {}
    for v in verdicts:
        if v.warning is not None:
            groups.setdefault((v.engine, v.backend, v.uses_triton, v.reason, v.fix), []).append(v)
    out: list[str] = []
    for vs in groups.values():
        first = vs[0]
        shapes = ", ".join(f"N={v.n},K={v.k}" for v in vs)
        if first.uses_triton is False:
            head = (
                f"{first.engine} would run {first.backend}, not the Triton kernel tuned here, "
                f"for {shapes}: those files would never be read"
            )
        else:
            head = f"{first.engine}: cannot tell whether {shapes} run the Triton kernel"
        out.append(f"{head} ({first.reason})" + (f"; {first.fix}" if first.fix else ""))
    return out
