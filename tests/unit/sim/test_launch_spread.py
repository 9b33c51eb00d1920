"""The reference engine's per-launch speed factor (``sim serve --launch-sd``,
``sim.launchspread``): drawn once at start-up, logged, multiplying every time of the launch;
reproducible from ``--launch-seed``, different from launch to launch with ``--launch-state``.
Real servers on threads of this process, real HTTP on loopback, the ground truth read back."""

from __future__ import annotations

import itertools
import math
import re
import statistics
from pathlib import Path

import pytest

from inferlab.errors import ConfigError, SimError
from inferlab.sim.inprocess import serve_config
from inferlab.sim.launchspread import draw_factor, next_launch
from support.simproc import SimInProcess, start_sim_thread

pytestmark = pytest.mark.timeout(60)

_LINE = re.compile(r"\[SIMULATED\] inferlab sim: SIMULATED launch factor ×([0-9.]+) ")


def _factor(sim: SimInProcess) -> float:
    found = _LINE.findall(sim.stderr())
    assert len(found) == 1, sim.stderr()
    return float(found[0])


def _gaps_ms(sim: SimInProcess, tokens: int = 6) -> tuple[float, list[float]]:
    """(TTFT, each token gap) in ms of one streamed answer, from the engine's ground truth."""
    sim.clear_truth()
    body = {"model": "inferlab-sim", "prompt": "a b c", "max_tokens": tokens, "stream": True}
    status, _ = sim.request("POST", "/v1/completions", body)
    assert status == 200
    (t,) = sim.truth()
    dues = [int(c[0]) for c in t["chunks"] if int(c[2]) > 0]
    gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(dues)]
    return (dues[0] - int(t["recv_ns"])) / 1e6, gaps


def test_the_factor_scales_ttft_and_itl_and_is_logged() -> None:
    args = ("--ttft-ms", "20", "--itl-ms", "5", "--launch-sd", "0.2", "--launch-seed", "7")
    with start_sim_thread(*args) as sim:
        f = _factor(sim)
        ttft, gaps = _gaps_ms(sim)
    assert f == pytest.approx(draw_factor(0.2, 7, None), abs=1e-4) and f != 1.0
    assert ttft == pytest.approx(20 * f, abs=1e-3)
    assert gaps == pytest.approx([5 * f] * len(gaps), abs=1e-3)
    # the same seed, the same factor; the args line keeps the flags as given
    with start_sim_thread(*args) as again:
        assert _factor(again) == f
        assert "itl_ms=5.0" in again.stderr() and "launch_sd=0.2" in again.stderr()


def test_successive_launches_with_a_state_file_draw_different_reproducible_factors(
    tmp_path: Path,
) -> None:
    def launches(state: Path, n: int) -> list[float]:
        out = []
        for _ in range(n):
            args = ("--launch-sd", "0.05", "--launch-seed", "3", "--launch-state", str(state))
            with start_sim_thread(*args) as sim:
                out.append(_factor(sim))
                assert f", launch {len(out) - 1})" in sim.stderr()
        return out

    first = launches(tmp_path / "a", 3)
    assert len(set(first)) == 3  # each launch its own
    assert launches(tmp_path / "b", 3) == first  # a fresh state file replays the sequence
    assert (tmp_path / "a").read_text().strip() == "3"


def test_the_batching_model_is_scaled_too() -> None:
    def step_gap(*extra: str) -> float:
        with start_sim_thread("--preset", "generic", "--time-scale", "0.01", *extra) as sim:
            _, gaps = _gaps_ms(sim, 8)
        return statistics.median(gaps)

    base = step_gap()
    f = draw_factor(0.3, 11, None)
    assert step_gap("--launch-sd", "0.3", "--launch-seed", "11") == pytest.approx(
        base * f, rel=1e-3
    )


def test_draws_are_log_normal_with_the_stated_sd() -> None:
    logs = [math.log(draw_factor(0.04, 1, k)) for k in range(2000)]
    assert abs(statistics.fmean(logs)) < 0.004
    assert statistics.stdev(logs) == pytest.approx(0.04, rel=0.08)
    assert draw_factor(0.0, 1, 5) == 1.0


def test_a_negative_sd_is_an_invalid_option_and_a_bad_state_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"invalid sim option --launch-sd: .*greater than"):
        serve_config(["sim", "serve", "--launch-sd", "-0.1"], {})
    bad = tmp_path / "state"
    bad.write_text("not a number\n")
    with pytest.raises(SimError, match=r"--launch-state .*state: expected a launch counter"):
        next_launch(bad)
    assert [next_launch(tmp_path / "n") for _ in range(3)] == [0, 1, 2]


def test_each_launch_of_a_state_file_draws_its_own_jitter(tmp_path: Path) -> None:
    def gaps(state: Path) -> list[float]:
        args = ("--itl-ms", "2", "--jitter-ms", "0.5", "--launch-state", str(state))
        with start_sim_thread(*args) as sim:
            return _gaps_ms(sim, 8)[1]

    first, second = gaps(tmp_path / "a"), gaps(tmp_path / "a")
    assert first != second  # launch 0 and launch 1: each its own noise
    assert gaps(tmp_path / "b") == first  # a fresh counter: launch 0's again
