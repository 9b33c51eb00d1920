"""A campaign of reference-engine configs (real processes) leaves no planted secret in its
store, logs or output."""

from __future__ import annotations

from pathlib import Path

from inferlab.store import Store
from inferlab.store.checks import LeverCheck
from support.campaign import write_campaign


def test_a_campaign_leaves_no_planted_secret_behind(tmp_path: Path) -> None:
    from inferlab.campaign.drivers.runner import run_campaign

    engine = {
        "args": ["--ttft-ms", "5"],
        "env": {"HF_TOKEN": "hf_plantedplantedplanted00", "NCCL_PROTO": "LL"},
        "ready_timeout_s": None,
        "stop_grace_s": None,
    }
    configs = [
        {"name": "baseline"},
        {"name": "chunks", "set": {"--tokens-per-chunk": "2"}},
        # the client has no key: verify fails
        {"name": "keyed", "args": ["--api-key", "sk-planted-0123456789abcdef"]},
    ]
    path = write_campaign(
        tmp_path / "c.toml",
        name="sec",
        engine=engine,
        config=configs,
        verify={"probes": [{"prompt": "hi", "expect": r"\w"}]},
        load={"workload": None, "requests": 2},
    )
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store)
        tables = [
            r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        dump = "\n".join(
            repr(row) for t in tables for row in store.db.execute(f"SELECT * FROM {t}")
        )
        levers = store.verifications.latest_of(LeverCheck, "sec", "chunks", "lever")
    status = {o.config: o.status for o in res.outcomes}
    assert status == {"baseline": "measured", "chunks": "measured", "keyed": "verify-failed"}
    assert "sk-planted" not in dump and "hf_planted" not in dump
    assert '"--tokens-per-chunk","2"' in dump  # the lever keeps its value
    assert levers is not None and levers.items[0].status == "applied", levers
    # a server log holds the server's own output (it echoes its argv, as engines do); the lines
    # inferlab writes into it carry no secret
    for log in (tmp_path / "out" / "logs").glob("*.log"):
        ours = [ln for ln in log.read_text().splitlines() if ln.startswith("# inferlab")]
        assert ours and not any("sk-planted" in ln for ln in ours), ours
    assert all("sk-planted" not in o.message + " ".join(o.log_tail) for o in res.outcomes)
