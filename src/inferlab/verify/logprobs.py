"""The baseline's side of the distribution-agreement gate and the OpenAI completions answers it
reads (the scorers, one per engine mechanism, are in :mod:`inferlab.verify.scorers`).

The baseline's greedy continuation of each seeded prompt (T = 0, unstreamed, ``logprobs = 1``
so that the answer names the continuation's tokens), then each continuation position's top-k
map, teacher forced. Generated-token logprobs come in one of two shapes, both read here: the
legacy completions object (``tokens``, ``top_logprobs`` as token text → logprob: vLLM,
SGLang, the reference engine) or a ``content`` list of ``{token, logprob, top_logprobs: [{token,
logprob}]}`` (llama.cpp's ``/v1/completions``, ``server-task.cpp`` ``probs_vector_to_json``).
An engine that refuses ``logprobs`` or answers without them raises :class:`NoLogprobs`: it
cannot be gated.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inferlab.errors import InferlabError
from inferlab.load.http import HttpClient
from inferlab.records import LogprobFields

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "Continuation",
    "LogprobReference",
    "NoLogprobs",
    "continue_greedy",
    "generated_entries",
    "post_completion",
    "prompt_tokens",
    "seeded_prompts",
]

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


class LogprobReference(LogprobFields):
    """The baseline's side of the gate (``records.LogprobFields``), as the scorers take it."""

    def to_json(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = self.model_dump()
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LogprobReference:
        """A stored reference (one stored before the splits were kept has none)."""
        ref: LogprobReference = cls.model_validate(d)
        return ref

    def forced(self, i: int) -> Continuation:
        """Prompt ``i``'s continuation with its split, as the scorers take it."""
        texts, ids = self.token_texts, self.token_ids
        return Continuation(
            self.continuations[i], texts[i] if texts else None, ids[i] if ids else None
        )


async def post_completion(client: HttpClient, body: dict[str, Any]) -> dict[str, Any]:
    """The JSON answer of ``POST /v1/completions``; ``NoLogprobs`` for a refusal or no choice."""
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
    return dict(obj)


def choice_of(obj: dict[str, Any]) -> dict[str, Any]:
    """``choices[0]`` of an answer :func:`post_completion` returned."""
    return dict(obj["choices"][0])


def prompt_tokens(obj: dict[str, Any]) -> int | None:
    """``usage.prompt_tokens`` of an answer (None: not reported)."""
    usage = obj.get("usage")
    n = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _top_map(top: object) -> dict[str, float] | None:
    """A top-k as token text → logprob: a legacy dict, or a list of ``{token, logprob}`` (the
    first of equal texts kept: the list is best first)."""
    if isinstance(top, dict):
        return {str(t): float(v) for t, v in top.items() if isinstance(v, (int, float))}
    if not isinstance(top, list):
        return None
    out: dict[str, float] = {}
    for e in top:
        if isinstance(e, dict) and isinstance(e.get("logprob"), (int, float)):
            out.setdefault(str(e.get("token")), float(e["logprob"]))
    return out


def generated_entries(choice: dict[str, Any]) -> list[tuple[str, dict[str, float] | None]]:
    """Each generated token's text and top-k map of an unechoed answer, from either shape (the
    legacy ``tokens``/``top_logprobs``, or llama.cpp's ``content`` list); ``NoLogprobs`` if
    the answer has neither."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        raise NoLogprobs("the answer carries no logprobs object")
    content = lp.get("content")
    if isinstance(content, list):
        return [
            (str(e.get("token")), _top_map(e.get("top_logprobs")))
            for e in content
            if isinstance(e, dict)
        ]
    tokens, tops = lp.get("tokens"), lp.get("top_logprobs")
    if not isinstance(tokens, list) or not isinstance(tops, list) or len(tokens) != len(tops):
        raise NoLogprobs("logprobs lacks tokens/top_logprobs of equal length")
    return [(str(t), _top_map(top)) for t, top in zip(tokens, tops)]


@dataclass(frozen=True)
class Continuation:
    """A greedy continuation and its generated tokens' texts (None: the engine named none, or
    they do not join to the text) and ids (None: the engine named none: only llama.cpp's
    ``content`` entries carry an ``id``)."""

    text: str
    tokens: list[str] | None
    ids: list[int] | None = None


async def continue_greedy(client: HttpClient, model: str, prompt: str, tokens: int) -> Continuation:
    """The greedy (T = 0) continuation of ``prompt``, at most ``tokens`` tokens, with its split."""
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": tokens,
        "temperature": 0.0,
        "logprobs": 1,
    }
    choice = choice_of(await post_completion(client, body))
    text = choice.get("text")
    if not isinstance(text, str):
        raise NoLogprobs("the completion carries no text")
    try:
        split: list[str] | None = [t for t, _ in generated_entries(choice)]
    except NoLogprobs:
        split = None
    if split is not None and "".join(split) != text:
        split = None
    return Continuation(text, split, generated_ids(choice) if split is not None else None)


def generated_ids(choice: dict[str, Any]) -> list[int] | None:
    """The generated tokens' ids where the answer names them (llama.cpp's ``content[].id``)."""
    lp = choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, dict) else None
    if not isinstance(content, list):
        return None
    ids = [e.get("id") if isinstance(e, dict) else None for e in content]
    ok = all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
    return [int(i) for i in ids if isinstance(i, int)] if ok and ids else None
