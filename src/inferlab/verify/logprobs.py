"""Teacher-forced top-k logprobs over the OpenAI completions API (vLLM's mechanism).

The baseline's greedy continuation of each seeded prompt (T = 0, unstreamed), then the text
``prompt + continuation`` scored with ``echo = true, max_tokens = 0, logprobs = k``: vLLM
answers that with the prompt's own top-k logprobs (``serving_completion``: ``request.echo and
request.max_tokens == 0`` returns ``res.prompt_logprobs``). The scored positions are the tokens
whose ``text_offset`` is at or past the prompt's end, so both sides are compared on the same
tokens of the same text. An engine that refuses ``echo``/``logprobs`` or answers without them
raises :class:`NoLogprobs`: it cannot be gated.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from typing import Any

from inferlab.errors import InferlabError
from inferlab.load.http import HttpClient

__all__ = ["LogprobReference", "NoLogprobs", "continue_greedy", "score", "seeded_prompts"]

_TEXT = (
    "the a river city morning old new small light water stone road house garden market "
    "winter summer letter story music friend teacher doctor machine window question answer "
    "north south bridge forest island mountain village paper number colour simple quiet "
    "because after before while when where every many few some always never often slowly"
)
_WORDS = tuple(_TEXT.split())


class NoLogprobs(InferlabError):
    """The engine serves no teacher-forced logprobs (``echo`` + ``logprobs`` refused or absent)."""


def seeded_prompts(seed: int, count: int) -> list[str]:
    """``count`` fixed plain-text prompts of 6–12 English words (the same for a seed)."""
    rng = random.Random(f"agreement:{seed}")
    out = []
    for i in range(count):
        words = rng.choices(_WORDS, k=rng.randint(6, 12))
        out.append(f"Sentence {i + 1}: " + " ".join(words))
    return out


@dataclass
class LogprobReference:
    """The baseline's side: prompts, greedy continuations and each continuation position's
    top-k map (token text → logprob, nats)."""

    prompts: list[str]
    continuations: list[str]
    positions: list[list[dict[str, float]]]
    top_k: int
    tokens: int
    seed: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LogprobReference:
        return cls(
            list(d["prompts"]),
            list(d["continuations"]),
            [[dict(p) for p in ps] for ps in d["positions"]],
            int(d["top_k"]),
            int(d["tokens"]),
            int(d["seed"]),
        )


async def _post(client: HttpClient, body: dict[str, Any]) -> dict[str, Any]:
    ex = await client.request(client.build("POST", "/v1/completions", json.dumps(body).encode()))
    raw = ex.body()
    if ex.error_kind is not None or ex.status != 200:
        why = (
            ex.error_message if ex.error_kind is not None else raw[:200].decode("utf-8", "replace")
        )
        raise NoLogprobs(f"HTTP {ex.status}: {why}")
    try:
        obj = json.loads(raw)
        choice = obj["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise NoLogprobs(f"not a completions answer: {exc}") from None
    if not isinstance(choice, dict):
        raise NoLogprobs("not a completions answer: choices[0] is not an object")
    return choice


async def continue_greedy(client: HttpClient, model: str, prompt: str, tokens: int) -> str:
    """The greedy (T = 0) continuation of ``prompt``, at most ``tokens`` tokens."""
    body = {"model": model, "prompt": prompt, "max_tokens": tokens, "temperature": 0.0}
    choice = await _post(client, body)
    text = choice.get("text")
    if not isinstance(text, str):
        raise NoLogprobs("the completion carries no text")
    return text


async def score(
    client: HttpClient, model: str, prompt: str, continuation: str, top_k: int
) -> list[dict[str, float]]:
    """The top-k map of every continuation position, teacher forced (echo, max_tokens = 0)."""
    body = {
        "model": model,
        "prompt": prompt + continuation,
        "max_tokens": 0,
        "echo": True,
        "logprobs": top_k,
        "temperature": 0.0,
    }
    choice = await _post(client, body)
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        raise NoLogprobs("echo with logprobs answered without a logprobs object")
    tops, offsets = lp.get("top_logprobs"), lp.get("text_offset")
    if not isinstance(tops, list) or not isinstance(offsets, list) or len(tops) != len(offsets):
        raise NoLogprobs("logprobs lacks top_logprobs/text_offset of equal length")
    out = [
        {str(t): float(v) for t, v in top.items()}
        for top, at in zip(tops, offsets)
        if isinstance(at, int) and at >= len(prompt) and isinstance(top, dict) and top
    ]
    if continuation.strip() and not out:
        raise NoLogprobs("no scored position past the prompt (echo returned no prompt logprobs)")
    return out
