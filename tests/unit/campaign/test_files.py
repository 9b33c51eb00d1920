"""Kernel-config files as a config's lever: checked at plan time, installed into the engine's
package for that config only, restored exactly (also after a crash), and proven applied (or
not) by the engine's own kernel-config lines.

The engine is the reference engine installed in a Python of its own (``tests/support/pkgcopy.py``), so
its package directory (``inferlab/sim/configs/``) is a real one that belongs to the test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.parts import files as lever_files
from inferlab.campaign.parts.plan import make_plan, render_plan
from inferlab.campaign.parts.resolve import resolve_configs
from inferlab.config.campaign import load_campaign
from inferlab.errors import ConfigError
from inferlab.sim.presets import get_preset
from inferlab.store import Store
from inferlab.store.models import FilesManifest
from support.campaign import write_campaign
from support.campaigns import files
from support.pkgcopy import tuned_dir

GENERIC = get_preset("generic")


def campaign(tmp: Path, python: Path, *more: dict[str, Any]) -> Path:
    """The files-lever campaign (``support.campaigns.files``), ``more`` configs after A."""
    return write_campaign(tmp / "c.toml", **files(python, *more))


# ------------------------------------------------------------------------- bad input


def test_bad_files_are_named_at_plan_time(tmp_path: Path, engine_python: Path) -> None:
    path = campaign(tmp_path, engine_python)
    with pytest.raises(ConfigError, match=r"c.toml.*files.fp8_gemm: .*tuned does not exist"):
        make_plan(path)
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    (tuned / "notes.txt").write_text("x")
    with pytest.raises(ConfigError, match=r"notes.txt is not a sim fp8_gemm config file name"):
        make_plan(path)
    (tuned / "notes.txt").unlink()
    vllm_name = (
        "N=4096,K=4096,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128].json"
    )
    (tuned / vllm_name).write_text("{}")  # vLLM's spelling: SGLang (and the sim) never read it
    with pytest.raises(ConfigError, match=r"block_shape=\[128,128\].json is not a sim"):
        make_plan(path)
    (tuned / vllm_name).unlink()
    bad = tuned / vllm_name.replace("[128,128]", "[128, 128]")
    bad.write_text('{"1": {"BLOCK_SIZE_M": 64,}')
    with pytest.raises(ConfigError, match=r"is not valid JSON \(line 1, column 27"):
        make_plan(path)
    bad.write_text("[1, 2]")
    with pytest.raises(ConfigError, match=r"expected a JSON object .* found list"):
        make_plan(path)
    bad.write_text("{}")
    plan = make_plan(path)
    text = "\n".join(render_plan(plan))
    assert (
        f"files fp8_gemm: {tuned}" in text and "vs baseline:" in text and "files fp8_gemm" in text
    )


# ------------------------------------------------------------------------- install / restore


def test_install_and_restore_exactly(
    tmp_path: Path, engine_python: Path, configs_dir: Path
) -> None:
    shapes = GENERIC.fp8_gemm_shapes[:2]
    tuned_dir(tmp_path / "tuned", shapes, "NVIDIA H100 80GB HBM3")
    configs_dir.mkdir()
    shipped = next(iter(sorted((tmp_path / "tuned").iterdir())))
    (configs_dir / shipped.name).write_text('{"1": "as shipped"}\n')
    (configs_dir / "unrelated.json").write_text("{}\n")
    before = {p.name: p.read_bytes() for p in configs_dir.iterdir()}
    camp = load_campaign(campaign(tmp_path, engine_python))
    cfg = resolve_configs(camp, tmp_path / "c.toml")[1]
    with Store(tmp_path / "db") as store:
        inst = lever_files.install(tmp_path / "out", "files", cfg, store=store)
        assert inst is not None
        actions = {e["file"]: e["action"] for e in inst.entries()}
        assert actions[shipped.name] == "replaced" and list(actions.values()).count("new") == 1
        for f in (tmp_path / "tuned").iterdir():
            assert (configs_dir / f.name).read_bytes() == f.read_bytes()
        assert (tmp_path / "out/.files/A.json").is_file()  # pending until restored
        backup = Path(inst.data["backup"]) / "fp8_gemm" / shipped.name
        assert backup.read_text() == '{"1": "as shipped"}\n'
        rep = lever_files.restore(inst, store=store)
        assert rep.exact, rep.line()
        states = [a.data.state for a in store.analyses.of(FilesManifest, "files", "files")]
    assert {p.name: p.read_bytes() for p in configs_dir.iterdir()} == before
    assert not (tmp_path / "out/.files/A.json").exists() and states == ["installed", "restored"]


def test_a_pending_manifest_is_restored_by_the_next_runner(
    tmp_path: Path, engine_python: Path, configs_dir: Path
) -> None:
    tuned_dir(tmp_path / "tuned", GENERIC.fp8_gemm_shapes, "NVIDIA H100 80GB HBM3")
    camp = load_campaign(campaign(tmp_path, engine_python))
    cfg = resolve_configs(camp, tmp_path / "c.toml")[1]
    lever_files.install(tmp_path / "out", "files", cfg)  # ... and the runner dies here
    assert configs_dir.is_dir() and len(list(configs_dir.iterdir())) == 4
    lines = lever_files.recover(tmp_path / "out", None)
    assert len(lines) == 1 and "pending files of a runner that died" in lines[0], lines
    assert "as before" in lines[0] and not configs_dir.exists()  # it created the directory
    assert lever_files.recover(tmp_path / "out", None) == []


def test_a_failed_install_leaves_nothing_behind(
    tmp_path: Path, engine_python: Path, configs_dir: Path
) -> None:
    tuned_dir(tmp_path / "tuned", GENERIC.fp8_gemm_shapes[:1], "NVIDIA H100 80GB HBM3")
    configs_dir.write_text("a file where the directory should be")
    camp = load_campaign(campaign(tmp_path, engine_python))
    cfg = resolve_configs(camp, tmp_path / "c.toml")[1]
    with pytest.raises(ConfigError, match=r"write .*sim/configs: FileExistsError"):
        lever_files.install(tmp_path / "out", "files", cfg)
    assert configs_dir.read_text() == "a file where the directory should be"
    assert lever_files.pending_manifests(tmp_path / "out") == []
