"""The OpenAI/vLLM wire format of the reference engine: request validation and rendering.

Pure functions: nothing here touches a socket or a clock. Every body is rendered once per
request, so the pacing path only writes bytes it was handed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from inferlab.sim.lm import MAX_LOGPROBS
from inferlab.sim.tokenizer import WordTokenizer

__all__ = [
    "ApiError",
    "GenRequest",
    "Rendered",
    "error_body",
    "not_found_model",
    "parse_generation",
    "parse_tokenize",
    "render",
]

Endpoint = Literal["completions", "chat"]
DEFAULT_MAX_TOKENS = 16
_DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True, slots=True)
class ApiError:
    """An error answer in vLLM's shape."""

    status: int
    message: str
    type: str = "BadRequestError"
    param: str | None = None

    def body(self) -> bytes:
        return error_body(self.status, self.message, self.type, self.param)


@dataclass(frozen=True, slots=True)
class GenRequest:
    """A validated completions or chat request."""

    endpoint: Endpoint
    stream: bool
    include_usage: bool
    max_tokens: int
    prompt_text: str
    prompt_tokens: int
    #: top logprobs per position asked (completions ``logprobs``, chat ``top_logprobs``)
    logprobs: int | None = None
    #: completions ``echo``: the prompt's tokens (and their logprobs) come back first
    echo: bool = False


@dataclass(frozen=True, slots=True)
class Rendered:
    """Every byte of one answer, rendered in advance.

    ``head`` is written at receipt (status line and headers, plus the chat role event; empty
    when not streaming); ``frames[i]`` carries token chunk ``i``; the last frame also ends the
    answer. Non-streaming answers are one frame (headers and body) with all the tokens.
    """

    head: bytes
    frames: list[bytes]
    ntokens: list[int]


def error_body(status: int, message: str, type_: str, param: str | None = None) -> bytes:
    err = {"message": message, "type": type_, "param": param, "code": status}
    return json.dumps({"error": err}).encode()


def not_found_model(model: str) -> ApiError:
    return ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")


def _bad(message: str, param: str | None) -> ApiError:
    return ApiError(400, message, "BadRequestError", param)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def load_object(body: bytes) -> dict[str, Any] | ApiError:
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return _bad(f"Invalid JSON body: {exc}", "body")
    if not isinstance(obj, dict):
        return _bad("The request body must be a JSON object.", "body")
    return obj


def _message_text(messages: object, tok: WordTokenizer) -> tuple[str, int] | ApiError:
    if not isinstance(messages, list) or not messages:
        return _bad("`messages` must be a non-empty list of messages.", "messages")
    texts: list[str] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            return _bad(f"`messages[{i}]` must be an object with a string `role`.", "messages")
        content = msg.get("content")
        if content is None:
            continue
        if isinstance(content, str):
            texts.append(content)
            continue
        if not isinstance(content, list):
            return _bad(f"`messages[{i}].content` must be a string or a list of parts.", "messages")
        for part in content:
            if (
                not isinstance(part, dict)
                or part.get("type") != "text"
                or not isinstance(part.get("text"), str)
            ):
                return _bad(
                    f"`messages[{i}].content` parts must be {{'type': 'text', 'text': str}}.",
                    "messages",
                )
            texts.append(part["text"])
    return "\n".join(texts), sum(tok.count(t) for t in texts)


def _prompt_text(prompt: object, tok: WordTokenizer) -> tuple[str, int] | ApiError:
    """A string, a list of token ids, or (llama.cpp's mixed prompt) a string then ids."""
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        return prompt, tok.count(prompt)
    head = ""
    if isinstance(prompt, list) and len(prompt) > 1 and isinstance(prompt[0], str):
        head, prompt = prompt[0], prompt[1:]
    if isinstance(prompt, list) and prompt and all(_is_int(t) for t in prompt):
        top = tok.vocab_size
        if any(t < 0 or t >= top for t in prompt):
            return _bad(f"`prompt` token ids must be in [0, {top}).", "prompt")
        text = tok.decode(prompt)
        return (f"{head} {text}" if head else text), tok.count(head) + len(prompt)
    return _bad("`prompt` must be a string or a non-empty list of token ids.", "prompt")


def parse_generation(
    endpoint: Endpoint, obj: dict[str, Any], model: str, max_model_len: int, tok: WordTokenizer
) -> GenRequest | ApiError:
    """Validate a completions/chat body (unsupported sampling fields are accepted and ignored)."""
    req_model = obj.get("model")
    if req_model is not None:
        if not isinstance(req_model, str):
            return _bad("`model` must be a string.", "model")
        if req_model != model:
            return not_found_model(req_model)
    if endpoint == "chat":
        got = _message_text(obj.get("messages"), tok)
    elif "prompt" not in obj:
        return _bad("`prompt` is required.", "prompt")
    else:
        got = _prompt_text(obj["prompt"], tok)
    if isinstance(got, ApiError):
        return got
    text, ntok = got
    lp = _logprob_fields(endpoint, obj)
    if isinstance(lp, ApiError):
        return lp
    logprobs, echo = lp
    max_tokens = _max_tokens(endpoint, obj, echo)
    if isinstance(max_tokens, ApiError):
        return max_tokens
    n = obj.get("n")
    if n is not None and n != 1:
        return _bad("`n` must be 1 on the simulated engine.", "n")
    streaming = _stream_fields(obj)
    if isinstance(streaming, ApiError):
        return streaming
    stream, include_usage = streaming
    if stream and (logprobs is not None or echo):
        return _bad("The SIMULATED engine serves logprobs and echo unstreamed only.", "stream")
    if ntok + max_tokens > max_model_len:
        return _bad(
            f"This model's maximum context length is {max_model_len} tokens. However, you "
            f"requested {ntok + max_tokens} tokens ({ntok} in the messages, {max_tokens} in "
            "the completion). Please reduce the length of the messages or completion.",
            "messages" if endpoint == "chat" else "prompt",
        )
    return GenRequest(endpoint, stream, include_usage, max_tokens, text, ntok, logprobs, echo)


def _max_tokens(endpoint: Endpoint, obj: dict[str, Any], echo: bool) -> int | ApiError:
    """``max_tokens`` (chat: ``max_completion_tokens`` wins); 0 only with ``echo`` (vLLM)."""
    field = "max_tokens"
    max_tokens: object = obj.get("max_tokens")
    if endpoint == "chat" and obj.get("max_completion_tokens") is not None:
        field, max_tokens = "max_completion_tokens", obj["max_completion_tokens"]
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS
    least = 0 if echo else 1
    if not _is_int(max_tokens) or max_tokens < least:  # type: ignore[operator]
        return _bad(f"`{field}` must be an integer of at least {least}.", field)
    assert isinstance(max_tokens, int)
    return max_tokens


def _stream_fields(obj: dict[str, Any]) -> tuple[bool, bool] | ApiError:
    """``stream`` and ``stream_options.include_usage``."""
    stream = obj.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        return _bad("`stream` must be a boolean.", "stream")
    options = obj.get("stream_options")
    if options is None:
        return stream, False
    if not stream:
        return _bad("Stream options can only be defined when `stream=True`.", "stream_options")
    if not isinstance(options, dict):
        return _bad("`stream_options` must be an object.", "stream_options")
    usage = options.get("include_usage", False)
    if not isinstance(usage, bool) and usage is not None:
        return _bad("`stream_options.include_usage` must be a boolean.", "stream_options")
    return stream, bool(usage)


def _logprob_fields(endpoint: Endpoint, obj: dict[str, Any]) -> tuple[int | None, bool] | ApiError:
    """Completions: ``logprobs`` (an int, 0..20) and ``echo``; chat: ``logprobs`` (a bool) and
    ``top_logprobs`` (0..20). Returns the top count asked (None: no logprobs) and echo."""
    top = MAX_LOGPROBS
    if endpoint == "chat":
        want = obj.get("logprobs")
        k: object = obj.get("top_logprobs")
        if want is not None and not isinstance(want, bool):
            return _bad("`logprobs` must be a boolean.", "logprobs")
        if k is not None and not want:
            return _bad("`top_logprobs` needs `logprobs` = true.", "top_logprobs")
        if not want:
            return None, False
        k = 0 if k is None else k
        field = "top_logprobs"
    else:
        k, field = obj.get("logprobs"), "logprobs"
    echo = obj.get("echo", False) if endpoint == "completions" else False
    if not isinstance(echo, bool) and echo is not None:
        return _bad("`echo` must be a boolean.", "echo")
    if k is None:
        return None, bool(echo)
    if not _is_int(k) or not 0 <= k <= top:  # type: ignore[operator]
        return _bad(f"`{field}` must be an integer in [0, {top}].", field)
    assert isinstance(k, int)
    return k, bool(echo)


def parse_tokenize(obj: dict[str, Any], max_model_len: int, tok: WordTokenizer) -> bytes | ApiError:
    """vLLM's ``/tokenize``: ``{"prompt": str}`` or ``{"messages": [...]}``."""
    if "messages" in obj:
        got = _message_text(obj["messages"], tok)
        if isinstance(got, ApiError):
            return got
        ids = tok.encode(got[0])
    elif isinstance(obj.get("prompt"), str):
        ids = tok.encode(obj["prompt"])
    else:
        return _bad("`prompt` (a string) or `messages` is required.", "prompt")
    add = obj.get("add_special_tokens", True)
    if not isinstance(add, bool):
        return _bad("`add_special_tokens` must be a boolean.", "add_special_tokens")
    return json.dumps({"tokens": ids, "count": len(ids), "max_model_len": max_model_len}).encode()


def chunk_sizes(n: int, k: int) -> list[int]:
    """Tokens per chunk: the first carries 1 token, later ones ``k`` (the last may carry fewer)."""
    sizes = [1]
    left = n - 1
    while left > 0:
        take = k if left >= k else left
        sizes.append(take)
        left -= take
    return sizes


def _frame(event: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(event), event)


def usage_json(prompt_tokens: int, completion_tokens: int) -> str:
    """An answer's ``usage`` object."""
    return (
        f'{{"prompt_tokens":{prompt_tokens},"total_tokens":'
        f'{prompt_tokens + completion_tokens},"completion_tokens":{completion_tokens}}}'
    )


@dataclass(frozen=True)
class StreamParts:
    """The fixed bytes of one streamed answer: a token event is ``pre + text + mid`` and its
    finish reason; ``role`` is written before the first token (chat, else empty), ``tail``
    after the last one (the usage event when asked, ``[DONE]``, the end of the body)."""

    pre: bytes
    mid: bytes
    role: bytes
    tail: bytes


def stream_parts(
    req: GenRequest, rid: str, created: int, model_json: str, reported: int | None = None
) -> StreamParts:
    """The :class:`StreamParts` of ``req``'s answer (``reported``: see :func:`render`)."""
    obj = "chat.completion.chunk" if req.endpoint == "chat" else "text_completion"
    common = (
        f'data: {{"id":{json.dumps(rid)},"object":"{obj}","created":{created},"model":{model_json},'
    )
    role = b""
    if req.endpoint == "chat":
        pre = (common + '"choices":[{"index":0,"delta":{"content":"').encode()
        mid = b'"},"logprobs":null,"finish_reason":'
        role = _frame(
            (
                common + '"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
                '"logprobs":null,"finish_reason":null}]}\n\n'
            ).encode()
        )
    else:
        pre = (common + '"choices":[{"index":0,"text":"').encode()
        mid = b'","logprobs":null,"finish_reason":'
    tail = b""
    if req.include_usage:
        n = req.max_tokens if reported is None else reported
        usage = usage_json(req.prompt_tokens, n)
        tail = _frame((common + f'"choices":[],"usage":{usage}}}\n\n').encode())
    return StreamParts(pre, mid, role, tail + _frame(_DONE) + b"0\r\n\r\n")


def _render_whole(
    req: GenRequest, rid: str, created: int, model_json: str, text: bytes, usage: str
) -> bytes:
    """The JSON body of a non-streaming answer."""
    content = json.dumps(text.decode())
    if req.endpoint == "chat":
        choice = f'{{"index":0,"message":{{"role":"assistant","content":{content}}},'
        obj = "chat.completion"
    else:
        choice = f'{{"index":0,"text":{content},'
        obj = "text_completion"
    return (
        f'{{"id":{json.dumps(rid)},"object":"{obj}","created":{created},"model":{model_json},'
        f'"choices":[{choice}"logprobs":null,"finish_reason":"length"}}],"usage":{usage}}}'
    ).encode()


def render(
    req: GenRequest,
    rid: str,
    created: int,
    model_json: str,
    words: Sequence[bytes],
    ids: Sequence[int],
    k: int,
    head: bytes,
    reported: int | None = None,
) -> Rendered:
    """Render every write of one answer. ``words[i]`` is ``b" " + vocab[i]`` (ASCII letters);
    ``reported``: the ``usage.completion_tokens`` to claim (default: the tokens sent)."""
    if not req.stream:
        n = req.max_tokens if reported is None else reported
        text = b"".join([words[i] for i in ids])
        body = _render_whole(req, rid, created, model_json, text, usage_json(req.prompt_tokens, n))
        return Rendered(b"", [head % len(body) + body], [len(ids)])
    parts = stream_parts(req, rid, created, model_json, reported)
    pre, mid = parts.pre, parts.mid
    post = mid + b"null}]}\n\n"
    base = len(pre) + len(post)
    sizes = chunk_sizes(len(ids), k)
    if k == 1:
        texts = [words[i] for i in ids]
    else:
        texts = [words[ids[0]]]
        texts += [b"".join([words[i] for i in ids[p : p + k]]) for p in range(1, len(ids), k)]
    frames = [b"%x\r\n%s%s%s\r\n" % (base + len(t), pre, t, post) for t in texts]
    frames[-1] = _frame(b'%s%s%s"length"}]}\n\n' % (pre, texts[-1], mid)) + parts.tail
    return Rendered(head + parts.role, frames, sizes)
