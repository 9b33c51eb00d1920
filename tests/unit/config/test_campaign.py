"""Campaign files (``config.campaign``): fuzzed TOML and YAML from the shipped examples
(settings: tests/support/fuzzing.py), the checks of a sequential campaign's settings,
``${VAR}`` expansion and YAML with line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from inferlab.campaign.parts.plan import make_plan
from inferlab.config.campaign import load_campaign
from inferlab.errors import ConfigError
from support.campaign import CampaignToml
from support.campaigns import SEQUENTIAL
from support.fuzzing import (
    ROOT,
    byte_mutation,
    fuzz,
    parses_or_names_file,
    tree_mutation,
    tree_target,
    write,
)

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# ----------------------------------------------------------------------------- campaign files

CAMPAIGNS = sorted((ROOT / "examples").glob("*.toml"))
CAMPAIGN_TEXT = [p.read_bytes() for p in CAMPAIGNS]
CAMPAIGN_TREES = tree_target([tomllib.loads(p.read_text()) for p in CAMPAIGNS])


@fuzz(150)
@given(data=st.data())
def test_campaign_toml_mutated(tmp: Path, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(CAMPAIGN_TEXT))
    parses_or_names_file(make_plan, write(tmp, "c.toml", data.draw(byte_mutation(seed))))


@fuzz(150)
@given(data=st.data())
def test_campaign_yaml_tree_mutated(tmp: Path, data: st.DataObject) -> None:
    seeds, paths = CAMPAIGN_TREES
    i = data.draw(st.integers(0, len(seeds) - 1))
    text = yaml.safe_dump(data.draw(tree_mutation(seeds[i], paths[i]))).encode()
    if data.draw(st.booleans()):
        text = data.draw(byte_mutation(text))
    parses_or_names_file(make_plan, write(tmp, "c.yaml", text))


# --- adaptive load points: the settings a sequential campaign needs


def test_sequential_campaign_settings_are_checked(campaign_toml: CampaignToml) -> None:
    from inferlab.config.campaign import load_campaign
    from inferlab.errors import ConfigError

    load = SEQUENTIAL["load"]
    path = campaign_toml("bad.toml", **{**SEQUENTIAL, "load": {**load, "requests": 20}})
    with pytest.raises(
        ConfigError, match=r"bad.toml:\d+: load: .*sequential = true needs requests"
    ):
        load_campaign(path)
    precise = {**load, "min_requests": None, "precision": 1.5}
    path = campaign_toml("bad.toml", **{**SEQUENTIAL, "load": precise})
    with pytest.raises(
        ConfigError, match=r"bad.toml:\d+: load.precision: Input should be less than 1"
    ):
        load_campaign(path)


def test_interleave_is_a_boolean_named_with_its_line(campaign_toml: CampaignToml) -> None:
    from inferlab.config.campaign import load_campaign
    from inferlab.errors import ConfigError

    assert load_campaign(campaign_toml()).load.interleave is False  # today's order by default
    assert load_campaign(campaign_toml(load={"interleave": True})).load.interleave is True
    path = campaign_toml("bad.toml", load={"interleave": "yes"})
    with pytest.raises(ConfigError, match=r"bad.toml:\d+: load.interleave: Input should be"):
        load_campaign(path)


# --- ${VAR} expansion and YAML campaign files, with line numbers


def test_unset_variable_is_named_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SURELY_UNSET_X", raising=False)
    p = tmp_path / "c.toml"
    p.write_text(
        '[campaign]\nname = "x"\n[engine]\nkind = "vllm"\nmodel = "${SURELY_UNSET_X}"\n'
        '[[config]]\nname = "a"\n'
    )
    with pytest.raises(ConfigError, match=r"c.toml:5: \$\{SURELY_UNSET_X\} is not set"):
        load_campaign(p)


def test_yaml_campaign_with_line_numbers(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(
        "campaign:\n  name: y\nengine:\n  kind: sim\nconfig:\n  - name: base\n"
        "  - name: fast\n    extends: base\n    set: {--itl-ms: '2'}\n"
        "load:\n  concurrency: [1]\n  requests: 2\n"
    )
    plan = make_plan(p)
    assert [c.name for c in plan.configs] == ["base", "fast"]
    assert plan.configs[1].args == ["--itl-ms", "2"]
    p.write_text(
        "campaign:\n  name: y\nengine:\n  kind: sim\nconfig:\n  - name: base\n"
        "  - name: fast\n    extendz: base\n"
    )
    with pytest.raises(ConfigError, match=r"c.yaml:8: config.1.extendz: unknown field"):
        load_campaign(p)


# --- [slo]: per-request and distribution limits


def test_slo_distribution_limits_and_a_bad_key_named_with_its_line(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    head = '[campaign]\nname = "x"\n[engine]\nkind = "sim"\n[[config]]\nname = "a"\n'
    p.write_text(head + "[slo]\nttft_ms = 900\ntpot_p99_ms = 40\nitl_p99_ms = 60\n")
    slo = load_campaign(p).slo
    assert slo.limits() == {"ttft_ms": 900, "tpot_p99_ms": 40, "itl_p99_ms": 60}
    assert slo.text == "itl_p99_ms=60,tpot_p99_ms=40,ttft_ms=900"
    p.write_text(head + "[slo]\ntpot_p99_ms = 40\ntpot_p90_ms = 30\n")
    with pytest.raises(ConfigError, match=r"c.toml:9: slo.tpot_p90_ms: unknown field"):
        load_campaign(p)
    p.write_text(head + "[slo]\ntpot_p99_ms = -1\n")
    with pytest.raises(ConfigError, match=r"c.toml:8: slo.tpot_p99_ms: .*greater than 0"):
        load_campaign(p)
