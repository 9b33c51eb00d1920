"""A ``--tokenizer`` of another model is caught (``load.promptcheck``): on the reference engine,
the server's prompt counts are checked against the client's per request, the point warns
``tokenizer-mismatch`` loudly, and the report marks its prefix-cache hit rate, which a wrong
tokenizer inflates (a sessions point: 97.9% read where the workload's is 83%)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from inferlab.load.promptcheck import CHAT_TEMPLATE_TOKENS, check_prompt_counts
from inferlab.records import RequestRecord
from inferlab.report.sections.sessions import session_rows
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support.cli import Cli
from support.simproc import SimFactory

USERS, TURNS, IN, OUT = 3, 4, 256, 32


@pytest.fixture(scope="module")
def wrong_tok(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real byte-level BPE tokenizer trained here: not the reference engine's word tokenizer."""
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


def _bench(cli: Cli, url: str, tok: Path, db: Path, *args: str) -> dict[str, object]:
    p = cli(
        "bench", "--url", url, "--engine", "sim", "--input-tokens", str(IN),
        "--output-tokens", str(OUT), "--tokenizer", str(tok), "--format", "json", *args,
        env={"INFERLAB_DB": str(db)},
    )  # fmt: skip
    assert p.exit_code == 0, p.stderr
    doc: dict[str, object] = json.loads(p.stdout)
    return doc


def _kinds(doc: dict[str, object]) -> list[str]:
    (point,) = doc["points"]  # type: ignore[misc]
    return [w["kind"] for w in point["warnings"]]


def test_a_wrong_tokenizer_on_the_reference_engine_is_named_and_its_hit_rate_marked(
    sim_server: SimFactory, cli: Cli, tmp_path: Path, wrong_tok: Path
) -> None:
    sim = sim_server("--model-mode", "batching", "--prefix-cache", "--time-scale", "0.05")
    right = WordTokenizer().save_hf(tmp_path / "right")
    hits = {}
    for name, tok in (("right", right), ("wrong", wrong_tok)):
        db = tmp_path / f"{name}.db"
        doc = _bench(cli, sim.url, tok, db, "--endpoint", "chat", "--sessions", f"{USERS}x{TURNS}")
        with Store(db) as st:
            (run,) = st.runs()
            hits[name] = run.summary["server"]["prefix_cache_hit_rate"]
            rows = session_rows(st, "bench")
        shown = rows[0][7]
        if name == "right":
            assert "tokenizer-mismatch" not in _kinds(doc)
            assert shown == f"{hits[name]:.1%}"
            continue
        (point,) = doc["points"]  # type: ignore[misc]
        (w,) = [w for w in point["warnings"] if w["kind"] == "tokenizer-mismatch"]
        assert f"in {USERS} of {USERS} requests" in w["message"], w
        assert f"{IN} by the client" in w["message"] and str(wrong_tok) in w["message"]
        assert "--tokenizer DIR of the served model" in w["fix"]
        assert shown == f"{hits[name]:.1%} (wrong tokenizer: not the workload's)"
    # what the mark is for: the right tokenizer reads the workload's own hit rate (turn t
    # finds turn t-1's prompt and answer in whole 16-token blocks); the wrong one another
    sent = sum((t + 1) * IN + t * OUT for t in range(TURNS))
    truth = sum((t * (IN + OUT)) // 16 * 16 for t in range(1, TURNS)) / sent
    assert hits["right"] == pytest.approx(truth), hits
    assert abs(hits["wrong"] - truth) > 0.05, (hits, truth)


def test_the_completions_endpoint_is_checked_too(
    sim_server: SimFactory, cli: Cli, tmp_path: Path, wrong_tok: Path
) -> None:
    sim = sim_server()
    right = WordTokenizer().save_hf(tmp_path / "right")
    args = ("--concurrency", "2", "--requests", "8")
    assert "tokenizer-mismatch" not in _kinds(_bench(cli, sim.url, right, tmp_path / "a.db", *args))
    assert "tokenizer-mismatch" in _kinds(_bench(cli, sim.url, wrong_tok, tmp_path / "b.db", *args))


def _rec(i: int, client: int, server: int, turn: int | None = None) -> RequestRecord:
    return RequestRecord(
        i, str(i), status=200, input_tokens=client, usage_prompt_tokens=server, turn=turn
    )


def test_the_rule_allows_special_tokens_and_a_chat_template_never_fewer() -> None:
    bos = [_rec(i, 100, 101) for i in range(4)]
    got = check_prompt_counts(bos, chat=False)
    assert got is not None and not got.mismatch and got.disagree == 0
    template = [_rec(i, 100, 100 + CHAT_TEMPLATE_TOKENS) for i in range(4)]
    assert not check_prompt_counts(template, chat=True).mismatch  # type: ignore[union-attr]
    assert check_prompt_counts(template, chat=False).mismatch  # type: ignore[union-attr]
    fewer = [_rec(i, 256, 240) for i in range(4)]
    got = check_prompt_counts(fewer, chat=True)
    assert got is not None and got.mismatch and got.example == (256, 240)
    # a later sessions turn resends answers the client did not count: left out
    assert check_prompt_counts([_rec(0, 10, 500, turn=1)], chat=True) is None
    half = [_rec(0, 100, 100), _rec(1, 100, 10)]
    assert not check_prompt_counts(half, chat=False).mismatch  # type: ignore[union-attr]
