"""Run the reference engine as ``inferlab sim serve`` does: from the options to the exit status.

The options become a validated :class:`~inferlab.sim.config.SimConfig` (fixed timing, or the
batching model and its SGLang levers); serving logs the command line and SGLang's startup
lines, waits the startup delay, then serves until SIGINT/SIGTERM. Every log line is marked
``[SIMULATED]``.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from inferlab.errors import ConfigError
from inferlab.sim.config import SimConfig, sim_config
from inferlab.sim.launchspread import launch_line, with_launch_factor
from inferlab.sim.presets import StartupFailure
from inferlab.sim.server import serve
from inferlab.sim.startup import prepare

__all__ = ["LEVER_FIELDS", "Serve", "config_from_options", "run_engine"]

#: the SGLang flags the batching model reads, as ``SimConfig.levers`` fields
LEVER_FIELDS = (
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "mem_fraction_static",
    "cuda_graph_max_bs",
    "max_running_requests",
    "tuned_fp8",
)
_DEFAULT_TTFT_MS, _DEFAULT_ITL_MS = 50.0, 10.0

#: serves a config: (config, on_ready, log) → whether the ``exit`` fault struck
Serve = Callable[[SimConfig, Callable[[str], None], "Callable[[str], None] | None"], bool]


def config_from_options(
    options: Mapping[str, Any], env: Mapping[str, str], labels: Mapping[str, str]
) -> SimConfig:
    """A :class:`SimConfig` from flat options (``SimConfig`` fields and :data:`LEVER_FIELDS`;
    ``ttft_ms``/``itl_ms`` None: the defaults, 50 and 10 ms). With the batching model
    ``NCCL_PROTO`` comes from ``env``. ``labels`` names each field as the user typed it."""
    fields = dict(options)
    batching = fields.get("preset") is not None or fields.get("model_mode") == "batching"
    if batching and (fields.get("ttft_ms") is not None or fields.get("itl_ms") is not None):
        raise ConfigError("--ttft-ms/--itl-ms: fixed-timing options; not with --preset/batching")
    levers = {f: fields.pop(f) for f in LEVER_FIELDS if f in fields}
    levers["nccl_proto"] = env.get("NCCL_PROTO") if batching else None
    fields["levers"] = {k: v for k, v in levers.items() if v is not None}
    for name, default in (("ttft_ms", _DEFAULT_TTFT_MS), ("itl_ms", _DEFAULT_ITL_MS)):
        if fields.get(name) is None:
            fields[name] = default
    return sim_config(labels=labels, **fields)


def _load_weights(
    config: SimConfig, log: Callable[[str], None], sleep: Callable[[float], object]
) -> bool:
    """The startup delay; False when SIGINT/SIGTERM came during it (exited after
    ``exit_delay_s``). Without an exit delay, or off the main thread, the signal's default
    action ends it at once."""
    if not config.exit_delay_s or threading.current_thread() is not threading.main_thread():
        sleep(config.startup_s)
        return True
    asked: list[int] = []
    old = {
        s: signal.signal(s, lambda n, _: asked.append(n)) for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        end = time.monotonic() + config.startup_s
        while not asked and time.monotonic() < end:
            sleep(min(0.05, max(0.0, end - time.monotonic())))
        if not asked:
            return True
        name = signal.Signals(asked[0]).name
        log(f"[SIMULATED] inferlab sim: {name} while loading: exiting in {config.exit_delay_s:g} s")
        sleep(config.exit_delay_s)  # a later SIGINT/SIGTERM changes nothing; SIGKILL ends it
        return False
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run_engine(
    config: SimConfig,
    env: Mapping[str, str],
    command: str,
    log: Callable[[str], None],
    on_ready: Callable[[str], None],
    *,
    serve_with: Serve = serve,
    sleep: Callable[[float], object] = time.sleep,
) -> int:
    """Serve ``config`` after its startup delay; the exit status: 0 after SIGINT/SIGTERM, 1
    when the model cannot start (its log lines say why) or the ``exit`` fault struck.

    ``command`` (the whole argv, as real servers log it) and SGLang's startup lines go to
    ``log``; ``on_ready`` receives the base URL once the server listens. ``serve_with`` serves
    (default: under uvloop until a signal; ``sim.inprocess``: on a thread until stopped) and
    ``sleep`` waits the startup delay (s).
    """
    batching = config.batching
    config, launch = with_launch_factor(config)  # SimError: an unusable --launch-state
    # as real servers do (SGLang's server_args=..., vLLM's non-default args): the whole argv,
    # secrets included: what inferlab stores from this log must not carry them
    log("[SIMULATED] started as: inferlab " + command)
    config, startup = prepare(config, env)  # SGLang's startup lines (sim.startup)
    if config.launch_sd > 0.0:
        startup.append(launch_line(config, launch))
    for line in startup:
        log(f"[SIMULATED] {line}")

    def ready(url: str) -> None:
        if batching:
            log("[SIMULATED] The server is fired up and ready to roll! (inferlab sim)")
        on_ready(url)

    if config.startup_s:
        log(f"[SIMULATED] inferlab sim: loading weights (a {config.startup_s:g} s startup delay)")
        if not _load_weights(config, log, sleep):  # stands in for loading weights
            return 0
    try:
        crashed = serve_with(config, ready, log if batching else None)
    except StartupFailure as exc:
        for line in exc.lines:
            log(f"[SIMULATED] {line}")
        return 1
    if crashed:
        log("[SIMULATED] inferlab sim: fault 'exit': the server exited on purpose")
        return 1
    return 0
