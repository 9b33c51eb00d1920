"""``tune = { fp8_gemm = "from-log" }``: a config's kernel-config files made before it launches.

``from-log`` runs ``inferlab tune fp8-gemm --from-log <the baseline's launch log>`` on this
host's GPUs (a subprocess, so the GPU is free again when it ends); a path instead names a saved
tune run (``tune-run-*.json``) whose configs are all written (``--from-results``, no GPU
needed; the lever evidence then says whether they cover the shapes the engine runs). The files
land in
``<output>/tuned/<config>-<kind>/files/`` (the config that asked; configs extending it reuse
them) and become that config's ``files``. Without a GPU, ``from-log`` fails with the tuner's
own message and the way out: a saved run.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.errors import ConfigError, TuneError
from inferlab.store import Store

__all__ = ["baseline_log", "tuned_config"]

SAVED_RUN_HINT = (
    "tune on a GPU host (inferlab tune fp8-gemm --from-log BASELINE.log writes "
    'tune-run-*.json) and give the saved run: tune = { fp8_gemm = "path/to/tune-run.json" }'
)


def baseline_log(store: Store, campaign: str, baseline: str) -> Path | None:
    """The newest launch log of the baseline config in the store that still exists."""
    for launch in reversed(store.verifications.launches(campaign, config=baseline)):
        p = launch.detail.log_path
        if p and Path(p).is_file():
            return Path(p)
    return None


def _tuner_engine(cfg: ResolvedConfig, kind: str) -> str:
    for d in get_engine(cfg.engine).config_dirs:
        if d.kind == kind and d.tuner_engine:
            return d.tuner_engine
    raise ConfigError(
        f"config {cfg.name!r}: tune.{kind}: inferlab's tuner writes no {kind} files for "
        f"engine {cfg.engine!r}"
    )


def _run_tuner(argv: list[str], cfg: ResolvedConfig, kind: str, how: str) -> dict[str, Any]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        msg = next((ln for ln in reversed(lines) if "error" in ln.lower()), None)
        msg = (msg or (lines[-1] if lines else f"exit {proc.returncode}")).strip()
        msg = msg.removeprefix("error:").strip()
        hint = f"; {SAVED_RUN_HINT}" if how == "from-log" else ""
        raise TuneError(f"config {cfg.name!r}: tune.{kind} = {how!r}: {msg}{hint}")
    try:
        out: dict[str, Any] = json.loads(proc.stdout)
    except ValueError:
        raise TuneError(
            f"config {cfg.name!r}: tune.{kind}: the tuner's --json output did not parse"
        ) from None
    return out


def tuned_config(
    cfg: ResolvedConfig, out_dir: Path, log: Path | None
) -> tuple[ResolvedConfig, list[str]]:
    """``cfg`` with the files of its ``tune`` entries (made now, or reused from the config
    that asked for them), and what was done, one line each."""
    if not cfg.tune:
        return cfg, []
    files = dict(cfg.files)
    lines = []
    for kind, how in sorted(cfg.tune.items()):
        owner = cfg.tune_owner.get(kind, cfg.name)
        work = out_dir / "tuned" / f"{owner}-{kind}"
        done = work / "files"
        stamp = work / "done.json"
        if (
            stamp.is_file()
            and json.loads(stamp.read_text()).get("how") == how
            and any(done.glob("*.json"))
        ):
            files[kind] = str(done)
            lines.append(f"{cfg.name}: tune.{kind}: reusing {done} (made for config {owner})")
            continue
        if how == "from-log" and log is None:
            raise TuneError(
                f"config {cfg.name!r}: tune.{kind} = 'from-log' needs the baseline's launch log "
                "(launch the baseline first: it is the first config)"
            )
        argv = [sys.executable, "-m", "inferlab.cli.main", "tune", "fp8-gemm"]
        argv += ["--engine", _tuner_engine(cfg, kind), "--out-dir", str(work), "--format", "json"]
        # a saved run is written whole; the lever evidence tells whether it covers what runs
        argv += ["--from-log", str(log)] if how == "from-log" else ["--from-results", how]
        got = _run_tuner(argv, cfg, kind, how)
        shutil.rmtree(done, ignore_errors=True)
        done.mkdir(parents=True)
        for f in got.get("files", []):
            shutil.copy2(f["path"], done / Path(f["path"]).name)
        stamp.write_text(json.dumps({"how": how, "log": str(log) if how == "from-log" else None}))
        files[kind] = str(done)
        src = "the baseline's log" if how == "from-log" else how
        lines.append(f"{cfg.name}: tune.{kind}: {len(got.get('files', []))} file(s) from {src}")
    return dataclasses.replace(cfg, files=files), lines
