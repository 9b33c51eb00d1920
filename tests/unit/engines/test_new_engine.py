"""A new engine kind, declared in one place (this module: its ``EngineSpec`` and its log-format
table), works through launch argv building, log mining, OOM advice, recon and tune path lookup
with no other change (docs/design.md "Worked example: a new engine")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.engines import (
    EngineSpec,
    Fp8Tuning,
    Launcher,
    LogFacts,
    OomAdvice,
    ReconFacts,
    get_engine,
    register,
    unregister,
)
from inferlab.engines.base import ConfigDir, fp8_gemm_names
from inferlab.engines.logs import fatal_sig
from inferlab.errors import ConfigError
from inferlab.logs import analyze_log
from inferlab.logs.formats.base import f_, s_, step
from inferlab.logs.formats.common import launch_flag
from inferlab.recon import ENGINES as RECON_ENGINES
from inferlab.recon import config_dirs_for
from inferlab.recon.probe import distributions, engine_packages
from inferlab.tune.backends import BackendContext, triton_verdict
from inferlab.tune.config import KernelConfig, engine_default, tune_engines
from inferlab.tune.files import config_file_name

E = "toyllm"

# -- its log-format table (what ``LogFacts.formats`` names: this module) ----------------------

#: names in a line that hint at it
MARKERS = ("toyllm/",)
#: its build line and its memory flag hold none of the reader's anchors
ANCHORS = (b"Engine built", b"kv-fraction")
FORMATS = (
    step(E, "weights-loading", "Loading engine", r"Loading engine from (?P<path>\S+)",
         "weight-loading", s_("path")),
    step(E, "engine-built", "Engine built", r"Engine built in (?P<seconds>[\d.]+) s",
         "graph-capture", f_("seconds", "s")),
    step(E, "ready", "Server ready", r"Server ready on (?P<url>\S+)", "serving", s_("url")),
    # its memory share, as its command line shows it (what OomAdvice.memory_flag names)
    launch_flag("kv_fraction", ("kv-fraction",), r"[\d.]+"),
)  # fmt: skip

# -- its spec ----------------------------------------------------------------------------------

SPEC = EngineSpec(
    name=E,
    description="a test-only engine (docs/design.md worked example)",
    launchers=(Launcher("cli", ("toyllm-serve",), model_flag="--model"),),
    log_signatures=(
        fatal_sig(
            "engine_build_failed",
            r"ToyLLM engine build failed",
            remedy="rebuild the engine for this GPU",
            source="this test",
        ),
    ),
    config_dirs=(
        ConfigDir("fp8_gemm", "toyllm", "kernels/configs", fp8_gemm_names(","), tuner_engine=E),
    ),
    recon=ReconFacts("toyllm", (("-m", "toyllm.serve", "--help"),), distributions=("toyllm",)),
    fp8_tuning=Fp8Tuning(",", (32, 64, 128, 8, 4, 2)),
    logs=LogFacts("ToyLLM", __name__, "ToyLLM 'Engine built' lines"),
    oom=OomAdvice(
        "kv_fraction",
        "--kv-fraction",
        0.1,
        "or cap --max-batch",
        "lower --kv-fraction or cap --max-batch",
    ),
)


@pytest.fixture
def toy() -> Iterator[EngineSpec]:
    register(SPEC)
    yield SPEC
    unregister(E)


def test_launch_argv(toy: EngineSpec) -> None:
    argv = get_engine(E).launch_argv(
        "m", host="127.0.0.1", port=8000, python="py", args=["--kv-fraction", "0.8"]
    )
    assert argv == ["toyllm-serve", "--model", "m", "--host", "127.0.0.1", "--port", "8000",
                    "--kv-fraction", "0.8"]  # fmt: skip
    with pytest.raises(ConfigError, match="--port is set by inferlab"):
        get_engine(E).launch_argv("m", host="h", port=1, python="py", args=["--port", "2"])


def test_log_mining_detects_it_and_its_failures(toy: EngineSpec, tmp_path: Path) -> None:
    log = tmp_path / "toyllm.log"
    log.write_text(
        "[toyllm/serve.py] Loading engine from /models/tiny\n"
        "[toyllm/serve.py] Engine built in 12.5 s\n"
        "[toyllm/serve.py] Capturing CUDA graph for batch sizes 1..64\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "ToyLLM engine build failed\n"
    )
    a = analyze_log(log)
    assert a.engine == E and a.engine_hits == {E: 2}
    assert [(m.name, m.line, m.engine) for m in a.timeline][:2] == [
        ("weights-loading", 1, E),
        ("engine-built", 2, E),
    ]
    assert analyze_log(log, engine=E).engine == E  # --engine takes it
    kinds = {f.kind: f for f in a.findings}
    assert kinds["oom-graph-capture"].action == "Lower --kv-fraction or cap --max-batch"
    fail = kinds["launch-failure"]
    assert fail.message.startswith("ToyLLM failed: engine build failed (line 5")
    assert fail.action == "rebuild the engine for this GPU"
    # with its memory flag in the log, the advice quotes it and suggests a value one step lower
    log.write_text("[toyllm/serve.py] args: --model m --kv-fraction 0.80\n" + log.read_text())
    (oom,) = [f for f in analyze_log(log).findings if f.kind == "oom-graph-capture"]
    assert "OOM during CUDA-graph capture at --kv-fraction 0.80" in oom.message
    assert oom.action == "Lower it (e.g. 0.70) or cap --max-batch"
    assert oom.evidence["kv_fraction"] == 0.8 and oom.evidence["kv_fraction_line"] == 1


def test_its_ready_line_and_an_unrecognised_log(toy: EngineSpec, tmp_path: Path) -> None:
    log = tmp_path / "ready.log"
    log.write_text("Server ready on http://127.0.0.1:8000\n")
    (ready,) = analyze_log(log).timeline
    assert (ready.name, ready.values, ready.engine) == (
        "ready",
        {"url": "http://127.0.0.1:8000"},
        E,
    )
    log.write_text("nothing an engine prints\n")
    assert "ToyLLM 'Engine built' lines" in analyze_log(log).unknown_reason()


def test_recon_and_tune_paths(toy: EngineSpec) -> None:
    assert E in RECON_ENGINES and "toyllm" in engine_packages() and "toyllm" in distributions()
    assert config_dirs_for(E, Path("/site/toyllm")) == {
        "fp8_gemm": Path("/site/toyllm/kernels/configs")
    }
    assert E in tune_engines()
    assert config_file_name(E, 1024, 2048, "NVIDIA H200") == (
        "N=1024,K=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json"
    )
    assert engine_default(E) == KernelConfig(32, 64, 128, 8, 4, 2)
    v = triton_verdict(E, BackendContext(1024, 2048, (9, 0)))  # no backend rule: a warning
    assert v.uses_triton is None and v.warning is not None


def test_gone_once_unregistered() -> None:
    assert E not in RECON_ENGINES and E not in tune_engines()
    with pytest.raises(ConfigError, match="unknown kind"):
        get_engine(E)
