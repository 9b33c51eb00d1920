"""The SIMULATED engine's continuous-batching model (``sim.model``): step math by hand and the
presets' numbers against the seed story."""

from __future__ import annotations

import random
from typing import Any

import pytest

from inferlab.sim.model import SpecModel, StepModel, accept_draw, mean_accept_length, step_ms
from inferlab.sim.presets import PRESETS, Levers, StartupFailure, resolve

pytestmark = pytest.mark.timeout(60)

DSV4 = "dsv4-flash-8gpu"
A = ["--tuned-fp8"]
SPEC = [
    "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "1",
    "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "2",
]  # fmt: skip
B = [*A, *SPEC, "--mem-fraction-static", "0.60", "--cuda-graph-max-bs", "16"]


def _m(**kw: Any) -> StepModel:
    base: dict[str, Any] = {
        "fixed_ms": 10.0,
        "per_seq_ms": 2.0,
        "saturation": 4.0,
        "per_seq_over_ms": 5.0,
        "prefill_per_token_ms": 0.5,
        "max_running": 8,
        "kv_tokens": 1000,
        "cuda_graph_max_bs": 6,
        "eager_penalty": 2.0,
    }
    return StepModel(**{**base, **kw})


def test_step_math_by_hand() -> None:
    m = _m()
    assert step_ms(m, 0) == 0.0
    assert step_ms(m, 1) == pytest.approx(12.0)  # 10 + 2
    assert step_ms(m, 4) == pytest.approx(18.0)  # 10 + 2·4
    assert step_ms(m, 6) == pytest.approx(28.0)  # 10 + 8 + 5·2
    assert step_ms(m, 2, prefill_tokens=10) == pytest.approx(19.0)  # 14 + 0.5·10
    assert step_ms(m, 7) == pytest.approx(2.0 * 33.0)  # past the largest CUDA graph: eager
    spec = SpecModel(
        draft_tokens=2,
        accept_prob=0.5,
        draft_fixed_ms=1.0,
        draft_per_seq_ms=0.5,
        verify_per_token_ms=1.0,
        verify_sat_tokens=6.0,
        verify_per_token_over_ms=3.0,
    )
    ms = _m(spec=spec)
    assert step_ms(ms, 1) == pytest.approx(1.0 + 0.5 + 10.0 + 3.0)  # T = 3 verify tokens
    assert step_ms(ms, 4) == pytest.approx(1.0 + 2.0 + 10.0 + 6.0 + 3.0 * 6.0)  # T = 12
    assert mean_accept_length(2, 0.5) == pytest.approx(1.75)
    rng = random.Random(0)
    draws = [accept_draw(rng, 1, 0.6) for _ in range(20_000)]
    assert set(draws) <= {0, 1}
    assert 1 + sum(draws) / len(draws) == pytest.approx(1.6, abs=0.02)


def test_preset_numbers_match_the_story() -> None:
    p = PRESETS[DSV4]
    base = resolve(p, Levers())
    a = resolve(p, Levers(tuned_fp8=True, nccl_proto="LL"))
    b = resolve(p, Levers(**_levers(B), nccl_proto="LL"))
    assert step_ms(base, 1) == pytest.approx(94.0)
    assert 8000 / step_ms(base, 8) == pytest.approx(24.0)
    assert 16000 / step_ms(base, 16) == pytest.approx(23.2)
    assert step_ms(a, 1) == pytest.approx(88.0)
    assert b.spec is not None and b.spec.draft_tokens == 1
    alen = mean_accept_length(1, b.spec.accept_prob)
    assert alen == pytest.approx(1.6)
    assert 1000 * alen / step_ms(b, 1) == pytest.approx(15.7)
    for c in (8, 16):
        assert c * alen / step_ms(b, c) == pytest.approx(c / step_ms(a, c))
    with pytest.raises(StartupFailure):
        resolve(p, Levers(**_levers(SPEC), mem_fraction_static=0.70))


def _levers(args: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        key = args[i][2:].replace("-", "_")
        if key == "tuned_fp8":
            out[key] = True
            i += 1
        else:
            out[key] = args[i + 1]
            i += 2
    return out
