"""The teacher-forcing scorers on the reference engine, over loopback HTTP: the stepwise scorer
(one ``max_tokens = 1`` request per position, llama.cpp's and SGLang's way) reads the same maps
as the echo scorer (vLLM's way), and the gate decides the same through both."""

from __future__ import annotations

import dataclasses
import json

import pytest

from inferlab.config.campaign import VerifySection
from inferlab.config.lossy import LossyGate
from inferlab.engines import get_engine, specs
from inferlab.errors import ConfigError
from inferlab.load.http import Endpoint, HttpClient, run_loop
from inferlab.verify import verify_endpoint
from inferlab.verify.gate import AgreementTask
from inferlab.verify.logprobs import Continuation, LogprobReference, NoLogprobs, continue_greedy
from inferlab.verify.scorers import SCORERS, get_scorer
from support.simproc import SimFactory

SIM = get_engine("sim")
STEPWISE = dataclasses.replace(SIM, teacher_forcing="stepwise")
FAST = ("--ttft-ms", "0", "--itl-ms", "0")
#: 20 words: the top-20 lists every token, so the gated KL upper bound is the exact KL
WHOLE = (*FAST, "--vocab-size", "21")
LIMITS = LossyGate(max_kl=0.01, min_top1=0.98, prompts=8, max_prompts=16, tokens=8)
SECTION = VerifySection(probes=[], length_tokens=2)
PROMPT = "Sentence 1: the river city morning old new"


def _score(url: str, scorer: str, prompt: str, cont: Continuation) -> list[dict[str, float]]:
    async def go() -> list[dict[str, float]]:
        client = HttpClient(Endpoint.parse(url), timeout_s=30)
        try:
            return await get_scorer(scorer)(client, "inferlab-sim", prompt, cont, 5)
        finally:
            client.close()

    return run_loop(go())


def _greedy(url: str, prompt: str, tokens: int):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        client = HttpClient(Endpoint.parse(url), timeout_s=30)
        try:
            return await continue_greedy(client, "inferlab-sim", prompt, tokens)
        finally:
            client.close()

    return run_loop(go())


def _same_maps(a: list[dict[str, float]], b: list[dict[str, float]]) -> None:
    """The same positions, the same tokens, logprobs within 1e-9 nats."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        assert all(abs(x[t] - y[t]) <= 1e-9 for t in x)


@pytest.mark.parametrize("shift", ["0", "0.02"])
def test_stepwise_reads_the_echo_maps(sim_server: SimFactory, shift: str) -> None:
    base = sim_server(*FAST)
    cont = _greedy(base.url, PROMPT, 10)
    assert cont.tokens is not None and len(cont.tokens) == 10
    assert "".join(cont.tokens) == cont.text
    status, body = base.request("POST", "/tokenize", {"prompt": cont.text})
    assert status == 200
    with_ids = Continuation(cont.text, None, json.loads(body)["tokens"])
    cfg = sim_server(*FAST, "--logprob-shift", shift)
    echo = _score(cfg.url, "echo", PROMPT, cont)
    step = _score(cfg.url, "stepwise", PROMPT, cont)
    by_ids = _score(cfg.url, "stepwise-ids", PROMPT, with_ids)  # [prompt, *ids[:t]] prompts
    assert len(echo) == len(step) == len(by_ids) == 10
    _same_maps(echo, step)
    _same_maps(echo, by_ids)
    if shift != "0":  # the shift is seen: the maps differ from the baseline's
        assert _score(base.url, "stepwise", PROMPT, cont) != step


def _check(url: str, engine, ref: LogprobReference | None):  # type: ignore[no-untyped-def]
    task = AgreementTask(LIMITS, ref, gating=True)
    rep = verify_endpoint(url, model="inferlab-sim", engine=engine, section=SECTION, agreement=task)
    if ref is None:
        assert rep.logprobs is not None
        return rep.logprobs
    return next(c for c in rep.checks if c.kind == "agreement")


def test_the_gate_decides_the_same_through_both(sim_server: SimFactory) -> None:
    base = sim_server(*WHOLE)
    refs = {e.teacher_forcing: _check(base.url, e, None) for e in (SIM, STEPWISE)}
    for e, s in zip(refs["echo"].positions, refs["stepwise"].positions, strict=True):
        _same_maps(e, s)
    assert refs["stepwise"].token_texts is not None
    twin, far = sim_server(*WHOLE), sim_server(*WHOLE, "--logprob-shift", "0.02")
    for engine in (SIM, STEPWISE):
        ref = refs[engine.teacher_forcing]
        same, off = _check(twin.url, engine, ref), _check(far.url, engine, ref)
        assert same.passed and same.detail["kl_upper"]["high"] == 0.0, same.message
        assert same.detail["top1"]["low"] == 1.0
        assert not off.passed and off.detail["verdict"] == "fail", off.message
        assert 0.015 < off.detail["kl"]["estimate"] < 0.025  # the known KL, 0.02
    # a stepwise engine against the echo-made reference (it kept the split too): the same
    assert _check(far.url, STEPWISE, refs["echo"]).detail["kl"]["estimate"] == pytest.approx(
        _check(far.url, SIM, refs["echo"]).detail["kl"]["estimate"], abs=1e-9
    )


def test_an_old_reference_without_tokens_cannot_gate_stepwise(sim_server: SimFactory) -> None:
    base = sim_server(*WHOLE)
    stored = _check(base.url, SIM, None).to_json()
    del stored["token_texts"]  # a reference stored before the split was kept
    old = LogprobReference.from_json(stored)
    assert old.token_texts is None
    assert _check(base.url, SIM, old).passed  # echo needs no split
    check = _check(base.url, STEPWISE, old)
    assert not check.passed and check.detail["verdict"] == "cannot-gate"
    assert "lacks" in check.message and "continuation tokens" in check.message
    # the sim names no ids (legacy logprobs object): a stepwise-ids engine cannot gate on it
    ids_engine = dataclasses.replace(SIM, teacher_forcing="stepwise-ids")
    check = _check(base.url, ids_engine, LogprobReference.from_json(stored))
    assert check.detail["verdict"] == "cannot-gate" and "token ids" in check.message


def test_a_prefix_that_retokenizes_differently_is_refused(sim_server: SimFactory) -> None:
    sim = sim_server(*FAST)
    # " ri" + "ver" re-tokenizes as one word: step 2's prompt has 1 more token, not 2
    with pytest.raises(NoLogprobs, match="step 2: the prefix came to"):
        _score(sim.url, "stepwise", PROMPT, Continuation(" river city", [" ri", "ver", " city"]))
    with pytest.raises(NoLogprobs, match="do not join"):
        _score(sim.url, "stepwise", PROMPT, Continuation(" river", [" rive"]))
    with pytest.raises(NoLogprobs, match="needs the reference's continuation token ids"):
        _score(sim.url, "stepwise-ids", PROMPT, Continuation(" river", [" river"]))


def test_every_engine_names_a_known_scorer() -> None:
    assert {
        s.name: s.teacher_forcing for s in specs() if s.name in ("vllm", "sglang", "llamacpp")
    } == {
        "vllm": "echo",
        "sglang": "stepwise",
        "llamacpp": "stepwise-ids",
    }
    assert all(s.teacher_forcing in SCORERS for s in specs())
    with pytest.raises(ConfigError, match="unknown teacher-forcing scorer 'nope'"):
        get_scorer("nope")
