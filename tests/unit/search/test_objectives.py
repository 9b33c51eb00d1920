"""``optimize``'s goodput and capacity objectives: refused without the [slo] they need; the
capacity objective measures each trial's capacity at SLO beside the incumbent's and accepts
only when the capacity intervals separate (reference engine, model clock: SIMULATED)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.errors import ConfigError
from inferlab.search.driver import optimize, search_plan
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from inferlab.store.capacity import stored_capacities
from inferlab.store.outcomes import CapacityBody
from support.campaign import write_campaign


def _campaign(tmp: Path, slo: dict[str, Any] | None, c: int = 8, **search: Any) -> Path:
    return write_campaign(
        tmp / "opt.toml",
        name="opt",
        args=["--preset", "generic", "--time-scale", "0.1"],
        load={
            "workload": {"input_tokens": 8, "output_tokens": 16},
            "concurrency": [c],
            "requests": "auto",
            "min_requests": 20,
            "max_requests": 60,
            "tokenizer": WordTokenizer().save_hf(tmp / "tok"),
        },
        slo=slo,
        search={"budget_trials": 1, "patience": 1, "seed": 1, **search},
    )


@pytest.mark.parametrize("objective", ["goodput", "capacity"])
def test_an_slo_objective_without_slo_is_refused_before_anything_launches(
    tmp_path: Path, objective: str
) -> None:
    dims = [{"flag": "--time-scale", "values": ["0.08"]}]
    path = _campaign(tmp_path, None, objective=objective, at="C=8", dim=dims)
    with pytest.raises(ConfigError, match=rf"search.objective: '{objective}' needs an \[slo\]"):
        search_plan(path)
    path = _campaign(tmp_path, {"ttft_ms": 500}, objective="capacity", dim=dims)
    with pytest.raises(ConfigError, match="'capacity' needs a percentile limit in \\[slo\\]"):
        search_plan(path)


def test_the_capacity_objective_accepts_a_trial_whose_capacity_interval_is_above(
    tmp_path: Path,
) -> None:
    # TPOT p50 = (8 + 0.25·C)·scale ms ≤ 0.907: capacity 4 at scale 0.1, 6 at 0.095
    path = _campaign(
        tmp_path, {"tpot_p50_ms": 0.907}, 4, objective="capacity", capacity_up_to=32,
        dim=[{"flag": "--time-scale", "values": ["0.095"]}],
    )  # fmt: skip
    with Store(tmp_path / "db") as store:
        res = optimize(path, store=store, launcher=InProcessSim(), clock=ModelClock())
        caps = stored_capacities(store, "opt")
    (trial,) = res.search.trials
    assert trial.result.verdict == "better", trial.result
    assert res.best == trial.name and trial.result.reason.startswith("capacity vs t01-ref ×")
    ref, cand = caps["t01-ref"][0], caps[trial.name][0]
    assert (ref.low, ref.high, cand.low, cand.high) == (4, 4, 6, 6)
    # the trial carries its capacity, and the report's trial table shows it (it read a field
    # no trial had, so the column was always "—")
    assert trial.result.capacity["estimate"] == trial.result.value
    assert trial.result.capacity["unit"] == "concurrency"
    from inferlab.config.search import TRIAL_KIND
    from inferlab.report.sections.search import TRIAL_COLUMNS, trial_cells
    from inferlab.store.outcomes import TrialBody

    with Store(tmp_path / "db") as store:
        every = store.analyses.of(TrialBody, TRIAL_KIND, "opt")
    (t,) = [a for a in every if a.data.name == trial.name]
    cell = trial_cells(t.data.to_json(), "tpot_ms")[TRIAL_COLUMNS.index("capacity at SLO")]
    assert cell.startswith(f"{trial.result.value:g}"), cell


def test_the_capacity_objective_is_refused_under_ray_before_anything_launches(
    tmp_path: Path,
) -> None:
    path = _campaign(
        tmp_path, {"tpot_p50_ms": 0.907}, 4, objective="capacity",
        dim=[{"flag": "--time-scale", "values": ["0.095"]}],
    )  # fmt: skip
    with Store(tmp_path / "db") as store:
        with pytest.raises(ConfigError, match="'capacity' is not searched under --ray"):
            optimize(path, store=store, ray="127.0.0.1:1")  # refused before any connection
        assert not store.runs(campaign="opt")


def test_the_goodput_objective_accepts_when_the_wilson_intervals_separate(
    tmp_path: Path,
) -> None:
    # TPOT at C=8: (8 + 2)·0.1 = 1.0 ms over the 0.95 limit; at scale 0.08, 0.8 ms within it
    path = _campaign(
        tmp_path, {"tpot_ms": 0.95}, objective="goodput", at="C=8",
        dim=[{"flag": "--time-scale", "values": ["0.08"]}],
    )  # fmt: skip
    with Store(tmp_path / "db") as store:
        res = optimize(path, store=store, launcher=InProcessSim(), clock=ModelClock())
    (trial,) = res.search.trials
    assert trial.result.verdict == "better" and (trial.result.value or 0) > 0.5, trial.result
    assert "goodput share [" in trial.result.reason and res.best == trial.name


def test_the_capacity_objective_over_request_rate(tmp_path: Path) -> None:
    """``capacity_rate_up_to``: each trial's capacity over open-loop request rate, on a ladder
    10 req/s apart. The engine's fixed gap between tokens makes TPOT that gap at any rate: a
    3 ms TPOT limit fails everywhere at 4 ms, holds everywhere at 2 ms (SIMULATED)."""
    path = write_campaign(
        tmp_path / "opt.toml",
        name="opt",
        args=["--ttft-ms", "2", "--itl-ms", "4"],
        load={
            "workload": {"input_tokens": 8, "output_tokens": 6},
            "rate": [10.0],
            "requests": 20,
            "tokenizer": WordTokenizer().save_hf(tmp_path / "tok"),
        },
        slo={"tpot_p50_ms": 3},
        search={"budget_trials": 1, "patience": 1, "objective": "capacity",
                "capacity_rate_up_to": 40, "capacity_rate_step": 10,
                "dim": [{"flag": "--itl-ms", "values": ["2"]}]},
    )  # fmt: skip
    with Store(tmp_path / "db") as store:
        res = optimize(path, store=store, launcher=InProcessSim(), clock=ModelClock())
        caps = stored_capacities(store, "opt")
        probes = {a.config: [p.point for p in a.data.probes]
                  for a in store.analyses.of(CapacityBody, "capacity", "opt")}  # fmt: skip
    (trial,) = res.search.trials
    assert trial.result.verdict == "better", trial.result
    ref, cand = caps["t01-ref"][0], caps[trial.name][0]
    assert ref.unit == cand.unit == "rate"
    assert (ref.low, ref.high) == (0, 0) and (cand.low, cand.high) == (40.0, None)
    assert probes == {"t01-ref": [10.0], trial.name: [10.0, 20.0, 40.0]}


def test_a_capacity_over_rate_needs_open_loop_points_of_a_count(tmp_path: Path) -> None:
    dims = [{"flag": "--time-scale", "values": ["0.08"]}]
    path = _campaign(tmp_path, {"tpot_p50_ms": 1}, objective="capacity",
                     capacity_rate_up_to=20, dim=dims)  # fmt: skip
    with pytest.raises(ConfigError, match="capacity_rate_up_to: a capacity over request rate"):
        search_plan(path)
    path = _campaign(tmp_path, {"tpot_p50_ms": 1}, objective="tpot_ms", at="C=8",
                     capacity_rate_up_to=20, dim=dims)  # fmt: skip
    with pytest.raises(ConfigError, match="only with objective = 'capacity'"):
        search_plan(path)
