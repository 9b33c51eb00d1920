"""Each package has a face: an ``__init__`` whose ``__all__`` names its public API (issue 27).

The faces are pinned here: a name added to or dropped from a face is a change of the public
API and is made here too. Every listed name resolves to the object, never to a submodule of
the same name, and the lazy faces (``inferlab.faces``) import nothing until a name is used."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types

import pytest

import inferlab

FACES: dict[str, list[str]] = {
    "inferlab": ["METRICS_VERSION", "__version__"],
    "inferlab.campaign": [
        "CampaignEvents",
        "CampaignResult",
        "ConfigOutcome",
        "Plan",
        "UpResult",
        "down",
        "make_plan",
        "render_plan",
        "resolve_configs",
        "run_campaign",
        "select_configs",
    ],
    # the role subpackages of campaign/ (the campaign-layers contract): no face of their own
    "inferlab.campaign.drivers": [],
    "inferlab.campaign.parts": [],
    "inferlab.campaign.stages": [],
    "inferlab.cli": ["app"],
    "inferlab.cluster": [
        "bench_ray",
        "check_cluster_plan",
        "placement_lines",
        "run_campaign_ray",
        "tune_shapes_ray",
    ],
    "inferlab.config": [
        "BenchConfig",
        "CampaignFile",
        "ConfigSpec",
        "EngineSection",
        "LoadPattern",
        "LoadSpec",
        "ResolvedConfig",
        "SLO",
        "WorkloadSpec",
        "load_campaign",
        "locate",
        "read_json",
        "redact_url",
        "validation_message",
    ],
    "inferlab.engines": [
        "Change",
        "EngineSpec",
        "FlagSyntax",
        "Fp8Tuning",
        "Launcher",
        "LogFacts",
        "LogMatch",
        "LogSignature",
        "MetricDef",
        "NativeApi",
        "OomAdvice",
        "ParsedArgs",
        "ReconFacts",
        "Sample",
        "classify_log",
        "clean_line",
        "get_engine",
        "histogram_buckets",
        "is_simulated",
        "parse_prometheus",
        "primary_failure",
        "register",
        "registered",
        "specs",
        "unregister",
    ],
    "inferlab.envs": ["ensure_vllm_cpu"],
    "inferlab.levers": [
        "ConfigEvidence",
        "Decision",
        "Evidence",
        "Lever",
        "LeverOptions",
        "Measured",
        "NOTHING_TO_RANK",
        "PointBound",
        "PredictionRow",
        "RULES",
        "Rule",
        "SpecPoint",
        "check_accept_length",
        "decide",
        "gather",
        "judge",
        "rank",
        "record_predictions",
        "rule",
        "spec_band",
        "stored_predictions",
        "tpot_at",
    ],
    "inferlab.load": [
        "BenchEvents",
        "BenchResult",
        "BenchWarning",
        "Endpoint",
        "JsonlSink",
        "LoadPoint",
        "PointResult",
        "ResultSink",
        "detect_engine",
        "plan_points",
        "run_bench",
    ],
    "inferlab.logs": [
        "Finding",
        "LogAnalysis",
        "Milestone",
        "OomEvent",
        "SeriesPoint",
        "TunedConfig",
        "UntunedGemm",
        "UntunedMoe",
        "analyze_log",
        "store_log_findings",
        "untuned_fp8_gemms",
        "untuned_moe",
    ],
    "inferlab.logs.detectors": ["DETECTORS", "Detector", "ORDER", "detect", "detector"],
    "inferlab.logs.formats": [
        "Advice",
        "Field",
        "LineFormat",
        "Record",
        "Tables",
        "read",
        "tables",
    ],
    "inferlab.models": [
        "PRESETS",
        "RandomModelInfo",
        "RandomSpec",
        "TinyModelInfo",
        "TinySpec",
        "write_random_model",
        "write_tiny_model",
    ],
    "inferlab.profile": [
        "Categorizer",
        "CpuOps",
        "GpuRange",
        "Profile",
        "ProfileDiff",
        "Rule",
        "Trace",
        "analyze",
        "diff_profiles",
        "load_rules",
        "read_trace",
    ],
    "inferlab.recon": [
        "ENGINES",
        "EngineInfo",
        "RECON_VERSION",
        "Recon",
        "ReconEngine",
        "ReconOptions",
        "config_dirs_for",
        "engine_config_dirs",
        "run_recon",
    ],
    "inferlab.report": [
        "Comparison",
        "build_comparison",
        "render_csv",
        "render_md",
        "to_json",
        "write_report",
    ],
    "inferlab.report.sections": [
        "SECTIONS",
        "Section",
        "SectionBuilder",
        "build_sections",
        "md_text",
    ],
    "inferlab.search": [
        "Bounds",
        "Evaluator",
        "Params",
        "SearchResult",
        "Space",
        "StopReason",
        "TrialRecord",
        "TrialResult",
        "Verdict",
        "distribution",
        "run_search",
        "value_text",
    ],
    "inferlab.server": [
        "LaunchSpec",
        "ServerProcess",
        "StopReport",
        "clean_env",
        "free_port",
        "launch",
        "log_tail",
        "stop",
        "stop_group",
        "wait_ready",
    ],
    "inferlab.sim": [
        "LEVER_FIELDS",
        "SimConfig",
        "SimThread",
        "WordTokenizer",
        "back_to_back",
        "config_from_options",
        "on_model_clock",
        "run_engine",
        "serve_config",
    ],
    "inferlab.stats": [
        "Difference",
        "Distribution",
        "Interval",
        "PointSummary",
        "Precision",
        "Saturation",
        "StopRecord",
        "Trust",
        "Verdict",
        "assess",
        "compare_samples",
        "compare_throughput",
        "describe",
        "find_saturation",
        "itl_ms",
        "percentile",
        "summarize",
        "tpot_ms",
    ],
    "inferlab.store": [
        "DEFAULT_DB",
        "RunRow",
        "SCHEMA_VERSION",
        "Store",
        "db_path",
        "workload_hash",
    ],
    "inferlab.store.imports": ["FORMATS", "Format", "ImportedRun", "detect", "parse_file"],
    "inferlab.tune": [
        "DEFAULT_OUT",
        "Fp8GemmRequest",
        "KernelConfig",
        "RayTune",
        "TuneOutcome",
        "store_run",
        "tune_fp8_gemm",
    ],
    "inferlab.verify": [
        "CheckResult",
        "EQUIVALENCE_PROMPTS",
        "GreedyOutputs",
        "VerifyReport",
        "verify_endpoint",
    ],
}


def _packages() -> list[str]:
    found = pkgutil.walk_packages(inferlab.__path__, "inferlab.")
    return ["inferlab", *sorted(m.name for m in found if m.ispkg)]


def test_every_package_has_a_pinned_face() -> None:
    assert _packages() == sorted(FACES, key=lambda p: (p != "inferlab", p))


@pytest.mark.parametrize("package", sorted(FACES))
def test_face_names_exist(package: str) -> None:
    mod = importlib.import_module(package)
    assert sorted(mod.__all__) == FACES[package]
    assert len(set(mod.__all__)) == len(mod.__all__)
    for name in mod.__all__:
        value = getattr(mod, name)
        assert not isinstance(value, types.ModuleType), f"{package}.{name} is a module"
    star: dict[str, object] = {}
    exec(f"from {package} import *", star)
    assert set(FACES[package]) <= set(star)


def test_unknown_name_is_an_attribute_error() -> None:
    import inferlab.campaign

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        inferlab.campaign.nope  # noqa: B018


def test_a_lazy_face_imports_nothing_until_used() -> None:
    """``inferlab bench`` imports ``campaign.parts.bench``: that must not load the campaign runner,
    nor ``compare`` the report renderer (the CLI's start-up stays what it was)."""
    code = (
        "import sys, inferlab.campaign.parts.bench, inferlab.report.compare\n"
        "print(sorted(m for m in ('inferlab.campaign.drivers.runner', 'inferlab.report.render')"
        " if m in sys.modules))\n"
        "from inferlab.campaign import run_campaign\n"
        "print('inferlab.campaign.drivers.runner' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:2] == ["[]", "True"]
