"""The sampler of a search: ``auto`` picks Optuna's GPSampler only when every dimension is
numeric and its dependencies import, TPE otherwise, and says why; ``gp`` that cannot run is
refused before anything launches; the search says which sampler it used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.config.campaign import ConfigSpec
from inferlab.config.search import SearchSection
from inferlab.errors import ConfigError
from inferlab.search import Space, TrialResult, run_search
from inferlab.search.samplers import choose, gp_missing, resolve
from support.campaign import write_campaign
from support.cli import Cli

NUMERIC = [
    {"flag": "--max-num-seqs", "values": [4, 8, 16, 32, 64]},  # ordinal: an integer rank
    {"flag": "--max-num-batched-tokens", "values": [512, 1024, 2048, 4096]},
]
BASE = ConfigSpec(name="baseline")


class Surface:
    """Output tok/s a stated function of the two numeric flags (best at 32, 2048); each trial
    judged better than its incumbent when 2% above it."""

    def __init__(self) -> None:
        self.values = {"baseline": 500.0}

    def evaluate(self, config: ConfigSpec, incumbent: str) -> TrialResult:
        mns, mbt = int(config.set["--max-num-seqs"]), int(config.set["--max-num-batched-tokens"])
        v = 1000.0 - abs(mns - 32) - abs(mbt - 2048) / 100
        self.values[config.name] = v
        better = v > self.values[incumbent] * 1.02
        return TrialResult(status="ok", value=v, verdict="better" if better else "equivalent")


def _section(sampler: str, dims: list[dict[str, Any]]) -> SearchSection:
    return SearchSection.model_validate(
        {"at": "C=8", "budget_trials": 6, "sampler": sampler, "dim": dims}
    )


def _space(s: SearchSection) -> Space:
    return Space(tuple(s.dim), BASE)


def test_auto_uses_tpe_for_a_categorical_dimension_and_says_why() -> None:
    s = _section("auto", [*NUMERIC, {"env": "NCCL_PROTO", "values": ["Simple", "LL"]}])
    kind, why = resolve(s, _space(s))
    assert kind == "tpe" and why == "env NCCL_PROTO is not numeric: TPE"
    result = run_search(_space(s), s, Surface())
    assert result.sampler == "TPE (auto: env NCCL_PROTO is not numeric: TPE)"
    assert result.trials[-1].chosen_by.startswith("TPE (multivariate")


def test_auto_falls_back_to_tpe_with_the_reason_when_gp_cannot_import() -> None:
    s = _section("auto", NUMERIC)
    missing = gp_missing()
    kind, why = resolve(s, _space(s))
    if missing is None:  # torch is here: GP, and it runs
        assert kind == "gp" and "GPSampler's dependencies import" in why
        result = run_search(_space(s), s, Surface())
        assert result.sampler.startswith("GP (auto") and len(result.trials) == 6
        return
    assert kind == "tpe" and why == f"every dimension is numeric, but {missing}: TPE"
    assert "torch" in missing
    result = run_search(_space(s), s, Surface())
    assert result.sampler == f"TPE (auto: {why})" and len(result.trials) == 6


def test_gp_that_cannot_run_is_refused_before_anything_launches(tmp_path: Path, cli: Cli) -> None:
    s = _section("gp", [*NUMERIC, {"flag": "--enforce-eager", "presence": True}])
    with pytest.raises(ConfigError, match=r"'gp' is for numeric dimensions, and --enforce-eager"):
        choose(s, _space(s))
    path = write_campaign(
        tmp_path / "c.toml",
        search={"at": "C=1", "sampler": "gp", "dim": [{"flag": "--itl-ms", "low": 1, "high": 4}]},
    )
    r = cli("optimize", str(path), "--dry-run")
    if gp_missing() is None:
        assert r.exit_code == 0, r.stderr
        return
    assert r.exit_code != 0 and "Traceback" not in r.stderr
    assert "c.toml: search.sampler: 'gp': Optuna's GPSampler needs torch" in r.stderr
    auto = write_campaign(
        tmp_path / "a.toml",
        search={"at": "C=1", "sampler": "auto", "dim": [{"flag": "--itl-ms", "low": 1, "high": 4}]},
    )
    r = cli("optimize", str(auto), "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert "auto → tpe (every dimension is numeric, but Optuna's GPSampler needs torch" in (
        r.stdout.replace("\n", " ")
    )
