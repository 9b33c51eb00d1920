"""The reference engine's stated "model": a next-word distribution at every position (SIMULATED:
no weights). Pure: same seed and context, same distribution.

A context is the words before a position (prompt words, then output words). Its hash is a
rolling splitmix64 over the words' keys (a vocabulary word: its id; an unknown word:
``V + crc32(word)``), started from the seed. At a context of hash ``h`` the ``N = V − 1`` words
(ids ``1..V−1``; ``[UNK]`` is never drawn) are ranked by a permutation of ``Z_N``: the word of
rank ``r`` is ``1 + ((r + c)·u mod N)`` with ``c = h mod N`` and ``u`` a unit of ``Z_N`` from
``h``. The probability of rank ``r`` is a truncated geometric::

    p(r) = q^r (1 − q) / (1 − q^N),   q = 0.2 + 0.65 · frac(h, bits 40..55)

so the top word's probability varies from 0.15 to 0.8 between positions. Greedy decoding takes
rank 0, so a generated text is its own chain of modes.

``shift = X`` (``--logprob-shift``) tempers every position: ``q' = q^(1/τ)`` with ``τ > 1``
solved (brentq) so that ``KL(p ‖ p') = X · w`` exactly, ``w = 2 · frac(h, bits 24..39)``
uniform on ``[0, 2)``: the mean KL over positions is ``X`` (nats). Tempering keeps every
rank, so the greedy text (and top-1) is unchanged; only the spread of the distribution moves.
``q'`` is capped at ``1 − 1e-9`` (then the KL is below ``X · w``; never at ``X ≤ 1``).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.sim.tokenizer import WordTokenizer

__all__ = ["FLOOR_LOGPROB", "MAX_LOGPROBS", "Position", "StatedModel", "geometric_kl"]

_M = (1 << 64) - 1
_Q_LO, _Q_SPAN = 0.2, 0.65
_Q_CAP = 1.0 - 1e-9
#: the logprob served for an impossible token (``[UNK]``, unknown words), as vLLM serves −inf
FLOOR_LOGPROB = -9999.0
#: the most ``logprobs`` one request may ask for (vLLM's default ``--max-logprobs``)
MAX_LOGPROBS = 20


def _mix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M
    return x ^ (x >> 31)


def _frac(h: int, shift: int) -> float:
    return ((h >> shift) & 0xFFFF) / 65536.0


def _log_z(q: float, n: int) -> float:
    """log of the truncated geometric's normaliser ``(1 − q^n) / (1 − q)``."""
    return math.log1p(-(q**n)) - math.log1p(-q)


def geometric_kl(q: float, q2: float, n: int) -> float:
    """KL(p_q ‖ p_q2) in nats between truncated geometrics on ranks ``0..n−1``."""
    if n <= 1 or q == q2:
        return 0.0
    mean_rank = q / (1.0 - q) - n * q**n / (1.0 - q**n)
    return mean_rank * math.log(q / q2) + _log_z(q2, n) - _log_z(q, n)


def _shifted_q(q: float, target: float, n: int) -> float:
    """The ``q' ≥ q`` with ``geometric_kl(q, q', n) = target`` (capped at ``1 − 1e-9``)."""
    if target <= 0.0 or n <= 1:
        return q
    if geometric_kl(q, _Q_CAP, n) <= target:
        return _Q_CAP
    from scipy.optimize import brentq

    return float(brentq(lambda x: geometric_kl(q, x, n) - target, q, _Q_CAP, xtol=1e-14))


@dataclass(frozen=True, slots=True)
class Position:
    """The distribution at one context: the rank permutation (``c``, ``u``) and ``q``."""

    c: int
    u: int
    u_inv: int
    q: float
    n: int
    log_z: float

    def word(self, rank: int) -> int:
        """The id of the word of ``rank``."""
        return 1 + ((rank + self.c) * self.u) % self.n

    def logprob(self, word: int) -> float:
        """log p(word) in nats (``FLOOR_LOGPROB`` for ``[UNK]`` and unknown words)."""
        if not 1 <= word <= self.n:
            return FLOOR_LOGPROB
        rank = ((word - 1) * self.u_inv - self.c) % self.n
        return rank * math.log(self.q) - self.log_z

    def top(self, k: int) -> list[tuple[int, float]]:
        """The ``k`` most likely words with their logprobs, most likely first."""
        lq = math.log(self.q)
        return [(self.word(r), r * lq - self.log_z) for r in range(min(k, self.n))]


class StatedModel:
    """The distribution of every position for one seed, vocabulary and ``shift`` (nats)."""

    def __init__(self, seed: int, tokenizer: WordTokenizer, shift: float = 0.0) -> None:
        self.tokenizer = tokenizer
        self.n = tokenizer.vocab_size - 1
        self.shift = shift
        self._start = _mix(seed & _M)
        n = self.n
        #: the first units of Z_N (at most 65536): ``u`` picks one
        self._units = [u for u in range(1, min(n, 200_000) + 1) if math.gcd(u, n) == 1][:65536]

    def keys(self, words: Sequence[str]) -> list[int]:
        """The hash key of each word (its id; ``V + crc32`` when not in the vocabulary)."""
        ids = self.tokenizer.encode(" ".join(words))
        v = self.tokenizer.vocab_size
        return [i if i else v + zlib.crc32(w.encode()) for i, w in zip(ids, words)]

    def start(self, keys: Sequence[int]) -> int:
        """The hash after the context ``keys``."""
        h = self._start
        for k in keys:
            h = _mix(h ^ k)
        return h

    @staticmethod
    def step(h: int, key: int) -> int:
        """The hash after one more word."""
        return _mix(h ^ key)

    def _unit(self, h: int) -> int:
        units = self._units
        return units[(h >> 8) % len(units)]

    def mode(self, h: int) -> int:
        """The greedy (rank-0) word at hash ``h``."""
        return 1 + ((h % self.n) * self._unit(h)) % self.n

    def position(self, h: int) -> Position:
        """The full distribution at hash ``h`` (shifted by ``shift``)."""
        n = self.n
        u = self._unit(h)
        q = _Q_LO + _Q_SPAN * _frac(h, 40)
        if self.shift > 0.0:
            q = _shifted_q(q, self.shift * 2.0 * _frac(h, 24), n)
        return Position(h % n, u, pow(u, -1, n) if n > 1 else 1, q, n, _log_z(q, n))

    def greedy(self, prompt_text: str, count: int) -> list[int]:
        """``count`` greedy word ids after ``prompt_text``."""
        words = prompt_text.split()
        h = self.start(self.keys(words))
        n, units, m = self.n, self._units, _M
        nu = len(units)
        out = []
        for _ in range(count):
            w = 1 + ((h % n) * units[(h >> 8) % nu]) % n  # mode(h), inlined: the hot path
            out.append(w)
            x = ((h ^ w) + 0x9E3779B97F4A7C15) & m  # _mix(h ^ w), inlined
            x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
            x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
            h = x ^ (x >> 31)
        return out
