"""The bodies of the ``analyses`` table that hold what was measured or found, one model per
kind (``store.bodies``): the levers' predictions, profiles, recon snapshots, installed-files
manifests and tuning results (what a campaign decided: ``store.outcomes``). Each matches what
its writers store, key for key; a nested part no reader looks into is kept as JSON (``Json``)."""

from __future__ import annotations

from pydantic import Field

from inferlab.store.bodies import ANALYSES, Body, Json

__all__ = [
    "PREDICTION",
    "PROFILE",
    "EngineInfoBody",
    "FileEntry",
    "FilesManifest",
    "MeanStep",
    "OccupancyRow",
    "PredictedPoint",
    "ProfileBody",
    "ProfileCapture",
    "ProfileFields",
    "ProfileRow",
    "ProfileStep",
    "ReconBody",
    "StoredPrediction",
    "TuneBody",
]

#: the analyses kind of a lever's stored prediction
PREDICTION = "prediction"
#: the analyses kind of a stored profile
PROFILE = "profile"


class PredictedPoint(Body):
    """A predicted lever at one load point (``levers.model.PointBound``, as stored): ``high``
    the most it can buy (×, an Amdahl ceiling or a band's optimistic end; None: unbounded or
    unknown), ``low`` a band's pessimistic end, ``share`` the fraction of the decode step's GPU
    span it acts on."""

    label: str
    concurrency: int | None = None
    high: float | None = None
    low: float | None = None
    share: float | None = None
    at_2x: float | None = None
    extrapolated: bool = False
    note: str = ""


@ANALYSES.register(PREDICTION)
class StoredPrediction(Body):
    """A lever's prediction as ``inferlab levers`` stored it (``levers.model.Lever.to_dict()``
    with the time it was made, ``made_at``, and the format ``version``)."""

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
    points: list[PredictedPoint] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    action: str = ""
    confidence: str = ""
    #: local time, ``%Y-%m-%dT%H:%M:%S%z``
    made_at: str | None = None
    version: int | None = None


class ProfileCapture(Body):
    """How a stored profile was captured (the ``capture`` block of a ``profile`` analysis).
    Writers: ``campaign.profiled`` (a campaign's profiled pass) and ``profile.stored``
    (``inferlab profile --campaign``)."""

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


class ProfileStep(Body):
    """One step of a profile, as the analysis builds it (``profile.steps.make_step``; times in
    µs): ``kernels`` counts kernels (GPU mode) or CPU ops (CPU mode) starting in the step,
    ``batch`` its sequences when its name says (``step[DECODE bs=16]``)."""

    name: str
    start_us: float
    span_us: float
    busy_us: float
    idle_us: float
    kernels: int
    kernel_us: float
    batch: int | None = None


class ProfileRow(Body):
    """One category or kernel of a profile (``profile.bounds.make_row``): its GPU time (µs), its
    share of the step, and the step's speed-up if it ran 2× faster or took no time
    (``amdahl_*``, ×; None: it is the whole step)."""

    name: str
    category: str
    time_us: float
    share: float | None
    count: int
    mean_us: float
    per_step_us: float | None
    amdahl_2x: float | None
    amdahl_free: float | None
    short: str = ""


class OccupancyRow(Body):
    """A kernel's occupancy (``profile.occupancy``): blocks, fraction of the SMs."""

    name: str
    short: str
    blocks: int
    sm_fraction: float
    time_us: float
    share: float
    count: int


class MeanStep(Body):
    """The mean decode step of a profile (µs; ``batch`` when every step names it)."""

    span_us: float
    busy_us: float
    idle_us: float
    kernels: float
    min_span_us: float
    max_span_us: float
    batch: float | None = None


class HostBody(Body):
    """The engine thread's time per step (µs, medians over ``steps`` loops), as
    ``profile.host.host_time`` finds it and the profile holds it."""

    thread: int
    steps: int
    loop_us: float
    range_us: float
    wait_us: float
    launch_us: float
    ahead: float


class ProfileFields(Body):
    """What an analysis of one segment of one trace found (times in µs): the fields of the
    analysis's ``profile.result.Profile`` and of a stored ``ProfileBody`` (whose defaults read
    older versions' bodies: ``mode``/``share_of`` came in version 2, ``host`` in 3)."""

    trace: str
    format: str
    segment: str
    step_source: str
    device: str | None
    sm_count: int | None
    steps: list[ProfileStep]
    span_us: float
    busy_us: float
    kernel_us: float
    kernels: int
    kernel_names: int
    copy_us: float
    copies: int
    categories: list[ProfileRow]
    #: every kernel (CPU op) name, by time
    kernel_rows: list[ProfileRow]
    unknown: list[str]
    occupancy: list[OccupancyRow]
    occupancy_share: float | None
    graph_launches: int
    graph_kernels: int
    verdict: str
    warnings: list[str] = Field(default_factory=list)
    #: "gpu": kernels on the GPU row; "cpu": CPU ops of the engine's worker thread
    mode: str = ""
    #: what shares are of: "kernel time" (GPU) or "step time" (CPU: categories sum to 100%)
    share_of: str = ""
    #: trace metadata worth keeping (e.g. ``{"simulated": True, ...}`` from the sim's traces)
    meta: dict[str, Json] = Field(default_factory=dict)
    #: the host's time per step from the trace's CPU side (``profile.host``); None: unknown
    host: HostBody | None = None
    version: int = 0


@ANALYSES.register(PROFILE)
class ProfileBody(ProfileFields):
    """A stored profile (``profile.result.Profile.to_dict()``) with how it was captured
    (``capture``, added by its writers)."""

    mean_step: MeanStep | None = None
    capture: ProfileCapture | None = None
    #: ``inferlab profile --vs B``: B's profile and the diff, as the command printed them
    vs: dict[str, Json] | None = None


class EngineInfoBody(Body):
    """The engine recon found installed (``recon.core.EngineInfo``)."""

    name: str
    version: str | None
    distributions: list[str]
    package_dir: str
    #: file kind → the directory the engine reads it from
    config_dirs: dict[str, str]
    triton_subdir: str | None
    #: the engine's ``--help``, parsed (None: not read)
    help: dict[str, Json] | None


@ANALYSES.register("recon")
class ReconBody(Body):
    """A recon snapshot of a host (``recon.core.Recon.to_dict()``): its GPUs, Python, torch,
    engine, repo, tuned directories and the shapes the log says ran untuned."""

    host: str
    created_at: str
    inferlab_version: str
    seconds: float
    gpus: list[dict[str, Json]]
    nvml: dict[str, Json]
    python: dict[str, Json] | None
    torch: dict[str, Json] | None
    engine: EngineInfoBody | None
    repo: dict[str, Json] | None
    repo_source: str | None
    tuned_dirs: list[dict[str, Json]]
    devices: list[str]
    needed: list[dict[str, Json]]
    log: str | None
    env: dict[str, dict[str, str]]
    server: dict[str, Json] | None
    errors: list[str]
    recon_version: int
    tuned_for_devices: dict[str, Json]


class FileEntry(Body):
    """One file a config installed (``campaign.files``): new, or replacing an original."""

    file: str
    #: "new" | "replace" | "same"
    action: str
    sha256: str
    original_sha256: str | None


@ANALYSES.register("files")
class FilesManifest(Body):
    """One directory's installed files of a config (``campaign.files``: ``installed``, then
    ``restored`` with how it was put back), for the report and a later ``--resume``."""

    state: str
    kind: str
    dir: str
    source: str | None
    host: str
    python: str
    config: str
    created_dir: bool
    #: file → its SHA-256 before the install
    before: dict[str, str]
    files: list[FileEntry]
    #: how the directory was put back (``restored`` only)
    restore: dict[str, Json] | None = None


@ANALYSES.register("tune")
class TuneBody(Body):
    """One tuned shape (``tune.report.analysis_records``): its cells and what was written."""

    n: int
    k: int
    engine: str
    device_name: str
    devices: int
    #: the roofline's ceilings (``fp8_tflops``, ``copy_gbps``)
    ceilings: dict[str, float]
    wall_s: float
    compile_s: float
    cells: list[dict[str, Json]]
    files: list[dict[str, Json]]
    warnings: list[str]
