"""Engine config files: exact names, the engines' formatting, merge into real shipped files,
never truncating, refusing corrupt files, atomic replacement."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferlab.errors import ConfigError
from inferlab.tune.config import KernelConfig
from inferlab.tune.files import (
    config_file_name,
    merge_entries,
    read_config_file,
    render_config,
    write_config_file,
)
from support import FIXTURES
from support.fuzzing import (
    byte_mutation,
    fuzz,
    parses_or_names_file,
    tree_mutation,
    tree_target,
    write,
)

FIX = FIXTURES / "tune"
VLLM = (
    FIX / "vllm" / "N=2112,K=7168,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json"
)
SGL = (
    FIX
    / "sglang"
    / "N=2304,K=7168,device_name=NVIDIA_H20,dtype=fp8_w8a8,block_shape=[128, 128].json"
)

NEW = KernelConfig(16, 64, 128, 1, 8, 5)


def test_names_are_exactly_the_engines() -> None:
    assert config_file_name("vllm", 2112, 7168, "NVIDIA H200") == VLLM.name
    assert config_file_name("sglang", 2304, 7168, "NVIDIA H20") == SGL.name
    assert config_file_name("sglang", 7168, 2048, "NVIDIA H100 80GB HBM3") == (
        "N=7168,K=2048,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128, 128].json"
    )
    with pytest.raises(ConfigError, match="sglang, vllm"):
        config_file_name("trtllm", 1, 1, "x")


@pytest.mark.parametrize("path", [VLLM, SGL], ids=["vllm", "sglang"])
def test_shipped_files_round_trip_byte_for_byte(path: Path) -> None:
    entries = read_config_file(path)
    assert list(entries)[:3] == [1, 2, 4] and len(entries) == 18
    assert render_config(entries) == path.read_text()


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / VLLM.name
    shutil.copyfile(VLLM, dst)
    return dst


def test_merge_into_shipped_file(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    before = json.loads(path.read_text())
    w = write_config_file(tmp_path, "vllm", 2112, 7168, "NVIDIA H200", {8: NEW, 200: NEW})
    assert w.path == path
    assert w.added == [200] and w.replaced == [8] and w.unchanged == []
    assert len(w.kept) == 17 and 8 not in w.kept
    after = json.loads(path.read_text())
    # numeric order, not lexicographic: 200 sits between 128 and 256
    assert list(after) == [
        "1", "2", "4", "8", "16", "24", "32", "48", "64", "96", "128", "200", "256", "512",
        "1024", "1536", "2048", "3072", "4096",
    ]  # fmt: skip
    assert after["8"] == NEW.to_engine() and after["200"] == NEW.to_engine()
    assert {m: e for m, e in after.items() if m not in ("8", "200")} == {
        m: e for m, e in before.items() if m != "8"
    }
    assert path.read_text().endswith("}\n") and '\n    "1": {\n        "BLOCK_SIZE_M"' in (
        path.read_text()
    )


def test_same_value_is_unchanged_and_bytes_identical(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    e = read_config_file(path)[1024]
    w = write_config_file(
        tmp_path, "vllm", 2112, 7168, "NVIDIA H200", {1024: KernelConfig.from_engine(e)}
    )
    assert w.unchanged == [1024] and w.added == [] and w.replaced == []
    assert path.read_bytes() == VLLM.read_bytes()


def test_never_truncates(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    write_config_file(tmp_path, "vllm", 2112, 7168, "NVIDIA H200", {1: NEW})
    assert len(json.loads(path.read_text())) == 18
    with pytest.raises(ValueError, match="no configs"):
        write_config_file(tmp_path, "vllm", 2112, 7168, "NVIDIA H200", {})
    assert len(json.loads(path.read_text())) == 18


def test_new_file_in_new_directory(tmp_path: Path) -> None:
    d = tmp_path / "a" / "b"
    w = write_config_file(d, "sglang", 7168, 2048, "NVIDIA H200", {16: NEW, 1: NEW})
    assert w.added == [1, 16] and w.kept == []
    assert list(json.loads(w.path.read_text())) == ["1", "16"]
    assert w.path.name.endswith("block_shape=[128, 128].json")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"1": {"BLOCK_SIZE_M": 16,', "not valid JSON (line 1"),
        ("[1, 2]", "JSON object"),
        ('{"one": {}}', "'one' is not a batch size"),
        ('{"1": {"BLOCK_SIZE_M": 16}}', "entry '1' must be an object with"),
    ],
)
def test_corrupt_existing_file_is_named_and_left_alone(
    tmp_path: Path, content: str, needle: str
) -> None:
    path = tmp_path / config_file_name("vllm", 2112, 7168, "NVIDIA H200")
    path.write_text(content)
    with pytest.raises(ConfigError) as ei:
        write_config_file(tmp_path, "vllm", 2112, 7168, "NVIDIA H200", {1: NEW})
    assert str(path) in str(ei.value) and needle in str(ei.value)
    assert "nothing was written" in str(ei.value)
    assert path.read_text() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_write_is_atomic_rename(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    os.chmod(path, 0o640)
    inode = path.stat().st_ino
    with path.open() as reader:  # a reader that opened the old file keeps reading all of it
        write_config_file(tmp_path, "vllm", 2112, 7168, "NVIDIA H200", {8: NEW})
        assert reader.read() == VLLM.read_text()
    st = path.stat()
    assert st.st_ino != inode  # replaced by rename, never rewritten in place
    assert st.st_mode & 0o777 == 0o640  # permissions of the replaced file kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary left


def test_split_k_never_goes_into_an_engine_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="split-K"):
        merge_entries({}, {1: KernelConfig(16, 64, 128, 1, 4, 3, 4)})
    with pytest.raises(ValueError, match="split-K"):
        write_config_file(tmp_path, "vllm", 1, 1, "x", {1: KernelConfig(16, 64, 128, 1, 4, 3, 4)})
    assert list(tmp_path.iterdir()) == []


def test_engine_lookup_reads_merged_file(tmp_path: Path) -> None:
    # what the engines do: int keys, nearest M
    path = _copy(tmp_path)
    write_config_file(tmp_path, "vllm", 2112, 7168, "NVIDIA H200", {200: NEW})
    cfgs = {int(k): v for k, v in json.loads(path.read_text()).items()}
    nearest = cfgs[min(cfgs, key=lambda x: abs(x - 190))]
    assert nearest == NEW.to_engine()


# --- fuzzing: tuned kernel-config JSON mutated (settings: tests/support/fuzzing.py)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# ----------------------------------------------------------------------------- tuned configs

TUNED = sorted(FIXTURES.glob("tune/*/*.json"))
TUNED_SEEDS = tree_target([json.loads(p.read_text()) for p in TUNED])


@fuzz(150)
@given(data=st.data())
def test_tuned_config_json_mutated(tmp: Path, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(TUNED) - 1))
    if data.draw(st.booleans()):
        raw = data.draw(byte_mutation(TUNED[i].read_bytes()))
    else:
        raw = json.dumps(data.draw(tree_mutation(TUNED_SEEDS[0][i], TUNED_SEEDS[1][i]))).encode()
    parses_or_names_file(read_config_file, write(tmp, TUNED[i].name, raw))
