"""Token counts (``load.tokens``): apportioned chunks, the word tokenizer against its Hugging
Face form."""

from __future__ import annotations

from pathlib import Path

from inferlab.load.tokens import LocalTokenizer, apportion
from inferlab.sim.tokenizer import WordTokenizer


def test_apportion() -> None:
    assert apportion(7, [2, 1, 4]) == [2, 1, 4]
    assert apportion(10, [1, 1, 1]) == [4, 3, 3]
    assert sum(apportion(128, [3, 1, 1, 7])) == 128
    assert apportion(5, [100, 1, 1]) == [3, 1, 1]  # every event keeps at least one token
    assert apportion(2, [1, 1, 1]) == [1, 1, 1]  # cannot go below one per event
    assert apportion(3, []) == []


# --- the word tokenizer's counts against its Hugging Face form


def test_word_tokenizer_counts_match() -> None:
    d = WordTokenizer().save_hf(Path(__import__("tempfile").mkdtemp()) / "w")
    tok = LocalTokenizer(d)
    assert tok.count_many([" baba babe", "", "kiko"]) == [2, 0, 1]
