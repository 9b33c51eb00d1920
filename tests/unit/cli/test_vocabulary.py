"""One CLI vocabulary (cli/options.py), held by walking every command's parameters on the live
CLI object: CAMPAIGN the same everywhere, ``--format`` with values from one set, ``--json``
only as a hidden deprecated alias, ``--out`` a file and ``--out-dir`` a directory, ``--config``
for selecting and ``--as`` for the name stored under, shared options with one help text;
``bench``'s options covering the sweep's model, in panels. Then the old spellings: each still
works, does what the new one does, and says the new one on stderr."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest

import inferlab
from inferlab.cli.bench_options import FLAGS, INTERNAL, PANELS, fields_of
from inferlab.cli.lazy import load_command
from inferlab.cli.main import COMMANDS
from inferlab.cli.options import CAMPAIGN_HELP, FORMATS
from inferlab.config.bench import BenchConfig, WorkloadSpec
from support import FIXTURES
from support.cli import Cli

#: the commands that act on one campaign: it is their first argument, CAMPAIGN
SUBJECT = {"run", "optimize", "up", "down", "report", "levers"}
#: options every command that has them declares from cli/options.py: one help text each
SHARED = ("--db", "--campaign", "--as", "--out-dir", "--ray", "--dry-run", "--resume",
          "--no-verify")  # fmt: skip
DEPRECATED = re.compile(r"^deprecated: use (--[a-z-]+)")


def _walk(path: tuple[str, ...], cmd: Any) -> Iterator[tuple[str, Any]]:
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _walk((*path, name), sub)
    else:
        yield " ".join(path), cmd


LEAVES = dict(
    leaf for name, e in COMMANDS.items() for leaf in _walk((name,), load_command(name, e.target))
)


def _options(cmd: Any, hidden: bool | None = False) -> list[Any]:
    """``cmd``'s options (``hidden``: None for all, else only those hidden or shown)."""
    return [
        p for p in cmd.params
        if p.param_type_name == "option" and (hidden is None or bool(p.hidden) == hidden)
    ]  # fmt: skip


def _flag(cmd: Any, flag: str, hidden: bool | None = False) -> Any | None:
    found = [p for p in _options(cmd, hidden) if flag in p.opts]
    assert len(found) <= 1, flag
    return found[0] if found else None


def _choices(p: Any) -> list[str]:
    """An option's values: its ``Literal[...]`` (in an optional too), as typer makes a choice."""
    out: list[str] = []
    todo = [p.type_descriptor.annotation]
    while todo:
        t = todo.pop()
        if get_origin(t) is Literal:
            out += [str(a) for a in get_args(t)]
        else:
            todo += [a for a in get_args(t) if a is not type(None)]
    return out


def test_the_walk_sees_every_command() -> None:
    assert len(COMMANDS) == 19 and len(LEAVES) == 22
    assert sum(len(_options(c, None)) for c in LEAVES.values()) >= 190


def test_campaign_is_one_parameter_spelled_one_way() -> None:
    with_campaign = set()
    for name, cmd in LEAVES.items():
        params = [p for p in cmd.params if "campaign" in (p.name or "")]
        if not params:
            continue
        with_campaign.add(name)
        assert len(params) == 1, name
        (p,) = params
        assert p.name == "campaign" and p.help == CAMPAIGN_HELP, name
        if name in SUBJECT:  # its first argument
            assert p.param_type_name == "argument" and cmd.params[0] is p, name
            assert p.metavar == "CAMPAIGN", name
        else:
            assert p.param_type_name == "option" and p.opts == ["--campaign"], name
            assert p.metavar == "CAMPAIGN", name
    assert with_campaign >= SUBJECT | {"bench", "compare", "runs", "export", "import"}
    assert len(with_campaign) == 15


def test_format_not_json_and_deprecated_aliases_name_a_live_option() -> None:
    with_format = set()
    for name, cmd in LEAVES.items():
        assert _flag(cmd, "--json") is None, f"{name}: --json is only a hidden alias"
        fmt = _flag(cmd, "--format")
        if fmt is not None:
            with_format.add(name)
            choices = _choices(fmt)
            assert set(choices) <= set(FORMATS), (name, choices)
            assert fmt.default == ("table" if "table" in choices else None), name
        for old in _options(cmd, hidden=True):
            m = DEPRECATED.match(old.help or "")
            assert m, (name, old.opts)
            assert _flag(cmd, m.group(1)) is not None, (name, old.opts, m.group(1))
            if old.opts == ["--json"]:
                assert fmt is not None and "json" in _choices(fmt), name
    # every command that printed JSON (--json in 7 commands before) takes --format
    assert with_format >= {"bench", "levers", "logs analyze", "optimize", "profile", "recon",
                           "tune fp8-gemm", "compare", "export", "runs"}  # fmt: skip


def test_out_is_a_file_and_out_dir_a_directory() -> None:
    for name, cmd in LEAVES.items():
        out, out_dir = _flag(cmd, "--out"), _flag(cmd, "--out-dir")
        assert out is None or out.metavar == "FILE", name
        assert out_dir is None or out_dir.metavar == "DIR", name
        for p in cmd.params:  # an argument that is a directory says so in its name
            if p.param_type_name == "argument" and not p.hidden:
                assert p.name != "out", name
    assert _flag(LEAVES["report"], "--out-dir") and _flag(LEAVES["tune fp8-gemm"], "--out-dir")
    assert _flag(LEAVES["bench"], "--out") and _flag(LEAVES["export"], "--out")


def test_config_selects_and_as_names() -> None:
    for name, cmd in LEAVES.items():
        config = _flag(cmd, "--config")
        assert config is None or (config.help or "").startswith("Only this config"), name
        as_ = _flag(cmd, "--as")
        assert as_ is None or as_.metavar == "CONFIG", name
    assert {n for n, c in LEAVES.items() if _flag(c, "--as")} == {"bench", "import", "profile"}
    assert {n for n, c in LEAVES.items() if _flag(c, "--config")} == {"run", "runs", "levers"}


def test_shared_options_have_one_help_text() -> None:
    for flag in SHARED:
        found = [_flag(c, flag) for c in LEAVES.values()]
        texts = {p.help for p in found if p is not None}
        assert len(texts) == 1, (flag, texts)


def test_bench_options_cover_the_sweeps_model_and_sit_in_panels() -> None:
    set_by = fields_of(FLAGS)
    for field in BenchConfig.model_fields:
        covered = field in set_by or any(f.startswith(field + ".") for f in set_by)
        assert covered or field in INTERNAL, f"BenchConfig.{field}: no bench option sets it"
    for field in WorkloadSpec.model_fields:
        assert "workload." + field in set_by, field
    bench = LEAVES["bench"]
    flags = {f.option for f in FLAGS}
    assert flags <= {o for p in _options(bench) for o in p.opts}
    for p in _options(bench):
        if p.opts != ["--help"]:
            assert p.rich_help_panel in PANELS, p.opts
    for f in FLAGS:  # the model's default is the option's (a text option: None, unset)
        p = _flag(bench, f.option)
        if f.parse is None and f.into is None:
            info = f.model_field()
            assert p.default == (None if info.is_required() else info.default), f.option


# ------------------------------------------------------------------------- old spellings


def _warned(stderr: str, old: str, new: str) -> None:
    one = " ".join(stderr.split())
    assert f"deprecated: {old} is now {new}" in one, stderr


IMPORT = FIXTURES / "imports" / "guidellm-0.8.1_concurrent4_sim.json"
TRACE = FIXTURES / "traces" / "vllm_cpu_decode_c1.pt.trace.json.gz"


@pytest.fixture
def db(cli: Cli, tmp_path: Path) -> Path:
    """A store with one imported campaign ``imp`` and its config ``g``."""
    path = tmp_path / "s.db"
    r = cli("import", str(IMPORT), "--db", str(path), "--campaign", "imp", "--as", "g")
    assert r.exit_code == 0 and "deprecated" not in r.stderr, r
    return path


def test_json_still_works_and_says_format_json(cli: Cli) -> None:
    new = cli("profile", str(TRACE), "--format", "json")
    old = cli("profile", str(TRACE), "--json")
    assert new.exit_code == old.exit_code == 0, old
    assert json.loads(old.stdout) == json.loads(new.stdout)
    _warned(old.stderr, "--json", "--format json")
    assert "deprecated" not in new.stderr


def test_config_as_the_stored_name_still_works_and_says_as(
    cli: Cli, db: Path, tmp_path: Path
) -> None:
    r = cli("import", str(IMPORT), "--db", str(db), "--campaign", "old", "--config", "g2")
    assert r.exit_code == 0, r
    _warned(r.stderr, "--config", "--as")
    rows = json.loads(cli("runs", "--db", str(db), "--format", "json").stdout)["runs"]
    assert {(x["campaign"], x["config"]) for x in rows} == {("imp", "g"), ("old", "g2")}
    bad = cli("import", str(IMPORT), "--db", str(db), "--as", "a", "--config", "b")
    assert bad.exit_code == 2 and "--as and --config: give one" in bad.stderr


def test_out_for_a_directory_still_works_and_says_out_dir(
    cli: Cli, db: Path, tmp_path: Path
) -> None:
    new = cli("report", "imp", "--db", str(db), "--out-dir", str(tmp_path / "new"))
    old = cli("report", "imp", "--db", str(db), "--out", str(tmp_path / "old"))
    assert new.exit_code == old.exit_code == 0, old
    assert (tmp_path / "old" / "report.md").is_file() and "deprecated" not in new.stderr
    _warned(old.stderr, "--out", "--out-dir")


def test_export_out_as_an_argument_still_works_and_says_out(
    cli: Cli, db: Path, tmp_path: Path
) -> None:
    new = cli("export", "--out", str(tmp_path / "new.csv"), "--db", str(db))
    old = cli("export", str(tmp_path / "old.csv"), "--db", str(db))
    assert new.exit_code == old.exit_code == 0, old
    assert (tmp_path / "old.csv").read_text() == (tmp_path / "new.csv").read_text()
    _warned(old.stderr, "export OUT", "export --out OUT")
    missing = cli("export", "--db", str(db))
    assert missing.exit_code == 2 and "--out: the file to write is missing" in missing.stderr


# ------------------------------------------------------------------------- CAMPAIGN


def _campaign_file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "camp.toml"
    text = (Path(inferlab.__file__).parent / "examples" / "sim-dsv4.toml").read_text()
    path.write_text(text.replace('name = "sim-dsv4"', f'name = "{name}"', 1))
    return path


def test_campaign_is_a_file_or_a_stored_name_everywhere(cli: Cli, db: Path, tmp_path: Path) -> None:
    camp = _campaign_file(tmp_path, "imp")
    by_file = cli("report", str(camp), "--db", str(db), "--out-dir", str(tmp_path / "f"))
    assert by_file.exit_code == 0, by_file
    assert (tmp_path / "f" / "report.md").read_text().count("imp") >= 1
    rows = cli("runs", "--db", str(db), "--campaign", str(camp), "--format", "json")
    assert {x["campaign"] for x in json.loads(rows.stdout)["runs"]} == {"imp"}
    plan = cli("run", "imp", "--dry-run", "--db", str(db), cwd=tmp_path)  # the file named imp
    assert plan.exit_code == 0 and "imp" in plan.stdout, plan
    shutil.copy(camp, tmp_path / "named.toml")
    plan = cli("run", "named", "--dry-run", "--db", str(db), cwd=tmp_path)  # named.toml
    assert plan.exit_code == 0, plan
    gone = cli("run", "nope", "--dry-run", cwd=tmp_path)
    assert gone.exit_code == 2 and "CAMPAIGN: 'nope' is no campaign file" in gone.stderr
    missing = cli("report", "missing.toml", "--db", str(db))
    assert missing.exit_code == 2 and "CAMPAIGN: missing.toml: no such campaign file" in (
        missing.stderr
    )
