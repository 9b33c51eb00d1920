"""Faults on purpose, observed by a raw-socket client."""

from __future__ import annotations

import json
import time

import pytest

from support.simproc import (
    dechunk,
    raw_connect,
    raw_post,
    recv_until,
    split_response,
    sse_events,
    start_sim,
)

pytestmark = pytest.mark.timeout(60)

STREAM = {"prompt": "baba bebe", "max_tokens": 10, "stream": True}
FAST = ("--ttft-ms", "5", "--itl-ms", "2")


def _token_events(payload: bytes) -> list[str]:
    return [e for e in sse_events(payload) if e != "[DONE]"]


def test_stall_keeps_the_connection_open_and_stops_writing() -> None:
    with (
        start_sim(*FAST, "--fault", "stall", "--fault-after", "3") as sim,
        raw_connect(sim) as sock,
    ):
        sock.sendall(raw_post("/v1/completions", STREAM))
        raw = recv_until(sock, b"never", timeout=1.0)
        status, _, body = split_response(raw)
        payload, complete = dechunk(body)
        assert status == 200 and not complete
        assert len(_token_events(payload)) == 3
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            sock.recv(1)  # still open, silent
        (rec,) = sim.truth()
        assert rec["fault"] == "stall" and len(rec["chunks"]) == 3


def test_close_truncates_the_stream() -> None:
    with start_sim(*FAST, "--fault", "close", "--fault-after", "2") as sim:
        with raw_connect(sim) as sock:
            sock.sendall(raw_post("/v1/completions", STREAM))
            raw = recv_until(sock, b"never", timeout=5.0)
            assert sock.recv(1) == b""  # EOF
        status, _, body = split_response(raw)
        payload, complete = dechunk(body)
        assert status == 200 and not complete
        assert len(_token_events(payload)) == 2
        (rec,) = sim.truth()
        assert rec["fault"] == "close" and len(rec["chunks"]) == 2


def test_malformed_event_then_normal_stream() -> None:
    with start_sim(*FAST, "--fault", "malformed", "--fault-after", "4") as sim:
        with raw_connect(sim) as sock:
            sock.sendall(raw_post("/v1/completions", STREAM))
            raw = recv_until(sock, b"0\r\n\r\n", timeout=5.0)
        payload, complete = dechunk(split_response(raw)[2])
        assert complete
        events = sse_events(payload)
        assert events[4] == "{not json" and events[-1] == "[DONE]"
        good = [json.loads(e) for i, e in enumerate(events[:-1]) if i != 4]
        assert len(good) == 10
        (rec,) = sim.truth()
        assert rec["fault"] == "malformed" and len(rec["chunks"]) == 10


def test_http500_every_second_request() -> None:
    with start_sim(*FAST, "--fault", "http500", "--fault-every", "2") as sim:
        statuses = []
        with raw_connect(sim) as sock:
            for _ in range(4):
                sock.sendall(raw_post("/v1/completions", {"prompt": "baba", "max_tokens": 2}))
                raw = recv_until(sock, b"}}", timeout=5.0)
                status, headers, body = split_response(raw)
                body += (
                    recv_until(sock, b"never", timeout=0.05)
                    if len(body) < int(headers["content-length"])
                    else b""
                )
                statuses.append(status)
                if status == 500:
                    err = json.loads(body)["error"]
                    assert err["message"] == "simulated internal error"
                    assert err["type"] == "InternalServerError" and err["code"] == 500
        assert statuses == [200, 500, 200, 500]
        truth = sim.truth()
        assert [r["fault"] for r in truth] == [None, "http500", None, "http500"]
        assert [r["status"] for r in truth] == statuses


def test_client_disconnect_is_recorded() -> None:
    with start_sim("--ttft-ms", "5", "--itl-ms", "20") as sim:
        with raw_connect(sim) as sock:
            sock.sendall(raw_post("/v1/completions", {**STREAM, "max_tokens": 50}))
            recv_until(sock, b"data:", timeout=2.0)
        time.sleep(0.2)
        (rec,) = sim.truth()
        assert rec["status"] == 499 and 0 < len(rec["chunks"]) < 50
