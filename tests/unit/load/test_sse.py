"""SSE parsing after the fact: which events carry tokens, and when they arrived."""

from __future__ import annotations

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from inferlab.load.sse import error_message_of, parse_stream
from inferlab.records import ErrorKind
from inferlab.sim import api
from inferlab.sim.tokenizer import WordTokenizer
from support.fuzzing import (
    byte_mutation,
    fuzz,
    hard_limit,
)


def ev(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def chat(content: str | None = None, role: str | None = None, **extra: object) -> bytes:
    delta: dict[str, object] = {}
    if role:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    delta.update(extra)
    return ev({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})


def test_role_only_and_empty_chunks_do_not_count() -> None:
    pieces = [
        (100, chat("", role="assistant")),
        (200, chat("")),
        (300, chat(" hello")),
        (400, chat(" world")),
        (
            500,
            ev({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
            + b"data: [DONE]\n\n",
        ),
    ]
    p = parse_stream(pieces, 500)
    assert p.event_ns == [300, 400]
    assert p.texts == [" hello", " world"]
    assert p.usage_completion_tokens == 2 and p.usage_prompt_tokens == 3
    assert p.saw_done and p.error_kind is None


def test_reasoning_content_counts_as_output() -> None:
    p = parse_stream([(10, chat(None, reasoning_content="think")), (20, chat("answer"))], 20)
    assert p.event_ns == [10, 20]


def test_event_time_is_the_read_that_completed_it() -> None:
    body = ev({"choices": [{"text": " a"}]}) + ev({"choices": [{"text": " b"}]})
    cut1 = 10  # inside the first event
    cut2 = body.index(b"\n\n") + 1  # between the two newlines ending the first event
    pieces = [(1, body[:cut1]), (2, body[cut1:cut2]), (3, body[cut2:])]
    p = parse_stream(pieces, 3)
    assert p.event_ns == [3, 3]  # the first event's blank line completed in read 3
    pieces = [(1, body[: cut2 + 1]), (2, body[cut2 + 1 :])]
    assert parse_stream(pieces, 2).event_ns == [1, 2]


def test_crlf_events_and_finish_reason() -> None:
    body = (
        b'data: {"choices":[{"text":" x","finish_reason":null}]}\r\n\r\n'
        b'data: {"choices":[{"text":" y","finish_reason":"length"}]}\r\n\r\n'
        b"data: [DONE]\r\n\r\n"
    )
    p = parse_stream([(5, body)], 5)
    assert p.texts == [" x", " y"] and p.finish_reason == "length" and p.saw_done


def test_malformed_event_is_classified() -> None:
    p = parse_stream([(1, ev({"choices": [{"text": " a"}]})), (2, b"data: {not json\n\n")], 2)
    assert p.error_kind is ErrorKind.MALFORMED
    assert "not json" in (p.error_message or "")
    assert p.event_ns == [1]


def test_in_stream_error_event() -> None:
    p = parse_stream([(1, ev({"error": {"message": "engine died", "code": 500}}))], 1)
    assert p.error_kind is ErrorKind.HTTP
    assert "engine died" in (p.error_message or "")


def test_non_streamed_json_body_is_one_event_at_the_end() -> None:
    body = json.dumps(
        {
            "choices": [{"text": "whole answer", "finish_reason": "stop"}],
            "usage": {"completion_tokens": 2},
        }
    ).encode()
    p = parse_stream([(7, body[:5]), (9, body[5:])], 9)
    assert p.event_ns == [9] and p.usage_completion_tokens == 2


def test_error_message_shapes() -> None:
    assert error_message_of({"error": {"message": "m1"}}) == "m1"
    assert error_message_of({"message": "m2"}) == "m2"
    assert error_message_of({"detail": "m3"}) == "m3"
    assert error_message_of({"error": "m4"}) == "m4"
    assert error_message_of(None, "fallback") == "fallback"


def test_event_end_finds_terminators_across_reads() -> None:
    from inferlab.load.sse import event_end

    assert event_end(b"", b"data: a\n\ndata: b") == 9
    assert event_end(b"", b"data: a\r\n\r\nx") == 11
    assert event_end(b"", b"data: a") == 0
    assert event_end(b"a\n", b"\nrest") == 1  # "\n" + "\n" straddling two reads
    assert event_end(b"\r\n", b"\r\nrest") == 2  # "\r\n" + "\r\n"
    assert event_end(b"\n\n", b"rest") == 0  # that terminator was counted with its own read


# --- fuzzing: the SSE decoder never raises (settings: tests/support/fuzzing.py)


# ----------------------------------------------------------------------------- SSE decoder


def _sse_seeds() -> list[bytes]:
    """De-chunked SSE bodies as the reference engine writes them (vLLM's wire format):
    completions and chat, with usage, 1 and 3 tokens per event."""
    tok = WordTokenizer()
    words = [b" " + w.encode() for w in tok.vocab]
    out = []
    for endpoint in ("completions", "chat"):
        for k in (1, 3):
            req = api.GenRequest(endpoint, True, True, 6, "hello there", 2)  # type: ignore[arg-type]
            r = api.render(req, "cmpl-1", 0, '"m"', words, [5, 6, 7, 8, 9, 10], k, b"")
            raw = r.head + b"".join(r.frames)
            body, pos = b"", 0
            while True:  # de-chunk
                eol = raw.index(b"\r\n", pos)
                size = int(raw[pos:eol], 16)
                if size == 0:
                    break
                body += raw[eol + 2 : eol + 2 + size]
                pos = eol + 4 + size
            out.append(body)
    return out


SSE = _sse_seeds()


@fuzz(400, deadline_ms=500)
@given(data=st.data())
def test_sse_decoder_never_raises(data: st.DataObject) -> None:
    """Any body, cut into any reads: a result (faults recorded on it), never an exception."""
    if data.draw(st.integers(0, 3)) == 0:
        body = data.draw(st.binary(max_size=2048))
    else:
        body = data.draw(byte_mutation(data.draw(st.sampled_from(SSE))))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(body)), max_size=12))))
    bounds = [0, *cuts, len(body)]
    pieces = [(1000 + i, body[a:b]) for i, (a, b) in enumerate(itertools.pairwise(bounds)) if b > a]
    with hard_limit():
        out = parse_stream(pieces, 10_000)
    assert len(out.event_ns) == len(out.texts)
    assert out.event_ns == sorted(out.event_ns)
    assert (out.error_kind is None) == (out.error_message is None)
