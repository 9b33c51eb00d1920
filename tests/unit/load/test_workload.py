"""Workloads (``load.workload``): exact prompt lengths with real tokenizers, prompt files and
their errors, request bodies."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from inferlab.config.bench import WorkloadSpec
from inferlab.engines import get_engine
from inferlab.errors import ConfigError, TokenizerError
from inferlab.load.tokens import LocalTokenizer
from inferlab.load.workload import Prompt, build_body, make_prompts


@pytest.fixture(scope="module")
def bpe_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real byte-level BPE tokenizer trained here (no model hub)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    rng = random.Random(0)
    words = ["serving", "latency", "token", "batch", "kernel", "decode", "prefill", "cache"]
    text = [
        " ".join(rng.choice(words) + str(rng.randint(0, 99)) for _ in range(50)) for _ in range(200)
    ]
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(text, trainer)
    d = tmp_path_factory.mktemp("bpe")
    tok.save(str(d / "tokenizer.json"))
    return d


@pytest.mark.parametrize("n", [1, 17, 256])
def test_random_prompts_have_exact_length_with_bpe(bpe_dir: Path, n: int) -> None:
    tok = LocalTokenizer(bpe_dir)
    prompts = make_prompts(WorkloadSpec(input_tokens=n, output_tokens=4, seed=n), 5, tok)
    assert len({p.text for p in prompts}) == 5  # distinct prompts: no prefix-cache flattery
    for p in prompts:
        assert p.input_tokens == n
        assert len(tok.encode(p.text or "")) == n
        assert "<|endoftext|>" not in (p.text or "")  # special tokens are never sampled


def test_missing_tokenizer_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match=str(tmp_path)):
        LocalTokenizer(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(TokenizerError, match="cannot load"):
        LocalTokenizer(tmp_path)
    with pytest.raises(ConfigError, match="--tokenizer"):
        make_prompts(WorkloadSpec(), 1, None)


def test_jsonl_prompts_and_errors_name_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text(
        json.dumps({"prompt": "hello there"})
        + "\n\n"
        + json.dumps({"messages": [{"role": "user", "content": "hi"}], "output_tokens": 7})
        + "\n"
    )
    ps = make_prompts(WorkloadSpec(kind="jsonl", path=f, output_tokens=3), 5, None)
    assert [p.output_tokens for p in ps] == [3, 7, 3, 7, 3]  # cycled
    assert ps[1].messages == ({"role": "user", "content": "hi"},)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "ok"}) + "\n" + '{"prompt": "x",}\n')
    with pytest.raises(ConfigError, match=rf"{bad}:2: invalid JSON"):
        make_prompts(WorkloadSpec(kind="jsonl", path=bad), 1, None)
    bad.write_text(json.dumps({"text": "wrong field"}) + "\n")
    with pytest.raises(ConfigError, match=r":1: expected field 'prompt'"):
        make_prompts(WorkloadSpec(kind="jsonl", path=bad), 1, None)
    bad.write_text(json.dumps({"prompt": "x", "output_tokens": 0}) + "\n")
    with pytest.raises(ConfigError, match=r":1: field 'output_tokens'"):
        make_prompts(WorkloadSpec(kind="jsonl", path=bad), 1, None)
    with pytest.raises(ConfigError, match="cannot read"):
        make_prompts(WorkloadSpec(kind="jsonl", path=tmp_path / "missing.jsonl"), 1, None)


def test_sharegpt(tmp_path: Path, bpe_dir: Path) -> None:
    f = tmp_path / "sg.json"
    f.write_text(
        json.dumps(
            [
                {
                    "conversations": [
                        {"from": "human", "value": "decode12 batch3"},
                        {"from": "gpt", "value": "kernel"},
                    ]
                },
                {"conversations": [{"from": "gpt", "value": "no human turn"}]},
                {"conversations": [{"from": "human", "value": "cache7"}]},
            ]
        )
    )
    tok = LocalTokenizer(bpe_dir)
    ps = make_prompts(WorkloadSpec(kind="sharegpt", path=f, output_tokens=9), 2, tok)
    assert [p.text for p in ps] == ["decode12 batch3", "cache7"]
    assert ps[0].input_tokens == len(tok.encode("decode12 batch3"))
    f.write_text(json.dumps([{"conv": []}]))
    with pytest.raises(ConfigError, match="entry 0: expected field 'conversations'"):
        make_prompts(WorkloadSpec(kind="sharegpt", path=f), 1, None)


def test_request_bodies_ask_for_exact_length() -> None:
    p = Prompt("hi", None, 1, 12)
    body = json.loads(build_body(p, model="m", endpoint="completions", engine=get_engine("vllm")))
    assert body["max_tokens"] == 12 and body["min_tokens"] == 12 and body["ignore_eos"] is True
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    body = json.loads(build_body(p, model="m", endpoint="chat", engine=get_engine("llamacpp")))
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert "min_tokens" not in body and body["ignore_eos"] is True
    body = json.loads(build_body(p, model="m", endpoint="chat", engine=get_engine("openai")))
    assert "ignore_eos" not in body
    with pytest.raises(ConfigError, match="unknown kind 'tgi'"):
        get_engine("tgi")


def test_shared_prefix_prompts_come_from_the_workload_spec(tmp_path: Path) -> None:
    from inferlab.sim.tokenizer import WordTokenizer

    tok = LocalTokenizer(WordTokenizer().save_hf(tmp_path / "w"))
    spec = WorkloadSpec(kind="shared-prefix", prefixes=2, prefix_tokens=20, suffix_tokens=4,
                        output_tokens=3, seed=5)  # fmt: skip
    assert spec.label == "prefix:2x20"
    prompts = make_prompts(spec, 10, tok)
    assert {p.input_tokens for p in prompts} == {24} and {p.output_tokens for p in prompts} == {3}
    assert len({tuple((p.text or "").split()[:20]) for p in prompts}) == 2
    with pytest.raises(ConfigError, match="shared-prefix prompts need a tokenizer"):
        make_prompts(spec, 2, None)
    assert "prefixes" in spec.model_dump() and "prefixes" not in WorkloadSpec().model_dump()
    with pytest.raises(ValueError, match="prefix_dist"):
        WorkloadSpec(kind="shared-prefix", prefix_dist="zipf")


def test_every_workload_kind_has_a_maker_and_an_unknown_one_is_named() -> None:
    from pydantic import ValidationError

    from inferlab.config.workload import WORKLOADS
    from inferlab.load.workload import MAKERS

    assert set(MAKERS) == set(WORKLOADS)
    with pytest.raises(ValidationError, match="unknown workload kind 'csv'; expected random, "):
        WorkloadSpec(kind="csv")
    assert WorkloadSpec(kind="shared-prefix", prefixes=2).label == "prefix:2x1024"
    assert WorkloadSpec(kind="jsonl", path="p.jsonl").label == "jsonl"
