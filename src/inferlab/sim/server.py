"""The reference engine: an OpenAI-compatible HTTP/1.1 server whose timing is known exactly.

Hand-written HTTP on ``asyncio.Protocol`` (:mod:`inferlab.sim.http`, run under uvloop), which
meets the server at :mod:`inferlab.sim.host`. A request's receipt time is taken when its first
byte arrives; its token chunks are due at fixed offsets from that time (TTFT, then
``ntokens × ITL`` per chunk, :mod:`inferlab.sim.pacing`) and are written by one
:class:`TimerWheel`. Faults are injected on purpose (:mod:`inferlab.sim.inject`). Every
finished request leaves its ground truth: when each chunk was due and when it was written.

With ``--preset`` / ``--model-mode batching`` one decode loop (:mod:`inferlab.sim.batching`, a
single item on the same wheel) replaces the fixed schedule: each step's duration comes from the
continuous-batching model (:mod:`inferlab.sim.model`) and every running sequence's chunk is
due at the step's end.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import time
from collections.abc import Callable, Coroutine, Mapping
from functools import partial
from pathlib import Path
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

from inferlab.errors import SimError
from inferlab.sim import api
from inferlab.sim.batching import BatchingEngine
from inferlab.sim.config import SimConfig
from inferlab.sim.endpoints import ROUTES, profile_steps_done
from inferlab.sim.faults import FAULTS, FaultPlan
from inferlab.sim.heads import Heads
from inferlab.sim.host import Client
from inferlab.sim.http import Conn
from inferlab.sim.inject import answer_fault, exit_now
from inferlab.sim.lm import StatedModel
from inferlab.sim.model import StepModel
from inferlab.sim.pacing import Pacer, Schedule
from inferlab.sim.presets import get_preset, resolve
from inferlab.sim.profiler import SimProfiler
from inferlab.sim.scoring import scored_body
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.sim.truth import Record, Request, lateness_summary
from inferlab.sim.wheel import TimerWheel

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["SimServer", "serve", "serve_until"]

_FLUSH_S = 1.0


class SimServer:
    """The reference engine. ``await start()`` binds and serves; ``await stop()`` ends it.

    It is the :class:`~inferlab.sim.host.SimHost` of its connections and request handlers."""

    def __init__(
        self,
        config: SimConfig,
        log: Callable[[str], None] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``env``: the environment it reads (``SGLANG_TORCH_PROFILER_DIR``; default: this
        process's)."""
        self.config = config
        self.log = log
        self._engine: BatchingEngine | None = None
        self._pacer: Pacer | None = None
        self.step_model: StepModel | None = None
        self.profiler: SimProfiler | None = None
        if config.batching:
            preset = get_preset(config.preset or "generic")
            self.step_model = resolve(preset, config.levers)  # may raise StartupFailure
            self.profiler = SimProfiler(
                preset, self.step_model, config.levers, config.tp_size, config.time_scale, env
            )
        self.tokenizer = WordTokenizer(config.vocab_size)
        self.lm = StatedModel(config.seed, self.tokenizer, config.logprob_shift)
        self.words = [b" " + w.encode() for w in self.tokenizer.vocab]
        self.model_json = json.dumps(config.model)
        f = config.launch_factor  # this launch's speed (sim.launchspread)
        self._schedule = Schedule(
            config.ttft_ms * f,
            config.itl_ms * f,
            config.jitter_ms * f,
            config.seed,
            config.launch_index,
        )
        self._faults = FaultPlan(
            config.fault, config.fault_every, config.fault_at_s, config.fault_for_s
        )
        self.exited = asyncio.Event()  # set when the ``exit`` fault struck
        self._id_prefix = os.urandom(6).hex()
        self._nreq = 0
        self._ngen = 0
        self._records: list[Record] = []
        self._unflushed: list[str] = []
        self._conns: set[Client] = set()
        self._server: asyncio.AbstractServer | None = None
        self._wheel: TimerWheel | None = None
        self._flush_handle: asyncio.TimerHandle | None = None
        self.heads = Heads()
        self.port = 0
        self._routes: dict[str, dict[str, Callable[[Client, Request], None]]] = {
            path: {method: partial(handler, self) for method, handler in methods.items()}
            for path, methods in ROUTES.items()
        }
        self._routes["/v1/completions"] = {"POST": self._completions}
        self._routes["/v1/chat/completions"] = {"POST": self._chat}

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
        self._pacer = Pacer(self, self._schedule, self._wheel)
        try:
            self._server = await loop.create_server(
                lambda: Conn(self),
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

    def truth(self) -> list[dict[str, JsonValue]]:
        """Ground truth of every finished generation request since start (or the last clear)."""
        return [r.to_dict() for r in self._records]

    def clear_truth(self) -> None:
        self._records.clear()

    def lateness_summary(self) -> dict[str, JsonValue]:
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

    def finish(self, rec: Record) -> None:
        """Keep the ground truth of a finished generation request (and queue it for
        ``truth_path``)."""
        self._records.append(rec)
        if self.config.truth_path is not None:
            self._unflushed.append(json.dumps(rec.to_dict()) + "\n")

    # -- HTTP: what connections and handlers use (:class:`~inferlab.sim.host.SimHost`) ------

    @property
    def generations(self) -> int:
        """Valid generation requests received since start."""
        return self._ngen

    def connected(self, conn: Client) -> None:
        self._conns.add(conn)

    def disconnected(self, conn: Client) -> None:
        self._conns.discard(conn)

    def clients(self) -> list[Client]:
        """The open connections, now."""
        return list(self._conns)

    def stop_listening(self) -> None:
        """Close the listening socket; open connections stay."""
        if self._server is not None:
            self._server.close()

    def batching_metrics(self) -> str | None:
        """The batching model's Prometheus text (None: fixed-timing mode)."""
        return None if self._engine is None else self._engine.metrics_text()

    def route(self, conn: Client, req: Request) -> None:
        """Answer ``req``, the current request of ``conn``."""
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

    def profile_steps_done(self) -> None:
        """``num_steps`` reached: stop and write, answering nobody (as SGLang does)."""
        profile_steps_done(self)

    def _completions(self, conn: Client, req: Request) -> None:
        self._generate(conn, req, "completions")

    def _chat(self, conn: Client, req: Request) -> None:
        self._generate(conn, req, "chat")

    def _generate(self, conn: Client, req: Request, endpoint: api.Endpoint) -> None:
        cfg = self.config
        self._nreq += 1
        prefix = "chatcmpl-" if endpoint == "chat" else "cmpl-"
        rec = Record(f"{prefix}{self._id_prefix}{self._nreq:010x}", endpoint, req)
        obj = api.load_object(req.body)
        gen = (
            obj
            if isinstance(obj, api.ApiError)
            else api.parse_generation(endpoint, obj, cfg.model, cfg.max_model_len, self.tokenizer)
        )
        if isinstance(gen, api.ApiError):
            self.fail(conn, rec, gen.status, gen.body())
            return
        rec.stream = gen.stream
        rec.prompt_tokens = gen.prompt_tokens
        self._ngen += 1
        fault = self._faults.pick(self._ngen, req.recv_ns)
        if self._ngen == 1 and cfg.fault == "exit" and cfg.fault_at_s is not None:
            asyncio.get_running_loop().call_later(cfg.fault_at_s, exit_now, self, None)
        if (
            fault is not None
            and FAULTS[fault].stage != "stream"
            and answer_fault(self, conn, req, rec, fault, gen.include_usage)
        ):
            return
        if gen.logprobs is not None or gen.echo:  # answered at once, outside the timing model
            body, _ = scored_body(self.lm, gen, rec.id, int(time.time()), self.model_json)
            conn.respond(200, body)
            return
        ids = self.lm.greedy(gen.prompt_text, gen.max_tokens)
        if self._engine is not None:
            self._engine.submit(conn, req, rec, gen, ids)
        else:
            assert self._pacer is not None
            self._pacer.pace(conn, req, rec, gen, ids, fault)

    def fail(
        self,
        conn: Client,
        rec: Record,
        status: int,
        body: bytes,
        ctype: bytes = b"application/json",
    ) -> None:
        """Answer a generation request with an error now and keep its ground truth."""
        rec.status = status
        conn.respond(status, body, ctype)
        rec.done_ns = perf_counter_ns()
        self.finish(rec)


def _run(coro: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        asyncio.run(coro)
        return
    uvloop.run(coro)


async def serve_until(
    server: SimServer,
    stopped: asyncio.Event,
    on_ready: Callable[[str], None] | None = None,
) -> bool:
    """Start ``server``, tell ``on_ready`` its base URL, serve until ``stopped`` is set or the
    ``exit`` fault strikes (then True), stop it (ground truth flushed)."""
    await server.start()
    try:
        if on_ready is not None:
            on_ready(server.url)
        waits = [asyncio.ensure_future(e.wait()) for e in (stopped, server.exited)]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
    finally:
        await server.stop()
    return server.exited.is_set()


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

    def ready(url: str) -> None:
        # A full collection over everything imported took 50-100 ms in the middle of a 256-stream
        # run (every chunk due then was written that late): freeze what exists at start. Per
        # stream, only the job and its record stay tracked (frames, dues, writes are untracked).
        gc.collect()
        gc.freeze()
        if on_ready is not None:
            on_ready(url)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()
        delay = config.exit_delay_s  # s from the first signal to the exit

        def asked() -> None:
            loop.call_later(delay, stopped.set) if delay else stopped.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, asked)
        await serve_until(server, stopped, ready)

    _run(main())
    return server.exited.is_set()
