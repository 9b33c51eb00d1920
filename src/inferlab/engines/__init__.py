"""Per-engine knowledge (pure: no I/O). One module per engine, registered by name."""

from __future__ import annotations

from inferlab.engines.base import EngineSpec, get_engine, register, registered

# importing the modules registers them
from inferlab.engines import llamacpp, openai, sglang, sim, vllm  # noqa: F401  isort: skip

__all__ = ["EngineSpec", "get_engine", "register", "registered"]
