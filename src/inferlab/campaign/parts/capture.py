"""Profile capture inside a campaign: a profiled pass per ``[profile] at`` point of a config.

After a config's measured points (never inside them: profiling slows the server), the same load
of that point runs again; once it is steady (closed loop: all C streams have started, about
0.3 s into the main phase; open loop: the first request has finished) the engine's capture
recipe (``inferlab.engines.capture``) starts a capture of ``steps`` engine steps. It stops by
itself (SGLang, the sim) or with the recipe's stop request, at the latest at the end of the
point. One trace per rank is then waited for (:mod:`.collect`), copied back from a remote
host, analyzed (``inferlab.profile``: decode steps; CPU mode for CPU engines), stored as an
analysis of kind ``profile`` with its ``capture`` block (point, rank, path, size...), and kept
under ``<output>/profiles/<config>/``. The pass's requests are stored as a run with
``purpose = 'profiled'``: no verdict, resume accounting or sweep table ever reads them.

A failed capture is a finding (kind ``profile-capture-failed``) and the campaign goes on; a
server that died during the capture is a launch failure of the profiled pass, classified from
its log. Points already measured are kept.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inferlab.campaign.parts.collect import (
    CaptureFailed,
    FileStore,
    LocalFiles,
    SshFiles,
    wait_complete,
)
from inferlab.config.campaign import CampaignFile, ProfileSection
from inferlab.config.resolve import ResolvedConfig
from inferlab.config.source import locate
from inferlab.engines import get_engine
from inferlab.engines.capture import CaptureRecipe
from inferlab.errors import ConfigError
from inferlab.store import Store
from inferlab.store.models import ReconBody

__all__ = [
    "CaptureOutcome",
    "Controller",
    "capture_base",
    "check_profile",
    "file_store",
    "is_profiled",
    "launch_form",
    "prefix_for",
    "profiling_lines",
    "with_profiling",
]

STEADY_AFTER_S = 0.3  # closed loop: every stream has sent its first request by then


@dataclass
class CaptureOutcome:
    """One profiled pass: what it wrote, how long it took (s), what went wrong."""

    config: str
    point: str
    ok: bool = False
    seconds: float = 0.0
    files: list[str] = field(default_factory=list)
    analysis_ids: list[int] = field(default_factory=list)
    run_id: int | None = None
    message: str = ""
    reason: str | None = None


def is_profiled(camp: CampaignFile, cfg: ResolvedConfig) -> bool:
    prof = camp.profile
    return prof is not None and (prof.configs is None or cfg.name in prof.configs)


def capture_base(camp: CampaignFile, cfg: ResolvedConfig) -> str:
    """Where the server writes traces: under the output directory (remote: under /tmp)."""
    if cfg.is_local:
        return str((camp.output_dir / "profiles" / cfg.name).resolve())
    return f"/tmp/inferlab-profiles/{camp.campaign.name}/{cfg.name}"


def _where(path: Path, text: str, loc: tuple[int | str, ...]) -> str:
    line = locate(text, loc)
    return f"{path}:{line}" if line else str(path)


def check_profile(
    path: Path, text: str, camp: CampaignFile, names: list[str], labels: list[str]
) -> None:
    """Plan-time checks of ``[profile]``: its points, configs and the engine's recipe."""
    prof = camp.profile
    if prof is None:
        return
    for i, at in enumerate(prof.at):
        if at not in labels:
            raise ConfigError(
                f"{_where(path, text, ('profile', 'at', i))}: profile.at: {at!r} is not a load "
                f"point of [load] (its points: {', '.join(labels) or 'none'})"
            )
    for i, name in enumerate(prof.configs or []):
        if name not in names:
            raise ConfigError(
                f"{_where(path, text, ('profile', 'configs', i))}: profile.configs: no config "
                f"{name!r} (configs: {', '.join(names)})"
            )
    if get_engine(camp.engine.kind).capture is None:
        raise ConfigError(
            f"{_where(path, text, ('profile',))}: profile: engine kind {camp.engine.kind!r} has "
            "no capture recipe (inferlab cannot ask it for a trace). Record the trace yourself "
            "(torch.profiler, nsys) and store it with `inferlab profile TRACE --campaign "
            f"{camp.campaign.name} --config NAME --point {prof.at[0]}`, or remove [profile]"
        )


def with_profiling(
    camp: CampaignFile, cfg: ResolvedConfig, engine_version: str | None, *, create: bool = False
) -> tuple[ResolvedConfig, str]:
    """``cfg`` as launched with profiling on, and the plan's words for it; ``create``: make
    the (local) trace directory now."""
    recipe = get_engine(cfg.engine).capture
    assert recipe is not None
    base = capture_base(camp, cfg)
    if create and cfg.is_local:
        Path(base).mkdir(parents=True, exist_ok=True)
    steps = camp.profile.steps if camp.profile is not None else 20
    add = recipe.launch(base, engine_version, steps)
    launched = replace(cfg, args=[*cfg.args, *add.args], env={**cfg.env, **add.env})
    return launched, add.describe()


def _engine_version(store: Store, campaign: str) -> str | None:
    """The engine version recon found for this campaign (None when unknown)."""
    rows = store.analyses.of(ReconBody, "recon", campaign)
    engine = rows[-1].data.engine if rows else None
    return engine.version if engine is not None else None


def launch_form(
    camp: CampaignFile, cfg: ResolvedConfig, store: Store
) -> tuple[ResolvedConfig, str | None]:
    """What to launch for ``cfg``: with profiling on (and its note) when ``[profile]`` names it;
    the engine version comes from the campaign's recon."""
    if not is_profiled(camp, cfg):
        return cfg, None
    version = _engine_version(store, camp.campaign.name)
    return with_profiling(camp, cfg, version, create=True)


def profiling_lines(camp: CampaignFile, cfg: ResolvedConfig) -> list[str]:
    """The plan's line for a profiled config (none otherwise)."""
    if not is_profiled(camp, cfg) or camp.profile is None:
        return []
    note = with_profiling(camp, cfg, None)[1]
    return [f"    {note}; profiled at {', '.join(camp.profile.at)} in a separate pass"]


def prefix_for(cfg: ResolvedConfig, label: str) -> str:
    """A file-name prefix unique to one capture (``[A-Za-z0-9._-]``, as vLLM requires)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "", label.replace("=", ""))
    return f"inferlab-{cfg.name}-{safe}-{time.strftime('%Y%m%d-%H%M%S')}"


def _post(url: str, body: dict[str, Any] | None, timeout_s: float) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return int(r.status), r.read(4096).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read(4096).decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CaptureFailed("start-failed", f"POST {url}: {reason}") from None


class Controller:
    """Runs in a thread beside the profiled load: start when steady, stop, wait for files."""

    def __init__(
        self,
        recipe: CaptureRecipe,
        url: str,
        prof: ProfileSection,
        prefix: str,
        directory: str,
        files: FileStore,
        ranks: int,
    ) -> None:
        self.recipe, self.url, self.prof = recipe, url, prof
        self.prefix, self.directory, self.files, self.ranks = prefix, directory, files, ranks
        self.steady = threading.Event()
        self.load_done = threading.Event()
        self.load_end = 0.0
        self.stopped = False
        self.found: list[Any] = []
        self.error: CaptureFailed | None = None

    def run(self) -> None:
        try:
            self._run()
        except CaptureFailed as exc:
            self.error = exc
            self._stop_quietly()

    def _run(self) -> None:
        while not self.steady.wait(0.2):
            if self.load_done.is_set():
                raise CaptureFailed("start-failed", "the load ended before it was steady")
        r = self.recipe
        pattern = r.rank_pattern(self.prefix)
        # files already there belong to earlier captures (vLLM 0.26 names them all alike)
        before = frozenset(f.path for f in self.files.list(self.directory, pattern, r.exclude))
        body = r.body(
            self.directory, self.prefix, self.prof.steps, self.prof.activities, self.prof.with_stack
        )
        status, text = _post(self.url + r.start_path, body, 60.0)
        if status == 404:
            raise CaptureFailed(
                "endpoint-absent",
                f"POST {self.url}{r.start_path} answered 404: the server has no profiling "
                "endpoint (was it launched with profiling on?)",
            )
        if status != 200:
            raise CaptureFailed(
                "start-failed", f"POST {self.url}{r.start_path} answered {status}: {text[:300]}"
            )
        self.found = wait_complete(
            self.files,
            self.directory,
            pattern,
            r.exclude,
            self.ranks,
            ignore=before,
            deadline=self._deadline,
            timeout_s=self.prof.timeout_s,
            max_bytes=int(self.prof.max_trace_mb * 2**20),
            done=self._done,
        )
        if not r.self_stopping:
            self._stop()

    def _deadline(self) -> float:
        if not self.load_done.is_set():
            return float("inf")
        return self.load_end + self.prof.timeout_s

    def _done(self) -> bool:
        """No more files will come: the capture was stopped (at the end of the point)."""
        if self.stopped:
            return True
        if self.load_done.is_set():  # no more steps will run: stop (400: it stopped itself)
            self._stop()
        return self.stopped

    def _stop(self) -> None:
        """The recipe's stop; its 200 means the files are written (400: nothing to stop)."""
        if self.stopped:
            return
        self.stopped = True
        status, text = _post(self.url + self.recipe.stop_path, None, self.prof.timeout_s)
        if status not in (200, 400):
            raise CaptureFailed(
                "timeout", f"POST {self.url}{self.recipe.stop_path} answered {status}: {text[:300]}"
            )

    def _stop_quietly(self) -> None:
        try:
            self._stop()
        except CaptureFailed:
            pass


def file_store(cfg: ResolvedConfig) -> FileStore:
    return LocalFiles() if cfg.is_local else SshFiles(cfg.host)
