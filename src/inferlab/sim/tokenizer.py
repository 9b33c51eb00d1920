"""The reference engine's word-level tokenizer.

One token is one word; text is words joined by single spaces, so ``decode(encode(t)) == t``
for any text made of vocabulary words, and any client that loads the exported
``tokenizer.json`` (``tokenizers``/``transformers``) counts exactly what the server counts.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

__all__ = ["UNK", "WordTokenizer"]

UNK = "[UNK]"
_CONSONANTS = "bdfghklmnprstvz"
_VOWELS = "aeiou"


def _words(n: int) -> list[str]:
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS]  # 75
    out: list[str] = []
    length = 2
    while len(out) < n:
        # all words of `length` syllables, in a fixed order
        idx = [0] * length
        while len(out) < n:
            out.append("".join(syllables[i] for i in idx))
            pos = length - 1
            while pos >= 0:
                idx[pos] += 1
                if idx[pos] < len(syllables):
                    break
                idx[pos] = 0
                pos -= 1
            if pos < 0:
                break
        length += 1
    return out


class WordTokenizer:
    """Deterministic word-level tokenizer: id 0 is ``[UNK]``, ids 1..vocab_size-1 are words."""

    def __init__(self, vocab_size: int = 4096) -> None:
        if vocab_size < 2:
            raise ValueError("vocab_size must be at least 2")
        self.vocab: list[str] = [UNK, *_words(vocab_size - 1)]
        self._ids = {w: i for i, w in enumerate(self.vocab)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (split on whitespace; unknown words map to 0)."""
        ids = self._ids
        return [ids.get(w, 0) for w in text.split()]

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        return len(text.split())

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (words joined by single spaces)."""
        vocab = self.vocab
        return " ".join(vocab[i] for i in ids)

    def random_ids(self, n: int, rng: random.Random) -> list[int]:
        """``n`` random word ids (never ``[UNK]``)."""
        top = self.vocab_size - 1
        return [rng.randint(1, top) for _ in range(n)]

    def save_hf(self, directory: str | Path) -> Path:
        """Write a Hugging Face tokenizer directory (``tokenizer.json`` and config)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        tokenizer = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [
                {
                    "id": 0,
                    "content": UNK,
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "special": True,
                }
            ],
            "normalizer": None,
            "pre_tokenizer": {"type": "WhitespaceSplit"},
            "post_processor": None,
            "decoder": None,
            "model": {
                "type": "WordLevel",
                "vocab": {w: i for i, w in enumerate(self.vocab)},
                "unk_token": UNK,
            },
        }
        (d / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
        config = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "model_max_length": 1_000_000,
            "unk_token": UNK,
            "clean_up_tokenization_spaces": False,
        }
        (d / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        (d / "special_tokens_map.json").write_text(
            json.dumps({"unk_token": UNK}, indent=2), encoding="utf-8"
        )
        return d
