"""Where requests go (:class:`Endpoint`), and the event loop every client runs on.

Credentials in a URL (``http://user:password@host``) are sent as HTTP Basic authorization and
never kept in what is stored or shown: :func:`redact_url` (``inferlab.config.urls``) replaces
the password."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from inferlab.config.urls import redact_url
from inferlab.errors import ConfigError

__all__ = ["Endpoint", "redact_url", "run_loop"]

T = TypeVar("T")


def run_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh event loop: uvloop when installed, else asyncio's own."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux/macOS
        return asyncio.run(coro)
    result: T = uvloop.run(coro)
    return result


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: scheme, host, port and the path prefix of the base URL."""

    scheme: str
    host: str
    port: int
    prefix: str
    auth: str | None = field(default=None, repr=False)  # an Authorization header value

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--url: expected http(s)://HOST[:PORT][/PREFIX], got {url!r}")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise ConfigError(f"--url: bad port in {url!r}") from exc
        prefix = parts.path.rstrip("/")
        if prefix.endswith("/v1"):
            prefix = prefix[: -len("/v1")]
        auth = None
        if parts.username is not None or parts.password is not None:
            pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            auth = "Basic " + base64.b64encode(pair.encode()).decode()
        return cls(parts.scheme, parts.hostname, port, prefix, auth)

    @property
    def base(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{self.prefix}"

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        return self.host if self.port == default else f"{self.host}:{self.port}"
