"""The tokenizer and the Hugging Face files every model inferlab writes shares.

A byte-level BPE tokenizer trained here on a fixed English-like corpus (``tiny_corpus``; it does
not depend on any model seed), with ``<s>`` / ``</s>`` / ``<unk>`` and a plain-text chat
template; ``forbidden_ids`` are the tokens a model must never emit (special tokens and tokens
that do not decode, alone, to non-empty printable text). ``write_hf_files`` writes
``tokenizer.json``, ``tokenizer_config.json``, ``special_tokens_map.json``,
``generation_config.json`` and a Llama ``config.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from inferlab.errors import ConfigError
from inferlab.picks import pick

__all__ = [
    "BOS_TOKEN",
    "CHAT_TEMPLATE",
    "EOS_TOKEN",
    "SPECIAL_TOKENS",
    "UNK_TOKEN",
    "Construction",
    "LlamaDims",
    "LlamaShape",
    "TrainedTokenizer",
    "check_heads",
    "forbidden_ids",
    "llama_shape",
    "tiny_corpus",
    "train_tokenizer",
    "write_hf_files",
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


def _train(vocab_target: int) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_target,
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


def forbidden_ids(tok: Any) -> list[int]:
    """Special tokens and tokens that do not decode, alone, to non-empty printable text."""
    out = []
    for i in range(tok.get_vocab_size()):
        token = tok.id_to_token(i)
        text = tok.decode([i], skip_special_tokens=False)
        if token in SPECIAL_TOKENS or not text or "\ufffd" in text or not text.isprintable():
            out.append(i)
    return out


@dataclass(frozen=True)
class TrainedTokenizer:
    """The trained tokenizer (a ``tokenizers.Tokenizer``) and its special ids."""

    tok: Any
    vocab_size: int
    bos_id: int
    eos_id: int
    unk_id: int
    forbidden: tuple[int, ...]


def train_tokenizer(vocab_target: int) -> TrainedTokenizer:
    """Train on ``tiny_corpus`` (deterministic for a given ``tokenizers`` version)."""
    tok = _train(vocab_target)
    bos, eos, unk = (int(tok.token_to_id(t)) for t in (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN))
    return TrainedTokenizer(
        tok, int(tok.get_vocab_size()), bos, eos, unk, tuple(forbidden_ids(tok))
    )


@dataclass(frozen=True)
class LlamaShape:
    """The ``config.json`` fields of a Llama model that differ between inferlab's models."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int
    rope_theta: float
    rms_norm_eps: float
    dtype: str  # torch dtype name: float32 | bfloat16


@dataclass(frozen=True, kw_only=True)
class Construction:
    """The constants both of inferlab's models are built with: RoPE and RMSNorm settings, and
    the forbidden-token construction (``anchor`` in residual channel 0 of every embedding,
    ``-forbid_scale`` there in each forbidden token's LM-head row, the allowed tokens' logits
    about ``logit_scale`` wide)."""

    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    anchor: float = 2.0
    forbid_scale: float = 400.0
    logit_scale: float = 4.0


class LlamaDims(Protocol):
    """The dimensions a model spec (``TinySpec``, ``RandomSpec``) declares."""

    @property
    def hidden_size(self) -> int: ...
    @property
    def intermediate_size(self) -> int: ...
    @property
    def num_hidden_layers(self) -> int: ...
    @property
    def num_attention_heads(self) -> int: ...
    @property
    def num_key_value_heads(self) -> int: ...
    @property
    def max_position_embeddings(self) -> int: ...
    @property
    def rope_theta(self) -> float: ...
    @property
    def rms_norm_eps(self) -> float: ...


def check_heads(spec: LlamaDims) -> None:
    """ConfigError unless the attention heads divide evenly and the head size is even."""
    if spec.hidden_size % spec.num_attention_heads:
        raise ConfigError("hidden_size must be a multiple of num_attention_heads")
    if spec.num_attention_heads % spec.num_key_value_heads:
        raise ConfigError("num_attention_heads must be a multiple of num_key_value_heads")
    if (spec.hidden_size // spec.num_attention_heads) % 2:
        raise ConfigError("head_dim must be even (rotary embeddings)")


#: what a ``LlamaDims`` declares, by the names ``LlamaShape`` gives them
_DIMS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "max_position_embeddings",
    "rope_theta",
    "rms_norm_eps",
)


def llama_shape(spec: LlamaDims, vocab_size: int, dtype: str) -> LlamaShape:
    """The ``config.json`` shape of ``spec`` with ``vocab_size`` rows of embeddings."""
    head_dim = spec.hidden_size // spec.num_attention_heads
    return LlamaShape(**pick(spec, *_DIMS), head_dim=head_dim, vocab_size=vocab_size, dtype=dtype)


def _dump(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def _llama_config(
    shape: LlamaShape, tt: TrainedTokenizer, inferlab: dict[str, Any], extra: dict[str, Any]
) -> Any:
    return extra | {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": shape.hidden_size,
        "intermediate_size": shape.intermediate_size,
        "num_hidden_layers": shape.num_hidden_layers,
        "num_attention_heads": shape.num_attention_heads,
        "num_key_value_heads": shape.num_key_value_heads,
        "head_dim": shape.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": shape.max_position_embeddings,
        "rms_norm_eps": shape.rms_norm_eps,
        "rope_theta": shape.rope_theta,
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "pretraining_tp": 1,
        "initializer_range": 0.02,
        "tie_word_embeddings": False,
        "use_cache": True,
        "vocab_size": shape.vocab_size,
        "bos_token_id": tt.bos_id,
        "eos_token_id": tt.eos_id,
        "torch_dtype": shape.dtype,
        "inferlab": inferlab,
    }


def _tokenizer_config(tt: TrainedTokenizer, model_max_length: int) -> Any:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "unk_token": UNK_TOKEN,
        "pad_token": EOS_TOKEN,
        "add_bos_token": True,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": model_max_length,
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
            for i, t in ((tt.unk_id, UNK_TOKEN), (tt.bos_id, BOS_TOKEN), (tt.eos_id, EOS_TOKEN))
        },
    }


def write_hf_files(
    out: Path,
    tt: TrainedTokenizer,
    shape: LlamaShape,
    inferlab: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> tuple[str, ...]:
    """Write everything but the weights into ``out`` (``extra``: more ``config.json`` keys,
    e.g. ``quantization_config``); returns the file names written."""
    (out / "tokenizer.json").write_text(tt.tok.to_str(pretty=True) + "\n")
    _dump(out / "config.json", _llama_config(shape, tt, inferlab, extra or {}))
    _dump(
        out / "generation_config.json",
        {"_from_model_config": True, "bos_token_id": tt.bos_id, "eos_token_id": tt.eos_id},
    )
    _dump(out / "tokenizer_config.json", _tokenizer_config(tt, shape.max_position_embeddings))
    _dump(
        out / "special_tokens_map.json",
        {
            "bos_token": BOS_TOKEN,
            "eos_token": EOS_TOKEN,
            "unk_token": UNK_TOKEN,
            "pad_token": EOS_TOKEN,
        },
    )
    return (
        "config.json",
        "generation_config.json",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    )
