"""The machine's floor: a raw-socket, single-thread epoll client with no HTTP library.

It writes each request in one ``send`` on a keep-alive socket with TCP_NODELAY and stamps every
``recv`` with ``perf_counter_ns``. Whatever error it shows against the server's ground truth
is the kernel's and the interpreter's, not a client library's.
"""

from __future__ import annotations

import json
import select
import socket
import time
from dataclasses import dataclass, field

_TOKEN = b'"text":" '  # the reference engine renders every token as " word"


@dataclass
class FloorRecord:
    request_id: str
    send_ns: int = 0
    token_ns: list[int] = field(default_factory=list)  # one entry per token (spread per recv)
    done: bool = False


def _request(host: str, port: int, model: str, prompt: str, n_out: int, rid: str) -> bytes:
    body = json.dumps(
        {"model": model, "prompt": prompt, "max_tokens": n_out, "stream": True, "ignore_eos": True}
    ).encode()
    head = (
        f"POST /v1/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nX-Request-Id: {rid}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body


def run_floor(
    host: str,
    port: int,
    *,
    model: str,
    prompts: list[str],
    n_out: int,
    concurrency: int,
    tag: str = "floor",
) -> list[FloorRecord]:
    """Closed loop at ``concurrency`` over ``prompts``; returns one record per request."""
    ep = select.epoll()
    socks: dict[int, socket.socket] = {}
    state: dict[int, tuple[FloorRecord, bytearray]] = {}
    records: list[FloorRecord] = []
    nxt = 0

    def start(fd: int) -> None:
        nonlocal nxt
        rid = f"{tag}-{nxt}"
        rec = FloorRecord(rid)
        data = _request(host, port, model, prompts[nxt], n_out, rid)
        nxt += 1
        records.append(rec)
        state[fd] = (rec, bytearray())
        rec.send_ns = time.perf_counter_ns()
        socks[fd].send(data)

    for _ in range(min(concurrency, len(prompts))):
        s = socket.create_connection((host, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        socks[s.fileno()] = s
        ep.register(s.fileno(), select.EPOLLIN)
    for fd in list(socks):
        start(fd)
    active = len(socks)
    while active:
        for fd, _ in ep.poll(1.0):
            try:
                chunk = socks[fd].recv(1 << 16)
            except BlockingIOError:
                continue
            t = time.perf_counter_ns()
            rec, buf = state[fd]
            k = chunk.count(_TOKEN)
            if k:
                rec.token_ns.extend([t] * k)
            buf += chunk
            if buf.endswith(b"0\r\n\r\n"):
                rec.done = True
                if nxt < len(prompts):
                    start(fd)
                else:
                    ep.unregister(fd)
                    socks[fd].close()
                    active -= 1
    ep.close()
    return records
