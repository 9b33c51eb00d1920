"""The reference engine's stated distribution: normalised, greedy is its mode, and
``--logprob-shift X`` moves it by a known KL (checked over the whole vocabulary)."""

from __future__ import annotations

import math
import random

import pytest

from inferlab.sim.lm import StatedModel, geometric_kl
from inferlab.sim.tokenizer import WordTokenizer


def _full(lm: StatedModel, h: int) -> list[float]:
    pos = lm.position(h)
    return [math.exp(pos.logprob(w)) for w in range(1, lm.n + 1)]


def test_every_position_is_a_distribution_whose_mode_is_the_greedy_word() -> None:
    lm = StatedModel(3, WordTokenizer(200))
    rng = random.Random(0)
    for _ in range(50):
        h = rng.getrandbits(64)
        p = _full(lm, h)
        assert sum(p) == pytest.approx(1.0, abs=1e-12)
        pos = lm.position(h)
        assert max(range(lm.n), key=p.__getitem__) + 1 == lm.mode(h) == pos.word(0)
        assert sorted({pos.word(r) for r in range(lm.n)}) == list(range(1, lm.n + 1))


def test_greedy_text_is_its_own_chain_of_modes_and_depends_on_the_prompt() -> None:
    lm = StatedModel(0, WordTokenizer(4096))
    ids = lm.greedy("the capital of France", 8)
    h = lm.start(lm.keys(["the", "capital", "of", "France"]))
    for w in ids:
        assert lm.mode(h) == w
        h = lm.step(h, w)
    assert lm.greedy("the capital of Spain", 8) != ids
    assert StatedModel(1, WordTokenizer(4096)).greedy("the capital of France", 8) != ids


@pytest.mark.parametrize("shift", [0.005, 0.02, 0.3])
def test_the_shift_is_the_stated_kl_and_keeps_the_ranks(shift: float) -> None:
    tok = WordTokenizer(300)
    base, moved = StatedModel(5, tok), StatedModel(5, tok, shift)
    rng = random.Random(1)
    kls = []
    for _ in range(400):
        h = rng.getrandbits(64)
        p, q = _full(base, h), _full(moved, h)
        kl = sum(a * math.log(a / b) for a, b in zip(p, q) if a > 0)
        w = 2.0 * ((h >> 24) & 0xFFFF) / 65536.0
        assert kl == pytest.approx(shift * w, rel=1e-6, abs=1e-12)
        assert base.mode(h) == moved.mode(h)
        kls.append(kl)
    assert sum(kls) / len(kls) == pytest.approx(shift, rel=0.1)  # mean X (w uniform on [0, 2))


def test_geometric_kl_is_zero_at_equal_q_and_grows() -> None:
    assert geometric_kl(0.5, 0.5, 100) == 0.0
    assert 0.0 < geometric_kl(0.5, 0.6, 100) < geometric_kl(0.5, 0.7, 100)
