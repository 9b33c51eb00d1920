"""Random-weight Llama models of real sizes (``inferlab model random --preset 1b``).

Big enough that the GPU matters (the 1b preset has the shape of Llama-3.2-1B with a 32k
vocabulary: 1.1 B parameters, 2.2 GB in bfloat16), deterministic from a seed, written without
torch: numpy draws each tensor from its own generator (seed, tensor index), so tensors can be
made on several threads and the file is byte-identical whatever the thread count. Weights are
written as bfloat16 (round to nearest even) or float32 into one ``model.safetensors``
(``inferlab.models.safetensors``), streamed tensor by tensor. ``quant = "fp8-block"`` writes
the attention and MLP projections as 128 × 128 block FP8 with their ``weight_scale_inv``
(``inferlab.models.fp8``), as vLLM and SGLang load DeepSeek-style checkpoints: the same float32
draws as the bfloat16 twin of that seed, so the two differ by the quantization alone.

The construction of ``inferlab.models.tiny`` keeps the model from ever emitting a special or
non-printable token (residual channel 0 is a constant that only forbidden LM-head rows read,
with weight ``-forbid_scale``), so every request runs to exactly ``max_tokens``. The tokenizer
is the tiny model's (about 1 000 tokens); the embedding and LM head are padded to the preset's
vocabulary, and the padding ids are forbidden too. Zeros, ones and the anchor are exact in
bfloat16, so the construction holds in that dtype.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from inferlab.errors import ConfigError
from inferlab.models.fp8 import BLOCK_FORMATS, quantize_blocks
from inferlab.models.safetensors import TensorEntry, write_safetensors
from inferlab.models.tokenizer import (
    Construction,
    check_heads,
    llama_shape,
    train_tokenizer,
    write_hf_files,
)

__all__ = ["DTYPES", "PRESETS", "QUANTS", "RandomModelInfo", "RandomSpec", "write_random_model"]

F32 = npt.NDArray[np.float32]
T = TypeVar("T")

#: weight dtypes inferlab can write (torch names) → safetensors dtype
DTYPES = {"bfloat16": "BF16", "float32": "F32"}
#: quantized checkpoints: the attention and MLP projections in 128 × 128 block FP8
#: (``inferlab.models.fp8``, in either of its ``BLOCK_FORMATS``), the rest in bfloat16; "none"
#: is the unquantized twin
QUANTS = ("none", *BLOCK_FORMATS)
#: the tensors a quantized checkpoint stores in FP8
_LINEAR = ("_proj.weight",)


@dataclass(frozen=True)
class RandomSpec(Construction):
    """Shape and construction constants of a random model (see the module docstring)."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int
    max_position_embeddings: int = 4096
    tokenizer_vocab: int = 1024

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def num_parameters(self) -> int:
        d, inter, hd = self.hidden_size, self.intermediate_size, self.head_dim
        attn = d * hd * (2 * self.num_attention_heads + 2 * self.num_key_value_heads)
        layer = attn + 3 * d * inter + 2 * d
        return self.num_hidden_layers * layer + 2 * self.vocab_size * d + d

    def validate(self) -> None:
        check_heads(self)
        if self.vocab_size < self.tokenizer_vocab:
            raise ConfigError("vocab_size must be at least the tokenizer's vocabulary")
        if min(self.num_hidden_layers, self.intermediate_size) < 1:
            raise ConfigError("layers and intermediate_size must be > 0")


#: named shapes: "test" for CPU tests, the others after public models of that size
PRESETS: dict[str, RandomSpec] = {
    "test": RandomSpec(256, 512, 2, 8, 2, 2048, max_position_embeddings=2048),
    # Qwen2.5-0.5B's shape (24 layers, 896 wide, GQA 14/2), 32k vocabulary: 0.42 B
    "0.5b": RandomSpec(896, 4864, 24, 14, 2, 32768),
    # Llama-3.2-1B's shape (16 layers, 2048 wide, GQA 32/8), 32k vocabulary: 1.1 B
    "1b": RandomSpec(2048, 8192, 16, 32, 8, 32768),
    # Llama-3.2-3B's shape (28 layers, 3072 wide, GQA 24/8), 32k vocabulary: 3.0 B
    "3b": RandomSpec(3072, 8192, 28, 24, 8, 32768),
}


@dataclass(frozen=True)
class RandomModelInfo:
    """What ``write_random_model`` wrote (``seconds``: wall time of the whole write)."""

    path: Path
    preset: str
    seed: int
    dtype: str
    quant: str
    num_parameters: int
    size_bytes: int
    seconds: float
    files: tuple[str, ...]


def _tensors(spec: RandomSpec) -> list[tuple[str, tuple[int, ...]]]:
    d, inter, hd, v = spec.hidden_size, spec.intermediate_size, spec.head_dim, spec.vocab_size
    nq, nkv = spec.num_attention_heads, spec.num_key_value_heads
    out: list[tuple[str, tuple[int, ...]]] = [("model.embed_tokens.weight", (v, d))]
    for i in range(spec.num_hidden_layers):
        p = f"model.layers.{i}."
        out += [
            (p + "self_attn.q_proj.weight", (nq * hd, d)),
            (p + "self_attn.k_proj.weight", (nkv * hd, d)),
            (p + "self_attn.v_proj.weight", (nkv * hd, d)),
            (p + "self_attn.o_proj.weight", (d, nq * hd)),
            (p + "mlp.gate_proj.weight", (inter, d)),
            (p + "mlp.up_proj.weight", (inter, d)),
            (p + "mlp.down_proj.weight", (d, inter)),
            (p + "input_layernorm.weight", (d,)),
            (p + "post_attention_layernorm.weight", (d,)),
        ]
    return [*out, ("model.norm.weight", (d,)), ("lm_head.weight", (v, d))]


def _maker(
    spec: RandomSpec, forbidden: npt.NDArray[np.int64], seed: int
) -> Callable[[int, str, tuple[int, ...]], F32]:
    """A function (index, name, shape) → the float32 tensor of that name."""
    d, inter = spec.hidden_size, spec.intermediate_size
    attn_out = spec.num_attention_heads * spec.head_dim

    def normal(i: int, shape: tuple[int, ...], std: float) -> F32:
        a = np.random.default_rng([seed, i]).standard_normal(shape, dtype=np.float32)
        a *= np.float32(std)
        return a

    def make(i: int, name: str, shape: tuple[int, ...]) -> F32:
        if name.endswith("norm.weight"):
            return np.ones(shape, dtype=np.float32)
        if name == "model.embed_tokens.weight":
            a = normal(i, shape, 0.5)
            a[:, 0] = spec.anchor
        elif name == "lm_head.weight":
            a = normal(i, shape, spec.logit_scale * d**-0.5)
            a[:, 0] = 0.0
            a[forbidden, :] = 0.0
            a[forbidden, 0] = -spec.forbid_scale
        elif name.endswith("o_proj.weight"):
            a = normal(i, shape, 0.5 * attn_out**-0.5)
            a[0, :] = 0.0  # nothing writes residual channel 0
        elif name.endswith("down_proj.weight"):
            a = normal(i, shape, 0.5 * inter**-0.5)
            a[0, :] = 0.0
        else:  # q, k, v, gate, up
            a = normal(i, shape, d**-0.5)
        return a

    return make


def _ordered(fn: Callable[[int], T], n: int, workers: int | None) -> Iterator[T]:
    """``fn(0) … fn(n-1)`` in order, computed on threads, at most 2 × workers ahead (memory)."""
    k = workers or min(16, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=k) as pool:
        pending: deque[Future[T]] = deque()
        for i in range(n):
            pending.append(pool.submit(fn, i))
            if len(pending) >= 2 * k:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def bf16_bytes(a: F32) -> bytes:
    """float32 → bfloat16 (round to nearest even; finite inputs), little-endian bytes."""
    u = a.reshape(-1).view(np.uint32)
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return bytes(rounded.astype("<u2").tobytes())


def _checked(out: Path, preset: str, dtype: str, quant: str, spec: RandomSpec | None) -> RandomSpec:
    """The spec to write (``ConfigError`` naming the option for bad input)."""
    if spec is None:
        if preset not in PRESETS:
            raise ConfigError(f"--preset: unknown {preset!r}; expected one of {', '.join(PRESETS)}")
        spec = PRESETS[preset]
    if dtype not in DTYPES:
        raise ConfigError(f"--dtype: unknown {dtype!r}; expected one of {', '.join(DTYPES)}")
    if quant not in QUANTS:
        raise ConfigError(f"--quant: unknown {quant!r}; expected one of {', '.join(QUANTS)}")
    if quant != "none" and dtype != "bfloat16":
        raise ConfigError(f"--quant {quant} keeps the other tensors in bfloat16: drop --dtype")
    spec.validate()
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} exists and is not a directory")
    return spec


def _entries(
    names: list[tuple[str, tuple[int, ...]]], st: str, quant: str
) -> list[list[TensorEntry]]:
    """Per base tensor, what the file holds: the tensor, or FP8 codes and their block scales."""
    out: list[list[TensorEntry]] = []
    for n, shape in names:
        fmt = BLOCK_FORMATS.get(quant)
        if fmt is not None and n.endswith(_LINEAR):
            blocks = tuple(-(-d // 128) for d in shape)
            scale = TensorEntry(n + fmt.scale_suffix, "F32", blocks)
            out.append([TensorEntry(n, "F8_E4M3", shape), scale])
        else:
            out.append([TensorEntry(n, st, shape)])
    return out


def write_random_model(
    out: Path,
    preset: str = "1b",
    *,
    seed: int = 0,
    dtype: str = "bfloat16",
    quant: str = "none",
    spec: RandomSpec | None = None,
    workers: int | None = None,
) -> RandomModelInfo:
    """Write the ``preset`` model (or ``spec``) into ``out`` (created; files overwritten).

    ``quant = "fp8-block"`` stores the projections as block FP8 (``inferlab.models.fp8``):
    the same float32 draws as the unquantized twin of that seed, quantized."""
    import time

    t0 = time.monotonic()
    out = Path(out)
    spec = _checked(out, preset, dtype, quant, spec)
    out.mkdir(parents=True, exist_ok=True)
    tt = train_tokenizer(spec.tokenizer_vocab)
    forbidden = np.array(sorted({*tt.forbidden, *range(tt.vocab_size, spec.vocab_size)}))
    make = _maker(spec, forbidden, seed)
    names = _tensors(spec)
    st = DTYPES[dtype]
    groups = _entries(names, st, quant)

    def encode(i: int) -> list[bytes]:
        a = make(i, *names[i])
        if len(groups[i]) == 2:
            codes, scale = quantize_blocks(a)
            return [codes.tobytes(), scale.astype("<f4").tobytes()]
        return [bf16_bytes(a) if st == "BF16" else bytes(a.astype("<f4").tobytes())]

    def chunks() -> Iterator[bytes]:
        for parts in _ordered(encode, len(names), workers):
            yield from parts

    entries = [e for g in groups for e in g]
    size = write_safetensors(out / "model.safetensors", entries, chunks())
    shape = llama_shape(spec, spec.vocab_size, dtype)
    meta = {
        "generator": "inferlab.models.random",
        "preset": preset,
        "seed": seed,
        **({"quant": quant} if quant != "none" else {}),
        "spec": asdict(spec),
        "tokenizer_vocab_size": tt.vocab_size,
    }
    fmt = BLOCK_FORMATS.get(quant)
    extra = {"quantization_config": fmt.quantization_config} if fmt is not None else {}
    files = tuple(sorted((*write_hf_files(out, tt, shape, meta, extra), "model.safetensors")))
    return RandomModelInfo(
        out, preset, seed, dtype, quant, spec.num_parameters, size, time.monotonic() - t0, files
    )
