"""Predictions (``levers.predict``), pinned against hand-computed cases: the verdicts above,
below and consistent, and combined predictions."""

from __future__ import annotations

import pytest

from inferlab.levers import Measured, judge
from inferlab.levers.predict import _combine, _Part, at_2x


def test_verdicts_above_below_consistent() -> None:
    # a bound of ×1.065 (FP8 GEMM at 6.1% of decode)
    j = judge(None, 1.065, Measured(1.10, 1.08, 1.12))
    assert j[0] == "above" and "impossible by Amdahl" in j[1]
    # its share 2× faster: 1/(1 − 0.061/2) = ×1.031; a lever short of that is "below"
    assert at_2x(1.065) == pytest.approx(1 / (1 - (1 - 1 / 1.065) / 2))
    j = judge(None, 1.065, Measured(1.02, 1.015, 1.03))
    assert j[0] == "below" and "bought 31% of its ceiling" in j[1] and "×1.031 at 2×" in j[1]
    j = judge(None, 1.065, Measured(1.05, 1.049, 1.051))  # a deterministic instrument's interval
    assert j[0] == "consistent" and "bought 77% of its ceiling" in j[1]
    assert judge(None, 1.065, Measured(1.03, 1.02, 1.04))[0] == "consistent"  # reaches ×1.031
    assert judge(None, 1.065, Measured(1.06, 1.05, 1.07))[0] == "consistent"
    # a band ×1.11–×1.60
    assert judge(1.11, 1.60, Measured(1.38, 1.30, 1.45))[0] == "consistent"
    j = judge(1.11, 1.60, Measured(1.0, 0.97, 1.03))
    assert j[0] == "below" and "9.9% below the band's low ×1.110" in j[1]
    assert judge(1.11, 1.60, Measured(1.8, 1.7, 1.9))[0] == "above"


def test_combined_prediction_adds_shares_and_multiplies_bands() -> None:
    fp8 = _Part(None, 1 / (1 - 0.04), False, None)
    nccl = _Part(None, 1 / (1 - 0.02), False, None)
    low, high = _combine([("fp8-gemm", fp8), ("comm", nccl)])
    assert low is None and high == pytest.approx(1 / (1 - 0.06))  # not 1/(0.96 × 0.98)
    spec = _Part(1.1, 1.6, False, None)
    low, high = _combine([("fp8-gemm", fp8), ("spec-decode", spec)])
    assert low == pytest.approx(1.1) and high == pytest.approx(1.6 / 0.96)


def test_a_tune_section_is_a_lever_item_the_fp8_rule_explains() -> None:
    """A config that installs tuned FP8 tiles with ``tune = {fp8_gemm = ...}`` (the H200 vLLM
    campaign's A) differs by ``tune fp8_gemm``, which the FP8-GEMM rule predicts; an unknown
    extra key stays an unexplained ``extra`` item."""
    from inferlab.levers.evidence import ConfigEvidence
    from inferlab.levers.predict import diff_items
    from inferlab.levers.registry import rules_for

    base = ConfigEvidence("baseline", "vllm", ["--max-model-len", "2048"], {}, {})
    tuned = ConfigEvidence(
        "A", "vllm", ["--max-model-len", "2048"], {}, {"tune": {"fp8_gemm": "run.json"}, "x": 1}
    )
    items = diff_items(base, tuned)
    assert items == ["tune fp8_gemm", "extra x"]
    assert [r.kind for r in rules_for("tune fp8_gemm")] == ["fp8-gemm"]
    assert [r.kind for r in rules_for("files fp8_gemm")] == ["fp8-gemm"]
    assert rules_for("extra x") == []
