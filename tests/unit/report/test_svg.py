"""Axis ticks of the report's SVG charts (``report.svg``)."""

from __future__ import annotations

from inferlab.report.svg import nice_ticks


def test_nice_ticks() -> None:
    assert nice_ticks(0, 97) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(0, 0.9)[-1] >= 0.9
