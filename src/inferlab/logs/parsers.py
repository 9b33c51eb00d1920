"""Line parsers, one per log format, and the state they fill.

A parser is registered with ``@line_parser(name, engine, keywords)``: it runs on a visited line
only when one of its ``keywords`` is in the (cleaned) text, and returns None when the line is
not its format, else how many following lines it joined (terminal hard wraps). A parser with an
``engine`` counts a recognised line for that engine (how the engine of a log is detected).
``ANCHORS`` are the byte strings the reader searches for: every keyword of every parser occurs
in a line only if one of the anchors does (kept short: one ``bytes.find`` pass each).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inferlab.engines.logs import clean_line
from inferlab.logs.model import (
    Milestone,
    OomEvent,
    SeriesPoint,
    TunedConfig,
    UntunedGemm,
    UntunedMoe,
)
from inferlab.logs.reader import Lookahead

__all__ = [
    "ANCHORS",
    "FAST_PARSERS",
    "PARSERS",
    "LineParser",
    "LogState",
    "line_parser",
]

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

#: parsers tried first, alone: a line they recognise is theirs only (their first two keywords
#: are what a line must hold for them)
FAST_PARSERS = ("sglang-batch", "vllm-stats")

#: series points kept in memory (thinned by 2 when full)
SERIES_CAP = 2048
#: gen-throughput samples kept per running-request level (reservoir)
LEVEL_CAP = 256
#: batch-line heads whose rank is cached (the cache is emptied when full)
RANK_CACHE = 256
#: evidence lines kept per item
LINES_CAP = 20
#: OOM lines this close together are one event
OOM_GAP = 40

_RECORD_START = re.compile(
    r"(?:\(|\[|INFO|WARNING|ERROR|DEBUG|CRITICAL|[IWEF]\d{4} |\d{4}-\d\d-\d\d|\d\d-\d\d \d\d:"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:|Traceback|\s+File |\d+\.\d\d\.\d{3}\.\d{3} |#|\w+(?:Error|"
    r"Exception|Warning):)"
)
_TIME = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d|\b\d\d-\d\d \d\d:\d\d:\d\d")
_TAG = re.compile(r"^\[[^\]]*\]\s*")
_RANK = re.compile(r"\[(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d )?((?:[A-Z]{2,4}\d+ ?)+)\]")


def _lines_add(lst: list[int], line: int) -> None:
    if len(lst) < LINES_CAP and (not lst or lst[-1] != line):
        lst.append(line)


@dataclass(slots=True)
class _Level:
    """Gen-throughput samples at one running-request count (a bounded reservoir)."""

    n: int = 0
    samples: list[float] = field(default_factory=list)
    first_line: int = 0

    def add(self, v: float, getrandbits: Callable[[int], int]) -> None:
        """Keep ``v`` with probability LEVEL_CAP / n (reservoir sampling). The slot is drawn
        uniformly from [0, n) by rejection on ``getrandbits``, as ``random.randrange`` does."""
        self.n += 1
        if len(self.samples) < LEVEL_CAP:
            self.samples.append(v)
            return
        n = self.n
        k = n.bit_length()
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        if j < LEVEL_CAP:
            self.samples[j] = v


@dataclass
class SpecStats:
    """Speculative decoding as logged: accept length (tokens per step incl. the bonus token)."""

    n: int = 0
    total: float = 0.0
    lo: float = float("inf")
    hi: float = 0.0
    rate_n: int = 0
    rate_total: float = 0.0
    lines: list[int] = field(default_factory=list)
    #: drafted tokens per step, as the metrics line shows it (per-position list, V0 k)
    draft_tokens: int | None = None
    draft_tokens_line: int | None = None


@dataclass
class _Shape:
    key: tuple[Any, ...]
    lines: list[int]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Oom:
    where: str
    where_from: str
    lines: list[int]
    message: str
    asked: str | None = None
    free: str | None = None
    total: str | None = None
    gpu: int | None = None
    last: int = 0


@dataclass
class LogState:
    """What the parsers gathered from one log (bounded: nothing grows with the log's size)."""

    path: str
    engine: str | None = None  # forced engine: parsers of other engines are skipped
    detected: str | None = None  # the engine found (set before the detectors run)
    engine_hits: dict[str, int] = field(default_factory=dict)
    markers: dict[str, int] = field(default_factory=dict)
    simulated: bool = False
    #: the primary fatal line of the log's end, classified by the engine's signatures
    #: (``inferlab.engines``): (engine, kind, line, text, remedy)
    launch_failure: tuple[str, str, int, str, str] | None = None
    phase: str | None = None
    series: list[SeriesPoint] = field(default_factory=list)
    series_total: int = 0
    series_stride: int = 1
    primary_rank: dict[str, str | None] = field(default_factory=dict)
    levels: dict[int, _Level] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    getrandbits: Callable[[int], int] = field(init=False, repr=False, compare=False)
    load: dict[str, Any] = field(default_factory=dict)  # queue / KV counters
    spec: SpecStats = field(default_factory=SpecStats)
    flags: dict[str, dict[str, Any]] = field(default_factory=dict)
    gemms: dict[tuple[Any, ...], _Shape] = field(default_factory=dict)
    tuned_gemms: dict[tuple[Any, ...], TunedConfig] = field(default_factory=dict)
    moes: dict[tuple[Any, ...], _Shape] = field(default_factory=dict)
    tuned_moes: dict[tuple[Any, ...], TunedConfig] = field(default_factory=dict)
    ooms: list[_Oom] = field(default_factory=list)
    remedies: list[str] = field(default_factory=list)
    remedies_line: int | None = None
    capture_failures: list[tuple[int, str]] = field(default_factory=list)
    #: the first CUDA-graph capture start line since the last capture end line, and that end
    capture_begin: int | None = None
    capture_end: int | None = None
    #: a traceback in the log's end that begins after an unfinished capture (``traceback``)
    capture_traceback: dict[str, Any] | None = None
    nccl_errors: dict[str, list[int]] = field(default_factory=dict)
    nccl_warns: dict[str, list[int]] = field(default_factory=dict)
    nccl_timeouts: list[dict[str, Any]] = field(default_factory=list)
    advice: dict[str, list[int]] = field(default_factory=dict)
    advice_values: dict[str, dict[str, Any]] = field(default_factory=dict)
    milestones: dict[str, Milestone] = field(default_factory=dict)
    slots: list[dict[str, Any]] = field(default_factory=list)
    #: batch-line heads seen last and the rank in each (see ``_rank``)
    rank_cache: dict[str, str | None] = field(default_factory=dict, repr=False)
    #: the index in ``_DECODE_FORMS`` of the form that matched last
    decode_form: int = 0

    def __post_init__(self) -> None:
        self.getrandbits = self.rng.getrandbits

    # -- helpers used by parsers ------------------------------------------------------------
    def hit(self, engine: str | None) -> None:
        if engine is not None:
            self.engine_hits[engine] = self.engine_hits.get(engine, 0) + 1

    def add_point(
        self,
        line: int,
        kind: str,
        head: str,
        rank: str | None,
        running: int | None = None,
        queued: int | None = None,
        gen_tps: float | None = None,
        kv_usage: float | None = None,
        accept_len: float | None = None,
        prompt_tps: float | None = None,
    ) -> None:
        """Count one stats line (of the primary rank of its kind) and keep it in the thinned
        series; ``head`` is the text before the message (its timestamp, if any)."""
        if rank is not None and self.primary_rank.setdefault(kind, rank) != rank:
            return  # another TP/DP rank or engine: the series follows the first one seen
        if kind == "decode" or kind == "stats":
            if running and gen_tps is not None:
                lv = self.levels.get(running)
                if lv is None:
                    lv = self.levels[running] = _Level(first_line=line)
                lv.add(gen_tps, self.getrandbits)
            if queued is not None:
                ld = self.load  # _load's first lines, inline
                ld["samples"] = ld.get("samples", 0) + 1
                if kv_usage is not None and kv_usage > ld.get("max_kv", 0.0):
                    ld["max_kv"] = kv_usage
                if queued > 0:
                    self._queued(line, running, queued, kv_usage)
        n = self.series_total = self.series_total + 1
        if (n - 1) % self.series_stride:
            return
        tm = _TIME.search(head)
        self.series.append(
            SeriesPoint(
                line,
                kind,
                tm.group(0) if tm else None,
                rank,
                running,
                queued,
                gen_tps,
                kv_usage,
                accept_len,
                prompt_tps,
            )
        )
        if len(self.series) >= SERIES_CAP:
            self.series = self.series[::2]
            self.series_stride *= 2

    def _queued(self, line: int, running: int | None, queued: int, kv: float | None) -> None:
        """A stats line with requests waiting (``queued`` > 0)."""
        ld = self.load
        ld["queued"] = ld.get("queued", 0) + 1
        ld["max_queue"] = max(ld.get("max_queue", 0), queued)
        _lines_add(ld.setdefault("queued_lines", []), line)
        if kv is not None and kv >= 0.9:
            ld["full"] = ld.get("full", 0) + 1
            _lines_add(ld.setdefault("full_lines", []), line)
        elif kv is not None:
            ld["below_kv"] = max(ld.get("below_kv", 0.0), kv)
            ld["below"] = ld.get("below", 0) + 1
        if running is not None:
            ld["queued_running_max"] = max(ld.get("queued_running_max", 0), running)

    def flag(self, name: str, value: str, line: int) -> None:
        if name not in self.flags:
            self.flags[name] = {"value": value, "line": line}

    def milestone(
        self, name: str, line: int, text: str, values: dict[str, Any], engine: str | None
    ) -> None:
        old = self.milestones.get(name)
        if old is not None:
            self.milestones[name] = Milestone(
                old.name, old.line, old.time, old.values, old.engine, old.count + 1
            )
            return
        m = _TIME.search(text)
        self.milestones[name] = Milestone(name, line, m.group(0) if m else None, values, engine, 1)


ParseFn = Callable[[LogState, int, str, Lookahead], "int | None"]


@dataclass(frozen=True)
class LineParser:
    name: str
    engine: str | None
    keywords: tuple[str, ...]
    parse: ParseFn


PARSERS: list[LineParser] = []


def line_parser(
    name: str, engine: str | None, keywords: tuple[str, ...]
) -> Callable[[ParseFn], ParseFn]:
    """Register ``fn(state, line_no, text, lookahead) -> consumed | None`` as a parser."""

    def deco(fn: ParseFn) -> ParseFn:
        PARSERS.append(LineParser(name, engine, keywords, fn))
        return fn

    return deco


def _continuation(la: Lookahead, n: int = 3) -> list[str]:
    """The following lines that look like the rest of a hard-wrapped line (up to ``n``)."""
    out = []
    for t in la.lines(n):
        if not t or _RECORD_START.match(t):
            break
        out.append(t)
    return out


def _joined(
    text: str, la: Lookahead, complete: Callable[[str], bool], n: int = 3
) -> tuple[str, int]:
    """``text`` joined with its wrap continuation lines until ``complete`` holds."""
    if complete(text):
        return text, 0
    cont = _continuation(la, n)
    joined = text
    for i, c in enumerate(cont):
        joined += c
        if complete(joined):
            return joined, i + 1
    return text, 0


def _f(v: str | None) -> float | None:
    if v is None:
        return None
    try:
        return float(v)
    except ValueError:
        try:
            return float(v.replace(",", "").rstrip("%"))
        except ValueError:
            return None


def _i(v: str | None) -> int | None:
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        x = _f(v)
        return None if x is None else int(x)


# -- SGLang Prefill / Decode batch ------------------------------------------------------------


#: the Decode batch forms SGLang has printed, one fixed field order (after "Decode batch" and
#: its "." or ","): a line that matches all of it is read from the groups, the others by the
#: general field parser (the same values: every key and value of the line is pinned here)
_DECODE_FAST = re.compile(
    r" #running-req: ([0-9]+), #token: [0-9]+, (?:full )?token usage: ([0-9]+\.[0-9]+), "
    r"(?:accept len: ([0-9]+\.[0-9]+), accept rate: ([0-9]+\.[0-9]+), )?"
    r"(?:pre-allocated usage: [0-9]+\.[0-9]+, #prealloc-req: [0-9]+, #transfer-req: [0-9]+, "
    r"#retracted-req: ([0-9]+), )?"
    r"(?:(?:cuda|npu) graph: (?:True|False), )?"
    r"gen throughput \(token/s\): ([0-9]+\.[0-9]+), (?:largest-len: [0-9]+, )?"
    r"#queue-req: ([0-9]+),?"
)
#: the two commonest Decode forms alone (faster to match), with ``_DECODE_FAST``'s groups
#: (those the form lacks are empty); tried first, the form that matched last first of all
_DECODE_FORMS: tuple[re.Pattern[str], ...] = (
    re.compile(
        r" #running-req: ([0-9]+), #token: [0-9]+, token usage: ([0-9]+\.[0-9]+), ()()()"
        r"gen throughput \(token/s\): ([0-9]+\.[0-9]+), largest-len: [0-9]+, "
        r"#queue-req: ([0-9]+),?"
    ),
    re.compile(
        r" #running-req: ([0-9]+), #token: [0-9]+, token usage: ([0-9]+\.[0-9]+), ()()()"
        r"(?:cuda|npu) graph: (?:True|False), gen throughput \(token/s\): ([0-9]+\.[0-9]+), "
        r"#queue-req: ([0-9]+),?"
    ),
    _DECODE_FAST,
)
#: the same for Prefill batch lines
_PREFILL_FAST = re.compile(
    r" #new-seq: [0-9]+, #new-token: [0-9]+, #cached-token: [0-9]+, "
    r"(?:full )?token usage: ([0-9]+\.[0-9]+), (?:mamba usage: [0-9]+\.[0-9]+, )?"
    r"#running-req: ([0-9]+), #queue-req: ([0-9]+)(?:, #pending-token: [0-9]+)?"
    r"(?:, (?:cuda|npu) graph: (?:True|False))?"
    r"(?:, input throughput \(token/s\): ([0-9]+\.[0-9]+))?,?"
)


def _rank(st: LogState, head: str) -> str | None:
    """The TP/DP/EP rank in a batch line's ``head`` (cached: the lines of one second, rank
    and kind share their head)."""
    cache = st.rank_cache
    try:
        return cache[head]
    except KeyError:
        pass
    rk = _RANK.search(head)
    rank = rk.group(1).strip() if rk else None
    if len(cache) >= RANK_CACHE:
        cache.clear()
    cache[head] = rank
    return rank


def _sglang_fast(st: LogState, ln: int, text: str, i: int, decode: bool) -> bool:
    """A batch line in one of the fixed forms, read from ``_DECODE_FAST``/``_PREFILL_FAST``;
    False (nothing done) for any other line."""
    if decode:
        m = _DECODE_FORMS[st.decode_form].fullmatch(text, i + 13)
        if m is None:
            for k, rx in enumerate(_DECODE_FORMS):
                m = rx.fullmatch(text, i + 13)
                if m is not None:
                    st.decode_form = k
                    break
            else:
                return False
        running, kv, acc_s, rate_s, retracted_s, gen, queued = m.groups()
        head = text[:i]
        acc = float(acc_s) if acc_s else None
        st.add_point(
            ln,
            "decode",
            head,
            _rank(st, head),
            int(running),
            int(queued),
            float(gen),
            float(kv),
            acc,
            None,
        )
        if acc is not None:
            _spec_add(st, ln, acc, float(rate_s) if rate_s else None)
        if retracted_s:
            retracted = int(retracted_s)
            if retracted:
                st.load["retracted"] = st.load.get("retracted", 0) + retracted
                _lines_add(st.load.setdefault("retracted_lines", []), ln)
    else:
        m = _PREFILL_FAST.fullmatch(text, i + 14)
        if m is None:
            return False
        kv, running, queued, prompt = m.groups()
        head = text[:i]
        st.add_point(
            ln,
            "prefill",
            head,
            _rank(st, head),
            int(running),
            int(queued),
            None,
            float(kv),
            None,
            None if prompt is None else float(prompt),
        )
    if st.phase != "serving":
        st.phase = "serving"
    return True


@line_parser("sglang-batch", "sglang", ("Decode batch", "Prefill batch"))
def _sglang_batch(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    kind, i = "decode", text.find("Decode batch")
    if i >= 0 and _sglang_fast(st, ln, text, i, True):
        return 0
    if i < 0:
        kind, i = "prefill", text.find("Prefill batch")
        if i < 0:
            return None
        if _sglang_fast(st, ln, text, i, False):
            return 0
    used = 0
    if kind == "decode" and "#queue-req" not in text and "gen throughput" not in text[i:]:
        text, used = _joined(text, la, lambda t: "#queue-req" in t)
    rest = text[i + (13 if kind == "decode" else 14) :]
    fields: dict[str, str] = {}
    for part in rest.split(", "):
        k, sep, v = part.partition(": ")
        if sep:
            fields[k.lstrip()] = v.rstrip(", ")
    if "#running-req" not in fields and "#new-seq" not in fields:
        return None
    head = text[:i]
    g = fields.get
    kv = g("token usage") or g("full token usage")
    st.add_point(
        ln,
        kind,
        head,
        _rank(st, head),
        _i(g("#running-req")),
        _i(g("#queue-req")),
        _f(g("gen throughput (token/s)")),
        _f(kv),
        _f(g("accept len")),
        _f(g("input throughput (token/s)")),
    )
    acc = _f(fields.get("accept len"))
    if acc is not None:
        _spec_add(st, ln, acc, _f(fields.get("accept rate")))
    retracted = _i(fields.get("#retracted-req"))
    if retracted:
        st.load["retracted"] = st.load.get("retracted", 0) + retracted
        _lines_add(st.load.setdefault("retracted_lines", []), ln)
    if st.phase not in ("serving",):
        st.phase = "serving"
    return used


def _spec_add(st: LogState, ln: int, acc: float, rate: float | None) -> None:
    s = st.spec
    s.n += 1
    s.total += acc
    s.lo = min(s.lo, acc)
    s.hi = max(s.hi, acc)
    if rate is not None:
        s.rate_n += 1
        s.rate_total += rate
    _lines_add(s.lines, ln)


# -- vLLM periodic stats and speculative-decoding metrics --------------------------------------

_STAT = re.compile(r"([A-Za-z][A-Za-z -]*?): ([\d.,]*\d)(?: ?(%|tokens/s|tokens|reqs))?")
_ENGINE_IDX = re.compile(r"Engine (\d+):")
_STATS_END = re.compile(r"%\.?\s*$")


def _stat_fields(seg: str) -> dict[str, tuple[str, str | None]]:
    return {m.group(1).strip(): (m.group(2), m.group(3)) for m in _STAT.finditer(seg)}


def _pct(v: tuple[str, str | None] | None) -> float | None:
    if v is None:
        return None
    x = _f(v[0])
    return None if x is None else x / 100.0 if v[1] == "%" else x


#: vLLM's stats line in its V0 and V1 forms, from "Avg prompt throughput" to the end (as
#: ``_DECODE_FAST``: a line that matches all of it is read from the groups, the same values as
#: ``_stat_fields`` gives)
_VLLM_FAST = re.compile(
    r"Avg prompt throughput: ([0-9]+\.[0-9]+) tokens/s, "
    r"Avg generation throughput: ([0-9]+\.[0-9]+) tokens/s, Running: ([0-9]+) reqs, "
    r"(Swapped: [0-9]+ reqs, )?(?:Waiting|Pending): ([0-9]+) reqs, "
    r"(?:(?:GPU )?KV cache usage: ([0-9]+\.[0-9]+)%(?:, CPU KV cache usage: [0-9]+\.[0-9]+%)?"
    r"|CPU KV cache usage: ([0-9]+\.[0-9]+)%)"
    r"(?:, Prefix cache hit rate: [0-9]+\.[0-9]+%)?\.?"
)


def _vllm_fast(st: LogState, ln: int, text: str) -> bool:
    """A stats line in one of ``_VLLM_FAST``'s forms; False (nothing done) for others."""
    j = text.find("Avg prompt throughput")
    if j < 0:
        return False
    m = _VLLM_FAST.fullmatch(text, j)
    if m is None:
        return False
    prompt, gen, running, swapped, queued, kv, cpu_kv = m.groups()
    if kv is None and swapped is None:
        kv = cpu_kv
    e = _ENGINE_IDX.search(text, 0, j)  # the rest holds no "Engine N:"
    st.add_point(
        ln,
        "stats",
        text,
        f"Engine {e.group(1)}" if e else None,
        int(running),
        int(queued),
        float(gen),
        None if kv is None else float(kv) / 100.0,
        None,
        float(prompt),
    )
    if st.phase != "serving":
        st.phase = "serving"
    return True


@line_parser(
    "vllm-stats", "vllm", ("Avg prompt throughput", "Avg generation throughput", "Running: ")
)
def _vllm_stats(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    if _vllm_fast(st, ln, text):
        return 0
    if "Running: " not in text and "Avg generation throughput" not in text:
        return None
    text, used = _joined(text, la, lambda t: bool(_STATS_END.search(t)))
    parts = text.split("Avg prompt throughput")
    segs = ["Avg prompt throughput" + p for p in parts[1:]] if len(parts) > 1 else [text]
    found = False
    for seg in segs:
        f = _stat_fields(seg)
        running = f.get("Running")
        gen = f.get("Avg generation throughput")
        if running is None and gen is None:
            continue
        kv = f.get("GPU KV cache usage") or f.get("KV cache usage")
        if kv is None and "Swapped" not in f:
            kv = f.get("CPU KV cache usage")  # the CPU backend's own KV cache
        m = _ENGINE_IDX.search(text)
        st.add_point(
            ln,
            "stats",
            text,
            f"Engine {m.group(1)}" if m else None,
            _i(running[0]) if running else None,
            _i((f.get("Waiting") or f.get("Pending") or ("", None))[0]),
            _f(gen[0]) if gen else None,
            _pct(kv),
            None,
            _f(f["Avg prompt throughput"][0]) if "Avg prompt throughput" in f else None,
        )
        found = True
    if found and st.phase != "serving":
        st.phase = "serving"
    return used if found else None


_POSITIONS = re.compile(r"Per-position acceptance rate: ((?:\d\.\d+(?:, )?)+)")


@line_parser("vllm-spec", "vllm", ("SpecDecoding metrics", "Speculative metrics"))
def _vllm_spec(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    text, used = _joined(
        text, la, lambda t: "%" in t.rsplit(",", 1)[-1] or t.rstrip().endswith(".")
    )
    i = max(text.find("SpecDecoding metrics"), text.find("Speculative metrics"))
    f = _stat_fields(text[i:])
    acc = _f((f.get("Mean acceptance length") or ("", None))[0])
    rate = _pct(f.get("Avg Draft acceptance rate") or f.get("Draft acceptance rate"))
    k = _i((f.get("Number of speculative tokens") or ("", None))[0])
    pm = _POSITIONS.search(text)
    if pm:
        k = len([x for x in pm.group(1).split(",") if x.strip()])
    if acc is None and k:  # V0: emitted tokens per step = emitted / (drafted / k)
        emitted = _f((f.get("Number of emitted tokens") or ("", None))[0])
        drafted = _f((f.get("Number of draft tokens") or ("", None))[0])
        if emitted and drafted:
            acc = emitted / (drafted / k)
    if acc is None and rate is None:
        return None
    if k and st.spec.draft_tokens is None:
        st.spec.draft_tokens, st.spec.draft_tokens_line = k, ln
    if acc is not None:
        _spec_add(st, ln, acc, rate)
        st.add_point(ln, "spec", text[:i], None, accept_len=acc)
    return used


# -- untuned / tuned kernel configs ------------------------------------------------------------

_GEMM = re.compile(
    r"N=(\d+),K=(\d+),device_name=([^,\s]+),dtype=([^,\s\]]+?)(?:,block_shape=\[(\d+), ?(\d+)\])?"
    r"\.json"
)
_MOE = re.compile(
    r"E=(\d+),N=(\d+),device_name=([^,\s'\]]+?)(?:,dtype=([^,\s'\]]+?))?"
    r"(?:,block_shape=\[(\d+), ?(\d+)\])?(?:,per_channel_quant=\w+)?(_down)?\.json"
)
_TRITON_DIR = re.compile(r"triton_(\d+_\d+_\d+)")
_FALLBACK = re.compile(r"Fallback to triton version ([\d.]+)")


def _gemm_key(m: re.Match[str]) -> tuple[Any, ...]:
    bs = (int(m.group(5)), int(m.group(6))) if m.group(5) else None
    return (int(m.group(1)), int(m.group(2)), m.group(3), m.group(4), bs)


@line_parser("fp8-gemm-config", None, ("W8A8 Block FP8",))
def _fp8_gemm(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    default = "Using default W8A8 Block FP8" in text
    tuned = "Using configuration from" in text
    if not default and not tuned:
        return None
    text, used = _joined(text, la, lambda t: _GEMM.search(t) is not None)
    m = _GEMM.search(text)
    if m is None:
        return None
    key = _gemm_key(m)
    st.hit("vllm" if "vllm" in text else "sglang" if "sglang" in text else None)
    if default:
        sh = st.gemms.setdefault(key, _Shape(key, []))
        _lines_add(sh.lines, ln)
    elif key not in st.tuned_gemms:
        path = text[text.find("from ") + 5 : m.end()]
        shape = {"n": key[0], "k": key[1], "device": key[2], "dtype": key[3]}
        shape["block_shape"] = list(key[4]) if key[4] else None
        st.tuned_gemms[key] = TunedConfig("fp8-gemm", shape, path, ln)
    return used


@line_parser("moe-config", None, ("MoE",))
def _moe(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    if "Using configuration from" in text and "MoE" in text:
        reason = "tuned"
    elif "Fallback to triton version" in text:
        reason = "fallback"
    elif "down_moe=False" in text:
        reason = "down"
    elif "Using default MoE" in text:
        reason = "default"
    else:
        return None
    text, used = _joined(text, la, lambda t: _MOE.search(t) is not None)
    m = _MOE.search(text)
    if m is None:
        return None
    bs = (int(m.group(5)), int(m.group(6))) if m.group(5) else None
    key = (int(m.group(1)), int(m.group(2)), m.group(3), m.group(4), bs)
    st.hit("vllm" if "vllm" in text else "sglang" if "sglang" in text else None)
    if reason == "tuned":
        if key not in st.tuned_moes:
            shape = {"e": key[0], "n": key[1], "device": key[2], "dtype": key[3]}
            shape["block_shape"] = list(bs) if bs else None
            path = text[text.find("from ") + 5 : m.end()]
            st.tuned_moes[key] = TunedConfig("moe", shape, path, ln)
        return used
    sh = st.moes.setdefault((*key, reason), _Shape((*key, reason), []))
    _lines_add(sh.lines, ln)
    if reason == "fallback":
        fb = _FALLBACK.search(text)
        inst = _TRITON_DIR.search(text)
        if fb:
            sh.extra["triton_version"] = fb.group(1)
        if inst:
            sh.extra["installed_triton"] = inst.group(1).replace("_", ".")
    return used


# -- out of memory, CUDA-graph capture failures ------------------------------------------------

_ASKED = re.compile(r"Tried to allocate ([\d.]+ ?[KMGT]i?B)")
_TOTAL = re.compile(r"total capacity of ([\d.]+(?: ?[KMGT]i?B)?)")
_FREE = re.compile(r"of which ([\d.]+ ?[KMGT]i?B) is free")
_GPU = re.compile(r"GPU (\d+) has a total")
_OOM_WHERE: tuple[tuple[str, str], ...] = (
    ("Capture cuda graph failed", "graph-capture"),
    ("cuda graph", "graph-capture"),
    ("CUDA graph", "graph-capture"),
    ("capturing", "graph-capture"),
    ("warming up sampler", "sampler-warmup"),
    ("Not enough memory. Please try to increase --mem-fraction-static", "kv-cache"),
    ("No available memory for the cache blocks", "kv-cache"),
    ("loading weights", "weight-loading"),
)


@line_parser(
    "cuda-oom",
    None,
    ("out of memory", "OutOfMemory", "Not enough memory", "No available memory for the cache"),
)
def _oom(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    where, source = "", "message"
    for needle, w in _OOM_WHERE:
        if needle in text:
            where = w
            break
    if not where:
        where, source = st.phase or "unknown", "phase"
    st.hit("sglang" if "sglang" in text else "vllm" if "vllm" in text else None)
    asked, total, free, gpu = (
        _ASKED.search(text),
        _TOTAL.search(text),
        _FREE.search(text),
        _GPU.search(text),
    )
    ev = st.ooms[-1] if st.ooms and ln - st.ooms[-1].last <= OOM_GAP else None
    if ev is None:
        if len(st.ooms) >= 20:
            return 0
        ev = _Oom(where, source, [], text.strip()[:300])
        st.ooms.append(ev)
    elif source == "message" and ev.where_from == "phase":
        ev.where, ev.where_from = where, source
    _lines_add(ev.lines, ln)
    ev.last = ln
    if asked and ev.asked is None:
        ev.asked = asked.group(1)
        ev.total = total.group(1) if total else None
        ev.free = free.group(1) if free else None
        ev.gpu = int(gpu.group(1)) if gpu else None
        ev.message = text.strip()[:300]
    _remedies(st, ln, la)
    return 0


def _remedies(st: LogState, ln: int, la: Lookahead) -> None:
    if st.remedies:
        return
    nxt = [_TAG.sub("", t, count=1) for t in la.lines(12)]
    for i, t in enumerate(nxt[:4]):
        if t.strip().startswith("Possible solutions"):
            for r in nxt[i + 1 :]:
                m = re.match(r"\s*\d+\.\s+(.+)", r)
                if not m:
                    break
                st.remedies.append(m.group(1).strip())
            st.remedies_line = ln + i + 1
            return


@line_parser(
    "graph-capture", None, ("Capture cuda graph", "Capturing", "capturing", "capture_model")
)
def _capture(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    if "Capture cuda graph failed" in text:
        reason = text.split("Capture cuda graph failed", 1)[1].lstrip(": ").strip()
        if len(st.capture_failures) < 20:
            st.capture_failures.append((ln, reason[:200]))
        _remedies(st, ln, la)
        st.hit("sglang")
        return 0
    if "Capture cuda graph begin" in text:
        _capture_begins(st, ln)
        st.phase = "graph-capture"
        st.milestone("graph-capture-begin", ln, text, {}, "sglang")
        st.hit("sglang")
        return 0
    m = re.search(
        r"Capture cuda graph end\. Time elapsed: ([\d.]+) s(?:\. mem usage=([\d.]+) GB)?", text
    )
    if m:
        st.capture_end = ln
        st.phase = "warm-up"
        vals: dict[str, Any] = {"seconds": float(m.group(1))}
        if m.group(2):
            vals["memory_gb"] = float(m.group(2))
        st.milestone("graph-captured", ln, text, vals, "sglang")
        st.hit("sglang")
        return 0
    m = re.search(r"Graph capturing finished in (\d+) secs?, took ([\d.]+) GiB", text)
    if m:
        st.capture_end = ln
        st.phase = "warm-up"
        st.milestone(
            "graph-captured",
            ln,
            text,
            {"seconds": float(m.group(1)), "memory_gib": float(m.group(2))},
            "vllm",
        )
        st.hit("vllm")
        return 0
    if "Capturing CUDA graph" in text or "Capturing cudagraphs" in text:
        _capture_begins(st, ln)
    if st.phase != "serving" and (
        "Capturing batches" in text or "Capturing CUDA graph" in text or "capture_model" in text
    ):
        st.phase = "graph-capture"
        return 0
    return None


def _capture_begins(st: LogState, ln: int) -> None:
    if st.capture_begin is None or (st.capture_end or 0) > st.capture_begin:
        st.capture_begin = ln


_TB_START = "Traceback (most recent call last):"
_TB_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_TB_EXC = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit)\b")
_TB_CHAIN = ("During handling of the above exception", "The above exception was the direct")
_DIGITS = str.maketrans("0123456789", "0000000000")


def capture_traceback(st: LogState, tail: list[str], first_line: int) -> None:
    """Set ``st.capture_traceback`` from the log's end (``tail``, whose first line is line
    ``first_line``): the first traceback that begins after a CUDA-graph capture started and
    never ended, with its last frame and its exception line (None when the log ends first).
    A prefix that the ``Traceback`` line carries (a timestamp, a process tag) is cut from the
    lines after it that carry one of the same shape (digits aside)."""
    begin = st.capture_begin
    if begin is None or (st.capture_end is not None and st.capture_end > begin):
        return
    lo = max(0, begin - first_line + 1)  # tail index of the first line after the begin
    start = next((i for i in range(lo, len(tail)) if _TB_START in tail[i]), None)
    if start is None:
        return
    head = clean_line(tail[start])
    prefix = head[: head.find(_TB_START)].translate(_DIGITS)
    body: list[str] = []
    for raw in tail[start + 1 :]:
        t = clean_line(raw)
        if prefix and t[: len(prefix)].translate(_DIGITS) == prefix:
            t = t[len(prefix) :]
        body.append(t)
    frame: dict[str, Any] | None = None
    exc: dict[str, Any] | None = None
    for i, t in enumerate(body):
        m = _TB_FRAME.match(t)
        if m:
            nxt = body[i + 1] if i + 1 < len(body) else ""
            code = "" if _TB_FRAME.match(nxt) or not nxt[:1].isspace() else nxt.strip()
            frame = {
                "line": first_line + start + 1 + i,
                "file": m.group(1),
                "lineno": int(m.group(2)),
                "function": m.group(3),
                "code": code,
            }
        elif not t.strip() or t[:1].isspace() or t.startswith(_TB_CHAIN) or _TB_START in t:
            continue  # a frame's code line, a caret line, a chained traceback
        elif _TB_EXC.match(t):
            exc = {"line": first_line + start + 1 + i, "text": t[:300]}
        else:
            break  # a line of another record: the traceback ended
    st.capture_traceback = {
        "capture_line": begin,
        "traceback_line": first_line + start,
        "last_frame": frame,
        "exception": exc,
    }


# -- NCCL --------------------------------------------------------------------------------------

_NCCL_ERR = re.compile(r"NCCL error:?\s*(.+?)\s*$|(nccl\w+Error)")
_NCCL_WARN = re.compile(r"NCCL WARN (.+?)\s*$")
_WATCHDOG = re.compile(
    r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)"
    r".*?Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds"
)
_RANKNO = re.compile(r"\[Rank (\d+)\]")


@line_parser("nccl", None, ("NCCL",))
def _nccl(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    if "Watchdog caught collective operation timeout" in text:
        text, used = _joined(text, la, lambda t: _WATCHDOG.search(t) is not None)
        m = _WATCHDOG.search(text)
        r = _RANKNO.search(text)
        if len(st.nccl_timeouts) < 20:
            st.nccl_timeouts.append(
                {
                    "line": ln,
                    "rank": int(r.group(1)) if r else None,
                    "seq": int(m.group(1)) if m else None,
                    "op": m.group(2) if m else None,
                    "timeout_ms": int(m.group(3)) if m else None,
                    "ran_ms": int(m.group(4)) if m else None,
                }
            )
        return used
    w = _NCCL_WARN.search(text)
    if w:
        msg = re.sub(r"\d+", "N", w.group(1))[:160]
        if msg in st.nccl_warns or len(st.nccl_warns) < 10:
            _lines_add(st.nccl_warns.setdefault(msg, []), ln)
        return 0
    e = _NCCL_ERR.search(text)
    if e and "raise " not in text and "{" not in (e.group(1) or ""):
        msg = (e.group(1) or e.group(2) or "").strip()[:200]
        if msg in st.nccl_errors or len(st.nccl_errors) < 10:
            _lines_add(st.nccl_errors.setdefault(msg, []), ln)
        st.hit("vllm" if "vllm" in text else "sglang" if "sglang" in text else None)
        return 0
    return None


# -- the engine's own performance advice -------------------------------------------------------


@dataclass(frozen=True)
class Advice:
    """An engine's performance warning, what it means and the env / flag that answers it."""

    name: str
    pattern: re.Pattern[str]
    engine: str
    message: str
    action: str
    env: dict[str, str] = field(default_factory=dict)
    severity: str = "warning"


ADVICE: list[Advice] = [
    Advice(
        "tcmalloc-not-preloaded",
        re.compile(r"libtcmalloc is not found in LD_PRELOAD"),
        "vllm",
        "vLLM's CPU worker runs without tcmalloc (libtcmalloc is not in LD_PRELOAD)",
        "set LD_PRELOAD to include libtcmalloc_minimal.so.4 (e.g. in the config's env)",
        {"LD_PRELOAD": "libtcmalloc_minimal.so.4"},
    ),
    Advice(
        "iomp-not-preloaded",
        re.compile(r"libiomp is not found in LD_PRELOAD"),
        "vllm",
        "vLLM's CPU worker runs without Intel OpenMP (libiomp is not in LD_PRELOAD)",
        "set LD_PRELOAD to include libiomp5.so (e.g. in the config's env)",
        {"LD_PRELOAD": "libiomp5.so"},
    ),
    Advice(
        "spec-decode-without-iomp",
        re.compile(r"Speculative decoding on CPU without Intel OpenMP in LD_PRELOAD"),
        "vllm",
        "speculative decoding on vLLM's CPU backend without Intel OpenMP: vLLM warns of a "
        "significant performance loss",
        "set LD_PRELOAD to include libiomp5.so before measuring speculative decoding on CPU",
        {"LD_PRELOAD": "libiomp5.so"},
    ),
    Advice(
        "spec-decode-batched-tokens",
        re.compile(
            r"max_num_scheduled_tokens is set to (?P<tokens>\d+) based on the speculative "
            r"decoding settings"
        ),
        "vllm",
        "vLLM capped max_num_scheduled_tokens at {tokens} for the speculative draft slots "
        "(it warns of suboptimal performance)",
        "raise --max-num-batched-tokens, or lower num_speculative_tokens",
        {},
        "info",
    ),
]


@line_parser("advice", None, ("LD_PRELOAD", "suboptimal performance"))
def _advice(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    for a in ADVICE:
        if st.engine is not None and a.engine != st.engine:
            continue
        m = a.pattern.search(text)
        if m:
            _lines_add(st.advice.setdefault(a.name, []), ln)
            st.advice_values.setdefault(a.name, m.groupdict())
            st.hit(a.engine)
            return 0
    return None


# -- startup milestones ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    name: str
    pattern: re.Pattern[str]
    engine: str | None
    phase: str | None
    values: tuple[tuple[str, str], ...] = ()  # (key, converter: f=float, i=int, s=str)


_STEPS: tuple[_Step, ...] = (
    _Step(
        "weights-loading",
        re.compile(r"Load weight begin\. avail mem=([\d.]+) GB"),
        "sglang",
        "weight-loading",
        (("avail_gb", "f"),),
    ),
    _Step(
        "weights-loaded",
        re.compile(
            r"Load weight end\. (?:elapsed=[\d.]+ s, )?type=(\w+), dtype=([\w.]+), "
            r"avail mem=([\d.]+) GB(?:, mem usage=([\d.]+) GB)?"
        ),
        "sglang",
        "kv-cache",
        (("model", "s"), ("dtype", "s"), ("avail_gb", "f"), ("weights_gb", "f")),
    ),
    _Step(
        "kv-cache",
        re.compile(r"Memory pool end\. avail mem=([\d.]+) GB"),
        "sglang",
        "graph-capture",
        (("avail_gb", "f"),),
    ),
    _Step(
        "kv-cache-allocated",
        re.compile(
            r"KV Cache is allocated\. #tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB"
        ),
        "sglang",
        None,
        (("tokens", "i"), ("k_gb", "f"), ("v_gb", "f")),
    ),
    _Step(
        "kv-cache-tokens",
        re.compile(r"max_total_num_tokens=(\d+).*?max_running_requests=(\d+)"),
        "sglang",
        None,
        (("tokens", "i"), ("max_running_requests", "i")),
    ),
    _Step("ready", re.compile(r"The server is fired up and ready to roll"), "sglang", "serving"),
    _Step(
        "weights-loading",
        re.compile(r"Loading safetensors checkpoint shards"),
        None,
        "weight-loading",
    ),
    _Step(
        "weights-loading",
        re.compile(r"Starting to load model (\S+?)\.{0,3}$"),
        "vllm",
        "weight-loading",
        (("model", "s"),),
    ),
    _Step(
        "weights-loaded",
        re.compile(r"Loading weights took ([\d.]+) seconds"),
        "vllm",
        "kv-cache",
        (("seconds", "f"),),
    ),
    _Step(
        "model-loaded",
        re.compile(r"Model loading took ([\d.]+) (GiB|GB)(?: memory)? and ([\d.]+) seconds"),
        "vllm",
        "kv-cache",
        (("weights_gib", "f"), ("unit", "s"), ("seconds", "f")),
    ),
    _Step(
        "kv-cache",
        re.compile(r"Available KV cache memory: ([\d.]+) GiB"),
        "vllm",
        "kv-cache",
        (("memory_gib", "f"),),
    ),
    _Step(
        "kv-cache-tokens",
        re.compile(r"(GPU|CPU) KV cache size: ([\d,]+) tokens"),
        "vllm",
        "warm-up",
        (("device", "s"), ("tokens", "i")),
    ),
    _Step(
        "max-concurrency",
        re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x"),
        "vllm",
        None,
        (("tokens_per_request", "i"), ("concurrency", "f")),
    ),
    _Step(
        "engine-ready",
        re.compile(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s"),
        "vllm",
        "warm-up",
        (("seconds", "f"),),
    ),
    _Step("ready", re.compile(r"Application startup complete"), None, "serving"),
    _Step(
        "listening",
        re.compile(r"HTTP server is listening, hostname: (\S+), port: (\d+)"),
        "llamacpp",
        None,
        (("host", "s"), ("port", "i")),
    ),
    _Step(
        "ready", re.compile(r"server is listening on (\S+)"), "llamacpp", "serving", (("url", "s"),)
    ),
    _Step(
        "ready",
        re.compile(r"llama_server: listening on (\S+)"),
        "llamacpp",
        "serving",
        (("url", "s"),),
    ),
    _Step(
        "weights-loading",
        re.compile(r"load_model: loading model '([^']+)'"),
        "llamacpp",
        "weight-loading",
        (("model", "s"),),
    ),
    _Step(
        "device",
        re.compile(
            r"llama_model_load_from_file_impl: using device (\S+) \(([^)]+)\) - (\d+) MiB free"
        ),
        "llamacpp",
        None,
        (("device", "s"), ("name", "s"), ("free_mib", "i")),
    ),
    _Step(
        "model-metadata",
        re.compile(
            r"llama_model_loader: loaded meta data with (\d+) key-value pairs and (\d+) tensors"
        ),
        "llamacpp",
        "weight-loading",
        (("keys", "i"), ("tensors", "i")),
    ),
    _Step("slots-idle", re.compile(r"update_slots: all slots are idle"), "llamacpp", "serving"),
)
_STEP_KEYWORDS = (
    "Load weight",
    "Memory pool end",
    "KV Cache is allocated",
    "max_total_num_tokens",
    "ready to roll",
    "Loading safetensors",
    "Starting to load model",
    "Loading weights took",
    "Model loading took",
    "KV cache memory",
    "KV cache size",
    "Maximum concurrency",
    "init engine",
    "startup complete",
    "listening",
    "loading model",
    "llama_model_load",
    "llama_model_loader: loaded",
    "all slots are idle",
)
_CONV: dict[str, Callable[[str], Any]] = {
    "f": lambda s: float(s.replace(",", "")),
    "i": lambda s: int(s.replace(",", "")),
    "s": str,
}


@line_parser("milestones", None, _STEP_KEYWORDS)
def _milestones(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    for s in _STEPS:
        if s.engine is not None and st.engine is not None and s.engine != st.engine:
            continue
        m = s.pattern.search(text)
        if m is None:
            continue
        vals = {k: _CONV[c](v) for (k, c), v in zip(s.values, m.groups()) if v is not None}
        if s.name == "kv-cache-tokens" and s.engine == "vllm":
            nxt = la.lines(1)
            mc = (
                re.search(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x", nxt[0])
                if nxt
                else None
            )
            if mc:
                vals["concurrency"] = float(mc.group(2))
        if s.name == "kv-cache-tokens" and "max_running_requests" in vals:
            st.flag("max_running_requests", str(vals["max_running_requests"]), ln)
        st.milestone(s.name, ln, text, vals, s.engine)
        if s.phase and not (st.phase == "serving" and s.phase != "serving"):
            st.phase = s.phase
        st.hit(s.engine)
        return 0
    return None


# -- llama.cpp slots ---------------------------------------------------------------------------

_SLOT = re.compile(
    r"slot update_slots: id +(\d+) \| task (-?\d+) \| new prompt, n_ctx_slot = (\d+), "
    r"n_keep = (\d+), n_prompt_tokens = (\d+)"
)


@line_parser("llamacpp-slot", "llamacpp", ("n_ctx_slot",))
def _slot(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    m = _SLOT.search(text)
    if m is None:
        return None
    if len(st.slots) < 200:
        st.slots.append(
            {
                "line": ln,
                "slot": int(m.group(1)),
                "task": int(m.group(2)),
                "n_ctx_slot": int(m.group(3)),
                "n_prompt_tokens": int(m.group(5)),
            }
        )
    return 0


# -- launch flags, wherever the log shows them -------------------------------------------------

_FLAGS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "mem_fraction_static",
        re.compile(r"(?:--mem-fraction-static[ =]|mem_fraction_static=)([\d.]+)"),
    ),
    (
        "gpu_memory_utilization",
        re.compile(r"(?:--gpu-memory-utilization[ =]|gpu_memory_utilization['\"]?[:=] ?)([\d.]+)"),
    ),
    ("cuda_graph_max_bs", re.compile(r"(?:--cuda-graph-max-bs[ =]|cuda_graph_max_bs=)(\d+)")),
    (
        "speculative_algorithm",
        re.compile(r"(?:--speculative-algorithm[ =]|speculative_algorithm=')(\w+)"),
    ),
    (
        "speculative_num_steps",
        re.compile(r"(?:--speculative-num-steps[ =]|speculative_num_steps=)(\d+)"),
    ),
    (
        "speculative_num_draft_tokens",
        re.compile(r"(?:--speculative-num-draft-tokens[ =]|speculative_num_draft_tokens=)(\d+)"),
    ),
    (
        "speculative_eagle_topk",
        re.compile(r"(?:--speculative-eagle-topk[ =]|speculative_eagle_topk=)(\d+)"),
    ),
    (
        "num_speculative_tokens",
        re.compile(r"(?:num_speculative_tokens['\"]?[:=] ?|num_spec_tokens=)(\d+)"),
    ),
    (
        "max_running_requests",
        re.compile(r"(?:--max-running-requests[ =]|max_running_requests=)(\d+)"),
    ),
    ("max_num_seqs", re.compile(r"(?:--max-num-seqs[ =]|max_num_seqs['\"]?[:=] ?)(\d+)")),
)
_FLAG_KEYWORDS = (
    "fraction",
    "memory_utilization",
    "memory-utilization",
    "graph-max-bs",
    "graph_max_bs",
    "speculative",
    "spec_tokens",
    "running-requests",
    "running_requests",
    "max-num-seqs",
    "max_num_seqs",
)


@line_parser("flags", None, _FLAG_KEYWORDS)
def _flags(st: LogState, ln: int, text: str, la: Lookahead) -> int | None:
    found = False
    for name, rx in _FLAGS:
        m = rx.search(text)
        if m:
            st.flag(name, m.group(1), ln)
            found = True
    if "server_args=ServerArgs(" in text:
        st.hit("sglang")
    return 0 if found else None


_MARKERS: tuple[tuple[str, str], ...] = (
    ("sglang/", "sglang"),
    ("sglang.", "sglang"),
    ("vllm/", "vllm"),
    ("vllm.", "vllm"),
    ("vLLM ", "vllm"),
    ("llama_", "llamacpp"),
    ("llama-server", "llamacpp"),
    ("ggml_", "llamacpp"),
)


def markers(st: LogState, text: str) -> None:
    """Weak evidence of an engine (its name in a visited line); used when no parser matched."""
    for needle, engine in _MARKERS:
        if needle in text:
            st.markers[engine] = st.markers.get(engine, 0) + 1
    if "[SIMULATED]" in text:
        st.simulated = True


def milestone_list(st: LogState) -> list[Milestone]:
    return sorted(st.milestones.values(), key=lambda m: m.line)


def ooms(st: LogState) -> list[OomEvent]:
    return [
        OomEvent(o.where, o.where_from, tuple(o.lines), o.message, o.asked, o.free, o.total, o.gpu)
        for o in st.ooms
    ]


def untuned_gemms(st: LogState) -> list[UntunedGemm]:
    """Default-config FP8 GEMM shapes, first-seen order, minus shapes proven tuned."""
    return [
        UntunedGemm(k[0], k[1], k[2], k[3], k[4], tuple(s.lines))
        for k, s in st.gemms.items()
        if k not in st.tuned_gemms
    ]


def untuned_moes(st: LogState) -> list[UntunedMoe]:
    """Untuned fused-MoE shapes, first-seen order, minus shapes proven tuned."""
    out = []
    for k, s in st.moes.items():
        if k[:5] in st.tuned_moes and k[5] == "default":
            continue
        out.append(
            UntunedMoe(
                e=k[0],
                n=k[1],
                device=k[2],
                dtype=k[3],
                lines=tuple(s.lines),
                block_shape=k[4],
                reason=k[5],
                triton_version=s.extra.get("triton_version"),
            )
        )
    return out
