"""The shipped campaign files validate, resolve and plan; ${VAR} expansion."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.drivers.demo import EXAMPLES
from inferlab.campaign.parts.plan import make_plan, render_plan

ENV = {
    "INFERLAB_VLLM_PYTHON": "/venv/bin/python",
    "INFERLAB_TINY_MODEL": "/m/tiny",
    "INFERLAB_SMOLLM2_MODEL": "/m/smollm2",
    "INFERLAB_CPU_PRELOAD": "/venv/lib/libiomp5.so",
    "MODEL_DIR": "/models/dsv4",
    "MODEL": "llama",
    "TOKENIZER_DIR": "/tok",
    "EAGLE": "/eagle",
    "INFERLAB_GPU_MODEL": "/m/1b",
    "INFERLAB_TRANSFORMERS_PYTHON": "/opt/py/bin/python3",
    "INFERLAB_SERVE_PYTHONPATH": "/tmp/site",
}


@pytest.mark.parametrize(
    "name",
    [
        "vllm-cpu.toml",
        "sglang-dsv4-mtp.toml",
        "vllm-spec-decode.toml",
        "transformers-serve.toml",
        "transformers-gpu.toml",
    ],
)
def test_examples_plan(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    plan = make_plan(EXAMPLES / name)
    text = "\n".join(render_plan(plan))
    assert plan.cells >= 6 and "vs baseline" in text
    assert "${" not in text


def test_seed_campaign_tunes_its_files(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    plan = make_plan(EXAMPLES / "sglang-dsv4-mtp.toml")
    by = {c.name: c for c in plan.configs}
    assert by["A"].tune == {"fp8_gemm": "from-log"} and by["B"].tune_owner == {"fp8_gemm": "A"}
    assert "SGLANG_FP8_CONFIG_DIR" not in by["A"].env and by["A"].env["NCCL_PROTO"] == "LL"
    text = "\n".join(render_plan(plan))
    assert "tune fp8_gemm: from-log" in text and "env NCCL_PROTO=LL; files fp8_gemm" in text


def test_transformers_serve_is_a_command(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    plan = make_plan(EXAMPLES / "transformers-serve.toml")
    text = "\n".join(render_plan(plan))
    assert "argv: transformers serve llama --host 127.0.0.1 --port <free>" in text
    assert plan.configs[1].api == "openai" and plan.bench.endpoint == "chat"


def test_demo_campaign_levers(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    plan = make_plan(EXAMPLES / "vllm-cpu.toml")
    by = {c.name: c for c in plan.configs}
    assert [c.name for c in plan.configs] == ["baseline", "bf16", "fp8-kv", "ngram"]
    bf16 = by["bf16"].args
    assert bf16.count("--dtype") == 1 and bf16[bf16.index("--dtype") + 1] == "bfloat16"
    assert by["fp8-kv"].args[-2:] == ["--kv-cache-dtype", "fp8"]
    assert not by["bf16"].lossless and not by["fp8-kv"].lossless and by["ngram"].lossless
    gate = plan.campaign.verify.lossy
    assert gate is not None and (gate.max_kl, gate.min_top1, gate.top_k) == (0.01, 0.98, 1024)
    base = by["baseline"].args  # the reference's logprobs reach the gate's top-k
    assert base[base.index("--max-logprobs") + 1] == "1024"
    assert "--speculative-config" in by["ngram"].args
    assert plan.campaign.engine.model == "/m/smollm2"  # the trained model, held to real answers
    probes = plan.campaign.verify.probes or []
    assert [p.expect for p in probes][:2] == ["(?i)paris", "(?i)tokyo"] and len(probes) == 3
    assert [p.label for p in plan.points] == ["C=1", "C=8"]
    assert plan.campaign.load.requests == "auto" and plan.campaign.load.sequential
    load = plan.campaign.load  # the launch is the unit: A B B A, up to 4 while unsettled
    assert (load.launches, load.max_launches, load.interleave) == (2, 4, False)
    assert "VLLM_CPU_NUM_OF_RESERVED_CPU" not in plan.campaign.engine.env  # the split sets it
    prof = plan.campaign.profile
    assert prof is not None and prof.at == ["C=1"] and prof.configs == ["baseline", "ngram"]
    text = "\n".join(render_plan(plan))
    assert text.count("profiling on (--profiler-config") == 2


def test_sim_demo_profiles_the_seed_points() -> None:
    plan = make_plan(EXAMPLES / "sim-dsv4.toml")
    prof = plan.campaign.profile
    assert prof is not None and prof.at == ["C=1", "C=16"] and prof.configs == ["baseline", "A"]
    assert "profiling on (SGLANG_TORCH_PROFILER_DIR=" in "\n".join(render_plan(plan))


def test_the_optimize_demo_launches_what_its_trial_names_say(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``demo --optimize``'s space on vLLM: the n-gram draft length fills the JSON of
    ``--speculative-config`` (off: the flag left out), chunked prefill off is the bare flag."""
    from inferlab.search.driver import search_plan
    from inferlab.search.space import Space
    from inferlab.search.trials import Trials
    from inferlab.store import Store

    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    plan, section = search_plan(EXAMPLES / "optimize-vllm-cpu.toml")
    space = Space(tuple(section.dim), plan.campaign.config[0])
    assert space.size() == 4 * 4 * 5 * 2
    on = space.config(1, {"--max-num-seqs": 16, "--max-num-batched-tokens": 512,
                          "--speculative-config": 2, "--no-enable-chunked-prefill": True})  # fmt: skip
    off = space.config(2, {"--max-num-seqs": 128, "--max-num-batched-tokens": 2048,
                           "--speculative-config": False, "--no-enable-chunked-prefill": False})  # fmt: skip
    assert (
        on.name == "t01-mns16-mnbt512-k2-nocpon" and off.name == "t02-mns128-mnbt2048-koff-nocpoff"
    )
    with Store(tmp_path / "db") as store:
        trials = Trials(plan, section, store, lambda p: {}, list(plan.campaign.config))
        trials.add([on], "baseline")
        trials.add([off], "baseline")
        argv = {
            c.name: next(
                x for x in render_plan(trials.derived("baseline", [c.name])) if "argv:" in x
            )
            for c in (on, off)
        }
    spec = (
        '{"method":"ngram","num_speculative_tokens":2,"prompt_lookup_max":3,"prompt_lookup_min":1}'
    )
    assert argv[on.name].endswith(
        f"--max-num-seqs 16 --max-num-batched-tokens 512 --speculative-config '{spec}' "
        "--no-enable-chunked-prefill"
    ), argv
    assert argv[off.name].endswith("--max-num-seqs 128 --max-num-batched-tokens 2048"), argv


def test_the_gpu_smollm2_table_gates_both_fp8_levers_on_a_third_of_the_vocabulary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``examples/vllm-h200-smollm2.toml`` (issue 43): the trained model in bf16 against
    dynamic FP8 weights and an FP8 KV cache, real answers, the gate's top-k served."""
    for k, v in {**ENV, "INFERLAB_GPU_SMOLLM2": "/m/smollm2-bf16"}.items():
        monkeypatch.setenv(k, v)
    plan = make_plan(EXAMPLES / "vllm-h200-smollm2.toml")
    text = "\n".join(render_plan(plan))
    assert [c.name for c in plan.configs] == ["bf16", "fp8", "fp8-kv"]
    assert "vs bf16: + --quantization fp8" in text and "vs bf16: + --kv-cache-dtype fp8" in text
    assert text.count("lossy gate: KL ≤ 0.01 nats/token, top-1 ≥ 98.00%") == 2
    lossy = plan.campaign.verify.lossy
    assert lossy is not None and lossy.top_k == 16384
    assert "--max-logprobs 16384" in text  # the engine serves the gate's top-k
    assert any("paris" in p.expect.lower() for p in plan.campaign.verify.probes)
