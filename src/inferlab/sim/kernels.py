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
The mixes themselves are data: ``kernel_mixes.toml`` beside this module.

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
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from inferlab.config.tomlcompat import tomllib
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

    @field_validator("shares")
    @classmethod
    def _known(cls, v: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        """Only known components; one not given is 0."""
        bad = set(v) - set(COMPONENTS)
        if bad:
            raise ValueError(f"{info.data.get('name')}: unknown components {sorted(bad)}")
        return dict.fromkeys(COMPONENTS, 0.0) | v


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


def _load_mixes() -> dict[str, ProfileMix]:
    """Every preset's kernel mix, from the package's ``kernel_mixes.toml``."""
    text = resources.files("inferlab.sim").joinpath("kernel_mixes.toml").read_text("utf-8")
    return {name: ProfileMix.model_validate(m) for name, m in tomllib.loads(text).items()}


#: preset name → its kernel mix
MIXES: dict[str, ProfileMix] = _load_mixes()


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
