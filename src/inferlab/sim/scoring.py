"""The reference engine's logprob answers (SIMULATED), rendered whole from :mod:`inferlab.sim.lm`.

Completions mirror vLLM's legacy ``logprobs`` object: ``tokens``, ``token_logprobs``,
``top_logprobs`` (token text → logprob: the top ``k`` and the token itself, as vLLM adds the
chosen token) and ``text_offset``. With ``echo`` the prompt's tokens come first, the first of
them with ``null`` logprobs; ``echo`` with ``max_tokens = 0`` scores the prompt alone — vLLM's
teacher-forcing path (``serving_completion``: ``request.echo and request.max_tokens == 0``
returns ``res.prompt_logprobs``). Chat mirrors OpenAI's ``logprobs.content`` list. Every token
after the first carries its leading space, as the generated text does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from inferlab.sim.api import GenRequest, usage_json
from inferlab.sim.lm import StatedModel

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["scored_body"]


def _entries(
    lm: StatedModel, prompt_words: list[str], gen: GenRequest
) -> tuple[list[str], list[float | None], list[dict[str, float] | None], list[int]]:
    """Token texts, their logprobs, the top dicts and the generated ids (prompt first if echo)."""
    vocab = lm.tokenizer.vocab
    k = gen.logprobs or 0
    keys = lm.keys(prompt_words)
    h = lm.start([])
    tokens: list[str] = []
    lps: list[float | None] = []
    tops: list[dict[str, float] | None] = []
    for j, (w, key) in enumerate(zip(prompt_words, keys)):
        if gen.echo:
            text = w if j == 0 else " " + w
            tokens.append(text)
            if j == 0:
                lps.append(None)
                tops.append(None)
            else:
                pos = lm.position(h)
                lp = pos.logprob(key)
                lps.append(lp)
                top = {" " + vocab[i]: v for i, v in pos.top(k)}
                top[text] = lp
                tops.append(top)
        h = lm.step(h, key)
    ids: list[int] = []
    for _ in range(gen.max_tokens):
        pos = lm.position(h)
        w_id = pos.word(0)
        ids.append(w_id)
        text = " " + vocab[w_id]
        lp = pos.logprob(w_id)
        tokens.append(text)
        lps.append(lp)
        tops.append({" " + vocab[i]: v for i, v in pos.top(k)} | {text: lp})
        h = lm.step(h, w_id)
    return tokens, lps, tops, ids


def _offsets(prompt_text: str, tokens: list[str], echoed: int) -> list[int]:
    """``text_offset`` of each token in the answer's text (the prompt's own spacing kept)."""
    out: list[int] = []
    at = 0
    for j, t in enumerate(tokens[:echoed]):
        start = prompt_text.index(t.strip(), at)
        out.append(start - 1 if j and start else start)
        at = start + len(t.strip())
    at = len(prompt_text) if echoed else 0
    for t in tokens[echoed:]:
        out.append(at)
        at += len(t)
    return out


def scored_body(
    lm: StatedModel, gen: GenRequest, rid: str, created: int, model_json: str
) -> tuple[bytes, list[int]]:
    """The whole JSON answer of a request asking for logprobs or echo, and its generated ids."""
    words = gen.prompt_text.split()
    tokens, lps, tops, ids = _entries(lm, words, gen)
    echoed = len(words) if gen.echo else 0
    out_text = "".join(tokens[echoed:])
    text = (gen.prompt_text if gen.echo else "") + out_text
    logprobs: dict[str, Any] | None = None
    if gen.logprobs is not None:
        if gen.endpoint == "chat":
            k = gen.logprobs
            logprobs = {
                "content": [_chat_entry(t, lp, top, k) for t, lp, top in zip(tokens, lps, tops)]
            }
        else:
            logprobs = {
                "tokens": tokens,
                "token_logprobs": lps,
                "top_logprobs": tops,
                "text_offset": _offsets(gen.prompt_text, tokens, echoed),
            }
    if gen.endpoint == "chat":
        obj = "chat.completion"
        choice: dict[str, JsonValue] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
        }
    else:
        obj, choice = "text_completion", {"index": 0, "text": text}
    choice |= {"logprobs": logprobs, "finish_reason": "length"}
    body = (
        f'{{"id":{json.dumps(rid)},"object":"{obj}","created":{created},"model":{model_json},'
        f'"choices":[{json.dumps(choice)}],"usage":{usage_json(gen.prompt_tokens, len(ids))}}}'
    )
    return body.encode(), ids


def _chat_entry(
    token: str, lp: float | None, top: dict[str, float] | None, k: int
) -> dict[str, JsonValue]:
    def one(t: str, v: float) -> dict[str, JsonValue]:
        return {"token": t, "logprob": v, "bytes": list(t.encode())}

    entry = one(token, lp if lp is not None else 0.0)
    entry["top_logprobs"] = [one(t, v) for t, v in list((top or {}).items())[:k]]
    return entry
