"""The demo's quote-and-edit workload: a jsonl file the prompt loader reads, each prompt
carrying the text its answer copies; and the campaign that serves it plans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.campaign.drivers.demo import EXAMPLES
from inferlab.campaign.parts.demo_prompts import PASSAGES, TASKS, write_quote_prompts
from inferlab.campaign.parts.plan import make_plan, render_plan
from inferlab.config.bench import WorkloadSpec
from inferlab.load.workload import make_prompts


def test_the_prompts_are_a_jsonl_workload_of_passages_to_copy(tmp_path: Path) -> None:
    path = write_quote_prompts(tmp_path / "q.jsonl")
    lines = path.read_text().splitlines()
    assert len(lines) == len(PASSAGES) * len(TASKS) == 32
    spec = WorkloadSpec(kind="jsonl", path=path, output_tokens=64)
    prompts = make_prompts(spec, 32, None)
    assert len(prompts) == 32 and all(p.messages and p.output_tokens == 64 for p in prompts)
    first = json.loads(lines[0])["messages"][0]["content"]
    assert first.startswith(TASKS[0]) and first.endswith(PASSAGES[0])
    mtime = path.stat().st_mtime_ns
    write_quote_prompts(path)  # the same bytes: not rewritten
    assert path.stat().st_mtime_ns == mtime


def test_the_quote_campaign_plans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERLAB_VLLM_PYTHON", "/venv/bin/python")
    monkeypatch.setenv("INFERLAB_SMOLLM2_MODEL", "/m/smollm2")
    monkeypatch.setenv("INFERLAB_QUOTE_PROMPTS", str(write_quote_prompts(tmp_path / "q.jsonl")))
    plan = make_plan(EXAMPLES / "vllm-cpu-quote.toml")
    text = "\n".join(render_plan(plan))
    assert [c.name for c in plan.configs] == ["baseline", "ngram"]
    assert plan.cells == 2 and "vs baseline" in text and "${" not in text
