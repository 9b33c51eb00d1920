"""The importers' shared arithmetic (``store.imports._common``)."""

from __future__ import annotations

import statistics

import pytest

from inferlab.store.imports._common import sample_std, spread_tokens


def test_spread_tokens() -> None:
    assert spread_tokens(4, 4) == [1, 1, 1, 1]
    assert spread_tokens(4, 10) == [1, 3, 3, 3]  # first event: the prefill's one token
    assert spread_tokens(12, 32)[0] == 1 and sum(spread_tokens(12, 32)) == 32
    assert sum(spread_tokens(7, 100)) == 100
    assert min(spread_tokens(7, 100)[1:]) >= 16
    assert spread_tokens(1, 5) == [5]
    assert spread_tokens(3, 2) == [1, 1, 1]  # cannot go below 1 per event


def test_sample_std_formula() -> None:
    xs = [1.0, 2.0, 4.0, 8.0]
    assert sample_std(statistics.pstdev(xs), len(xs)) == pytest.approx(statistics.stdev(xs))
    assert sample_std(1.0, 1) is None
