"""Property-based fuzzing of every reader of user files, starting from the real fixtures.

Property: every input either parses or raises inferlab's own exception (``InferlabError``)
with a message that names the file; never another exception, never a hang (a hard per-example
alarm, besides hypothesis' deadline). The SSE decoder never raises: a bad stream is a recorded
fault. Examples are bounded and the seed fixed (``derandomize``), so CI runs the same inputs
every time; ``INFERLAB_FUZZ_EXAMPLES=N`` runs N per target for a deeper local search.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import os
import shutil
import signal
import sqlite3
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferlab.campaign.runner import make_plan
from inferlab.errors import InferlabError
from inferlab.load.sse import parse_stream
from inferlab.logs import analyze_log
from inferlab.profile import read_trace
from inferlab.sim import api
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store.imports import parse_file
from inferlab.tune.files import read_config_file

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests/fixtures"
EXAMPLES = int(os.environ.get("INFERLAB_FUZZ_EXAMPLES", "0")) or None
HARD_LIMIT_S = 10  # a single example running this long is a hang

pytestmark = pytest.mark.timeout(600)


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


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:50]):  # the first 50 items of long lists
            yield from _paths(v, (*prefix, i))


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


def _write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _tree_target(seeds: list[Any]) -> tuple[list[Any], list[list[tuple[Any, ...]]]]:
    return seeds, [list(_paths(s)) for s in seeds]


# ----------------------------------------------------------------------------- campaign files

CAMPAIGNS = sorted((ROOT / "examples").glob("*.toml"))
CAMPAIGN_TEXT = [p.read_bytes() for p in CAMPAIGNS]
CAMPAIGN_TREES = _tree_target([tomllib.loads(p.read_text()) for p in CAMPAIGNS])


@fuzz(150)
@given(data=st.data())
def test_campaign_toml_mutated(tmp: Path, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(CAMPAIGN_TEXT))
    parses_or_names_file(make_plan, _write(tmp, "c.toml", data.draw(byte_mutation(seed))))


@fuzz(150)
@given(data=st.data())
def test_campaign_yaml_tree_mutated(tmp: Path, data: st.DataObject) -> None:
    seeds, paths = CAMPAIGN_TREES
    i = data.draw(st.integers(0, len(seeds) - 1))
    text = yaml.safe_dump(data.draw(tree_mutation(seeds[i], paths[i]))).encode()
    if data.draw(st.booleans()):
        text = data.draw(byte_mutation(text))
    parses_or_names_file(make_plan, _write(tmp, "c.yaml", text))


# ----------------------------------------------------------------------------- server logs

LOGS = sorted(FIX.glob("engine_logs/**/*.log")) + sorted(FIX.glob("vllm_cpu/*.log"))
LOG_LINES = [ln for p in LOGS for ln in p.read_bytes().splitlines(keepends=True)]


@fuzz(100)
@given(st.binary(max_size=4096))
def test_log_random_bytes(tmp: Path, blob: bytes) -> None:
    parses_or_names_file(analyze_log, _write(tmp, "r.log", blob))


@fuzz(200)
@given(data=st.data())
def test_log_mutated_real_lines(tmp: Path, data: st.DataObject) -> None:
    lines = data.draw(st.lists(st.sampled_from(LOG_LINES), min_size=1, max_size=40))
    out = [data.draw(byte_mutation(ln)) if data.draw(st.booleans()) else ln for ln in lines]
    engine = data.draw(st.sampled_from(["auto", "sglang", "vllm", "llamacpp"]))
    parses_or_names_file(lambda p: analyze_log(p, engine), _write(tmp, "m.log", b"".join(out)))


@fuzz(40)
@given(data=st.data())
def test_log_gzip_truncated(tmp: Path, data: st.DataObject) -> None:
    raw = gzip.compress(data.draw(st.sampled_from(LOGS)).read_bytes())
    cut = data.draw(st.integers(0, len(raw) - 1))
    parses_or_names_file(analyze_log, _write(tmp, "t.log.gz", raw[:cut]))


def test_log_truncated_at_every_offset(tmp: Path) -> None:
    """A real SGLang OOM log cut at each of its byte offsets (every partial last line)."""
    real = (
        FIX / "engine_logs/oom_graph_capture/sglang-issue5285_deepep-h20-capture-oom-traceback.log"
    )
    raw = real.read_bytes()
    for cut in range(len(raw) + 1):
        parses_or_names_file(analyze_log, _write(tmp, "cut.log", raw[:cut]))


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
KINETO_TREE = _tree_target([KINETO])


def test_kineto_seed_is_a_real_trace(tmp: Path) -> None:
    tr = read_trace(_write(tmp, "seed.json", KINETO_TEXT))
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
    parses_or_names_file(read_trace, _write(tmp, name, raw))


@fuzz(60)
@given(data=st.data())
def test_kineto_truncated(tmp: Path, data: st.DataObject) -> None:
    gz = data.draw(st.booleans())
    raw = gzip.compress(KINETO_TEXT, compresslevel=1) if gz else KINETO_TEXT
    cut = data.draw(st.integers(0, len(raw) - 1))
    parses_or_names_file(read_trace, _write(tmp, "t.json.gz" if gz else "t.json", raw[:cut]))


def _nsys_seed(tmp: Path) -> bytes:
    from test_profile import _nsys_db  # the export's real schema (nsys 2024.6, schema 3.16)

    path = _nsys_db(tmp / "seed.sqlite")
    data = path.read_bytes()
    path.unlink()
    return data


NSYS_SEED = bytearray()
_COUNT = itertools.count()
SQL_VALUES = st.none() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=True) | st.text(max_size=8) | st.binary(max_size=8)  # fmt: skip


@fuzz(120)
@given(data=st.data())
def test_nsys_mutated(tmp: Path, data: st.DataObject) -> None:
    """A real-schema export with values of any SQLite type written into its columns, tables
    dropped or renamed, or its pages damaged."""
    seed = NSYS_SEED or NSYS_SEED.extend(_nsys_seed(tmp)) or NSYS_SEED
    NSYS_SEED[:] = seed
    path = tmp / f"n{next(_COUNT)}.sqlite"
    if data.draw(st.booleans()):
        path.write_bytes(bytes(seed[:100]) + data.draw(byte_mutation(bytes(seed[100:]))))
    else:
        path.write_bytes(bytes(seed))
        db = sqlite3.connect(path)
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for _ in range(data.draw(st.integers(1, 4))):
            table = data.draw(st.sampled_from(tables))
            cols = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
            op = data.draw(st.sampled_from(["set", "set", "drop", "rename", "delete"]))
            if op == "set" and cols:
                col = data.draw(st.sampled_from(cols))
                with contextlib.suppress(sqlite3.Error):
                    db.execute(f'UPDATE "{table}" SET "{col}" = ?', (data.draw(SQL_VALUES),))
            elif op == "drop":
                db.execute(f'DROP TABLE IF EXISTS "{table}"')
                tables.remove(table)
            elif op == "rename" and cols:
                col = data.draw(st.sampled_from(cols))
                with contextlib.suppress(sqlite3.Error):
                    db.execute(f'ALTER TABLE "{table}" RENAME COLUMN "{col}" TO "x{col}"')
            elif op == "delete":
                db.execute(f'DELETE FROM "{table}"')
            if not tables:
                break
        db.commit()
        db.close()
    parses_or_names_file(read_trace, path)
    for leftover in tmp.glob(path.name + "*"):
        leftover.unlink()


# ----------------------------------------------------------------------------- importers

IMPORTS = sorted(p for p in FIX.glob("imports/**/*") if p.is_file())


def _import_seed(path: Path) -> tuple[bool, Any]:
    text = path.read_text()
    try:
        return False, json.loads(text)
    except ValueError:
        return True, [json.loads(x) for x in text.splitlines() if x.strip()]


IMPORT_SEEDS = [_import_seed(p) for p in IMPORTS]
IMPORT_PATHS = [list(_paths(doc)) for _, doc in IMPORT_SEEDS]


@fuzz(200)
@given(data=st.data())
def test_importers_mutated(tmp: Path, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(IMPORTS) - 1))
    jsonl, doc = IMPORT_SEEDS[i]
    if data.draw(st.booleans()):
        raw = data.draw(byte_mutation(IMPORTS[i].read_bytes()))
    else:
        doc = data.draw(tree_mutation(doc, IMPORT_PATHS[i]))
        lines = doc if jsonl and isinstance(doc, list) else [doc]
        raw = "\n".join(json.dumps(x) for x in lines).encode()
    d = tmp / f"imp{next(_COUNT)}"
    if IMPORTS[i].parent == FIX / "imports":
        d.mkdir()
    else:  # an AIPerf export: read with its sibling file
        shutil.copytree(IMPORTS[i].parent, d)
    siblings = tuple(p for p in d.iterdir() if p.name != IMPORTS[i].name)
    parses_or_names_file(parse_file, _write(d, IMPORTS[i].name, raw), siblings)
    shutil.rmtree(d)


# ----------------------------------------------------------------------------- tuned configs

TUNED = sorted(FIX.glob("tune/*/*.json"))
TUNED_SEEDS = _tree_target([json.loads(p.read_text()) for p in TUNED])


@fuzz(150)
@given(data=st.data())
def test_tuned_config_json_mutated(tmp: Path, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(TUNED) - 1))
    if data.draw(st.booleans()):
        raw = data.draw(byte_mutation(TUNED[i].read_bytes()))
    else:
        raw = json.dumps(data.draw(tree_mutation(TUNED_SEEDS[0][i], TUNED_SEEDS[1][i]))).encode()
    parses_or_names_file(read_config_file, _write(tmp, TUNED[i].name, raw))


# ----------------------------------------------------------------------------- SSE decoder


def _sse_seeds() -> list[bytes]:
    """De-chunked SSE bodies as the reference engine writes them (vLLM's wire format):
    completions and chat, with usage, 1 and 3 tokens per event."""
    tok = WordTokenizer()
    words = [b" " + w.encode() for w in tok.vocab]
    out = []
    for endpoint in ("completions", "chat"):
        for k in (1, 3):
            req = api.GenRequest(endpoint, True, True, 6, "hello there", 2)  # type: ignore[arg-type]
            r = api.render(req, "cmpl-1", 0, '"m"', words, [5, 6, 7, 8, 9, 10], k, b"")
            raw = r.head + b"".join(r.frames)
            body, pos = b"", 0
            while True:  # de-chunk
                eol = raw.index(b"\r\n", pos)
                size = int(raw[pos:eol], 16)
                if size == 0:
                    break
                body += raw[eol + 2 : eol + 2 + size]
                pos = eol + 4 + size
            out.append(body)
    return out


SSE = _sse_seeds()


@fuzz(400, deadline_ms=500)
@given(data=st.data())
def test_sse_decoder_never_raises(data: st.DataObject) -> None:
    """Any body, cut into any reads: a result (faults recorded on it), never an exception."""
    if data.draw(st.integers(0, 3)) == 0:
        body = data.draw(st.binary(max_size=2048))
    else:
        body = data.draw(byte_mutation(data.draw(st.sampled_from(SSE))))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(body)), max_size=12))))
    bounds = [0, *cuts, len(body)]
    pieces = [(1000 + i, body[a:b]) for i, (a, b) in enumerate(itertools.pairwise(bounds)) if b > a]
    with hard_limit():
        out = parse_stream(pieces, 10_000)
    assert len(out.event_ns) == len(out.texts)
    assert out.event_ns == sorted(out.event_ns)
    assert (out.error_kind is None) == (out.error_message is None)
