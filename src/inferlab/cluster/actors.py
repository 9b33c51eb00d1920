"""The work a Ray actor does on its node, with the existing code; no actor touches the store.

``ServerActor`` (a config's GPU bundle) launches the engine with the campaign lifecycle (own
process group, one log file, readiness with fatal log signatures), verifies it, and stops and
drains it; the engine inherits the ``CUDA_VISIBLE_DEVICES`` Ray gave the actor. ``ClientActor``
(the CPU bundle beside it, or a client node) runs the existing load generator, worker
processes included, one cell per call, and returns the finished point with its raw records and
``/metrics`` scrapes for the driver to commit. Ray only places and collects: it is never in a
request's path. These are plain classes; :mod:`inferlab.cluster.campaign` wraps them with
``ray.remote``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import time
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from inferlab.campaign.context import RuntimeFailure
from inferlab.campaign.parts.aftermath import log_lines, runtime_failure
from inferlab.campaign.parts.files import FileSet
from inferlab.campaign.parts.launch import launch_config, served_model
from inferlab.campaign.parts.watch import ServerWatch
from inferlab.cluster.connect import own_children
from inferlab.cluster.nodefiles import FilesDone, NodeFiles
from inferlab.config.bench import BenchConfig
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.environment import snapshot
from inferlab.errors import InferlabError, LaunchError
from inferlab.load.adaptive import BaselineRef
from inferlab.load.bench import LoadPoint, PointResult, run_bench
from inferlab.load.http import Endpoint
from inferlab.picks import pick
from inferlab.records import RequestRecord
from inferlab.server import ServerProcess, StopReport, stop
from inferlab.server.gpumem import GpuDrain, nvml_indices, used_mib, wait_returned
from inferlab.server.scrape import Scrape, Scraper
from inferlab.verify import GreedyOutputs, VerifyReport, verify_endpoint

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "ClientActor",
    "Launched",
    "Measured",
    "Placed",
    "ServerActor",
    "Stopped",
    "mine_log",
    "placed_here",
]


@dataclass(frozen=True)
class Placed:
    """Where an actor runs: Ray node, host, its pid, and the GPUs Ray assigned it."""

    node_id: str
    hostname: str
    ip: str
    pid: int
    cuda_visible_devices: str | None
    gpu_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            **pick(self, "node_id", "hostname", "ip"),
            "actor_pid": self.pid,
            "cuda_visible_devices": self.cuda_visible_devices,
            "ray_gpu_ids": list(self.gpu_ids),
        }


def placed_here() -> Placed:
    """The calling actor's node and GPUs, as Ray sees them."""
    import ray

    ctx = ray.get_runtime_context()
    return Placed(
        node_id=str(ctx.get_node_id()),
        hostname=socket.gethostname(),
        ip=str(ray.util.get_node_ip_address()),  # type: ignore[no-untyped-call]
        pid=os.getpid(),
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        gpu_ids=[str(g) for g in ray.get_gpu_ids()],
    )


def mine_log(path: str) -> list[dict[str, Any]]:
    """Findings of a launch log as stored dicts (as ``store_log_findings`` would store them);
    a miner bug becomes a ``log-analysis-failed`` finding, never the end of a campaign."""
    from inferlab.logs.analyze import analyze_log

    try:
        return [f.to_dict() for f in analyze_log(path).findings]
    except InferlabError:
        return []
    except Exception as exc:
        return [
            {
                "kind": "log-analysis-failed",
                "severity": "warning",
                "message": f"the launch log could not be analyzed: {exc!r}",
                "evidence": {"lines": []},
                "action": f"inferlab logs analyze {path} (and report the error)",
            }
        ]


def _proc_env(pid: int, name: str) -> str | None:
    """``name`` in the environment the server under guard ``pid`` started with (Linux: its
    first child's, else the guard's own), or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            kids = f.read().split()
        pid = int(kids[0]) if kids else pid
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                key, sep, value = item.partition(b"=")
                if sep and key.decode(errors="replace") == name:
                    return value.decode(errors="replace")
    except OSError:
        pass
    return None


@dataclass
class Launched:
    """A launch's outcome on its node: the URL when ready, else the classified failure."""

    placed: Placed
    url: str | None = None
    model: str = ""
    ready_s: float | None = None
    log_path: str = ""
    argv: list[str] = field(default_factory=list)
    server_pid: int | None = None
    server_cuda_visible_devices: str | None = None
    gpu_ready_mib: list[int] | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    recon: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Stopped:
    """A stop as ``inferlab run`` checks it: the report (signal, seconds, port, per-pid GPU
    check), the GPU memory drain of the config's GPUs, a runtime failure in the log (a fatal
    line after it came up), and the findings of the whole log."""

    report: StopReport
    drain: GpuDrain | None
    failure: RuntimeFailure | None
    log_path: str
    findings: list[dict[str, Any]] = field(default_factory=list)


class ServerActor:
    """One config's server on its node (see the module docstring)."""

    def __init__(self, camp: CampaignFile, cfg: ResolvedConfig) -> None:
        self.camp = camp
        self.cfg = cfg
        import ray

        self.server: ServerProcess | None = None
        self.files = NodeFiles(camp, cfg)
        if not ray.get_gpu_ids():  # Ray fences only actors that ask for GPUs: fence this one
            os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
        self.cvd = os.environ.get("CUDA_VISIBLE_DEVICES")  # what Ray gave this actor
        self.gpu_before: list[int] | None = None
        self.gpu_ready: list[int] | None = None
        own_children()
        atexit.register(self._kill)  # a graceful actor exit takes the server down with it

    def _kill(self) -> None:
        if self.server is not None and self.server.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.server.proc.pid, signal.SIGKILL)

    def install_files(
        self, base: ResolvedConfig, config_id: int, sets: list[FileSet] | None, log: str | None
    ) -> FilesDone:
        """The config's ``files`` step on this node (``cluster.nodefiles``), before launch."""
        got = self.files.install(base, config_id, sets, log)
        self.cfg = got.cfg  # as launched: with its tuned files
        return got

    def restore_files(self) -> FilesDone:
        """Every file :meth:`install_files` installed, restored (after the stop)."""
        return self.files.restore()

    def launch(self, recon: bool = False) -> Launched:
        """Launch and wait until ready; a failure is returned classified, with its findings."""
        out = Launched(placed_here())
        if recon:
            out.recon = _recon(self.cfg)
        self.gpu_before = used_mib(self.cvd)
        try:
            server = launch_config(self.camp, self.cfg, guard=True)
        except LaunchError as exc:
            log = str(exc.log_path or "")
            out.error = {
                "kind": exc.kind,
                "message": str(exc),
                "remedy": exc.remedy,
                "tail": exc.tail[-40:],
                "log_path": log,
            }
            out.findings = mine_log(log) if log else []
            return out
        self.server = server
        self.gpu_ready = out.gpu_ready_mib = used_mib(self.cvd)
        spec = get_engine(self.cfg.engine)
        url = server.spec.health_url.rsplit(str(spec.health_path), 1)[0]
        out.url, out.ready_s, out.argv = url, server.ready_s, list(server.spec.argv)
        out.log_path, out.server_pid = str(server.spec.log_path), server.pid
        out.server_cuda_visible_devices = _proc_env(server.pid, "CUDA_VISIBLE_DEVICES")
        out.model = served_model(url, self.cfg.model or "")
        snap = snapshot(engine_name=self.cfg.engine, cuda_visible=self.cvd, restrict=True)
        ray_keys = {
            k if k.startswith("ray_") else "ray_" + k: v for k, v in out.placed.to_json().items()
        }
        out.environment = {**snap, **ray_keys}
        return out

    def verify(self, url: str, model: str, reference: GreedyOutputs | None) -> VerifyReport:
        """Every check of the campaign's ``[verify]`` against the running server."""
        spec = get_engine(self.cfg.engine)
        return verify_endpoint(
            url,
            model=model,
            engine=spec,
            section=self.camp.verify,
            reference=reference,
            lossless=self.cfg.lossless,
        )

    def exited(self, refused: bool, when: str) -> str | None:
        """The campaign's server watch (``campaign.parts.watch``) for a point the client actor
        measured: None while the server runs, else what happened ``when``."""
        if self.server is None:
            return None
        return ServerWatch(self.server, self.cfg.name).check(refused, when)

    def stop(self) -> Stopped | None:
        """Stop and drain the server as ``inferlab run`` does (``campaign.parts.aftermath``), on
        this config's GPUs only; None when it never started."""
        if self.server is None:
            return None
        server, self.server = self.server, None
        at_stop = used_mib(self.cvd)
        served = log_lines(server)
        rep = stop(server)
        log = str(server.spec.log_path)
        findings = mine_log(log)
        drain = wait_returned(
            self.gpu_before,
            at_ready=self.gpu_ready,
            at_stop=at_stop,
            read=partial(used_mib, self.cvd),
            indices=nvml_indices(self.cvd),
        )
        failure = runtime_failure(get_engine(self.cfg.engine), log, until_line=served)
        return Stopped(rep, drain, failure, log, findings)


def _recon(cfg: ResolvedConfig) -> dict[str, Any] | None:
    """This node's recon snapshot, taken as ``inferlab run`` takes it (``campaign.parts.recon``):
    GPUs, NCCL and engine variables and, for a known engine in a given Python, its versions
    and tuned config files. None if it failed."""
    from inferlab.recon import ReconOptions, run_recon

    opts = ReconOptions.before_run(cfg.engine, cfg.python)
    try:
        return run_recon(opts).to_dict()
    except InferlabError:
        return None


@dataclass
class Measured:
    """One cell as a client measured it: the point (records on this host's clock), its
    scrapes, the sweep's meta, and the error that ended it (kind, message) if any."""

    point: PointResult | None
    scrapes: list[Scrape]
    meta: dict[str, Any]
    placed: Placed
    error: tuple[str, str] | None = None


class _Collect:
    """A result sink that keeps the points and scrapes ``/metrics`` around each (as the
    driver's store sink does on one host)."""

    def __init__(self, cfg: BenchConfig, scrape: bool) -> None:
        spec = get_engine(cfg.engine or "openai")  # the campaign always names it
        self.metrics = (
            Endpoint.parse(cfg.url).base + str(spec.metrics_path)
            if scrape and spec.metrics_path
            else None
        )
        self.meta: dict[str, Any] = {}
        self.points: list[PointResult] = []
        self.scrapes: list[Scrape] = []
        self._scraper: Scraper | None = None

    def start(self, meta: dict[str, Any]) -> None:
        self.meta = meta

    def begin(self, point: LoadPoint, trial: int) -> None:
        if self.metrics is not None:
            self._scraper = Scraper(self.metrics, interval_s=2.0).start()

    def point(self, res: PointResult) -> None:
        if self._scraper is not None:
            self.scrapes = self._scraper.stop()
            self._scraper = None
        self.points.append(res)

    def close(self) -> None:
        if self._scraper is not None:
            self._scraper.stop()


def _skewed(rec: RequestRecord, skew: int) -> RequestRecord:
    return replace(
        rec,
        send_ns=rec.send_ns + skew,
        end_ns=rec.end_ns + skew,
        scheduled_ns=None if rec.scheduled_ns is None else rec.scheduled_ns + skew,
        event_ns=[t + skew for t in rec.event_ns],
    )


class ClientActor:
    """The load generator of one host. ``skew_ns`` is a test seam: this host's clock then
    reads ``skew_ns`` ahead of ``perf_counter_ns`` (in its records and in :meth:`clock`)."""

    def __init__(
        self, cfg: BenchConfig | None = None, *, scrape: bool = True, skew_ns: int = 0
    ) -> None:
        self.cfg = cfg
        self.scrape = scrape
        self.skew_ns = skew_ns
        own_children()

    def aim(self, cfg: BenchConfig) -> None:
        """The sweep to run (a server's URL is known only once it is ready)."""
        self.cfg = cfg

    def clock(self) -> int:
        """This host's clock now (ns): what the driver's offset estimate reads."""
        return time.perf_counter_ns() + self.skew_ns

    def placed(self) -> Placed:
        return placed_here()

    def measure(
        self,
        label: str,
        trial: int,
        start_ns: int | None = None,
        baselines: dict[str, BaselineRef] | None = None,
    ) -> Measured:
        """Measure one (label, trial) cell, its main phase starting no earlier than
        ``start_ns`` on this host's clock; ``baselines``: the reference's points (label →)
        a sequential A/B tests it against. A user error ends it and is returned with the
        point it measured (as ``inferlab bench`` would store it, then raise)."""
        assert self.cfg is not None, "aim() first"
        sink = _Collect(self.cfg, self.scrape)
        start = None if start_ns is None else start_ns - self.skew_ns
        cfg = self.cfg.model_copy(update={"not_before_ns": start})
        error: tuple[str, str] | None = None
        try:
            run_bench(cfg, None, None, [sink], cells={(label, trial)}, baselines=baselines)
        except InferlabError as exc:
            error = (type(exc).__name__, str(exc))
        point = sink.points[0] if sink.points else None
        if point is not None and self.skew_ns:
            point.records = [_skewed(r, self.skew_ns) for r in point.records]
        scrapes = [replace(s, t_ns=s.t_ns + self.skew_ns) for s in sink.scrapes]
        return Measured(point, scrapes, sink.meta, placed_here(), error)
