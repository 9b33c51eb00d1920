"""The search loop on a stated surface: Optuna proposes, the incumbent moves only on a
``better`` verdict, the stop rules hold, failures are data, a resumed search replays its trials.

The evaluator is a known function of the trial's flags (the surface), judged against the
incumbent's value with the search's minimum effect: the loop's logic is the subject, not a
server's timing (the server-backed evaluator is tested in tests/e2e)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.config.campaign import ConfigSpec, load_campaign
from inferlab.config.search import SearchSection
from inferlab.errors import ConfigError
from inferlab.search import Bounds, Space, TrialResult, run_search

MNS = [4, 8, 16, 32, 64]
MBT = [512, 1024, 2048, 4096]


def surface(mns: int, mbt: int) -> float:
    """Output tok/s of a stated engine: best at mns=32, mbt=2048 (1000 tok/s)."""
    return 1000.0 - 40.0 * abs(MNS.index(mns) - 3) ** 2 - 60.0 * abs(MBT.index(mbt) - 2)


class Surface:
    """Measures a trial as ``surface`` of its flags; ``fail`` lists values that fail to launch."""

    def __init__(self, section: SearchSection, fail: tuple[int, ...] = ()) -> None:
        self.section, self.fail = section, fail
        self.values: dict[str, float] = {"baseline": surface(8, 1024)}
        self.calls: list[str] = []

    def evaluate(self, config: ConfigSpec, incumbent: str) -> TrialResult:
        self.calls.append(config.name)
        mns, mbt = int(config.set["--max-num-seqs"]), int(config.set["--max-num-batched-tokens"])
        if mns in self.fail:
            return TrialResult(status="failed", reason="oom_graph_capture")
        v = surface(mns, mbt)
        self.values[config.name] = v
        ref, eff = self.values[incumbent], self.section.min_effect
        verdict = (
            "better" if v > ref * (1 + eff) else "worse" if v < ref / (1 + eff) else "equivalent"
        )
        return TrialResult(status="ok", value=v, verdict=verdict)  # type: ignore[arg-type]


def section(**kw: Any) -> SearchSection:
    base: dict[str, Any] = {
        "objective": "output_tok_s",
        "at": "C=8",
        "budget_trials": 12,
        "dim": [
            {"flag": "--max-num-seqs", "values": MNS},
            {"flag": "--max-num-batched-tokens", "values": MBT},
        ],
    }
    return SearchSection.model_validate(base | kw)


BASE = ConfigSpec(name="baseline")


def test_tpe_finds_the_stated_optimum_and_the_incumbent_moves_only_on_better() -> None:
    s = section(budget_trials=14, patience=14)
    ev = Surface(s)
    result = run_search(Space(tuple(s.dim), BASE), s, ev)
    assert result.path[0] == "baseline"
    assert result.best == "t{:02d}-mns32-mnbt2048".format(
        int(next(t.index for t in result.trials if t.name.endswith("mns32-mnbt2048")))
    )
    # each step of the path was judged better than the one before it
    for a, b in zip(result.path, result.path[1:], strict=False):
        rec = next(t for t in result.trials if t.name == b)
        assert rec.against == a and rec.result.verdict == "better"
    assert len({tuple(sorted(t.params.items())) for t in result.trials}) == len(result.trials)
    assert result.stopped in ("budget_trials", "patience")
    assert result.trials[0].chosen_by.startswith("TPE start-up")
    assert result.trials[-1].chosen_by.startswith("TPE (multivariate")


def test_stops_by_patience_when_nothing_beats_the_incumbent() -> None:
    s = section(budget_trials=20, patience=3)
    ev = Surface(s)
    ev.values["baseline"] = 10_000.0  # nothing can beat it
    result = run_search(Space(tuple(s.dim), BASE), s, ev)
    assert result.stopped == "patience" and len(result.trials) == 3
    assert result.path == ["baseline"]


def test_patience_counts_measured_trials_not_failed_launches() -> None:
    """A launch that fails measures nothing: on vLLM CPU three such trials in four stopped
    the search by patience after one measurement (demo --optimize, 2026-12-02)."""
    s = section(budget_trials=9, patience=3, sampler="random")
    ev = Surface(s, fail=(4, 8, 16))
    ev.values["baseline"] = 10_000.0  # nothing can beat it
    result = run_search(Space(tuple(s.dim), BASE), s, ev)
    measured = [t for t in result.trials if t.result.status == "ok"]
    assert len(measured) == 3 and len(result.trials) > 3 and result.stopped == "patience"


def test_a_small_space_is_exhausted_and_a_grid_walks_it_once() -> None:
    s = section(
        sampler="grid",
        budget_trials=50,
        patience=50,
        dim=[
            {"flag": "--max-num-seqs", "values": [16, 32]},
            {"flag": "--max-num-batched-tokens", "values": [2048]},
        ],
    )
    result = run_search(Space(tuple(s.dim), BASE), s, Surface(s))
    assert result.stopped == "exhausted"
    assert sorted(t.name.split("-", 1)[1] for t in result.trials) == [
        "mns16-mnbt2048",
        "mns32-mnbt2048",
    ]


def test_failures_are_recorded_and_the_search_goes_on() -> None:
    s = section(budget_trials=12, patience=12, seed=3)
    ev = Surface(s, fail=(64,))
    result = run_search(Space(tuple(s.dim), BASE), s, ev)
    failed = [t for t in result.trials if t.result.status == "failed"]
    assert all(t.params["--max-num-seqs"] == 64 for t in failed)
    assert all(t.result.reason == "oom_graph_capture" for t in failed)
    assert len(result.trials) == 12 and len(failed) < 4  # the failing region is avoided
    assert not any(t in result.path for t in (f.name for f in failed))


class Refusing(Surface):
    """vLLM's rule (tests/fixtures/vllm_cpu/startup_fail_batched_tokens.log): with chunked
    prefill off, a step budget below the model length (2048) is refused at start; the refusal
    names its flags when ``named`` (as ``Trials.refused`` reads them from the log)."""

    FLAGS = ("--max-num-batched-tokens", "--max-model-len", "--no-enable-chunked-prefill")

    def __init__(self, section: SearchSection, named: bool = True) -> None:
        super().__init__(section)
        self.named = named
        self.refused: list[ConfigSpec] = []

    def evaluate(self, config: ConfigSpec, incumbent: str) -> TrialResult:
        if config.set.get("--no-enable-chunked-prefill") is True and (
            int(config.set["--max-num-batched-tokens"]) < 2048
        ):
            self.calls.append(config.name)
            self.refused.append(config)
            flags = self.FLAGS if self.named else ()
            return TrialResult(
                status="failed", reason="batched_tokens_below_model_len", implicated=flags
            )
        return super().evaluate(config, incumbent)


def _refusal_search(named: bool, seed: int) -> tuple[Refusing, Any]:
    s = section(
        budget_trials=16, patience=16, seed=seed,
        dim=[*section().model_dump()["dim"], {"flag": "--no-enable-chunked-prefill",
                                              "presence": True, "short": "nocp"}],
    )  # fmt: skip
    ev = Refusing(s, named)
    return ev, run_search(Space(tuple(s.dim), BASE), s, ev)


def _repeats(refused: list[ConfigSpec]) -> int:
    """Launches refused for a step budget an earlier refusal already had."""
    seen = [int(c.set["--max-num-batched-tokens"]) for c in refused]
    return len(seen) - len(set(seen))


def test_a_refused_launch_rules_out_every_config_with_its_values() -> None:
    """demo --optimize on vLLM CPU (2026-12-03): 4 of 8 trials were refused the same way,
    two of them with the step budget an earlier refusal had. A refusal that names its flags
    keeps the values it names from being launched again; each proposal ruled out is counted."""
    for seed in range(4):
        ev, result = _refusal_search(True, seed)
        assert _repeats(ev.refused) == 0, seed
        refused = [t for t in result.trials if t.result.status == "failed"]
        assert len(refused) == len(ev.refused) <= 3  # one launch per refused step budget
        assert set(result.skipped) <= {t.name for t in refused}
        measured = [t for t in result.trials if t.result.status == "ok"]
        assert all(
            t.params["--no-enable-chunked-prefill"] is False
            or t.params["--max-num-batched-tokens"] >= 2048
            for t in measured
        )
    # without the names (an OOM, a crash) nothing is ruled out: the sampler alone steers
    assert sum(_repeats(_refusal_search(False, seed)[0].refused) for seed in range(4)) > 0
    assert all(not _refusal_search(False, seed)[1].skipped for seed in range(2))


def test_a_resumed_search_replays_its_trials_and_goes_on_from_there() -> None:
    s = section(budget_trials=10, patience=10, seed=7)
    space = Space(tuple(s.dim), BASE)
    whole = run_search(space, s, Surface(s))
    first = run_search(space, s.model_copy(update={"budget_trials": 4}), Surface(s))
    ev = Surface(s)
    ev.values.update({t.name: t.result.value or 0.0 for t in first.trials})
    resumed = run_search(space, s, ev, history=first.trials)
    assert resumed.trials[:4] == first.trials
    assert len(ev.calls) == 6 and ev.calls[0].startswith("t05-")
    assert resumed.path[: len(first.path)] == first.path
    seen = [tuple(sorted(t.params.items())) for t in resumed.trials]
    assert len(set(seen)) == len(seen)
    assert whole.stopped == resumed.stopped == "budget_trials"


def test_no_dimension_left_stops_before_anything_runs() -> None:
    s = section()
    ev = Surface(s)
    result = run_search(Space((), BASE), s, ev, pruned={"--max-num-seqs": "bound ×1.01"})
    assert result.stopped == "no_dimension" and ev.calls == []
    assert result.pruned == {"--max-num-seqs": "bound ×1.01"}


def test_a_trial_is_a_named_config_over_the_baseline() -> None:
    s = section(
        dim=[
            {"flag": "--max-num-seqs", "values": [32]},
            {"flag": "--enable-chunked-prefill", "presence": True},
            {"env": "NCCL_PROTO", "values": ["Simple", "LL"]},
            {"files": "fp8_gemm", "values": ["none", "tuned/"], "short": "fp8"},
            {"flag": "--gpu-memory-utilization", "low": 0.8, "high": 0.95},
        ]
    )
    space = Space(tuple(s.dim), BASE)
    params = {
        "--max-num-seqs": 32,
        "--enable-chunked-prefill": False,
        "env NCCL_PROTO": "LL",
        "files fp8_gemm": "none",
        "--gpu-memory-utilization": 0.912345,
    }
    cfg = space.config(3, params)
    assert cfg.name == "t03-mns32-ecpoff-npll-fp8none-gmu0.9123"
    assert cfg.extends == "baseline"
    assert cfg.set == {
        "--max-num-seqs": 32,
        "--enable-chunked-prefill": False,
        "--gpu-memory-utilization": 0.9123,
    }
    assert cfg.env == {"NCCL_PROTO": "LL"} and cfg.files == {}
    assert space.config(4, params | {"files fp8_gemm": "tuned/"}).files == {"fp8_gemm": "tuned/"}
    assert space.size() == float("inf")
    with pytest.raises(ConfigError, match="needs listed values"):
        space.grid()


def test_a_templated_flag_launches_its_filled_template_and_false_leaves_it_out() -> None:
    tmpl = '{"method":"ngram","num_speculative_tokens":{value},"prompt_lookup_max":3}'
    s = section(
        dim=[
            {"flag": "--speculative-config", "values": [False, 1, 3], "template": tmpl,
             "short": "k"},
            {"flag": "--x", "values": ["a", "b"], "template": "mode={value}"},
        ]
    )  # fmt: skip
    space = Space(tuple(s.dim), BASE)
    on = space.config(2, {"--speculative-config": 3, "--x": "b"})
    assert on.name == "t02-k3-xb"
    assert on.set == {
        "--speculative-config": '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3}',
        "--x": "mode=b",
    }
    off = space.config(3, {"--speculative-config": False, "--x": "a"})
    assert off.name == "t03-koff-xa" and off.set["--speculative-config"] is False


def _campaign(tmp_path: Path, search: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(
        '[campaign]\nname = "s"\n[engine]\nkind = "sim"\n[[config]]\nname = "baseline"\n' + search
    )
    return p


@pytest.mark.parametrize(
    ("search", "line", "message"),
    [
        ('[search]\nat = "C=8"\n[[search.dim]]\nflag = "--x"\nenv = "Y"\nvalues = [1]\n', 9,
         "exactly one of flag, env, files"),
        ('[search]\nat = "C=8"\n[[search.dim]]\nflag = "--x"\n', 9,
         "exactly one of values, low/high, presence"),
        ('[search]\n[[search.dim]]\nflag = "--x"\nvalues = [1, 2]\n', 7,
         "needs at = 'C=N'"),
        ('[search]\nat = "C=8"\n[[search.dim]]\nflag = "--x"\nlow = 0\nhigh = 4\nlog = true\n',
         9, "log = true needs low > 0"),
        ('[search]\nat = "C=8"\n[[search.dim]]\nenv = "A_BX"\nvalues = [1]\n'
         '[[search.dim]]\nenv = "A_BY"\nvalues = [2]\n', 7, "both named 'ab'"),
        ('[search]\nat = "C=8"\nparallel = 0\n[[search.dim]]\nflag = "--x"\nvalues = [1]\n', 9,
         "parallel: .*greater than or equal to 1"),
        ('[search]\nat = "C=8"\n[[search.dim]]\nflag = "--x"\nvalues = [1]\ntemplate = "k"\n', 9,
         "template 'k' has no {value} to fill"),
        ('[search]\nat = "C=8"\n[[search.dim]]\nenv = "X"\nvalues = [1]\ntemplate = "{value}"\n',
         9, "template is for a flag"),
    ],
)  # fmt: skip
def test_a_bad_search_section_names_the_file_line_and_field(
    tmp_path: Path, search: str, line: int, message: str
) -> None:
    p = _campaign(tmp_path, search)
    with pytest.raises(ConfigError, match=message) as err:
        load_campaign(p)
    assert f"{p}:{line}: search" in str(err.value)


def test_a_good_search_section_loads() -> None:
    camp = load_campaign(Path(__file__).parent / "search.toml")
    assert camp.search is not None
    assert [d.key for d in camp.search.dim] == [
        "--max-num-seqs",
        "--max-num-batched-tokens",
        "env NCCL_PROTO",
    ]


def test_the_search_stops_when_the_bounds_against_a_new_incumbent_say_nothing_is_left() -> None:
    s = section(budget_trials=14, patience=14)
    ev = Surface(s)
    first = Bounds({"--max-num-seqs": 1.3, "--max-num-batched-tokens": None})
    seen: list[str] = []

    def rebound(incumbent: str) -> Bounds | None:
        seen.append(incumbent)
        if len(seen) < 2:  # no evidence for the first new incumbent: nothing changes
            return None
        return Bounds({"--max-num-seqs": 1.004, "--max-num-batched-tokens": 1.001}, "all below")

    result = run_search(Space(tuple(s.dim), BASE), s, ev, bounds=first, rebound=rebound)
    assert result.stopped == "bounds" and result.stop_detail == "all below"
    assert seen == result.path[1:] and len(result.path) == 3
    # it stopped at once: the trial that moved the incumbent the second time was the last
    assert result.trials[-1].name == result.path[-1] == ev.calls[-1]
    assert all(t.bounds == first.high for t in result.trials)  # as they were when chosen
    # resumed with that history, the search stops before any trial: the bounds still say so
    again = run_search(
        Space(tuple(s.dim), BASE), s, Surface(s), history=result.trials, rebound=rebound
    )
    assert again.stopped == "bounds" and len(again.trials) == len(result.trials)


class Batches(Surface):
    """``Surface`` measured a batch at a time: each batch's configs and incumbent are kept."""

    def __init__(self, section: SearchSection, fail: tuple[int, ...] = ()) -> None:
        super().__init__(section, fail)
        self.batches: list[tuple[list[str], str]] = []

    def evaluate_batch(self, configs: list[ConfigSpec], incumbent: str) -> list[TrialResult]:
        self.batches.append(([c.name for c in configs], incumbent))
        return [self.evaluate(c, incumbent) for c in configs]


def _params(result: Any) -> list[tuple[Any, ...]]:
    return [tuple(sorted(t.params.items())) for t in result.trials]


def test_a_parallel_search_asks_distinct_trials_per_batch_against_one_incumbent() -> None:
    s = section(budget_trials=12, patience=12)
    ev = Batches(s)
    result = run_search(Space(tuple(s.dim), BASE), s, ev, parallel=3)
    assert [len(names) for names, _ in ev.batches] == [3, 3, 3, 3]
    assert len(set(_params(result))) == 12  # no repeat, inside a batch or across
    by_name = {t.name: t for t in result.trials}
    for names, incumbent in ev.batches:
        recs = [by_name[n] for n in names]
        # one incumbent per batch, and the batch's number is its first trial's
        assert {r.against for r in recs} == {incumbent}
        assert {r.batch for r in recs} == {recs[0].index}
    assert result.stopped == "budget_trials"


def test_the_incumbent_moves_to_the_best_of_several_better_trials_of_a_batch() -> None:
    s = section(budget_trials=8, patience=8, sampler="random", seed=2)
    ev = Batches(s)
    result = run_search(Space(tuple(s.dim), BASE), s, ev, parallel=4)
    moved = 0
    for names, incumbent in ev.batches:
        better = [t for t in result.trials if t.name in names and t.result.verdict == "better"]
        if not better:
            continue
        best = max(better, key=lambda t: float(t.result.value or 0))
        assert best.name in result.path  # the best better one, never another
        assert [n for n in result.path if n in {t.name for t in better}] == [best.name]
        assert result.path[result.path.index(best.name) - 1] == incumbent
        moved += best is not better[0]
    assert moved  # this seed's first batch has several better trials, the first not the best


def test_patience_and_the_budget_count_trials_not_batches() -> None:
    s = section(budget_trials=7, patience=20)
    ev = Batches(s)
    result = run_search(Space(tuple(s.dim), BASE), s, ev, parallel=3)
    assert [len(n) for n, _ in ev.batches] == [3, 3, 1]  # the last batch: what the budget left
    assert len(result.trials) == 7 and result.stopped == "budget_trials"
    # everything worse than the baseline: patience 5 is spent after 5 trials, not 2 batches
    s = section(budget_trials=12, patience=5)
    flat = Batches(s)
    flat.values["baseline"] = 2000.0
    result = run_search(Space(tuple(s.dim), BASE), s, flat, parallel=3)
    assert [len(n) for n, _ in flat.batches] == [3, 2]
    assert result.stopped == "patience" and result.path == ["baseline"]


def test_a_resumed_parallel_search_replays_its_batches_and_goes_on() -> None:
    s = section(budget_trials=9, patience=9, sampler="random", seed=3)
    space = Space(tuple(s.dim), BASE)
    whole = run_search(space, s, Batches(s), parallel=3)
    first = run_search(space, section(budget_trials=6, patience=9, sampler="random", seed=3),
                       Batches(s), parallel=3)  # fmt: skip
    ev = Batches(s)
    ev.values.update({t.name: float(t.result.value or 0) for t in first.trials})
    resumed = run_search(space, s, ev, history=first.trials, parallel=3)
    assert resumed.trials[:6] == first.trials
    # the incumbent replayed from the batches is the one the search had, and goes on from it
    assert resumed.path[: len(first.path)] == first.path
    assert [n for n, _ in ev.batches] == [[t.name for t in resumed.trials[6:]]]
    assert ev.batches[0][1] == first.path[-1]
    assert len(set(_params(resumed))) == 9
    assert resumed.trials[6].batch == 7 and whole.stopped == resumed.stopped == "budget_trials"


def test_an_evaluator_without_batches_is_asked_trial_by_trial() -> None:
    s = section(budget_trials=4, patience=4)
    ev = Surface(s)
    result = run_search(Space(tuple(s.dim), BASE), s, ev, parallel=2)
    assert ev.calls == [t.name for t in result.trials] and len(ev.calls) == 4
    assert [t.batch for t in result.trials] == [1, 1, 3, 3]
