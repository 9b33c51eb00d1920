"""Typed read-back models of the JSON the store keeps beside the runs: a config's launch record
(the ``launch`` verification), whether its levers took effect (``lever``), the levers'
stored predictions (the ``prediction`` analyses) and how a stored profile was captured (the
``capture`` block of a ``profile`` analysis). Each matches
what its writers store, key for key (``extra="forbid"``): a key written and not declared here
fails the read, and the stored JSON itself never changes
(``model_dump(by_alias=True, exclude_unset=True)`` gives it back)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "LaunchRecord",
    "LeverCheck",
    "LeverCheckItem",
    "PredictedPoint",
    "ProfileAnalysis",
    "ProfileCapture",
    "StoredLaunch",
    "StoredLeverCheck",
    "StoredPrediction",
]


class LaunchRecord(BaseModel):
    """How a config's server launch went: ready (``ready_s``, ``argv``, memory) or failed
    (``kind``, ``message``, ``remedy``, the log's ``tail``), and, launched by a Ray actor,
    where it was placed. Writers: ``campaign.steps.server_running`` (launched here),
    ``campaign.profiled`` (died during the profiled pass), ``cluster.task`` (by an actor)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    #: the server's launch log ("" when a failed launch wrote none)
    log_path: str | None = None
    # -- ready
    #: seconds from start until the server answered its health check
    ready_s: float | None = None
    #: the launch command line, secrets removed
    argv: list[str] | None = None
    #: used memory of each GPU once the server was ready (MiB; None without NVML)
    gpu_used_mib: list[int] | None = None
    #: how profiling was switched on for this launch (``[profile]``)
    profiling: str | None = None
    # -- failed
    #: the failure's class (``oom``, ``exited``, ``unhealthy``, an engine's log signature)
    kind: str | None = None
    message: str | None = None
    remedy: str | None = None
    #: the log's last lines (secrets removed)
    tail: list[str] | None = None
    #: "profiled": the server died during the profiled pass at load point ``point``
    pass_: str | None = Field(default=None, alias="pass")
    point: str | None = None
    # -- placed by a Ray actor
    node_id: str | None = None
    hostname: str | None = None
    ip: str | None = None
    actor_pid: int | None = None
    cuda_visible_devices: str | None = None
    ray_gpu_ids: list[str] | None = None
    server_pid: int | None = None
    #: the server process's own CUDA_VISIBLE_DEVICES (None: not readable)
    server_cuda_visible_devices: str | None = None


@dataclass(frozen=True)
class StoredLaunch:
    """One stored launch of a config (by name): whether it came up, and its record."""

    config: str
    passed: bool
    record: LaunchRecord
    created_at: str


class LeverCheckItem(BaseModel):
    """One item of a config's diff against the baseline and whether it took effect
    (``campaign.applied.LeverItem``, as stored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: "--speculative-config" | "env NCCL_PROTO" | "files fp8_gemm"
    item: str
    #: flag | env | files
    kind: str
    #: applied | not-applied | unknown
    status: str
    #: the log line, server_info or metrics text that shows it (secrets removed)
    evidence: str
    #: "launch log" | "server_info" | "metrics" | None
    source: str | None


class LeverCheck(BaseModel):
    """The ``lever`` verification of a config (``campaign.applied.record_levers``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    items: list[LeverCheckItem]


@dataclass(frozen=True)
class StoredLeverCheck:
    """One stored lever check of a config (by name); ``passed``: no item not applied."""

    config: str
    passed: bool
    check: LeverCheck
    created_at: str


class PredictedPoint(BaseModel):
    """A predicted lever at one load point (``levers.model.PointBound``, as stored): ``high``
    the most it can buy (×, an Amdahl ceiling or a band's optimistic end; None: unbounded or
    unknown), ``low`` a band's pessimistic end, ``share`` the fraction of the decode step's GPU
    span it acts on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    concurrency: int | None = None
    high: float | None = None
    low: float | None = None
    share: float | None = None
    at_2x: float | None = None
    extrapolated: bool = False
    note: str = ""


class StoredPrediction(BaseModel):
    """A lever's prediction as ``inferlab levers`` stored it (``levers.model.Lever.to_dict()``
    with the time it was made, ``made_at``, and the format ``version``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    #: the lever's identity across runs: kind, config, name
    key: str
    title: str = ""
    config: str | None = None
    #: "amdahl" | "spec" | "none"
    model: str = ""
    name: str = ""
    summary: str = ""
    ceiling: float | None = None
    points: list[PredictedPoint] = []
    evidence: list[str] = []
    action: str = ""
    confidence: str = ""
    #: local time, ``%Y-%m-%dT%H:%M:%S%z``
    made_at: str | None = None
    version: int | None = None


class ProfileCapture(BaseModel):
    """How a stored profile was captured (the ``capture`` block of a ``profile`` analysis).
    Writers: ``campaign.profiled`` (a campaign's profiled pass) and ``profile.stored``
    (``inferlab profile --campaign``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the load point it was captured at ("C=8"; None: not said)
    point: str | None = None
    #: the trace's rank, of ``ranks`` traces of one pass
    rank: int | None = None
    ranks: int | None = None
    #: the trace file and its size (bytes)
    path: str | None = None
    size_bytes: int | None = None
    engine: str | None = None
    simulated: bool | None = None
    #: "gpu" | "cpu"
    mode: str | None = None
    #: decode steps analyzed
    steps: int | None = None
    segment: str | None = None
    #: the profiled pass's stored run (``runs.id``)
    run_id: int | None = None
    #: the pass's cost: load, capture and analysis (s)
    seconds: float | None = None
    #: "inferlab profile" when stored by hand
    source: str | None = None


@dataclass(frozen=True)
class ProfileAnalysis:
    """One stored profile analysis: its capture block typed, the rest of the profile as
    ``profile.result`` wrote it (``data``, the capture block included)."""

    id: int
    name: str
    campaign: str | None
    config: str | None
    capture: ProfileCapture | None
    data: dict[str, Any]
    created_at: str
