"""One W8A8 block-FP8 GEMM kernel configuration, in the engines' vocabulary.

The fields are the meta-parameters SGLang's and vLLM's ``_w8a8_block_fp8_matmul`` JSON files set
(``BLOCK_SIZE_M/N/K``, ``GROUP_SIZE_M``, ``num_warps``, ``num_stages``), so a config found here
means the same thing in the engine. ``split_k`` > 1 is inferlab's own extension: the engines'
kernel cannot run it, so such configs are reported, never written into an engine's file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from inferlab.engines import Fp8Tuning, specs
from inferlab.errors import lookup

__all__ = [
    "DEFAULT_SGLANG",
    "DEFAULT_VLLM",
    "ENGINE_FIELDS",
    "ENGINE_KEYS",
    "KernelConfig",
    "engine_default",
    "spec_class",
    "tune_engines",
    "tuning_of",
]

#: each key of one entry of an engine's config file and the ``KernelConfig`` field it sets, in
#: the order the engines write them
ENGINE_FIELDS = {
    "BLOCK_SIZE_M": "block_m",
    "BLOCK_SIZE_N": "block_n",
    "BLOCK_SIZE_K": "block_k",
    "GROUP_SIZE_M": "group_m",
    "num_warps": "num_warps",
    "num_stages": "num_stages",
}
#: the keys of one entry of an engine's config file, in the order the engines write them
ENGINE_KEYS = tuple(ENGINE_FIELDS)


@dataclass(frozen=True, order=True)
class KernelConfig:
    """Tile sizes (elements), L2 grouping (tiles), warps per CTA, pipeline stages, K splits."""

    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int
    split_k: int = 1

    @property
    def engine_usable(self) -> bool:
        """Whether the engines' kernel can run this config (it has no split-K)."""
        return self.split_k == 1

    @property
    def key(self) -> str:
        """Short name, e.g. ``BM64_BN128_G32_w4_s3`` (``_k4`` appended for split-K 4)."""
        s = (
            f"BM{self.block_m}_BN{self.block_n}_G{self.group_m}"
            f"_w{self.num_warps}_s{self.num_stages}"
        )
        return s + (f"_k{self.split_k}" if self.split_k > 1 else "")

    def to_engine(self) -> dict[str, int]:
        """The engines' JSON entry (``split_k`` is not representable there)."""
        return {key: getattr(self, name) for key, name in ENGINE_FIELDS.items()}

    @classmethod
    def from_engine(cls, entry: Mapping[str, object]) -> KernelConfig:
        """Parse one engine JSON entry; raises ``KeyError``/``ValueError`` on a bad one."""
        vals = [entry[k] for k in ENGINE_KEYS]
        ints = [int(v) for v in vals if isinstance(v, (int, str)) and not isinstance(v, bool)]
        if len(ints) != len(ENGINE_KEYS):
            raise ValueError(f"config entry needs integer {', '.join(ENGINE_KEYS)}: {dict(entry)}")
        return cls(*ints)


def tune_engines() -> dict[str, Fp8Tuning]:
    """Engine → how it names its block-FP8 GEMM files, for every registered engine that reads
    them (``EngineSpec.fp8_tuning``), in registry order."""
    return {s.name: s.fp8_tuning for s in specs() if s.fp8_tuning is not None}


def tuning_of(engine: str, what: str = "--engine") -> Fp8Tuning:
    """``engine``'s ``Fp8Tuning``; a ``ConfigError`` naming ``what`` and the known engines."""
    return lookup(tune_engines(), engine, what + ": unknown engine {name} (known: {known})")


def engine_default(engine: str) -> KernelConfig:
    """What ``engine`` runs when no tuned file exists (its ``EngineSpec.fp8_tuning.default``);
    ``ConfigError`` when it reads no tuned block-FP8 GEMM files."""
    return KernelConfig(*tuning_of(engine).default)


#: the runners' default (SGLang's, num_stages 3) and vLLM's (num_stages 2)
DEFAULT_SGLANG = engine_default("sglang")
DEFAULT_VLLM = engine_default("vllm")


def spec_class(n: int, k: int) -> tuple[bool, ...]:
    """What Triton specializes on in (N, K): divisibility by 16 and equality to 1 of every int
    argument that is specialized. Shapes with the same class share compiled binaries."""
    return (n % 16 == 0, n == 1, k % 16 == 0, k == 1)
