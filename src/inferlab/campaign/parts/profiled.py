"""One profiled pass (see :mod:`inferlab.campaign.parts.capture`): the point's load again, a capture
beside it, then every rank's trace analyzed and stored; failures become findings."""

from __future__ import annotations

import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from inferlab import interrupts
from inferlab.campaign.parts.bench import StoreSink
from inferlab.campaign.parts.capture import (
    STEADY_AFTER_S,
    CaptureOutcome,
    Controller,
    capture_base,
    file_store,
    is_profiled,
    prefix_for,
)
from inferlab.campaign.parts.collect import CaptureFailed, RankFile
from inferlab.config.bench import TRACE_FIELDS, BenchConfig, LoadSpec
from inferlab.config.campaign import CampaignFile, ProfileSection
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.engines.capture import CaptureRecipe, rank_of
from inferlab.engines.logs import primary_failure
from inferlab.errors import InferlabError
from inferlab.load.bench import BenchEvents, LoadPoint, PointResult, run_bench
from inferlab.load.quality import FEW_SAMPLES
from inferlab.profile import analyze, read_trace
from inferlab.server import ServerProcess, log_tail
from inferlab.server.stop import INTERRUPT_WAIT_S
from inferlab.store import Store

__all__ = [
    "SteadyEvents",
    "captured_points",
    "point_bench",
    "profile_config",
    "profiled_pass",
    "profiles_missing",
    "record_death",
]

ACTION = (
    "the measured points are kept; fix the cause (see the message), or record the trace "
    "yourself and store it with `inferlab profile TRACE --campaign C --config NAME --point P`"
)


class SteadyEvents(BenchEvents):
    """Forwards a sweep's events and says when the profiled load is steady."""

    def __init__(self, inner: BenchEvents, steady: threading.Event, closed_loop: bool) -> None:
        self.inner, self.steady, self.closed = inner, steady, closed_loop
        self.main_at: float | None = None

    def message(self, text: str) -> None:
        self.inner.message(text)

    def point_started(self, point: LoadPoint, total: int | None, warmup: bool) -> None:
        if not warmup:
            self.main_at = time.monotonic()
        self.inner.point_started(point, total, warmup)

    def progress(self, done: int, errors: int) -> None:
        t = self.main_at
        ready = t is not None and (
            (self.closed and time.monotonic() >= t + STEADY_AFTER_S) or done >= 1
        )
        if ready and not self.steady.is_set():
            self.steady.set()
        self.inner.progress(done, errors)

    def point_finished(self, result: PointResult) -> None:
        self.inner.point_finished(result)


#: the ``[load]`` fields that make points, as when none is given (``point_bench`` adds one)
_POINT_FIELDS = ("concurrency", "rate", "sessions", "points", *TRACE_FIELDS)


def point_bench(bench: BenchConfig, point: LoadPoint, requests: int | None = None) -> BenchConfig:
    """``bench`` at ``point`` alone (its pattern's ``alone()``), one trial, validated again;
    ``requests``: a fixed count, in place of the point's count or duration (default: the same,
    or for ``auto`` enough load to capture beside and for its stored p99s)."""
    none = {
        f: LoadSpec.model_fields[f].get_default(call_default_factory=True) for f in _POINT_FIELDS
    }
    upd: dict[str, Any] = {"trials": 1, **none, **point.pattern.alone()}
    if requests is not None:  # a count of its own: the point's duration no longer cuts it
        upd["requests"], upd["duration_s"] = requests, None
    elif bench.requests == "auto":  # a profiled pass needs load while it captures, not precision
        upd["requests"] = max(bench.min_requests, FEW_SAMPLES)
    fields = {k: getattr(bench, k) for k in type(bench).model_fields}
    return type(bench).model_validate(fields | upd)


def _finding(
    store: Store, camp: CampaignFile, gid: int, out: CaptureOutcome, reason: str, msg: str
) -> None:
    out.reason, out.message = reason, msg
    with store.transaction():
        store.findings.add(
            [
                {
                    "kind": "profile-capture-failed",
                    "severity": "warning",
                    "message": f"{out.config} at {out.point}: profile capture failed ({reason}): "
                    + msg,
                    "evidence": {"point": out.point, "reason": reason, "files": out.files},
                    "action": ACTION,
                }
            ],
            campaign=camp.campaign.name,
            config_id=gid,
            source="inferlab run (profiled pass)",
        )


def _analyze(
    camp: CampaignFile,
    cfg: ResolvedConfig,
    recipe: CaptureRecipe,
    files: list[tuple[RankFile, Path]],
    out: CaptureOutcome,
) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Every rank's analysis with its capture block (file name, data), and one error line per
    rank that could not be analyzed."""
    prof = camp.profile
    assert prof is not None
    done, errors = [], []
    for i, (rf, local) in enumerate(files):
        try:
            p = analyze(read_trace(local), segment=prof.segment).to_dict()
        except InferlabError as exc:
            errors.append(f"{rf.name}: {exc}")
            continue
        ours = (p.get("meta") or {}).get("inferlab") or {}
        rank = rank_of(rf.name)
        p["capture"] = {
            "point": out.point,
            "rank": rank if rank is not None else i,
            "ranks": len(files),
            "path": str(local.resolve()),
            "size_bytes": rf.size,
            "engine": cfg.engine,
            "simulated": recipe.simulated or bool(ours.get("simulated")),
            "mode": p["mode"],
            "steps": prof.steps,
            "segment": prof.segment,
            "run_id": out.run_id,
        }
        done.append((rf.name, p))
    return done, errors


def _store(
    store: Store,
    camp: CampaignFile,
    gid: int,
    done: list[tuple[str, dict[str, Any]]],
    out: CaptureOutcome,
) -> None:
    """Store the ranks' analyses, each with the pass's cost (s: load, capture, analysis)."""
    with store.transaction():
        for name, p in done:
            p["capture"]["seconds"] = out.seconds
            aid = store.add_analysis("profile", name, p, campaign=camp.campaign.name, config_id=gid)
            out.analysis_ids.append(aid)


def _replay(
    ctl: Controller, bench: BenchConfig, point: LoadPoint, sink: StoreSink, events: BenchEvents
) -> tuple[str | None, threading.Thread]:
    """The point's load while ``ctl`` captures on a thread of its own: the load's error (None:
    none) and the thread, joined (after a Ctrl-C for seconds, not the capture's timeout: the
    run must end)."""
    ev = SteadyEvents(events, ctl.steady, closed_loop=point.pattern.closed_loop)
    worker = threading.Thread(target=ctl.run, name=f"capture-{sink.config}", daemon=True)
    worker.start()
    try:
        run_bench(bench, ev, None, [sink])
    except InferlabError as exc:
        return str(exc), worker
    finally:
        ctl.load_end = time.monotonic()
        ctl.load_done.set()
        worker.join(INTERRUPT_WAIT_S if interrupts.seen() else ctl.prof.timeout_s + 120.0)
    return None, worker


def profiled_pass(
    camp: CampaignFile,
    cfg: ResolvedConfig,
    gid: int,
    bench: BenchConfig,
    point: LoadPoint,
    store: Store,
    events: BenchEvents,
) -> CaptureOutcome:
    """Replay ``point`` while capturing a profile; store the traces' analyses (see module)."""
    prof: ProfileSection | None = camp.profile
    spec = get_engine(cfg.engine)
    recipe = spec.capture
    assert prof is not None and recipe is not None
    out = CaptureOutcome(cfg.name, point.label)
    t0 = time.monotonic()
    prefix = prefix_for(cfg, point.label)
    base = capture_base(camp, cfg)
    directory = f"{base}/{prefix}" if recipe.dir_per_capture else base
    files = file_store(cfg)
    ctl = Controller(
        recipe, bench.url, prof, prefix, directory, files, recipe.ranks(spec.parse_args(cfg.args))
    )
    sink = StoreSink(store, bench, camp.campaign.name, cfg.name, config_id=gid, purpose="profiled")
    events.message(f"{cfg.name}: profiled pass at {point.label} ({prof.steps} steps) ...")
    load_error, worker = _replay(ctl, point_bench(bench, point, prof.requests), point, sink, events)
    out.run_id = sink.run_ids[0] if sink.run_ids else None
    out.seconds = time.monotonic() - t0
    if interrupts.seen():  # nothing analyzed or stored as a finding: --resume profiles again
        out.reason, out.message = "interrupted", "Ctrl-C during the profiled pass"
        return out
    if worker.is_alive():
        ctl.error = CaptureFailed("timeout", f"the capture did not end in {prof.timeout_s:.0f} s")
    if ctl.error is not None:
        _finding(store, camp, gid, out, ctl.error.reason, str(ctl.error))
        return out
    if load_error is not None and not ctl.found:
        _finding(store, camp, gid, out, "start-failed", f"the profiled load failed: {load_error}")
        return out
    local = camp.output_dir / "profiles" / cfg.name / prefix
    try:
        fetched = [(rf, files.fetch(rf, local)) for rf in ctl.found]
    except CaptureFailed as exc:
        _finding(store, camp, gid, out, exc.reason, str(exc))
        return out
    out.files = [str(p) for _, p in fetched]
    done, errors = _analyze(camp, cfg, recipe, fetched, out)
    out.seconds = time.monotonic() - t0
    _store(store, camp, gid, done, out)
    if errors:
        _finding(store, camp, gid, out, "analysis-failed", "; ".join(errors))
    out.ok = bool(out.analysis_ids)
    return out


def _answers(url: str, tries: int = 3) -> bool:
    for i in range(tries):
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                if 200 <= r.status < 300:
                    return True
        except (OSError, ValueError):
            pass
        if i + 1 < tries:
            time.sleep(1.0)
    return False


def record_death(
    store: Store, cfg: ResolvedConfig, gid: int, server: ServerProcess, label: str
) -> str | None:
    """If the server died (or stopped answering its health check) during the profiled pass: a
    launch failure of that pass, classified from its log, stored beside the config's checks;
    returns its message (None: healthy)."""
    code = server.proc.poll()
    if code is None and _answers(server.spec.health_url):
        return None
    tail = log_tail(server.spec.log_path, 200)
    hit = primary_failure(get_engine(cfg.engine).classify_log(tail))
    what = f"died (exit code {code})" if code is not None else "stopped answering its health check"
    msg = f"{cfg.name}: the server {what} during the profiled pass at {label}"
    if hit is not None:
        msg += f": {hit.text}"
    with store.transaction():
        store.add_verification(
            gid,
            "launch",
            False,
            {
                "pass": "profiled",
                "point": label,
                "kind": hit.kind if hit else ("exited" if code is not None else "unhealthy"),
                "message": msg,
                "remedy": hit.remedy if hit is not None else "see the server log",
                "tail": tail[-40:],
                "log_path": str(server.spec.log_path),
            },
        )
    return msg


def captured_points(store: Store, gid: int) -> set[str]:
    """Load points of config ``gid`` that already have a stored profile (resume)."""
    return {c.point for c in store.analyses.captures(gid) if c.point is not None}


def profiles_missing(camp: CampaignFile, cfg: ResolvedConfig, store: Store, gid: int) -> bool:
    """Whether ``[profile]`` asks for a profile of ``cfg`` not stored yet."""
    if not is_profiled(camp, cfg) or camp.profile is None:
        return False
    return bool(set(camp.profile.at) - captured_points(store, gid))


def profile_config(
    camp: CampaignFile,
    cfg: ResolvedConfig,
    gid: int,
    bench: BenchConfig,
    points: list[LoadPoint],
    store: Store,
    events: BenchEvents,
    server: ServerProcess | None,
) -> list[str]:
    """Every profiled pass ``[profile]`` asks of ``cfg`` (in load order, those not stored
    yet); returns one note per pass. A server that dies ends the passes of this config."""
    if not is_profiled(camp, cfg) or camp.profile is None:
        return []
    done = captured_points(store, gid)
    notes = []
    for p in points:
        if p.label not in camp.profile.at or p.label in done:
            continue
        out = profiled_pass(camp, cfg, gid, bench, p, store, events)
        if out.reason == "interrupted":
            notes.append(f"profile at {p.label} interrupted")
            break
        if out.ok:
            notes.append(
                f"profiled {p.label}: {len(out.analysis_ids)} rank trace(s), {out.seconds:.1f} s"
            )
        else:
            notes.append(f"profile at {p.label} failed ({out.reason}): {out.message}")
        died = record_death(store, cfg, gid, server, p.label) if server is not None else None
        if died is not None:
            notes.append(died)
            break
    return notes
