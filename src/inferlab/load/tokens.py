"""Tokenizers for making prompts of exact length and counting output tokens.

``LocalTokenizer`` loads a Hugging Face ``tokenizer.json`` (``tokenizers``); ``ServerTokenizer``
asks the server's ``/tokenize`` (vLLM/SGLang/sim shape) and caches every answer. Counting is
done after a load point, never on the timing path.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from inferlab.errors import TokenizerError
from inferlab.load.http import Endpoint, HttpClient
from inferlab.records import RequestRecord

__all__ = [
    "LocalTokenizer",
    "ServerTokenizer",
    "TokenCounter",
    "apportion",
    "assign_token_counts",
]

# Common English words used to build prompts when only the server can count tokens.
_WORDS = [
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "community",
    "name",
    "president",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "information",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
]


class TokenCounter(Protocol):
    def count_many(self, texts: list[str]) -> list[int]:
        """Token count of each text, without special tokens."""
        ...


class LocalTokenizer:
    """A Hugging Face tokenizer from a directory (``tokenizer.json``) or the file itself."""

    def __init__(self, path: str | Path) -> None:
        p = Path(path)
        f = p / "tokenizer.json" if p.is_dir() else p
        if not f.is_file():
            raise TokenizerError(f"--tokenizer: no tokenizer.json at {p}")
        try:
            from tokenizers import Tokenizer

            self._tok: Any = Tokenizer.from_file(str(f))
        except Exception as exc:
            raise TokenizerError(f"--tokenizer: cannot load {f}: {exc}") from exc
        self.path = f
        special = {
            int(i)
            for i, t in self._tok.get_added_tokens_decoder().items()
            if getattr(t, "special", False)
        }
        size = int(self._tok.get_vocab_size(with_added_tokens=True))
        self._ids = [i for i in range(size) if i not in special]
        if not self._ids:
            raise TokenizerError(f"--tokenizer: {f} has no ordinary tokens")

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=False))

    def count_many(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        encs = self._tok.encode_batch(texts, add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def one_token_words(self, limit: int = 512) -> list[str]:
        """Up to ``limit`` distinct words of its vocabulary (in id order) that are one token
        each, alone and after a space: words joined by spaces are one token a word."""
        out: list[str] = []
        seen: set[str] = set()
        for i in self._ids:
            w = self.decode([i]).strip()
            if not (w.isascii() and w.isalnum()) or w in seen:
                continue
            seen.add(w)
            if len(self.encode(w)) == 1 and len(self.encode(" " + w)) == 1:
                out.append(w)
                if len(out) >= limit:
                    break
        return out

    def random_text(self, n: int, rng: random.Random) -> str:
        """A text of exactly ``n`` tokens (re-checked by encoding it)."""

        def draw(k: int) -> list[int]:
            return [rng.choice(self._ids) for _ in range(k)]

        ids = draw(n)
        for attempt in range(60):
            text = self.decode(ids)
            m = len(self.encode(text))
            if m == n:
                return text
            if attempt % 12 == 11:
                ids = draw(n)  # stuck on tokens that merge or split: start over
            elif m > n:
                keep = len(ids) - (m - n)
                ids = ids[:keep] if keep >= 1 else draw(n)
            else:
                ids += draw(n - m)
        raise TokenizerError(
            f"tokenizer {self.path}: could not make a prompt of exactly {n} tokens "
            "(its decode/encode does not round-trip)"
        )


class ServerTokenizer:
    """Counts with the server's ``/tokenize``; answers are cached by text."""

    def __init__(self, endpoint: Endpoint, path: str, headers: dict[str, str]) -> None:
        self.endpoint = endpoint
        self.path = path
        self.headers = headers
        self._cache: dict[str, int] = {}
        self._one: dict[str, object] = {}  # text of one token → its id, when the server says

    async def _count(self, client: HttpClient, text: str) -> int:
        body = json.dumps({"prompt": text, "add_special_tokens": False}).encode()
        ex = await client.request(client.build("POST", self.path, body))
        if ex.error_kind is not None or ex.status != 200:
            raise TokenizerError(
                f"{self.endpoint.base}{self.path} failed (status {ex.status}): "
                f"{(ex.error_message or ex.body()[:200].decode(errors='replace'))}; "
                "pass --tokenizer DIR"
            )
        try:
            obj = json.loads(ex.body())
            if isinstance(obj.get("tokens"), list) and len(obj["tokens"]) == 1:
                self._one[text] = obj["tokens"][0]  # the id of a one-token text
            if isinstance(obj.get("count"), int):
                return int(obj["count"])
            return len(obj["tokens"])
        except (ValueError, KeyError, TypeError) as exc:
            raise TokenizerError(
                f"{self.endpoint.base}{self.path}: unexpected answer {ex.body()[:200]!r}"
            ) from exc

    async def _count_all(self, texts: Iterable[str]) -> None:
        todo = sorted({t for t in texts if t not in self._cache})
        if not todo:
            return
        client = HttpClient(self.endpoint, timeout_s=30, stall_timeout_s=30, headers=self.headers)
        sem = asyncio.Semaphore(8)

        async def one(t: str) -> None:
            async with sem:
                self._cache[t] = await self._count(client, t)

        try:
            await asyncio.gather(*(one(t) for t in todo))
        finally:
            client.close()

    def count_many(self, texts: list[str]) -> list[int]:
        asyncio.run(self._count_all(texts))
        return [self._cache[t] for t in texts]

    def one_token_words(self, limit: int = 512) -> list[str]:
        """Common English words that the server counts as one token each, alone and after a
        space, one word per token id where the server gives the ids (words it does not know,
        all ``[UNK]``, are one word)."""
        cands = _WORDS[:limit]
        counts = self.count_many([*cands, *(" " + w for w in cands)])
        out, ids = [], set()
        for w, a, b in zip(cands, counts, counts[len(cands) :]):
            tid = self._one.get(w, w)
            if a == b == 1 and tid not in ids:
                ids.add(tid)
                out.append(w)
        return out

    def random_text(self, n: int, rng: random.Random) -> str:
        """A text of exactly ``n`` tokens by the server's count."""
        words = [rng.choice(_WORDS) for _ in range(n)]
        for _ in range(30):
            text = " ".join(words)
            m = self.count_many([text])[0]
            if m == n:
                return text
            if m > n:
                drop = max(1, (m - n) // 2) if m - n > 1 else 1
                words = words[: max(1, len(words) - drop)]
            else:
                words += [rng.choice(_WORDS) for _ in range(max(1, (n - m) // 2))]
        raise TokenizerError(
            f"could not make a prompt of exactly {n} tokens with {self.endpoint.base}{self.path}"
        )


def apportion(total: int, weights: list[int]) -> list[int]:
    """Split ``total`` into integers proportional to ``weights`` (largest remainder), each ≥ 1
    when ``total`` allows it."""
    n = len(weights)
    if n == 0:
        return []
    if total < n:
        return [1] * n
    w = [max(1, x) for x in weights]
    sw = sum(w)
    shares = [total * x / sw for x in w]
    out = [int(s) for s in shares]
    order = sorted(range(n), key=lambda i: shares[i] - out[i], reverse=True)
    for i in order[: total - sum(out)]:
        out[i] += 1
    for i in range(n):
        if out[i] == 0:
            j = max(range(n), key=lambda k: out[k])
            out[j] -= 1
            out[i] = 1
    return out


def assign_token_counts(
    records: list[RequestRecord],
    texts: list[list[str]],
    counter: TokenCounter | None,
) -> None:
    """Fill ``event_tokens`` and ``counted_output_tokens`` and add length-mismatch warnings.

    Per-event counts come from tokenizing each delta; they are rescaled so they sum to the
    server's ``usage.completion_tokens`` when it is given (a delta tokenized alone can count
    differently from the same text in context).
    """
    flat: list[str] = []
    for rec, ts in zip(records, texts):
        if rec.ok and ts:
            flat.extend(ts)
            flat.append("".join(ts))
    counts = counter.count_many(flat) if counter is not None and flat else []
    pos = 0
    for rec, ts in zip(records, texts):
        if not ts:
            rec.event_tokens = []
            continue
        if not rec.ok:
            rec.event_tokens = [1] * len(ts)
            continue
        if counter is not None:
            per = [max(1, c) for c in counts[pos : pos + len(ts)]]
            rec.counted_output_tokens = counts[pos + len(ts)]
            pos += len(ts) + 1
        else:
            per = [1] * len(ts)
        target = rec.usage_completion_tokens
        if target is None:
            target = rec.counted_output_tokens
        if target is None:
            rec.warnings.append("no usage and no tokenizer: one token per event assumed")
            target = len(ts)
        rec.event_tokens = per if sum(per) == target else apportion(target, per)
        _length_warnings(rec)


def _length_warnings(rec: RequestRecord) -> None:
    req, rep, cnt = (
        rec.requested_output_tokens,
        rec.usage_completion_tokens,
        rec.counted_output_tokens,
    )
    if req is not None and rep is not None and rep != req:
        rec.warnings.append(f"length: requested {req} output tokens, server reported {rep}")
    if rep is not None and cnt is not None and rep != cnt:
        # informational: a detokenized text need not re-encode to the same count (BPE)
        rec.warnings.append(f"count: server reported {rep} output tokens, tokenizer counted {cnt}")
    if req is not None and rep is None and cnt is not None and cnt != req:
        rec.warnings.append(f"length: requested {req} output tokens, tokenizer counted {cnt}")
