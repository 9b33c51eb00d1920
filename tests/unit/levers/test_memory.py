"""The memory rule's running-request cap: read from the scraped queue over a point, never from
the maxima of one scrape that landed while a step admitted its batch."""

from __future__ import annotations

from typing import Any

from inferlab.levers.evidence import ConfigEvidence, Evidence, SweepPoint
from inferlab.levers.model import LeverOptions
from inferlab.levers.registry import RULES


def _config(**server: Any) -> tuple[Evidence, ConfigEvidence]:
    pt = SweepPoint(16, 10.0, 1000.0, ((10.0,),), server, None)
    cfg = ConfigEvidence("A", "sglang", [], {}, {}, sweep={16: pt})
    return Evidence("c", False, {"A": cfg}, [], []), cfg


def test_one_scrape_during_admission_is_not_a_cap() -> None:
    # server.scrape stores no mean under 3 busy scrapes; the maxima alone are no cap
    ev, cfg = _config(max_running=4, max_waiting=12, busy_scrapes=1)
    assert RULES["memory"].build(ev, cfg, LeverOptions()) == []


def test_a_cap_held_over_the_point_is_one() -> None:
    ev, cfg = _config(max_running=8, max_waiting=8, busy_scrapes=5, mean_waiting=6.4)
    (lever,) = RULES["memory"].build(ev, cfg, LeverOptions())
    assert lever.summary.startswith(
        "running-request cap: at C=16 only 8 requests ran → at most ×2.00"
    )
    assert lever.evidence == [
        "C=16: at most 8 requests ran, 6.4 queued on average over the scrapes of a trial"
    ]
    # few queued on average: requests drained, not capped
    ev, cfg = _config(max_running=8, max_waiting=8, busy_scrapes=5, mean_waiting=2.0)
    assert RULES["memory"].build(ev, cfg, LeverOptions()) == []
