"""The bodies of the ``verifications`` table, one model per kind (``store.bodies``): a
config's launch record (``launch``), how its server stopped (``stop``) or died (``runtime``),
whether its levers took effect (``lever``), its reference greedy outputs and logprobs, its
lm-eval samples, and the checks' results. Each matches what its writers store, key for key."""

from __future__ import annotations

from pydantic import Field

from inferlab.records import LogprobFields
from inferlab.store.bodies import VERIFICATIONS, Body, Json

__all__ = [
    "CHECK_KINDS",
    "EXACT_KINDS",
    "GREEDY_OUTPUTS",
    "CheckRecord",
    "EvalSamples",
    "GpuDrainRecord",
    "GreedyOutputsRecord",
    "LaunchRecord",
    "LeverCheck",
    "LeverCheckItem",
    "LogprobReferenceRecord",
    "RuntimeRecord",
    "StopRecord",
]

#: the verification kind of a config's reference outputs (kept verbatim: compared char by char)
GREEDY_OUTPUTS = "greedy-outputs"
#: the kinds kept exactly as written, not scrubbed of secret-looking keys and values: model
#: outputs compared char by char or number by number (a logprob reference's keys are tokens,
#: and at top-1024 one of SmolLM2's is "Password": scrubbed, its logprob became "<redacted>")
EXACT_KINDS = frozenset({GREEDY_OUTPUTS, "logprob-reference"})
#: the kinds of ``verify.checks.CheckResult`` (``inferlab verify``, the campaign's verify step)
CHECK_KINDS = ("probe", "equivalence", "length", "stream", "agreement", "eval")


@VERIFICATIONS.register("launch")
class LaunchRecord(Body):
    """How a config's server launch went: ready (``ready_s``, ``argv``, memory) or failed
    (``kind``, ``message``, ``remedy``, the log's ``tail``), and, launched by a Ray actor,
    where it was placed. Writers: the campaign's server stage (launched here),
    ``campaign.profiled`` (died during the profiled pass), ``cluster.task`` (by an actor)."""

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


class LeverCheckItem(Body):
    """One item of a config's diff against the baseline and whether it took effect
    (``campaign.applied.LeverItem``, as stored)."""

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


@VERIFICATIONS.register("lever")
class LeverCheck(Body):
    """The ``lever`` verification of a config (``campaign.applied.record_levers``)."""

    items: list[LeverCheckItem]


class GpuDrainRecord(Body):
    """GPU memory before a launch, while the server ran and after its stop (MiB per GPU;
    ``server.gpumem.GpuDrain``, as stored)."""

    before_mib: list[int]
    at_ready_mib: list[int] | None
    at_stop_mib: list[int] | None
    after_mib: list[int]
    returned: bool
    #: from the start of the wait until returned (or the timeout)
    seconds: float
    tolerance_mib: int
    #: NVML index of each figure (None: not known)
    gpu_indices: list[int] | None = None


@VERIFICATIONS.register("stop")
class StopRecord(Body):
    """How a config's server stopped (``campaign.aftermath.record_stop``)."""

    #: "SIGTERM" | "SIGKILL" | ...
    signal: str
    seconds: float
    port_free: bool
    #: the GPU check's word when no drain was measured
    gpu: str
    notes: list[str]
    gpu_memory: GpuDrainRecord | None
    message: str


@VERIFICATIONS.register("runtime")
class RuntimeRecord(Body):
    """The root-cause fatal line of a server that had come up
    (``campaign.aftermath.RuntimeFailure``, as stored)."""

    kind: str
    line_no: int
    message: str
    remedy: str
    log_path: str
    flags: list[str]
    tail: list[str]


@VERIFICATIONS.register(GREEDY_OUTPUTS)
class GreedyOutputsRecord(Body):
    """Outputs at T=0 for the equivalence prompts (``verify.checks.GreedyOutputs``)."""

    prompts: list[str]
    outputs: list[str]
    max_tokens: int


@VERIFICATIONS.register("logprob-reference")
class LogprobReferenceRecord(Body, LogprobFields):
    """The reference config's teacher-forced logprobs (``verify.logprobs.LogprobReference``):
    per prompt, per position, token → logprob of its top ``top_k`` (``records.LogprobFields``)."""


@VERIFICATIONS.register("eval-samples")
class EvalSamples(Body):
    """One lm-eval harness run of a config (``verify.lmeval.HarnessRun``) with the metric
    and filter it was scored by: the reference the eval check compares against."""

    version: str
    #: the harness's results block, as it wrote it
    results: dict[str, Json]
    #: task → its per-sample records, as the harness wrote them
    samples: dict[str, list[dict[str, Json]]]
    #: the gate's metric and filter (None: the harness's first)
    metric: str | None
    filter: str | None


@VERIFICATIONS.register(*CHECK_KINDS)
class CheckRecord(Body):
    """One check's result (``verify.checks.CheckResult``): ``gating`` False when a failure
    does not fail verification; ``detail`` the check's own figures."""

    kind: str
    passed: bool
    message: str
    detail: dict[str, Json] = Field(default_factory=dict)
    gating: bool = True
