"""``inferlab optimize`` on the reference engine in this process, read on its model clock: the
baseline measured, each trial a stored config measured beside a fresh measurement of the
incumbent by a sequential A/B, failures recorded, the incumbent moved on "better" only, and a
resumed search replaying its stored trials. Real HTTP on loopback, real SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.drivers.runner import run_plan
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.config.search import SearchDim
from inferlab.errors import ConfigError
from inferlab.levers.model import Lever, PointBound
from inferlab.search.driver import TRIAL_KIND, optimize, search_plan
from inferlab.search.prune import bound_dims
from inferlab.search.space import Space
from inferlab.search.trials import Trials
from inferlab.store import Store
from inferlab.store.checks import CheckRecord
from inferlab.store.outcomes import TrialBody
from support.campaign import write_campaign
from support.campaigns import OPT_DIMS, optimize_campaign
from support.cli import Cli

DIMS = OPT_DIMS


def _campaign(tmp: Path, budget: int = 4, **search: Any) -> Path:
    return write_campaign(
        tmp / "opt.toml", **optimize_campaign(tmp, budget_trials=budget, **search)
    )


def _optimize(path: Path, db: Path, resume: bool = False):  # type: ignore[no-untyped-def]
    with Store(db) as store:
        res = optimize(
            path, store=store, resume=resume, launcher=InProcessSim(), clock=ModelClock()
        )
        names = store.configs.config_names("opt")
        stored = store.analyses.of(TrialBody, TRIAL_KIND, "opt")
    return res, names, stored


def test_the_search_measures_trials_beside_the_incumbent_and_moves_on_better(
    tmp_path: Path,
) -> None:
    res, names, stored = _optimize(_campaign(tmp_path), tmp_path / "db")
    trials = {t.name.split("-", 1)[1]: t for t in res.search.trials}
    # the sim refuses --jitter-ms -1 ("invalid sim option --jitter-ms"): failures are data,
    # classified, not a crash, and the other config with that value is never launched
    refused = [t for t in res.search.trials if t.params["--jitter-ms"] == "-1"]
    assert len(refused) == 1 and refused[0].result.status == "failed"
    assert "launch-failed" in refused[0].result.reason
    assert refused[0].result.implicated == ("--jitter-ms",)
    assert res.search.skipped.get(refused[0].name, 0) >= 1
    assert sorted(trials) == sorted([refused[0].name.split("-", 1)[1], "im2-jm0.2", "im4-jm0.2"])
    assert res.search.stopped == "exhausted"  # every point measured or refused
    assert res.search.stop_detail == "3 of 4 points tried (1 ruled out by a refusal)"
    fast = trials["im2-jm0.2"]
    assert fast.result.verdict == "better" and fast.result.status == "ok"
    assert res.best == fast.name and res.search.path == ["baseline", fast.name]
    same = trials["im4-jm0.2"]  # the baseline's own values: it must never be accepted
    assert same.result.status == "ok" and same.result.verdict != "better"
    assert same.name not in res.search.path
    # every trial is a stored config, and so is each incumbent's measurement beside it; a
    # trial right after one that failed to launch (same incumbent) is judged by that one's
    # measurement, which nothing was measured after, and no second one is launched
    prev = None
    for t in res.search.trials:
        own = f"{t.name[:3]}-ref"
        assert t.name in names
        reused = prev is not None and prev.result.status == "failed" and prev.against == t.against
        assert (own in names) != reused, (t.name, prev)
        prev = t
    assert any(t.result.status == "failed" for t in res.search.trials[:-1])
    assert [a.data.name for a in stored] == [t.name for t in res.search.trials]
    out = res.to_json()
    assert out["best"] == {"name": fast.name, "args": {"--itl-ms": "2", "--jitter-ms": "0.2"},
                           "env": {}, "files": {}}  # fmt: skip
    assert out["trials"] == 3 and out["stopped"] == res.search.stopped
    assert out["skipped"] == {refused[0].name: res.search.skipped[refused[0].name]}
    assert any("--itl-ms 2" in line for line in res.launch)
    assert "sim serve" in out["command"] and "--itl-ms 2" in out["command"]
    assert out["sampler"] == "TPE"
    assert 'set = { "--itl-ms" = "2", "--jitter-ms" = "0.2" }' in res.snippet()


def test_a_resumed_search_replays_the_stored_trials_and_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "db"
    first, _, _ = _optimize(_campaign(tmp_path, budget=2), db)
    assert len(first.search.trials) == 2
    with pytest.raises(ConfigError, match="--resume"):
        _optimize(_campaign(tmp_path, budget=4), db)
    # a resumed search on an edited space: the dimension and what to do, not Optuna's
    # traceback (issue 42, item 9)
    edited = [{"flag": "--itl-ms", "values": ["8", "3"]}, DIMS[1]]
    with pytest.raises(ConfigError, match=r"search\.dim: --resume: dimension '--itl-ms': the "
                       r"stored value '\d' is not among \['8', '3'\].*Restore \[search\]"):  # fmt: skip
        _optimize(_campaign(tmp_path, budget=4, dim=edited), db, resume=True)
    with pytest.raises(ConfigError, match=r"dimension '--jitter-ms' was searched and is not now"):
        _optimize(_campaign(tmp_path, budget=4, dim=DIMS[:1]), db, resume=True)
    again, names, stored = _optimize(_campaign(tmp_path, budget=4), db, resume=True)
    assert again.search.trials[:2] == first.search.trials
    # of the four points, one repeats the refused --jitter-ms -1: the refusal, rebuilt from
    # the store, keeps it from being launched
    assert [t.index for t in again.search.trials] == [1, 2, 3]
    params = [tuple(sorted(t.params.items())) for t in again.search.trials]
    assert len(set(params)) == 3  # nothing measured twice
    assert sum(t.params["--jitter-ms"] == "-1" for t in again.search.trials) == 1
    assert again.search.skipped and again.search.stopped == "exhausted"
    assert len(stored) == 3


def test_a_batch_is_judged_against_one_incumbent_measurement_named_after_its_first_trial(
    tmp_path: Path,
) -> None:
    plan, section = search_plan(_campaign(tmp_path))
    space = Space(tuple(section.dim), plan.campaign.config[0])
    with Store(tmp_path / "db") as store:
        seen: list[list[str]] = []
        trials = Trials(plan, section, store, lambda p: seen.append([c.name for c in p.configs])
                        or {}, list(plan.campaign.config))  # fmt: skip
        batch = [space.config(3, {"--itl-ms": "2", "--jitter-ms": "0.2"}),
                 space.config(4, {"--itl-ms": "4", "--jitter-ms": "0.2"})]  # fmt: skip
        got = trials.evaluate_batch(batch, "baseline")
    # one plan: the incumbent's fresh measurement first, then the batch's trials side by side
    assert seen == [["t03-ref", batch[0].name, batch[1].name]]
    assert [trials.reference_of(c.name) for c in batch] == ["t03-ref", "t03-ref"]
    assert trials.reference_of("baseline") == "baseline"
    ref = next(c for c in trials.specs if c.name == "t03-ref")
    assert ref.extends == "baseline" and not ref.set
    assert [r.status for r in got] == ["failed", "failed"]  # nothing measured: no run stored


def test_a_dimension_whose_bound_is_below_the_minimum_effect_is_pruned() -> None:
    comm = Lever(
        "comm", "communication / NCCL", "baseline", "amdahl",
        [PointBound("C=8", 8, 1.012), PointBound("C=1", 1, 1.3)], "comm is 1.2% of decode",
    )  # fmt: skip
    dims = [
        SearchDim(env="NCCL_PROTO", values=["Simple", "LL"]),
        SearchDim(flag="--max-num-seqs", values=[4, 8, 16]),
        SearchDim(flag="--some-unknown-flag", values=[1, 2]),
    ]
    bounds = {b.key: b for b in bound_dims(dims, [comm], "C=8", 0.02)}
    nccl = bounds["env NCCL_PROTO"]
    assert nccl.pruned and nccl.high == pytest.approx(1.012)
    assert "≤ ×1.012 at C=8: pruned" in nccl.why("C=8")
    assert not bound_dims(dims[:1], [comm], "C=1", 0.02)[0].pruned  # ×1.3 there
    assert not bounds["--some-unknown-flag"].pruned
    assert "no lever rule explains it" in bounds["--some-unknown-flag"].why("C=8")


def test_the_cli_prints_the_space_and_refuses_a_campaign_without_a_search(
    tmp_path: Path, cli: Cli
) -> None:
    path = _campaign(tmp_path)
    r = cli("optimize", str(path), "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert "tpot_ms at C=2, tpe sampler (seed 1), budget 4 trials" in r.stdout
    assert "--itl-ms (im)" in r.stdout and "4 points" in r.stdout
    bare = write_campaign(tmp_path / "bare.toml")
    r = cli("optimize", str(bare))
    assert r.exit_code != 0 and "no [search] section" in r.stderr
    other = _campaign(tmp_path, at="C=64")
    r = cli("optimize", str(other), "--dry-run")
    assert r.exit_code != 0 and "search.at: 'C=64' is not a load point" in r.stderr


def test_the_dry_run_under_ray_says_how_trials_are_batched_and_that_nothing_is_profiled(
    tmp_path: Path, cli: Cli
) -> None:
    path = _campaign(tmp_path, parallel=3)  # --dry-run contacts no cluster
    r = cli("optimize", str(path), "--dry-run", "--ray", "127.0.0.1:1")
    assert r.exit_code == 0, r.stderr
    assert "trials in batches of 3 ([search] parallel), side by side" in r.stdout
    assert "[profile] does not run under --ray" not in r.stdout  # the campaign has none
    text = path.read_text() + '\n[profile]\nat = ["C=2"]\n'
    (tmp_path / "p.toml").write_text(text)
    r = cli("optimize", str(tmp_path / "p.toml"), "--dry-run", "--ray", "127.0.0.1:1")
    assert r.exit_code == 0, r.stderr
    assert "[profile] does not run under --ray" in r.stdout
    assert "searched without a bound, never pruned" in r.stdout


def test_the_bounds_are_read_again_against_a_new_incumbent_from_its_own_profile(
    tmp_path: Path,
) -> None:
    """SIMULATED (preset dsv4-flash-8gpu): NCCL is 2.0% of the baseline's step at C=1, so the
    NCCL dimensions are searched (≤ ×1.021 ≥ ×1.005); NCCL_PROTO=LL takes 1.5 ms of it, so
    against an incumbent with LL their bound is ×1.004: nothing is left, and each bound is
    said."""
    path = write_campaign(
        tmp_path / "b.toml",
        name="bst",
        args=["--preset", "dsv4-flash-8gpu", "--tp-size", "8", "--time-scale", "0.01"],
        config=[{"name": "baseline"}, {"name": "ll", "env": {"NCCL_PROTO": "LL"}}],
        load={
            "workload": {"kind": "random", "input_tokens": 16, "output_tokens": 8},
            "requests": "auto",
            "min_requests": 8,
            "max_requests": 16,
        },
        profile={"at": ["C=1"], "steps": 3},
        search={
            "objective": "tpot_ms",
            "at": "C=1",
            "min_effect": 0.005,
            "dim": [
                {"env": "NCCL_PROTO", "values": ["Simple", "LL"]},
                {"env": "NCCL_ALGO", "values": ["Ring", "Tree"]},
            ],
        },
    )
    plan, section = search_plan(path)
    with Store(tmp_path / "db") as store:
        run_plan(plan, store=store, launcher=InProcessSim(), clock=ModelClock())
        profiled = {a.config for a in store.analyses("profile", campaign="bst")}
        assert profiled == {"baseline", "ll"}
        # the profiles are stored: re-reading the bounds launches nothing (run: a no-op)
        trials = Trials(plan, section, store, lambda p: {}, list(plan.campaign.config))
        dims = tuple(section.dim)
        base = trials.bounds_of("baseline", dims)
        ll = trials.bounds_of("ll", dims)
    assert base is not None and base.nothing_left is None
    assert base.high["env NCCL_PROTO"] == pytest.approx(1.0208, abs=1e-3)
    assert ll is not None and ll.high["env NCCL_ALGO"] == pytest.approx(1.0045, abs=1e-3)
    assert ll.nothing_left is not None
    assert "against ll, below ×1.005" in ll.nothing_left
    assert "env NCCL_PROTO: communication / NCCL: ≤ ×1.004 at C=1: pruned" in ll.nothing_left
    assert "env NCCL_ALGO: communication / NCCL: ≤ ×1.004 at C=1: pruned" in ll.nothing_left


def test_a_lossy_dimension_is_gated_against_the_baseline_and_needs_a_gate(tmp_path: Path) -> None:
    """``lossless = false`` on a dimension: every trial is gated by distribution agreement
    against the baseline's stored logprobs (``[verify] lossy_against``), not by greedy
    equivalence; a trial the engine perturbs by twice the limit is stopped before measurement,
    one that does not move passes. Without ``[verify] lossy`` the search is refused first."""
    shift = {"flag": "--logprob-shift", "values": ["0", "0.02"], "lossless": False, "short": "ls"}
    verify = {
        "enabled": True,
        "probes": [{"prompt": "hi", "expect": ".", "max_tokens": 2}],
        "lossy": {"max_kl": 0.01, "min_top1": 0.5, "prompts": 4, "max_prompts": 4, "tokens": 4},
    }
    path = _campaign(tmp_path, budget=2, dim=[shift])
    with pytest.raises(
        ConfigError, match=r"--logprob-shift'.*lossless = false needs \[verify\] lossy"
    ):
        search_plan(path)
    text = path.read_text().replace("[verify]\nenabled = false\n", "")
    # 20 words: the top-20 lists every token, so the gate's KL upper bound is exact
    text = text.replace('"--jitter-ms", "0.2"', '"--jitter-ms", "0.2", "--vocab-size", "21"')
    path.write_text(text + _toml_verify(verify))
    res, _, _ = _optimize(path, tmp_path / "db")
    trials = {t.params["--logprob-shift"]: t for t in res.search.trials}
    assert trials["0.02"].result.status == "failed", trials["0.02"].result
    assert "agreement: KL" in trials["0.02"].result.reason
    assert trials["0"].result.status == "ok", trials["0"].result
    with Store(tmp_path / "db") as store:
        gated = {
            v.config: v.detail.detail
            for v in store.verifications.of(CheckRecord, "opt", "agreement")
            if v.config.startswith("t0") and not v.config.endswith("-ref")
        }
    assert set(gated) == {t.name for t in res.search.trials}
    assert all(d["gating"] for d in gated.values())  # lossy trials: gated, not information


def _toml_verify(v: dict[str, Any]) -> str:
    lossy = ", ".join(f"{k} = {x}" for k, x in v["lossy"].items())
    return (
        "\n[verify]\nenabled = true\n"
        'probes = [{ prompt = "hi", expect = ".", max_tokens = 2 }]\n'
        f"lossy = {{ {lossy} }}\n"
    )
