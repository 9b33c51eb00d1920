"""The scorers' parsing on real llama.cpp ``llama-server`` answers (recorded by
``benchmarks/llamacpp_check.py --record``, tests/fixtures/llamacpp/README.md): the one
generated position's top-k of a ``max_tokens = 1`` answer, the mixed ``[text, ids]`` prompt's
token count, the greedy answer's token texts and ids, and the ignored echo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferlab.verify.logprobs import NoLogprobs, generated_entries, generated_ids, prompt_tokens
from inferlab.verify.scorers import echo_positions, step_top

FIX = Path(__file__).parents[2] / "fixtures" / "llamacpp"


def _load(name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((FIX / f"{name}.json").read_text())
    return out


def test_the_one_generated_position_of_a_step() -> None:
    rec = _load("step_logprobs")
    assert rec["status"] == 200
    choice = rec["response"]["choices"][0]
    top = step_top(choice)
    raw = choice["logprobs"]["content"][0]
    assert len(top) == rec["request"]["logprobs"] == 5
    assert list(top) == [e["token"] for e in raw["top_logprobs"]]  # best first, as served
    assert all(v <= 0.0 for v in top.values())
    assert max(top.values()) == raw["logprob"]  # temperature 0: the generated token is top-1
    assert generated_ids(choice) == [raw["id"]]


def test_a_mixed_prompt_appends_its_ids_without_re_tokenizing() -> None:
    plain, mixed = _load("step_logprobs"), _load("step_mixed_prompt")
    appended = len(mixed["request"]["prompt"]) - 1
    assert appended == 3
    assert prompt_tokens(mixed["response"]) == prompt_tokens(plain["response"]) + appended  # type: ignore[operator]
    assert len(step_top(mixed["response"]["choices"][0])) == 5


def test_the_greedy_answer_names_its_tokens() -> None:
    rec = _load("greedy_logprobs")
    choice = rec["response"]["choices"][0]
    entries = generated_entries(choice)
    assert len(entries) == rec["request"]["max_tokens"] == 4
    assert "".join(t for t, _ in entries) == choice["text"]
    ids = generated_ids(choice)
    assert ids is not None and len(ids) == 4
    step = _load("step_logprobs")["response"]["choices"][0]["logprobs"]["content"][0]
    assert ids[0] == step["id"]  # the same first token, greedy


def test_echo_is_ignored_and_the_echo_scorer_refuses_the_answer() -> None:
    rec = _load("echo")
    assert rec["request"]["echo"] is True and rec["request"]["max_tokens"] == 0
    assert rec["status"] == 200  # not refused: /v1/completions never reads `echo`
    choice = rec["response"]["choices"][0]
    assert not choice["text"].startswith(rec["request"]["prompt"][:20])  # no prompt echoed
    assert rec["response"]["usage"]["completion_tokens"] == 1  # max_tokens 0 still decodes one
    with pytest.raises(NoLogprobs, match="top_logprobs/text_offset"):
        echo_positions(choice, 10, " continuation")  # cannot gate, never a pass


@pytest.mark.parametrize("name", ["step_logprobs", "step_mixed_prompt", "greedy_logprobs"])
def test_no_legacy_object_on_llamacpp(name: str) -> None:
    lp = _load(name)["response"]["choices"][0]["logprobs"]
    assert set(lp) == {"content"}  # the chat-style list, even on /v1/completions
