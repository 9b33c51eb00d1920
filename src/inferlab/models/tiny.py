"""A deterministic random-weight Llama model + byte-level BPE tokenizer, in Hugging Face format.

``write_tiny_model(out, seed)`` writes everything a real engine (vLLM's CPU build, transformers)
needs to serve a model without downloading anything: ``config.json`` (``LlamaForCausalLM``),
``model.safetensors`` (float32, written with numpy), ``generation_config.json``, and a tokenizer
trained here on a fixed corpus (``tokenizer.json``, ``tokenizer_config.json`` with a chat
template, ``special_tokens_map.json``; see ``inferlab.models.tokenizer``). The same seed gives
byte-identical files.

The weights are random but built so that the model never emits an end-of-sequence, special or
non-printable token, whatever the prompt, so every request runs to exactly ``max_tokens``:

* residual channel 0 holds the constant ``anchor`` in every token embedding, and the rows of
  ``o_proj`` and ``down_proj`` that write to channel 0 are zero, so channel 0 of the residual
  stream equals ``anchor`` at every layer and position;
* after the final RMSNorm (weight 1) channel 0 is therefore ``anchor / rms(x) > 0``;
* the LM-head row of every forbidden token is ``-forbid_scale`` in channel 0 and zero elsewhere
  (logit around -1000), while the rows of allowed tokens are zero in channel 0.

Forbidden tokens are the special tokens and every token that does not decode, on its own, to
non-empty printable text (control bytes, bytes >= 0x80 that are fragments of UTF-8), so greedy
and sampled output both decode to printable ASCII.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from inferlab.errors import ConfigError
from inferlab.models.tokenizer import (
    BOS_TOKEN,
    CHAT_TEMPLATE,
    EOS_TOKEN,
    UNK_TOKEN,
    Construction,
    check_heads,
    llama_shape,
    tiny_corpus,
    train_tokenizer,
    write_hf_files,
)

__all__ = [
    "BOS_TOKEN",
    "CHAT_TEMPLATE",
    "EOS_TOKEN",
    "UNK_TOKEN",
    "TinyModelInfo",
    "TinySpec",
    "tiny_corpus",
    "write_tiny_model",
]

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class TinySpec(Construction):
    """Shape of the tiny model. Head size 32 is one the vLLM CPU attention kernels support."""

    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    vocab_target: int = 1024
    max_position_embeddings: int = 2048

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def validate(self) -> None:
        check_heads(self)
        if self.vocab_target < 300:
            raise ConfigError("vocab_target must be at least 300 (256 bytes + specials + merges)")
        if min(self.num_hidden_layers, self.intermediate_size, self.max_position_embeddings) < 1:
            raise ConfigError("layers, intermediate_size and max_position_embeddings must be > 0")


@dataclass(frozen=True)
class TinyModelInfo:
    """What ``write_tiny_model`` wrote."""

    path: Path
    seed: int
    vocab_size: int
    num_parameters: int
    bos_token_id: int
    eos_token_id: int
    forbidden_token_ids: tuple[int, ...] = field(repr=False)
    files: tuple[str, ...]


def _normal(rng: np.random.Generator, shape: tuple[int, ...], std: float) -> F32:
    return (rng.standard_normal(shape) * std).astype(np.float32)


def _weights(spec: TinySpec, vocab: int, forbidden: list[int], seed: int) -> dict[str, F32]:
    rng = np.random.default_rng(seed)
    d, inter, hd = spec.hidden_size, spec.intermediate_size, spec.head_dim
    nq, nkv = spec.num_attention_heads, spec.num_key_value_heads
    w: dict[str, F32] = {}
    emb = _normal(rng, (vocab, d), 0.5)
    emb[:, 0] = spec.anchor
    w["model.embed_tokens.weight"] = emb
    for i in range(spec.num_hidden_layers):
        p = f"model.layers.{i}."
        w[p + "self_attn.q_proj.weight"] = _normal(rng, (nq * hd, d), d**-0.5)
        w[p + "self_attn.k_proj.weight"] = _normal(rng, (nkv * hd, d), d**-0.5)
        w[p + "self_attn.v_proj.weight"] = _normal(rng, (nkv * hd, d), d**-0.5)
        o = _normal(rng, (d, nq * hd), 0.5 * (nq * hd) ** -0.5)
        o[0, :] = 0.0  # nothing writes residual channel 0
        w[p + "self_attn.o_proj.weight"] = o
        w[p + "mlp.gate_proj.weight"] = _normal(rng, (inter, d), d**-0.5)
        w[p + "mlp.up_proj.weight"] = _normal(rng, (inter, d), d**-0.5)
        down = _normal(rng, (d, inter), 0.5 * inter**-0.5)
        down[0, :] = 0.0
        w[p + "mlp.down_proj.weight"] = down
        w[p + "input_layernorm.weight"] = np.ones(d, dtype=np.float32)
        w[p + "post_attention_layernorm.weight"] = np.ones(d, dtype=np.float32)
    w["model.norm.weight"] = np.ones(d, dtype=np.float32)
    head = _normal(rng, (vocab, d), spec.logit_scale * d**-0.5)
    head[:, 0] = 0.0
    head[forbidden, :] = 0.0
    head[forbidden, 0] = -spec.forbid_scale
    w["lm_head.weight"] = head
    return w


def write_tiny_model(out: Path, seed: int = 0, spec: TinySpec | None = None) -> TinyModelInfo:
    """Write the tiny model into ``out`` (created if missing; files in it are overwritten)."""
    from safetensors.numpy import save_file

    spec = spec or TinySpec()
    spec.validate()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)

    tt = train_tokenizer(spec.vocab_target)
    weights = _weights(spec, tt.vocab_size, list(tt.forbidden), seed)

    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "model.safetensors").chmod(0o644)  # safetensors creates it 0600
    shape = llama_shape(spec, tt.vocab_size, "float32")
    meta = {"generator": "inferlab.models.tiny", "seed": seed, "spec": asdict(spec)}
    files = tuple(sorted((*write_hf_files(out, tt, shape, meta), "model.safetensors")))
    return TinyModelInfo(
        path=out,
        seed=seed,
        vocab_size=tt.vocab_size,
        num_parameters=int(sum(a.size for a in weights.values())),
        bos_token_id=tt.bos_id,
        eos_token_id=tt.eos_id,
        forbidden_token_ids=tt.forbidden,
        files=files,
    )
