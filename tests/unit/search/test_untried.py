"""When the sampler only repeats points already tried (issue 42, item 9): the loop draws an
untried point itself and says so, instead of stopping with "every point of the space was
tried" while points are left; when none is left, the stop says how many were tried and how
many a refusal ruled out; and a space too large to list says the sampler repeated."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import Study
from optuna.trial import FrozenTrial

from inferlab.search import Space, run_search
from inferlab.search import loop as loop_module
from inferlab.search.samplers import Chosen
from inferlab.search.untried import REPEATS, UNTRIED

from .test_loop import BASE, Surface, section


class Stuck(BaseSampler):
    """An Optuna sampler that proposes the same values every time (a sampler whose model
    has collapsed onto one point): ``first`` of each dimension's distribution."""

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return {}

    def sample_independent(
        self, study: Study, trial: FrozenTrial, name: str, dist: BaseDistribution
    ) -> Any:
        choices: Sequence[Any] | None = getattr(dist, "choices", None)
        return choices[0] if choices is not None else getattr(dist, "low")  # noqa: B009


@pytest.fixture
def stuck(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        loop_module, "choose", lambda *a: Chosen(Stuck(), 0, "stuck")
    )  # what samplers.choose returns, with the stuck sampler in it


def test_a_sampler_that_only_repeats_does_not_end_the_search_with_points_left(
    stuck: None,
) -> None:
    s = section(budget_trials=50, patience=50)  # 5 x 4 = 20 points
    ev = Surface(s)
    ev.values["baseline"] = 10_000.0  # nothing is better: the sampler learns nothing
    result = run_search(Space(tuple(s.dim), BASE), s, ev)
    # today: one trial, then "exhausted: every point of the space was tried" after 32 repeats
    assert len(result.trials) == 20 and result.stopped == "exhausted"
    assert len({tuple(sorted(t.params.items())) for t in result.trials}) == 20
    assert result.trials[0].chosen_by == "stuck sampler"
    assert all(t.chosen_by == UNTRIED for t in result.trials[1:])
    assert f"repeated {REPEATS} proposals" in UNTRIED
    assert result.stop_detail == "20 of 20 points tried"


def test_a_space_too_large_to_list_says_the_sampler_repeated_and_what_is_left(
    stuck: None,
) -> None:
    s = section(
        budget_trials=50,
        patience=50,
        dim=[{"flag": "--gpu-memory-utilization", "low": 0.5, "high": 0.9}],
    )

    class Flat(Surface):
        def evaluate(self, config: Any, incumbent: str) -> Any:
            from inferlab.search import TrialResult

            return TrialResult(status="ok", value=1.0, verdict="equivalent")

    result = run_search(Space(tuple(s.dim), BASE), s, Flat(s))
    assert len(result.trials) == 1 and result.stopped == "repeats"
    assert result.stop_detail == (
        f"the sampler repeated {REPEATS} proposals in a row; infinitely many points untried"
    )


def test_points_a_refusal_rules_out_are_counted_when_nothing_is_left(stuck: None) -> None:
    s = section(
        budget_trials=50,
        patience=50,
        dim=[
            {"flag": "--max-num-seqs", "values": [4, 8, 16]},
            {"flag": "--max-num-batched-tokens", "values": [512, 1024]},
        ],
    )
    ev = Surface(s)
    ev.values["baseline"] = 10_000.0  # nothing is better

    class Refused(Surface):
        def evaluate(self, config: Any, incumbent: str) -> Any:
            from inferlab.search import TrialResult

            if int(config.set["--max-num-seqs"]) == 4:  # refused, naming the flag
                return TrialResult(
                    status="failed", reason="refused", implicated=("--max-num-seqs",)
                )
            return ev.evaluate(config, incumbent)

    result = run_search(Space(tuple(s.dim), BASE), s, Refused(s))
    assert result.stopped == "exhausted" and len(result.trials) == 5
    assert result.stop_detail == "5 of 6 points tried (1 ruled out by a refusal)"
