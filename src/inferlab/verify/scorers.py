"""Teacher-forced top-k logprobs, one scorer per engine mechanism (``EngineSpec.teacher_forcing``
names which). Each returns the top-k map (token text → logprob, nats) of every continuation
position of ``prompt + continuation``.

- ``echo`` (vLLM): one request, ``echo = true, max_tokens = 0, logprobs = k``; vLLM answers it
  with the prompt's own top-k (``serving_completion``: ``request.echo and request.max_tokens
  == 0`` returns ``res.prompt_logprobs``). The scored positions are the tokens whose
  ``text_offset`` is at or past the prompt's end.
- ``stepwise`` (SGLang: its echo gives no usable prompt logprobs, docs/verify.md): for each
  continuation token ``t = 0..n-1``, one request of ``prompt + tokens[:t]`` with
  ``max_tokens = 1, temperature = 0, logprobs = k``, read from the one generated position.
  ``n`` requests per prompt; the engine re-tokenizes each text prefix, which may not split
  where the generated tokens did, so each step's ``usage.prompt_tokens`` must be the first
  step's plus ``t`` — else ``NoLogprobs`` rather than comparing the wrong positions.
- ``stepwise-ids`` (llama.cpp, which ignores echo): the same steps, each prompt
  ``[prompt, *ids[:t]]`` — llama.cpp's mixed prompt tokenizes the string and appends the
  generated ids as they are (``server-common.cpp`` ``tokenize_mixed``), so nothing is
  re-tokenized.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from inferlab.errors import lookup
from inferlab.load.http import HttpClient
from inferlab.verify.logprobs import (
    Continuation,
    NoLogprobs,
    choice_of,
    generated_entries,
    post_completion,
    prompt_tokens,
)

__all__ = [
    "SCORERS",
    "Scorer",
    "echo_positions",
    "get_scorer",
    "score_echo",
    "score_stepwise",
    "score_stepwise_ids",
    "step_top",
]

#: ``(client, model, prompt, the continuation with its split, k)`` → per-position maps
Scorer = Callable[[HttpClient, str, str, Continuation, int], Awaitable[list[dict[str, float]]]]


async def score_echo(
    client: HttpClient, model: str, prompt: str, forced: Continuation, top_k: int
) -> list[dict[str, float]]:
    """The top-k map of every continuation position, teacher forced (echo, max_tokens = 0)."""
    continuation = forced.text
    body = {
        "model": model,
        "prompt": prompt + continuation,
        "max_tokens": 0,
        "echo": True,
        "logprobs": top_k,
        "temperature": 0.0,
    }
    return echo_positions(choice_of(await post_completion(client, body)), len(prompt), continuation)


def echo_positions(
    choice: dict[str, object], prompt_len: int, continuation: str
) -> list[dict[str, float]]:
    """The maps of an echo answer's positions at or past ``prompt_len`` (characters)."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        raise NoLogprobs("echo with logprobs answered without a logprobs object")
    tops, offsets = lp.get("top_logprobs"), lp.get("text_offset")
    if not isinstance(tops, list) or not isinstance(offsets, list) or len(tops) != len(offsets):
        raise NoLogprobs("logprobs lacks top_logprobs/text_offset of equal length")
    out = [
        {str(t): float(v) for t, v in top.items()}
        for top, at in zip(tops, offsets)
        if isinstance(at, int) and at >= prompt_len and isinstance(top, dict) and top
    ]
    if continuation.strip() and not out:
        raise NoLogprobs("no scored position past the prompt (echo returned no prompt logprobs)")
    return out


async def score_stepwise(
    client: HttpClient, model: str, prompt: str, forced: Continuation, top_k: int
) -> list[dict[str, float]]:
    """Every continuation position, one ``max_tokens = 1`` request of ``prompt + tokens[:t]``
    (text) each."""
    tokens = forced.tokens
    if tokens is None:
        raise NoLogprobs(
            "the stepwise scorer needs the reference's continuation tokens, which this stored "
            "reference lacks (measure the reference config again)"
        )
    if "".join(tokens) != forced.text:
        raise NoLogprobs("the reference's continuation tokens do not join to its text")
    steps: list[str | list[str | int]] = [prompt + "".join(tokens[:t]) for t in range(len(tokens))]
    return await _stepwise(client, model, steps, top_k)


async def score_stepwise_ids(
    client: HttpClient, model: str, prompt: str, forced: Continuation, top_k: int
) -> list[dict[str, float]]:
    """Every continuation position, one ``max_tokens = 1`` request of ``[prompt, *ids[:t]]``
    each (llama.cpp's mixed prompt: the text tokenized, the ids appended as they are)."""
    ids = forced.ids
    if ids is None:
        raise NoLogprobs(
            "the stepwise-ids scorer needs the reference's continuation token ids, which this "
            "stored reference lacks (measure the reference config again, on an engine that "
            "names them)"
        )
    steps: list[str | list[str | int]] = [prompt] + [[prompt, *ids[:t]] for t in range(1, len(ids))]
    return await _stepwise(client, model, steps, top_k)


async def _stepwise(
    client: HttpClient, model: str, steps: Sequence[str | list[str | int]], top_k: int
) -> list[dict[str, float]]:
    """The top-k of the one generated position of each step's prompt; step ``t``'s prompt must
    come to the first's token count plus ``t`` (``usage.prompt_tokens``)."""
    out: list[dict[str, float]] = []
    first: int | None = None
    for t, step in enumerate(steps):
        body = {
            "model": model,
            "prompt": step,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": top_k,
        }
        obj = await post_completion(client, body)
        n = prompt_tokens(obj)
        if n is None:
            raise NoLogprobs("no usage.prompt_tokens: the prefix's tokenization cannot be checked")
        first = n if first is None else first
        if n != first + t:
            raise NoLogprobs(
                f"step {t}: the prefix came to {n} prompt tokens, not {first + t} "
                "(it does not split where the generated tokens did)"
            )
        out.append(step_top(choice_of(obj), t))
    return out


def step_top(choice: dict[str, object], t: int = 0) -> dict[str, float]:
    """The top-k map of the one generated position of a ``max_tokens = 1`` answer."""
    entries = generated_entries(dict(choice))
    if len(entries) != 1 or not entries[0][1]:
        raise NoLogprobs(f"step {t}: {len(entries)} generated positions with logprobs, not 1")
    top = entries[0][1]
    assert top is not None
    return top


SCORERS: dict[str, Scorer] = {
    "echo": score_echo,
    "stepwise": score_stepwise,
    "stepwise-ids": score_stepwise_ids,
}


def get_scorer(name: str) -> Scorer:
    """The scorer called ``name``; ``ConfigError`` naming the known ones otherwise."""
    return lookup(SCORERS, name, "unknown teacher-forcing scorer {name} (known: {known})")
