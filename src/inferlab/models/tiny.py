"""A deterministic random-weight Llama model + byte-level BPE tokenizer, in Hugging Face format.

``write_tiny_model(out, seed)`` writes everything a real engine (vLLM's CPU build, transformers)
needs to serve a model without downloading anything: ``config.json`` (``LlamaForCausalLM``),
``model.safetensors`` (float32, written with numpy), ``generation_config.json``, and a tokenizer
trained here on a fixed corpus (``tokenizer.json``, ``tokenizer_config.json`` with a chat
template, ``special_tokens_map.json``). The same seed gives byte-identical files.

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

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from inferlab.errors import ConfigError

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

UNK_TOKEN = "<unk>"
BOS_TOKEN = "<s>"
EOS_TOKEN = "</s>"
SPECIAL_TOKENS = (UNK_TOKEN, BOS_TOKEN, EOS_TOKEN)

#: A plain-text chat format: ``<s>system: ...\nuser: ...\nassistant:``. The newline is an
#: expression, not literal text: transformers renders with ``trim_blocks``, which would eat it.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ message['role'] }}: "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class TinySpec:
    """Shape of the tiny model. Head size 32 is one the vLLM CPU attention kernels support."""

    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    vocab_target: int = 1024
    max_position_embeddings: int = 2048
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    #: constant value of residual channel 0 in every embedding.
    anchor: float = 2.0
    #: LM-head weight (negated) on channel 0 for forbidden tokens.
    forbid_scale: float = 400.0
    #: scale of the allowed tokens' logits (about their standard deviation).
    logit_scale: float = 4.0

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def validate(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError("hidden_size must be a multiple of num_attention_heads")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ConfigError("num_attention_heads must be a multiple of num_key_value_heads")
        if self.head_dim % 2:
            raise ConfigError("head_dim must be even (rotary embeddings)")
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


_SUBJECTS = (
    "the model",
    "a server",
    "the engine",
    "my friend",
    "the cat",
    "a small dog",
    "the teacher",
    "our team",
    "the scheduler",
    "a request",
    "the batch",
    "the kernel",
    "this city",
    "the river",
)
_VERBS = (
    "reads",
    "writes",
    "runs",
    "waits for",
    "answers",
    "measures",
    "finds",
    "sends",
    "likes",
    "builds",
    "sees",
    "counts",
    "moves",
    "loads",
    "serves",
    "keeps",
)
_OBJECTS = (
    "the tokens",
    "a long prompt",
    "the cache",
    "many numbers",
    "a quiet morning",
    "the report",
    "every request",
    "the first token",
    "a blue house",
    "the green field",
    "the results",
    "some apples",
    "the market",
    "a new idea",
    "the latency",
    "the throughput",
)
_TAILS = (
    "today",
    "again",
    "in the evening",
    "with care",
    "very fast",
    "at noon",
    "for a while",
    "without errors",
    "one more time",
    "in the garden",
    "on the table",
    "before dinner",
)
_FIXED = (
    "The capital of France is Paris.",
    "Capital of France in one word? Paris.",
    "What is two plus two? Four.",
    "Hello, how are you? I am fine, thank you.",
    "The quick brown fox jumps over the lazy dog.",
    "Once upon a time there was a small model that never stopped talking.",
    "user: Tell me a story.\nassistant: Once upon a time, in a land far away.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 100 1000 2024 3.14",
    "Punctuation: . , ; : ! ? ' \" ( ) [ ] { } - + * / = < > @ # $ % & _",
)


def tiny_corpus(n_sentences: int = 3000) -> list[str]:
    """A fixed English-like corpus (the tokenizer does not depend on the model seed)."""
    rng = np.random.default_rng(1234)
    lines = list(_FIXED) * 20
    for _ in range(n_sentences):
        s = _SUBJECTS[int(rng.integers(len(_SUBJECTS)))]
        v = _VERBS[int(rng.integers(len(_VERBS)))]
        o = _OBJECTS[int(rng.integers(len(_OBJECTS)))]
        t = _TAILS[int(rng.integers(len(_TAILS)))]
        n = int(rng.integers(0, 1000))
        lines.append(f"{s.capitalize()} {v} {o} {t}, {n} times.")
    return lines


def _train_tokenizer(spec: TinySpec) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_target,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(tiny_corpus(), trainer=trainer)
    bos_id = tok.token_to_id(BOS_TOKEN)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS_TOKEN} $A",
        pair=f"{BOS_TOKEN} $A {BOS_TOKEN} $B",
        special_tokens=[(BOS_TOKEN, bos_id)],
    )
    return tok


def _forbidden(tok: Any) -> list[int]:
    out = []
    for i in range(tok.get_vocab_size()):
        token = tok.id_to_token(i)
        text = tok.decode([i], skip_special_tokens=False)
        if token in SPECIAL_TOKENS or not text or "\ufffd" in text or not text.isprintable():
            out.append(i)
    return out


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


def _dump(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_tiny_model(out: Path, seed: int = 0, spec: TinySpec | None = None) -> TinyModelInfo:
    """Write the tiny model into ``out`` (created if missing; files in it are overwritten)."""
    from safetensors.numpy import save_file

    spec = spec or TinySpec()
    spec.validate()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)

    tok = _train_tokenizer(spec)
    vocab = int(tok.get_vocab_size())
    bos_id, eos_id, unk_id = (int(tok.token_to_id(t)) for t in (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN))
    forbidden = _forbidden(tok)
    weights = _weights(spec, vocab, forbidden, seed)

    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "model.safetensors").chmod(0o644)  # safetensors creates it 0600
    (out / "tokenizer.json").write_text(tok.to_str(pretty=True) + "\n")
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": spec.num_hidden_layers,
        "num_attention_heads": spec.num_attention_heads,
        "num_key_value_heads": spec.num_key_value_heads,
        "head_dim": spec.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": spec.max_position_embeddings,
        "rms_norm_eps": spec.rms_norm_eps,
        "rope_theta": spec.rope_theta,
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "pretraining_tp": 1,
        "initializer_range": 0.02,
        "tie_word_embeddings": False,
        "use_cache": True,
        "vocab_size": vocab,
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "torch_dtype": "float32",
        "inferlab": {"generator": "inferlab.models.tiny", "seed": seed, "spec": asdict(spec)},
    }
    _dump(out / "config.json", config)
    _dump(
        out / "generation_config.json",
        {"_from_model_config": True, "bos_token_id": bos_id, "eos_token_id": eos_id},
    )
    _dump(
        out / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": BOS_TOKEN,
            "eos_token": EOS_TOKEN,
            "unk_token": UNK_TOKEN,
            "pad_token": EOS_TOKEN,
            "add_bos_token": True,
            "add_eos_token": False,
            "clean_up_tokenization_spaces": False,
            "model_max_length": spec.max_position_embeddings,
            "chat_template": CHAT_TEMPLATE,
            "added_tokens_decoder": {
                str(i): {
                    "content": t,
                    "lstrip": False,
                    "normalized": False,
                    "rstrip": False,
                    "single_word": False,
                    "special": True,
                }
                for i, t in ((unk_id, UNK_TOKEN), (bos_id, BOS_TOKEN), (eos_id, EOS_TOKEN))
            },
        },
    )
    _dump(
        out / "special_tokens_map.json",
        {
            "bos_token": BOS_TOKEN,
            "eos_token": EOS_TOKEN,
            "unk_token": UNK_TOKEN,
            "pad_token": EOS_TOKEN,
        },
    )
    files = (
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    )
    return TinyModelInfo(
        path=out,
        seed=seed,
        vocab_size=vocab,
        num_parameters=int(sum(a.size for a in weights.values())),
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        forbidden_token_ids=tuple(forbidden),
        files=files,
    )
