"""What a record of each kind means: its sink applies it to the log's state (``LogState``).

A sink is ``fn(state, line_no, record, lookahead) -> consumed | None``, registered with
``@sink(kind)``: None when the record is not one after all (the next format of its kind is
tried), else how many following lines it joined (the record's ``used``). The formats that make
each kind of record are in ``inferlab.logs.formats``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from inferlab.logs.formats.base import FMT, TEXT, USED, VALUES, Record, by_name
from inferlab.logs.formats.common import OOM_WHERE
from inferlab.logs.formats.match import read
from inferlab.logs.model import TunedConfig
from inferlab.logs.reader import Lookahead
from inferlab.logs.state import LogState, Oom, Shape, lines_add

__all__ = ["SINKS", "Sink", "rank", "sink"]

Sink = Callable[[LogState, int, Record, Lookahead], "int | None"]
SINKS: dict[str, Sink] = {}

#: batch-line heads whose rank is cached (the cache is emptied when full)
RANK_CACHE = 256
#: OOM lines this close together are one event
OOM_GAP = 40

_RANK = re.compile(r"\[(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d )?((?:[A-Z]{2,4}\d+ ?)+)\]")
_TAG = re.compile(r"^\[[^\]]*\]\s*")
_REMEDY = re.compile(r"\s*\d+\.\s+(.+)")
_MISS = "\x00"  # not a rank


def sink(kind: str) -> Callable[[Sink], Sink]:
    """Register ``fn`` as the sink of records of ``kind``."""

    def deco(fn: Sink) -> Sink:
        SINKS[kind] = fn
        return fn

    return deco


def rank(st: LogState, head: str) -> str | None:
    """The TP/DP/EP rank in a batch line's ``head`` (cached: the lines of one second, rank
    and kind share their head)."""
    cache = st.rank_cache
    try:
        return cache[head]
    except KeyError:
        pass
    rk = _RANK.search(head)
    found = rk.group(1).strip() if rk else None
    if len(cache) >= RANK_CACHE:
        cache.clear()
    cache[head] = found
    return found


# -- the periodic stats lines ------------------------------------------------------------------


def _batch(series: str) -> Sink:
    """The sink of an SGLang Decode / Prefill batch line (``formats.sglang.POINT``), a point of
    ``series``."""

    def batch(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
        _, text, at, _, values, used, _ = rec
        running, queued, gen, kv, acc, rate, retracted, prompt = values
        head = text[:at]
        rk = st.rank_cache.get(head, _MISS)  # the cache's hit, without a call
        if rk is _MISS:
            rk = rank(st, head)
        st.add_point(ln, series, head, rk, running, queued, gen, kv, acc, prompt)
        if acc is not None:
            st.spec.add(ln, acc, rate)
        if retracted:
            st.load["retracted"] = st.load.get("retracted", 0) + retracted
            lines_add(st.load.setdefault("retracted_lines", []), ln)
        if st.phase != "serving":
            st.phase = "serving"
        return used

    return batch


sink("batch.decode")(_batch("decode"))
sink("batch.prefill")(_batch("prefill"))


@sink("stats")
def _stats(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    """A vLLM engine stats line (``formats.vllm.STATS``), or two glued into one."""
    _, text, _, _, values, used, more = rec
    for prompt, gen, running, queued, kv, cpu_kv, swapped, engine in (
        (values, *more) if more else (values,)
    ):
        if kv is None and swapped is None:
            kv = cpu_kv  # the CPU backend's own KV cache
        who = None if engine is None else f"Engine {engine}"
        st.add_point(ln, "stats", text, who, running, queued, gen, kv, None, prompt)
    if st.phase != "serving":
        st.phase = "serving"
    return used


@sink("spec")
def _spec(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    """vLLM's speculative-decoding metrics."""
    _, text, at, _, values, used, _ = rec
    acc, rate, k, emitted, drafted, positions = values
    if positions is not None:
        k = positions
    if acc is None and k and emitted and drafted:  # V0: emitted tokens per step
        acc = emitted / (drafted / k)
    if acc is None and rate is None:
        return None
    if k and st.spec.draft_tokens is None:
        st.spec.draft_tokens, st.spec.draft_tokens_line = k, ln
    if acc is not None:
        st.spec.add(ln, acc, rate)
        st.add_point(ln, "spec", text[:at], None, accept_len=acc)
    return used


# -- kernel configs ----------------------------------------------------------------------------


def _shape(v: tuple[Any, ...]) -> tuple[Any, ...]:
    """The shape key of a kernel-config line: its first 4 values and the block shape."""
    return (*v[:4], None if v[4] is None else (v[4], v[5]))


def _tuned(rec: Record, ln: int, kernel: str, key: tuple[Any, ...]) -> TunedConfig:
    """A ``Using configuration from <file>`` line: the shape (by field name) and the file."""
    fmt, text, _, end, _, _, _ = rec
    shape: dict[str, Any] = {f.name: v for f, v in zip(fmt.fields[:4], key)}
    shape["block_shape"] = list(key[-1]) if key[-1] else None
    path = text[text.find("from ") + 5 : end]
    return TunedConfig(kernel, shape, path, ln)


_NOT_FOUND_DIR = re.compile(r"not found at (\S+?)/N=\d+,K=")


@sink("fp8-gemm.default")
def _gemm_default(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    """A shape on the default config; the directory the engine looked in is kept with it."""
    key = _shape(rec[VALUES])
    shape = st.gemms.setdefault(key, Shape(key, []))
    lines_add(shape.lines, ln)
    m = _NOT_FOUND_DIR.search(rec[1])
    if m is not None:
        shape.extra.setdefault("dir", m.group(1))
    return rec[USED]


def _first_tuned(kind: str, table: Callable[[LogState], dict[Any, TunedConfig]]) -> Sink:
    """The sink of a tuned-config line of ``kind``: the first line of each shape is kept in
    ``table(st)``."""

    def keep(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
        key = _shape(rec[VALUES])
        tuned = table(st)
        if key not in tuned:
            tuned[key] = _tuned(rec, ln, kind, key)
        return rec[USED]

    return keep


sink("fp8-gemm.tuned")(_first_tuned("fp8-gemm", lambda st: st.tuned_gemms))
sink("moe.tuned")(_first_tuned("moe", lambda st: st.tuned_moes))


@sink("moe.untuned")
def _moe_untuned(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    """A fused-MoE shape without a tuned config (``reason``: default, down, fallback); the
    values after the shape (a fallback's Triton versions) are kept with it."""
    fmt, _, _, _, values, used, _ = rec
    key = (*_shape(rec[VALUES]), fmt.tags["reason"])
    sh = st.moes.setdefault(key, Shape(key, []))
    lines_add(sh.lines, ln)
    for f, v in zip(fmt.fields[6:], values[6:]):
        if v is not None:
            sh.extra[f.name] = v
    return used


# -- failures: OOM, CUDA-graph capture, NCCL ---------------------------------------------------


def _remedies(st: LogState, ln: int, la: Lookahead) -> None:
    """SGLang's ``Possible solutions:`` list in the lines after ``ln`` (the first one only)."""
    if st.remedies:
        return
    nxt = [_TAG.sub("", t, count=1) for t in la.lines(12)]
    for i, t in enumerate(nxt[:4]):
        if t.strip().startswith("Possible solutions"):
            for r in nxt[i + 1 :]:
                m = _REMEDY.match(r)
                if not m:
                    break
                st.remedies.append(m.group(1).strip())
            st.remedies_line = ln + i + 1
            return


@sink("oom")
def _oom(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    """A CUDA OOM line: a new event, or more lines of the one just before (``OOM_GAP``)."""
    _, text, _, _, values, _, _ = rec
    where, source = next(
        ((w, "message") for needle, w in OOM_WHERE if needle in text),
        (st.phase or "unknown", "phase"),
    )
    asked, total, free, gpu = values
    ev = st.ooms[-1] if st.ooms and ln - st.ooms[-1].last <= OOM_GAP else None
    if ev is None:
        if len(st.ooms) >= 20:
            return 0
        ev = Oom(where, source, [], text.strip()[:300])
        st.ooms.append(ev)
    elif source == "message" and ev.where_from == "phase":
        ev.where, ev.where_from = where, source
    lines_add(ev.lines, ln)
    ev.last = ln
    if asked and ev.asked is None:
        ev.asked, ev.total, ev.free, ev.gpu = asked, total, free, gpu
        ev.message = text.strip()[:300]
    _remedies(st, ln, la)
    return 0


def _capture_begins(st: LogState, ln: int) -> None:
    if st.capture_begin is None or (st.capture_end or 0) > st.capture_begin:
        st.capture_begin = ln


@sink("capture.failed")
def _capture_failed(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    if len(st.capture_failures) < 20:
        st.capture_failures.append((ln, rec[VALUES][0][:200]))
    _remedies(st, ln, la)
    return 0


@sink("capture.begin")
def _capture_begin(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    _capture_begins(st, ln)
    st.phase = "graph-capture"
    st.milestone("graph-capture-begin", ln, rec[TEXT], {}, rec[FMT].engine)
    return 0


@sink("capture.end")
def _capture_end(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    st.capture_end = ln
    st.phase = "warm-up"
    fmt, text, _, _, values, _, _ = rec
    st.milestone("graph-captured", ln, text, by_name(fmt, values), fmt.engine)
    return 0


@sink("capture.begins")
def _capture_begins_only(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    """A capture begins; the line is also a ``capture.phase`` one (so: not consumed here)."""
    _capture_begins(st, ln)
    return None


@sink("capture.phase")
def _capture_phase(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    if st.phase == "serving":
        return None
    st.phase = "graph-capture"
    return 0


@sink("nccl.timeout")
def _nccl_timeout(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    seq, op, timeout_ms, ran_ms, rk = rec[VALUES]
    if len(st.nccl_timeouts) < 20:
        st.nccl_timeouts.append(
            {
                "line": ln,
                "rank": rk,
                "seq": seq,
                "op": op,
                "timeout_ms": timeout_ms,
                "ran_ms": ran_ms,
            }
        )
    return rec[USED]


@sink("nccl.warn")
def _nccl_warn(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    msg = re.sub(r"\d+", "N", rec[VALUES][0])[:160]
    if msg in st.nccl_warns or len(st.nccl_warns) < 10:
        lines_add(st.nccl_warns.setdefault(msg, []), ln)
    return 0


@sink("nccl.error")
def _nccl_error(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    message, error = rec[VALUES]
    if "raise " in rec[TEXT] or "{" in (message or ""):
        return None  # the source line of a raise, or a format string
    msg = (message or error or "").strip()[:200]
    if msg in st.nccl_errors or len(st.nccl_errors) < 10:
        lines_add(st.nccl_errors.setdefault(msg, []), ln)
    return 0


# -- advice, startup steps, slots, flags -------------------------------------------------------


@sink("advice")
def _advice(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    fmt, _, _, _, values, _, _ = rec
    name = fmt.tags["advice"].name
    lines_add(st.advice.setdefault(name, []), ln)
    st.advice_values.setdefault(name, by_name(fmt, values))
    return 0


@sink("step")
def _step(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    """A startup step (``formats.base.step``): a milestone, and the phase from it on."""
    fmt, text, _, _, values, _, _ = rec
    tags = fmt.tags
    vals = by_name(fmt, values)
    if tags["then"] is not None:
        then, names = tags["then"]
        nxt = la.lines(1)
        more = read(then, nxt[0], la) if nxt else None
        if more is not None:
            got = by_name(then, more[4])
            vals.update((k, got[k]) for k in names if k in got)
    for name in tags["flags"]:
        if name in vals:
            st.flag(name, str(vals[name]), ln)
    st.milestone(tags["step"], ln, text, vals, fmt.engine)
    phase = tags["phase"]
    if phase and not (st.phase == "serving" and phase != "serving"):
        st.phase = phase
    return 0


@sink("slot")
def _slot(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    if len(st.slots) < 200:
        st.slots.append({"line": ln, **by_name(rec[FMT], rec[VALUES])})
    return 0


@sink("flag")
def _flag(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    st.flag(rec[FMT].tags["flag"], rec[VALUES][0], ln)
    return 0


@sink("flag.engine")
def _flag_engine(st: LogState, ln: int, rec: Record, la: Lookahead) -> int | None:
    """A line that names its engine (counted by the dispatcher), nothing more."""
    return 0
