"""The suite's own rules (tests/conftest.py): a ``serial`` test names the machine-wide resource
it needs, ``vllm`` tests are serial with their marker's reason, and ``ray`` tests are not (one
module, one worker)."""

from __future__ import annotations

import pytest

from support import ROOT

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
