"""The engine registry: adding an engine is adding one module that calls ``register``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inferlab.errors import ConfigError

__all__ = ["EngineSpec", "get_engine", "register", "registered"]


@dataclass(frozen=True)
class EngineSpec:
    """What inferlab knows about one serving engine's OpenAI-compatible front end."""

    name: str
    description: str
    health_path: str = "/health"
    models_path: str = "/v1/models"
    tokenize_path: str | None = "/tokenize"
    #: GET path answering JSON with a "version" field (None: the engine has none)
    version_path: str | None = "/version"
    #: request-body fields that make the server emit exactly ``max_tokens`` tokens
    ignore_eos_field: str | None = "ignore_eos"
    min_tokens_field: str | None = "min_tokens"

    def fixed_length_fields(self, n: int) -> dict[str, Any]:
        """Extra body fields asking for exactly ``n`` output tokens (with ``max_tokens``)."""
        out: dict[str, Any] = {}
        if self.ignore_eos_field:
            out[self.ignore_eos_field] = True
        if self.min_tokens_field:
            out[self.min_tokens_field] = n
        return out


_REGISTRY: dict[str, EngineSpec] = {}


def register(spec: EngineSpec) -> EngineSpec:
    _REGISTRY[spec.name] = spec
    return spec


def registered() -> list[str]:
    return sorted(_REGISTRY)


def get_engine(name: str) -> EngineSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(
            f"engine: unknown kind {name!r}; expected one of {', '.join(registered())}"
        ) from None
