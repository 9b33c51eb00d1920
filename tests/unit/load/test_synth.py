"""Synthesised prompts (``load.synth``): requests sharing a hash id send that 512-token block
token for token (the distinct blocks sent are the distinct hash ids); shared prefixes, Zipf
shares; the context limit."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from inferlab.errors import ConfigError
from inferlab.load.synth import fit_context, prefix_choices, shared_prefix_prompts, trace_prompts
from inferlab.load.tokens import LocalTokenizer
from inferlab.load.traces import BLOCK_TOKENS, TraceRequest, read_trace
from inferlab.sim.tokenizer import WordTokenizer

MOONCAKE = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "mooncake_sample.jsonl"


@pytest.fixture(scope="module")
def sim_tok(tmp_path_factory: pytest.TempPathFactory) -> LocalTokenizer:
    """The reference engine's own tokenizer, as a client loads it."""
    return LocalTokenizer(WordTokenizer().save_hf(tmp_path_factory.mktemp("tok")))


def _blocks(ids: list[int]) -> list[tuple[int, ...]]:
    return [tuple(ids[i : i + BLOCK_TOKENS]) for i in range(0, len(ids), BLOCK_TOKENS)]


def test_distinct_blocks_sent_equal_distinct_hash_ids(sim_tok: LocalTokenizer) -> None:
    reqs = read_trace(MOONCAKE, "mooncake")
    prompts = trace_prompts(reqs, sim_tok, seed=7)
    server = WordTokenizer()  # what the engine tokenizes the prompt into
    by_id: dict[int, tuple[int, ...]] = {}
    full: set[tuple[int, ...]] = set()
    for r, p in zip(reqs, prompts):
        assert p.text is not None
        ids = server.encode(p.text)
        assert len(ids) == r.input_tokens == p.input_tokens and 0 not in ids  # no [UNK]
        assert p.output_tokens == r.output_tokens
        assert r.hash_ids is not None
        for h, block in zip(r.hash_ids, _blocks(ids)):
            first = by_id.setdefault(h, block)
            n = min(len(first), len(block))
            assert block[:n] == first[:n], f"hash id {h} sent two different blocks"
            if len(block) == BLOCK_TOKENS:
                full.add(block)
    full_ids = {
        h
        for r in reqs
        for k, h in enumerate(r.hash_ids or ())
        if r.input_tokens >= (k + 1) * BLOCK_TOKENS
    }
    assert len(full) == len(full_ids) > 20
    shared = Counter(h for r in reqs for h in r.hash_ids or ())
    assert max(shared.values()) > 3  # the sample really reuses blocks


def test_the_seed_changes_the_tokens_not_the_sharing(sim_tok: LocalTokenizer) -> None:
    reqs = read_trace(MOONCAKE, "mooncake")[:5]
    a, b = trace_prompts(reqs, sim_tok, 1), trace_prompts(reqs, sim_tok, 2)
    assert a == trace_prompts(reqs, sim_tok, 1)
    assert all(x.text != y.text for x, y in zip(a, b))


def test_requests_without_hash_ids_get_words_of_their_own(sim_tok: LocalTokenizer) -> None:
    reqs = [TraceRequest(0.0, 40, 3), TraceRequest(0.1, 40, 3)]
    p = trace_prompts(reqs, sim_tok, 0)
    assert p[0].text != p[1].text and sim_tok.count_many([p[0].text or ""]) == [40]


def test_a_byte_level_bpe_tokenizer_counts_the_words_as_made(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    rng = random.Random(0)
    words = [
        "cache",
        "batch",
        "decode",
        "kernel",
        "prefill",
        "token",
        "latency",
        "serving",
        "queue",
        "block",
        "graph",
    ]
    words += [
        "memory",
        "tensor",
        "stream",
        "engine",
        "model",
        "layer",
        "weight",
        "shard",
        "rank",
        "warp",
        "grid",
        "lane",
    ]
    text = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(600)]
    trainer = trainers.BpeTrainer(
        vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(text, trainer)
    tok.save(str(tmp_path / "tokenizer.json"))
    local = LocalTokenizer(tmp_path)
    assert len(local.one_token_words()) >= 16
    reqs = read_trace(MOONCAKE, "mooncake")[:6]
    prompts = trace_prompts(reqs, local, 0)  # raises when a count differs
    assert [p.input_tokens for p in prompts] == [r.input_tokens for r in reqs]


def test_shared_prefixes_are_identical_and_suffixes_are_not(sim_tok: LocalTokenizer) -> None:
    prompts = shared_prefix_prompts(4, 100, 10, "uniform", 5, 40, sim_tok, 3)
    server = WordTokenizer()
    ids = [server.encode(p.text or "") for p in prompts]
    assert all(len(x) == 110 for x in ids) and {p.input_tokens for p in prompts} == {110}
    assert len({tuple(x[:100]) for x in ids}) == 4
    assert len({tuple(x[100:]) for x in ids}) == 40


def test_zipf_favours_the_first_prefixes_and_bad_spellings_are_refused() -> None:
    zipf = Counter(prefix_choices(8, "zipf:1.1", 4000, 0))
    uni = Counter(prefix_choices(8, "uniform", 4000, 0))
    assert zipf[0] > 2.5 * zipf[7] and max(uni.values()) < 1.3 * min(uni.values())
    # weight 1/(k+1)^1.1: prefix 0 holds 1/H of the requests
    h = sum(1 / (k + 1) ** 1.1 for k in range(8))
    assert zipf[0] / 4000 == pytest.approx(1 / h, abs=0.03)
    for bad in ("zipf", "zipf:x", "normal", "uniform:2"):
        with pytest.raises(ConfigError, match="prefix_dist"):
            prefix_choices(8, bad, 10, 0)


def test_lengths_beyond_the_context_are_counted_not_kept() -> None:
    reqs = [TraceRequest(0, 100, 28), TraceRequest(1, 100, 29), TraceRequest(2, 200, 1)]
    assert fit_context(reqs, 128) == (reqs[:1], 2)
    assert fit_context(reqs, None) == (reqs, 0)
