"""The ``transformers`` engine (``transformers serve`` 5.17): argv against its real ``--help``,
request fields against the fields it accepts, readiness and log signatures on real logs, and
the runtime-failure classification inferlab stores after a stop.

Fixtures: tests/fixtures/transformers/ (README.md there says how each was made).
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from inferlab.campaign.parts.plan import make_plan, render_plan, select_configs
from inferlab.config.bench import WorkloadSpec
from inferlab.engines import classify_log, get_engine, primary_failure
from inferlab.errors import ConfigError
from inferlab.load.workload import Prompt, build_body
from inferlab.recon.flags import parse_help
from support import FIXTURES, ROOT

FIX = FIXTURES / "transformers"
OOM_LOG = (
    FIXTURES
    / "engine_logs/oom_graph_capture/vllm-0.17.1_llama31-8b-rtx3090_sampler-warmup-oom_curated.log"
)
EXAMPLE = ROOT / "src/inferlab/examples/transformers-gpu.toml"
SPEC = get_engine("transformers")
ENV = {
    "INFERLAB_GPU_MODEL": "/m/1b",
    "INFERLAB_TRANSFORMERS_PYTHON": "/opt/py/bin/python3",
    "INFERLAB_SERVE_PYTHONPATH": "/tmp/site",
}


def _help_flags() -> set[str]:
    flags = parse_help((FIX / "serve-help-5.17.0.txt").read_text())
    return {f.name for f in flags} | {"--no-" + f.name[2:] for f in flags if f.negatable}


def _kinds(name: str) -> dict[str, int]:
    text = (FIX / name).read_text(encoding="utf-8")
    return dict(Counter(m.kind for m in classify_log(text, SPEC)))


# ---------------------------------------------------------------- argv


def test_launch_argv_model_is_positional() -> None:
    argv = SPEC.launch_argv(
        "/m/1b", host="127.0.0.1", port=8123, python="/py", args=["--continuous-batching"]
    )
    assert argv == [
        "transformers",
        "serve",
        "/m/1b",
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--continuous-batching",
    ]
    mod = SPEC.launch_argv("/m", host="0.0.0.0", port=1, python="/py", launcher="module")
    assert mod[:5] == ["/py", "-m", "transformers.cli.transformers", "serve", "/m"]
    with pytest.raises(ConfigError, match="--port is set by inferlab"):
        SPEC.launch_argv("/m", host="h", port=1, python="p", args=["--port", "9"])
    with pytest.raises(ConfigError, match="a model is required"):
        SPEC.launch_argv(None, host="h", port=1, python="p")


def test_help_fixture_has_the_flags_inferlab_sets() -> None:
    flags = _help_flags()
    assert {"--host", "--port"} <= flags  # what the launcher sets
    for sig in SPEC.log_signatures:  # every flag a remedy names exists
        assert set(sig.flags) <= flags, sig.kind
    assert {"--continuous-batching", "--no-continuous-batching", "--cb-use-cuda-graph"} <= flags


def test_help_parse_folds_click_negations() -> None:
    by = {f.name: f for f in parse_help((FIX / "serve-help-5.17.0.txt").read_text())}
    assert by["--continuous-batching"].negatable and by["--cb-use-cuda-graph"].negatable
    assert "--no-continuous-batching" not in by
    assert not by["--cb-max-memory-percent"].negatable


def test_every_example_config_uses_real_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    plan = make_plan(EXAMPLE)
    flags = _help_flags()
    for cfg in plan.configs:
        assert set(SPEC.parse_args(cfg.args).flags) <= flags, cfg.name


def test_example_campaign(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    plan = make_plan(EXAMPLE)
    by = {c.name: c for c in plan.configs}
    assert list(by) == ["baseline", "eager", "cb", "cb-graphs", "cb-bf16", "cb-eager-oom"]
    assert [p.label for p in plan.points] == ["C=1", "C=8", "C=32", "C=64"]
    assert [c.name for c in plan.configs if not c.lossless] == ["cb-bf16"]
    assert by["cb-graphs"].args[-2:] == ["--continuous-batching", "--cb-use-cuda-graph"]
    oom = SPEC.parse_args(by["cb-eager-oom"].args).flags
    assert oom["--cb-max-memory-percent"] == ("0.99",) and oom["--attn-implementation"] == (
        "eager",
    )
    assert by["baseline"].env["PYTHONPATH"] == "/tmp/site"
    assert by["baseline"].python == "/opt/py/bin/python3"
    full = "\n".join(render_plan(plan))
    assert full.count("lossless = false: greedy equivalence is recorded, not gating") == 1
    part = select_configs(plan, ["cb", "baseline"])
    assert [c.name for c in part.configs] == ["baseline", "cb"]  # file order
    text = "\n".join(render_plan(part))
    assert "[2] cb" in text and "eager" not in text.split("[2] cb")[0].split("argv")[0]
    with pytest.raises(ConfigError, match=r"--config 'cb-fast': no such config \(configs: "):
        select_configs(make_plan(EXAMPLE), ["cb-fast"])


# ---------------------------------------------------------------- requests


def test_requests_carry_only_fields_it_accepts() -> None:
    fields = json.loads((FIX / "request-fields-5.17.0.json").read_text())
    prompt = Prompt(text="hello", messages=None, input_tokens=1, output_tokens=32)
    for endpoint, path in (("completions", "/v1/completions"), ("chat", "/v1/chat/completions")):
        body = json.loads(build_body(prompt, model="/m", endpoint=endpoint, engine=SPEC))
        assert set(body) <= set(fields[path]["accepted"]), endpoint
        assert body["max_tokens"] == 32
    assert SPEC.fixed_length_fields(32) == {}
    # vLLM's fields are what made transformers serve answer 422
    vllm = get_engine("vllm").fixed_length_fields(32)
    assert set(vllm) == {"ignore_eos", "min_tokens"}
    assert not set(vllm) & set(fields["/v1/completions"]["accepted"])
    assert "stream_options" in fields["/v1/completions"]["ignored"]
    assert WorkloadSpec().kind == "random"


def test_paths() -> None:
    assert SPEC.health_path == "/health"
    assert (SPEC.tokenize_path, SPEC.version_path, SPEC.metrics_path) == (None, None, None)


# ---------------------------------------------------------------- logs


EXPECTED = {
    "transformers-5.17.0_tiny-cpu_serve-verify-422.log": {
        "ready": 1,
        "sequential_generation": 6,
        "request_rejected": 3,
    },
    "transformers-5.17.0_tiny-cpu_no-accelerate.log": {"accelerate_missing": 1},
    "transformers-5.17.0_missing-model-path.log": {"model_not_found": 2},
    "transformers-5.17.0_bad-attn-implementation.log": {"bad_attn_implementation": 1},
    "transformers-5.17.0_tiny-cpu_port-in-use.log": {"address_in_use": 1},
    "transformers-5.17.0_tiny-cpu_cb-small-cache.log": {
        "ready": 1,
        "continuous_batching": 4,
        "cuda_graphs_off": 1,
    },
    "transformers-5.17.0_tiny-cpu_cb-worker-dead.log": {
        "ready": 1,
        "continuous_batching": 2,
        "cb_cache_too_large": 3,
    },
    "transformers-5.17.0_random-test-cpu_inferlab-run_cb-graphs.log": {
        "ready": 1,
        "continuous_batching": 22,
        "cuda_graphs_off": 1,
    },
    "transformers-5.17.0_random-test-cpu_inferlab-run_cb-worker-dead.log": {
        "ready": 1,
        "continuous_batching": 6,
        "cb_cache_too_large": 2,
    },
    # the H200 run (benchmarks/results/h200-transformers.md): eager attention on packed batches
    # with the KV cache at 0.99 of free memory died of CUDA OOM at C=32
    "transformers-5.17.0_h200_random-1b_cb-eager-oom.log": {
        "ready": 1,
        "continuous_batching": 468,
        "cuda_oom": 2,
    },
}


def test_every_fixture_log_is_expected() -> None:
    assert sorted(p.name for p in FIX.glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_signatures_on_real_logs(name: str) -> None:
    assert _kinds(name) == EXPECTED[name]


def test_ready_is_uvicorn_running_not_startup_complete() -> None:
    text = (FIX / "transformers-5.17.0_tiny-cpu_port-in-use.log").read_text()
    assert "Application startup complete" in text  # printed before the bind failed
    matches = classify_log(text, SPEC)
    assert not any(m.ready for m in matches)
    hit = primary_failure(matches)
    assert hit is not None and hit.kind == "address_in_use" and hit.fatal


def test_cuda_oom_from_torch_text_gets_the_transformers_remedy() -> None:
    line = next(ln for ln in OOM_LOG.read_text().splitlines() if "torch.OutOfMemoryError" in ln)
    (m,) = classify_log(line, SPEC)
    assert (m.kind, m.fatal) == ("cuda_oom", True)
    assert "--cb-max-memory-percent" in m.remedy and "sdpa" in m.remedy
    assert "--cb-max-memory-percent" in m.flags
    # as the batching worker logs it, the OOM is the root cause, not "worker died"
    text = (
        "2026-12-01 08:30:46,981 - ContinuousBatchingLogger - ERROR - Error in generation loop: "
        + line.split("torch.OutOfMemoryError: ", 1)[1]
        + "\nCB worker is dead and cannot accept request 1: CUDA out of memory."
    )  # constructed from the two real formats (worker-dead fixture, torch's text)
    hit = primary_failure(classify_log(text, SPEC))
    assert hit is not None and hit.kind == "cuda_oom"


def test_the_h200_out_of_memory_is_classified_from_torch_text() -> None:
    from inferlab.engines.logs import primary_failure

    text = (FIX / "transformers-5.17.0_h200_random-1b_cb-eager-oom.log").read_text()
    hit = primary_failure(m for m in classify_log(text, SPEC) if m.fatal)
    assert hit is not None and hit.kind == "cuda_oom"
    assert "Tried to allocate 7.81 GiB" in hit.text and "139.80 GiB" in hit.text
    assert "--cb-max-memory-percent" in hit.remedy and "sdpa" in hit.remedy
