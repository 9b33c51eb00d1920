"""Which engine is serving at a URL, from what the server says about itself.

Each engine declares its signs (``EngineSpec.detect``): the ``owned_by`` of its ``/v1/models``
cards (vLLM "vllm", SGLang "sglang", llama.cpp "llamacpp", the reference engine
"inferlab-sim"), the prefix of its ``/metrics`` names (``vllm:``, ``sglang:``, ``llamacpp:``),
its ``Server`` header, a JSON path of its own (SGLang ``/get_server_info``, llama.cpp
``/props``). Every sign seen adds its weight; the highest score wins. Nothing recognised means
``openai``: plain OpenAI request fields only, so an unknown server is never sent a field it
may refuse (``ignore_eos``, ``min_tokens``), and the output length is then only capped by
``max_tokens`` (the sweep warns when outputs come back shorter).

Engine-specific request fields also explain the commonest refusal: ``unknown_field_hint``
turns an HTTP 4xx that names one of them into which field, and which ``--engine`` drops it.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inferlab.engines import EngineSpec, get_engine, registered
from inferlab.engines.base import DetectHint

__all__ = ["Detection", "detect_engine", "engine_for", "rejection", "unknown_field_hint"]

FALLBACK = "openai"


@dataclass(frozen=True)
class Detection:
    """The engine found (``openai`` when none was recognised) and the signs behind it."""

    engine: str
    evidence: list[str] = field(default_factory=list)
    score: int = 0

    def sentence(self) -> str:
        if not self.evidence:
            return f"engine not recognised: plain OpenAI fields ({FALLBACK})"
        return f"engine {self.engine} ({'; '.join(self.evidence)})"


def _get(
    url: str, headers: dict[str, str], timeout_s: float, limit: int = 1 << 20
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return int(r.status), {k.lower(): v for k, v in r.headers.items()}, r.read(limit)
    except urllib.error.HTTPError as exc:
        return int(exc.code), {k.lower(): v for k, v in exc.headers.items()}, b""
    except (OSError, ValueError):
        return 0, {}, b""


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _owners(body: bytes) -> set[str]:
    data = _json(body)
    cards = data.get("data") if isinstance(data, dict) else None
    return {str(c.get("owned_by")) for c in cards or [] if isinstance(c, dict)}


def _metric_names(body: bytes) -> set[str]:
    text = body.decode("utf-8", "replace")
    return {ln.split("{")[0].split(" ")[0] for ln in text.splitlines() if ln[:1].isalpha()}


@dataclass
class _Seen:
    """What the server answered, fetched once; ``paths`` on demand."""

    base: str
    headers: dict[str, str]
    timeout_s: float
    owners: set[str]
    server: str
    names: set[str]
    paths: dict[str, Any] = field(default_factory=dict)

    def sign(self, h: DetectHint) -> str | None:
        """The evidence of hint ``h`` in what the server said, or None."""
        if h.where == "owned_by":
            return f"/v1/models owned_by {h.value!r}" if h.value in self.owners else None
        if h.where == "metrics":
            hit = any(n.startswith(h.value) for n in self.names)
            return f"/metrics names {h.value}*" if hit else None
        if h.where == "server":
            hit = bool(self.server) and re.search(h.value, self.server) is not None
            return f"Server: {self.server}" if hit else None
        if h.where == "path":
            if h.value not in self.paths:
                status, _, body = _get(self.base + h.value, self.headers, self.timeout_s)
                self.paths[h.value] = _json(body) if status == 200 else None
            data = self.paths[h.value]
            hit = isinstance(data, dict) and h.key in data
            return f"{h.value} answers with {h.key!r}" if hit else None
        return None


def detect_engine(
    url: str, *, headers: dict[str, str] | None = None, timeout_s: float = 5.0
) -> Detection:
    """Ask the server at ``url`` (``/v1/models``, ``/metrics``, the engines' own paths) and
    score every registered engine's signs (see the module docstring)."""
    base = url.rstrip("/")
    hdrs = dict(headers or {})
    _, mh, models = _get(base + "/v1/models", hdrs, timeout_s)
    mstatus, _, metrics = _get(base + "/metrics", hdrs, timeout_s)
    seen = _Seen(
        base,
        hdrs,
        timeout_s,
        _owners(models),
        mh.get("server", ""),
        _metric_names(metrics) if mstatus == 200 else set(),
    )
    best = Detection(FALLBACK)
    for name in registered():
        spec = get_engine(name)
        signs = [(h, seen.sign(h)) for h in spec.detect]
        hits = [(h, s) for h, s in signs if s]
        score = sum(h.weight for h, _ in hits)
        if score > best.score:
            best = Detection(name, [s for _, s in hits if s], score)
    return best


def engine_for(
    name: str | None, url: str, headers: dict[str, str], say: Callable[[str], None]
) -> EngineSpec:
    """The engine ``name``, or (None) the one the server at ``url`` is detected to be."""
    if name is not None:
        return get_engine(name)
    found = detect_engine(url, headers=headers)
    say(found.sentence())
    return get_engine(found.engine)


def unknown_field_hint(message: str, engine: EngineSpec, max_tokens: int = 16) -> str | None:
    """For a refusal that names a request field only ``engine`` adds: which field, and which
    ``--engine`` drops it; None when the message names none of them."""
    extra = sorted(engine.fixed_length_fields(max_tokens))
    named = [f for f in extra if re.search(rf"\b{re.escape(f)}\b", message)]
    if not named:
        return None
    return (
        f"the server refuses {', '.join(repr(f) for f in named)}, sent to ask {engine.name}'s "
        f"exact output length; --engine {FALLBACK} sends only OpenAI fields (the output length "
        "is then capped by max_tokens, and checked)"
    )


def rejection(url: str, label: str, message: str, engine: EngineSpec) -> str:
    """What to say when ``url`` refused the first requests of load point ``label``."""
    hint = unknown_field_hint(message, engine)
    return f"{url} rejected the first requests of {label}: {message}" + (
        f" — {hint}" if hint else ""
    )
