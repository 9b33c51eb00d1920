"""Any server started by a command line: ``[engine] kind = "command"``.

The campaign gives the whole argv (``argv = ["text-generation-launcher", "--port", "{port}",
...]``, with ``{port}``, ``{host}`` and ``{model}`` filled in at launch), the health path
(``health``, default ``/health``), the metrics path (``metrics``) and the API it speaks
(``api``: ``openai`` for plain OpenAI fields, or a registered engine whose request fields it
accepts). Everything else of the lifecycle applies: process group, log file, readiness, stop
and drain, and the log signatures every PyTorch server shares.
"""

from inferlab.engines import common
from inferlab.engines.base import OPENAI_ONLY, EngineSpec, Launcher, register

SIGNATURES = (
    common.cuda_oom(
        "the server ran out of GPU memory: give it a smaller batch / context, a smaller or "
        "quantized model, or more GPUs (its own flags)"
    ),
    *common.serving_failures(
        "another process holds the port: stop it or choose another [engine] port",
        ("--port",),
        "the model does not resolve: check the path or repo id, HF_TOKEN for gated repos, "
        "HF_HUB_OFFLINE",
    ),
)

SPEC = register(
    EngineSpec(
        name="command",
        description="any server started by [engine] argv (placeholders {port} {host} {model})",
        **OPENAI_ONLY,
        launchers=(Launcher("argv", (), model_flag=None),),
        log_signatures=SIGNATURES,
        argv_from_config=True,
    )
)
