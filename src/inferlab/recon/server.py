"""A running server probed over HTTP: which endpoints answer, what they say. Every failure is
recorded on its endpoint, never raised."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from inferlab.errors import ConfigError
from inferlab.secrets import REDACTED, is_secret_name

__all__ = ["Endpoint", "ServerProbe", "check_url", "probe_server"]

#: path → what it tells (probed in this order)
PATHS: tuple[tuple[str, str], ...] = (
    ("/v1/models", "served models"),
    ("/version", "engine version (vLLM)"),
    ("/get_server_info", "server args and state (SGLang)"),
    ("/metrics", "Prometheus metrics"),
    ("/health", "health"),
)

#: server-info fields worth a line in the table (the JSON keeps the rest, redacted)
INFO_KEYS = (
    "version",
    "model_path",
    "tp_size",
    "dp_size",
    "quantization",
    "kv_cache_dtype",
    "mem_fraction_static",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_num_draft_tokens",
    "cuda_graph_max_bs",
    "disable_cuda_graph",
    "enable_torch_compile",
    "attention_backend",
    "max_total_num_tokens",
)


@dataclass
class Endpoint:
    """One GET: HTTP status (``None`` when no answer), wall time (ms, connect included;
    ``None`` when not tried), a summary of the body, the error."""

    path: str
    status: int | None
    ms: float | None
    summary: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass
class ServerProbe:
    url: str
    endpoints: list[Endpoint]


def _redact(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            k: (REDACTED if is_secret_name(str(k)) and v is not None else _redact(v))
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_redact(v) for v in obj]
    return obj


def _summary(path: str, body: bytes) -> dict[str, Any]:
    text = body.decode("utf-8", errors="replace")
    if path == "/metrics":
        names = {ln.split("{")[0].split(" ")[0] for ln in text.splitlines() if ln[:1].isalpha()}
        prefixes = sorted({n.split(":")[0] for n in names if ":" in n})
        return {"series": len(names), "prefixes": prefixes}
    try:
        data = json.loads(text)
    except ValueError:
        return {"text": text[:200]}
    if path == "/v1/models" and isinstance(data, dict):
        return {"models": [m.get("id") for m in data.get("data") or [] if isinstance(m, dict)]}
    if path == "/get_server_info" and isinstance(data, dict):
        data = _redact(data)
        keys = {k: data[k] for k in INFO_KEYS if k in data}
        return {"fields": len(data), **keys}
    if isinstance(data, dict):
        return {k: v for k, v in _redact(data).items() if not isinstance(v, (dict, list))}
    return {"json": str(data)[:200]}


def check_url(url: str) -> None:
    """A ``ConfigError`` naming ``--url`` unless it is ``http(s)://HOST[:PORT]``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--url: expected http(s)://HOST[:PORT], got {url!r}")


def probe_server(url: str, timeout_s: float = 5.0) -> ServerProbe:
    """GET each of ``PATHS`` on ``url``. A URL that is not ``http(s)://host[:port]`` is a
    ``ConfigError`` naming ``--url``."""
    check_url(url)
    base = url.rstrip("/")
    out: list[Endpoint] = []
    unreachable: str | None = None
    for path, _what in PATHS:
        if unreachable is not None:
            out.append(Endpoint(path, None, None, error=f"not tried: {unreachable}"))
            continue
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(base + path, timeout=timeout_s) as r:
                body = r.read(4 << 20)
                status = int(r.status)
        except urllib.error.HTTPError as exc:
            ms = (time.perf_counter() - t0) * 1e3
            out.append(Endpoint(path, exc.code, ms, error=f"HTTP {exc.code} {exc.reason}"))
            continue
        except (urllib.error.URLError, OSError, ValueError) as exc:
            ms = (time.perf_counter() - t0) * 1e3
            reason = getattr(exc, "reason", exc)
            out.append(Endpoint(path, None, ms, error=f"{type(exc).__name__}: {reason}"))
            unreachable = f"no answer on {path}"
            continue
        ms = (time.perf_counter() - t0) * 1e3
        out.append(Endpoint(path, status, ms, _summary(path, body)))
    return ServerProbe(url, out)
