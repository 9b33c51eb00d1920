"""Adaptive load points against the reference engine: precision, cap, duration, sequential A/B,
ramp-up and drain marking, and the bad inputs named.

The stopping rules decide live, on the wall clock (the model clock re-times a point only once
it has ended), so what depends on timing has a margin taken from the measured spread: 3 runs
at load 0.8-1.6 on 2 CPUs (2026-12-01) stopped on precision after 68-104 requests (cap 300),
half-widths TPOT 1.2-1.5% and tok/s 1.6-2.1% (bounds 5% and 8%), median TPOT 2.98-3.00 ms
(bounds 2.5-5); the A/B ITL 4 vs 2 ms settled at look 1 after 52-53 requests (bound 100),
TPOT ×0.50 (bound 0.7), |z| 49-68 against a boundary of 2.8-3.6."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from inferlab.config.bench import BenchConfig


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"precision": 0.0}, "precision"),
        ({"precision": 1.0}, "precision"),
        ({"min_requests": 300, "max_requests": 200}, r"min_requests \(300\) is more than"),
        ({"max_requests": 0}, "needs a cap"),
        ({"concurrency": [], "rate": [2.0]}, "closed-loop"),
        ({"duration_s": 5.0}, "exclude each other"),
    ],
)
def test_bad_auto_settings_name_the_field(kw: dict[str, object], message: str) -> None:
    base: dict[str, object] = dict(url="http://x", concurrency=[1], requests="auto")
    base.update(kw)
    with pytest.raises(ValidationError, match=message):
        BenchConfig(**base)  # type: ignore[arg-type]
