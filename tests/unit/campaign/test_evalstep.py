"""The ``[verify] eval`` step (``campaign.parts.evalstep``) on real harness records without running
the harness: a stand-in Python writes what lm-evaluation-harness 0.4.13 wrote against the
reference engine of seed 0 or of seed 7 (tests/fixtures/lm_eval/), so the stored record, the
reference's score, the verdict and every "cannot gate" are checked in milliseconds."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from inferlab.campaign.parts.evalstep import SAMPLES_KIND, eval_check
from inferlab.campaign.parts.launch import config_row
from inferlab.campaign.parts.resolve import resolve_configs
from inferlab.config.campaign import load_campaign
from inferlab.store import Store
from support import FIXTURES
from support.campaign import write_campaign
from support.cli import CliResult

STAND_IN = """#!{python}
import json, shutil, sys
a = json.loads(sys.argv[-1])
url = a["model_args"]["base_url"]
if "dead" in url:
    print("requests.exceptions.ConnectionError: Connection refused")
    sys.exit(1)
name = "sim_words_seed0" if "seed0" in url else "sim_words_seed7"
shutil.copy("{fixtures}/" + name + ".json", a["out"])
"""


def _setup(tmp_path: Path, max_drop: float = 0.1) -> tuple[Path, Path]:
    fake = tmp_path / "python"
    fake.write_text(STAND_IN.format(python=sys.executable, fixtures=FIXTURES / "lm_eval"))
    fake.chmod(0o755)
    gate = {"tasks": ["sim_words"], "python": str(fake), "max_drop": max_drop}
    path = write_campaign(
        tmp_path / "c.toml",
        config=[{"name": "baseline"}, {"name": "other", "extends": "baseline"}],
        verify={"probes": [], "eval": gate},
    )
    return path, tmp_path / "db"


def test_the_reference_is_scored_and_a_changed_config_fails_with_the_figures(
    tmp_path: Path,
) -> None:
    path, db = _setup(tmp_path)
    camp = load_campaign(path)
    base, other = resolve_configs(camp, path)[:2]
    with Store(db) as store:
        check, record = eval_check(camp, base, "http://seed0", "m", store, "baseline")
        assert check.passed and not check.gating and check.detail["verdict"] == "reference"
        assert check.message == (
            "reference: lm-eval sim_words exact_match 0.750 (95% [0.531, 0.888]) over 20 documents"
        )
        assert record is not None and len(record["samples"]["sim_words"]) == 20
        with store.transaction():
            store.add_verification(config_row(store, camp, base), SAMPLES_KIND, True, record)
        check, record = eval_check(camp, other, "http://seed7", "m", store, "baseline")
        same, _ = eval_check(camp, other, "http://seed0", "m", store, "baseline")
    assert same.passed and same.detail["diff"]["low"] == 0.0 and same.detail["changed"] == 0
    assert not check.passed and check.gating and check.detail["verdict"] == "fail"
    assert check.message.startswith(
        "lm-eval sim_words exact_match: config 0.000 vs reference 0.750; difference -0.750 "
        "(95% paired bootstrap ["
    )
    assert check.message.endswith("< -0.1; 20 documents, 15 scored differently")


def test_cannot_gate_is_a_failure_never_a_pass(tmp_path: Path) -> None:
    path, db = _setup(tmp_path)
    camp = load_campaign(path)
    base, other = resolve_configs(camp, path)[:2]
    with Store(db) as store:
        check, record = eval_check(camp, other, "http://seed0", "m", store, "baseline")
        assert not check.passed and check.gating and record is not None
        assert check.message == (
            "cannot gate: no stored lm-eval samples of the reference config 'baseline'"
        )
        check, record = eval_check(camp, other, "http://dead", "m", store, "baseline")
        assert not check.passed and check.gating and record is None
        assert check.message.startswith(
            "cannot gate: lm-eval exited 1: requests.exceptions.ConnectionError"
        )
        # the reference that cannot be scored is recorded, not gated (the others cannot gate)
        check, _ = eval_check(camp, base, "http://dead", "m", store, "baseline")
        assert not check.passed and not check.gating


def test_without_the_harness_run_stops_before_any_launch_and_dry_run_tells_the_gate(
    tmp_path: Path, cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "lm_eval" else real(n, *a)
    )
    monkeypatch.setenv("INFERLAB_CACHE", str(tmp_path / "empty"))  # no cached environment
    path = write_campaign(
        tmp_path / "c.toml",
        config=[{"name": "baseline"}, {"name": "other", "extends": "baseline"}],
        verify={"probes": [], "eval": {"tasks": ["gsm8k"], "limit": 200}},
    )
    p = cli("run", str(path), "--db", str(tmp_path / "db"))
    assert p.exit_code == 2 and "pip install 'inferlab[eval]'" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "launching" not in p.stdout + p.stderr
    p = cli("run", str(path), "--dry-run", env={"COLUMNS": "250"})
    assert "lm-eval gsm8k (limit 200): scored once, the reference of the eval gate" in p.stdout
    assert "lm-eval gsm8k (limit 200) gate: score difference from the reference ≥ -0.02" in p.stdout
