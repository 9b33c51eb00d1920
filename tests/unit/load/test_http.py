"""The timing HTTP client against hand-written servers on loopback (real sockets)."""

from __future__ import annotations

import asyncio
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from inferlab.load.http import Endpoint, HttpClient, run_loop
from inferlab.load.sse import parse_stream
from inferlab.records import ErrorKind


@contextmanager
def tcp_server(handler: Callable[[socket.socket], None]) -> Iterator[int]:
    """A threaded raw TCP server: ``handler(conn)`` per connection."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:  # closed however the handler ends
            handler(conn)

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        th.join()
        srv.close()


def read_request(conn: socket.socket) -> bytes:
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = conn.recv(65536)
        if not d:
            return b""
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    lower = head.lower()
    n = (
        int(lower.split(b"content-length: ")[1].split(b"\r\n")[0])
        if b"content-length" in lower
        else 0
    )
    while len(body) < n:
        body += conn.recv(65536)
    return head


def one(port: int, n: int = 1, **kw: object) -> list[object]:
    async def go() -> list[object]:
        c = HttpClient(Endpoint.parse(f"http://127.0.0.1:{port}"), **kw)  # type: ignore[arg-type]
        try:
            return [await c.request(c.build("POST", "/v1/completions", b"{}")) for _ in range(n)]
        finally:
            c.close()

    return run_loop(go())


EVENTS = b"".join(b'data: {"choices":[{"text":" w%d"}]}\n\n' % i for i in range(5)) + (
    b"data: [DONE]\n\n"
)


def chunked(payload: bytes, size: int) -> bytes:
    out = b""
    for i in range(0, len(payload), size):
        part = payload[i : i + size]
        out += b"%x\r\n%s\r\n" % (len(part), part)
    return out + b"0\r\n\r\n"


def test_chunked_response_dribbled_byte_by_byte() -> None:
    def handler(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        read_request(conn)
        resp = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunked(EVENTS, 7)
        )
        for i in range(len(resp)):
            conn.sendall(resp[i : i + 1])
            if i % 40 == 0:
                time.sleep(0.001)
        conn.close()

    with tcp_server(handler) as port:
        (ex,) = one(port)
    assert ex.error_kind is None and ex.status == 200  # type: ignore[attr-defined]
    p = parse_stream(ex.pieces, ex.end_ns)  # type: ignore[attr-defined]
    assert p.texts == [" w0", " w1", " w2", " w3", " w4"] and p.saw_done
    assert p.event_ns == sorted(p.event_ns) and p.event_ns[0] < p.event_ns[-1]


def test_content_length_and_until_close_bodies() -> None:
    body = b'{"choices":[{"text":"all at once"}]}'

    def with_length(conn: socket.socket) -> None:
        while read_request(conn):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    def until_close(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n" + body)
        conn.close()

    with tcp_server(with_length) as port:
        exs = one(port, 3)
    assert all(e.body() == body and e.error_kind is None for e in exs)  # type: ignore[attr-defined]
    assert [e.reused_conn for e in exs] == [False, True, True]  # type: ignore[attr-defined]
    with tcp_server(until_close) as port:
        (ex,) = one(port)
    assert ex.body() == body and ex.error_kind is None  # type: ignore[attr-defined]


def test_idle_connection_closed_by_server_is_retried_not_counted() -> None:
    def handler(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        time.sleep(0.05)
        conn.close()  # keep-alive promised, then dropped while idle

    with tcp_server(handler) as port:

        async def go() -> list[object]:
            c = HttpClient(Endpoint.parse(f"http://127.0.0.1:{port}"))
            a = await c.request(c.build("GET", "/x"))
            await asyncio.sleep(0.2)
            b = await c.request(c.build("GET", "/x"))
            c.close()
            return [a, b]

        a, b = run_loop(go())
    assert a.error_kind is None and b.error_kind is None  # type: ignore[attr-defined]
    assert b.body() == b"ok"  # type: ignore[attr-defined]


def test_garbage_response_is_malformed_and_refused_port_is_connect_error() -> None:
    def handler(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b"SPDY/9 what\r\n\r\n")
        time.sleep(0.2)
        conn.close()

    with tcp_server(handler) as port:
        (ex,) = one(port)
    assert ex.error_kind is ErrorKind.MALFORMED  # type: ignore[attr-defined]
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    free = s.getsockname()[1]
    s.close()
    (ex,) = one(free)
    assert ex.error_kind is ErrorKind.CONNECT  # type: ignore[attr-defined]


# -- the C=1 TTFT anomaly -------------------------------------------------------------------


class _NagleServer(asyncio.Protocol):
    """Leaves Nagle on (as some servers do) and writes the head, then the first token 20 ms
    later, like aiohttp's prepare() + write(). Records (receipt, first-token write) times."""

    truth: list[tuple[int, int]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.t = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        recv = time.perf_counter_ns()
        self.buf += data
        if b"\r\n\r\n" in self.buf and self.buf.endswith(b"{}"):
            self.buf = b""
            asyncio.ensure_future(self.respond(recv))

    async def respond(self, recv: int) -> None:
        w = self.t.write  # type: ignore[attr-defined]
        w(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        await asyncio.sleep(0.02)
        for i in range(30):
            ev = b'data: {"choices":[{"text":" t"}]}\n\n'
            if i == 0:
                self.truth.append((recv, time.perf_counter_ns()))
            w(b"%x\r\n%s\r\n" % (len(ev), ev))
            await asyncio.sleep(0.002)
        w(b"0\r\n\r\n")


def test_ttft_is_not_inflated_by_a_nagle_server() -> None:
    """A server with Nagle on holds its first token until the client ACKs the response head;
    a client that delays that ACK reads TTFT ~20 ms high (benchmarks/ttft_anomaly.py).
    inferlab re-arms TCP_QUICKACK, so its TTFT matches the server's own."""
    _NagleServer.truth = []
    ready = threading.Event()
    port: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        async def main() -> None:
            srv = await asyncio.get_running_loop().create_server(_NagleServer, "127.0.0.1", 0)
            port.append(srv.sockets[0].getsockname()[1])
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.02)
            srv.close()

        asyncio.run(main())

    th = threading.Thread(target=serve)
    th.start()
    ready.wait(10)
    try:
        exs = one(port[0], 15)
    finally:
        stop.set()
        th.join()
    errors = []
    for ex, (recv, first) in zip(exs, _NagleServer.truth, strict=True):
        p = parse_stream(ex.pieces, ex.end_ns)  # type: ignore[attr-defined]
        client_ttft = p.event_ns[0] - ex.send_ns  # type: ignore[attr-defined]
        errors.append((client_ttft - (first - recv)) / 1e6)
    # the first request runs on a fresh connection, which ACKs quickly anyway. The margin, from
    # the measured spread: the median error read 0.19-0.23 ms in 5 runs at load 2.1 on 2 CPUs
    # (max 3.9 ms), the delayed ACK adds ~20 ms; the client's accuracy itself is measured in
    # benchmarks/ (client_accuracy.py, ttft_anomaly.py)
    assert statistics.median(errors[1:]) < 5.0, errors


# --- credentials in a URL go out as basic auth and never into its repr


def test_url_credentials_go_out_as_basic_auth() -> None:
    from inferlab.load.http import Endpoint, HttpClient

    ep = Endpoint.parse("http://user:p%40ss@127.0.0.1:9/v1")
    data = HttpClient(ep).build("GET", "/v1/models")
    assert b"Authorization: Basic dXNlcjpwQHNz\r\n" in data  # base64("user:p@ss")
    assert "p%40ss" not in repr(ep) and "p@ss" not in ep.base
