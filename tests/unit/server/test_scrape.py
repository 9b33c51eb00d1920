"""Scraping /metrics over real HTTP on loopback and deriving per-load-point values."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from inferlab.engines import get_engine
from inferlab.server.scrape import Scraper, derive, scrape_once
from support import FIXTURES

SGLANG_DUMP = (
    FIXTURES
    / "engine_logs"
    / "prometheus"
    / "sglang-docs-production_metrics_llama31-8b-full-dump.log"
)


def vllm_text(drafts: int, draft_tokens: int, accepted: int, running: int, kv: float) -> str:
    m = 'model_name="tiny"'
    return (
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
        "# TYPE vllm:num_requests_running gauge\n"
        f"vllm:num_requests_running{{{m}}} {running}.0\n"
        "# TYPE vllm:kv_cache_usage_perc gauge\n"
        f"vllm:kv_cache_usage_perc{{{m}}} {kv}\n"
        "# TYPE vllm:spec_decode_num_drafts counter\n"
        f"vllm:spec_decode_num_drafts_total{{{m}}} {drafts}.0\n"
        "# TYPE vllm:spec_decode_num_draft_tokens counter\n"
        f"vllm:spec_decode_num_draft_tokens_total{{{m}}} {draft_tokens}.0\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens counter\n"
        f"vllm:spec_decode_num_accepted_tokens_total{{{m}}} {accepted}.0\n"
    )


@contextmanager
def metrics_server(pages: list[str]) -> Iterator[str]:
    """Serves pages[i] on the i-th GET /metrics (the last one after that)."""
    calls = [0]

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages[min(calls[0], len(pages) - 1)].encode()
            calls[0] += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/metrics"
    finally:
        srv.shutdown()
        srv.server_close()


def test_vllm_spec_decode_derivations() -> None:
    pages = [
        vllm_text(100, 200, 120, 0, 0.0),
        vllm_text(150, 300, 180, 7, 0.42),
        vllm_text(300, 600, 480, 3, 0.20),
    ]
    with metrics_server(pages) as url:
        sc = Scraper(url, interval_s=0.1).start()
        import time

        time.sleep(0.15)
        scrapes = sc.stop()
    d = derive(get_engine("vllm"), scrapes)
    # 200 drafts of 2 tokens, 360 accepted: 1 + 360/200 = 2.8 tokens per step, 360/400 = 90%
    assert d["spec_accept_length"] == pytest.approx(2.8)
    assert d["spec_acceptance_rate"] == pytest.approx(0.9)
    assert d["max_running"] == 7 and d["max_kv_cache_usage"] == pytest.approx(0.42)
    assert d["failed_scrapes"] == 0


def test_real_sglang_dump_and_failures() -> None:
    text = SGLANG_DUMP.read_text()
    start = text.index("# HELP")
    with metrics_server([text[start:]]) as url:
        s = scrape_once(url)
    assert s.error is None and any(x.name.startswith("sglang:") for x in s.samples)
    d = derive(get_engine("sglang"), [s])
    assert "max_running" in d and "max_kv_cache_usage" in d
    dead = scrape_once("http://127.0.0.1:9/metrics", timeout_s=1)
    assert dead.error is not None and dead.samples == []
    assert derive(get_engine("vllm"), [dead]) == {"scrapes": 1, "failed_scrapes": 1}


def prefix_text(hits: int, queries: int) -> str:
    """vLLM 0.32's prefix-cache counters as its /metrics writes them."""
    m = 'engine="0",model_name="tiny"'
    return (
        "# TYPE vllm:prefix_cache_queries counter\n"
        f"vllm:prefix_cache_queries_total{{{m}}} {queries}.0\n"
        "# TYPE vllm:prefix_cache_hits counter\n"
        f"vllm:prefix_cache_hits_total{{{m}}} {hits}.0\n"
    )


def test_vllm_prefix_cache_on_and_off() -> None:
    vllm = get_engine("vllm")
    with metrics_server([prefix_text(128, 500), prefix_text(512, 1723)]) as url:
        on = derive(vllm, [scrape_once(url), scrape_once(url)])
    assert on["prefix_cache_queries"] == 1223 and on["prefix_cache_hit_rate"] == 384 / 1223
    # caching off: vLLM looks nothing up, the counters stay flat: 0 lookups, no rate
    with metrics_server([prefix_text(0, 0)]) as url:
        off = derive(vllm, [scrape_once(url), scrape_once(url)])
    assert off["prefix_cache_queries"] == 0 and "prefix_cache_hit_rate" not in off


def sglang_queue(running: int, waiting: int) -> str:
    return (
        "# TYPE sglang:num_running_reqs gauge\n"
        f"sglang:num_running_reqs {running}.0\n"
        "# TYPE sglang:num_queue_reqs gauge\n"
        f"sglang:num_queue_reqs {waiting}.0\n"
    )


def test_queueing_is_averaged_over_the_busy_scrapes_not_taken_from_one() -> None:
    # one scrape caught a step admitting its batch (4 ran, 12 waited), then the point drained
    ramp = [sglang_queue(4, 12), sglang_queue(0, 0), sglang_queue(0, 0)]
    # a cap: 8 ran and 8 waited in every scrape until the tail
    cap = [sglang_queue(8, 8)] * 4 + [sglang_queue(3, 0)]
    sglang = get_engine("sglang")
    with metrics_server(ramp) as url:
        d = derive(sglang, [scrape_once(url) for _ in ramp])
    assert d["max_running"] == 4 and d["max_waiting"] == 12
    assert d["busy_scrapes"] == 1 and "mean_waiting" not in d  # no mean from one scrape
    with metrics_server(cap) as url:
        d = derive(sglang, [scrape_once(url) for _ in cap])
    assert d["busy_scrapes"] == 5 and d["mean_waiting"] == pytest.approx(32 / 5)
