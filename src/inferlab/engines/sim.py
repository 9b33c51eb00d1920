"""inferlab's reference engine (``inferlab sim serve``): SIMULATED, with known timing.

It speaks vLLM's request fields (``ignore_eos`` + ``min_tokens``) and tokenize body. With a
preset (``--preset``, batching mode) it behaves like SGLang: SGLang's ``/metrics`` names, its
``Decode batch`` log lines and its startup failures (each tagged SIMULATED), so the SGLang metric
definitions and log signatures apply to it too. Like SGLang it logs its parsed args as a
``server_args=ServerArgs(...)`` line and answers ``/get_server_info``; with a preset it reads
tuned block-FP8 GEMM files from ``inferlab/sim/configs/`` and logs SGLang's kernel-config lines
for them. It prints one line when it listens, which is also its ready line.
"""

from inferlab.engines.base import (
    PYTHON,
    ConfigDir,
    DetectHint,
    EngineSpec,
    Launcher,
    fp8_gemm_names,
    register,
)
from inferlab.engines.capture import SIM_CAPTURE
from inferlab.engines.evidence import NCCL_ENV, SGLANG_SERVER_ARGS, Evidence
from inferlab.engines.logs import fatal_sig, sig
from inferlab.engines.sglang import METRICS as SGLANG_METRICS
from inferlab.engines.sglang import SIGNATURES as SGLANG_SIGNATURES
from inferlab.engines.sglang import SPEC_EFFECT

SIGNATURES = (
    sig(
        "ready",
        r"inferlab sim \(SIMULATED engine\) listening on https?://",
        "info",
        ready=True,
        source="src/inferlab/cli/sim.py (serve_cmd's ready line)",
    ),
    fatal_sig(
        "address_in_use",
        r"address already in use",
        remedy="another process holds the port: stop it or choose another port (0: a free one)",
        flags=("--port",),
        ignorecase=True,
        source="Python OSError errno 98 message",
    ),
    fatal_sig(
        "invalid_option",
        r"invalid sim option --",
        remedy="a `sim serve` option out of its range or of the wrong type: the line names it "
        "and what it expects",
        refusal=True,
        source="src/inferlab/cli/sim.py (serve's option validation)",
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
        simulated=True,
        speaks_language=False,  # its words are drawn, not meant: default probes ask for text
        metrics=SGLANG_METRICS,
        log_signatures=SIGNATURES + tuple(x for x in SGLANG_SIGNATURES if not x.ready),
        # its batching model reads SGLang-named block-FP8 GEMM files from its own package
        config_dirs=(
            ConfigDir(
                "fp8_gemm", "inferlab", "sim/configs", fp8_gemm_names(", "), tuner_engine="sglang"
            ),
        ),
        evidence=Evidence(
            args_dumps=(SGLANG_SERVER_ARGS,),
            server_info_path="/get_server_info",
            effects=(SPEC_EFFECT,),
            env=(NCCL_ENV,),
            files_in_log=("fp8_gemm",),
        ),
        detect=(
            DetectHint("owned_by", "inferlab-sim", weight=5),
            DetectHint("path", "/version", key="simulated", weight=3),
        ),
        capture=SIM_CAPTURE,
    )
)
