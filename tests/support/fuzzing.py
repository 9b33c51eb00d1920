"""Helpers of the fuzz tests (``test_fuzz*.py``): settings, the property, mutations.

Property: every input either parses or raises inferlab's own exception (``InferlabError``)
with a message that names the file; never another exception, never a hang (a hard per-example
alarm, besides hypothesis' deadline). Examples are bounded and the seed fixed (``derandomize``),
so CI runs the same inputs every time; ``INFERLAB_FUZZ_EXAMPLES=N`` runs N per target.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from inferlab.errors import InferlabError
from support import FIXTURES as FIX
from support import ROOT

__all__ = ["EXAMPLES", "FIX", "ROOT", "byte_mutation", "fuzz", "hard_limit",
           "parses_or_names_file", "paths_of", "tree_mutation", "tree_target", "write"]  # fmt: skip

EXAMPLES = int(os.environ.get("INFERLAB_FUZZ_EXAMPLES", "0")) or None
HARD_LIMIT_S = 10  # a single example running this long is a hang


def fuzz(n: int, deadline_ms: int = 2000) -> Any:
    """Hypothesis settings: ``n`` examples (or INFERLAB_FUZZ_EXAMPLES), fixed seed."""
    return settings(
        max_examples=EXAMPLES or n,
        deadline=timedelta(milliseconds=deadline_ms),
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


class Hang(Exception):
    pass


@contextlib.contextmanager
def hard_limit(seconds: int = HARD_LIMIT_S) -> Iterator[None]:
    def alarm(signum: int, frame: object) -> None:
        raise Hang(f"one example ran for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def parses_or_names_file(
    read: Callable[[Path], object], path: Path, also: tuple[Path, ...] = ()
) -> None:
    """The property: ``read(path)`` returns, or raises an InferlabError naming ``path`` (or
    one of ``also``: files read with it)."""
    with hard_limit():
        try:
            read(path)
        except InferlabError as exc:
            named = any(str(p) in str(exc) or p.name in str(exc) for p in (path, *also))
            assert named, f"file not named: {exc}"


# ----------------------------------------------------------------------------- mutations

TOKENS = [b'"', b"{", b"}", b"[", b"]", b",", b":", b"=", b"\n", b"\x00", b"\xff\xfe",
          b"null", b"-1", b"1e999", b"NaN", b"-0", b"99999999999999999999999", b'"x"',
          b"true", b"[[", b"'", b"\\u0000", b"\xe2\x80\xae", b"#", b"${HOME}", b"  "]  # fmt: skip


@st.composite
def byte_mutation(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` with 1-6 edits: a byte changed, bytes inserted (random or JSON/TOML tokens),
    a span deleted or repeated, or the rest cut off."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        op = draw(st.sampled_from(["set", "insert", "token", "delete", "repeat", "cut"]))
        if op == "set" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "token":
            data[pos:pos] = draw(st.sampled_from(TOKENS))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 200))]
        elif op == "repeat":
            data[pos:pos] = data[pos : pos + draw(st.integers(1, 200))]
        elif op == "cut":
            del data[pos:]
    return bytes(data)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=5,
)


def paths_of(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths_of(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:50]):  # the first 50 items of long lists
            yield from paths_of(v, (*prefix, i))


@st.composite
def tree_mutation(draw: st.DrawFn, seed: Any, paths: list[tuple[Any, ...]]) -> Any:
    """A deep copy of ``seed`` with 1-4 nodes replaced by random JSON values or removed."""
    obj = json.loads(json.dumps(seed))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths))
        if not path:
            obj = draw(JSON_VALUES)
            continue
        parent: Any = obj
        try:
            for key in path[:-1]:
                parent = parent[key]
            if draw(st.booleans()) and isinstance(parent, (dict, list)):
                del parent[path[-1]]
            else:
                parent[path[-1]] = draw(JSON_VALUES)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced this path
    return obj


def write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def tree_target(seeds: list[Any]) -> tuple[list[Any], list[list[tuple[Any, ...]]]]:
    return seeds, [list(paths_of(s)) for s in seeds]
