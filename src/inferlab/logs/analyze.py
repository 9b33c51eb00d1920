"""``analyze_log``: stream one log through the parsers, then run the detectors."""

from __future__ import annotations

import time
import zlib
from pathlib import Path

from inferlab.engines import get_engine
from inferlab.engines.base import classify_log
from inferlab.engines.logs import primary_failure
from inferlab.errors import ConfigError, InferlabError
from inferlab.logs.capture import capture_traceback
from inferlab.logs.detectors import detect
from inferlab.logs.model import ENGINES, LogAnalysis, UntunedGemm, UntunedMoe
from inferlab.logs.parsers import anchors, markers, visitor
from inferlab.logs.reader import open_log, scan
from inferlab.logs.readout import milestone_list, ooms, untuned_gemms, untuned_moes
from inferlab.logs.state import LogState
from inferlab.store import Store

__all__ = ["analyze_log", "store_log_findings", "untuned_fp8_gemms", "untuned_moe"]


def engine_choices() -> tuple[str, ...]:
    """What ``--engine`` takes: ``auto`` or an engine whose logs are recognised."""
    return ("auto", *ENGINES)


def _state(path: str | Path, engine: str) -> tuple[LogState, LogAnalysis]:
    choices = engine_choices()
    if engine not in choices:
        raise ConfigError(f"--engine: {engine!r}; expected one of {', '.join(choices)}")
    forced = None if engine == "auto" else engine
    st = LogState(path=str(path), engine=forced)
    t0 = time.perf_counter()
    stats = scan(path, anchors(), visitor(st))
    tail = stats.tail.decode("utf-8", "replace").split("\n")
    if tail and not tail[-1]:
        tail.pop()
    for text in tail:  # the end of a log names its engine even when it died at startup
        markers(st, text)
    capture_traceback(st, tail, stats.tail_first_line)
    known = set(ENGINES)
    hits = {k: v for k, v in st.engine_hits.items() if k in known}
    if forced is not None:
        found = forced if hits.get(forced) or st.markers.get(forced) else None
    elif hits:
        found = max(hits, key=lambda k: hits[k])
    elif st.markers and (st.ooms or st.nccl_errors or st.nccl_timeouts or st.gemms or st.moes):
        # only engine-neutral lines (an OOM, NCCL, kernel configs): the engine named near them
        found = max(st.markers, key=lambda k: st.markers[k])
    else:
        found = None
    st.launch_failure = _launch_failure(
        tail,
        stats.tail_first_line,
        [found] if found else sorted(st.markers, key=lambda e: st.markers[e]),
    )
    if found is None and st.launch_failure is not None and st.markers:
        found = st.launch_failure[0]  # named in the log, and its death matches that engine's
    st.detected = found
    an = LogAnalysis(
        path=str(path),
        engine=found,
        lines=stats.lines,
        bytes=stats.bytes,
        visited=stats.visited,
        engine_hits=hits,
        compressed=stats.compressed,
        truncated=stats.truncated,
        simulated=st.simulated,
        forced_engine=forced is not None,
        requested=forced,
        looked_for=[
            *(facts.looked_for for name in ENGINES if (facts := get_engine(name).logs)),
            "kernel-config, CUDA OOM and NCCL messages",
        ],
    )
    an.seconds = time.perf_counter() - t0
    return st, an


def _launch_failure(
    tail: list[str], first_line: int, engines: list[str]
) -> tuple[str, str, int, str, str] | None:
    """The root cause among the fatal lines of the log's end, by the first of ``engines`` whose
    signatures (``inferlab.engines``) find one: (engine, kind, line, text, remedy)."""
    for name in reversed(engines):  # most evidence last in ``engines``' order
        if name not in ENGINES:
            continue
        spec = get_engine(name)
        hit = primary_failure(classify_log(spec.before_stop(tail), spec))
        if hit is not None:
            return name, hit.kind, first_line + hit.line_no - 1, hit.text, hit.remedy
    return None


def analyze_log(path: str | Path, engine: str = "auto") -> LogAnalysis:
    """Mine ``path`` (plain or .gz): findings, time series, timeline, untuned shapes.

    ``engine``: ``auto`` (detected from the lines recognised) or an engine of ``ENGINES`` (only
    that engine's parsers run, besides the engine-neutral ones).
    Raises ``LogError`` for a missing, binary or foreign-compressed file; a text file of no
    known engine gives an analysis with ``engine`` None (see ``unknown_reason``)."""
    t0 = time.perf_counter()
    st, an = _state(path, engine)
    an.findings = detect(st)
    an.series = list(st.series)
    an.series_total = st.series_total
    an.series_stride = st.series_stride
    an.timeline = milestone_list(st)
    an.flags = dict(st.flags)
    an.untuned_gemms = untuned_gemms(st)
    an.untuned_moe = untuned_moes(st)
    an.tuned = list(st.tuned_gemms.values()) + list(st.tuned_moes.values())
    an.ooms = ooms(st)
    if not an.recognized:
        an.found = _sniff(path, an.visited)
    an.seconds = time.perf_counter() - t0
    return an


_KINDS: tuple[tuple[str, str], ...] = (
    ("# TYPE ", "a Prometheus /metrics dump"),
    ("_bucket{", "a Prometheus /metrics dump"),
    ("Serving Benchmark Result", "a benchmark client's result"),
    ("Successful requests:", "a benchmark client's result"),
    ('"request_rate"', "a benchmark result file"),
)


def _sniff(path: str | Path, visited: int) -> str:
    """What an unrecognised file seems to be (from its first 64 KiB)."""
    fh, _ = open_log(path)
    with fh:
        try:
            head = fh.read(1 << 16).decode("utf-8", "replace")
        except (EOFError, OSError, zlib.error):  # a truncated or corrupt .gz: nothing to sniff
            head = ""
    what = next((w for needle, w in _KINDS if needle in head), None)
    out = f"{visited:,} candidate line{'s' if visited != 1 else ''}, none in a known format"
    return out + (f"; it looks like {what}" if what else "")


def untuned_fp8_gemms(path: str | Path) -> list[UntunedGemm]:
    """Block-FP8 GEMM shapes that ran on the default config, deduplicated by
    (n, k, device, dtype, block_shape) in first-seen order, minus any shape a
    ``Using configuration from`` line proves tuned."""
    st, _ = _state(path, "auto")
    return untuned_gemms(st)


def untuned_moe(path: str | Path) -> list[UntunedMoe]:
    """Fused-MoE shapes without a tuned config (default, missing ``_down``, or another Triton
    version's), deduplicated, first-seen order, minus shapes proven tuned."""
    st, _ = _state(path, "auto")
    return untuned_moes(st)


def store_log_findings(
    store: Store, path: str | Path, *, campaign: str, config_id: int | None
) -> LogAnalysis | None:
    """Analyze a launch log and store its findings with the config (in one transaction).

    Returns the analysis, or None when the log is missing or unreadable. A campaign is never
    stopped by its log miner: an unexpected error is stored as a ``log-analysis-failed``
    finding."""
    try:
        an = analyze_log(path)
    except InferlabError:
        return None
    except Exception as exc:  # a miner bug must not lose the campaign: record it instead
        with store.transaction():
            store.findings.add(
                [
                    {
                        "kind": "log-analysis-failed",
                        "severity": "warning",
                        "message": f"the launch log could not be analyzed: {exc!r}",
                        "evidence": {"lines": []},
                        "action": f"inferlab logs analyze {path} (and report the error)",
                    }
                ],
                campaign=campaign,
                config_id=config_id,
                source=str(path),
            )
        return None
    if an.findings:
        with store.transaction():
            store.findings.add(
                [f.to_dict() for f in an.findings],
                campaign=campaign,
                config_id=config_id,
                source=str(path),
            )
    return an
