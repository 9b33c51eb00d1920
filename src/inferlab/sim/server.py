"""The reference engine: an OpenAI-compatible HTTP/1.1 server whose timing is known exactly.

Hand-written HTTP on ``asyncio.Protocol`` (run under uvloop). A request's receipt time is
taken when its first byte arrives; its token chunks are due at fixed offsets from that time
(TTFT, then ``ntokens × ITL`` per chunk) and are written by one :class:`TimerWheel`. Every
finished request leaves its ground truth: when each chunk was due and when it was written.

With ``--preset`` / ``--model-mode batching`` one decode loop (:class:`_Engine`, a single item
on the same wheel) replaces the fixed schedule: each step's duration comes from the
continuous-batching model (:mod:`inferlab.sim.model`) and every running sequence's chunk is
due at the step's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import random
import signal
import socket
import time
from array import array
from collections import deque
from collections.abc import Callable, Coroutine
from email.utils import formatdate
from pathlib import Path
from time import perf_counter_ns
from typing import Any

from inferlab import __version__
from inferlab.errors import SimError
from inferlab.sim import api
from inferlab.sim.config import SimConfig
from inferlab.sim.faults import FAULTS, FaultJob, FaultPlan, bad_body, not_sse_body, status_answer
from inferlab.sim.model import StepModel, accept_draw, step_ms
from inferlab.sim.presets import get_preset, resolve
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.sim.truth import Record as _Record
from inferlab.sim.truth import Request as _Request
from inferlab.sim.truth import lateness_summary
from inferlab.sim.wheel import TimerWheel, slot_of

__all__ = ["SimServer", "serve"]

_REASONS = {
    100: "Continue",
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024
_JSON = b"application/json"
_CLIENT_GONE = 499  # status recorded for a request whose client closed mid-answer
_FLUSH_S = 1.0


class _Job:
    """One answer being paced by the wheel: ``frames[i]`` is written once ``dues[i]`` passed."""

    __slots__ = ("conn", "dead", "frames", "i", "n", "rec", "slots", "write", "writes")

    def __init__(
        self, conn: _Conn, frames: tuple[bytes, ...], slots: array[int], rec: _Record
    ) -> None:
        assert conn.transport is not None
        self.conn = conn
        self.write = conn.transport.write
        self.frames = frames
        self.slots = slots
        self.writes = rec.writes
        self.rec = rec
        self.i = 0
        self.n = len(frames)
        self.dead = False

    def fire(self) -> int:
        if self.dead:
            return -1
        i = self.i
        self.writes.append(perf_counter_ns())
        self.write(self.frames[i])
        i += 1
        if i == self.n:
            self.conn.job_done(self)
            return -1
        self.i = i
        return self.slots[i]


class _Conn(asyncio.Protocol):
    """One client connection: parses requests, answers them in order."""

    def __init__(self, srv: SimServer) -> None:
        self.srv = srv
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.first_ns = 0
        self.pending: deque[_Request] = deque()
        self.job: _Job | _Seq | FaultJob | None = None
        self.current: _Request | None = None
        self.continued = False
        self.closed = False

    # -- asyncio callbacks -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.srv._conns.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.srv._conns.discard(self)
        job = self.job
        if job is not None and not job.dead:
            job.dead = True
            self.job = None
            job.rec.status = _CLIENT_GONE
            self.srv._finish(job.rec)

    def data_received(self, data: bytes) -> None:
        now = perf_counter_ns()
        if not self.buf:
            self.first_ns = now
        self.buf += data
        self._parse(now)

    # -- parsing -----------------------------------------------------------------------------

    def _parse(self, now: int) -> None:
        buf = self.buf
        while buf:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEAD:
                    self._fatal(400, "Request headers too large.")
                return
            try:
                lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
                method, target, version = lines[0].split(" ")
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                if length < 0:
                    raise ValueError(length)
            except ValueError:
                self._fatal(400, "Malformed HTTP request.")
                return
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._fatal(400, "Chunked request bodies are not supported; send Content-Length.")
                return
            if length > _MAX_BODY:
                self._fatal(413, "Request body too large.")
                return
            total = end + 4 + length
            if len(buf) < total:
                if (
                    not self.continued
                    and headers.get("expect", "").lower() == "100-continue"
                    and self.transport is not None
                ):
                    self.continued = True
                    self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                return
            body = bytes(buf[end + 4 : total])
            del buf[:total]
            self.continued = False
            conn_hdr = headers.get("connection", "").lower()
            if version == "HTTP/1.0":
                keep_alive = "keep-alive" in conn_hdr
            else:
                keep_alive = "close" not in conn_hdr
            path = target.split("?", 1)[0]
            req = _Request(
                method, path, headers, body, keep_alive, self.first_ns, perf_counter_ns()
            )
            self.first_ns = now
            if self.current is None and not self.pending:
                self._start(req)
            else:
                self.pending.append(req)

    def _fatal(self, status: int, message: str) -> None:
        self.buf.clear()
        if self.transport is not None:
            body = api.error_body(status, message, "BadRequestError")
            self.transport.write(self.srv._head(status, len(body), False) + body)
            self.transport.close()
        self.closed = True

    # -- answering ---------------------------------------------------------------------------

    def _start(self, req: _Request) -> None:
        if self.closed:
            return
        self.current = req
        self.srv._route(self, req)

    def respond(self, status: int, body: bytes, ctype: bytes = b"application/json") -> None:
        """Write a complete answer to the current request now."""
        req = self.current
        assert req is not None and self.transport is not None
        self.transport.write(self.srv._head(status, len(body), req.keep_alive, ctype) + body)
        self._next()

    def job_done(self, job: _Job | _Seq | FaultJob) -> None:
        rec = job.rec
        rec.done_ns = perf_counter_ns()
        self.job = None
        self.srv._finish(rec)
        self._next()

    def job_failed(self, job: FaultJob, close: bool) -> None:
        rec = job.rec
        rec.done_ns = perf_counter_ns()
        self.job = None
        self.srv._finish(rec)
        if close and self.transport is not None:
            self.closed = True
            self.transport.close()
        # a stalled answer keeps the connection busy: later requests on it are never answered

    def _next(self) -> None:
        req = self.current
        self.current = None
        if req is not None and not req.keep_alive:
            self.closed = True
            if self.transport is not None:
                self.transport.close()
            return
        if self.pending:
            self._start(self.pending.popleft())


class SimServer:
    """The reference engine. ``await start()`` binds and serves; ``await stop()`` ends it."""

    def __init__(self, config: SimConfig, log: Callable[[str], None] | None = None) -> None:
        self.config = config
        self._log = log
        self._engine: _Engine | None = None
        self.step_model: StepModel | None = None
        if config.batching:
            preset = get_preset(config.preset or "generic")
            self.step_model = resolve(preset, config.levers)  # may raise StartupFailure
        self.tokenizer = WordTokenizer(config.vocab_size)
        self._words = [b" " + w.encode() for w in self.tokenizer.vocab]
        self._model_json = json.dumps(config.model)
        self._ttft_ns = round(config.ttft_ms * 1e6)
        self._itl_ns = round(config.itl_ms * 1e6)
        self._jitter_ns = config.jitter_ms * 1e6
        self._rng = random.Random(config.seed)
        self._faults = FaultPlan(
            config.fault, config.fault_every, config.fault_at_s, config.fault_for_s
        )
        self.exited = asyncio.Event()  # set when the ``exit`` fault struck
        self._id_prefix = os.urandom(6).hex()
        self._nreq = 0
        self._ngen = 0
        self._records: list[_Record] = []
        self._unflushed: list[str] = []
        self._conns: set[_Conn] = set()
        self._server: asyncio.AbstractServer | None = None
        self._wheel: TimerWheel | None = None
        self._flush_handle: asyncio.TimerHandle | None = None
        self._date = b""
        self._date_s = -1
        self.port = 0
        self._routes: dict[str, dict[str, Callable[[_Conn, _Request], None]]] = {
            "/health": {"GET": self._health},
            "/version": {"GET": self._version},
            "/v1/models": {"GET": self._models},
            "/tokenize": {"POST": self._tokenize},
            "/v1/completions": {"POST": self._completions},
            "/v1/chat/completions": {"POST": self._chat},
            "/truth": {"GET": self._truth_get, "DELETE": self._truth_delete},
            "/truth/summary": {"GET": self._truth_summary},
            "/metrics": {"GET": self._metrics},
        }

    @property
    def url(self) -> str:
        host = self.config.host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    async def start(self) -> int:
        """Bind and start serving; returns the bound port."""
        if self._server is not None:
            raise SimError("the simulated engine is already started")
        loop = asyncio.get_running_loop()
        self._wheel = TimerWheel(loop)
        if self.step_model is not None:
            self._engine = _Engine(self, self.step_model, self._wheel)
        try:
            self._server = await loop.create_server(
                lambda: _Conn(self),
                self.config.host,
                self.config.port,
                backlog=4096,
                reuse_address=True,
            )
        except OSError as exc:
            raise SimError(
                f"cannot listen on {self.config.host}:{self.config.port}: {exc.strerror or exc}"
            ) from exc
        self.port = int(self._server.sockets[0].getsockname()[1])
        if self.config.truth_path is not None:
            self._flush_handle = loop.call_later(_FLUSH_S, self._flush_tick)
        return self.port

    async def stop(self) -> None:
        """Stop listening, drop every connection, flush the ground truth."""
        if self._server is not None:
            self._server.close()
        for conn in list(self._conns):
            if conn.transport is not None:
                conn.transport.abort()
        if self._wheel is not None:
            self._wheel.close()
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        await asyncio.sleep(0)
        self.flush()

    # -- ground truth ------------------------------------------------------------------------

    def truth(self) -> list[dict[str, Any]]:
        """Ground truth of every finished generation request since start (or the last clear)."""
        return [r.to_dict() for r in self._records]

    def clear_truth(self) -> None:
        self._records.clear()

    def lateness_summary(self) -> dict[str, Any]:
        """How late chunks were written (``write_ns - due_ns``), in ms, over the kept truth,
        and the faults injected (kind → requests)."""
        return lateness_summary(self._records)

    def flush(self) -> None:
        """Append the not yet written ground truth to ``truth_path``."""
        path = self.config.truth_path
        if path is None or not self._unflushed:
            return
        lines, self._unflushed = self._unflushed, []
        try:
            with Path(path).open("a", encoding="utf-8") as fh:
                fh.write("".join(lines))
        except OSError as exc:
            raise SimError(f"cannot write ground truth to {path}: {exc}") from exc

    def _flush_tick(self) -> None:
        self.flush()
        self._flush_handle = asyncio.get_running_loop().call_later(_FLUSH_S, self._flush_tick)

    def _finish(self, rec: _Record) -> None:
        self._records.append(rec)
        if self.config.truth_path is not None:
            self._unflushed.append(json.dumps(rec.to_dict()) + "\n")

    # -- HTTP --------------------------------------------------------------------------------

    def _head(
        self,
        status: int,
        length: int | None,
        keep_alive: bool,
        ctype: bytes = b"application/json",
        extra: bytes = b"",
    ) -> bytes:
        now = int(time.time())
        if now != self._date_s:
            self._date_s = now
            self._date = formatdate(now, usegmt=True).encode()
        parts = [
            b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, "Error").encode()),
            b"date: %s\r\nserver: inferlab-sim (simulated)\r\ncontent-type: %s\r\n"
            % (self._date, ctype),
        ]
        if length is None:
            parts.append(b"transfer-encoding: chunked\r\n")
        else:
            parts.append(b"content-length: %d\r\n" % length)
        if not keep_alive:
            parts.append(b"connection: close\r\n")
        parts.append(extra + b"x-inferlab-simulated: true\r\n\r\n")
        return b"".join(parts)

    def _route(self, conn: _Conn, req: _Request) -> None:
        key = self.config.api_key
        if (
            key
            and req.path.startswith("/v1/")
            and req.headers.get("authorization") != f"Bearer {key}"
        ):
            conn.respond(
                401, api.error_body(401, "Invalid API key (SIMULATED)", "AuthenticationError")
            )
            return
        methods = self._routes.get(req.path)
        if methods is None:
            conn.respond(404, b'{"detail":"Not Found"}')
            return
        handler = methods.get(req.method)
        if handler is None:
            conn.respond(405, b'{"detail":"Method Not Allowed"}')
            return
        handler(conn, req)

    def _health(self, conn: _Conn, req: _Request) -> None:
        conn.respond(200, b"")

    def _version(self, conn: _Conn, req: _Request) -> None:
        body = {"version": __version__, "engine": "inferlab-sim", "simulated": True}
        conn.respond(200, json.dumps(body).encode())

    def _models(self, conn: _Conn, req: _Request) -> None:
        card = {
            "id": self.config.model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "inferlab-sim",
            "root": self.config.model,
            "parent": None,
            "max_model_len": self.config.max_model_len,
            "permission": [],
        }
        conn.respond(200, json.dumps({"object": "list", "data": [card]}).encode())

    def _tokenize(self, conn: _Conn, req: _Request) -> None:
        obj = api.load_object(req.body)
        if not isinstance(obj, api.ApiError):
            model = obj.get("model")
            if model is not None and model != self.config.model:
                obj = api.not_found_model(str(model))
        out = (
            obj
            if isinstance(obj, api.ApiError)
            else api.parse_tokenize(obj, self.config.max_model_len, self.tokenizer)
        )
        if isinstance(out, api.ApiError):
            conn.respond(out.status, out.body())
        else:
            conn.respond(200, out)

    def _truth_get(self, conn: _Conn, req: _Request) -> None:
        body = "".join(json.dumps(r.to_dict()) + "\n" for r in self._records).encode()
        conn.respond(200, body, b"application/x-ndjson")

    def _truth_summary(self, conn: _Conn, req: _Request) -> None:
        conn.respond(200, json.dumps(self.lateness_summary()).encode())

    def _truth_delete(self, conn: _Conn, req: _Request) -> None:
        self.clear_truth()
        conn.respond(200, b"{}")

    def _metrics(self, conn: _Conn, req: _Request) -> None:
        if self._engine is not None:
            body = self._engine.metrics_text()
        else:
            body = (
                "# inferlab sim (SIMULATED engine), fixed-timing mode: no batching model\n"
                "# HELP sglang:num_requests_total Finished requests (SIMULATED).\n"
                "# TYPE sglang:num_requests_total counter\n"
                f"sglang:num_requests_total {self._ngen}\n"
            )
        conn.respond(200, body.encode(), b"text/plain; version=0.0.4; charset=utf-8")

    def _completions(self, conn: _Conn, req: _Request) -> None:
        self._generate(conn, req, "completions")

    def _chat(self, conn: _Conn, req: _Request) -> None:
        self._generate(conn, req, "chat")

    def _generate(self, conn: _Conn, req: _Request, endpoint: api.Endpoint) -> None:
        cfg = self.config
        self._nreq += 1
        prefix = "chatcmpl-" if endpoint == "chat" else "cmpl-"
        rec = _Record(f"{prefix}{self._id_prefix}{self._nreq:010x}", endpoint, req)
        obj = api.load_object(req.body)
        gen = (
            obj
            if isinstance(obj, api.ApiError)
            else api.parse_generation(endpoint, obj, cfg.model, cfg.max_model_len, self.tokenizer)
        )
        if isinstance(gen, api.ApiError):
            self._fail(conn, rec, gen.status, gen.body())
            return
        rec.stream = gen.stream
        rec.prompt_tokens = gen.prompt_tokens
        self._ngen += 1
        fault = self._faults.pick(self._ngen, req.recv_ns)
        if self._ngen == 1 and cfg.fault == "exit" and cfg.fault_at_s is not None:
            asyncio.get_running_loop().call_later(cfg.fault_at_s, self._exit_now, None)
        if (
            fault is not None
            and FAULTS[fault].stage != "stream"
            and self._answer_fault(conn, req, rec, fault, gen.include_usage)
        ):
            return

        ids = api.output_ids(cfg.seed, gen.prompt_text, gen.max_tokens, self.tokenizer)
        if self._engine is not None:
            self._engine.submit(conn, req, rec, gen, ids)
            return
        if gen.stream:
            head = self._head(200, None, req.keep_alive, b"text/event-stream; charset=utf-8")
        else:
            head = self._head(200, 0, req.keep_alive).replace(
                b"content-length: 0\r\n", b"content-length: %d\r\n"
            )
        out = api.render(
            gen,
            rec.id,
            int(time.time()),
            self._model_json,
            self._words,
            ids,
            cfg.tokens_per_chunk,
            head,
            reported=2 * gen.max_tokens if rec.fault == "usage" else None,
        )
        dues = self._schedule(req.recv_ns, api.chunk_sizes(gen.max_tokens, cfg.tokens_per_chunk))
        if gen.stream:
            rec.dues = array("q", dues)
            rec.ntokens = array("q", out.ntokens)
        else:
            rec.dues = array("q", dues[-1:])
            rec.ntokens = array("q", (gen.max_tokens,))
        rec.completion_tokens = gen.max_tokens
        frames = tuple(out.frames)
        slots = array("q", [slot_of(d) for d in rec.dues])
        job: _Job | FaultJob
        if fault is None or FAULTS[fault].stage != "stream":
            job = _Job(conn, frames, slots, rec)
        else:
            at = cfg.fault_after if gen.stream and fault != "hang" else 0
            if not gen.stream and fault in ("malformed", "nodata", "garbage", "oversized"):
                body = bad_body(fault)
                frames = (self._head(200, len(body), req.keep_alive) + body,)
                fault = "malformed" if fault == "nodata" else fault
            job = FaultJob(conn, frames, slots, rec, fault, at, round(cfg.drip_ms * 1e6))
        conn.job = job
        if out.head and fault != "hang":
            assert conn.transport is not None
            conn.transport.write(out.head)
        assert self._wheel is not None
        self._wheel.add(job, job.slots[0])

    def _schedule(self, recv_ns: int, sizes: list[int]) -> list[int]:
        """Due times (perf_counter ns) of each chunk: TTFT, then ``ntokens × ITL`` per chunk."""
        itl = self._itl_ns
        jitter = self._jitter_ns
        if jitter <= 0.0:
            due = recv_ns + self._ttft_ns
            dues = [due]
            for n in sizes[1:]:
                due += n * itl
                dues.append(due)
            return dues
        gauss = self._rng.gauss
        due = recv_ns + max(0, round(self._ttft_ns + gauss(0.0, jitter)))
        dues = [due]
        for n in sizes[1:]:
            for _ in range(n):
                due += max(0, round(itl + gauss(0.0, jitter)))
            dues.append(due)
        return dues

    def _fail(
        self,
        conn: _Conn,
        rec: _Record,
        status: int,
        body: bytes,
        ctype: bytes = b"application/json",
    ) -> None:
        rec.status = status
        conn.respond(status, body, ctype)
        rec.done_ns = perf_counter_ns()
        self._finish(rec)

    def _answer_fault(
        self, conn: _Conn, req: _Request, rec: _Record, fault: str, usage: bool
    ) -> bool:
        """Inject an ``answer``/``server`` fault; False when it leaves the answer to be paced
        (``usage`` marks the record and the answer reports the wrong count)."""
        if fault == "exit":
            self._exit_now(rec)
            return True
        if fault == "usage":
            rec.fault = fault if usage else None
            return False
        rec.fault = fault
        answer = status_answer(fault)
        if answer is None:  # notsse
            self._fail(conn, rec, 200, not_sse_body(), b"text/html; charset=utf-8")
            return True
        status, extra, body = answer
        assert conn.transport is not None and conn.current is not None
        conn.transport.write(self._head(status, len(body), req.keep_alive, extra=extra) + body)
        rec.status = status
        rec.done_ns = perf_counter_ns()
        self._finish(rec)
        conn._next()
        return True

    def _exit_now(self, trigger: _Record | None) -> None:
        """The ``exit`` fault: stop listening and drop every connection, as a crash would;
        every request in flight (and ``trigger``) is recorded with ``fault: "exit"``."""
        if self.exited.is_set():
            return
        self.exited.set()
        if self._server is not None:
            self._server.close()
        if trigger is not None:
            trigger.fault, trigger.status = "exit", _CLIENT_GONE
            trigger.done_ns = perf_counter_ns()
            self._finish(trigger)
        for conn in list(self._conns):
            if conn.job is not None and not conn.job.dead:
                conn.job.rec.fault = "exit"
            if conn.transport is not None:
                conn.transport.abort()


class _Seq:
    """One request in the batching model: queued, then running until its last token."""

    __slots__ = (
        "conn",
        "dead",
        "gen",
        "ids",
        "joined",
        "mid",
        "pos",
        "post",
        "pre",
        "rec",
        "reserved",
        "tail",
        "words",
        "write",
    )

    def __init__(
        self,
        conn: _Conn,
        rec: _Record,
        gen: api.GenRequest,
        ids: list[int],
        words: list[bytes],
        pre: bytes,
        mid: bytes,
        tail: bytes,
    ) -> None:
        assert conn.transport is not None
        self.conn = conn
        self.write = conn.transport.write
        self.rec = rec
        self.gen = gen
        self.ids = ids
        self.words = words
        self.pre = pre
        self.mid = mid
        self.post = mid + b"null}]}\n\n"
        self.tail = tail  # usage event + [DONE] + end of the chunked body
        self.pos = 0
        self.joined = False
        self.dead = False
        self.reserved = gen.prompt_tokens + gen.max_tokens

    def emit(self, n: int, due: int) -> bool:
        """Write the next ``n`` tokens (streaming) now; True when the answer is complete."""
        a = self.pos
        b = min(a + n, len(self.ids))
        self.pos = b
        last = b == len(self.ids)
        rec = self.rec
        if rec.stream:
            text = b"".join([self.words[i] for i in self.ids[a:b]])
            if last:
                event = b'%s%s%s"length"}]}\n\n' % (self.pre, text, self.mid)
                frame = b"%x\r\n%s\r\n%s" % (len(event), event, self.tail)
            else:
                event = b"%s%s%s" % (self.pre, text, self.post)
                frame = b"%x\r\n%s\r\n" % (len(event), event)
            rec.dues.append(due)
            rec.ntokens.append(b - a)
            rec.writes.append(perf_counter_ns())
            self.write(frame)
        elif last:
            rec.dues.append(due)
            rec.ntokens.append(b)
            rec.writes.append(perf_counter_ns())
            self.write(self.tail)
        return last


class _Engine:
    """The continuous-batching decode loop: one :class:`TimerWheel` item, fired at step ends."""

    def __init__(self, srv: SimServer, model: StepModel, wheel: TimerWheel) -> None:
        cfg = srv.config
        self.srv = srv
        self.model = model
        self.wheel = wheel
        self.scale_ns = cfg.time_scale * 1e6
        self.interval = cfg.decode_log_interval
        self.log = srv._log
        self.rng = random.Random(cfg.seed)
        self.queue: deque[_Seq] = deque()
        self.running: list[_Seq] = []
        self.busy = False
        self.step_end = 0
        self.kv_reserved = 0
        self.spec = model.spec
        # counters (Prometheus) and the current log interval
        self.gen_total = 0
        self.prompt_total = 0
        self.requests_total = 0
        self.decode_steps = 0
        self.iv_tokens = 0
        self.iv_seq_steps = 0
        self.iv_accepted = 0
        self.iv_start = 0
        self.gen_throughput = 0.0
        self.accept_length = 1.0 if self.spec is not None else 0.0
        self.cuda_graph = True

    # -- requests ----------------------------------------------------------------------------

    def submit(
        self, conn: _Conn, req: _Request, rec: _Record, gen: api.GenRequest, ids: list[int]
    ) -> None:
        srv = self.srv
        if gen.prompt_tokens + gen.max_tokens > self.model.kv_tokens:
            body = api.error_body(
                400,
                f"prompt + max_tokens ({gen.prompt_tokens + gen.max_tokens}) exceed the "
                f"SIMULATED KV cache ({self.model.kv_tokens} tokens)",
                "BadRequestError",
            )
            srv._fail(conn, rec, 400, body)
            return
        created = int(time.time())
        rid_json = json.dumps(rec.id)
        usage = (
            f'{{"prompt_tokens":{gen.prompt_tokens},"total_tokens":'
            f'{gen.prompt_tokens + gen.max_tokens},"completion_tokens":{gen.max_tokens}}}'
        )
        rec.completion_tokens = gen.max_tokens
        rec.dues = array("q")
        rec.ntokens = array("q")
        assert conn.transport is not None
        if gen.stream:
            head = srv._head(200, None, req.keep_alive, b"text/event-stream; charset=utf-8")
            obj = "chat.completion.chunk" if gen.endpoint == "chat" else "text_completion"
            common = (
                f'data: {{"id":{rid_json},"object":"{obj}","created":{created},'
                f'"model":{srv._model_json},'
            )
            if gen.endpoint == "chat":
                pre = (common + '"choices":[{"index":0,"delta":{"content":"').encode()
                mid = b'"},"logprobs":null,"finish_reason":'
                role = (
                    common + '"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
                    '"logprobs":null,"finish_reason":null}]}\n\n'
                ).encode()
                head += b"%x\r\n%s\r\n" % (len(role), role)
            else:
                pre = (common + '"choices":[{"index":0,"text":"').encode()
                mid = b'","logprobs":null,"finish_reason":'
            tail = b""
            if gen.include_usage:
                ev = (common + f'"choices":[],"usage":{usage}}}\n\n').encode()
                tail += b"%x\r\n%s\r\n" % (len(ev), ev)
            done = b"data: [DONE]\n\n"
            tail += b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done)
            conn.transport.write(head)
        else:
            whole = srv._head(200, 0, req.keep_alive).replace(
                b"content-length: 0\r\n", b"content-length: %d\r\n"
            )
            out = api.render(gen, rec.id, created, srv._model_json, srv._words, ids, 1, whole)
            pre = mid = b""
            tail = out.frames[0]
        seq = _Seq(conn, rec, gen, ids, srv._words, pre, mid, tail)
        conn.job = seq
        self.queue.append(seq)
        if not self.busy:
            slot = self._step(perf_counter_ns())
            if slot >= 0:
                self.wheel.add(self, slot)

    # -- the loop ----------------------------------------------------------------------------

    def _admit(self) -> int:
        """Move queued requests into the batch (FIFO); returns the prompt tokens that join."""
        m = self.model
        joining = 0
        queue = self.queue
        while queue:
            seq = queue[0]
            if seq.dead:
                queue.popleft()
                continue
            if len(self.running) >= m.max_running:
                break
            if self.kv_reserved + seq.reserved > m.kv_tokens:
                break
            queue.popleft()
            seq.joined = True
            self.kv_reserved += seq.reserved
            self.running.append(seq)
            joining += seq.gen.prompt_tokens
            self.prompt_total += seq.gen.prompt_tokens
        if joining and self.log is not None:
            new = sum(1 for s in self.running if s.joined)
            self.log(
                f"{_log_prefix()} Prefill batch. #new-seq: {new}, #new-token: {joining}, "
                f"#cached-token: 0, token usage: {self._usage():.2f}, "
                f"#running-req: {len(self.running) - new}, #queue-req: {len(queue)}, "
            )
        return joining

    def _step(self, start: int) -> int:
        """Begin a step at ``start`` (ns); returns the wheel slot of its end, or -1 if idle."""
        joining = self._admit()
        if not self.running:
            self.busy = False
            return -1
        self.busy = True
        dur = step_ms(self.model, len(self.running), joining)
        self.cuda_graph = len(self.running) <= self.model.cuda_graph_max_bs
        self.step_end = start + round(dur * self.scale_ns)
        return slot_of(self.step_end)

    def fire(self) -> int:
        due = self.step_end
        spec = self.spec
        keep: list[_Seq] = []
        decoding = 0
        accepted = 0
        emitted = 0
        for seq in self.running:
            if seq.dead:
                self.kv_reserved -= seq.reserved
                continue
            if seq.joined:  # its prefill's token
                seq.joined = False
                n = 1
            elif spec is not None:
                acc = accept_draw(self.rng, spec.draft_tokens, spec.accept_prob)
                accepted += acc
                decoding += 1
                n = 1 + acc
            else:
                decoding += 1
                n = 1
            before = seq.pos
            done = seq.emit(n, due)
            emitted += seq.pos - before
            if done:
                self.kv_reserved -= seq.reserved
                self.requests_total += 1
                seq.conn.job_done(seq)
            else:
                keep.append(seq)
        self.running = keep
        self.gen_total += emitted
        if decoding:
            self.decode_steps += 1
            self.iv_tokens += emitted
            self.iv_seq_steps += decoding
            self.iv_accepted += accepted
            if self.decode_steps % self.interval == 0:
                self._log_decode(due, keep)
        slot = self._step(due)
        if slot < 0:
            self.iv_start = 0
        return slot

    def _usage(self) -> float:
        used = sum(s.gen.prompt_tokens + s.pos for s in self.running)
        return used / self.model.kv_tokens

    def _log_decode(self, now: int, running: list[_Seq]) -> None:
        start = self.iv_start
        if start and now > start:
            self.gen_throughput = self.iv_tokens / ((now - start) / 1e9)
        spec = self.spec
        if spec is not None and self.iv_seq_steps:
            self.accept_length = 1.0 + self.iv_accepted / self.iv_seq_steps
        if self.log is not None:
            used = sum(s.gen.prompt_tokens + s.pos for s in running)
            parts = [
                f"{_log_prefix()} Decode batch. #running-req: {len(running)}",
                f"#token: {used}",
                f"token usage: {used / self.model.kv_tokens:.2f}",
            ]
            if spec is not None:
                rate = (self.accept_length - 1.0) / spec.draft_tokens
                parts += [f"accept len: {self.accept_length:.2f}", f"accept rate: {rate:.2f}"]
            parts += [
                f"cuda graph: {self.cuda_graph}",
                f"gen throughput (token/s): {self.gen_throughput:.2f}",
                f"#queue-req: {len(self.queue)}, ",
            ]
            self.log(", ".join(parts))
        self.iv_start = now
        self.iv_tokens = self.iv_seq_steps = self.iv_accepted = 0

    def metrics_text(self) -> str:
        """Prometheus text with SGLang's metric names; every HELP says SIMULATED."""
        label = "{model_name=" + json.dumps(self.srv.config.model) + "}"
        used = sum(s.gen.prompt_tokens + s.pos for s in self.running)
        rows: list[tuple[str, str, str, float]] = [
            ("sglang:num_running_reqs", "gauge", "Running requests", len(self.running)),
            ("sglang:num_queue_reqs", "gauge", "Queued requests", len(self.queue)),
            ("sglang:num_used_tokens", "gauge", "KV-cache tokens in use", used),
            ("sglang:max_total_num_tokens", "gauge", "KV-cache capacity", self.model.kv_tokens),
            ("sglang:token_usage", "gauge", "KV-cache usage", used / self.model.kv_tokens),
            ("sglang:gen_throughput", "gauge", "Generation throughput", self.gen_throughput),
        ]
        if self.spec is not None:
            rows.append(("sglang:spec_accept_length", "gauge", "Accept length", self.accept_length))
            rate = (self.accept_length - 1.0) / self.spec.draft_tokens
            rows.append(("sglang:spec_accept_rate", "gauge", "Accept rate", rate))
        rows += [
            ("sglang:prompt_tokens_total", "counter", "Prefill tokens", self.prompt_total),
            ("sglang:generation_tokens_total", "counter", "Generated tokens", self.gen_total),
            ("sglang:num_requests_total", "counter", "Finished requests", self.requests_total),
        ]
        out = [f"# inferlab sim (SIMULATED engine), preset {self.srv.config.preset or 'generic'}"]
        for name, kind, help_, value in rows:
            base = name[: -len("_total")] if kind == "counter" else name
            out.append(f"# HELP {base} {help_} (SIMULATED by inferlab sim).")
            out.append(f"# TYPE {base} {kind}")
            out.append(f"{name}{label} {float(value)!r}")
        return "\n".join(out) + "\n"


def _log_prefix() -> str:
    """``[SIMULATED] [YYYY-mm-dd HH:MM:SS TP0]``: SGLang's prefix, marked as simulated."""
    return "[SIMULATED] [" + time.strftime("%Y-%m-%d %H:%M:%S") + " TP0]"


def _run(coro: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        asyncio.run(coro)
        return
    uvloop.run(coro)


def serve(
    config: SimConfig,
    on_ready: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> bool:
    """Run the reference engine under uvloop until SIGINT/SIGTERM (or the ``exit`` fault:
    then True); flush ground truth on exit.

    ``on_ready`` receives the base URL once the server listens; ``log`` receives the batching
    model's SGLang-format log lines (each starting with ``[SIMULATED]``).
    """
    server = SimServer(config, log=log)

    async def main() -> None:
        await server.start()
        # A full collection over everything imported took 50-100 ms in the middle of a 256-stream
        # run (every chunk due then was written that late): freeze what exists at start. Per
        # stream, only the job and its record stay tracked (frames, dues, writes are untracked).
        gc.collect()
        gc.freeze()
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopped.set)
        try:
            if on_ready is not None:
                on_ready(server.url)
            crashed = asyncio.ensure_future(server.exited.wait())
            await asyncio.wait(
                [asyncio.ensure_future(stopped.wait()), crashed],
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            await server.stop()

    _run(main())
    return server.exited.is_set()
