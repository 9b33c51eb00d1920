"""Any OpenAI-compatible endpoint already running: only standard fields are sent, nothing is
launched, no flags, metrics or log signatures are known."""

from inferlab.engines.base import OPENAI_ONLY, EngineSpec, register

SPEC = register(
    EngineSpec(
        name="openai",
        description="generic OpenAI-compatible endpoint (output length not enforced)",
        **OPENAI_ONLY,
        not_launchable="an already running endpoint: nothing to launch (give [engine] url)",
    )
)
