"""The method on a real engine: vLLM (CPU build) configs launched through ``inferlab up``,
verified, measured with a short stored bench (metrics scraped), stopped; a config that cannot
start is classified from its real log; greedy equivalence between launches.

Marked ``vllm``: the first run builds the vLLM CPU venv under ~/.cache/inferlab (minutes).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from inferlab.campaign.bench import bench_with_record
from inferlab.campaign.up import down, up
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.errors import LaunchError, VerifyError
from inferlab.models import write_tiny_model
from inferlab.store import Store
from support.vllmcamp import campaign_head, kept_env


def _env_module() -> ModuleType:
    import inferlab.envs.vllm_cpu as mod

    return mod


def _campaign(tmp: Path, python: Path, model: Path, env: dict[str, str]) -> Path:
    keep = kept_env(env)
    p = tmp / "vllm.toml"
    p.write_text(f"""{campaign_head("vllm-cpu", tmp / "out", python, model, keep)}
[[config]]
name = "baseline"

[[config]]
name = "seqs4"
extends = "baseline"
set = {{ "--max-num-seqs" = "4" }}

[[config]]
name = "bf16"
extends = "baseline"
set = {{ "--dtype" = "bfloat16" }}

[[config]]
name = "too-long"
extends = "baseline"
set = {{ "--max-model-len" = "100000" }}

[verify]
probes = [{{ prompt = "Capital of France in one word?", expect = '\\S', chat = true }}]
equivalent_to = "baseline"
equivalence_prompts = 4
equivalence_tokens = 32
""")
    return p


@pytest.mark.vllm
@pytest.mark.timeout(1500)
def test_vllm_configs_through_up_verify_bench_down(tmp_path: Path) -> None:
    envmod = _env_module()
    python = Path(envmod.ensure_vllm_cpu())
    model = tmp_path / "tiny"
    write_tiny_model(model)
    path = _campaign(tmp_path, python, model, envmod.vllm_env({}))
    db = tmp_path / "v.db"
    with Store(db) as store:
        base = up(path, "baseline", store=store)
    assert base.verify is not None and base.verify.passed, base.verify
    assert base.model == "tiny"
    try:
        cfg = BenchConfig(
            url=base.url,
            model="tiny",
            engine=None,  # detected: vLLM, so its exact-length fields are sent
            concurrency=[1, 2],
            requests=6,
            tokenizer=model,
            workload=WorkloadSpec(input_tokens=16, output_tokens=24),
        )
        res, run_ids = bench_with_record(cfg, db=db, campaign="vllm-cpu", config="baseline")
    finally:
        stopped = dict(down(path, "baseline"))
    assert stopped["baseline"].port_free
    assert res.engine == "vllm"
    for p in res.points:
        assert p.summary.ok == 6 and p.summary.errors == {}
        assert all(r.usage_completion_tokens == 24 for r in p.records)  # exact lengths
    with Store(db) as store:
        runs = store.runs(run_ids=run_ids)
        n_metrics = store.db.execute(
            "SELECT count(*) FROM server_metrics WHERE name LIKE 'vllm:%'"
        ).fetchone()[0]
    assert n_metrics > 0
    server = runs[-1].summary["server"]
    assert server["failed_scrapes"] == 0 and server["generation_tokens"] >= 6 * 24
    assert 0 <= server["max_running"] <= 2  # a gauge: scrapes every 2 s may miss a 1 s point

    with Store(db) as store:  # the lever is proven by vLLM's own args dump
        seqs = up(path, "seqs4", store=store)
    down(path, "seqs4")
    # a second launch (a lossless lever that cannot bind at one request at a time): its greedy
    # outputs are the baseline's, token for token (this launch once had a config of its own)
    assert seqs.verify is not None
    eq = next(c for c in seqs.verify.checks if c.kind == "equivalence")
    assert eq.passed and eq.detail["match_rate"] == 1.0
    items = {i.item: i for i in seqs.levers}
    assert items["--max-num-seqs"].status == "applied", items
    assert "max_num_seqs=4 in vLLM non-default args" in items["--max-num-seqs"].evidence

    with Store(db) as store, pytest.raises(VerifyError, match="bf16 diverged"):
        up(path, "bf16", store=store)  # random weights in bf16: argmax flips within 32 tokens

    with pytest.raises(LaunchError) as ei:
        up(path, "too-long")
    assert ei.value.kind == "max_model_len_too_large", (ei.value.kind, ei.value.tail[-5:])
    assert ei.value.remedy and "--max-model-len" in ei.value.remedy
