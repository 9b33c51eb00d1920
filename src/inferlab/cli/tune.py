"""``inferlab tune fp8-gemm``: tune W8A8 block-FP8 GEMM configs and write them where the engines
read them. The GPU work is imported lazily: ``--dry-run`` and ``--from-results`` run anywhere."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from inferlab.errors import ConfigError, TuneError
from inferlab.tune.backends import (
    BackendContext,
    capability_from_name,
    summarize,
    triton_verdict,
)
from inferlab.tune.config import DEFAULT_SGLANG, DEFAULT_VLLM
from inferlab.tune.files import FileWrite, write_config_file
from inferlab.tune.report import store_run
from inferlab.tune.saved import TuneData, parse_run, read_run
from inferlab.tune.shapes import Shape, collect_shapes, parse_batch_sizes, parse_shape
from inferlab.tune.space import PlanSummary, plan_summary

from .tune_show import show

__all__ = ["TuneOutcome", "tune_app", "tune_fp8_gemm"]

tune_app = typer.Typer(
    help="Tune kernel configs for the shapes a server runs, and install them for the engine.",
    no_args_is_help=True,
)

ENGINES = ("sglang", "vllm")
DEFAULT_OUT = Path("inferlab-out/tune")


@tune_app.callback()
def _tune() -> None:
    """Tune kernel configs for the shapes a server runs, and install them for the engine."""


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


def tune_fp8_gemm(
    *,
    shape_args: Sequence[str] = (),
    log: Path | None = None,
    model_config: Path | None = None,
    tp: int | None = None,
    batch_sizes: str | None = None,
    engine: str = "sglang",
    out: Path | None = None,
    install_into: str | None = None,
    python: str | None = None,
    split_k: bool = True,
    devices: str | None = None,
    dry_run: bool = False,
    from_results: Path | None = None,
    campaign: str | None = None,
    db: Path | None = None,
    server_args: str | None = None,
    server_env: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
    planned_device: str | None = None,
    ray: str | None = None,
) -> TuneOutcome:
    """The command as a plain function: plan, tune (or load a saved run; on a Ray cluster
    with ``ray``), write, store."""
    if engine not in ENGINES:
        raise ConfigError(f"--engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if install_into is not None:
        if install_into not in ENGINES:
            raise ConfigError(f"--install-into {install_into!r}: expected one of sglang, vllm")
        engine = install_into
    elif python is not None:
        raise ConfigError("--python only applies with --install-into sglang|vllm")
    if dry_run and from_results is not None:
        raise ConfigError("--dry-run and --from-results exclude each other")
    if ray is not None and (devices is not None or from_results is not None):
        raise ConfigError("--ray: Ray gives each actor one GPU (not with --devices/--from-results)")
    device_list = _parse_devices(devices)
    env = _parse_env(server_env)
    try:
        argv = shlex.split(server_args or "")
    except ValueError as exc:
        raise ConfigError(f"--server-args: {exc}") from None

    for text in shape_args:  # the user's own values are checked before looking for a GPU
        parse_shape(text)
    ms = parse_batch_sizes(batch_sizes)

    run: TuneData | None = None
    gpu_ok, found, gpu_name, gpu_cap = False, "", None, None
    if from_results is not None:
        run = read_run(from_results)
    elif not dry_run and ray is None:  # under --ray the GPUs are the cluster's
        gpu_ok, found, gpu_name, gpu_cap = _gpu_status()
        if not gpu_ok:
            raise TuneError(
                f"tuning needs an NVIDIA GPU with torch and triton (found: {found}); "
                "use --dry-run to see the plan, or tune on the GPU machine and install the saved "
                "run here with --from-results"
            )
    local_device = run.device_name if run else gpu_name
    if (
        planned_device
        and local_device
        and planned_device.replace(" ", "_") != (local_device.replace(" ", "_"))
    ):
        raise ConfigError(
            f"--device-name {planned_device!r}: the "
            + ("saved run" if run else "GPU here")
            + f" is {local_device}; files are named for the GPU that was tuned (drop the option)"
        )
    if run is not None and not shape_args and log is None and model_config is None:
        shapes = [Shape(n, k, str(from_results)) for n, k in run.shapes()]
        log_devices: list[str] = []
        warnings: list[str] = []
        ms = sorted({c.m for c in run.cells}) if batch_sizes is None else ms
    else:
        shapes, log_devices, warnings = collect_shapes(
            shape_args,
            log=log,
            model_config=model_config,
            tp=tp,
            local_device=local_device or planned_device,
        )
    if not shapes:
        raise ConfigError(f"--from-log: {log} has no untuned W8A8 block-FP8 GEMM shapes to tune")
    if run is not None:
        want = {(s.n, s.k) for s in shapes}
        have = set(run.shapes())
        missing = sorted(want - have)
        if missing:
            names = ", ".join(f"N={n},K={k}" for n, k in missing)
            raise ConfigError(f"--from-results {from_results}: no results for {names}")
        lacking = sorted(set(ms) - {c.m for c in run.cells})
        if lacking:
            raise ConfigError(
                f"--from-results {from_results}: no results for M = "
                f"{', '.join(map(str, lacking))} (--batch-sizes)"
            )
        run = TuneData(
            run.device_name,
            run.devices,
            run.ceilings,
            [c for c in run.cells if (c.n, c.k) in want and c.m in set(ms)],
            run.wall_s,
            run.compile_s,
            run.raw,
        )

    device_name = (
        local_device
        or planned_device
        or (log_devices[0].replace("_", " ") if log_devices else None)
    )
    cap = gpu_cap or (capability_from_name(device_name) if device_name else None)
    warnings += summarize(
        [triton_verdict(engine, BackendContext(s.n, s.k, cap, argv, env)) for s in shapes]
    )

    if install_into is not None:
        from inferlab.recon import engine_config_dirs

        dirs = engine_config_dirs(install_into, python or sys.executable)
        target = dirs.get("fp8_gemm")
        if target is None:
            raise ConfigError(f"--install-into {install_into}: no fp8_gemm config directory known")
    else:
        target = out or DEFAULT_OUT
    plan = plan_summary([(s.n, s.k) for s in shapes], ms, split_k)
    outcome = TuneOutcome(shapes, ms, plan, engine, device_name, Path(target), run)
    outcome.warnings = warnings
    if dry_run:
        return outcome

    if run is None:
        run, outcome.run_path = _search(
            shapes, ms, engine, split_k, device_list, out, progress, ray
        )
        outcome.run, outcome.device_name = run, run.device_name

    for (n, k), configs in run.engine_configs().items():
        outcome.files.append(
            write_config_file(Path(target), engine, n, k, run.device_name, configs)
        )
    if campaign is not None:
        from inferlab.store import Store, db_path

        with Store(db_path(db)) as store:
            outcome.stored = store_run(
                store,
                run,
                campaign=campaign,
                engine=engine,
                files=[f.to_json() for f in outcome.files],
                warnings=warnings,
            )
    return outcome


def _search(
    shapes: list[Shape],
    ms: list[int],
    engine: str,
    split_k: bool,
    devices: list[int] | None,
    out: Path | None,
    progress: Callable[[str], None] | None,
    ray: str | None,
) -> tuple[TuneData, Path]:
    """Tune here (or on the Ray cluster at ``ray``) and save the run; returns it and its file."""
    default = DEFAULT_SGLANG if engine == "sglang" else DEFAULT_VLLM
    pairs = [(s.n, s.k) for s in shapes]
    if ray is not None:
        from inferlab.cluster.tune import tune_shapes_ray

        raw = tune_shapes_ray(
            pairs, ms, address=ray, split_k=split_k, default=default, progress=progress
        )
    else:
        from inferlab.tune.runner import tune_shapes

        raw = tune_shapes(
            pairs, ms, split_k=split_k, devices=devices, default=default, progress=progress
        )
    doc = raw.to_json()
    run_dir = out or DEFAULT_OUT
    run_dir.mkdir(parents=True, exist_ok=True)
    run_path = run_dir / f"tune-run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    run_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return parse_run(doc, str(run_path)), run_path


@tune_app.command("fp8-gemm")
def fp8_gemm(
    shape: Annotated[
        list[str] | None,
        typer.Option("--shape", help="Weight shape N,K (repeatable), e.g. 7168,2048"),
    ] = None,
    from_log: Annotated[
        Path | None, typer.Option("--from-log", help="Server log: tune the shapes it ran untuned")
    ] = None,
    model_config: Annotated[
        Path | None, typer.Option("--model-config", help="DeepSeek-V3-style config.json")
    ] = None,
    tp: Annotated[int | None, typer.Option("--tp", help="Tensor-parallel size (model config)")] = (
        None
    ),
    batch_sizes: Annotated[
        str | None, typer.Option("--batch-sizes", help="M values, e.g. 1,16,64 (default: 18)")
    ] = None,
    engine: Annotated[str, typer.Option("--engine", help="File naming: sglang | vllm")] = "sglang",
    out: Annotated[
        Path | None,
        typer.Option("--out", help=f"Directory for files and the run (default {DEFAULT_OUT})"),
    ] = None,
    install_into: Annotated[
        str | None,
        typer.Option("--install-into", help="Write into the installed engine's config dir"),
    ] = None,
    python: Annotated[
        str | None, typer.Option("--python", help="Interpreter the engine is installed in")
    ] = None,
    no_split_k: Annotated[
        bool, typer.Option("--no-split-k", help="Do not time split-K candidates")
    ] = False,
    devices: Annotated[str | None, typer.Option("--devices", help="GPU indices, e.g. 0,1")] = None,
    ray: Annotated[
        str | None,
        typer.Option("--ray", metavar="ADDRESS", help="Tune on every GPU of a Ray cluster"),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan; run nothing")] = False,
    from_results: Annotated[
        Path | None,
        typer.Option("--from-results", help="A saved run (tune-run-*.json): write/store only"),
    ] = None,
    campaign: Annotated[
        str | None, typer.Option("--campaign", help="Store the results in this campaign")
    ] = None,
    db: Annotated[
        Path | None, typer.Option("--db", help="Database (default $INFERLAB_DB or ./inferlab.db)")
    ] = None,
    server_args: Annotated[
        str | None,
        typer.Option("--server-args", help="The server's flags, to check it would run Triton"),
    ] = None,
    server_env: Annotated[
        list[str] | None,
        typer.Option("--server-env", help="KEY=VALUE of the server's environment (repeatable)"),
    ] = None,
    device_name: Annotated[
        str | None,
        typer.Option(
            "--device-name",
            help="GPU the plan is for when none is here, e.g. 'NVIDIA H200' (names, warnings)",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary on stdout")] = False,
) -> None:
    """Tune the Triton W8A8 block-FP8 GEMM (DeepSeek-style 1×128 / 128×128 scales) for the given
    shapes and write SGLang's or vLLM's config files, merged into existing ones."""
    o = tune_fp8_gemm(
        shape_args=shape or [],
        log=from_log,
        model_config=model_config,
        tp=tp,
        batch_sizes=batch_sizes,
        engine=engine,
        out=out,
        install_into=install_into,
        python=python,
        split_k=not no_split_k,
        devices=devices,
        ray=ray,
        dry_run=dry_run,
        from_results=from_results,
        campaign=campaign,
        db=db,
        server_args=server_args,
        server_env=server_env or [],
        planned_device=device_name,
        progress=lambda msg: Console(stderr=True).print(escape(msg), style="dim", highlight=False),
    )
    show(o, from_results, not no_split_k, campaign, as_json)
