"""Fuzzing the readers of files users write or other tools produce: campaign files (TOML,
YAML), server logs, benchmark results of other tools, tuned kernel-config JSON — each from the
real fixtures (property and settings: ``tests/fuzzing.py``)."""

from __future__ import annotations

import gzip
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.fuzzing import (
    FIX,
    ROOT,
    byte_mutation,
    fuzz,
    parses_or_names_file,
    paths_of,
    tree_mutation,
    tree_target,
    write,
)

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
import yaml

from inferlab.campaign.runner import make_plan
from inferlab.logs import analyze_log
from inferlab.store.imports import parse_file
from inferlab.tune.files import read_config_file

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


_COUNT = itertools.count()


# ----------------------------------------------------------------------------- campaign files

CAMPAIGNS = sorted((ROOT / "examples").glob("*.toml"))
CAMPAIGN_TEXT = [p.read_bytes() for p in CAMPAIGNS]
CAMPAIGN_TREES = tree_target([tomllib.loads(p.read_text()) for p in CAMPAIGNS])


@fuzz(150)
@given(data=st.data())
def test_campaign_toml_mutated(tmp: Path, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(CAMPAIGN_TEXT))
    parses_or_names_file(make_plan, write(tmp, "c.toml", data.draw(byte_mutation(seed))))


@fuzz(150)
@given(data=st.data())
def test_campaign_yaml_tree_mutated(tmp: Path, data: st.DataObject) -> None:
    seeds, paths = CAMPAIGN_TREES
    i = data.draw(st.integers(0, len(seeds) - 1))
    text = yaml.safe_dump(data.draw(tree_mutation(seeds[i], paths[i]))).encode()
    if data.draw(st.booleans()):
        text = data.draw(byte_mutation(text))
    parses_or_names_file(make_plan, write(tmp, "c.yaml", text))


# ----------------------------------------------------------------------------- server logs

LOGS = sorted(FIX.glob("engine_logs/**/*.log")) + sorted(FIX.glob("vllm_cpu/*.log"))
LOG_LINES = [ln for p in LOGS for ln in p.read_bytes().splitlines(keepends=True)]


@fuzz(100)
@given(st.binary(max_size=4096))
def test_log_random_bytes(tmp: Path, blob: bytes) -> None:
    parses_or_names_file(analyze_log, write(tmp, "r.log", blob))


@fuzz(200)
@given(data=st.data())
def test_log_mutated_real_lines(tmp: Path, data: st.DataObject) -> None:
    lines = data.draw(st.lists(st.sampled_from(LOG_LINES), min_size=1, max_size=40))
    out = [data.draw(byte_mutation(ln)) if data.draw(st.booleans()) else ln for ln in lines]
    engine = data.draw(st.sampled_from(["auto", "sglang", "vllm", "llamacpp"]))
    parses_or_names_file(lambda p: analyze_log(p, engine), write(tmp, "m.log", b"".join(out)))


@fuzz(40)
@given(data=st.data())
def test_log_gzip_truncated(tmp: Path, data: st.DataObject) -> None:
    raw = gzip.compress(data.draw(st.sampled_from(LOGS)).read_bytes())
    cut = data.draw(st.integers(0, len(raw) - 1))
    parses_or_names_file(analyze_log, write(tmp, "t.log.gz", raw[:cut]))


def test_log_truncated_at_every_offset(tmp: Path) -> None:
    """A real SGLang OOM log cut at each of its byte offsets (every partial last line)."""
    real = (
        FIX / "engine_logs/oom_graph_capture/sglang-issue5285_deepep-h20-capture-oom-traceback.log"
    )
    raw = real.read_bytes()
    for cut in range(len(raw) + 1):
        parses_or_names_file(analyze_log, write(tmp, "cut.log", raw[:cut]))


# ----------------------------------------------------------------------------- importers

IMPORTS = sorted(p for p in FIX.glob("imports/**/*") if p.is_file())


def _import_seed(path: Path) -> tuple[bool, Any]:
    text = path.read_text()
    try:
        return False, json.loads(text)
    except ValueError:
        return True, [json.loads(x) for x in text.splitlines() if x.strip()]


IMPORT_SEEDS = [_import_seed(p) for p in IMPORTS]
IMPORT_PATHS = [list(paths_of(doc)) for _, doc in IMPORT_SEEDS]


@fuzz(200)
@given(data=st.data())
def test_importers_mutated(tmp: Path, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(IMPORTS) - 1))
    jsonl, doc = IMPORT_SEEDS[i]
    if data.draw(st.booleans()):
        raw = data.draw(byte_mutation(IMPORTS[i].read_bytes()))
    else:
        doc = data.draw(tree_mutation(doc, IMPORT_PATHS[i]))
        lines = doc if jsonl and isinstance(doc, list) else [doc]
        raw = "\n".join(json.dumps(x) for x in lines).encode()
    d = tmp / f"imp{next(_COUNT)}"
    if IMPORTS[i].parent == FIX / "imports":
        d.mkdir()
    else:  # an AIPerf export: read with its sibling file
        shutil.copytree(IMPORTS[i].parent, d)
    siblings = tuple(p for p in d.iterdir() if p.name != IMPORTS[i].name)
    parses_or_names_file(parse_file, write(d, IMPORTS[i].name, raw), siblings)
    shutil.rmtree(d)


# ----------------------------------------------------------------------------- tuned configs

TUNED = sorted(FIX.glob("tune/*/*.json"))
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
