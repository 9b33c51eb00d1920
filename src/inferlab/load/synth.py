"""Synthesised prompts whose shared parts are shared token for token: trace blocks, prefixes.

Prompts are words of a pool the tokenizer counts as one token each (``one_token_words``),
joined by spaces, so a prompt of N words is N tokens and its k-th block of 512 words is its
k-th block of 512 tokens. A block's words are drawn from a generator seeded by (seed, the
block's key): two requests of a Mooncake trace with the same hash id in a block send the same
512 tokens there (a partial last block: the first words of it), and the requests of a
shared-prefix workload that draw prefix p send the same prefix, so a prefix cache sees the
reuse the trace (or the workload) had. Built before a point starts, never on the timing path.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Protocol

from inferlab.errors import ConfigError, TokenizerError
from inferlab.load.prompt import Prompt
from inferlab.load.traces import BLOCK_TOKENS, TraceRequest

__all__ = [
    "BlockText",
    "WordSource",
    "fit_context",
    "prefix_choices",
    "shared_prefix_prompts",
    "trace_prompts",
]


class WordSource(Protocol):
    def one_token_words(self, limit: int = 512) -> list[str]: ...

    def count_many(self, texts: list[str]) -> list[int]: ...


@dataclass
class BlockText:
    """Words of one-token each, drawn per key from (``seed``, key); blocks are cached."""

    pool: list[str]
    seed: int
    _cache: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, tok: WordSource, seed: int) -> BlockText:
        """The pool of ``tok``; TokenizerError when it has fewer than 16 such words."""
        pool = tok.one_token_words()
        if len(pool) < 16:
            raise TokenizerError(
                f"the tokenizer has {len(pool)} words of one token each (at least 16 are "
                "needed to synthesise shared blocks); pass --tokenizer DIR of the served model"
            )
        return cls(pool, seed)

    def words(self, key: str, n: int) -> list[str]:
        """The first ``n`` words of the block ``key`` (the same words for the same key)."""
        got = self._cache.get(key)
        if got is None or len(got) < n:
            got = random.Random(f"{self.seed}:{key}").choices(self.pool, k=max(n, BLOCK_TOKENS))
            self._cache[key] = got
        return got[:n]


def _check(texts: list[str], want: list[int], tok: WordSource) -> None:
    """Each text is as many tokens as made, by the client's own tokenizer: a tokenizer of
    another model passes this; the server's count of each prompt is checked after the point
    (``load.promptcheck``: the ``tokenizer-mismatch`` warning)."""
    for i, (got, n) in enumerate(zip(tok.count_many(texts), want)):
        if got != n:
            raise TokenizerError(
                f"synthesised prompt {i}: the tokenizer counts {got} tokens, {n} were made "
                "(its one-token words merge); pass --tokenizer DIR of the served model"
            )


def trace_prompts(reqs: list[TraceRequest], tok: WordSource, seed: int) -> list[Prompt]:
    """One prompt per trace request, of exactly its input length: its hash blocks' words
    (requests without hash ids: words of their own), asking for its output length."""
    text = BlockText.of(tok, seed)
    texts = []
    for i, r in enumerate(reqs):
        if r.hash_ids is None:
            words = text.words(f"request:{i}", r.input_tokens)
        else:
            words = []
            for k, h in enumerate(r.hash_ids):
                words += text.words(
                    f"block:{h}", min(BLOCK_TOKENS, r.input_tokens - k * BLOCK_TOKENS)
                )
        texts.append(" ".join(words))
    _check(texts, [r.input_tokens for r in reqs], tok)
    return [Prompt(t, None, r.input_tokens, r.output_tokens) for t, r in zip(texts, reqs)]


def prefix_choices(prefixes: int, dist: str, n: int, seed: int) -> list[int]:
    """Which prefix (0..prefixes-1) each of ``n`` requests uses: ``uniform`` or ``zipf:S``
    (prefix k drawn with weight 1 / (k+1)^S)."""
    kind, _, arg = dist.partition(":")
    if kind == "uniform" and not arg:
        weights = [1.0] * prefixes
    elif kind == "zipf":
        try:
            s = float(arg)
        except ValueError:
            raise ConfigError(f"prefix_dist {dist!r}: expected zipf:S, S a number") from None
        weights = [1.0 / (k + 1) ** s for k in range(prefixes)]
    else:
        raise ConfigError(f"prefix_dist {dist!r}: expected uniform or zipf:S (e.g. zipf:1.1)")
    return random.Random(f"{seed}:choices").choices(range(prefixes), weights, k=n)


def shared_prefix_prompts(
    prefixes: int,
    prefix_tokens: int,
    suffix_tokens: int,
    dist: str,
    output_tokens: int,
    n: int,
    tok: WordSource,
    seed: int,
) -> list[Prompt]:
    """``n`` prompts: one of ``prefixes`` shared prefixes of ``prefix_tokens`` (chosen by
    ``dist``), then a suffix of ``suffix_tokens`` of its own."""
    text = BlockText.of(tok, seed)
    texts = [
        " ".join(
            text.words(f"prefix:{p}", prefix_tokens) + text.words(f"suffix:{i}", suffix_tokens)
        )
        for i, p in enumerate(prefix_choices(prefixes, dist, n, seed))
    ]
    length = prefix_tokens + suffix_tokens
    _check(texts, [length] * n, tok)
    return [Prompt(t, None, length, output_tokens) for t in texts]


def fit_context(
    reqs: list[TraceRequest], max_model_len: int | None
) -> tuple[list[TraceRequest], int]:
    """(the requests whose input + output fit the model's context, how many do not);
    all of them when the context is not known."""
    if max_model_len is None:
        return reqs, 0
    kept = [r for r in reqs if r.input_tokens + r.output_tokens <= max_model_len]
    return kept, len(reqs) - len(kept)
