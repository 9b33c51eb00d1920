"""What a campaign records after a server stops (``campaign.parts.aftermath``): the stop check
with the GPU memory drain, and a runtime failure classified from the server's log."""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.campaign.context import ConfigOutcome
from inferlab.campaign.parts.aftermath import (
    record_runtime,
    record_stop,
    runtime_failure,
    stop_message,
)
from inferlab.engines import get_engine
from inferlab.server import StopReport
from inferlab.server.gpumem import GpuDrain
from support import FIXTURES


def test_stop_check_fails_when_memory_does_not_come_back(tmp_path: Path) -> None:
    from inferlab.store import Store

    rep = StopReport("SIGTERM", 0, 2.1, True, "drained")
    held = GpuDrain([600], [6_000], [128_000], [90_000], False, 60.0, 256)
    back = GpuDrain([600], None, [128_000], [610], True, 1.8, 256)
    assert stop_message(rep, None) == "SIGTERM after 2.1 s, port free; GPU drained"
    with Store(tmp_path / "db") as store:
        with store.transaction():
            cid = store.campaign_id("c")
            gid = store.config_id(cid, "a", engine="vllm", model="m", argv=[], env={})
        assert not record_stop(store, gid, rep, held)
        assert record_stop(store, gid, rep, back)
        rows = store.db.execute(
            "SELECT passed, detail_json FROM verifications WHERE kind = 'stop' ORDER BY id"
        ).fetchall()
    assert [r[0] for r in rows] == [0, 1]
    detail = json.loads(rows[1][1])
    assert detail["gpu_memory"]["after_mib"] == [610]
    assert detail["message"].endswith("610 MiB after (returned in 1.8 s)")


# --- a transformers server's runtime failure, classified from its log after the stop


FIX = FIXTURES / "transformers"
SPEC = get_engine("transformers")


def test_runtime_failure_is_classified_and_reported(tmp_path: Path) -> None:
    from inferlab.report.data import build_report
    from inferlab.store import Store

    dead = FIX / "transformers-5.17.0_random-test-cpu_inferlab-run_cb-worker-dead.log"
    fail = runtime_failure(SPEC, dead)
    assert fail is not None and fail.kind == "cb_cache_too_large"
    assert fail.message.startswith("cb_cache_too_large while serving (log line 435): ")
    assert "Memory footprint 91955202383872" in fail.message and "--cb-num-blocks" in fail.remedy
    assert any("Error in generation loop" in ln for ln in fail.tail)
    ok = FIX / "transformers-5.17.0_random-test-cpu_inferlab-run_cb-graphs.log"
    assert runtime_failure(SPEC, ok) is None
    assert runtime_failure(SPEC, tmp_path / "missing.log") is None
    with Store(tmp_path / "db") as store:
        with store.transaction():
            cid = store.campaign_id("c")
            gid = store.config_id(cid, "oom", engine="transformers", model="/m", argv=[], env={})
        record_runtime(store, gid, fail)
        rep = build_report(store, "c")
    (lf,) = rep.launch_failures
    assert (lf.config, lf.kind) == ("oom", "cb_cache_too_large (while serving)")
    assert lf.remedy == fail.remedy and lf.log_path == str(dead)


def test_a_runtime_failure_fails_a_measured_config_and_keeps_what_was_said() -> None:
    # one rule for both drivers (campaign.pipeline on one host, cluster.task under Ray)
    out = ConfigOutcome("a", "measured", "x" * 400)
    out.failed_by("cuda_oom while serving (log line 9): OOM", "lower --max-num-seqs", ["t"])
    assert out.status == "failed" and out.remedy == "lower --max-num-seqs"
    assert out.message == "cuda_oom while serving (log line 9): OOM — " + "x" * 300 + "…"
    stopped = ConfigOutcome("b", "interrupted")
    stopped.failed_by("boom", None, [])
    assert stopped.status == "interrupted" and stopped.message == "boom"
