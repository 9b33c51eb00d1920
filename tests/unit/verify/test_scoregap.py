"""The lm-eval gate's figures on real harness output: the per-sample records lm-evaluation-
harness 0.4.13 wrote for the tiny ``sim_words`` task against the reference engine of seed 0
(15 of 20 right) and of seed 7 (none right), tests/fixtures/lm_eval/."""

from __future__ import annotations

import json

import numpy as np
import pytest

from inferlab.verify.lmeval import HarnessRun, sample_scores
from inferlab.verify.scoregap import gap_passes, score_gap, side_interval
from support import FIXTURES


def _scores(name: str) -> dict[tuple[str, int], float]:
    run = HarnessRun.from_json(json.loads((FIXTURES / "lm_eval" / f"{name}.json").read_text()))
    return sample_scores(run)


def test_the_same_answers_have_no_difference_and_pass() -> None:
    ref = _scores("sim_words_seed0")
    assert len(ref) == 20 and sum(ref.values()) == 15  # the harness's own exact_match
    gap = score_gap(ref, dict(ref))
    assert (gap.diff.estimate, gap.diff.low, gap.diff.high) == (0.0, 0.0, 0.0)
    assert gap.changed == 0 and gap_passes(gap, 0.0)
    # 15/20 with Wilson's 95% interval: (p + z²/2n ± z√(p(1−p)/n + z²/4n²)) / (1 + z²/n)
    assert gap.reference.estimate == 0.75
    assert gap.reference.low == pytest.approx(0.5313, abs=1e-4)
    assert gap.reference.high == pytest.approx(0.8881, abs=1e-4)


def test_a_config_whose_answers_all_changed_fails_with_the_whole_interval_past_the_limit() -> None:
    gap = score_gap(_scores("sim_words_seed0"), _scores("sim_words_seed7"))
    assert gap.diff.estimate == -0.75 and gap.changed == 15
    assert -1.0 <= gap.diff.low < gap.diff.high < -0.5
    assert not gap_passes(gap, 0.5)


def test_one_document_worse_in_twenty_fails_a_tight_gate_on_the_interval_not_the_point() -> None:
    ref = _scores("sim_words_seed0")
    worse = dict(ref)
    worse[("sim_words", 0)] = 0.0  # right on the reference, wrong on the config
    gap = score_gap(ref, worse)
    assert gap.diff.estimate == -0.05 and gap.changed == 1
    # resampling 20 documents draws the changed one 3 or more times in ≥ 2.5% of resamples
    assert gap.diff.low == pytest.approx(-0.15) and gap.diff.high == 0.0
    assert not gap_passes(gap, 0.1)  # the point (−0.05) is inside, the interval is not
    assert gap_passes(gap, 0.15)


def test_scores_are_paired_on_the_documents_both_sides_have() -> None:
    ref = {("t", i): 1.0 for i in range(10)}
    cfg = {("t", i): 1.0 for i in range(5, 15)}
    gap = score_gap(ref, cfg)
    assert gap.docs == 5 and gap.diff.estimate == 0.0
    with pytest.raises(ValueError, match="share no scored document"):
        score_gap(ref, {("u", 0): 1.0})


def test_a_side_of_fractional_scores_gets_a_bootstrap_interval() -> None:
    s = np.array([0.2, 0.4, 0.6, 0.8] * 5)
    iv = side_interval(s, 0.95, seed=0)
    assert iv.estimate == pytest.approx(0.5) and 0.35 < iv.low < 0.5 < iv.high < 0.65
