"""Any OpenAI-compatible endpoint already running: only standard fields are sent, nothing is
launched, no flags, metrics or log signatures are known."""

from inferlab.engines.base import EngineSpec, register

SPEC = register(
    EngineSpec(
        name="openai",
        description="generic OpenAI-compatible endpoint (output length not enforced)",
        tokenize_path=None,
        version_path=None,
        metrics_path=None,
        ignore_eos_field=None,
        min_tokens_field=None,
        not_launchable="an already running endpoint: nothing to launch (give [engine] url)",
    )
)
