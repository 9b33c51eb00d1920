"""Multi-turn sessions against the reference engine: every turn resends the history with the
last answer in it, the store keeps each request's conversation and turn, the engine's prefix
cache serves the history, and ``bench`` reports TTFT by turn."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from inferlab.config.pattern import LoadPattern, Sessions
from inferlab.errors import ConfigError
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support.cli import Cli
from support.simproc import SimFactory

USERS, TURNS, IN, OUT = 3, 4, 24, 8


def _bench(cli: Cli, sim_url: str, tmp_path: Path, *extra: str) -> dict[str, object]:
    tok = WordTokenizer().save_hf(tmp_path / "tok")
    p = cli(
        "bench", "--url", sim_url, "--engine", "sim", "--endpoint", "chat",
        "--sessions", f"{USERS}x{TURNS}", "--input-tokens", str(IN), "--output-tokens", str(OUT),
        "--tokenizer", str(tok), "--format", "json", *extra,
        env={"INFERLAB_DB": str(tmp_path / "t.db")},
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    doc: dict[str, object] = json.loads(p.stdout)
    return doc


@pytest.mark.parametrize("cache", [True, False])
def test_turns_resend_the_history_and_the_cache_serves_it(
    sim_server: SimFactory, cli: Cli, tmp_path: Path, cache: bool
) -> None:
    sim = sim_server("--model-mode", "batching", *(["--prefix-cache"] if cache else []))
    doc = _bench(cli, sim.url, tmp_path)
    (point,) = doc["points"]  # type: ignore[misc]
    assert point["label"] == f"sessions:{USERS}x{TURNS}"
    turns = point["turns"]
    assert [t["turn"] for t in turns] == list(range(TURNS))
    assert all(t["requests"] == USERS and t["failed"] == 0 for t in turns)
    # turn t sends t+1 user messages and the t answers before it, as the engine counted them
    assert [t["prompt_tokens_mean"] for t in turns] == [
        (t + 1) * IN + t * OUT for t in range(TURNS)
    ]
    with Store(tmp_path / "t.db") as st:
        (run,) = st.runs()
        reqs = st.requests(run.id)
        server = run.summary["server"]
    assert sorted((r.session, r.turn) for r in reqs) == [
        (u, t) for u in range(USERS) for t in range(TURNS)
    ]
    for u in range(USERS):  # a user's turns one after another: each starts after the last ended
        mine = sorted((r for r in reqs if r.session == u), key=lambda r: r.turn or 0)
        assert all(a.end_ns <= b.send_ns for a, b in itertools.pairwise(mine))
    sent = sum((t + 1) * IN + t * OUT for t in range(TURNS)) * USERS
    assert server["prefix_cache_queries"] == sent
    if cache:  # turn t finds the whole 16-token blocks of turn t-1's prompt and answer
        hit = sum((t * (IN + OUT)) // 16 * 16 for t in range(1, TURNS)) * USERS
        assert server["prefix_cache_hit_rate"] == pytest.approx(hit / sent)
        assert "#cached-token: 0" not in sim.stderr().split("#new-seq")[-1]
    else:
        assert server["prefix_cache_hit_rate"] == 0.0


def test_a_sessions_label_round_trips_and_bad_input_is_named(cli: Cli) -> None:
    p = Sessions(4, 8, think_s=0.5)
    assert p.label == "sessions:4x8" and p.streams == 4
    assert LoadPattern.from_json(p.to_json()) == p
    assert LoadPattern.parse("sessions:4x8") == Sessions(4, 8)
    with pytest.raises(ConfigError, match="sessions:UxT"):
        LoadPattern.parse("sessions:4")
    res = cli("bench", "--url", "http://127.0.0.1:1", "--sessions", "4by8")
    assert res.exit_code == 2
    assert "--sessions: expected USERSxTURNS (e.g. 4x8), got '4by8'" in res.stderr
    res = cli("bench", "--url", "http://127.0.0.1:1", "--sessions", "2x2", "--requests", "auto")
    assert res.exit_code == 2 and "a sessions point sends users × turns requests" in res.stderr
