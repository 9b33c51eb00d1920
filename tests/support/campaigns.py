"""Test helper: the campaigns that tests of more than one file write (a unit test plans it, an
end-to-end test runs it), as overrides of ``support.campaign``'s default campaign."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "EAGLE", "LOSSY", "OPT_DIMS", "SEED", "SEQUENTIAL", "capture", "command", "files", "optimize_campaign",
    "simrun",
]  # fmt: skip

#: the seed story's preset and memory fraction (``sim serve`` options; a ``--time-scale`` follows)
SEED = ["--preset", "dsv4-flash-8gpu", "--mem-fraction-static", "0.70"]
#: speculative decoding as the seed story's B asks for it (EAGLE, 1 step, top-1, 2 draft tokens)
EAGLE = ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "1",
         "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "2"]  # fmt: skip

#: the placeholders a ``command`` engine's argv fills (``{host}`` ``{port}`` ``{model}``)
SERVE_ON = ["--host", "{host}", "--port", "{port}", "--model", "{model}"]

#: C=1 probe: a word out, 4 tokens at most, and the length check at 4 tokens
PROBE_HI = {"probes": [{"prompt": "hi", "expect": r"\w", "max_tokens": 4}], "length_tokens": 4}


def simrun(itl: str = "4", fast: str = "3", requests: int = 8) -> dict[str, Any]:
    """``inferlab run``'s campaign: baseline (ITL ``itl`` ms), fast (``fast`` ms), broken (a
    negative TTFT: it cannot start), reseeded (other numbers, the same timing); C=1,4, two
    trials, greedy equivalence to the baseline."""
    return dict(
        name="simrun",
        args=["--ttft-ms", "10", "--itl-ms", itl],
        config=[
            {"name": "baseline"},
            {"name": "fast", "extends": "baseline", "set": {"--itl-ms": fast}},
            {"name": "broken", "set": {"--ttft-ms": "-1"}},
            {"name": "reseeded", "extends": "baseline", "args": ["--seed", "4"]},
        ],
        verify={
            "probes": [{"prompt": "hi", "expect": r"\w"}],
            "equivalent_to": "baseline",
            "equivalence_prompts": 2,
        },
        # verdicts are under test there, not trust (tests/unit/stats/test_trust.py)
        load={
            "workload": {"input_tokens": 16, "output_tokens": 16},
            "concurrency": [1, 4],
            "requests": requests,
            "trials": 2,
            "max_client_lag_ms": 1e6,
        },
    )


#: ``lossless``: a config with other numbers (not lossless), one that inherits that, one that
#: claims to be lossless anyway
LOSSY: dict[str, Any] = dict(
    name="lossy",
    config=[
        {"name": "baseline"},
        {
            "name": "other-numbers",
            "extends": "baseline",
            "args": ["--seed", "4"],
            "lossless": False,
        },
        {"name": "inherits", "extends": "other-numbers"},
        {"name": "claims-lossless", "extends": "other-numbers", "lossless": True},
    ],
    verify={"probes": [], "equivalent_to": "baseline", "equivalence_prompts": 2},
    load={"concurrency": [2]},
)

#: a sequential A/B (ITL 4 vs 2 ms) with adaptive request counts; the sequential rule is under
#: test there, not trust
SEQUENTIAL: dict[str, Any] = dict(
    name="seq",
    args=["--ttft-ms", "5", "--itl-ms", "4", "--jitter-ms", "0.3"],
    config=[
        {"name": "baseline"},
        {"name": "fast", "extends": "baseline", "set": {"--itl-ms": "2"}},
    ],
    load={
        "workload": {"input_tokens": 8, "output_tokens": 10},
        "concurrency": [2],
        "requests": "auto",
        "min_requests": 30,
        "max_requests": 160,
        "sequential": True,
        "max_client_lag_ms": 1e6,
    },
)


def capture(kind: str = "sim", url: str | None = None, **profile: Any) -> dict[str, Any]:
    """A profiled campaign of the seed preset: baseline and A (tuned FP8, NCCL LL) at C=1,16,
    1 s a point; ``profile`` is its ``[profile]`` section (default: at C=16)."""
    return dict(
        name="cap",
        engine={
            "kind": kind,
            # --time-scale 0.1: a decode step at C=16 takes ~69 ms, so the batch stays at ~16
            # while the client's turnaround is under a step (its lag p99 on a busy 2-CPU
            # machine: 1.5-2.5 ms); at 0.01 a step was ~7 ms and a loaded machine's
            # turnaround let the batch sag (attention led)
            "args": ["--preset", "dsv4-flash-8gpu", "--time-scale", "0.1", "--tp-size", "2"],
            "url": url,
        },
        config=[
            {"name": "baseline"},
            {
                "name": "A",
                "extends": "baseline",
                "args": ["--tuned-fp8"],
                "env": {"NCCL_PROTO": "LL"},
            },
        ],
        load={
            "workload": {"kind": "random", "input_tokens": 32, "output_tokens": 24},
            "concurrency": [1, 16],
            "requests": None,
            "duration_s": 1.0,
        },
        profile=profile or {"at": ["C=16"]},
    )


def files(python: Path, *more: dict[str, Any]) -> dict[str, Any]:
    """The files lever on the generic preset, served by ``python`` (an inferlab of its own,
    ``support.pkgcopy``): A installs the tuned files of ``tuned/`` beside the campaign file;
    ``more`` configs follow. The files lever is under test there, not trust."""
    return dict(
        name="files",
        engine={
            "python": python,
            "args": ["--preset", "generic", "--time-scale", "0.2"],
            "env": {"NCCL_DEBUG": "INFO"},
            "ready_timeout_s": 60,
        },
        config=[
            {"name": "baseline"},
            {
                "name": "A",
                "extends": "baseline",
                "env": {"NCCL_PROTO": "LL"},
                "files": {"fp8_gemm": "tuned"},
                "set": {"--max-running-requests": "64"},
            },
            *more,
        ],
        verify=PROBE_HI,
        load={
            "workload": {"input_tokens": 16, "output_tokens": 8},
            "requests": 8,
            "max_client_lag_ms": 1e6,
        },
    )


def command(python: str, tok: Path) -> dict[str, Any]:
    """The reference engine as any engine: a ``command`` whose argv runs ``sim serve``, the
    levers appended after it; baseline (ITL 2 ms) and slower (4 ms)."""
    return dict(
        name="cmd",
        engine={
            "kind": "command",
            "argv": [python, "-m", "inferlab.cli.main", "sim", "serve", *SERVE_ON],
            "args": ["--itl-ms", "2"],  # the levers: set/unset edit these, appended after argv
            "model": "served-by-a-command",
            "health": "/health",
            "metrics": "/metrics",
            "api": "openai",
        },
        config=[
            {"name": "baseline"},
            {"name": "slower", "extends": "baseline", "set": {"--itl-ms": "4"}},
        ],
        verify=PROBE_HI,
        load={"tokenizer": tok},
    )


#: optimize's test space: ``--itl-ms`` 2 beats the baseline's 4; ``--jitter-ms -1`` cannot start
OPT_DIMS = [
    {"flag": "--itl-ms", "values": ["4", "2"]},
    {"flag": "--jitter-ms", "values": ["0.2", "-1"]},
]


def optimize_campaign(
    tmp: Path, *, max_requests: int = 60, load: Any = None, **search: Any
) -> dict[str, Any]:
    """``inferlab optimize``'s campaign (name ``opt``): TTFT and ITL 4 ms, C=2 with a
    sequential A/B, its word tokenizer saved under ``tmp``; ``[search]`` for ``tpot_ms`` at C=2
    over ``OPT_DIMS``, ``search`` overriding it and ``load`` the load section's keys."""
    from inferlab.sim.tokenizer import WordTokenizer

    return dict(
        name="opt",
        args=["--ttft-ms", "4", "--itl-ms", "4", "--jitter-ms", "0.2"],
        load={
            "workload": {"input_tokens": 8, "output_tokens": 12},
            "concurrency": [2],
            "requests": "auto",
            "sequential": True,
            "min_requests": 20,
            "max_requests": max_requests,
            "tokenizer": WordTokenizer().save_hf(tmp / "tok"),
            **(load or {}),
        },
        search={
            "objective": "tpot_ms",
            "at": "C=2",
            "budget_trials": 4,
            "patience": 4,
            "seed": 1,
            "dim": OPT_DIMS,
            **search,
        },
    )
