"""The in-process reference engine (``sim.inprocess``): its parser takes every option of
``sim serve``."""

from __future__ import annotations

import inspect

import pytest

from inferlab.errors import ConfigError
from inferlab.sim.inprocess import OPTIONS, serve_config, serve_options


def test_the_parser_takes_every_option_of_sim_serve() -> None:
    """``serve_options`` reads the same options as the CLI's ``sim serve`` (cli/sim.py)."""
    import typer.main

    from inferlab.cli.sim import serve_cmd, sim_app

    names = {
        opt
        for p in typer.main.get_command(sim_app).commands["serve"].params  # type: ignore[attr-defined]
        for opt in p.opts
    }
    assert names == set(OPTIONS)
    assert set(inspect.signature(serve_cmd).parameters) == {f for f, _ in OPTIONS.values()}
    got = serve_options(["--ttft-ms=8", "--tuned-fp8", "--port", "0", "--truth", "t.jsonl"])
    assert got == {"ttft_ms": "8", "tuned_fp8": True, "port": "0", "truth_path": "t.jsonl"}
    with pytest.raises(ConfigError, match="no such option '--nope'"):
        serve_options(["--nope", "1"])
    with pytest.raises(ConfigError, match="--itl-ms needs a value"):
        serve_options(["--itl-ms"])
    argv = ["py", "-m", "inferlab.cli.main", "sim", "serve", "--preset", "dsv4-flash-8gpu"]
    config, command = serve_config(argv, {"NCCL_PROTO": "LL"})
    assert config.batching and config.levers.nccl_proto == "LL"
    assert command == "sim serve --preset dsv4-flash-8gpu"
