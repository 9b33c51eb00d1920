"""Block-FP8 weights as vLLM and SGLang load them (DeepSeek-V3 style), written with numpy alone.

A linear weight ``W`` (float32, N × K) becomes ``weight`` (``float8_e4m3fn``, N × K) and
``weight_scale_inv`` (float32, ⌈N/128⌉ × ⌈K/128⌉): each 128 × 128 block is divided by its
scale, the block's largest magnitude / 448 (448 is e4m3fn's largest finite value), and rounded
to the nearest e4m3fn value (ties to even). The engine computes with ``weight × scale_inv`` per
block. The checkpoint declares it in ``config.json``::

    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
                            "activation_scheme": "dynamic"}

(vLLM ``model_executor/layers/quantization/fp8.py`` ``Fp8Config.from_config`` and
``Fp8LinearMethod.create_weights``: a block-quantized checkpoint must be FP8-serialized with a
dynamic activation scheme; ``utils/fp8_utils.py`` ``create_fp8_scale_parameter`` gives the
scale's shape.) Embeddings, norms and the LM head stay in bfloat16.

The same tensors can be declared as compressed-tensors (``BLOCK_FORMATS["fp8-block-ct"]``:
the scale named ``weight_scale``, a ``block`` weight strategy and dynamic per-group-of-128
activations, as llm-compressor writes FP8-block checkpoints). SGLang 0.5.17 needs that form
for a Llama: its loader (``srt/models/llama.py`` ``_legacy_load_weights`` and the v2
``_llama_remap``) renames ``weight_scale_inv`` to ``weight_scale``, a name its block-FP8
``Fp8LinearMethod`` does not register, so the scales stay at their fill value and every token
decodes to nothing (seen on an H100, 2026-12-07: "Parameter … weight_scale not found in
params_dict" per projection). Both forms reach the same Triton block-FP8 GEMM and its tuned
configs (``dispatch_w8a8_block_fp8_linear``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from pydantic import JsonValue

__all__ = [
    "BLOCK",
    "BLOCK_FORMATS",
    "COMPRESSED_TENSORS_CONFIG",
    "E4M3_MAX",
    "QUANTIZATION_CONFIG",
    "BlockFormat",
    "decode_e4m3",
    "encode_e4m3",
    "quantize_blocks",
]

BLOCK = 128
E4M3_MAX = 448.0
QUANTIZATION_CONFIG: dict[str, JsonValue] = {
    "quant_method": "fp8",
    "weight_block_size": [BLOCK, BLOCK],
    "activation_scheme": "dynamic",
}
#: compressed-tensors' spelling of the same checkpoint (llm-compressor's FP8_BLOCK scheme)
COMPRESSED_TENSORS_CONFIG: dict[str, JsonValue] = {
    "quant_method": "compressed-tensors",
    "format": "float-quantized",
    "quantization_status": "compressed",
    "ignore": ["lm_head"],
    "kv_cache_scheme": None,
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {
                "num_bits": 8,
                "type": "float",
                "symmetric": True,
                "dynamic": False,
                "strategy": "block",
                "block_structure": [BLOCK, BLOCK],
            },
            "input_activations": {
                "num_bits": 8,
                "type": "float",
                "symmetric": True,
                "dynamic": True,
                "strategy": "group",
                "group_size": BLOCK,
            },
            "output_activations": None,
        }
    },
}


@dataclass(frozen=True)
class BlockFormat:
    """How a block-FP8 checkpoint names its scales and declares itself in ``config.json``."""

    scale_suffix: str  # appended to the weight's name: "weight" + suffix
    quantization_config: dict[str, JsonValue]
    reads: str  # which engines load it


#: ``inferlab model random --quant`` names → the checkpoint's form
BLOCK_FORMATS = {
    "fp8-block": BlockFormat("_scale_inv", QUANTIZATION_CONFIG, "vLLM"),
    "fp8-block-ct": BlockFormat("_scale", COMPRESSED_TENSORS_CONFIG, "SGLang 0.5.17, vLLM"),
}

F32 = npt.NDArray[np.float32]
U8 = npt.NDArray[np.uint8]
_MIN_NORMAL = np.float32(2.0**-6)


def encode_e4m3(x: F32) -> U8:
    """float32 → float8_e4m3fn bit patterns: nearest value, ties to even, saturating at ±448
    (finite inputs). Subnormals (below 2⁻⁶) are multiples of 2⁻⁹; normals keep 3 mantissa
    bits, rounded from float32's 23."""
    a = np.abs(x).astype(np.float32, copy=False)
    sub = np.rint(a * np.float32(512.0)).astype(np.uint32)  # codes 0..8 (8: the least normal)
    u = np.maximum(a, _MIN_NORMAL).view(np.uint32)
    r = (u + np.uint32(0x7FFFF) + ((u >> np.uint32(20)) & np.uint32(1))) & np.uint32(0xFFF00000)
    exp = (r >> np.uint32(23)).astype(np.int64) - 120  # float32 bias 127 → e4m3 bias 7
    normal = (exp << 3) | ((r >> np.uint32(20)) & np.uint32(7)).astype(np.int64)
    code = np.where(a < _MIN_NORMAL, sub.astype(np.int64), np.minimum(normal, 0x7E))
    out: U8 = (code | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)
    return out


def decode_e4m3(code: U8) -> F32:
    """float8_e4m3fn bit patterns → float32 (0x7F / 0xFF, NaN, decode as NaN)."""
    c = code.astype(np.int64)
    exp, man = (c >> 3) & 0xF, (c & 7).astype(np.float32)
    mag = np.where(
        exp == 0,
        man * np.float32(2.0**-9),
        (np.float32(1.0) + man / np.float32(8.0)) * np.exp2(exp - 7).astype(np.float32),
    ).astype(np.float32)
    mag = np.where((c & 0x7F) == 0x7F, np.float32(np.nan), mag)
    out: F32 = np.where(c & 0x80, -mag, mag).astype(np.float32)
    return out


def quantize_blocks(w: F32, block: int = BLOCK) -> tuple[U8, F32]:
    """``w`` (N × K, float32) → (e4m3fn codes N × K, scale_inv ⌈N/block⌉ × ⌈K/block⌉ float32),
    so that ``decode(codes) × scale_inv`` (per block) ≈ ``w`` within 2⁻⁴ relative (normals)."""
    n, k = w.shape
    bn, bk = -(-n // block), -(-k // block)
    padded = np.zeros((bn * block, bk * block), dtype=np.float32)
    padded[:n, :k] = w
    blocks = padded.reshape(bn, block, bk, block)
    amax = np.abs(blocks).max(axis=(1, 3))
    scale = np.where(amax > 0, amax / np.float32(E4M3_MAX), np.float32(1.0)).astype(np.float32)
    scaled = blocks / scale[:, None, :, None]
    codes = encode_e4m3(scaled.reshape(bn * block, bk * block)[:n, :k])
    return np.ascontiguousarray(codes), scale
