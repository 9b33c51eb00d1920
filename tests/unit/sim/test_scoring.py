"""Logprobs over HTTP: generation's logprobs are the stated model's, and teacher forcing
(``echo`` with ``max_tokens = 0``, vLLM's path) scores a given text with the same numbers."""

from __future__ import annotations

import json
import math

from support.simproc import SimFactory

FAST = ("--ttft-ms", "0", "--itl-ms", "0")


def _post(sim: object, path: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
    status, raw = sim.request("POST", path, body)  # type: ignore[attr-defined]
    return status, json.loads(raw)


def test_teacher_forcing_scores_the_greedy_text_as_generation_did(sim_server: SimFactory) -> None:
    sim = sim_server(*FAST)
    st, gen = _post(
        sim, "/v1/completions", {"prompt": "One two three", "max_tokens": 6, "logprobs": 5}
    )
    assert st == 200
    choice = gen["choices"][0]  # type: ignore[index]
    lp = choice["logprobs"]
    assert "".join(lp["tokens"]) == choice["text"]
    # greedy: every generated token is the top of its position
    for tok, top in zip(lp["tokens"], lp["top_logprobs"]):
        assert max(top, key=top.get) == tok
        assert sum(math.exp(v) for v in top.values()) <= 1.0 + 1e-9
    st, echo = _post(
        sim,
        "/v1/completions",
        {"prompt": "One two three" + choice["text"], "max_tokens": 0, "echo": True, "logprobs": 5},
    )
    assert st == 200
    elp = echo["choices"][0]["logprobs"]  # type: ignore[index]
    assert elp["token_logprobs"][0] is None and elp["top_logprobs"][0] is None
    assert elp["tokens"][3:] == lp["tokens"]
    assert elp["token_logprobs"][3:] == lp["token_logprobs"]
    assert elp["top_logprobs"][3:] == lp["top_logprobs"]
    assert elp["text_offset"][3] == len("One two three")
    assert echo["usage"]["completion_tokens"] == 0  # type: ignore[index]


def test_a_shifted_engine_keeps_the_text_and_moves_the_logprobs(sim_server: SimFactory) -> None:
    base, moved = sim_server(*FAST), sim_server(*FAST, "--logprob-shift", "0.1")
    body = {"prompt": "alpha beta", "max_tokens": 8, "logprobs": 3}
    a, b = _post(base, "/v1/completions", body)[1], _post(moved, "/v1/completions", body)[1]
    ca, cb = a["choices"][0], b["choices"][0]  # type: ignore[index]
    assert ca["text"] == cb["text"]
    assert ca["logprobs"]["token_logprobs"] != cb["logprobs"]["token_logprobs"]


def test_chat_logprobs_and_the_fields_it_refuses(sim_server: SimFactory) -> None:
    sim = sim_server(*FAST)
    msgs = [{"role": "user", "content": "hi"}]
    st, out = _post(
        sim,
        "/v1/chat/completions",
        {"messages": msgs, "max_tokens": 3, "logprobs": True, "top_logprobs": 2},
    )
    assert st == 200
    content = out["choices"][0]["logprobs"]["content"]  # type: ignore[index]
    assert len(content) == 3 and all(len(c["top_logprobs"]) == 2 for c in content)
    assert content[0]["top_logprobs"][0]["token"] == content[0]["token"]
    bad = [
        ("/v1/completions", {"prompt": "a", "logprobs": 21}, "logprobs"),
        ("/v1/completions", {"prompt": "a", "max_tokens": 0}, "max_tokens"),
        ("/v1/completions", {"prompt": "a", "logprobs": 1, "stream": True}, "stream"),
        ("/v1/chat/completions", {"messages": msgs, "top_logprobs": 2}, "top_logprobs"),
    ]
    for path, body, param in bad:
        st, err = _post(sim, path, body)
        assert st == 400 and err["error"]["param"] == param, (body, err)  # type: ignore[index]
