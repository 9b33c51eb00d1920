"""A config's files step on the node of its server (``cluster.nodefiles``), without a cluster:
the campaign's own step installs and restores, its rows come back to be stored by the driver;
the driver sends the baseline's log and lets a config that installs files run alone."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from inferlab.campaign.parts.files import check_files
from inferlab.campaign.parts.launch import config_row
from inferlab.campaign.parts.plan import make_plan
from inferlab.campaign.parts.resolve import resolve_configs
from inferlab.cluster.campaign import _may_place, _needs
from inferlab.cluster.nodefiles import NodeFiles, sent, take
from inferlab.cluster.task import State
from inferlab.config.campaign import load_campaign
from inferlab.sim.presets import get_preset
from inferlab.store import Store
from inferlab.store.models import FilesManifest
from support.campaign import write_campaign
from support.campaigns import files
from support.pkgcopy import tuned_dir


def test_the_step_installs_restores_and_its_rows_reach_the_store(
    tmp_path: Path, engine_python: Path, configs_dir: Path
) -> None:
    tuned_dir(
        tmp_path / "tuned", get_preset("generic").fp8_gemm_shapes[:2], "NVIDIA H100 80GB HBM3"
    )
    path = write_campaign(tmp_path / "c.toml", **files(engine_python))
    camp = load_campaign(path)
    base, cfg = resolve_configs(camp, path)[:2]
    node = NodeFiles(camp, cfg)
    lines: list[str] = []
    with Store(tmp_path / "db") as store:
        with store.transaction():
            gid = config_row(store, camp, cfg)
        got = node.install(base, gid, check_files(cfg, cfg.name), None)  # as the driver sent them
        assert got.error is None and got.installed is not None
        assert sorted(p.name for p in configs_dir.iterdir()) == sorted(
            p.name for p in (tmp_path / "tuned").iterdir()
        )
        assert [r.config_id for r in got.rows] == [gid] and got.rows[0].data["state"] == "installed"
        take(store, got, lines.append)
        back = node.restore()
        take(store, back, lines.append)
        assert node.restore().rows == []  # restored once
        states = [a.data.state for a in store.analyses.of(FilesManifest, "files", "files")]
    assert not configs_dir.exists() and states == ["installed", "restored"]
    assert "A: files fp8_gemm: 2 file(s) into" in lines[0] and "as before" in lines[1], lines


class _Run:
    """What the driver's gate reads of a ``ConfigRun``."""

    def __init__(self, name: str, installs: bool, ref: Any) -> None:
        self.name, self.state, self.reference = name, State.NEW, ref
        self.ab_reference = None
        self.cfg = SimpleNamespace(files={"fp8_gemm": "x"} if installs else {}, tune={})


def _run(name: str, installs: bool = False, ref: Any = None) -> Any:
    return _Run(name, installs, ref)


def test_a_config_that_installs_files_runs_alone() -> None:
    base = _run("base")
    a, f, b = _run("a", ref=base), _run("f", installs=True, ref=base), _run("b", ref=base)
    names = lambda runs: sorted(r.name for r in _may_place(runs, "base"))  # noqa: E731
    assert names([a, f, b, base]) == ["a", "base"]  # the reference first; f waits, b after it
    base.state = a.state = State.MEASURING
    assert names([a, f, b, base]) == []
    base.state = a.state = State.DONE
    assert names([a, f, b, base]) == ["f"]
    f.state = State.ENTERING  # its files stage on the way in
    assert names([a, f, b, base]) == []  # nothing beside it
    f.state = State.DONE
    assert names([a, f, b, base]) == ["b"]


def test_the_driver_sends_the_files_and_the_baselines_log(
    tmp_path: Path, engine_python: Path
) -> None:
    tuned_dir(
        tmp_path / "tuned", get_preset("generic").fp8_gemm_shapes[:1], "NVIDIA H100 80GB HBM3"
    )
    t = {"name": "T", "extends": "baseline", "tune": {"fp8_gemm": "from-log"}}
    path = write_campaign(tmp_path / "c.toml", **files(engine_python, t))
    plan = make_plan(path)
    assert set(_needs(plan)) == {"baseline", "A", "T"}  # files and tune run under --ray
    base, a, tuned = plan.configs
    log = tmp_path / "base.log"
    log.write_text("Using default W8A8 Block FP8 kernel config\n")
    with Store(tmp_path / "db") as store:
        assert sent(store, plan.campaign, base, tuned) == (None, None)  # no launch stored yet
        with store.transaction():
            gid = config_row(store, plan.campaign, base)
            store.add_verification(gid, "launch", True, {"log_path": str(log)})
        sets, text = sent(store, plan.campaign, base, a)
        assert text is None and sets is not None and [s.kind for s in sets] == ["fp8_gemm"]
        assert sent(store, plan.campaign, base, tuned) == (None, log.read_text())


class _Call:
    def __init__(self, log: list[str], name: str, value: Any) -> None:
        self.log, self.name, self.value = log, name, value

    def remote(self, *args: Any) -> Any:
        self.log.append(self.name)
        return self.value


class _Ray:
    """Every ref is its value; ``kill`` is noted."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def get(self, ref: Any, timeout: float | None = None) -> Any:
        return ref

    def kill(self, actor: Any) -> None:
        self.log.append("kill")


def test_ctrl_c_stops_the_server_then_restores_its_files(
    tmp_path: Path, engine_python: Path
) -> None:
    from inferlab.campaign.context import CampaignEvents
    from inferlab.campaign.stages import table
    from inferlab.cluster.actors import Launched, Placed
    from inferlab.cluster.nodefiles import FilesDone
    from inferlab.cluster.placement import config_need
    from inferlab.cluster.shared import Shared
    from inferlab.cluster.task import ConfigRun

    tuned_dir(
        tmp_path / "tuned", get_preset("generic").fp8_gemm_shapes[:1], "NVIDIA H100 80GB HBM3"
    )
    plan = make_plan(write_campaign(tmp_path / "c.toml", **files(engine_python)))
    cfg = plan.configs[1]
    calls: list[str] = []
    with Store(tmp_path / "db") as store:
        sh = Shared(_Ray(calls), plan.path, plan.campaign, store, CampaignEvents(), False, "resume")
        run = ConfigRun(sh, cfg, 1, [("C=1", 0)], config_need(cfg, plan.campaign.cluster), 0, 1)
        run.server = SimpleNamespace(
            stop=_Call(calls, "stop", None),
            restore_files=_Call(calls, "restore", FilesDone(cfg, None, [], ["A: files restored"])),
        )
        run.launched = Launched(Placed("n", "h", "ip", 1, None), url="http://x")
        run.walk.entered = [(s, None) for s in table.STAGES[:2]]  # files and server, on the node
        run.interrupt()
    assert calls == ["stop", "restore", "kill"] and run.done and not run.walk.entered
    assert run.outcome is not None and run.outcome.status == "interrupted"
