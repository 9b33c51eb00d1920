"""``inferlab tune fp8-gemm``: tune W8A8 block-FP8 GEMM configs and write them where the engines
read them (the work is :func:`inferlab.tune.workflow.tune_fp8_gemm`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from inferlab.tune.config import tune_engines
from inferlab.tune.workflow import (
    Fp8GemmRequest,
    RayTune,
    TuneOutcome,
    tune_fp8_gemm,
)

from .options import (
    CampaignScopeOpt,
    DbOpt,
    DryRunOpt,
    JsonAlias,
    OutDirAlias,
    OutDirOpt,
    RayOpt,
    TableJsonFormatOpt,
    output_format,
    pick,
)
from .render import command
from .tune_show import show

__all__ = ["TuneOutcome", "tune_app", "tune_fp8_gemm"]

tune_app = typer.Typer(
    help="Tune kernel configs for the shapes a server runs, and install them for the engine.",
    no_args_is_help=True,
)


@tune_app.callback()
def _tune() -> None:
    """Tune kernel configs for the shapes a server runs, and install them for the engine."""


_Shape = Annotated[
    list[str] | None, typer.Option("--shape", help="Weight shape N,K (repeatable), e.g. 7168,2048")
]
_FromLog = Annotated[
    Path | None, typer.Option("--from-log", help="Server log: tune the shapes it ran untuned")
]
_ModelConfig = Annotated[
    Path | None, typer.Option("--model-config", help="DeepSeek-V3-style config.json")
]
_Tp = Annotated[int | None, typer.Option("--tp", help="Tensor-parallel size (model config)")]
_BatchSizes = Annotated[
    str | None, typer.Option("--batch-sizes", help="M values, e.g. 1,16,64 (default: 18)")
]
_Engine = Annotated[
    str, typer.Option("--engine", help="File naming: " + " | ".join(tune_engines()))
]
_InstallInto = Annotated[
    str | None, typer.Option("--install-into", help="Write into the installed engine's config dir")
]
_Python = Annotated[
    str | None, typer.Option("--python", help="Interpreter the engine is installed in")
]
_NoSplitK = Annotated[bool, typer.Option("--no-split-k", help="Do not time split-K candidates")]
_Devices = Annotated[str | None, typer.Option("--devices", help="GPU indices, e.g. 0,1")]
_FromResults = Annotated[
    Path | None,
    typer.Option("--from-results", help="A saved run (tune-run-*.json): write/store only"),
]
_ServerArgs = Annotated[
    str | None,
    typer.Option("--server-args", help="The server's flags, to check it would run Triton"),
]
_ServerEnv = Annotated[
    list[str] | None,
    typer.Option("--server-env", help="KEY=VALUE of the server's environment (repeatable)"),
]
_DeviceName = Annotated[
    str | None,
    typer.Option(
        "--device-name",
        help="GPU the plan is for when none is here, e.g. 'NVIDIA H200' (names, warnings)",
    ),
]


@command(tune_app, "fp8-gemm")
def fp8_gemm(
    shape: _Shape = None,
    from_log: _FromLog = None,
    model_config: _ModelConfig = None,
    tp: _Tp = None,
    batch_sizes: _BatchSizes = None,
    engine: _Engine = "sglang",
    out_dir: OutDirOpt = None,
    out_alias: OutDirAlias = None,
    install_into: _InstallInto = None,
    python: _Python = None,
    no_split_k: _NoSplitK = False,
    devices: _Devices = None,
    ray: RayOpt = None,
    dry_run: DryRunOpt = False,
    from_results: _FromResults = None,
    campaign: CampaignScopeOpt = None,
    db: DbOpt = None,
    server_args: _ServerArgs = None,
    server_env: _ServerEnv = None,
    device_name: _DeviceName = None,
    format_: TableJsonFormatOpt = "table",
    json_alias: JsonAlias = False,
) -> None:
    """Tune the Triton W8A8 block-FP8 GEMM and write the engine's config files.

    DeepSeek-style 1×128 / 128×128 scales; SGLang's or vLLM's files, merged into existing ones;
    the files and the run into --out-dir (default inferlab-out/tune); --campaign stores the
    results.
    """
    out = pick(out_dir, out_alias, "--out", "--out-dir")
    as_json = output_format(format_, json_alias) == "json"
    req = Fp8GemmRequest(
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
    )
    show(_run(req), from_results, not no_split_k, campaign, as_json)


def _run(req: Fp8GemmRequest) -> TuneOutcome:
    """The tuning run (on the Ray cluster at ``req.ray``, if any), its progress on stderr."""
    ray_tune: RayTune | None = None
    if req.ray is not None:
        from inferlab.cluster.tune import tune_shapes_ray

        ray_tune = tune_shapes_ray
    err = Console(stderr=True)
    return tune_fp8_gemm(
        req,
        progress=lambda msg: err.print(escape(msg), style="dim", highlight=False),
        ray_tune=ray_tune,
    )
