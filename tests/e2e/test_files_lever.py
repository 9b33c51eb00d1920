"""Kernel-config files as a config's lever, end to end: a campaign installs them into the
engine's package for that config only, restores them exactly, and proves them applied (or
not) by the engine's own kernel-config lines.

The engine is the reference engine installed in a Python of its own
(``tests/support/pkgcopy.py``), so its package directory (``inferlab/sim/configs/``) is a real
one that belongs to the test."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.notes import plan_notes
from inferlab.campaign.parts.plan import make_plan
from inferlab.errors import ConfigError
from inferlab.report.compare import build_comparison
from inferlab.report.compare_export import cell_text
from inferlab.report.render import build_report, render_markdown
from inferlab.sim.presets import get_preset
from inferlab.store import Store
from inferlab.store.checks import LeverCheck
from support import ROOT
from support.campaign import write_campaign
from support.campaigns import files
from support.pkgcopy import tuned_dir

SAVED_RUN = ROOT / "benchmarks/fp8_gemm_tune_h200x2/tune_cli_2gpu.json"  # real, 2×H200
GENERIC = get_preset("generic")


def _items(store: Store, campaign: str, config: str) -> list[dict[str, Any]] | None:
    """The stored lever items of ``config`` as JSON (None: no lever check stored)."""
    got = store.verifications.latest_of(LeverCheck, campaign, config, "lever")
    return None if got is None else [i.to_json() for i in got.items]


def campaign(tmp: Path, python: Path, *more: dict[str, Any]) -> Path:
    """The files-lever campaign (``support.campaigns.files``), ``more`` configs after A."""
    return write_campaign(tmp / "c.toml", **files(python, *more))


def test_an_engine_not_installed_in_its_python(tmp_path: Path) -> None:
    tuned = tuned_dir(tmp_path / "tuned", ((4096, 4096),), "NVIDIA H100 80GB HBM3")
    p = tmp_path / "c.toml"
    p.write_text(
        f'[campaign]\nname = "x"\noutput = "{tmp_path}/out"\n[engine]\nkind = "sglang"\n'
        f'model = "m"\npython = "{sys.executable}"\n[[config]]\nname = "base"\n[[config]]\n'
        f'name = "A"\nfiles = {{ fp8_gemm = "{tuned}" }}\n[load]\nconcurrency = [1]\n'
        "requests = 1\n"
    )
    make_plan(p)  # the plan (and --dry-run) shows; running it names the missing package
    with (
        Store(tmp_path / "db") as store,
        pytest.raises(
            ConfigError, match=rf"engine.python: sglang is not installed in {sys.executable}"
        ),
    ):
        run_campaign(p, store=store)
    p.write_text(p.read_text().replace('kind = "sglang"', 'kind = "openai"\nurl = "http://x"'))
    with pytest.raises(ConfigError, match=r"engine 'openai' reads no fp8_gemm config files"):
        make_plan(p)


# ------------------------------------------------------------------------- a whole campaign


def test_campaign_installs_checks_and_restores(
    tmp_path: Path, engine_python: Path, configs_dir: Path
) -> None:
    tuned_dir(tmp_path / "tuned", GENERIC.fp8_gemm_shapes, "NVIDIA H100 80GB HBM3")
    tuned = {"name": "T", "extends": "baseline", "tune": {"fp8_gemm": "from-log"}}
    saved = {"name": "S", "extends": "baseline", "tune": {"fp8_gemm": SAVED_RUN}}
    saved["set"] = {"--time-scale": "0.05"}  # faster for another reason than its files
    with Store(tmp_path / "db") as store:
        res = run_campaign(
            campaign(tmp_path, engine_python, tuned, saved), store=store, clock=ModelClock()
        )
        status = {o.config: (o.status, o.message) for o in res.outcomes}
        levers = {c: _items(store, "files", c) for c in ("A", "S", "baseline")}
        base_log = Path(
            store.verifications.launches("files", config="baseline")[-1].detail.log_path or ""
        )
        plain = build_comparison(store, campaign="files", metrics=["tpot_ms"])
        forced = build_comparison(store, campaign="files", metrics=["tpot_ms"], force=True)
        md = render_markdown(build_report(store, "files"))
        path = tmp_path / "c.toml"
        notes = plan_notes(make_plan(path), store)  # what a resumed run's plan shows
        configs_dir.mkdir()  # as `tune fp8-gemm --install-into` would leave it, for good
        (
            configs_dir / "N=1,K=1,device_name=X,dtype=fp8_w8a8,block_shape=[128, 128].json"
        ).write_text("{}")
        drift = plan_notes(make_plan(path), store)
        shutil.rmtree(configs_dir)
    assert status["baseline"][0] == "measured" and status["A"][0] == "measured", status
    assert levers["baseline"] is None  # no diff: nothing to prove
    items = {i["item"]: i for i in levers["A"] or []}
    assert items["files fp8_gemm"]["status"] == "applied", items
    assert "Using configuration from" in items["files fp8_gemm"]["evidence"]
    assert items["env NCCL_PROTO"]["status"] == "applied"
    assert "NCCL_PROTO set by environment to LL" in items["env NCCL_PROTO"]["evidence"]
    assert items["--max-running-requests"]["status"] == "applied"
    # no GPU here: the tuning step says so, and how to go on without one
    assert status["T"][0] == "failed" and "needs an NVIDIA GPU" in status["T"][1], status["T"]
    assert "tune = { fp8_gemm = " in status["T"][1]
    # a saved run tuned on H200s: installed, but this engine runs NVIDIA_H100 shapes
    s_items = {i["item"]: i for i in levers["S"] or []}
    assert status["S"][0] == "measured"
    assert s_items["files fp8_gemm"]["status"] == "not-applied"
    assert "default W8A8 Block FP8 config" in s_items["files fp8_gemm"]["evidence"]
    assert not configs_dir.exists()  # restored exactly: the sim shipped none
    assert "Using default W8A8 Block FP8 kernel config" in base_log.read_text()
    made = sorted(p.name for p in (tmp_path / "out/tuned/S-fp8_gemm/files").iterdir())
    assert len(made) == 4 and all("device_name=NVIDIA_H200" in n for n in made)
    summary = json.loads((tmp_path / "out/tuned/S-fp8_gemm/done.json").read_text())
    assert summary["how"] == str(SAVED_RUN)
    # S measured faster, but its lever did not take effect: no claim without --force
    cell, fcell = plain.cells[("S", "C=1")], forced.cells[("S", "C=1")]
    assert cell.levers == ["files fp8_gemm"] and cell.verdicts["tpot_ms"].claim == "~"
    assert "lever not applied" in cell.verdicts["tpot_ms"].reason
    forced_v = fcell.verdicts["tpot_ms"]  # one launch each: undecided, even forced
    assert forced_v.ratio.estimate < 0.98 and forced_v.reason.startswith("undecided:"), forced_v
    assert "(lever not applied)" in cell_text(plain, "S", "C=1", "tpot_ms")
    assert plain.cells[("A", "C=1")].levers == []
    assert "## Levers applied" in md and "| S | files fp8_gemm | ✗ |" in md
    assert "| A | env NCCL_PROTO | ✓ |" in md
    assert "A: lever (stored) ✓ files fp8_gemm: applied" in "\n".join(notes)
    assert not any("differs from the original" in n for n in notes)
    assert any("differs from the original" in n and "1 added" in n for n in drift), drift
