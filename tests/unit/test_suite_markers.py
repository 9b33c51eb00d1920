"""The suite's own rules (tests/conftest.py): a ``serial`` test names the machine-wide resource
it needs, ``vllm`` tests are serial with their marker's reason, and ``ray`` tests are not (one
module, one worker); the serial pass's lanes pin each worker to CPUs of its own."""

from __future__ import annotations

import os

import pytest

from support import ROOT
from support.lanes import ENV, lane_cpus

pytest_plugins = ["pytester"]

CONFTEST = (ROOT / "tests" / "conftest.py").read_text()
INI = "[pytest]\nmarkers =\n    serial: x\n    ray: x\n    vllm: x\n"


def test_a_serial_marker_without_a_reason_is_refused(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.serial\ndef test_flips_on_timing():\n    pass\n"
    )
    res = pytester.runpytest("--collect-only", "-q")
    assert res.ret != 0
    res.stderr.fnmatch_lines(["*test_flips_on_timing: @pytest.mark.serial needs reason=*"])


def test_serial_tests_say_why(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        "import pytest\n\n"
        "@pytest.mark.serial(reason='a fixed port range: 8000-8010')\n"
        "def test_ports():\n    pass\n\n"
        "@pytest.mark.vllm\n"
        "def test_engine():\n    pass\n\n"
        "@pytest.mark.ray\n"
        "def test_cluster():\n    pass\n\n"
        "def test_plain():\n    pass\n"
    )
    res = pytester.runpytest("--collect-only", "-q", "-m", "serial")
    assert res.ret == 0
    res.stdout.fnmatch_lines(["*test_ports", "*test_engine", "2/4 tests collected*"])


def test_lanes_share_the_cpus_without_overlap() -> None:
    assert [lane_cpus(f"gw{i}", 2, (0, 1)) for i in range(2)] == [(0,), (1,)]
    assert [lane_cpus(f"gw{i}", 2, (0, 1, 2, 3, 4)) for i in range(2)] == [(0, 1), (2, 3, 4)]
    assert [lane_cpus(f"gw{i}", 3, (4, 5)) for i in range(3)] == [(4,), (5,), (4,)]


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="CPU affinity is Linux's")
def test_a_lane_worker_and_what_it_starts_run_on_its_cpus(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    want = lane_cpus("gw1", 2, cpus)
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        "import os, subprocess, sys\n\n"
        "def test_pinned():\n"
        f"    assert sorted(os.sched_getaffinity(0)) == {list(want)}\n"
        "    child = 'import os; print(sorted(os.sched_getaffinity(0)))'\n"
        "    out = subprocess.run([sys.executable, '-c', child], capture_output=True, text=True)\n"
        f"    assert out.stdout.strip() == '{list(want)}'\n"
    )
    for k, v in {ENV: "1", "PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2"}.items():
        monkeypatch.setenv(k, v)
    path = os.environ.get("PYTHONPATH")  # the subprocess imports support/ as this one does
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "tests"), *filter(None, [path])]))
    assert pytester.runpytest_subprocess("-q").ret == 0
    monkeypatch.delenv(ENV)  # without the Makefile's word, a worker is not pinned
    pytester.makepyfile(
        f"import os\n\ndef test_free():\n    assert sorted(os.sched_getaffinity(0)) == {list(cpus)}\n"
    )
    assert pytester.runpytest_subprocess("-q").ret == 0
