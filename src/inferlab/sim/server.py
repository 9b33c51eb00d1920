"""The reference engine: an OpenAI-compatible HTTP/1.1 server whose timing is known exactly.

Hand-written HTTP on ``asyncio.Protocol`` (run under uvloop). A request's receipt time is
taken when its first byte arrives; its token chunks are due at fixed offsets from that time
(TTFT, then ``ntokens × ITL`` per chunk) and are written by one :class:`TimerWheel`. Every
finished request leaves its ground truth: when each chunk was due and when it was written.

With ``--preset`` / ``--model-mode batching`` one decode loop (:mod:`inferlab.sim.batching`, a
single item on the same wheel) replaces the fixed schedule: each step's duration comes from the
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
from inferlab.sim.batching import BatchingEngine, Seq, log_prefix
from inferlab.sim.config import SimConfig
from inferlab.sim.faults import FAULTS, FaultJob, FaultPlan, bad_body, not_sse_body, status_answer
from inferlab.sim.model import StepModel
from inferlab.sim.presets import get_preset, resolve
from inferlab.sim.profiler import ProfileRequestError, SimProfiler
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
        self.job: _Job | Seq | FaultJob | None = None
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

    def job_done(self, job: _Job | Seq | FaultJob) -> None:
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
        self._engine: BatchingEngine | None = None
        self.step_model: StepModel | None = None
        self._profiler: SimProfiler | None = None
        if config.batching:
            preset = get_preset(config.preset or "generic")
            self.step_model = resolve(preset, config.levers)  # may raise StartupFailure
            self._profiler = SimProfiler(
                preset, self.step_model, config.levers, config.tp_size, config.time_scale
            )
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
            "/start_profile": {"POST": self._start_profile},
            "/stop_profile": {"POST": self._stop_profile},
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
            self._engine = BatchingEngine(self, self.step_model, self._wheel)
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

    # -- profiling (SGLang's endpoints; :mod:`inferlab.sim.profiler`) --------------------------

    def _start_profile(self, conn: _Conn, req: _Request) -> None:
        prof = self._profiler
        obj = api.load_object(req.body) if req.body.strip() else {}
        if prof is None or isinstance(obj, api.ApiError):
            msg = "profiling needs --preset or --model-mode batching (SIMULATED steps)"
            err = obj if isinstance(obj, api.ApiError) else api.ApiError(400, msg)
            conn.respond(err.status, err.body())
            return
        try:
            cap = prof.start(obj)
        except ProfileRequestError as exc:
            conn.respond(400, api.error_body(400, str(exc), "BadRequestError"))
            return
        if self._log is not None:
            self._log(
                f"{log_prefix()} Profiling starts. Traces will be saved to: {cap.out_dir} "
                f"(with profile id: {cap.profile_id})"
            )
        conn.respond(200, b"Start profiling. (SIMULATED)\n", b"text/plain; charset=utf-8")

    def _stop_profile(self, conn: _Conn, req: _Request) -> None:
        prof = self._profiler
        try:
            if prof is None:
                raise ProfileRequestError("profiling needs --preset or --model-mode batching")
            cap = prof.stop()
        except ProfileRequestError as exc:
            conn.respond(400, api.error_body(400, str(exc), "BadRequestError"))
            return
        fut = asyncio.get_running_loop().run_in_executor(None, prof.write, cap)

        def done(f: asyncio.Future[list[Path]]) -> None:
            self._profile_written(f, cap.out_dir)
            if not conn.closed:
                ok = f.exception() is None
                conn.respond(200 if ok else 500, b"Stop profiling. (SIMULATED)\n" if ok else b"")

        fut.add_done_callback(done)

    def _profile_written(self, f: asyncio.Future[list[Path]], out: Path) -> None:
        if self._log is None:
            return
        exc = f.exception()
        if exc is not None:
            self._log(f"{log_prefix()} Profiling failed: cannot write traces to {out}: {exc}")
        else:
            self._log(f"{log_prefix()} Profiling done. Traces are saved to: {out}")

    def _profile_steps_done(self) -> None:
        """``num_steps`` reached: stop and write, answering nobody (as SGLang does)."""
        prof = self._profiler
        assert prof is not None
        cap = prof.stop()
        fut = asyncio.get_running_loop().run_in_executor(None, prof.write, cap)
        fut.add_done_callback(lambda f: self._profile_written(f, cap.out_dir))

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
