"""What is checked once a config's server has stopped, and stored with the config.

- ``stop``: how it stopped, whether the port is free and — read from NVML — whether every GPU's
  memory came back to what it used before the launch (``GpuDrain`` figures, MiB).
- ``runtime``: a fatal log signature of the engine in the log of a server that had come up
  (e.g. a CUDA out-of-memory in the first big batch, which kills the batching worker while the
  HTTP server lives on), classified with the engine's remedy. Only the lines written before
  inferlab asked a live server to stop count: what the engine logs while it obeys (SGLang
  0.5.17: "SIGTERM received" then "Subprocess scheduler_0 … crashed with exit code -15") is the
  stop, not a fault.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferlab import interrupts
from inferlab.campaign.context import RuntimeFailure
from inferlab.engines import EngineSpec, classify_log, primary_failure
from inferlab.logs import store_log_findings
from inferlab.server import ServerProcess, StopReport, log_tail, stop
from inferlab.server.gpumem import GpuDrain, nvml_indices, used_mib, wait_returned
from inferlab.server.stop import INTERRUPT_WAIT_S
from inferlab.store import Store

__all__ = [
    "log_lines",
    "record_runtime",
    "record_stop",
    "runtime_failure",
    "stop_and_check",
    "stop_message",
]


def stop_message(rep: StopReport, drain: GpuDrain | None) -> str:
    """``SIGTERM after 2.1 s, port free; GPU memory ... (returned in 1.8 s)``."""
    text = f"{rep.signal} after {rep.seconds:.1f} s, port {'free' if rep.port_free else 'BUSY'}"
    return text + "; " + (drain.message() if drain is not None else f"GPU {rep.gpu_check}")


def record_stop(store: Store, config_id: int, rep: StopReport, drain: GpuDrain | None) -> bool:
    """Store the ``stop`` check; passed when the port is free and the GPU memory came back."""
    passed = rep.port_free and (drain is None or drain.returned)
    detail: dict[str, Any] = {
        "signal": rep.signal,
        "seconds": rep.seconds,
        "port_free": rep.port_free,
        "gpu": rep.gpu_check,
        "notes": rep.notes,
        "gpu_memory": drain.to_dict() if drain is not None else None,
        "message": stop_message(rep, drain),
    }
    with store.transaction():
        store.add_verification(config_id, "stop", passed, detail)
    return passed


def _read_lines(log_path: str | Path) -> list[str] | None:
    try:
        text = Path(log_path).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    return text.split("\n")  # line numbers as editors and grep count them (\r is no break)


def log_lines(server: ServerProcess) -> int | None:
    """How many lines the log of a server still running holds (None: it has exited, or its
    log cannot be read): read just before stopping it, so its stop is not taken for a fault."""
    if server.proc.poll() is not None:
        return None
    lines = _read_lines(server.spec.log_path)
    return None if lines is None else len(lines)


def runtime_failure(
    spec: EngineSpec, log_path: str | Path, *, until_line: int | None = None
) -> RuntimeFailure | None:
    """The primary fatal signature in the log's first ``until_line`` lines (all: None); None
    when there is none, or the log cannot be read."""
    lines = _read_lines(log_path)
    if lines is None:
        return None
    hits = classify_log(spec.before_stop(lines), spec)
    if until_line is not None:
        hits = [h for h in hits if h.line_no <= until_line]
    hit = primary_failure(hits)
    if hit is None:
        return None
    tail = lines[max(0, hit.line_no - 2) : hit.line_no + 10] or log_tail(Path(log_path), 12)
    return RuntimeFailure(
        hit.kind, hit.line_no, hit.text, hit.remedy, str(log_path), hit.flags, tail
    )


def record_runtime(store: Store, config_id: int, failure: RuntimeFailure) -> None:
    with store.transaction():
        store.add_verification(config_id, "runtime", False, failure.to_dict())


def stop_and_check(
    server: ServerProcess,
    spec: EngineSpec,
    config_id: int,
    store: Store,
    campaign: str,
    *,
    gpu_before: list[int] | None,
    gpu_ready: list[int] | None = None,
    stopper: Callable[[ServerProcess], StopReport] = stop,
) -> tuple[RuntimeFailure | None, str]:
    """Stop ``server`` (with ``stopper``: its launcher's stop); store its log findings, the
    stop + GPU drain check and a runtime failure. Returns the failure (None when the log has
    no fatal line) and the stop line."""
    at_stop = used_mib()
    served = log_lines(server)
    rep = stopper(server)
    store_log_findings(store, server.spec.log_path, campaign=campaign, config_id=config_id)
    wait_s = INTERRUPT_WAIT_S if interrupts.seen() else 60.0
    drain = wait_returned(
        gpu_before, at_ready=gpu_ready, at_stop=at_stop, indices=nvml_indices(), timeout_s=wait_s
    )
    record_stop(store, config_id, rep, drain)
    failure = runtime_failure(spec, server.spec.log_path, until_line=served)
    if failure is not None:
        record_runtime(store, config_id, failure)
    return failure, stop_message(rep, drain)
