"""``inferlab tune fp8-gemm`` as a library call: check the request, collect the shapes, plan,
tune here (or through the given Ray search) or load a saved run, write the engine's config
files, store the results. The GPU work is imported lazily: a dry run and ``from_results`` run
anywhere."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from inferlab.engines.base import release_key
from inferlab.errors import ConfigError, TuneError
from inferlab.tune.backends import BackendContext, capability_from_name, summarize, triton_verdict
from inferlab.tune.config import KernelConfig, engine_default, tune_engines
from inferlab.tune.files import FileWrite, write_config_file
from inferlab.tune.report import store_run
from inferlab.tune.results import TuneRun
from inferlab.tune.saved import TuneData, parse_run, read_run
from inferlab.tune.shapes import Shape, collect_shapes, parse_batch_sizes, parse_shape
from inferlab.tune.space import PlanSummary, plan_summary

__all__ = ["DEFAULT_OUT", "Fp8GemmRequest", "RayTune", "TuneOutcome", "tune_fp8_gemm"]

DEFAULT_OUT = Path("inferlab-out/tune")


class RayTune(Protocol):
    """The search on a Ray cluster (``inferlab.cluster.tune.tune_shapes_ray``), given by the
    caller: the cluster layer sits above this one."""

    def __call__(
        self,
        shapes: Sequence[tuple[int, int]],
        batch_sizes: Sequence[int],
        *,
        address: str,
        split_k: bool = ...,
        default: KernelConfig = ...,
        progress: Callable[[str], None] | None = ...,
    ) -> TuneRun: ...


@dataclass(frozen=True)
class Fp8GemmRequest:
    """The options of one ``tune fp8-gemm`` invocation, as given (checked by
    :func:`tune_fp8_gemm`)."""

    shape_args: Sequence[str] = ()
    log: Path | None = None
    model_config: Path | None = None
    tp: int | None = None
    batch_sizes: str | None = None  # "1,16,64"; None: the default list
    engine: str = "sglang"
    out: Path | None = None
    install_into: str | None = None
    python: str | None = None
    split_k: bool = True
    devices: str | None = None  # "0,1"; None: every visible GPU
    dry_run: bool = False
    from_results: Path | None = None
    campaign: str | None = None
    db: Path | None = None
    server_args: str | None = None
    server_env: Sequence[str] = ()
    planned_device: str | None = None
    ray: str | None = None  # a Ray cluster address


@dataclass
class TuneOutcome:
    """What one invocation did: the plan, the run (None for a dry run), files, warnings."""

    shapes: list[Shape]
    batch_sizes: list[int]
    plan: PlanSummary
    engine: str
    device_name: str | None
    target_dir: Path
    run: TuneData | None = None
    run_path: Path | None = None
    files: list[FileWrite] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stored: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        ceil = self.run.ceilings if self.run else {}
        return {
            "engine": self.engine,
            "device_name": self.device_name,
            "shapes": [{"n": s.n, "k": s.k, "source": s.source} for s in self.shapes],
            "batch_sizes": self.batch_sizes,
            "plan": self.plan.to_json(),
            "target_dir": str(self.target_dir),
            "run_path": str(self.run_path) if self.run_path else None,
            "ceilings": ceil,
            "wall_s": self.run.wall_s if self.run else None,
            "compile_s": self.run.compile_s if self.run else None,
            "cells": [c.to_json(ceil) for c in self.run.cells] if self.run else [],
            "files": [f.to_json() for f in self.files],
            "warnings": self.warnings,
            "stored_analyses": self.stored,
        }


def _gpu_status() -> tuple[bool, str, str | None, tuple[int, int] | None]:
    """(usable, what was found, device name, capability) without failing on a CPU machine."""
    found: list[str] = []
    try:
        import torch
    except ImportError:
        return False, "torch not installed", None, None
    found.append(f"torch {torch.__version__}")
    try:
        import triton
    except ImportError:
        return False, ", ".join([*found, "triton not installed"]), None, None
    found.append(f"triton {triton.__version__}")
    if not torch.cuda.is_available() or torch.version.cuda is None:
        return False, ", ".join([*found, "no CUDA GPU visible"]), None, None
    name = str(torch.cuda.get_device_name(0))
    cap = tuple(torch.cuda.get_device_capability(0))
    found.append(name)
    return True, ", ".join(found), name, (int(cap[0]), int(cap[1]))


def _parse_devices(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--devices {text!r}: expected GPU indices like 0,1") from None
    if not out or any(d < 0 for d in out):
        raise ConfigError(f"--devices {text!r}: expected GPU indices like 0,1")
    return out


def _parse_env(items: Sequence[str]) -> dict[str, str]:
    """The engines' variables from this shell (``SGLANG_*``, ``VLLM_*``), then ``--server-env``."""
    env = {k: v for k, v in os.environ.items() if k.startswith(("SGLANG_", "VLLM_"))}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--server-env {item!r}: expected KEY=VALUE")
        env[key] = value
    return env


@dataclass
class _Checked:
    """A request's options after the checks that need no GPU."""

    engine: str
    devices: list[int] | None
    argv: list[str]
    env: dict[str, str]
    ms: list[int]


def _check(req: Fp8GemmRequest) -> _Checked:
    """The option checks that need no GPU, the user's own values first."""
    engine, known = req.engine, list(tune_engines())
    if engine not in known:
        raise ConfigError(f"--engine {engine!r}: expected one of {', '.join(known)}")
    if req.install_into is not None:
        if req.install_into not in known:
            raise ConfigError(
                f"--install-into {req.install_into!r}: expected one of {', '.join(known)}"
            )
        engine = req.install_into
    elif req.python is not None:
        raise ConfigError(f"--python only applies with --install-into {'|'.join(known)}")
    if req.dry_run and req.from_results is not None:
        raise ConfigError("--dry-run and --from-results exclude each other")
    if req.ray is not None and (req.devices is not None or req.from_results is not None):
        raise ConfigError("--ray: Ray gives each actor one GPU (not with --devices/--from-results)")
    devices = _parse_devices(req.devices)
    env = _parse_env(req.server_env)
    try:
        argv = shlex.split(req.server_args or "")
    except ValueError as exc:
        raise ConfigError(f"--server-args: {exc}") from None
    for text in req.shape_args:  # the user's own values are checked before looking for a GPU
        parse_shape(text)
    return _Checked(engine, devices, argv, env, parse_batch_sizes(req.batch_sizes))


def _local(req: Fp8GemmRequest) -> tuple[TuneData | None, str | None, tuple[int, int] | None]:
    """(the saved run, the device it or this machine's GPU is, that GPU's capability)."""
    run: TuneData | None = None
    gpu_name, gpu_cap = None, None
    if req.from_results is not None:
        run = read_run(req.from_results)
    elif not req.dry_run and req.ray is None:  # under --ray the GPUs are the cluster's
        gpu_ok, found, gpu_name, gpu_cap = _gpu_status()
        if not gpu_ok:
            raise TuneError(
                f"tuning needs an NVIDIA GPU with torch and triton (found: {found}); "
                "use --dry-run to see the plan, or tune on the GPU machine and install the saved "
                "run here with --from-results"
            )
    local = run.device_name if run else gpu_name
    planned = req.planned_device
    if planned and local and planned.replace(" ", "_") != local.replace(" ", "_"):
        raise ConfigError(
            f"--device-name {planned!r}: the "
            + ("saved run" if run else "GPU here")
            + f" is {local}; files are named for the GPU that was tuned (drop the option)"
        )
    return run, local, gpu_cap


def _shapes(
    req: Fp8GemmRequest, run: TuneData | None, local: str | None, ms: list[int]
) -> tuple[list[Shape], list[str], list[str], list[int]]:
    """(shapes, device names the log shows, warnings, batch sizes): from the options, or all
    of a saved run's when none is given."""
    if run is not None and not req.shape_args and req.log is None and req.model_config is None:
        shapes = [Shape(n, k, str(req.from_results)) for n, k in run.shapes()]
        ms = sorted({c.m for c in run.cells}) if req.batch_sizes is None else ms
        return shapes, [], [], ms
    shapes, log_devices, warnings = collect_shapes(
        req.shape_args,
        log=req.log,
        model_config=req.model_config,
        tp=req.tp,
        local_device=local or req.planned_device,
    )
    return shapes, log_devices, warnings, ms


def _select(run: TuneData, shapes: list[Shape], ms: list[int], source: Path | None) -> TuneData:
    """The saved run's cells for exactly these shapes and batch sizes; ConfigError naming
    what it lacks."""
    want = {(s.n, s.k) for s in shapes}
    missing = sorted(want - set(run.shapes()))
    if missing:
        names = ", ".join(f"N={n},K={k}" for n, k in missing)
        raise ConfigError(f"--from-results {source}: no results for {names}")
    lacking = sorted(set(ms) - {c.m for c in run.cells})
    if lacking:
        raise ConfigError(
            f"--from-results {source}: no results for M = "
            f"{', '.join(map(str, lacking))} (--batch-sizes)"
        )
    return replace(run, cells=[c for c in run.cells if (c.n, c.k) in want and c.m in set(ms)])


def _log_release(req: Fp8GemmRequest, engine: str) -> tuple[str | None, str]:
    """(a release of ``engine``, how it was found) from the directory the log's not-found
    lines name, where the engine's FP8 config directory moved between releases; else
    (None, "")."""
    if req.log is None:
        return None, ""
    from inferlab.engines import get_engine
    from inferlab.logs import untuned_fp8_gemms

    dirs = [d for d in get_engine(engine).config_dirs if d.kind == "fp8_gemm" and d.by_version]
    for g in untuned_fp8_gemms(req.log):
        for d in dirs:
            row = d.row_of(g.dir) if g.dir else None
            if row is not None:
                version = row.since if release_key(row.since) > (0,) else row.upto
                return version, f"{row.releases} (the log's config directory)"
    return None, ""


def _target(req: Fp8GemmRequest) -> Path:
    """Where the config files go: the installed engine's directory, or ``out``."""
    if req.install_into is None:
        return Path(req.out or DEFAULT_OUT)
    from inferlab.recon import engine_config_dirs

    dirs = engine_config_dirs(req.install_into, req.python or sys.executable)
    target = dirs.get("fp8_gemm")
    if target is None:
        raise ConfigError(f"--install-into {req.install_into}: no fp8_gemm config directory known")
    return Path(target)


def tune_fp8_gemm(
    req: Fp8GemmRequest,
    *,
    progress: Callable[[str], None] | None = None,
    ray_tune: RayTune | None = None,
) -> TuneOutcome:
    """Plan, tune (or load a saved run; on a Ray cluster through ``ray_tune`` with
    ``req.ray``), write the files, store the results."""
    c = _check(req)
    run, local, gpu_cap = _local(req)
    shapes, log_devices, warnings, ms = _shapes(req, run, local, c.ms)
    if not shapes:
        raise ConfigError(
            f"--from-log: {req.log} has no untuned W8A8 block-FP8 GEMM shapes to tune"
        )
    if run is not None:
        run = _select(run, shapes, ms, req.from_results)
    device_name = (
        local or req.planned_device or (log_devices[0].replace("_", " ") if log_devices else None)
    )
    cap = gpu_cap or (capability_from_name(device_name) if device_name else None)
    version, note = _log_release(req, c.engine)
    warnings += summarize(
        [
            triton_verdict(c.engine, BackendContext(s.n, s.k, cap, c.argv, c.env, version, note))
            for s in shapes
        ]
    )
    target = _target(req)
    plan = plan_summary([(s.n, s.k) for s in shapes], ms, req.split_k)
    outcome = TuneOutcome(shapes, ms, plan, c.engine, device_name, target, run)
    outcome.warnings = warnings
    if req.dry_run:
        return outcome
    if run is None:
        run, outcome.run_path = _search(req, shapes, ms, c, progress, ray_tune)
        outcome.run, outcome.device_name = run, run.device_name
    for (n, k), configs in run.engine_configs().items():
        outcome.files.append(write_config_file(target, c.engine, n, k, run.device_name, configs))
    if req.campaign is not None:
        from inferlab.store import Store, db_path

        with Store(db_path(req.db)) as store:
            outcome.stored = store_run(
                store,
                run,
                campaign=req.campaign,
                engine=c.engine,
                files=[f.to_json() for f in outcome.files],
                warnings=warnings,
            )
    return outcome


def _search(
    req: Fp8GemmRequest,
    shapes: list[Shape],
    ms: list[int],
    c: _Checked,
    progress: Callable[[str], None] | None,
    ray_tune: RayTune | None,
) -> tuple[TuneData, Path]:
    """Tune here (or on the Ray cluster at ``req.ray``) and save the run; returns it and its
    file."""
    default = engine_default(c.engine)
    pairs = [(s.n, s.k) for s in shapes]
    if req.ray is not None:
        if ray_tune is None:
            raise TuneError("--ray: this caller gave no Ray search to run")
        raw = ray_tune(
            pairs, ms, address=req.ray, split_k=req.split_k, default=default, progress=progress
        )
    else:
        from inferlab.tune.runner import tune_shapes

        raw = tune_shapes(
            pairs, ms, split_k=req.split_k, devices=c.devices, default=default, progress=progress
        )
    doc = raw.to_json()
    run_dir = req.out or DEFAULT_OUT
    run_dir.mkdir(parents=True, exist_ok=True)
    run_path = run_dir / f"tune-run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    run_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return parse_run(doc, str(run_path)), run_path
