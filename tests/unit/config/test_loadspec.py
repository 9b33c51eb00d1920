"""One LoadSpec: ``bench`` and a campaign's ``[load]`` share its fields, declared once."""

from __future__ import annotations

import inspect
import json

import pytest
from pydantic import ValidationError

from inferlab.campaign.parts.bench import bench_config
from inferlab.cli.bench import bench
from inferlab.config.bench import BenchConfig, LoadSpec, WorkloadSpec
from inferlab.config.campaign import CampaignFile, LoadSection
from support.campaign import CampaignToml

SHARED = list(LoadSpec.model_fields)


def test_both_take_every_loadspec_field_unchanged() -> None:
    assert len(SHARED) >= 19
    for model in (BenchConfig, LoadSection):
        assert issubclass(model, LoadSpec)
        assert model.model_config.get("extra") == "forbid"
        for name in SHARED:
            mine, spec = model.model_fields[name], LoadSpec.model_fields[name]
            assert (mine.annotation, mine.default, mine.metadata) == (
                spec.annotation,
                spec.default,
                spec.metadata,
            ), (model.__name__, name)


def test_neither_redeclares_a_shared_field() -> None:
    for model in (BenchConfig, LoadSection):
        own = set(model.__annotations__)
        assert not own & set(SHARED), (model.__name__, sorted(own & set(SHARED)))


def test_unknown_fields_are_still_refused() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        LoadSection(concurrency=[1], colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        BenchConfig(url="http://h", concurrency=[1], requests=1, colour="red")  # type: ignore[call-arg]


def test_a_campaign_passes_every_shared_field_to_its_sweeps() -> None:
    load = LoadSection(concurrency=[2, 4], rate=[3.0], arrival="gamma", burstiness=0.5,
                       max_concurrency=5, trials=2, warmup=3, requests=7, timeout_s=9.0,
                       precision=0.1, min_requests=10, max_requests=20, looks=5,
                       min_effect=0.03, workload=WorkloadSpec(input_tokens=9))  # fmt: skip
    camp = CampaignFile.model_validate(
        {"campaign": {"name": "c"}, "engine": {"kind": "sim"}, "config": [{"name": "a"}]}
    ).model_copy(update={"load": load})
    cfg = bench_config(camp, "http://h", "m", "sim")
    assert {n: getattr(cfg, n) for n in SHARED} == {n: getattr(load, n) for n in SHARED}


def test_the_bench_options_default_to_the_model() -> None:
    params = inspect.signature(bench).parameters
    option = {"duration": "duration_s", "max_duration": "max_duration_s", "timeout": "timeout_s",
              "stall_timeout": "stall_timeout_s"}  # fmt: skip
    for opt, field in {**{n: n for n in params if n in BenchConfig.model_fields}, **option}.items():
        if field in ("url", "concurrency", "rate", "sessions", "workload", "slo", "speed"):
            continue  # required, or options given as text (lists, KEY=VALUE) or split up
        assert params[opt].default == BenchConfig.model_fields[field].default, opt
    for opt, field in {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
                       "workload": "kind", "prompts": "path"}.items():  # fmt: skip
        assert params[opt].default == WorkloadSpec.model_fields[field].default, opt


def test_the_run_file_config_keeps_its_order() -> None:
    cfg = BenchConfig(url="http://u:secret@h", concurrency=[1], requests=2)
    keys = list(json.loads(cfg.model_dump_json()))
    assert keys == [
        "url", "model", "endpoint", "engine", "concurrency", "rate", "arrival", "burstiness",
        "max_concurrency", "workload", "requests", "duration_s", "precision", "min_requests",
        "max_requests", "max_duration_s", "looks", "stop_on_precision", "min_effect",
        "lag_limit_ms", "client_cpus", "warmup", "trials", "api_key_env", "tokenizer",
        "timeout_s", "stall_timeout_s", "workers", "slo", "seed", "not_before_ns",
    ]  # fmt: skip
    assert list(cfg.model_dump(mode="json")) == keys
    assert "secret" not in cfg.model_dump_json()


def test_a_campaign_names_load_points_by_kind_beside_the_flat_spellings(
    campaign_toml: CampaignToml,
) -> None:
    from inferlab.campaign.parts.plan import make_plan
    from inferlab.errors import ConfigError

    points = [{"kind": "open", "rate": 2, "arrival": "gamma", "burstiness": 0.5},
              {"kind": "sessions", "users": 2, "turns": 3, "think_s": 0.1}]  # fmt: skip
    plan = make_plan(campaign_toml(load={"points": points}))
    assert [p.label for p in plan.points] == ["C=1", "rate=2/s", "sessions:2x3"]
    assert plan.bench.points[0].to_json()["arrival"] == "gamma"
    only = make_plan(campaign_toml(load={"concurrency": [], "requests": None,
                                         "points": points[1:]}))  # fmt: skip
    assert [p.label for p in only.points] == ["sessions:2x3"]  # sessions count their own
    with pytest.raises(ConfigError, match="give requests or duration_s"):
        make_plan(campaign_toml(load={"concurrency": [], "requests": None,
                                      "points": points[:1]}))  # fmt: skip
    with pytest.raises(ConfigError, match="unknown load pattern kind 'steps'"):
        make_plan(campaign_toml(load={"points": [{"kind": "steps"}]}))
