"""SGLang's log lines: the Decode / Prefill batch stats, startup steps, CUDA-graph capture."""

from __future__ import annotations

import re

from inferlab.logs.formats import base
from inferlab.logs.formats.base import Field, LineFormat, Wrap, f_, i_, s_, step
from inferlab.logs.formats.values import lenient_float, lenient_int, split_pairs

__all__ = ["FORMATS", "MARKERS", "POINT"]

E = "sglang"
#: names in a line that hint at SGLang (weak evidence, used when no format read the line)
MARKERS = ("sglang/", "sglang.")

#: a batch line's values, in this order in every batch format (kinds ``batch.decode`` and
#: ``batch.prefill``: the series it is a point of)
POINT = (
    base.RUNNING,
    base.QUEUED,
    base.GEN_TPS,
    Field("kv_usage", float, "fraction"),
    Field("accept_len", float, "tokens/step", optional=True),
    Field("accept_rate", float, "fraction", optional=True),
    Field("retracted", int, "requests", optional=True),
    Field("prompt_tps", float, "tokens/s", optional=True),
)
#: the same values from a batch line's ``key: value`` items, in any order or form
POINT_KEYS = (
    Field("running", lenient_int, "requests", keys=("#running-req",)),
    Field("queued", lenient_int, "requests", keys=("#queue-req",)),
    Field("gen_tps", lenient_float, "tokens/s", keys=("gen throughput (token/s)",)),
    Field("kv_usage", lenient_float, "fraction", keys=("token usage", "full token usage")),
    Field("accept_len", lenient_float, "tokens/step", keys=("accept len",)),
    Field("accept_rate", lenient_float, "fraction", keys=("accept rate",)),
    Field("retracted", lenient_int, "requests", keys=("#retracted-req",)),
    Field("prompt_tps", lenient_float, "tokens/s", keys=("input throughput (token/s)",)),
)

_RUN = r"#running-req: (?P<running>[0-9]+)"
_KV = r"token usage: (?P<kv_usage>[0-9]+\.[0-9]+)"
_GEN = r"gen throughput \(token/s\): (?P<gen_tps>[0-9]+\.[0-9]+)"
_QUEUE = r"#queue-req: (?P<queued>[0-9]+)"


def _batch(name: str, prefix: str, series: str, pattern: str) -> LineFormat:
    """A batch line in one fixed field order (every key and value pinned: the values are
    those the ``key: value`` reading gives)."""
    return LineFormat(name, E, f"batch.{series}", (prefix,), POINT, re.compile(pattern), full=True)


def _batch_keys(name: str, prefix: str, series: str, wrap: Wrap | None) -> LineFormat:
    """A batch line in any other form, read as its ``key: value`` items."""
    return LineFormat(
        name,
        E,
        f"batch.{series}",
        (prefix,),
        POINT_KEYS,
        pairs=split_pairs,
        need_keys=("#running-req", "#new-seq"),
        skip=1,  # the "." or "," after the prefix
        wrap=wrap,
    )


#: the Decode batch forms SGLang has printed (after "Decode batch" and its "." or ","); the
#: two commonest alone first (faster to match), then all of them in one
_DECODE = (
    _batch(
        "sglang-decode-largest-len",
        "Decode batch",
        "decode",
        rf"Decode batch. {_RUN}, #token: [0-9]+, {_KV}, {_GEN}, largest-len: [0-9]+, {_QUEUE},?",
    ),
    _batch(
        "sglang-decode-cuda-graph",
        "Decode batch",
        "decode",
        rf"Decode batch. {_RUN}, #token: [0-9]+, {_KV}, (?:cuda|npu) graph: (?:True|False), "
        rf"{_GEN}, {_QUEUE},?",
    ),
    _batch(
        "sglang-decode",
        "Decode batch",
        "decode",
        rf"Decode batch. {_RUN}, #token: [0-9]+, (?:full )?{_KV}, "
        r"(?:accept len: (?P<accept_len>[0-9]+\.[0-9]+), "
        r"accept rate: (?P<accept_rate>[0-9]+\.[0-9]+), )?"
        r"(?:pre-allocated usage: [0-9]+\.[0-9]+, #prealloc-req: [0-9]+, #transfer-req: [0-9]+, "
        r"#retracted-req: (?P<retracted>[0-9]+), )?"
        rf"(?:(?:cuda|npu) graph: (?:True|False), )?{_GEN}, (?:largest-len: [0-9]+, )?{_QUEUE},?",
    ),
    _batch_keys(
        "sglang-decode-items",
        "Decode batch",
        "decode",
        Wrap(re.compile("#queue-req"), whole_if="gen throughput"),
    ),
)
_PREFILL = (
    _batch(
        "sglang-prefill",
        "Prefill batch",
        "prefill",
        r"Prefill batch. #new-seq: [0-9]+, #new-token: [0-9]+, #cached-token: [0-9]+, "
        rf"(?:full )?{_KV}, (?:mamba usage: [0-9]+\.[0-9]+, )?{_RUN}, {_QUEUE}"
        r"(?:, #pending-token: [0-9]+)?(?:, (?:cuda|npu) graph: (?:True|False))?"
        r"(?:, input throughput \(token/s\): (?P<prompt_tps>[0-9]+\.[0-9]+))?,?",
    ),
    _batch_keys("sglang-prefill-items", "Prefill batch", "prefill", None),
)

# left unformatted: a table, one launch step a row (name, needle, pattern, next phase, fields)
_STEPS = (
    step(E, "weights-loading", "Load weight begin",
         r"Load weight begin\. avail mem=(?P<avail_gb>[\d.]+) GB", "weight-loading",
         f_("avail_gb", "GB")),
    step(E, "weights-loaded", "Load weight end",
         r"Load weight end\. (?:elapsed=[\d.]+ s, )?type=(?P<model>\w+), dtype=(?P<dtype>[\w.]+), "
         r"avail mem=(?P<avail_gb>[\d.]+) GB(?:, mem usage=(?P<weights_gb>[\d.]+) GB)?",
         "kv-cache", s_("model"), s_("dtype"), f_("avail_gb", "GB"), f_("weights_gb", "GB")),
    step(E, "kv-cache", "Memory pool end",
         r"Memory pool end\. avail mem=(?P<avail_gb>[\d.]+) GB", "graph-capture",
         f_("avail_gb", "GB")),
    step(E, "kv-cache-allocated", "KV Cache is allocated",
         r"KV Cache is allocated\. #tokens: (?P<tokens>\d+), K size: (?P<k_gb>[\d.]+) GB, "
         r"V size: (?P<v_gb>[\d.]+) GB", None,
         i_("tokens", "tokens"), f_("k_gb", "GB"), f_("v_gb", "GB")),
    step(E, "kv-cache-tokens", "max_total_num_tokens",
         r"max_total_num_tokens=(?P<tokens>\d+).*?"
         r"max_running_requests=(?P<max_running_requests>\d+)", None,
         i_("tokens", "tokens"), i_("max_running_requests", "requests"),
         flags=("max_running_requests",)),
    step(E, "ready", "ready to roll", r"The server is fired up and ready to roll", "serving"),
)  # fmt: skip

_CAPTURE = (
    LineFormat(
        "sglang-capture-failed",
        E,
        "capture.failed",
        ("Capture cuda graph failed",),
        (Field("reason", str.strip),),
        re.compile(r"Capture cuda graph failed[: ]*(?P<reason>.*)"),
        always=True,
    ),
    LineFormat(
        "sglang-capture-begin", E, "capture.begin", ("Capture cuda graph begin",), always=True
    ),
    LineFormat(
        "sglang-capture-end",
        E,
        "capture.end",
        ("Capture cuda graph end",),
        (Field("seconds", float, "s"), Field("memory_gb", float, "GB", optional=True)),
        re.compile(
            r"Capture cuda graph end\. Time elapsed: (?P<seconds>[\d.]+) s"
            r"(?:\. mem usage=(?P<memory_gb>[\d.]+) GB)?"
        ),
        always=True,
    ),
)

#: a ServerArgs dump is SGLang's (the flags in it are read by the engine-neutral flag formats)
_SERVER_ARGS = LineFormat("sglang-server-args", E, "flag.engine", ("server_args=ServerArgs(",))

FORMATS: tuple[LineFormat, ...] = (*_DECODE, *_PREFILL, *_STEPS, *_CAPTURE, _SERVER_ARGS)
