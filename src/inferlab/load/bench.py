"""One load sweep against a running endpoint: preflight, prompts, load points, summaries.

``run_bench`` is the typed library call behind ``inferlab bench``. It never prints: progress
goes to a ``BenchEvents`` object and results to the returned ``BenchResult`` and, when asked,
to a JSONL file written after every load point (so an interruption loses nothing finished).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from inferlab import METRICS_VERSION, __version__
from inferlab.config.bench import BenchConfig
from inferlab.cpus import pinned
from inferlab.engines import EngineSpec
from inferlab.errors import ConfigError, ConnectError, ServerRejected, TokenizerError
from inferlab.load.adaptive import BaselineRef
from inferlab.load.detect import engine_for, rejection
from inferlab.load.http import Endpoint, HttpClient, run_loop
from inferlab.load.point import Sweep, auto_workers, run_point
from inferlab.load.quality import LAG_WARN_MS
from inferlab.load.replay import read_traces
from inferlab.load.results import (
    BenchEvents,
    BenchResult,
    LoadPoint,
    PointResult,
    ResultSink,
)
from inferlab.load.tokens import LocalTokenizer, ServerTokenizer
from inferlab.load.workload import workload_descriptor
from inferlab.stats.turns import by_turn

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "LAG_WARN_MS",
    "BenchEvents",
    "BenchResult",
    "LoadPoint",
    "PointResult",
    "ResultSink",
    "auto_workers",
    "plan_points",
    "replay_json",
    "run_bench",
    "workload_descriptor",
]

FORMAT = "inferlab.bench/2"


def plan_points(cfg: BenchConfig) -> list[LoadPoint]:
    """One point per pattern, in ``LoadSpec.patterns`` order."""
    return [LoadPoint.of(p) for p in cfg.patterns()]


# ---------------------------------------------------------------------------------------
# preflight


def _headers(cfg: BenchConfig) -> dict[str, str]:
    if not cfg.api_key_env:
        return {}
    key = os.environ.get(cfg.api_key_env)
    if not key:
        raise ConfigError(f"--api-key-env: environment variable {cfg.api_key_env} is not set")
    return {"Authorization": f"Bearer {key}"}


def _context(body: bytes, model: str) -> int | None:
    """The model's context (tokens) as ``/v1/models`` lists it (vLLM's ``max_model_len``,
    the reference engine's); None when it does not say."""
    try:
        data = json.loads(body)["data"]
        for m in data:
            if m.get("id") == model and isinstance(m.get("max_model_len"), int):
                return int(m["max_model_len"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return None


def _preflight(
    cfg: BenchConfig, ep: Endpoint, engine: EngineSpec, headers: dict[str, str]
) -> tuple[str, str | None, int | None]:
    """Reach the server within 5 s; return the model (given, or the first listed), the
    engine version it reports and the model's context (None when it does not say)."""

    async def go() -> tuple[int, bytes, str | None, bytes]:
        client = HttpClient(
            ep, timeout_s=10, stall_timeout_s=5, connect_timeout_s=5, headers=headers
        )
        try:
            ex = await client.request(client.build("GET", engine.models_path))
            vbody = b""
            if ex.error_kind is None and engine.version_path:
                vex = await client.request(client.build("GET", engine.version_path))
                if vex.error_kind is None and vex.status == 200:
                    vbody = vex.body()
        finally:
            client.close()
        err = ex.error_message if ex.error_kind is not None else None
        return ex.status, ex.body(), err, vbody

    status, body, err, vbody = run_loop(go())
    if err is not None and status == 0:
        raise ConnectError(f"cannot reach {ep.base}: {err}")
    if status in (401, 403):
        hint = "" if cfg.api_key_env else " (pass --api-key-env VAR)"
        raise ServerRejected(f"{ep.base}{engine.models_path}: HTTP {status}{hint}")
    version: str | None = None
    try:
        v = json.loads(vbody).get("version") if vbody else None
        version = str(v) if v is not None else None
    except (ValueError, AttributeError):
        version = None
    if cfg.model:
        return cfg.model, version, _context(body, cfg.model)
    try:
        data = json.loads(body)["data"]
        return str(data[0]["id"]), version, _context(body, str(data[0]["id"]))
    except (ValueError, KeyError, IndexError, TypeError):
        raise ConfigError(
            f"--model not given and {ep.base}{engine.models_path} did not list a model "
            f"(HTTP {status}); pass --model"
        ) from None


def _tokenizer(
    cfg: BenchConfig, ep: Endpoint, engine: EngineSpec, headers: dict[str, str]
) -> LocalTokenizer | ServerTokenizer | None:
    if cfg.tokenizer is not None:
        return LocalTokenizer(cfg.tokenizer)
    if engine.tokenize_path is None:
        return None
    tok = ServerTokenizer(ep, engine.tokenize_path, headers)
    try:
        tok.count_many(["hello world"])
    except TokenizerError:
        return None
    return tok


# ---------------------------------------------------------------------------------------
# output


class JsonlSink:
    """Versioned JSONL: one ``meta`` line, then per load point its ``request`` lines and one
    ``point`` line, flushed to disk as each point ends. Format history: 1 = first version;
    2 = a point carries ``trust``, ``trust_reasons`` and ``stop``, a request ``dropped``."""

    def __init__(self, path: Path) -> None:
        try:
            self._f: IO[str] = path.open("w", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--out: cannot write {path}: {exc}") from None
        self.path = path

    def _write(self, obj: dict[str, JsonValue]) -> None:
        self._f.write(json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")

    def _flush(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())

    def start(self, meta: dict[str, Any]) -> None:
        self._write(meta)
        self._flush()

    def begin(self, point: LoadPoint, trial: int) -> None:
        pass

    def point(self, res: PointResult) -> None:
        for rec in res.records:
            self._write(
                {"type": "request", "point": res.point.label, "trial": res.trial, **rec.to_json()}
            )
        self._write(point_json(res))
        self._flush()

    def close(self) -> None:
        self._f.close()


def _meta(cfg: BenchConfig, run_id: str, model: str, version: str | None) -> dict[str, JsonValue]:
    return {
        "type": "meta",
        "format": FORMAT,
        "run_id": run_id,
        "inferlab_version": __version__,
        "metrics_version": METRICS_VERSION,
        "model": model,
        "engine": cfg.engine,
        "engine_version": version,
        "workload": workload_descriptor(cfg),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": os.uname().nodename,
        "config": json.loads(cfg.model_dump_json()),  # holds the key's variable name, not its value
    }


def replay_json(res: PointResult) -> dict[str, JsonValue]:
    """The pattern of a point whose label does not say all of it (a replay's: ``stored_whole``)
    and its requests refused for the context ({} for the others)."""
    p = res.point.pattern
    if not p.stored_whole:
        return {}
    return {"pattern": p.to_json(), "refused_over_context": res.refused}


def point_json(res: PointResult) -> dict[str, JsonValue]:
    p = res.point
    return {
        "type": "point",
        "label": p.label,
        "trial": res.trial,
        "started_at": res.started_at,
        "ended_at": res.ended_at,
        **p.pattern.columns(),
        "workers": res.workers,
        "interrupted": res.interrupted,
        "rejected": res.rejected,
        "loop_lag_ms": res.loop_lag_ms.to_json(),
        "summary": res.summary.to_json(),
        "warnings": [w.to_json() for w in res.warnings],
        "trust": res.trust.state,
        "trust_reasons": res.trust.to_json(),
        "stop": res.stop.to_json() if res.stop is not None else None,
        **({"clients": res.clients} if res.clients else {}),
        **replay_json(res),
        **({"turns": [t.to_json() for t in turns]} if (turns := by_turn(res.records)) else {}),
    }


# ---------------------------------------------------------------------------------------
# the sweep


def _check_tokenizer(cfg: BenchConfig, ep: Endpoint, tokenizer: object) -> None:
    if tokenizer is None and cfg.workload.of.exact:
        raise TokenizerError(
            f"{cfg.workload.kind} prompts of exact length need a tokenizer: {ep.base} has no "
            "working "
            "/tokenize; pass --tokenizer DIR (a Hugging Face tokenizer directory)"
        )


def run_bench(
    cfg: BenchConfig,
    events: BenchEvents | None = None,
    out: Path | None = None,
    sinks: Sequence[ResultSink] = (),
    cells: set[tuple[str, int]] | None = None,
    baselines: Mapping[str, BaselineRef] | None = None,
) -> BenchResult:
    """Measure every load point × trial of ``cfg``; each finished point goes to every sink at
    once; with ``cells``, only those (label, trial) cells are measured; with ``baselines``
    (label → a stored baseline point), adaptive points stop by a sequential A/B against it.
    The measuring processes run on ``cfg.client_cpus`` when given. Raises ``ConnectError``/
    ``ServerRejected``/``ConfigError`` for what the user must fix (after handing what was
    measured to the sinks)."""
    events = events or BenchEvents()
    traces = read_traces(cfg)  # the whole of every trace parses before anything is sent
    ep = Endpoint.parse(cfg.url)
    headers = _headers(cfg)
    engine = engine_for(cfg.engine, ep.base, headers, events.message)
    cfg = cfg.model_copy(update={"engine": engine.name})  # given or detected, from here on
    path = "/v1/chat/completions" if cfg.endpoint == "chat" else "/v1/completions"
    events.message(f"checking {ep.base} ...")
    model, version, context = _preflight(cfg, ep, engine, headers)
    tokenizer = _tokenizer(cfg, ep, engine, headers)
    _check_tokenizer(cfg, ep, tokenizer)
    run_id = uuid.uuid4().hex[:12]
    all_sinks: list[ResultSink] = ([JsonlSink(out)] if out is not None else []) + list(sinks)
    result = BenchResult(
        run_id=run_id,
        model=model,
        url=ep.base,
        points=[],
        engine_version=version,
        engine=engine.name,
    )
    fmt = HttpClient(ep, headers={})  # builds request bytes only; never connects
    sw = Sweep(
        cfg,
        ep,
        engine,
        headers,
        path,
        model,
        tokenizer,
        fmt,
        run_id,
        events,
        dict(baselines or {}),
        traces,
        context,
    )
    try:
        for sink in all_sinks:
            sink.start(_meta(cfg, run_id, model, version))
        for pi, point in enumerate(plan_points(cfg)):
            for trial in range(cfg.trials):
                if cells is not None and (point.label, trial) not in cells:
                    continue  # already measured (a resumed campaign)
                for sink in all_sinks:
                    sink.begin(point, trial)
                with pinned(cfg.client_cpus):
                    res = run_point(sw, pi, point, trial)
                result.points.append(res)
                for sink in all_sinks:
                    sink.point(res)
                events.point_finished(res)
                if res.rejected:
                    raise ServerRejected(
                        rejection(f"{ep.base}{path}", point.label, res.rejected, engine)
                    )
                if res.interrupted:
                    result.interrupted = True
                    return result
    finally:
        for sink in all_sinks:
            sink.close()
    return result
