"""The SIMULATED engine's prefix cache: whole blocks of prompt tokens, reused by later prompts.

A prompt is cut into blocks of :data:`BLOCK_TOKENS` tokens; each block's key is a hash of the
block and every block before it (so a block matches only after the same prefix, as vLLM's
automatic prefix caching and SGLang's radix tree do at page granularity). A prompt's cached
tokens are its leading blocks already in the cache, at most ``prompt_tokens - 1`` (the last
prompt token is always computed: its logits start the answer). Blocks are evicted least
recently used first when the cache is over its capacity (tokens). A finished request's prompt
and answer are inserted whole, so a conversation's next turn finds its history. Only the
uncached tokens cost prefill time in the timing model: TTFT shows the reuse, with a known
ground truth.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BLOCK_TOKENS", "Lookup", "PrefixCache"]

#: tokens per cached block (vLLM's default block size is 16)
BLOCK_TOKENS = 16


@dataclass(frozen=True)
class Lookup:
    """One prompt's lookup: tokens served from the cache and tokens computed (prefill)."""

    cached: int
    computed: int


class PrefixCache:
    """Block-level LRU prefix cache holding at most ``capacity_tokens`` tokens."""

    def __init__(self, capacity_tokens: int) -> None:
        self.capacity_blocks = max(0, capacity_tokens // BLOCK_TOKENS)
        self._blocks: OrderedDict[int, None] = OrderedDict()
        #: totals since start (tokens): what the engine's counters report
        self.hit_tokens = 0
        self.query_tokens = 0

    def __len__(self) -> int:
        return len(self._blocks)

    def lookup(self, tokens: Sequence[str | int]) -> Lookup:
        """Match ``tokens``' leading blocks, then insert all of its whole blocks (most recent)."""
        n = len(tokens)
        keys = _keys(tokens)
        hit_blocks = 0
        for key in keys:
            if key not in self._blocks:
                break
            hit_blocks += 1
        cached = min(hit_blocks * BLOCK_TOKENS, max(0, n - 1))
        self._insert(keys)
        self.hit_tokens += cached
        self.query_tokens += n
        return Lookup(cached, n - cached)

    def insert(self, tokens: Sequence[str | int]) -> None:
        """Keep ``tokens``' whole blocks (a finished request's prompt and answer: as vLLM and
        SGLang do, the generated tokens are cached too, so a next turn finds its history)."""
        self._insert(_keys(tokens))

    def _insert(self, keys: list[int]) -> None:
        for key in keys:
            self._blocks[key] = None
            self._blocks.move_to_end(key)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)


def _keys(tokens: Sequence[str | int]) -> list[int]:
    """Each whole block's key: a hash of the block and the key of the block before it."""
    n = len(tokens)
    keys: list[int] = []
    h = 0
    for start in range(0, n - n % BLOCK_TOKENS, BLOCK_TOKENS):
        h = hash((h, tuple(tokens[start : start + BLOCK_TOKENS])))
        keys.append(h)
    return keys
