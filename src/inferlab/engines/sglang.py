"""SGLang's server (``python -m sglang.launch_server``); its OpenAI API takes ``min_tokens``."""

from inferlab.engines.base import EngineSpec, register

SPEC = register(
    EngineSpec(
        name="sglang",
        description="SGLang server (OpenAI API)",
        version_path="/get_server_info",
    )
)
