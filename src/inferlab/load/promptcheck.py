"""Does the client's tokenizer count prompts as the server does? Each request's prompt length
as the client made it (``input_tokens``) against the server's ``usage.prompt_tokens``.

A wrong ``--tokenizer`` makes prompts the server reads otherwise: its one-token words or its
decoded random ids are not one token each to the served model. The lengths are then not what
the workload says, and what is derived from token counts is wrong without an error: on the
reference engine a byte-level BPE tokenizer's sessions prompts of 256 tokens were 5 words to the
server, and its prefix-cache hit rate read 97.9% where the true workload's is 83% (the history
is most of every prompt the server sees). The rule, per request whose whole prompt the client
counted (every request but a sessions turn after the first, which resends answers): the
server's count may exceed the client's by the special tokens a server adds (BOS, EOS: 2, or 2%
of the prompt) and, on the chat endpoint, by its chat template (:data:`CHAT_TEMPLATE_TOKENS`);
it may never be below it by more than 2 tokens or 2%. More than half of the compared requests
outside that range: the tokenizer does not match the served model (``tokenizer-mismatch``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.records import RequestRecord

__all__ = ["CHAT_TEMPLATE_TOKENS", "PromptCounts", "check_prompt_counts"]

#: most tokens a chat template adds to one request's messages (Llama 3.1's header with its
#: date line is ~30, Qwen2's default system message ~20, the tiny test model's 7)
CHAT_TEMPLATE_TOKENS = 64


@dataclass(frozen=True, slots=True)
class PromptCounts:
    """The point's comparison of prompt counts: requests compared, how many disagreed, the
    medians of the client's and the server's counts (tokens) and a first disagreeing pair."""

    compared: int
    disagree: int
    client_median: float
    server_median: float
    example: tuple[int, int] | None  # (client, server) tokens of the first disagreeing request

    @property
    def mismatch(self) -> bool:
        """More than half of the compared requests disagree."""
        return self.compared > 0 and 2 * self.disagree > self.compared

    def message(self) -> str:
        """What the mismatch is, in one sentence."""
        ex = f" (e.g. {self.example[0]} made, {self.example[1]} read)" if self.example else ""
        return (
            f"the server counted the prompts otherwise than the client's tokenizer in "
            f"{self.disagree} of {self.compared} requests: median {self.server_median:.0f} "
            f"prompt tokens by the server's usage, {self.client_median:.0f} by the client{ex}; "
            "prompt lengths, and the engine's prefix-cache hit rate, are not the workload's"
        )


def _agrees(client: int, server: int, chat: bool) -> bool:
    slack = max(2, math.ceil(0.02 * client))
    return client - slack <= server <= client + slack + (CHAT_TEMPLATE_TOKENS if chat else 0)


def check_prompt_counts(records: Sequence[RequestRecord], *, chat: bool) -> PromptCounts | None:
    """The comparison over ``records`` (successful ones whose whole prompt the client counted
    and the server reported); None when there is none to compare."""
    pairs = [
        (r.input_tokens, r.usage_prompt_tokens)
        for r in records
        if r.ok
        and r.input_tokens is not None
        and r.usage_prompt_tokens is not None
        and not r.turn  # a later turn resends the answers, which the client did not count
    ]
    if not pairs:
        return None
    bad = [(c, s) for c, s in pairs if not _agrees(c, s, chat)]
    return PromptCounts(
        compared=len(pairs),
        disagree=len(bad),
        client_median=statistics.median(c for c, _ in pairs),
        server_median=statistics.median(s for _, s in pairs),
        example=bad[0] if bad else None,
    )
