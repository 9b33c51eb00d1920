"""Per-request metrics and point summaries (``stats.metrics``) against hand-computed cases."""

from __future__ import annotations

import pytest

from inferlab.records import ErrorKind, RequestRecord
from inferlab.stats.metrics import (
    icl_ms,
    itl_ms,
    meets_slo,
    peak_concurrency,
    summarize,
    tpot_ms,
)

MS = 1_000_000


def _rec(send: int, events: list[int], tokens: list[int], **kw: object) -> RequestRecord:
    r = RequestRecord(
        index=0,
        request_id="r",
        send_ns=send,
        event_ns=events,
        event_tokens=tokens,
        end_ns=events[-1] if events else send,
        **kw,
    )  # type: ignore[arg-type]
    return r


def test_per_request_metrics_with_multi_token_chunks() -> None:
    # send at 0; first event at 50 ms (1 token); then a 3-token event 30 ms later, then a
    # 1-token event 10 ms later: 5 tokens in all.
    r = _rec(0, [50 * MS, 80 * MS, 90 * MS], [1, 3, 1])
    assert r.ttft_ns == 50 * MS
    assert r.e2e_ns == 90 * MS
    assert r.output_tokens == 5
    assert tpot_ms(r) == pytest.approx((90 - 50) / 4)
    assert itl_ms(r) == pytest.approx([10.0, 10.0, 10.0, 10.0])
    assert icl_ms(r) == pytest.approx([30.0, 10.0])
    # the usage count wins over the per-event counts
    r.usage_completion_tokens = 9
    assert r.output_tokens == 9


def test_tpot_needs_two_tokens() -> None:
    assert tpot_ms(_rec(0, [5 * MS], [1])) is None


def test_meets_slo() -> None:
    r = _rec(0, [50 * MS, 60 * MS, 70 * MS], [1, 1, 1])
    assert meets_slo(r, ttft_ms=60, tpot_ms_max=11, e2e_ms=100)
    assert not meets_slo(r, ttft_ms=40)
    assert not meets_slo(r, tpot_ms_max=9)
    assert not meets_slo(r, e2e_ms=69)
    r.error_kind = ErrorKind.TIMEOUT
    assert not meets_slo(r)


def test_peak_concurrency() -> None:
    recs = [
        RequestRecord(0, "a", send_ns=0, end_ns=10),
        RequestRecord(1, "b", send_ns=5, end_ns=15),
        RequestRecord(2, "c", send_ns=10, end_ns=20),  # starts as a ends: not overlapping
        RequestRecord(3, "d", send_ns=12, end_ns=13),
    ]
    assert peak_concurrency(recs) == 3


def test_summarize_throughput_window_errors_and_warmup() -> None:
    warm = _rec(0, [10 * MS], [1], warmup=True, usage_completion_tokens=100)
    a = _rec(1000 * MS, [1050 * MS, 1100 * MS], [1, 1], usage_completion_tokens=10)
    b = _rec(1100 * MS, [1150 * MS, 2000 * MS], [1, 1], usage_completion_tokens=30)
    bad = RequestRecord(
        9, "x", send_ns=1200 * MS, end_ns=1300 * MS, error_kind=ErrorKind.HTTP, status=500
    )
    s = summarize([warm, a, b, bad], slo_ttft_ms=60, slo_e2e_ms=500)
    assert s.requests == 3 and s.ok == 2
    assert s.errors == {"http": 1}
    assert s.duration_s == pytest.approx(1.0)  # first measured send 1.0 s → last end 2.0 s
    assert s.output_tokens == 40 and s.output_tok_s == pytest.approx(40.0)
    assert s.request_s == pytest.approx(2.0)
    assert s.ttft_ms.count == 2 and s.ttft_ms.mean == pytest.approx(50.0)
    # a meets both SLOs; b's E2E is 900 ms; the failed one never counts
    assert s.goodput_req_s == pytest.approx(1.0)
    assert s.slo_attainment == pytest.approx(1 / 3)
    assert s.tpot_ms.count == 2
    assert sorted(s.tpot_ms.__getattribute__(k) for k in ("min", "max")) == pytest.approx(
        [50 / 9, 850 / 29]
    )


def test_summarize_without_slo_has_no_goodput() -> None:
    s = summarize([_rec(0, [MS, 2 * MS], [1, 1])])
    assert s.goodput_req_s is None and s.slo_attainment is None


def test_throughput_interval_by_batch_means() -> None:
    from inferlab.stats.metrics import throughput_interval

    # steady: one token every ms for 1 s → every slice has the same rate: zero width
    steady = [_rec(0, [i * MS + MS // 2 for i in range(1000)], [1] * 1000)]
    iv = throughput_interval(steady, 1000.0, 0, 1.0)
    assert iv.low == pytest.approx(1000.0) and iv.high == pytest.approx(1000.0)
    # bursty: all tokens in the first half → wide interval around the estimate
    bursty = [_rec(0, [i * MS for i in range(1, 500)], [2] * 499)]
    iv = throughput_interval(bursty, 998.0, 0, 1.0)
    assert iv.low < 998.0 * 0.5 and iv.high > 998.0 * 1.5
