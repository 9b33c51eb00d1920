"""The campaign pipeline (``campaign.pipeline``): stages entered in order and undone in
reverse, also after a failure; a failure is the config's outcome for ``run`` and the command's
error for ``up`` (``RunContext.keep``); a new stage is one entry in the table
(``campaign.stages.table.STAGES``, set here with ``monkeypatch``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from inferlab.campaign import passes
from inferlab.campaign.context import (
    ConfigContext,
    ConfigOutcome,
    CpuSplit,
    Pass,
    RunContext,
    Stage,
    StepFailed,
)
from inferlab.campaign.parts.resolve import resolve_configs
from inferlab.campaign.pipeline import run_config
from inferlab.campaign.stages import table
from inferlab.config.campaign import load_campaign
from inferlab.errors import ConfigError
from support.campaign import write_campaign


def _cx(tmp: Path, keep: bool = False) -> tuple[ConfigContext, list[str]]:
    path = write_campaign(tmp / "c.toml")
    camp = load_campaign(path)
    (cfg,) = resolve_configs(camp)
    told: list[str] = []
    cpus = CpuSplit(None, None, "off", "test")
    run = RunContext(camp, path, cfg, cfg.name, cpus, None, told.append, keep=keep)
    return ConfigContext(run, cfg, None), told


def _stage(name: str, fail: BaseException | None = None) -> Stage:
    @contextlib.contextmanager
    def stage(cx: ConfigContext) -> Iterator[None]:
        cx.say(f"{name} up")
        if fail is not None:
            raise fail
        try:
            yield
        finally:
            cx.say(f"{name} undone")

    return Stage(name, stage)


Run = Callable[..., ConfigOutcome]


@pytest.fixture
def staged(monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run_config(cx, pass_)`` with the stage table set to the stages given."""

    def run(cx: ConfigContext, pass_: Pass, *stages: Stage) -> ConfigOutcome:
        monkeypatch.setattr(table, "STAGES", stages)
        return run_config(cx, pass_)

    return run


def test_stages_run_in_order_and_are_undone_in_reverse(tmp_path: Path, staged: Run) -> None:
    cx, told = _cx(tmp_path)

    def measure(cx: ConfigContext) -> ConfigOutcome:
        cx.say("measured")
        return cx.outcome("measured", "ok")

    out = staged(cx, measure, _stage("a"), _stage("b"))
    assert (out.config, out.status, out.message) == ("baseline", "measured", "ok")
    assert told == ["a up", "b up", "measured", "b undone", "a undone"]


def test_a_failed_stage_is_the_outcome_and_what_started_is_undone(
    tmp_path: Path, staged: Run
) -> None:
    cx, told = _cx(tmp_path)
    failed = StepFailed("verify-failed", "failed verification: probe: no", "fix it", ("l1",))
    out = staged(cx, passes.kept, _stage("a"), _stage("b", failed), _stage("c"))
    assert (out.status, out.message, out.remedy, out.log_tail) == (
        "verify-failed", "failed verification: probe: no", "fix it", ["l1"]
    )  # fmt: skip
    assert told == ["a up", "b up", "a undone"]
    out = staged(cx, passes.kept, _stage("a", ConfigError("bad")))
    assert (out.status, out.message) == ("failed", "bad")
    out = staged(cx, passes.kept, _stage("a", KeyboardInterrupt()))
    assert out.status == "interrupted" and "--resume" in out.message


def test_up_keeps_its_failures_as_errors(tmp_path: Path, staged: Run) -> None:
    cx, told = _cx(tmp_path, keep=True)
    assert staged(cx, passes.kept, _stage("a")).status == "up"
    with pytest.raises(ConfigError, match="bad"):
        staged(cx, passes.kept, _stage("a"), _stage("b", ConfigError("bad")))
    assert told == ["a up", "a undone", "a up", "b up", "a undone"]
