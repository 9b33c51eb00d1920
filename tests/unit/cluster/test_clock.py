"""Clocks across hosts, no Ray started (``cluster.clock``): Cristian's offset, a skewed
clock, records moved to the driver's clock with their durations unchanged."""

from __future__ import annotations

import time

import pytest

from inferlab.cluster.clock import (
    ClockSample,
    estimate_offset,
    measure_offset,
    on_driver_clock,
    window_error_ns,
)
from support.records import rec


def test_cristian_offset_keeps_the_minimum_rtt_exchange() -> None:
    # host clock = driver + 5 s; the reply's one-way delays vary (asymmetric on purpose)
    true = 5_000_000_000
    samples = [
        ClockSample(1_000, 1_000 + true + 900, 3_000),  # rtt 2000
        ClockSample(10_000, 10_000 + true + 100, 10_400),  # rtt 400: kept
        ClockSample(20_000, 20_000 + true + 50, 21_000),
    ]
    off = estimate_offset(samples)
    assert off.rtt_ns == 400 and off.bound_ns == 200 and off.samples == 3
    assert off.offset_ns == true + 100 - 200
    assert abs(off.offset_ns - true) <= off.bound_ns
    with pytest.raises(ValueError):
        estimate_offset([])


def test_measure_offset_against_a_skewed_clock() -> None:
    skew = -123_456_789
    off = measure_offset(lambda: time.perf_counter_ns() + skew, rounds=20)
    assert abs(off.offset_ns - skew) <= off.bound_ns + 1000


def test_records_move_to_the_driver_clock_with_durations_unchanged() -> None:
    r = rec(0, 7_000_000_000)
    r.scheduled_ns = 6_999_000_000
    d = on_driver_clock(r, 5_000_000_000, "h1:abcd")
    assert (d.send_ns, d.scheduled_ns, d.client) == (2_000_000_000, 1_999_000_000, "h1:abcd")
    assert (d.ttft_ns, d.e2e_ns, d.end_ns - d.send_ns) == (r.ttft_ns, r.e2e_ns, 50_000_000)
    assert r.client is None  # the original is left alone
    recs = [on_driver_clock(rec(0, 100), 0, "a"), on_driver_clock(rec(1, 200), 0, "b")]
    assert window_error_ns(recs, {"a": 300, "b": 400}) == 700
    assert window_error_ns(recs[:1], {"a": 300}) == 0
