"""Kineto traces (``profile.kineto``): fuzzed from a real H200 trace (settings:
tests/support/fuzzing.py) and the fast parser against the general one."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferlab.profile import analyze, read_trace
from inferlab.profile.kineto import _general
from inferlab.profile.trace import TraceBuilder
from support import FIXTURES
from support.fuzzing import (
    FIX,
    byte_mutation,
    fuzz,
    parses_or_names_file,
    tree_mutation,
    tree_target,
    write,
)

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# ----------------------------------------------------------------------------- profiler traces


def _kineto_seed() -> dict[str, Any]:
    """The real H200 FP8-decode trace, cut to its first 150 kernels and flow events (the
    header, annotations, runtime calls and the rest kept): a seed small enough to mutate."""
    with gzip.open(FIX / "traces/fp8_decode_default.json.gz", "rt") as fh:
        doc: dict[str, Any] = json.load(fh)
    seen: dict[str, int] = {}
    keep = []
    for ev in doc["traceEvents"]:
        cat = ev.get("cat")
        if cat in ("kernel", "ac2g"):
            seen[cat] = seen.get(cat, 0) + 1
            if seen[cat] > 150:
                continue
        keep.append(ev)
    doc["traceEvents"] = keep
    return doc


KINETO = _kineto_seed()
KINETO_TEXT = json.dumps(KINETO).encode()
KINETO_TREE = tree_target([KINETO])


def test_kineto_seed_is_a_real_trace(tmp: Path) -> None:
    tr = read_trace(write(tmp, "seed.json", KINETO_TEXT))
    assert tr.n_ops == 150 and tr.sm_count == 132


@fuzz(120)
@given(data=st.data())
def test_kineto_mutated(tmp: Path, data: st.DataObject) -> None:
    if data.draw(st.booleans()):
        raw = data.draw(byte_mutation(KINETO_TEXT))
    else:
        raw = json.dumps(data.draw(tree_mutation(KINETO_TREE[0][0], KINETO_TREE[1][0]))).encode()
    name = "k.json"
    if data.draw(st.booleans()):
        raw, name = gzip.compress(raw, compresslevel=1), "k.json.gz"
    parses_or_names_file(read_trace, write(tmp, name, raw))


@fuzz(60)
@given(data=st.data())
def test_kineto_truncated(tmp: Path, data: st.DataObject) -> None:
    gz = data.draw(st.booleans())
    raw = gzip.compress(KINETO_TEXT, compresslevel=1) if gz else KINETO_TEXT
    cut = data.draw(st.integers(0, len(raw) - 1))
    parses_or_names_file(read_trace, write(tmp, "t.json.gz" if gz else "t.json", raw[:cut]))


# --- the fast Kineto parser against the general one, on the real traces


TRACES = FIXTURES / "traces"
MOE = TRACES / "moe_decode_trace.json.gz"


@pytest.fixture(scope="module")
def moe() -> Any:
    return read_trace(MOE)


# ------------------------------------------------------------------------- reader paths


def test_fast_and_general_parsers_agree(moe: Any, tmp_path: Path) -> None:
    b = TraceBuilder(str(MOE), "kineto")
    _general(MOE, b)
    slow = b.build()
    assert (slow.start == moe.start).all() and (slow.dur == moe.dur).all()
    assert slow.names == moe.names and slow.ranges == moe.ranges
    assert (slow.launch_corr == moe.launch_corr).all() and slow.sm_count == moe.sm_count
    # a re-serialized trace (no Kineto layout, deviceProperties after the events) gives the
    # same analysis through the general parser
    d = json.loads(gzip.decompress(MOE.read_bytes()))
    props = d.pop("deviceProperties")
    d["deviceProperties"] = props
    other = tmp_path / "compact.json"
    other.write_text(json.dumps(d, separators=(",", ":")))
    p1, p2 = analyze(moe, segment="all"), analyze(read_trace(other), segment="all")
    assert p2.kernels == p1.kernels and p2.kernel_us == pytest.approx(p1.kernel_us)
    assert p2.sm_count == 132 and p2.occupancy_share == pytest.approx(p1.occupancy_share)
