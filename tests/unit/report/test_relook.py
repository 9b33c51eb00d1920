"""A stored sequential look decided again with the launch-to-launch spread the comparison
knows (``report.verdicts.relook``): the in-run A/B saw only the launches measured before it."""

from __future__ import annotations

import math

from inferlab.report.verdicts import relook
from inferlab.stats.spread import LaunchSpread


def _look(ratio: float, se: float, c: float, status: str) -> dict[str, object]:
    half = c * se
    return {"ratio": ratio, "low": ratio * math.exp(-half), "high": ratio * math.exp(half),
            "z": math.log(ratio) / se, "boundary": c, "status": status}  # fmt: skip


def test_a_look_settled_on_sampling_error_alone_is_reopened_by_the_spread() -> None:
    d = _look(0.83, 0.025, 2.0, "better")  # TPOT ×0.83, |z| = 7.5: settled without the spread
    x = relook(d, LaunchSpread(0.055, 4, 5), higher_is_better=False, min_effect=0.02)
    assert x["status"] == "open"
    assert x["low"] < 0.7 < 1.0 < x["high"]
    assert "launch-to-launch ±5.5%" in x["counted"] and "the look read better" in x["counted"]
    assert x["boundary"] > 2.0  # the t of 4-odd df over the normal's


def test_a_change_larger_than_the_spread_stays_settled() -> None:
    d = _look(0.5, 0.02, 2.0, "better")
    x = relook(d, LaunchSpread(0.03, 4, 5), higher_is_better=False, min_effect=0.02)
    assert x["status"] == "better" and "the look read" not in x["counted"]


def test_relooking_with_the_spread_it_counted_changes_nothing() -> None:
    d = _look(0.9, 0.03, 2.2, "open")
    once = relook(d, LaunchSpread(0.04, 4, 5), higher_is_better=False, min_effect=0.02)
    twice = relook(once, LaunchSpread(0.04, 4, 5), higher_is_better=False, min_effect=0.02)
    for k in ("ratio", "low", "high", "boundary", "status"):
        assert (
            math.isclose(float(once[k]), float(twice[k])) if k != "status" else once[k] == twice[k]
        )
