"""``benchmarks/h200_launch_ab.py``: each config's port (one URL, one config row, at every
launch), and ``--summarize`` over the launches of two device calls."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from support import ROOT

CAMPAIGN = ROOT / "src" / "inferlab" / "examples" / "vllm-h200.toml"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "h200ab", ROOT / "benchmarks" / "h200_launch_ab.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _session(mod: ModuleType, tmp: Path, order: str, campaign: Path = CAMPAIGN) -> object:
    a = argparse.Namespace(
        campaign=campaign, out=tmp, order=order, port=8431, deadline_s=10.0, name="vllm-h200"
    )
    return mod.Session(a)


def test_each_config_keeps_its_port_whatever_the_order(tmp_path: Path) -> None:
    mod = _module()
    ports = {}
    for order in ("baseline,A", "A,baseline"):
        s = _session(mod, tmp_path, order)
        for cfg in ("baseline", "A"):
            text = mod.config_file(s, cfg).read_text()
            ports[(order, cfg)] = [ln for ln in text.splitlines() if ln.startswith("port = ")]
    assert ports[("baseline,A", "A")] == ports[("A,baseline", "A")] == ["port = 8432"]
    assert ports[("A,baseline", "baseline")] == ["port = 8431"]


def test_a_config_the_file_lacks_is_refused_naming_the_file(tmp_path: Path) -> None:
    mod = _module()
    with pytest.raises(SystemExit, match=r"vllm-h200\.toml: no config 'B'"):
        mod.config_file(_session(mod, tmp_path, "B"), "B")
    flat = tmp_path / "flat.toml"
    flat.write_text('[[config]]\nname = "baseline"\n')
    with pytest.raises(SystemExit, match="expected one \\[engine\\] line, found 0"):
        mod.config_file(_session(mod, tmp_path, "baseline", flat), "baseline")


def _read(client: str, c: int, tpot: float | None) -> dict[str, object]:
    return {"client": client, "concurrency": c, "tpot_ms": tpot}


def test_the_summary_reads_each_launchs_first_c1_tpot_and_the_repeats(tmp_path: Path) -> None:
    one = {"launches": [
        {"index": 0, "config": "baseline",
         "reads": [_read("inferlab", 1, 3.0), _read("inferlab", 32, 4.5), _read("vllm", 1, 3.1)]},
        {"index": 1, "config": "A", "reads": [_read("vllm", 1, 2.0), _read("inferlab", 1, 2.2)]},
    ]}  # fmt: skip
    two = {"launches": [
        {"index": 2, "config": "A", "reads": [
            _read("vllm", 1, 1.9), _read("inferlab", 1, 2.3), _read("vllm", 1, 2.1),
            _read("inferlab", 1, 2.25), _read("vllm", 1, None), _read("inferlab", 1, 2.2)]},
        {"index": 3, "config": "baseline",
         "reads": [_read("vllm", 1, 3.0), _read("inferlab", 1, 3.05)]},
    ]}  # fmt: skip
    paths = []
    for n, doc in enumerate((one, two)):
        paths.append(tmp_path / f"ab{n}.json")
        paths[-1].write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "benchmarks/h200_launch_ab.py", "--summarize", *map(str, paths)],
                       cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "| 0 | baseline | 3.000 | 3.100 | C=32 4.500 |" in out
    assert "| 2 | A | 2.300 | 1.900 |  |" in out  # the first read of each client
    il = math.sqrt(2.2 * 2.3) / math.sqrt(3.0 * 3.05)
    vl = math.sqrt(2.0 * 1.9) / math.sqrt(3.1 * 3.0)
    assert f"inferlab: A / baseline = ×{il:.3f} (geometric means of 2 and 2 launches)" in out
    assert f"vllm: A / baseline = ×{vl:.3f}" in out
    assert ("repeats on launch 2 (A), in order: vllm 1.900, inferlab 2.300, vllm 2.100, "
            "inferlab 2.250, vllm –, inferlab 2.200") in out  # fmt: skip


def test_the_repeats_launch_keeps_its_ab_pair_past_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2026-12-07 on the H100: the deadline check before the first repeat left launch 4 with
    # no C=1 read at all; the first pair is the A/B's and is read whatever the deadline
    mod = _module()
    s = _session(mod, tmp_path, "A")
    s.a.deadline_s, s.a.vllm, s.a.hi = -1.0, True, 0  # already past it
    reads: list[tuple[str, str]] = []

    def fake(who: str):  # type: ignore[no-untyped-def]
        def read(_s, _ln, conc, _n, name=None):  # type: ignore[no-untyped-def]
            reads.append((who, name or ""))
            return {"client": who, "concurrency": conc, "tpot_ms": 1.0}

        return read

    monkeypatch.setattr(mod, "vllm_read", fake("vllm"))
    monkeypatch.setattr(mod, "inferlab_read", fake("inferlab"))
    ln: dict[str, object] = {"index": 4, "config": "A", "reads": []}
    s.doc["launches"].append(ln)
    mod._reads(s, ln, 3)
    assert reads == [("vllm", ""), ("inferlab", "vllm-h200")]  # the A/B's pair, no repeats
