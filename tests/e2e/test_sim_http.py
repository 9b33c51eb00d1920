"""The reference engine's HTTP surface: vLLM-shaped formats, errors and keep-alive."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from inferlab.sim.tokenizer import WordTokenizer
from support.cli import Cli
from support.simproc import (
    SimProc,
    dechunk,
    post_stream,
    raw_connect,
    raw_post,
    recv_until,
    split_response,
    sse_events,
    start_sim,
)

pytestmark = pytest.mark.timeout(60)

MODEL = "inferlab-sim"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProc]:
    with start_sim("--ttft-ms", "5", "--itl-ms", "1") as s:
        yield s


@pytest.fixture(scope="module")
def sim_k4() -> Iterator[SimProc]:
    with start_sim("--ttft-ms", "5", "--itl-ms", "1", "--tokens-per-chunk", "4") as s:
        yield s


def _token_text(event: dict[str, object], chat: bool) -> str:
    choice = event["choices"][0]  # type: ignore[index]
    return str(choice["delta"].get("content", "") if chat else choice["text"])


def test_health_and_models(sim: SimProc) -> None:
    status, body = sim.request("GET", "/health")
    assert status == 200 and body in (b"", b"{}")
    status, body = sim.request("GET", "/v1/models")
    assert status == 200
    models = json.loads(body)
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == [MODEL]


def test_stream_completions_is_valid_sse(sim: SimProc) -> None:
    status, headers, events = post_stream(
        sim,
        "/v1/completions",
        {"model": MODEL, "prompt": "baba bebe", "max_tokens": 7, "stream": True},
    )
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["transfer-encoding"] == "chunked"
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert len(chunks) == 7
    for c in chunks:
        assert c["object"] == "text_completion" and c["model"] == MODEL
        assert c["id"].startswith("cmpl-")
        assert set(c["choices"][0]) == {"index", "text", "logprobs", "finish_reason"}
        assert "usage" not in c
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * 6 + ["length"]
    text = "".join(_token_text(c, chat=False) for c in chunks)
    assert text.startswith(" ") and len(text.split()) == 7


def test_stream_chat_role_first_and_usage_when_asked(sim: SimProc) -> None:
    body = {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "baba bebe"},
            {"role": "user", "content": [{"type": "text", "text": "bibi bobo bubu"}]},
        ],
        "max_completion_tokens": 5,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    status, _, events = post_stream(sim, "/v1/chat/completions", body)
    assert status == 200 and events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    first = chunks[0]
    assert first["object"] == "chat.completion.chunk"
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    usage = chunks[-1]
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
    tokens = chunks[1:-1]
    assert len(tokens) == 5
    assert all(set(c["choices"][0]["delta"]) == {"content"} for c in tokens)
    assert tokens[-1]["choices"][0]["finish_reason"] == "length"
    assert all("usage" not in c for c in chunks[:-1])

    body["stream_options"] = {"include_usage": False}
    _, _, events = post_stream(sim, "/v1/chat/completions", body)
    assert all("usage" not in json.loads(e) for e in events[:-1])


def test_tokens_per_chunk(sim_k4: SimProc) -> None:
    sim_k4.clear_truth()
    for path, chat in (("/v1/completions", False), ("/v1/chat/completions", True)):
        body: dict[str, object] = {"model": MODEL, "max_tokens": 11, "stream": True}
        if chat:
            body["messages"] = [{"role": "user", "content": "baba"}]
        else:
            body["prompt"] = "baba"
        _, _, events = post_stream(sim_k4, path, body)
        chunks = [json.loads(e) for e in events[:-1]]
        if chat:
            chunks = chunks[1:]  # the role-only event carries no token
        sizes = [len(_token_text(c, chat).split()) for c in chunks]
        assert sizes == [1, 4, 4, 2]
    truth = sim_k4.truth()
    assert [[c[2] for c in r["chunks"]] for r in truth] == [[1, 4, 4, 2]] * 2


def test_output_is_deterministic(sim: SimProc) -> None:
    def text(prompt: str, stream: bool) -> str:
        body = {"model": MODEL, "prompt": prompt, "max_tokens": 9, "stream": stream}
        if stream:
            _, _, events = post_stream(sim, "/v1/completions", body)
            return "".join(_token_text(json.loads(e), chat=False) for e in events[:-1])
        status, raw = sim.request("POST", "/v1/completions", body)
        assert status == 200
        reply = json.loads(raw)
        assert reply["choices"][0]["finish_reason"] == "length"
        assert reply["usage"]["completion_tokens"] == 9
        return str(reply["choices"][0]["text"])

    a = text("baba bebe bibi", stream=True)
    assert a == text("baba bebe bibi", stream=True) == text("baba bebe bibi", stream=False)
    assert a != text("baba bebe bobo", stream=True)
    words = set(WordTokenizer().vocab)
    assert all(w in words for w in a.split())


def test_chat_non_stream(sim: SimProc) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "baba"}], "max_tokens": 3}
    status, raw = sim.request("POST", "/v1/chat/completions", body)
    assert status == 200
    reply = json.loads(raw)
    assert reply["object"] == "chat.completion"
    assert reply["choices"][0]["message"]["role"] == "assistant"
    assert len(reply["choices"][0]["message"]["content"].split()) == 3
    assert reply["usage"] == {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4}


def test_prompt_as_token_ids(sim: SimProc) -> None:
    status, raw = sim.request(
        "POST", "/v1/completions", {"model": MODEL, "prompt": [1, 2, 3, 4], "max_tokens": 2}
    )
    assert status == 200
    assert json.loads(raw)["usage"]["prompt_tokens"] == 4


def test_tokenize_matches_word_and_hf_tokenizer(cli: Cli, sim: SimProc, tmp_path: Path) -> None:
    tok = WordTokenizer()
    text = "baba bebe zzz " + tok.decode(list(range(1, 60)))
    status, raw = sim.request("POST", "/tokenize", {"model": MODEL, "prompt": text})
    assert status == 200
    reply = json.loads(raw)
    assert reply["tokens"] == tok.encode(text)
    assert reply["count"] == tok.count(text) == 62
    assert reply["max_model_len"] == 32768

    out = tmp_path / "tok"
    done = cli("sim", "tokenizer", str(out))
    assert done.exit_code == 0, done.stderr
    hf = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert len(hf.encode(text, add_special_tokens=True).ids) == reply["count"]
    assert hf.encode(text).ids == reply["tokens"]

    msgs = {
        "messages": [{"role": "user", "content": "baba bebe"}, {"role": "user", "content": "x"}]
    }
    status, raw = sim.request("POST", "/tokenize", msgs)
    assert status == 200 and json.loads(raw)["count"] == 3


def _error(raw: bytes) -> dict[str, object]:
    err = json.loads(raw)["error"]
    assert set(err) == {"message", "type", "param", "code"}
    return dict(err)


def test_wrong_model_is_404_in_vllm_shape(sim: SimProc) -> None:
    status, raw = sim.request(
        "POST", "/v1/completions", {"model": "gpt-9", "prompt": "baba", "max_tokens": 2}
    )
    assert status == 404
    err = _error(raw)
    assert err == {
        "message": "The model `gpt-9` does not exist.",
        "type": "NotFoundError",
        "param": "model",
        "code": 404,
    }


def test_bad_json_and_bad_fields_are_400(sim: SimProc) -> None:
    status, raw = sim.request("POST", "/v1/completions", b'{"prompt": "baba",')
    assert status == 400
    err = _error(raw)
    assert err["code"] == 400 and "JSON" in str(err["message"]) and err["param"] == "body"

    bad = {"model": MODEL, "prompt": "baba", "max_tokens": -3}
    status, raw = sim.request("POST", "/v1/completions", bad)
    assert status == 400 and _error(raw)["param"] == "max_tokens"
    assert "max_tokens" in str(_error(raw)["message"])

    status, raw = sim.request("POST", "/v1/completions", {"model": MODEL, "max_tokens": 2})
    assert status == 400 and _error(raw)["param"] == "prompt"

    bad = {"model": MODEL, "messages": "hi"}
    status, raw = sim.request("POST", "/v1/chat/completions", bad)
    assert status == 400 and _error(raw)["param"] == "messages"

    bad = {"model": MODEL, "prompt": "baba", "stream": "yes"}
    status, raw = sim.request("POST", "/v1/completions", bad)
    assert status == 400 and _error(raw)["param"] == "stream"


def test_unknown_path_is_404_json(sim: SimProc) -> None:
    status, raw = sim.request("GET", "/v2/nothing")
    assert status == 404
    json.loads(raw)
    status, _ = sim.request("GET", "/v1/completions")
    assert status == 405


def test_keep_alive_two_requests_on_one_socket(sim: SimProc) -> None:
    conn = http.client.HTTPConnection(sim.host, sim.port, timeout=10)
    try:
        ports = []
        for _ in range(2):
            body = json.dumps({"model": MODEL, "prompt": "baba", "max_tokens": 3, "stream": True})
            conn.request("POST", "/v1/completions", body=body)
            resp = conn.getresponse()
            events = sse_events(resp.read())
            assert resp.status == 200 and events[-1] == "[DONE]"
            assert conn.sock is not None
            ports.append(conn.sock.getsockname()[1])
        assert ports[0] == ports[1]
    finally:
        conn.close()

    # Connection: close is honoured: the server closes after the answer
    with raw_connect(sim) as sock:
        sock.sendall(
            raw_post(
                "/v1/completions", {"prompt": "baba", "max_tokens": 2}, {"Connection": "close"}
            )
        )
        raw = recv_until(sock, b"\x00never", timeout=5.0)
    status, headers, body = split_response(raw)
    assert status == 200 and headers["connection"] == "close"
    assert len(body) == int(headers["content-length"])


def test_pipelined_requests_answered_in_order(sim: SimProc) -> None:
    with raw_connect(sim) as sock:
        req = raw_post("/v1/completions", {"prompt": "baba", "max_tokens": 2, "stream": True})
        sock.sendall(req + req)
        raw = recv_until(sock, b"[DONE]", timeout=5.0)
        raw += recv_until(sock, b"0\r\n\r\nHTTP/1.1", timeout=0.1)
        raw += recv_until(sock, b"[DONE]", timeout=5.0)
    first, _, second = raw.partition(b"0\r\n\r\nHTTP/1.1")
    assert dechunk(split_response(first + b"0\r\n\r\n")[2])[1]
    assert b"[DONE]" in second
