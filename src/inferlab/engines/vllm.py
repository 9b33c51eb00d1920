"""vLLM's OpenAI-compatible server (``vllm serve``)."""

from inferlab.engines.base import EngineSpec, register

SPEC = register(EngineSpec(name="vllm", description="vLLM OpenAI-compatible server"))
