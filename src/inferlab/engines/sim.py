"""inferlab's reference engine (``inferlab sim serve``): SIMULATED, with known timing.

It speaks vLLM's request fields (``ignore_eos`` + ``min_tokens``) and tokenize body. With a
preset (``--preset``, batching mode) it behaves like SGLang: SGLang's ``/metrics`` names, its
``Decode batch`` log lines and its startup failures (each tagged SIMULATED), so the SGLang metric
definitions and log signatures apply to it too. It prints one line when it listens, which is
also its ready line.
"""

from inferlab.engines.base import PYTHON, EngineSpec, Launcher, register
from inferlab.engines.capture import SIM_CAPTURE
from inferlab.engines.logs import sig
from inferlab.engines.sglang import METRICS as SGLANG_METRICS
from inferlab.engines.sglang import SIGNATURES as SGLANG_SIGNATURES

SIGNATURES = (
    sig(
        "ready",
        r"inferlab sim \(SIMULATED engine\) listening on https?://",
        "info",
        ready=True,
        source="src/inferlab/cli/sim.py (serve_cmd's ready line)",
    ),
    sig(
        "address_in_use",
        r"address already in use",
        "error",
        fatal=True,
        remedy="another process holds the port: stop it or choose another port (0: a free one)",
        flags=("--port",),
        ignorecase=True,
        source="Python OSError errno 98 message",
    ),
)

SPEC = register(
    EngineSpec(
        name="sim",
        description="inferlab reference engine (simulated)",
        metrics_path="/metrics",
        launchers=(
            Launcher(
                "module",
                (PYTHON, "-m", "inferlab.cli.main", "sim", "serve"),
                model_flag="--model",
                model_required=False,
            ),
        ),
        metrics=SGLANG_METRICS,
        log_signatures=SIGNATURES + tuple(x for x in SGLANG_SIGNATURES if not x.ready),
        capture=SIM_CAPTURE,
    )
)
