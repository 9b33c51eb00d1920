"""``inferlab sim`` as a user runs it: ``sim serve`` as the real server process it is (its exit
codes included), ``sim tokenizer`` in process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.simproc import start_sim

pytestmark = pytest.mark.timeout(60)


def _sim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferlab.cli.main", "sim", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--ttft-ms", "-1"], "--ttft-ms"),
        (["--tokens-per-chunk", "0"], "--tokens-per-chunk"),
        (["--fault", "explode"], "--fault"),
        (["--fault-every", "0"], "--fault-every"),
        (["--port", "notaport"], "--port"),
        (["--launch-sd", "-0.04"], "--launch-sd"),
    ],
)
def test_bad_option_exits_2_naming_it(args: list[str], named: str) -> None:
    done = _sim("serve", "--port", "0", *args)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "listening" not in done.stdout


def test_port_in_use_is_an_error_not_a_traceback() -> None:
    with start_sim() as sim:
        done = _sim("serve", "--port", str(sim.port))
    assert done.returncode == 2
    assert "cannot listen" in done.stderr and "Traceback" not in done.stderr


def test_ready_line_and_clean_exit_on_sigterm() -> None:
    with start_sim("--model", "my-model") as sim:
        assert sim.url.startswith("http://127.0.0.1:")
        _, body = sim.request("GET", "/v1/models")
        assert b"my-model" in body
        assert sim.stop() == 0
        assert "Traceback" not in sim.stderr()
