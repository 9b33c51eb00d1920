"""vLLM's log lines: the engine stats (V0 and V1), speculative-decoding metrics, startup steps,
CUDA-graph capture and the CPU backend's performance advice."""

from __future__ import annotations

import re

from inferlab.logs.formats import base
from inferlab.logs.formats.base import Advice, Field, LineFormat, Wrap, f_, i_, s_, step
from inferlab.logs.formats.values import lenient_float, lenient_int, percent

__all__ = ["ADVICE", "FORMATS", "MARKERS", "STATS"]

E = "vllm"
#: names in a line that hint at vLLM (weak evidence, used when no format read the line)
MARKERS = ("vllm/", "vllm.", "vLLM ")

#: ``key: value [unit]`` items of the stats and metrics lines
_ITEM = re.compile(r"([A-Za-z][A-Za-z -]*?): ([\d.,]*\d)(?: ?(%|tokens/s|tokens|reqs))?")


def stat_pairs(text: str) -> dict[str, str]:
    """The ``key: value`` items of a stats line; a percentage keeps its ``%``."""
    return {
        m.group(1).strip(): m.group(2) + ("%" if m.group(3) == "%" else "")
        for m in _ITEM.finditer(text)
    }


def share(v: str) -> float | None:
    """An item's value as a fraction when it is printed as a percentage, else as it is."""
    x = lenient_float(v)
    return None if x is None else x / 100.0 if v.endswith("%") else x


def count_items(v: str) -> int:
    """``0.5, 0.3, 0.1`` → 3."""
    return len([x for x in v.split(",") if x.strip()])


#: a stats line's values, in this order in every stats format (kind ``stats``); the CPU
#: backend's own KV cache usage counts as the KV usage when the line has no ``Swapped``
STATS = (
    Field("prompt_tps", float, "tokens/s"),
    base.GEN_TPS,
    base.RUNNING,
    base.QUEUED,
    Field("kv_usage", percent, "fraction", optional=True),
    Field("cpu_kv_usage", percent, "fraction", optional=True),
    Field("swapped", str, "", optional=True),
    Field("engine_index", str, "", pattern=re.compile(r"Engine (\d+):")),
)
_STATS_KEYS = (
    Field("prompt_tps", lenient_float, "tokens/s", keys=("Avg prompt throughput",)),
    Field("gen_tps", lenient_float, "tokens/s", keys=("Avg generation throughput",)),
    Field("running", lenient_int, "requests", keys=("Running",)),
    Field("queued", lenient_int, "requests", keys=("Waiting", "Pending")),
    Field("kv_usage", share, "fraction", keys=("GPU KV cache usage", "KV cache usage")),
    Field("cpu_kv_usage", share, "fraction", keys=("CPU KV cache usage",)),
    Field("swapped", str, "", keys=("Swapped",)),
    STATS[-1],
)

_STATS_FORMATS = (
    # V0 (metrics.py) and V1 (loggers.py) in their fixed field order, from "Avg prompt
    # throughput" to the end (every key and value pinned: the values the items give)
    LineFormat(
        "vllm-stats",
        E,
        "stats",
        ("Avg prompt throughput",),
        STATS,
        re.compile(
            r"Avg prompt throughput: (?P<prompt_tps>[0-9]+\.[0-9]+) tokens/s, "
            r"Avg generation throughput: (?P<gen_tps>[0-9]+\.[0-9]+) tokens/s, "
            r"Running: (?P<running>[0-9]+) reqs, (?P<swapped>Swapped: [0-9]+ reqs, )?"
            r"(?:Waiting|Pending): (?P<queued>[0-9]+) reqs, "
            r"(?:(?:GPU )?KV cache usage: (?P<kv_usage>[0-9]+\.[0-9]+)%"
            r"(?:, CPU KV cache usage: [0-9]+\.[0-9]+%)?"
            r"|CPU KV cache usage: (?P<cpu_kv_usage>[0-9]+\.[0-9]+)%)"
            r"(?:, Prefix cache hit rate: [0-9]+\.[0-9]+%)?\.?"
        ),
        full=True,
    ),
    # any other form (and hard-wrapped ones), read as items; two glued lines are two records
    LineFormat(
        "vllm-stats-items",
        E,
        "stats",
        ("Running: ", "Avg generation throughput"),
        _STATS_KEYS,
        pairs=stat_pairs,
        need_keys=("Running", "Avg generation throughput"),
        wrap=Wrap(re.compile(r"%\.?\s*$")),
        each="Avg prompt throughput",
    ),
)

#: speculative decoding (kind ``spec``): the accept length is logged (V1), or V0's emitted /
#: (drafted / k) tokens per step; k is the count of per-position rates when they are shown
_SPEC = LineFormat(
    "vllm-spec-metrics",
    E,
    "spec",
    ("SpecDecoding metrics", "Speculative metrics"),
    (
        Field("accept_len", lenient_float, "tokens/step", keys=("Mean acceptance length",)),
        Field(
            "accept_rate",
            share,
            "fraction",
            keys=("Avg Draft acceptance rate", "Draft acceptance rate"),
        ),
        Field("k", lenient_int, "tokens", keys=("Number of speculative tokens",)),
        Field("emitted", lenient_float, "tokens", keys=("Number of emitted tokens",)),
        Field("drafted", lenient_float, "tokens", keys=("Number of draft tokens",)),
        Field(
            "positions",
            count_items,
            "tokens",
            pattern=re.compile(r"Per-position acceptance rate: ((?:\d\.\d+(?:, )?)+)"),
        ),
    ),
    pairs=stat_pairs,
    wrap=Wrap(re.compile(r"%[^,]*$|\.\s*$")),
)

#: the next line of ``kv-cache-tokens`` holds the maximum concurrency
_CONCURRENCY = step(
    E,
    "max-concurrency",
    "Maximum concurrency",
    r"Maximum concurrency for (?P<tokens_per_request>[\d,]+) tokens per request: "
    r"(?P<concurrency>[\d.]+)x",
    None,
    i_("tokens_per_request", "tokens"),
    f_("concurrency", "requests"),
)
# left unformatted: a table, one launch step a row (name, needle, pattern, next phase, fields)
_STEPS = (
    step(E, "weights-loading", "Starting to load model",
         r"Starting to load model (?P<model>\S+?)\.{0,3}$", "weight-loading", s_("model")),
    step(E, "weights-loaded", "Loading weights took",
         r"Loading weights took (?P<seconds>[\d.]+) seconds", "kv-cache", f_("seconds", "s")),
    step(E, "model-loaded", "Model loading took",
         r"Model loading took (?P<weights_gib>[\d.]+) (?P<unit>GiB|GB)(?: memory)? and "
         r"(?P<seconds>[\d.]+) seconds", "kv-cache",
         f_("weights_gib", "GiB"), s_("unit"), f_("seconds", "s")),
    step(E, "kv-cache", "KV cache memory",
         r"Available KV cache memory: (?P<memory_gib>[\d.]+) GiB", "kv-cache",
         f_("memory_gib", "GiB")),
    step(E, "kv-cache-tokens", "KV cache size",
         r"(?P<device>GPU|CPU) KV cache size: (?P<tokens>[\d,]+) tokens", "warm-up",
         s_("device"), i_("tokens", "tokens"), then=(_CONCURRENCY, ("concurrency",))),
    _CONCURRENCY,
    step(E, "engine-ready", "init engine",
         r"init engine \(profile, create kv cache, warmup model\) took (?P<seconds>[\d.]+) s",
         "warm-up", f_("seconds", "s")),
)  # fmt: skip

_CAPTURE = (
    LineFormat(
        "vllm-graph-captured",
        E,
        "capture.end",
        ("Graph capturing finished",),
        (Field("seconds", float, "s"), Field("memory_gib", float, "GiB")),
        re.compile(
            r"Graph capturing finished in (?P<seconds>\d+) secs?, took (?P<memory_gib>[\d.]+) GiB"
        ),
        always=True,
    ),
    # a capture begins (counted for no engine: these words are not vLLM's alone)
    LineFormat(
        "vllm-capturing", None, "capture.begins", ("Capturing CUDA graph", "Capturing cudagraphs")
    ),
)

ADVICE: tuple[Advice, ...] = (
    Advice(
        "tcmalloc-not-preloaded",
        re.compile(r"libtcmalloc is not found in LD_PRELOAD"),
        E,
        "vLLM's CPU worker runs without tcmalloc (libtcmalloc is not in LD_PRELOAD)",
        "set LD_PRELOAD to include libtcmalloc_minimal.so.4 (e.g. in the config's env)",
        {"LD_PRELOAD": "libtcmalloc_minimal.so.4"},
    ),
    Advice(
        "iomp-not-preloaded",
        re.compile(r"libiomp is not found in LD_PRELOAD"),
        E,
        "vLLM's CPU worker runs without Intel OpenMP (libiomp is not in LD_PRELOAD)",
        "set LD_PRELOAD to include libiomp5.so (e.g. in the config's env)",
        {"LD_PRELOAD": "libiomp5.so"},
    ),
    Advice(
        "spec-decode-without-iomp",
        re.compile(r"Speculative decoding on CPU without Intel OpenMP in LD_PRELOAD"),
        E,
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
        E,
        "vLLM capped max_num_scheduled_tokens at {tokens} for the speculative draft slots "
        "(it warns of suboptimal performance)",
        "raise --max-num-batched-tokens, or lower num_speculative_tokens",
        {},
        "info",
    ),
)

FORMATS: tuple[LineFormat, ...] = (
    *_STATS_FORMATS,
    _SPEC,
    *_STEPS,
    *_CAPTURE,
    *(a.line_format() for a in ADVICE),
)
