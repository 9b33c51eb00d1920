"""``stats.metrics.METRICS``, the one table of metrics: its rows are consistent, and the views
other modules read (directions, the stopping rule's estimators) are the table's."""

from __future__ import annotations

import pytest

from inferlab.stats.metrics import METRICS, PerRequest, PerTrial, listed, metric
from inferlab.stats.stopping import Precision
from inferlab.stats.verdict import HIGHER_IS_BETTER


def test_rows_are_consistent() -> None:
    for name, m in METRICS.items():
        assert m.name == name and m.title and m.unit and m.digits >= 0
        assert isinstance(m.sampler, (PerRequest, PerTrial))
        if m.compared:
            assert m.direction is not None and m.definition, name
        assert not m.primary or m.compared, name


def test_the_orders_consumers_show() -> None:
    assert [m.name for m in listed(lambda m: m.compared)] == ["output_tok_s", "tpot_ms", "ttft_ms"]
    assert [m.name for m in listed(lambda m: m.primary)] == ["output_tok_s", "tpot_ms"]
    assert [m.name for m in listed(lambda m: m.definition is not None)] == [
        "output_tok_s",
        "tpot_ms",
        "ttft_ms",
        "itl_ms",
    ]


def test_directions_are_a_view_of_the_table() -> None:
    assert dict(HIGHER_IS_BETTER) == {
        m.name: m.direction == "higher" for m in METRICS.values() if m.direction is not None
    }
    assert HIGHER_IS_BETTER["output_tok_s"] and not HIGHER_IS_BETTER["tpot_ms"]
    assert "ok" not in HIGHER_IS_BETTER and "duration_s" not in HIGHER_IS_BETTER


def test_the_stopping_rule_estimates_each_primary_metric() -> None:
    """``load.adaptive`` and ``stats.stopping`` estimate the primary metrics by their own
    methods (block-bootstrap median, batch means): a new primary row needs an estimator."""
    estimated = set(Precision(0, None, None).half_widths())
    assert estimated == {m.name for m in listed(lambda m: m.primary)}


def test_an_unknown_metric_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown metric 'p42'; known: ok, output_tok_s"):
        metric("p42")
