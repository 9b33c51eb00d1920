"""A campaign with a sessions workload (``[load] sessions``) on the reference engine, with its
prefix cache off and on: every consumer sees the ``sessions:UxT`` point (run, compare, the
report's TTFT-by-turn section with the engine's hit rate). Servers on threads of this process,
read on the model clock; real HTTP on loopback, real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.report.compare import build_comparison
from inferlab.report.sections.sessions import session_rows, sessions_section
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support.campaign import write_campaign

USERS, TURNS, IN, OUT = 2, 3, 24, 8


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sessions")
    tok = WordTokenizer().save_hf(tmp / "tok")
    path = write_campaign(
        tmp / "sessions.toml",
        name="sessions",
        args=["--model-mode", "batching", "--time-scale", "0.05"],
        config=[{"name": "baseline"}, {"name": "cache", "args": ["--prefix-cache"]}],
        load={
            "workload": {"input_tokens": IN, "output_tokens": OUT},
            "endpoint": "chat",
            "concurrency": None,
            "requests": None,
            "sessions": [f"{USERS}x{TURNS}"],
            "tokenizer": tok,
        },
    )
    out = tmp / "s.db"
    with Store(out) as store:
        res = run_campaign(path, store=store, launcher=InProcessSim(), clock=ModelClock())
    assert [o.status for o in res.outcomes] == ["measured", "measured"], [
        (o.config, o.message) for o in res.outcomes
    ]
    return out


def test_the_report_shows_ttft_by_turn_and_the_hit_rate_of_each_config(db: Path) -> None:
    with Store(db) as store:
        rows = session_rows(store, "sessions")
        section = sessions_section(store, "sessions")
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        (c, f"sessions:{USERS}x{TURNS}", str(t + 1), str(USERS))
        for c in ("baseline", "cache")
        for t in range(TURNS)
    ]
    assert [r[6] for r in rows] == [str((t + 1) * IN + t * OUT) for t in range(TURNS)] * 2
    sent = sum((t + 1) * IN + t * OUT for t in range(TURNS))
    hit = sum((t * (IN + OUT)) // 16 * 16 for t in range(1, TURNS)) / sent
    assert [r[7] for r in rows if r[3] == "1"] == ["0.0%", f"{hit:.1%}"]
    assert section is not None and "| cache | sessions:2x3 | 0 | 2 |" in section.markdown


def test_compare_judges_the_sessions_point_like_any_other(db: Path) -> None:
    label = f"sessions:{USERS}x{TURNS}"
    with Store(db) as store:
        c = build_comparison(store, campaign="sessions", baseline="baseline")
    assert c.labels == [label]
    assert set(c.cells[("cache", label)].verdicts) >= {"ttft_ms", "tpot_ms", "output_tok_s"}
