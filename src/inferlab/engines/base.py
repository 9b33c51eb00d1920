"""The engine registry: adding an engine is adding one module that calls ``register``.

An ``EngineSpec`` is data about one serving engine — how to launch it, its HTTP paths, how to
ask for a fixed output length, its flag spelling, its Prometheus metric names and its log
signatures — and pure functions over that data. Nothing here starts processes or does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from inferlab.engines import flags as _flags
from inferlab.engines.capture import CaptureRecipe
from inferlab.engines.configdir import (
    MOE_NAMES,
    ConfigDir,
    VersionedPath,
    fp8_gemm_names,
    release_key,
)
from inferlab.engines.evidence import Evidence
from inferlab.engines.facts import Fp8Tuning, LogFacts, OomAdvice, ReconFacts
from inferlab.engines.flags import Change, FlagSyntax, FlagValue, ParsedArgs
from inferlab.engines.logs import LogMatch, LogSignature, match_signatures
from inferlab.engines.prometheus import MetricDef
from inferlab.errors import ConfigError, lookup

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "MOE_NAMES",
    "OPENAI_ONLY",
    "ConfigDir",
    "DetectHint",
    "EngineSpec",
    "Launcher",
    "NativeApi",
    "VersionedPath",
    "classify_log",
    "fill_template",
    "fp8_gemm_names",
    "get_engine",
    "is_simulated",
    "omp_threads_env",
    "register",
    "registered",
    "release_key",
    "specs",
    "unregister",
]

PYTHON = "{python}"


def omp_threads_env(cpus: Sequence[int]) -> dict[str, str]:
    """The default CPU-thread knob: one OpenMP thread per CPU the server is pinned to."""
    return {"OMP_NUM_THREADS": str(len(cpus))}


@dataclass(frozen=True)
class Launcher:
    """One way to start an engine: ``prefix`` (``{python}`` stands for the interpreter), then
    the model (after ``model_flag``; ``""``: as a positional), host, port, then the user's args."""

    name: str
    prefix: tuple[str, ...]
    model_flag: str | None
    model_required: bool = True
    host_flag: str = "--host"
    port_flag: str = "--port"
    #: more flags the user's args must not give (e.g. ``--model`` beside a positional model)
    also_reserved: tuple[str, ...] = ()
    note: str = ""

    def reserved_flags(self) -> tuple[str, ...]:
        """Flags this launcher sets itself; the user's args must not repeat them."""
        out = [self.host_flag, self.port_flag, *self.also_reserved]
        if self.model_flag:
            out.append(self.model_flag)
        return tuple(out)


@dataclass(frozen=True)
class NativeApi:
    """An engine's own (non-OpenAI) generate endpoint and its length-control fields, which
    sit inside ``params_key`` (e.g. SGLang ``/generate`` → ``sampling_params``)."""

    path: str
    params_key: str | None
    max_tokens_field: str
    min_tokens_field: str | None
    ignore_eos_field: str | None


@dataclass(frozen=True)
class DetectHint:
    """One sign that a running server is this engine, worth ``weight``: ``where`` is
    ``owned_by`` (``/v1/models`` owned_by equals ``value``), ``metrics`` (a ``/metrics`` name
    starts with ``value``), ``server`` (the ``Server`` header matches the regex ``value``) or
    ``path`` (GET ``value`` answers 200 with a JSON object holding ``key``)."""

    where: str
    value: str
    key: str | None = None
    weight: int = 1


class _OpenAiOnly(TypedDict):
    tokenize_path: None
    version_path: None
    metrics_path: None
    ignore_eos_field: None
    min_tokens_field: None


#: ``EngineSpec`` fields of a server that speaks only the OpenAI API: no tokenize, version or
#: metrics path, no request field that forces the output length (``EngineSpec(**OPENAI_ONLY)``)
OPENAI_ONLY: _OpenAiOnly = {
    "tokenize_path": None,
    "version_path": None,
    "metrics_path": None,
    "ignore_eos_field": None,
    "min_tokens_field": None,
}


@dataclass(frozen=True)
class EngineSpec:
    """What inferlab knows about one serving engine (see the module docstring)."""

    name: str
    description: str
    health_path: str | None = "/health"
    models_path: str = "/v1/models"
    tokenize_path: str | None = "/tokenize"
    #: JSON field of the tokenize request carrying the text
    tokenize_field: str = "prompt"
    #: GET path answering JSON with a "version" field (None: the engine has none)
    version_path: str | None = "/version"
    #: Prometheus text exposition (None: the engine has none)
    metrics_path: str | None = "/metrics"
    #: launch flag without which ``metrics_path`` answers 404 (None: always on)
    metrics_enable_flag: str | None = None
    #: OpenAI-API request-body fields that make the server emit exactly ``max_tokens`` tokens
    ignore_eos_field: str | None = "ignore_eos"
    min_tokens_field: str | None = "min_tokens"
    #: how the agreement gate teacher-forces it: a name of ``inferlab.verify.scorers.SCORERS``
    teacher_forcing: str = "echo"
    native_api: NativeApi | None = None
    #: launch variants, the first is the default (empty: nothing to launch)
    launchers: tuple[Launcher, ...] = ()
    #: why ``launchers`` is empty
    not_launchable: str = ""
    flag_syntax: FlagSyntax = field(default_factory=FlagSyntax)
    metrics: tuple[MetricDef, ...] = ()
    log_signatures: tuple[LogSignature, ...] = ()
    #: tuned kernel-config directories in the installed package (``files = {...}`` levers)
    config_dirs: tuple[ConfigDir, ...] = ()
    #: what proves a lever took effect (``inferlab.engines.evidence``)
    evidence: Evidence = field(default_factory=Evidence)
    #: how ``inferlab bench`` / ``verify`` recognise a running server of this engine
    detect: tuple[DetectHint, ...] = ()
    #: the launch argv is the campaign's ``[engine] argv`` (kind ``command``), not a launcher
    argv_from_config: bool = False
    #: environment variables that size the engine's CPU threads to the CPUs it is pinned to
    cpu_env: Callable[[Sequence[int]], dict[str, str]] = omp_threads_env
    #: how to record a profiler trace while it serves (None: the campaign cannot profile it)
    capture: CaptureRecipe | None = None
    #: flags whose values multiply to the GPUs one server needs (tp × pp × dp), canonical
    parallel_flags: tuple[str, ...] = ()
    #: parallel flag → flag that makes its ranks share the others' GPUs (SGLang DP attention)
    parallel_within: Mapping[str, str] = field(default_factory=dict)
    #: GPUs a server needs when its args give no parallel flag (0: runs on CPUs)
    default_gpus: int = 0
    #: False: it serves no language model (the reference engine): default probes ask for text
    speaks_language: bool = True
    #: its timings are simulated (the reference engine): what it measures is marked SIMULATED
    simulated: bool = False
    # -- what the layers above read (``inferlab.engines.facts``; None: not supported) --------
    #: how ``inferlab recon`` inspects it in a Python
    recon: ReconFacts | None = None
    #: the block-FP8 GEMM files ``inferlab tune fp8-gemm --engine NAME`` writes for it
    fp8_tuning: Fp8Tuning | None = None
    #: how ``inferlab logs analyze`` reads its logs
    logs: LogFacts | None = None
    #: what to change when it runs out of memory capturing CUDA graphs
    oom: OomAdvice | None = None

    # -- requests ---------------------------------------------------------------------------
    def fixed_length_fields(self, n: int) -> dict[str, JsonValue]:
        """Extra OpenAI-API body fields asking for exactly ``n`` output tokens (+ max_tokens)."""
        out: dict[str, JsonValue] = {}
        if self.ignore_eos_field:
            out[self.ignore_eos_field] = True
        if self.min_tokens_field:
            out[self.min_tokens_field] = n
        return out

    def native_fixed_length_fields(self, n: int) -> dict[str, JsonValue]:
        """Body fields for the native API asking for exactly ``n`` output tokens, nested under
        its ``params_key``; ``{}`` when the engine has no native API."""
        api = self.native_api
        if api is None:
            return {}
        params: dict[str, JsonValue] = {api.max_tokens_field: n}
        if api.min_tokens_field:
            params[api.min_tokens_field] = n
        if api.ignore_eos_field:
            params[api.ignore_eos_field] = True
        return {api.params_key: params} if api.params_key else params

    # -- launching --------------------------------------------------------------------------
    def launcher(self, name: str | None = None) -> Launcher:
        """The launcher called ``name`` (default: the first); ``ConfigError`` if none."""
        if not self.launchers:
            raise ConfigError(f"engine {self.name!r}: {self.not_launchable or 'nothing to launch'}")
        if name is None:
            return self.launchers[0]
        for launcher in self.launchers:
            if launcher.name == name:
                return launcher
        known = ", ".join(x.name for x in self.launchers)
        raise ConfigError(
            f"engine {self.name!r}: unknown launcher {name!r}; expected one of {known}"
        )

    def launch_argv(
        self,
        model: str | None,
        *,
        host: str,
        port: int,
        python: str,
        args: Sequence[str] = (),
        launcher: str | None = None,
        template: Sequence[str] = (),
    ) -> list[str]:
        """The command line that starts this engine serving ``model`` on ``host:port``.

        ``python`` is the interpreter for module launchers. ``args`` are appended as given; a
        flag the launcher sets itself (host, port, model) in ``args`` is a ``ConfigError``.
        For a ``command`` engine, ``template`` (``[engine] argv``) with ``{port}``, ``{host}``
        and ``{model}`` filled in comes first instead of a launcher.
        """
        if self.argv_from_config:
            return fill_template(template, model=model, host=host, port=port) + list(args)
        ln = self.launcher(launcher)
        reserved = {self.flag_syntax.canonical(f): f for f in ln.reserved_flags()}
        for flag in _flags.parse(args, self.flag_syntax).flags:
            if flag in reserved:
                raise ConfigError(
                    f"engine {self.name!r}: {flag} is set by inferlab (engine host/port/model); "
                    "remove it from args"
                )
        argv = [python if tok == PYTHON else tok for tok in ln.prefix]
        if ln.model_flag is not None:
            if model:
                argv += [ln.model_flag, model] if ln.model_flag else [model]
            elif ln.model_required:
                raise ConfigError(f"engine {self.name!r}: a model is required to launch it")
        argv += [ln.host_flag, host, ln.port_flag, str(port)]
        return argv + list(args)

    # -- flags ------------------------------------------------------------------------------

    def parse_args(self, argv: Sequence[str]) -> ParsedArgs:
        """``argv`` as canonical flag → values (see ``inferlab.engines.flags``)."""
        return _flags.parse(argv, self.flag_syntax)

    def canonical_flag(self, flag: str) -> str:
        return self.flag_syntax.canonical(flag)

    def apply(
        self,
        argv: Sequence[str],
        *,
        set: Mapping[str, FlagValue] | None = None,
        unset: Iterable[str] = (),
        missing_ok: bool = False,
    ) -> list[str]:
        """``argv`` with ``unset`` removed and ``set`` replaced or added (canonical spelling)."""
        return _flags.apply(argv, self.flag_syntax, set=set, unset=unset, missing_ok=missing_ok)

    def diff(self, a: Sequence[str], b: Sequence[str]) -> list[Change]:
        """Flag changes from argv ``a`` to argv ``b``, aliases folded, in a stable order."""
        return _flags.diff(a, b, self.flag_syntax)

    def gpus_needed(self, args: Sequence[str]) -> int:
        """GPUs one server launched with ``args`` uses: the product of its parallel flags'
        values (1 when absent), or ``default_gpus`` when none is given."""
        parsed = self.parse_args(args)
        given = [f for f in self.parallel_flags if f in parsed]
        if not given:
            return self.default_gpus
        total = 1
        for flag in given:
            if self.parallel_within.get(flag, "") in parsed:
                continue
            values = parsed.flags[flag]
            try:
                size = int(values[-1]) if values else 0
            except ValueError:
                size = 0
            if size < 1:
                raise ConfigError(
                    f"engine {self.name!r}: {flag} needs a positive integer, got {values!r}"
                )
            total *= size
        return total

    # -- metrics and logs -------------------------------------------------------------------

    def metric(self, key: str) -> MetricDef | None:
        """The metric inferlab calls ``key`` (e.g. "kv_cache_usage"), or None."""
        for m in self.metrics:
            if m.key == key:
                return m
        return None

    def classify_log(self, lines: str | Iterable[str]) -> list[LogMatch]:
        """Known lines of a server log, in order (see ``inferlab.engines.logs``)."""
        return match_signatures(lines, self.log_signatures)

    def before_stop(self, lines: list[str]) -> list[str]:
        """``lines`` up to the engine's "told to stop" line (``LogFacts.stop_requested``),
        excluded: what it logs while it obeys (SGLang: a child "crashed with exit code -15")
        is the stop, not a fault. All of them when the engine names no such line."""
        pat = self.logs.stop_requested if self.logs is not None else None
        if pat is None:
            return lines
        rx = re.compile(pat)
        return next((lines[:i] for i, ln in enumerate(lines) if rx.search(ln)), lines)


PLACEHOLDERS = ("{port}", "{host}", "{model}")


def fill_template(template: Sequence[str], *, model: str | None, host: str, port: int) -> list[str]:
    """``[engine] argv`` with ``{port}``, ``{host}`` and ``{model}`` replaced (other braces, e.g.
    JSON values, are kept as written); a ``{model}`` without a model is a ``ConfigError``."""
    if not template:
        raise ConfigError("engine.argv: kind 'command' needs the command line to start")
    out = []
    for tok in template:
        if "{model}" in tok and not model:
            raise ConfigError("engine.argv: uses {model} but engine.model is not given")
        out.append(
            tok.replace("{port}", str(port)).replace("{host}", host).replace("{model}", model or "")
        )
    return out


_REGISTRY: dict[str, EngineSpec] = {}


def register(spec: EngineSpec) -> EngineSpec:
    """Add ``spec`` (replacing one of its name); registration order is the order ``specs``
    gives, which is the order the consumers try engines in (``engines/__init__`` imports the
    modules in that order)."""
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove the engine ``name`` (a test's own engine kind); absent: nothing happens."""
    _REGISTRY.pop(name, None)


def registered() -> list[str]:
    return sorted(_REGISTRY)


def specs() -> list[EngineSpec]:
    """Every registered engine, in registration order."""
    return list(_REGISTRY.values())


def get_engine(name: str) -> EngineSpec:
    return lookup(
        _REGISTRY, name, "engine: unknown kind {name}; expected one of {known}", registered()
    )


def is_simulated(name: str | None) -> bool:
    """Whether engine ``name`` (a config's kind, a run's ``engine_name``) is simulated; a name
    no engine is registered under, or none, is not."""
    spec = _REGISTRY.get(name or "")
    return spec is not None and spec.simulated


def classify_log(lines: str | Iterable[str], engine: str | EngineSpec) -> list[LogMatch]:
    """Known lines of ``engine``'s log ``lines``: kind, severity, fatal, line, remedy."""
    spec = engine if isinstance(engine, EngineSpec) else get_engine(engine)
    return spec.classify_log(lines)
