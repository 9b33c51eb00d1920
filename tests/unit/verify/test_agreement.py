"""Agreement figures from top-k maps: the KL's two ends bracket the true KL, TV likewise, and
the bootstrap interval covers the pooled value."""

from __future__ import annotations

import math
import random

import pytest

from inferlab.verify.agreement import agreement, position_figures, prompt_figures


def _dist(rng: random.Random, n: int) -> list[float]:
    w = [rng.random() ** 3 for _ in range(n)]
    s = sum(w)
    return [x / s for x in w]


def _top(p: list[float], k: int) -> dict[str, float]:
    order = sorted(range(len(p)), key=lambda i: -p[i])[:k]
    return {f"t{i}": math.log(p[i]) for i in order}


@pytest.mark.parametrize("k", [3, 8, 40])
def test_the_kl_and_tv_ends_bracket_the_truth(k: int) -> None:
    rng = random.Random(k)
    for _ in range(200):
        p, q = _dist(rng, 40), _dist(rng, 40)
        kl = sum(a * math.log(a / b) for a, b in zip(p, q))
        tv = 0.5 * sum(abs(a - b) for a, b in zip(p, q))
        f = position_figures(_top(p, k), _top(q, k))
        assert f.kl_low <= kl + 1e-9 <= f.kl_high + 2e-9
        assert f.tv_low <= tv + 1e-9 and tv <= f.tv_high + 1e-9
        assert f.top1 == (max(range(40), key=p.__getitem__) == max(range(40), key=q.__getitem__))
        if k == 40:  # the whole vocabulary: both ends are the truth
            assert f.kl_low == pytest.approx(kl, abs=1e-9)
            assert f.tv_low == pytest.approx(tv, abs=1e-9)


def test_identical_sides_are_zero_and_top1_is_one() -> None:
    top = {"a": math.log(0.6), "b": math.log(0.3)}
    f = position_figures(top, top)
    assert f.kl_low == 0.0 and f.tv_low == 0.0 and f.top1
    a = agreement([prompt_figures([top] * 5, [top] * 5) for _ in range(4)])
    assert a.kl.high == 0.0 and a.top1.low == 1.0 and a.positions == 20


def test_a_tie_for_the_top_agrees_whatever_order_the_engine_lists_it_in() -> None:
    """On the H200 (2026-12-02), a bf16 config identical to the baseline (KL 0, TV 0) read
    top-1 98.3%: bf16 logits tie for the top, and the two servers listed the tie in another
    order. A tie agrees when the tied sets share a token; a real change of the top does not."""
    a = {"x": -0.5, "y": -0.5, "z": -2.0}
    b = {"y": -0.5, "x": -0.5, "z": -2.0}
    assert position_figures(a, b).top1 and position_figures(a, b).tv_low == 0.0
    c = {"z": -0.4, "x": -0.6, "y": -0.6}
    assert not position_figures(a, c).top1


def test_the_interval_brackets_the_pooled_estimate_and_shrinks_with_prompts() -> None:
    rng = random.Random(3)
    base = {"a": math.log(0.7), "b": math.log(0.2)}

    def prompt() -> object:
        cfgs = []
        for _ in range(8):
            x = 0.7 - rng.random() * 0.2
            cfgs.append({"a": math.log(x), "b": math.log(0.9 - x)})
        return prompt_figures([base] * 8, cfgs)

    small = agreement([prompt() for _ in range(8)])  # type: ignore[misc]
    large = agreement([prompt() for _ in range(128)])  # type: ignore[misc]
    for a in (small, large):
        assert a.kl.low <= a.kl.estimate <= a.kl.high
    assert large.kl.high - large.kl.low < small.kl.high - small.kl.low


def test_positions_must_match() -> None:
    top = {"a": -0.1}
    with pytest.raises(ValueError, match="positions differ"):
        prompt_figures([top, top], [top])
