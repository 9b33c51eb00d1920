"""What the SIMULATED engine's GPU does in a step: each preset's kernels, as shares of its timing
model, for the traces ``/start_profile`` writes (:mod:`inferlab.sim.profiler`).

The step model (:mod:`inferlab.sim.model`) has five components: ``fixed`` (per step),
``per_seq`` (per sequence up to saturation; with speculative decoding, per verified token up to
``verify_sat_tokens``), ``over`` (per sequence, or token, beyond), ``prefill`` (per prompt token
joining) and ``draft`` (the speculative draft head). A :class:`KernelSpec` takes a fraction of
each; what no kernel takes is GPU idle time (``ProfileMix.idle``: the host between launches).
Per component the fractions sum to 1, so a synthesized step lasts exactly what the model says.

A lever's saving comes out of the kernels tagged with it (``--tuned-fp8``: the FP8 block GEMM;
``NCCL_PROTO=LL``: the all-reduce), which is why a lever can never buy more than its kernels'
share of the step (Amdahl): :func:`check_mix` proves every preset's mix can pay its savings.

``dsv4-flash-8gpu`` tells the seed campaign's two profiles, as a function of the batch ``b``
(a kernel with ``grid_per_seq`` launches ``grid[0] × b`` blocks):

* batch 1 (C=1): 63% of the 94 ms step in one sparse-attention kernel launching 64 blocks
  (1 sequence × 64 heads) on 170 SMs, 5.8% FP8 block GEMM, 2.0% NCCL, 14% MoE. The FP8 GEMM
  and the all-reduce are fixed costs (weights read once per step; latency-bound messages), so
  config A's 6 ms (4.5 + 1.5, 6.4% of TPOT) fits in their 7.8%: Amdahl's bound, nearly bought;
* under C=16 load: the MoE slot GEMV 39% and the attention 38% of the 690 ms step (its grid is
  now 1024 blocks: no longer under-occupied); FP8 GEMM and NCCL 1.1%, so A buys 0.9% there.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

from inferlab.errors import ConfigError

__all__ = ["COMPONENTS", "MIXES", "KernelSpec", "ProfileMix", "check_mix", "get_mix"]

COMPONENTS = ("fixed", "per_seq", "over", "prefill", "draft")


class KernelSpec(BaseModel):
    """One kernel: its name as the profiler shows it, its grid, its share of each component."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    grid: tuple[int, int, int]
    #: grid x is the batch size (one block per sequence: norms, sampling)
    grid_per_seq: bool = False
    #: launched once per layer (else once per step)
    per_layer: bool = True
    shares: dict[str, float]
    #: the lever whose saving comes out of this kernel's fixed part
    lever: str | None = None

    @model_validator(mode="after")
    def _known(self) -> KernelSpec:
        bad = set(self.shares) - set(COMPONENTS)
        if bad:
            raise ValueError(f"{self.name}: unknown components {sorted(bad)}")
        return self


class ProfileMix(BaseModel):
    """The kernels of one preset and the GPU it runs on (SIMULATED)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    device: str
    sm_count: int = Field(ge=1)
    layers: int = Field(ge=1)
    kernels: tuple[KernelSpec, ...]
    idle: dict[str, float]
    #: NCCL's kernel name carries the protocol; ``{proto}`` is replaced (SIMPLE or LL)
    nccl_proto_default: str = "SIMPLE"

    @model_validator(mode="after")
    def _sums(self) -> ProfileMix:
        for c in COMPONENTS:
            total = sum(k.shares.get(c, 0.0) for k in self.kernels) + self.idle.get(c, 0.0)
            if abs(total - 1.0) > 1e-9:
                raise ValueError(f"component {c}: kernel shares + idle sum to {total}, not 1")
        return self


def _k(name: str, grid: tuple[int, int, int], *ordered: float, **kw: object) -> KernelSpec:
    """A kernel whose shares come in :data:`COMPONENTS` order, by name, or both (0 where none
    is given); the other keywords are :class:`KernelSpec` fields."""
    if len(ordered) > len(COMPONENTS):
        raise ValueError(f"{name}: {len(ordered)} shares for {len(COMPONENTS)} components")
    shares: dict[str, object] = dict.fromkeys(COMPONENTS, 0.0)
    shares.update(zip(COMPONENTS, ordered))
    shares.update((c, kw.pop(c)) for c in COMPONENTS if c in kw)
    return KernelSpec.model_validate({"name": name, "grid": grid, "shares": shares, **kw})


_NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_{proto}(ncclDevKernelArgsStorage<4096ul>)"
_FP8 = "_w8a8_block_fp8_matmul"

_DSV4 = ProfileMix(
    device="SIMULATED Blackwell GPU (inferlab sim, dsv4-flash-8gpu: 170 SMs, the seed's ~170)",
    sm_count=170,
    layers=61,
    kernels=(
        # one block per (sequence, head): 64 blocks at batch 1, under-occupied up to batch 2;
        # its large fixed part is that latency-bound launch (a second sequence costs little)
        _k(
            "void nsa_sparse_decode_kernel<128, 64, __nv_bfloat16>(NsaDecodeParams)",
            (64, 1, 1),
            fixed=0.76,
            per_seq=0.40,
            over=0.30,
            grid_per_seq=True,
        ),
        _k(
            "void nsa_sparse_prefill_kernel<128, 64, __nv_bfloat16>(NsaPrefillParams)",
            (256, 16, 1),
            prefill=0.20,
        ),
        # decode GEMMs read their weights once per step, and decode's small all-reduces are
        # latency-bound: a fixed cost, whatever the batch (so a smaller share as it grows)
        _k(_FP8, (340, 1, 1), fixed=0.091, prefill=0.30, lever="tuned_fp8"),
        _k(_NCCL, (16, 1, 1), fixed=0.032, prefill=0.05, lever="nccl_ll"),
        # the experts' slot GEMV on CUDA cores: more sequences route to more experts
        _k(
            "void moe_slot_gemv_kernel<__nv_bfloat16, 8>(MoeSlotGemvParams)",
            (512, 1, 1),
            0.05,
            0.30,
            0.515,
            0.30,
        ),
        _k("nvjet_sm100_tst_128x64_64x6_2x1_v_bz_TNT", (340, 1, 1), 0.02, 0.10, 0.05, 0.05),
        _k(
            "void fused_add_rmsnorm_kernel<__nv_bfloat16>(RMSNormParams)",
            (1, 1, 1),
            0.01,
            0.04,
            0.025,
            0.03,
            grid_per_seq=True,
        ),
        _k("act_and_mul_kernel<silu, __nv_bfloat16>", (680, 1, 1), 0.005, 0.05, 0.03, 0.02),
        _k(
            "argmax_kernel<__nv_bfloat16>",
            (1, 1, 1),
            0.005,
            0.013,
            0.011,
            draft=0.10,
            grid_per_seq=True,
            per_layer=False,
        ),
        _k(
            "void at::native::elementwise_kernel<128, 4>(direct_copy_kernel_cuda)",
            (680, 1, 1),
            0.007,
            0.063,
            0.042,
            0.02,
        ),
        _k(
            "mtp_draft_attention_kernel<__nv_bfloat16>",
            (64, 1, 1),
            draft=0.35,
            grid_per_seq=True,
            per_layer=False,
        ),
        _k("mtp_draft_gemm_kernel<__nv_bfloat16>", (340, 1, 1), draft=0.40, per_layer=False),
    ),
    idle={"fixed": 0.02, "per_seq": 0.034, "over": 0.027, "prefill": 0.03, "draft": 0.15},
)

_GENERIC = ProfileMix(
    device="SIMULATED H100-class GPU (inferlab sim, generic: 132 SMs)",
    sm_count=132,
    layers=16,
    kernels=(
        _k(
            "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64>>(Flash_fwd_params)",
            (128, 1, 1),
            fixed=0.15,
            per_seq=0.50,
            over=0.50,
            prefill=0.20,
        ),
        _k("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", (264, 1, 1), 0.35, 0.25, 0.25, 0.50, 0.50),
        _k(_FP8, (264, 1, 1), 0.15, 0.10, 0.10, 0.20, lever="tuned_fp8"),
        _k("rms_norm_kernel<c10::BFloat16>", (1, 1, 1), 0.08, 0.04, 0.04, grid_per_seq=True),
        _k("act_and_mul_kernel<silu, c10::BFloat16>", (528, 1, 1), 0.06, 0.04, 0.04, 0.05),
        _k(
            "argmax_kernel<c10::BFloat16>",
            (1, 1, 1),
            0.05,
            grid_per_seq=True,
            per_layer=False,
        ),
        _k(
            "void at::native::elementwise_kernel<128, 4>(direct_copy_kernel_cuda)",
            (528, 1, 1),
            0.06,
            0.04,
            0.04,
        ),
        _k("draft_attention_kernel<c10::BFloat16>", (64, 1, 1), draft=0.30, per_layer=False),
    ),
    idle={"fixed": 0.10, "per_seq": 0.03, "over": 0.03, "prefill": 0.05, "draft": 0.20},
)

#: preset name → its kernel mix
MIXES: dict[str, ProfileMix] = {"dsv4-flash-8gpu": _DSV4, "generic": _GENERIC}


def get_mix(preset: str) -> ProfileMix:
    try:
        return MIXES[preset]
    except KeyError:
        raise ConfigError(f"--preset {preset!r}: no kernel mix to synthesize traces from") from None


def check_mix(mix: ProfileMix, savings: Mapping[str, float], fixed_ms: float) -> None:
    """Each lever's saving (ms per step) fits in the fixed part of the kernels it shortens."""
    for lever, saving in savings.items():
        have = sum(k.shares["fixed"] for k in mix.kernels if k.lever == lever) * fixed_ms
        if saving > have + 1e-9:
            raise ConfigError(
                f"kernel mix: lever {lever} saves {saving} ms per step but its kernels take "
                f"{have:.3f} ms of the fixed part"
            )
