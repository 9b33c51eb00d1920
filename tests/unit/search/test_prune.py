"""Pruning by the bounds: dimensions pruned together by their joint Amdahl bound (the shares of
distinct levers add up), dimensions on one lever sharing its bound."""

from __future__ import annotations

import pytest

from inferlab.config.search import SearchDim
from inferlab.levers.model import Lever, PointBound
from inferlab.search.prune import bound_dims, searched

NCCL = SearchDim(env="NCCL_PROTO", values=["Simple", "LL"])
ALGO = SearchDim(env="NCCL_ALGO", values=["Ring", "Tree"])
FP8 = SearchDim(flag="--tuned-fp8", presence=True)
CAP = SearchDim(flag="--max-running-requests", values=[2, 4, 8])


def _lever(kind: str, title: str, high: float) -> Lever:
    return Lever(kind, title, "baseline", "amdahl", [PointBound("C=8", 8, high)], title)


COMM = _lever("comm", "communication / NCCL", 1.0065)
GEMM = _lever("fp8-gemm", "tune FP8 GEMM", 1.0188)


def test_each_below_the_minimum_effect_but_not_together_prunes_the_smallest_only() -> None:
    """0.65% + 1.85% of the step: ×1.026 together, above ×1.02; the smaller is pruned."""
    by = {b.key: b for b in bound_dims([FP8, NCCL, CAP], [COMM, GEMM], "C=8", 0.02)}
    assert by["env NCCL_PROTO"].pruned and by["env NCCL_PROTO"].joint is None
    fp8 = by["--tuned-fp8"]
    assert not fp8.pruned and fp8.high == pytest.approx(1.0188)
    assert fp8.joint == pytest.approx(1 / (1 - (1 - 1 / 1.0065) - (1 - 1 / 1.0188)))
    assert "≤ ×1.019 at C=8: searched (pruned with the others, ≤ ×1.026 together)" in fp8.why("C=8")
    assert not by["--max-running-requests"].pruned  # no number: searched
    # with a larger minimum effect both fit under it
    assert all(b.pruned for b in bound_dims([FP8, NCCL], [COMM, GEMM], "C=8", 0.03))


def test_dimensions_on_the_same_lever_share_its_bound() -> None:
    """NCCL_PROTO and NCCL_ALGO both trim the communication share: ×1.0065 together."""
    bounds = bound_dims([NCCL, ALGO], [COMM], "C=8", 0.01)
    assert [b.pruned for b in bounds] == [True, True]
    assert all(b.joint is None for b in bounds)


def test_a_bound_above_the_minimum_effect_is_searched_whatever_the_others() -> None:
    big = _lever("comm", "communication / NCCL", 1.3)
    bounds = bound_dims([NCCL, FP8], [big, GEMM], "C=8", 0.02)
    assert [b.pruned for b in bounds] == [False, True]


def test_a_batch_bound_that_cannot_bind_at_the_point_is_narrowed_or_pruned() -> None:
    """At C users a cap ≥ C admits them all: make demo's max-seqs-4 read ×0.99–1.02 at C=1 and
    4 in 3 of 3 runs. A CUDA-graph batch bound ≥ C captures every batch. Their values ≥ C are
    one; a dimension whose every value is ≥ C is pruned. A flag that counts tokens is not."""
    mrr = SearchDim(flag="--max-running-requests", values=[2, 4, 8, 16, 64])
    mns = SearchDim(flag="--max-num-seqs", values=[2, 4, 16, 128])  # demo --optimize, at C=1
    ranged = SearchDim(flag="--max-num-seqs", low=1, high=32, log=True)
    graphs = SearchDim(flag="--cuda-graph-max-bs", values=[4, 8, 16, 64])
    tokens = SearchDim(flag="--max-cudagraph-capture-size", values=[4, 8, 16, 64])
    dims = [mrr, mns, ranged, graphs, tokens]
    by = {(b.key, i): b for i, b in enumerate(bound_dims(dims, [], "C=8", 0.02))}
    b = by[("--max-running-requests", 0)]
    assert not b.pruned and b.narrowed == {"values": [2, 4, 8]}
    assert "16, 64 left out, the same as 8 (a running cap ≥ 8 cannot bind at C=8)" in b.why("C=8")
    assert by[("--max-num-seqs", 1)].narrowed == {"values": [2, 4, 16]}  # 128 is 16 at C=8
    assert by[("--max-num-seqs", 2)].narrowed == {"high": 8}
    g = by[("--cuda-graph-max-bs", 3)]
    assert g.narrowed == {"values": [4, 8]} and not g.pruned
    assert "(a CUDA-graph batch bound ≥ 8 captures every batch at C=8)" in g.why("C=8")
    assert by[("--max-cudagraph-capture-size", 4)].narrowed is None  # tokens, not requests
    one = bound_dims([mns, ranged], [], "C=1", 0.02)
    assert all(x.pruned for x in one)
    assert one[0].why("C=1") == "every value ≥ 1: a running cap ≥ 1 cannot bind at C=1: pruned"
    # searched(): the dimensions left, narrowed; a rate point or a capacity search: untouched
    left = searched(dims, bound_dims(dims, [], "C=8", 0.02))
    assert [d.values for d in left[:2]] == [[2, 4, 8], [2, 4, 16]] and left[2].high == 8
    assert left[3].values == [4, 8] and left[4] == tokens
    assert searched(dims, bound_dims(dims, [], "rate=2/s", 0.02)) == tuple(dims)
    assert searched(dims, bound_dims(dims, [], "SLO tpot_p99_ms=9", 0.02)) == tuple(dims)
