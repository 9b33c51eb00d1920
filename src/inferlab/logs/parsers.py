"""Which formats read a visited line, in which order, and what a read line counts for.

Record kinds read a line in ``KINDS`` order (a line may be read by several: a startup step that
also shows a flag); within a kind, the first format whose prefix the line holds, that reads it
and whose sink accepts the record wins (``flag``: every flag the line shows). ``FAST`` kinds are
tried first and alone on a line that holds one of their triggers: the periodic stats lines,
most of a busy log, are theirs only. A line they did not take is searched for engine names
(``MARKERS``, weak evidence) and read by every kind. A read line counts for its format's engine
(how the engine of a log is detected).

Full-line formats of one kind and prefix read a line the same way (every key and value pinned),
so the one that read the last line is tried first. ``ANCHORS`` are the byte strings the reader
searches for: every prefix of every format occurs in a line only if one of the anchors does
(kept short: one ``bytes.find`` pass each).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from inferlab.engines.logs import clean_line
from inferlab.logs.formats import tables
from inferlab.logs.formats.base import FMT, TEXT, LineFormat, Record
from inferlab.logs.formats.match import read
from inferlab.logs.reader import Lookahead, Visitor
from inferlab.logs.sinks import SINKS, Sink
from inferlab.logs.state import LogState

__all__ = ["ANCHORS", "FAST", "KINDS", "anchors", "markers", "visitor"]

#: what the reader searches each block for (see the module docstring)
ANCHORS: tuple[bytes, ...] = (
    b"unning",  # #running-req, Running:, max_running_requests
    b"tokens",  # KV cache size, SpecDecoding, max_total_num_tokens, n_prompt_tokens
    b"onfig",  # untuned / tuned kernel configs, vLLM engine config, speculative_config
    b"emory",  # OOM, Memory pool, KV cache memory, gpu_memory_utilization
    b"NCCL",
    b"erformance",  # engine advice, "Performance might be sub-optimal"
    b"apture",  # CUDA-graph capture (Capture/Capturing/capturing)
    b"avail mem",  # SGLang Load weight begin/end
    b"oading",  # weight loading
    b" took ",  # vLLM init engine / Graph capturing finished
    b"ready",  # SGLang ready
    b"startup complete",
    b"listening",
    b"slot",
    b"llama_model",
    b"fraction",  # --mem-fraction-static / mem_fraction_static
    b"peculative",
    b"args:",  # vLLM non-default args
)

#: record kinds, in the order they read a line (a kind is a format's ``kind`` up to its ".")
KINDS = (
    "batch",
    "stats",
    "spec",
    "fp8-gemm",
    "moe",
    "oom",
    "capture",
    "nccl",
    "advice",
    "step",
    "slot",
    "flag",
)
#: kinds where every format that reads a line applies (not the first one only)
EVERY = ("flag",)
#: kinds tried first, alone, on a line that holds one of their triggers
FAST: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("batch", ("Decode batch", "Prefill batch")),
    ("stats", ("Avg prompt throughput", "Avg generation throughput")),
)


@dataclass(eq=False, slots=True)
class _Entry:
    """The formats of one kind with one prefix, in their order: the full-line ones first (the
    last winner first of all), then the others."""

    prefix: tuple[str, ...]
    sink: Sink
    #: the engine its lines count for, when its formats name it (else each line names it)
    engine: str | None
    key: str
    full: list[LineFormat] = field(default_factory=list)
    other: list[LineFormat] = field(default_factory=list)
    #: the compiled matcher of the full-line format that read the last line
    last: Callable[[str, int], Record | None] | None = None


def _read(e: _Entry, text: str, la: Lookahead) -> Record | None:
    """``text`` read by the formats of ``e`` after the full-line ones."""
    for f in e.other:
        if (rec := read(f, text, la)) is not None:
            return rec
    return None


def _entries(fmts: Sequence[LineFormat]) -> list[_Entry]:
    """One entry per format, except that full-line formats of one prefix (and the format after
    them with that prefix, their fallback) share one: its prefix is searched once."""
    out: list[_Entry] = []
    for f in fmts:
        e = out[-1] if out else None
        same = e is not None and (e.prefix, e.engine, e.sink) == (f.prefix, f.engine, SINKS[f.kind])
        if not (e is not None and same and e.full and not e.other):
            e = _Entry(f.prefix, SINKS[f.kind], f.engine, f.prefix[0])
            out.append(e)
        if f.full and not e.other:
            e.full.append(f)
            e.last = e.last or f.read_at
        else:
            e.other.append(f)
    return out


def _kinds(engine: str | None) -> dict[str, list[_Entry]]:
    """Each kind's entries, for a log of ``engine`` (None: any; formats of another engine are
    skipped, unless they are read ``always``)."""
    by_kind: dict[str, list[LineFormat]] = {k: [] for k in KINDS}
    for f in tables().formats:
        if engine is None or f.engine in (None, engine) or f.always:
            by_kind[f.kind.split(".")[0]].append(f)
    return {k: _entries(v) for k, v in by_kind.items() if v}


def _run(
    st: LogState, entries: list[_Entry], every: bool, ln: int, text: str, la: Lookahead
) -> int | None:
    """Read ``text`` with one kind's entries; what the sink(s) consumed, None if none read it."""
    used: int | None = None
    for e in entries:
        if e.last is not None:  # full-line formats first: their compiled ``read``
            at = text.find(e.key)
            if at < 0:
                continue
            rec = e.last(text, at)
            if rec is None:  # another form than the last line's
                for f in e.full:
                    if f.read_at is not e.last and (rec := f.read_at(text, at)) is not None:
                        e.last = f.read_at
                        break
                else:
                    rec = _read(e, text, la)
        else:
            for p in e.prefix:
                if p in text:
                    break
            else:
                continue
            rec = _read(e, text, la)
        if rec is None:
            continue
        r = e.sink(st, ln, rec, la)
        if r is None:
            continue
        eng = e.engine or rec[FMT].engine_of(rec[TEXT])
        if eng is not None:
            st.engine_hits[eng] = st.engine_hits.get(eng, 0) + 1
        if not every:
            return r
        used = r if used is None else max(used, r)
    return used


def markers(st: LogState, text: str, table: dict[str, tuple[str, ...]] | None = None) -> None:
    """Weak evidence of an engine (its name in a visited line); used when no format read it.
    ``table``: ``tables().markers``, looked up once by a caller that visits many lines."""
    for engine, needles in (tables().markers if table is None else table).items():
        for needle in needles:
            if needle in text:
                st.markers[engine] = st.markers.get(engine, 0) + 1
    if "[SIMULATED]" in text:
        st.simulated = True


def anchors() -> tuple[bytes, ...]:
    """``ANCHORS`` and those the registered engines' tables add (``Tables.anchors``)."""
    extra = tables().anchors
    return (*ANCHORS, *(a for a in extra if a not in ANCHORS)) if extra else ANCHORS


def visitor(st: LogState) -> Visitor:
    """The reader's visitor that reads each visited line into ``st``."""
    kinds = _kinds(st.engine)
    table = tables().markers
    fast = [(triggers, kinds[kind]) for kind, triggers in FAST if kind in kinds]
    rest = [(entries, kind in EVERY) for kind, entries in kinds.items()]

    def visit(ln: int, raw: str, la: Lookahead) -> int:
        # formats search (never anchor) their text, so transport prefixes can stay; only
        # colour codes cut through the words they look for
        text = clean_line(raw) if "\x1b" in raw else raw.rstrip()
        if not text:
            return 0
        if not st.simulated and "[SIMULATED]" in text:
            st.simulated = True
        for triggers, entries in fast:
            for t in triggers:
                if t in text:
                    break
            else:
                continue
            r = _run(st, entries, False, ln, text, la)
            if r is not None:
                return r
        markers(st, text, table)
        used = 0
        for entries, every in rest:
            r = _run(st, entries, every, ln, text, la)
            if r is not None:
                used = max(used, r)
        return used

    return visit
