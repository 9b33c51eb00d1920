"""Multi-turn sessions in a measuring process: every user's conversation at once, each turn
built from the history when it is due.

A user sends turn ``t`` ``think_s`` seconds after the answer to turn ``t-1`` ended; its prompt is
every earlier user message and answer plus the new message (chat messages, or their texts joined
by newlines on the completions endpoint), so prompts grow turn by turn and a prefix cache can
serve the history. The answer's text is read from the stream as soon as it ends: it is the next
turn's context. A failed turn ends its conversation (the later turns would not be the same
workload); the parent stores what was sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.load.http import Exchange
from inferlab.load.sse import parse_stream

__all__ = ["ChatTarget", "SessionScript", "conversations", "run_sessions", "turn_body"]


@dataclass(slots=True, frozen=True)
class SessionScript:
    """One user's conversation, prepared: its turns' user messages, each turn's request id,
    output length and the engine's fields that fix that length; the think time (s)."""

    session: int
    index0: int  # the global index of its first turn
    messages: tuple[str, ...]
    request_ids: tuple[str, ...]
    output_tokens: tuple[int, ...]
    fixed_fields: tuple[dict[str, Any], ...]
    think_s: float = 0.0


@dataclass(slots=True, frozen=True)
class ChatTarget:
    """Where the turns go: the request path, the model, chat messages or one prompt."""

    path: str
    model: str
    chat: bool


def conversations(
    turns: int,
    think_s: float,
    texts: Sequence[str],
    output_tokens: Sequence[int],
    prefix: str,
    fixed: Callable[[int], dict[str, Any]],
) -> list[SessionScript]:
    """A sessions point's conversations, ``len(texts) // turns`` of ``turns`` turns each,
    ``think_s`` s between an answer and the next turn: user ``u``'s turn ``t`` says
    ``texts[u*T+t]`` and asks for ``output_tokens[u*T+t]`` tokens (``fixed(n)``: the engine's
    fields that force ``n``); request ids ``{prefix}-s{u}t{t}``."""
    users = len(texts) // turns
    out = []
    for u in range(users):
        mine = range(u * turns, (u + 1) * turns)
        out.append(
            SessionScript(
                session=u,
                index0=u * turns,
                messages=tuple(texts[i] for i in mine),
                request_ids=tuple(f"{prefix}-s{u}t{t}" for t in range(turns)),
                output_tokens=tuple(output_tokens[i] for i in mine),
                fixed_fields=tuple(fixed(output_tokens[i]) for i in mine),
                think_s=think_s,
            )
        )
    return out


def turn_body(
    target: ChatTarget, history: Sequence[dict[str, str]], n: int, fixed: dict[str, Any]
) -> bytes:
    """The JSON body of one turn: the history, exactly ``n`` tokens asked, greedy, streamed."""
    body: dict[str, Any] = {"model": target.model}
    if target.chat:
        body["messages"] = list(history)
    else:
        body["prompt"] = "\n".join(m["content"] for m in history)
    body.update(max_tokens=n, temperature=0.0, stream=True)
    body["stream_options"] = {"include_usage": True}
    body.update(fixed)
    return json.dumps(body, separators=(",", ":")).encode()


#: sends turn ``t`` of a conversation with this body; the exchange as received
Send = Callable[[SessionScript, int, bytes], Awaitable[Exchange]]


async def run_sessions(
    scripts: Sequence[SessionScript],
    target: ChatTarget,
    send: Send,
    stopping: Callable[[], bool],
) -> None:
    """Run every conversation to its last turn (or until ``stopping()``)."""

    async def user(sc: SessionScript) -> None:
        history: list[dict[str, str]] = []
        for t, text in enumerate(sc.messages):
            if stopping():
                return
            if t and sc.think_s:
                await asyncio.sleep(sc.think_s)
            history.append({"role": "user", "content": text})
            ex = await send(
                sc, t, turn_body(target, history, sc.output_tokens[t], sc.fixed_fields[t])
            )
            if ex.error_kind is not None or not 200 <= ex.status < 300:
                return
            parsed = parse_stream(ex.pieces, ex.end_ns)
            if parsed.error_kind is not None or not parsed.event_ns:
                return
            history.append({"role": "assistant", "content": "".join(parsed.texts)})

    await asyncio.gather(*(user(sc) for sc in scripts))
