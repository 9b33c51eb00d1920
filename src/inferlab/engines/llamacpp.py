"""llama.cpp's ``llama-server``: ``ignore_eos`` is honoured, ``min_tokens`` does not exist."""

from inferlab.engines.base import EngineSpec, register

SPEC = register(
    EngineSpec(
        name="llamacpp",
        description="llama.cpp llama-server",
        min_tokens_field=None,
        version_path=None,
    )
)
