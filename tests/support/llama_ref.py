"""Test helper: a pure-numpy Llama forward pass with Hugging Face semantics (float64)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope(x: np.ndarray, pos: np.ndarray, theta: float) -> np.ndarray:
    """x: (heads, seq, hd); HF ``rotate_half`` (non-interleaved) rotary embedding."""
    hd = x.shape[-1]
    inv = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = pos[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, -1)
    sin = np.concatenate([np.sin(ang)] * 2, -1)
    half = hd // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def forward(
    cfg: dict[str, Any], w: dict[str, np.ndarray], ids: list[int], cache: list[list[np.ndarray]]
) -> np.ndarray:
    """Run ``ids`` (the tokens after those already in ``cache``); logits of the last one.

    ``cache`` holds each layer's rotated keys and values, (kv_heads, seq, head_dim), and grows.
    """
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    nq, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    n = len(ids)
    past = cache[0][0].shape[1] if cache else 0
    pos = np.arange(past, past + n, dtype=np.float64)
    x = w["model.embed_tokens.weight"][ids].astype(np.float64)
    mask = np.triu(np.full((n, past + n), -np.inf), past + 1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = _rms(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(n, nq, hd).transpose(1, 0, 2)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(n, nkv, hd).transpose(1, 0, 2)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(n, nkv, hd).transpose(1, 0, 2)
        q, k = _rope(q, pos, theta), _rope(k, pos, theta)
        if len(cache) <= i:
            cache.append([k, v])
        else:
            cache[i] = [np.concatenate([cache[i][0], k], 1), np.concatenate([cache[i][1], v], 1)]
        k, v = (np.repeat(t, nq // nkv, axis=0) for t in cache[i])
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        a = (s / s.sum(-1, keepdims=True)) @ v
        x = x + a.transpose(1, 0, 2).reshape(n, nq * hd) @ w[p + "self_attn.o_proj.weight"].T
        h = _rms(x, w[p + "post_attention_layernorm.weight"], eps)
        g = _silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)
        x = x + g @ w[p + "mlp.down_proj.weight"].T
    x = _rms(x, w["model.norm.weight"], eps)
    return np.asarray(x[-1] @ w["lm_head.weight"].T)


def load(model_dir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The tiny model's config and its weights as written."""
    from safetensors.numpy import load_file

    cfg = json.loads((model_dir / "config.json").read_text())
    return cfg, load_file(str(model_dir / "model.safetensors"))


def load64(model_dir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """As ``load``, the weights in float64 (what ``forward`` computes in)."""
    cfg, w = load(model_dir)
    return cfg, {k: a.astype(np.float64) for k, a in w.items()}


def tokenizer(model_dir: Path) -> Any:
    """The model's own tokenizer (``tokenizers``)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(model_dir / "tokenizer.json"))
