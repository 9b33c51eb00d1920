"""Running the harness (``verify.lmeval``) without it: the Python it runs in, what it is told,
how its samples are read, and what a missing extra or a failed run say."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from inferlab.config.campaign import load_campaign
from inferlab.config.evalgate import EvalGate
from inferlab.errors import ConfigError
from inferlab.verify.lmeval import (
    HarnessFailed,
    HarnessRun,
    driver_args,
    harness_python,
    run_harness,
    sample_scores,
)
from support import FIXTURES
from support.campaign import write_campaign


def _run(name: str = "sim_words_seed0") -> HarnessRun:
    return HarnessRun.from_json(json.loads((FIXTURES / "lm_eval" / f"{name}.json").read_text()))


def test_without_the_extra_the_error_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "lm_eval" else real(n, *a)
    )
    monkeypatch.setenv("INFERLAB_CACHE", str(tmp_path / "empty"))  # no cached environment
    with pytest.raises(ConfigError, match=r"pip install 'inferlab\[eval\]'"):
        harness_python(EvalGate(tasks=["gsm8k"]))
    with pytest.raises(ConfigError, match="verify.eval.python: /nowhere/python does not exist"):
        harness_python(EvalGate(tasks=["gsm8k"], python="/nowhere/python"))


def test_the_harness_is_told_the_endpoint_and_no_tokenizer_by_default(tmp_path: Path) -> None:
    gate = EvalGate(tasks=["gsm8k", "arc_easy"], limit=200, num_fewshot=5)
    a = driver_args(gate, "http://127.0.0.1:8000/", "tiny", tmp_path / "o.json")
    assert a["model"] == "local-completions" and a["tasks"] == ["gsm8k", "arc_easy"]
    m = a["model_args"]
    assert m["base_url"] == "http://127.0.0.1:8000/v1/completions" and m["model"] == "tiny"
    assert m["tokenizer_backend"] is None and m["tokenized_requests"] is False
    assert (a["limit"], a["num_fewshot"], a["defaults"]) == (200, 5, True)
    chat = driver_args(
        EvalGate(tasks=["t"], api="chat", tokenizer="/models/tiny"), "http://h:1", "m", tmp_path
    )
    assert chat["model"] == "local-chat-completions" and chat["chat"] is True
    assert chat["model_args"]["base_url"] == "http://h:1/v1/chat/completions"
    assert chat["model_args"]["tokenizer_backend"] == "huggingface"
    assert chat["model_args"]["tokenizer"] == "/models/tiny"


def test_a_harness_that_fails_says_its_last_words_not_a_traceback(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):'\necho '  File x, line 1'\n"
        "echo 'Requesting API:   0%|  | 0/20 [00:00<?, ?it/s]'\n"
        "echo 'requests.exceptions.ConnectionError: Connection refused'\nexit 1\n"
    )
    fake.chmod(0o755)
    gate = EvalGate(tasks=["t"], python=str(fake))
    with pytest.raises(HarnessFailed) as info:
        run_harness(gate, "http://127.0.0.1:1", "m", tmp_path / "work")
    msg = str(info.value)
    assert msg.startswith("lm-eval exited 1: requests.exceptions.ConnectionError: Connection")
    assert str(tmp_path / "work" / "lm-eval.log") in msg and "Traceback" not in msg
    assert "Traceback" in (tmp_path / "work" / "lm-eval.log").read_text()  # kept in the log


def test_a_harness_that_writes_no_readable_samples_cannot_gate_and_its_log_keeps_no_secret(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "python"
    fake.write_text(  # the driver's argv[3] is its JSON; "out" is where it writes the samples
        "#!/bin/sh\necho 'sending Authorization: Bearer sk-live-0123456789abcdef'\n"
        'out=$(echo "$3" | sed \'s/.*"out": "\\([^"]*\\)".*/\\1/\')\n'
        'echo "{not json" > "$out"\n'
    )
    fake.chmod(0o755)
    gate = EvalGate(tasks=["t"], python=str(fake))
    with pytest.raises(HarnessFailed, match=r"lm-eval wrote no readable samples"):
        run_harness(gate, "http://127.0.0.1:1", "m", tmp_path / "work")
    log = (tmp_path / "work" / "lm-eval.log").read_text()
    assert "Bearer <redacted>" in log and "sk-live" not in log
    broken = HarnessRun("0.4.13", {}, {"t": [{"filter": "none", "metrics": ["acc"], "acc": 1.0}]})
    with pytest.raises(HarnessFailed, match=r"t: a sample without doc_id or a score"):
        sample_scores(broken)


def test_samples_are_read_per_document_under_one_filter_and_metric() -> None:
    run = _run()
    scores = sample_scores(run)
    assert len(scores) == 20 and scores[("sim_words", 0)] == 1.0
    assert sample_scores(run, "exact_match", "strip") == scores
    with pytest.raises(HarnessFailed, match=r"no samples under filter 'flexible'"):
        sample_scores(run, None, "flexible")
    with pytest.raises(HarnessFailed, match=r"sim_words: no metric 'acc'"):
        sample_scores(run, "acc")
    # a task with two filters (gsm8k: strict-match, flexible-extract): the first, unless named
    two = HarnessRun("0.4.13", {}, {"g": [
        {"doc_id": 0, "filter": "strict-match", "metrics": ["exact_match"], "exact_match": 0.0},
        {"doc_id": 0, "filter": "flexible-extract", "metrics": ["exact_match"], "exact_match": 1.0},
    ]})  # fmt: skip
    assert sample_scores(two) == {("g", 0): 0.0}
    assert sample_scores(two, flt="flexible-extract") == {("g", 0): 1.0}


def test_a_bad_eval_table_names_the_field(tmp_path: Path) -> None:
    bad = {"probes": [], "eval": {"tasks": ["gsm8k"], "max_drop": 2}}
    with pytest.raises(ConfigError, match=r"verify\.eval\.max_drop"):
        load_campaign(write_campaign(tmp_path / "a.toml", verify=bad))
    extra = {"probes": [], "eval": {"tasks": ["gsm8k"], "limits": 200}}
    with pytest.raises(ConfigError, match=r"verify\.eval\.limits"):
        load_campaign(write_campaign(tmp_path / "b.toml", verify=extra))
    none = {"probes": [], "eval": {"tasks": []}}
    with pytest.raises(ConfigError, match=r"verify\.eval\.tasks"):
        load_campaign(write_campaign(tmp_path / "c.toml", verify=none))
    ok = {"probes": [], "eval": {"tasks": ["gsm8k"], "limit": 200}}
    gate = load_campaign(write_campaign(tmp_path / "d.toml", verify=ok)).verify.eval
    assert gate is not None and (gate.harness, gate.limit, gate.max_drop) == ("lm-eval", 200, 0.02)
