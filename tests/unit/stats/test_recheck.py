"""The baseline recheck judged from plain trials, no store: ``stats.recheck`` reads any group
that has the ``stats.groups`` protocols' fields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inferlab.records import RequestRecord
from inferlab.stats.groups import group_value
from inferlab.stats.recheck import recheck_point, recheck_points

MS = 1_000_000


@dataclass(frozen=True)
class _Trial:
    summary: Mapping[str, Any]
    stop: Mapping[str, Any] | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)
    trust: str = "trusted"


@dataclass
class _Group:
    runs: list[_Trial]
    records: list[list[RequestRecord]]


def _group(tok_s: list[float], tpot_ms: float, **trial: Any) -> _Group:
    """Trials at ``tok_s`` each, every request 8 tokens at ``tpot_ms`` (± a little) apart."""
    records = []
    for t in range(len(tok_s)):
        recs = []
        for i in range(40):
            gap = int((tpot_ms + 0.01 * ((i * 7 + t) % 5)) * MS)
            events = [20 * MS + k * gap for k in range(8)]
            recs.append(RequestRecord(i, f"r{i}", send_ns=0, end_ns=events[-1], event_ns=events,
                                      event_tokens=[1] * 8))  # fmt: skip
        records.append(recs)
    return _Group([_Trial({"output_tok_s": x}, **trial) for x in tok_s], records)


def test_the_same_baseline_twice_has_not_drifted() -> None:
    a = _group([100.0, 101.0, 99.0], 10.0)
    b = _group([100.5, 99.5, 100.0], 10.0)
    (p,) = recheck_points([("C=1", a, b)])
    assert p.first_tok_s == group_value("output_tok_s", a) == 100.0
    assert set(p.verdicts) == {"tpot_ms", "output_tok_s"}
    assert not p.drift and p.again is b
    assert p.line().startswith("baseline rechecked at C=1: ×") and p.line().endswith("no drift")


def test_a_slower_recheck_drifted_and_says_which_metric() -> None:
    p = recheck_point(
        "C=4", _group([100.0, 101.0, 99.0], 10.0), _group([70.0, 71.0, 69.0], 14.0),
        alpha=0.05, min_effect=0.02,
    )  # fmt: skip
    assert p.drift
    assert "DRIFT" in p.line()
    assert "verdicts here are not comparable" in p.reason()
    assert p.to_json()["drift"] is True


def test_an_untrusted_side_is_not_assessed() -> None:
    sim = {"engine_name": "sim"}
    p = recheck_point(
        "C=1", _group([100.0], 10.0, environment=sim),
        _group([100.0], 10.0, environment=sim, trust="untrusted"), alpha=0.05, min_effect=0.02,
    )  # fmt: skip
    assert p.untrusted == "recheck untrusted (client lag or an unusable point)"
    assert not p.drift and not p.verdicts and p.again is None
    assert p.line() == (
        "SIMULATED baseline rechecked at C=1: recheck untrusted (client lag or an unusable "
        "point), drift not assessed"
    )
    q = recheck_point(
        "C=1", _group([100.0], 10.0, trust="untrusted"), _group([100.0], 10.0),
        alpha=0.05, min_effect=0.02,
    )  # fmt: skip
    assert q.untrusted is not None and q.untrusted.startswith("first pass untrusted")
