"""The reference engine's prefix cache: block matching, eviction, and what its /metrics and log
say, read back by the scraper as the point's hit rate (the ground truth of a cache readout)."""

from __future__ import annotations

import pytest

from inferlab.engines import get_engine
from inferlab.server.scrape import derive, scrape_once
from inferlab.sim.prefixcache import BLOCK_TOKENS, PrefixCache
from support.simproc import SimFactory

MODEL = "inferlab-sim"


def words(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def test_whole_leading_blocks_match_and_the_last_token_is_always_computed() -> None:
    cache = PrefixCache(capacity_tokens=10_000)
    system = words("s", 40)  # 2 whole blocks and 8 tokens
    first = cache.lookup(system + words("a", 24))
    assert (first.cached, first.computed) == (0, 64)
    second = cache.lookup(system + words("b", 24))  # shares 40 tokens: 2 blocks of 16
    assert (second.cached, second.computed) == (2 * BLOCK_TOKENS, 64 - 32)
    again = cache.lookup(system + words("a", 24))  # all 4 blocks, but the last token computed
    assert (again.cached, again.computed) == (63, 1)
    other = cache.lookup(words("x", 16) + system)  # same tokens after another prefix: no match
    assert other.cached == 0
    assert (cache.hit_tokens, cache.query_tokens) == (32 + 63, 4 * 64 - 8)


def test_least_recently_used_blocks_are_evicted_at_capacity() -> None:
    cache = PrefixCache(capacity_tokens=4 * BLOCK_TOKENS)
    a, b = words("a", 32), words("b", 32)
    cache.lookup(a)
    cache.lookup(b)  # 4 blocks: full
    assert cache.lookup([*a, "z"]).cached == 32  # a is used again: b is now the oldest
    cache.lookup(words("c", 32))  # 2 more blocks push b out
    assert len(cache) == 4
    assert cache.lookup([*b, "z"]).cached == 0
    assert cache.lookup([*a, "z"]).cached == 0  # b's reinsertion pushed a out in turn


def _complete(sim: object, prompt: str) -> None:
    status, _ = sim.request(  # type: ignore[attr-defined]
        "POST", "/v1/completions", {"model": MODEL, "prompt": prompt, "max_tokens": 4}
    )
    assert status == 200


@pytest.mark.parametrize("cache", [True, False])
def test_the_engine_reports_its_hits_and_the_scraper_reads_the_points_rate(
    sim_server: SimFactory, cache: bool
) -> None:
    args = ["--model-mode", "batching", "--time-scale", "0.01"]
    sim = sim_server(*args, *(["--prefix-cache"] if cache else []))
    system = " ".join(words("sys", 48))  # 3 blocks
    spec = get_engine("sim")
    before = scrape_once(sim.url + "/metrics")
    for i in range(4):  # one at a time: each request's prefill is its own batch
        _complete(sim, system + " " + " ".join(words(f"q{i}-", 16)))
    after = scrape_once(sim.url + "/metrics")
    got = derive(spec, [before, after])
    # 4 prompts of 64 tokens; the 3 after the first find the 48-token system prompt cached
    hit = 3 * 48 / (4 * 64) if cache else 0.0
    assert got["prefix_cache_hit_rate"] == pytest.approx(hit)
    assert got["prefix_cache_queries"] == 4 * 64
    log = sim.stderr()
    assert log.count("#cached-token: 48") == (3 if cache else 0)
    assert log.count("#new-token: 16, #cached-token: 48") == (3 if cache else 0)


def test_the_prefix_cache_belongs_to_the_batching_model(cli: object) -> None:
    res = cli("sim", "serve", "--prefix-cache", "--port", "0")  # type: ignore[operator]
    assert res.exit_code != 0
    assert "--prefix-cache needs --preset or --model-mode batching" in res.stderr
