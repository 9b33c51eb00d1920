"""The store's lookups (issue 27): configs, the cells a config measured, its verifications and
analyses, read back as typed rows."""

from __future__ import annotations

from pathlib import Path

from inferlab.store import Store
from inferlab.store.checks import LaunchRecord
from support.stored import add_run, profile_body


def _config(store: Store, name: str, argv: list[str]) -> int:
    with store.transaction():
        return store.config_id(store.campaign_id("c"), name, engine="vllm", model="m", argv=argv)


def test_configs_are_typed_rows_oldest_first_secrets_removed(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        add_run(store)
        _config(store, "cand", ["--tp", "4"])
        _config(store, "cand", ["--tp", "8"])  # new content of the name: a new row
        rows = store.configs("c")
        assert [(g.name, g.argv[-1]) for g in rows] == [("base", "2"), ("cand", "4"), ("cand", "8")]
        assert "sk-SECRET-ARG" not in rows[0].argv and rows[0].env["NCCL_PROTO"] == "LL"
        assert store.configs.latest("c", "cand") == (rows[2].id, "vllm")
        assert store.configs.config_names("c") == ["base", "cand"]
        assert store.configs.names() == ["c"] and store.configs("nope") == []


def test_measured_cells_and_points_leave_out_interrupted_and_rejected(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        add_run(store, "C=1", 0)
        add_run(store, "C=1", 1, interrupted=True)
        add_run(store, "C=2", 0, rejected="too few requests")
        add_run(store, "C=1", 0, purpose="recheck")
        gid = store.configs.latest("c", "base")
        assert gid is not None
        assert store.runs.measured_cells("c", gid[0]) == {("C=1", 0)}
        pts = store.runs.measured_points(gid[0])
        assert [(p.label, p.trial, p.purpose) for p in pts] == [
            ("C=1", 0, "measure"),
            ("C=1", 0, "recheck"),
        ]
        assert pts[0].summary == {"ok": 1, "output_tok_s": 5.0}


def test_verifications_by_kind_and_config(tmp_path: Path) -> None:
    item = {"item": "x", "kind": "flag", "status": "applied", "evidence": "e", "source": None}
    with Store(tmp_path / "x.db") as store:
        base = _config(store, "base", [])
        cand = _config(store, "cand", [])
        store.add_verification(base, "launch", True, {"log_path": "/a.log"})
        store.add_verification(cand, "lever", True, {"items": [item]})
        store.add_verification(base, "launch", False, {"log_path": "/b.log"})
        got = store.verifications.launches("c", config="base")
        assert [(v.passed, v.detail.log_path) for v in got] == [(True, "/a.log"), (False, "/b.log")]
        assert [v.kind for v in store.verifications("c")] == ["launch", "lever", "launch"]
        assert store.verifications.configs("c", "lever") == ["cand"]
        latest = store.latest_verification("c", "base", "launch")
        assert latest == LaunchRecord(log_path="/b.log")
        assert latest is not None and latest.to_json() == {"log_path": "/b.log"}
        assert store.latest_verification("c", "cand", "lever", config_hash="other") is None
        (lever,) = store.verifications.lever_checks("c")
        assert lever.detail.items[0].status == "applied"


def test_profiles_and_their_captures(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        gid = _config(store, "base", [])
        captured = profile_body(capture={"point": "C=1"})
        store.add_analysis("profile", "p", captured, campaign="c", config_id=gid)
        store.add_analysis("profile", "q", profile_body(mode="gpu"), campaign="c", config_id=gid)
        assert [c.point for c in store.analyses.captures(gid)] == ["C=1"]
        got = store.analyses.profiles("c")
        assert [(p.name, p.config, p.data.capture) for p in got][1] == ("q", "base", None)
        assert got[0].data.capture is not None and got[0].data.to_json() == captured
