"""Block-FP8 checkpoints (``inferlab model random --quant fp8-block``): the e4m3fn rounding
against an independent nearest-value search, and the files against what vLLM 0.26's loader
reads (``Fp8Config.from_config``, ``Fp8LinearMethod.create_weights``: ``weight`` float8_e4m3fn
N × K, ``weight_scale_inv`` float32 ⌈N/128⌉ × ⌈K/128⌉, a dynamic activation scheme)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inferlab.errors import ConfigError
from inferlab.models import write_random_model
from inferlab.models.fp8 import decode_e4m3, encode_e4m3, quantize_blocks
from inferlab.models.random import PRESETS, bf16_bytes
from inferlab.models.safetensors import read_header

#: every finite non-negative e4m3fn value, by code (0x00..0x7E), built from the format's
#: definition (bias 7; exponent 0: subnormal m/8 · 2^-6), not from the encoder
_VALUES = np.array(
    [
        (m / 8) * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
        for e in range(16)
        for m in range(8)
    ][:0x7F]
)


def _nearest(x: np.ndarray) -> np.ndarray:
    """The reference: the nearest code by search, ties to the even code, saturating."""
    a = np.minimum(np.abs(x.astype(np.float64)), 448.0)
    hi = np.clip(np.searchsorted(_VALUES, a), 1, len(_VALUES) - 1)
    lo = hi - 1
    d_lo, d_hi = a - _VALUES[lo], _VALUES[hi] - a
    pick = np.where(d_lo < d_hi, lo, np.where(d_hi < d_lo, hi, np.where(lo % 2 == 0, lo, hi)))
    return (pick | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def test_encode_matches_the_nearest_value_with_ties_to_even() -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            rng.standard_normal(200_000).astype(np.float32) * 50,
            rng.uniform(-(2**-5), 2**-5, 50_000).astype(np.float32),  # subnormals and the edge
            (_VALUES[:-1] + _VALUES[1:]).astype(np.float32) / 2,  # exact midpoints (ties)
            _VALUES.astype(np.float32),
            -_VALUES.astype(np.float32),
            np.array([447.9, 448.0, 460.0, 479.9, 1e6, -1e6, 0.0, -0.0], dtype=np.float32),
        ]
    )
    got, want = encode_e4m3(x), _nearest(x)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (
        f"{bad.size} mismatches, e.g. x={x[bad[:3]]} got={got[bad[:3]]} want={want[bad[:3]]}"
    )
    assert not np.isnan(decode_e4m3(got)).any()  # saturates: never the NaN code


def test_decode_inverts_encode_on_every_code() -> None:
    codes = np.array([c for c in range(256) if c & 0x7F != 0x7F], dtype=np.uint8)
    assert (encode_e4m3(decode_e4m3(codes)) == codes).all() or np.array_equal(
        encode_e4m3(decode_e4m3(codes))[codes != 0x80], codes[codes != 0x80]
    )  # -0 may come back as +0
    assert np.isnan(decode_e4m3(np.array([0x7F, 0xFF], dtype=np.uint8))).all()


def test_block_scales_are_the_block_amax_over_448_and_round_trip_within_a_sixteenth() -> None:
    rng = np.random.default_rng(3)
    w = rng.standard_normal((300, 260)).astype(np.float32)  # not multiples of 128: ragged blocks
    w[:128, :128] *= 100  # one block far larger than the others
    codes, scale = quantize_blocks(w)
    assert codes.shape == w.shape and codes.dtype == np.uint8
    assert scale.shape == (3, 3) and scale.dtype == np.float32
    assert scale[0, 0] == pytest.approx(np.abs(w[:128, :128]).max() / 448, rel=1e-6)
    assert scale[2, 2] == pytest.approx(np.abs(w[256:, 256:]).max() / 448, rel=1e-6)
    back = decode_e4m3(codes) * np.repeat(np.repeat(scale, 128, 0), 128, 1)[:300, :260]
    big = np.abs(w) > 2**-6 * np.repeat(np.repeat(scale, 128, 0), 128, 1)[:300, :260]
    assert np.all(np.abs(back - w)[big] <= np.abs(w)[big] / 16 + 1e-12)
    assert np.abs(decode_e4m3(codes)).max() == 448.0  # each block's largest maps to 448


def _tensor(path: Path, name: str) -> tuple[dict[str, object], bytes]:
    head, base = read_header(path)
    entry = head[name]
    lo, hi = entry["data_offsets"]  # type: ignore[misc]
    with path.open("rb") as f:
        f.seek(base + lo)
        return entry, f.read(hi - lo)


def test_fp8_block_checkpoint_has_what_vllm_loads(tmp_path: Path) -> None:
    spec = PRESETS["test"]
    q = write_random_model(tmp_path / "fp8", "test", seed=5, quant="fp8-block", workers=2)
    twin = write_random_model(tmp_path / "bf16", "test", seed=5, workers=1)
    cfg = json.loads((q.path / "config.json").read_text())
    assert cfg["quantization_config"] == {
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
        "activation_scheme": "dynamic",
    }
    assert cfg["torch_dtype"] == "bfloat16" and cfg["inferlab"]["quant"] == "fp8-block"
    assert "quantization_config" not in json.loads((twin.path / "config.json").read_text())
    head, _ = read_header(q.path / "model.safetensors")
    fp8 = [n for n, e in head.items() if e["dtype"] == "F8_E4M3"]
    assert len(fp8) == 7 * spec.num_hidden_layers  # q k v o gate up down, every layer
    for name in fp8:
        n, k = head[name]["shape"]  # type: ignore[misc]
        assert name.endswith("_proj.weight")
        scale = head[name + "_scale_inv"]
        assert scale["dtype"] == "F32" and scale["shape"] == [-(-n // 128), -(-k // 128)]
    for name in ("model.embed_tokens.weight", "lm_head.weight", "model.norm.weight"):
        assert head[name]["dtype"] == "BF16"
    # the same draws as the bf16 twin: dequantized FP8 within e4m3's rounding of the twin
    name = "model.layers.1.mlp.down_proj.weight"
    entry, raw = _tensor(q.path / "model.safetensors", name)
    codes = np.frombuffer(raw, np.uint8).reshape(entry["shape"])  # type: ignore[call-overload]
    _, sraw = _tensor(q.path / "model.safetensors", name + "_scale_inv")
    scale = np.frombuffer(sraw, "<f4").reshape(-(-codes.shape[0] // 128), -(-codes.shape[1] // 128))
    deq = (
        decode_e4m3(codes)
        * np.repeat(np.repeat(scale, 128, 0), 128, 1)[: codes.shape[0], : codes.shape[1]]
    )
    _, braw = _tensor(twin.path / "model.safetensors", name)
    ref = (np.frombuffer(braw, "<u2").astype(np.uint32) << 16).view(np.float32).reshape(codes.shape)
    assert bf16_bytes(ref) == braw
    rel = np.linalg.norm(deq - ref) / np.linalg.norm(ref)
    assert 1e-3 < rel < 0.05, rel  # quantized (not a copy), and close: e4m3 keeps 3 mantissa bits
    assert (codes[0] == 0).all()  # down_proj row 0 stays exactly zero: the construction holds


def test_fp8_block_is_refused_with_another_dtype(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--quant fp8-block keeps the other tensors"):
        write_random_model(tmp_path / "m", "test", dtype="float32", quant="fp8-block")
    with pytest.raises(ConfigError, match="--quant: unknown 'int4'"):
        write_random_model(tmp_path / "m", "test", quant="int4")


def test_fp8_block_write_is_deterministic_whatever_the_threads(tmp_path: Path) -> None:
    a = write_random_model(tmp_path / "a", "test", seed=1, quant="fp8-block", workers=1)
    b = write_random_model(tmp_path / "b", "test", seed=1, quant="fp8-block", workers=3)
    assert (a.path / "model.safetensors").read_bytes() == (
        b.path / "model.safetensors"
    ).read_bytes()


def test_fp8_block_ct_is_the_same_tensors_as_compressed_tensors(tmp_path: Path) -> None:
    """SGLang 0.5.17's Llama loader renames ``weight_scale_inv`` to ``weight_scale``, which its
    block-FP8 method never registers (every token decoded to '' on an H100, 2026-12-07): the
    compressed-tensors form names the scale ``weight_scale`` and keeps every byte."""
    hf = write_random_model(tmp_path / "hf", "test", seed=5, quant="fp8-block", workers=1)
    ct = write_random_model(tmp_path / "ct", "test", seed=5, quant="fp8-block-ct", workers=1)
    qc = json.loads((ct.path / "config.json").read_text())["quantization_config"]
    assert qc["quant_method"] == "compressed-tensors" and qc["format"] == "float-quantized"
    group = qc["config_groups"]["group_0"]
    assert group["weights"]["strategy"] == "block"
    assert group["weights"]["block_structure"] == [128, 128]
    assert group["input_activations"]["dynamic"] is True
    assert group["input_activations"]["group_size"] == 128 and qc["ignore"] == ["lm_head"]
    head, _ = read_header(ct.path / "model.safetensors")
    assert not [n for n in head if n.endswith("_scale_inv")]
    name = "model.layers.1.self_attn.q_proj.weight"
    assert (
        _tensor(ct.path / "model.safetensors", name + "_scale")[1]
        == (_tensor(hf.path / "model.safetensors", name + "_scale_inv")[1])
    )
    assert (
        _tensor(ct.path / "model.safetensors", name)[1]
        == (_tensor(hf.path / "model.safetensors", name)[1])
    )
