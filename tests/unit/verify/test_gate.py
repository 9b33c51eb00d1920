"""The lossy gate on the reference engine, whose distance is known (``--logprob-shift``): it
passes at shift 0 when the top-k lists every token, fails at twice the limit, fails a config
identical to the baseline when the top-k leaves a tail its upper bound cannot see past, and an
engine without logprobs cannot gate."""

from __future__ import annotations

import pytest

from inferlab.config.campaign import VerifySection
from inferlab.config.lossy import LossyGate
from inferlab.engines import get_engine
from inferlab.verify import verify_endpoint
from inferlab.verify.gate import AgreementTask, look_level, looks
from inferlab.verify.logprobs import LogprobReference
from support.simproc import SimFactory

SIM = get_engine("sim")
FAST = ("--ttft-ms", "0", "--itl-ms", "0")
#: 20 words: the top-20 lists every token, so the gated KL upper bound is the exact KL
WHOLE = (*FAST, "--vocab-size", "21")
LIMITS = LossyGate(max_kl=0.01, min_top1=0.98, prompts=8, max_prompts=32, tokens=16)
SECTION = VerifySection(probes=[], length_tokens=2)


def _reference(sim_server: SimFactory, *args: str) -> LogprobReference:
    base = sim_server(*args)
    task = AgreementTask(LIMITS, None, gating=False)
    rep = verify_endpoint(
        base.url, model="inferlab-sim", engine=SIM, section=SECTION, agreement=task
    )
    assert rep.logprobs is not None and len(rep.logprobs.prompts) == 32
    assert all(len(p) == 16 for p in rep.logprobs.positions)
    return rep.logprobs


@pytest.fixture
def reference(sim_server: SimFactory) -> LogprobReference:
    return _reference(sim_server, *WHOLE)


def _gate(sim_server: SimFactory, ref: LogprobReference, *args: str, gating: bool = True):  # type: ignore[no-untyped-def]
    sim = sim_server(*WHOLE, *args)
    task = AgreementTask(LIMITS, ref, gating=gating)
    rep = verify_endpoint(
        sim.url, model="inferlab-sim", engine=SIM, section=SECTION, agreement=task
    )
    return rep, next(c for c in rep.checks if c.kind == "agreement")


def test_passes_at_shift_zero(sim_server: SimFactory, reference: LogprobReference) -> None:
    rep, check = _gate(sim_server, reference)
    assert check.passed and rep.passed, check.message
    assert check.detail["kl_upper"]["high"] == 0.0 and check.detail["top1"]["low"] == 1.0
    assert check.detail["tail"] == pytest.approx(0.0, abs=1e-12)  # every token listed
    assert check.detail["prompts"] == 8  # width reached at the first look
    assert check.detail["kl"]["level"] == pytest.approx(1 - 0.05 / 3)  # looks 8, 16, 32


def test_fails_at_twice_the_limit(sim_server: SimFactory, reference: LogprobReference) -> None:
    rep, check = _gate(sim_server, reference, "--logprob-shift", "0.02")
    assert not check.passed and not rep.passed
    assert check.detail["verdict"] == "fail"
    up, low = check.detail["kl_upper"], check.detail["kl"]
    assert up["estimate"] == pytest.approx(low["estimate"], abs=1e-12)  # exact: no tail
    assert 0.015 < up["estimate"] < 0.025  # the known KL, 0.02
    assert low["low"] > 0.01 and check.detail["prompts"] == 8  # a clear miss stops the looks
    assert "agreement: KL upper bound" in rep.summary()


def test_a_tail_the_top_k_cannot_see_fails_even_an_identical_config(
    sim_server: SimFactory,
) -> None:
    """At the default 4096 words the top-20 leaves 0.25% of the mass unlisted: the two sides
    list the same maps (lumped KL 0), but nothing bounds the config's unlisted tokens above
    the floor e^-30, so the upper bound reads about 0.06 and the gate cannot pass it. The
    gate decided on the lumped KL before, and passed it."""
    ref = _reference(sim_server, *FAST)
    twin = sim_server(*FAST)
    task = AgreementTask(LIMITS, ref, gating=True)
    rep = verify_endpoint(
        twin.url, model="inferlab-sim", engine=SIM, section=SECTION, agreement=task
    )
    check = next(c for c in rep.checks if c.kind == "agreement")
    assert check.detail["kl"]["high"] == 0.0  # the lumped bound: nothing moved
    assert 0.0 < check.detail["tail"] < 0.01
    assert check.detail["kl_upper"]["estimate"] > 0.01
    assert not check.passed and check.detail["verdict"] == "fail"
    assert "the upper bound is loose: ask for more logprobs" in check.message


def test_lossless_configs_get_the_figures_without_a_gate(
    sim_server: SimFactory, reference: LogprobReference
) -> None:
    rep, check = _gate(sim_server, reference, "--logprob-shift", "0.02", gating=False)
    assert not check.passed and rep.passed  # recorded, not gating
    assert check.message.startswith("not gating (lossless): KL")


def test_an_engine_without_logprobs_cannot_gate(
    sim_server: SimFactory, reference: LogprobReference
) -> None:
    short = LogprobReference(
        prompts=reference.prompts,
        continuations=reference.continuations,
        positions=reference.positions,
        top_k=21,
        tokens=16,
        seed=0,
    )  # top_k 21: the engine refuses it, as one without logprobs refuses echo
    rep, check = _gate(sim_server, short)
    assert not check.passed and not rep.passed
    assert check.detail["verdict"] == "cannot-gate"
    assert check.message.startswith("cannot gate: no teacher-forced logprobs")


def test_prompts_double_until_the_width_is_reached(
    sim_server: SimFactory, reference: LogprobReference
) -> None:
    sim = sim_server(*WHOLE, "--logprob-shift", "0.005")
    narrow = LIMITS.model_copy(update={"width": 0.001})  # unreachable: every prompt is scored
    task = AgreementTask(narrow, reference, gating=True)
    rep = verify_endpoint(
        sim.url, model="inferlab-sim", engine=SIM, section=SECTION, agreement=task
    )
    check = next(c for c in rep.checks if c.kind == "agreement")
    assert check.detail["prompts"] == 32 and not check.detail["width_met"]
    assert "interval width not reached" in check.message
    assert check.passed  # 0.005 is well inside 0.01


def test_the_looks_and_their_bonferroni_level() -> None:
    assert looks(16, 64) == [16, 32, 64] and looks(16, 40) == [16, 32, 40]
    assert looks(16, 16) == [16] and looks(64, 16) == [16]
    assert look_level(0.95, 3) == pytest.approx(1 - 0.05 / 3)
    assert look_level(0.95, 1) == pytest.approx(0.95)
