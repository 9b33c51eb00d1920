"""A real vLLM (CPU build) campaign that captures and analyzes a trace of its own: launched
with ``--profiler-config``, profiled at C=1 in a separate pass, analyzed in CPU mode, checked
against sums of the same trace's events computed here (``cputrace``).

Marked ``vllm``: the first run builds the vLLM CPU venv under ~/.cache/inferlab (minutes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.campaign.runner import run_campaign
from inferlab.models import write_tiny_model
from inferlab.report.data import build_report
from inferlab.report.render import render_markdown
from inferlab.store import Store
from support.cputrace import cpu_facts
from support.vllmcamp import campaign_head, kept_env

pytestmark = pytest.mark.vllm


def _campaign(tmp: Path, python: Path, model: Path, env: dict[str, str]) -> Path:
    keep = kept_env(env)
    p = tmp / "vllm.toml"
    p.write_text(f"""{campaign_head("vllm-capture", tmp / "out", python, model, keep)}
[[config]]
name = "baseline"

[verify]
probes = [{{ prompt = "Capital of France in one word?", expect = '\\S' }}]

[load]
workload = {{ kind = "random", input_tokens = 32, output_tokens = 160 }}
concurrency = [1]
requests = 3
tokenizer = "{model}"

[profile]
at = ["C=1"]
steps = 12
""")
    return p


@pytest.mark.timeout(900)
def test_vllm_cpu_campaign_captures_and_analyzes_its_own_trace(tmp_path: Path) -> None:
    import inferlab.envs.vllm_cpu as envmod

    python = Path(envmod.ensure_vllm_cpu())
    model = tmp_path / "tiny"
    write_tiny_model(model)
    path = _campaign(tmp_path, python, model, envmod.vllm_env({}))
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store)
        (out,) = res.outcomes
        assert out.status == "measured", out
        assert "profiled C=1: 1 rank trace(s)" in out.message, out.message
        (row,) = store.analyses("profile", campaign="vllm-capture")
        measured = store.runs(campaign="vllm-capture")
        every = store.runs(campaign="vllm-capture", purpose=None)
        (launch,) = store.db.execute(
            "SELECT detail_json FROM verifications WHERE kind = 'launch' AND passed = 1"
        ).fetchone()
        md = render_markdown(build_report(store, "vllm-capture"))
    assert [r.label for r in measured] == ["C=1"] and len(every) == 2  # + the profiled pass
    assert "--profiler-config" in json.loads(launch)["profiling"]
    p, cap = row["data"], row["data"]["capture"]
    trace = Path(cap["path"])
    assert trace.is_file() and trace.parent == tmp_path / "out" / "profiles" / "baseline"
    assert "async_llm" not in trace.name and trace.name.endswith(".pt.trace.json.gz")
    assert cap["engine"] == "vllm" and cap["mode"] == "cpu" and cap["simulated"] is False
    assert cap["point"] == "C=1" and cap["rank"] == 0 and cap["ranks"] == 1
    facts = cpu_facts(trace)
    assert facts["steps"] == len(p["steps"]) >= 8
    # the categories sum to the step time; ops no rule names stay small
    total = sum(r["time_us"] for r in p["categories"])
    assert total == pytest.approx(p["span_us"], rel=0.05)
    other = sum(r["time_us"] for r in p["categories"] if r["name"] == "other")
    assert other < 0.25 * p["span_us"]
    # the largest category, against the same trace's events summed here
    cats = {r["name"]: r["time_us"] for r in p["categories"]}
    largest = p["categories"][0]["name"]
    expected = {
        "waiting (between steps)": facts["waiting_us"],
        "framework (in step, no op)": facts["framework_us"],
        "dense_gemm": facts["onednn_mm_us"],
    }
    assert largest in expected, (largest, cats)
    assert cats[largest] == pytest.approx(expected[largest], rel=0.02)
    assert cats["dense_gemm"] == pytest.approx(facts["onednn_mm_us"], rel=1e-6)
    assert "### baseline at C=1: rank 0" in md and "CPU mode" in md
