"""Where the reference engine's HTTP layer meets its server: what each side may use of the other.

:class:`Client` is one client connection as the request path sees it (implemented by
:class:`inferlab.sim.http.Conn`). :class:`ConnHost` is what a connection needs from the server
it serves; :class:`SimHost` adds what the endpoints, the fixed-timing pacer, fault injection
and the batching loop read. :class:`inferlab.sim.server.SimServer` implements both; the modules
of the request path depend on these protocols and never import the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from pydantic import JsonValue

    from inferlab.sim.config import SimConfig
    from inferlab.sim.faults import FaultJob
    from inferlab.sim.heads import Heads
    from inferlab.sim.profiler import SimProfiler
    from inferlab.sim.tokenizer import WordTokenizer
    from inferlab.sim.truth import Record, Request
    from inferlab.sim.wheel import Answer

__all__ = ["Client", "ConnHost", "SimHost"]


class Client(Protocol):
    """One client connection: its transport, the request being answered (``current``), the
    paced answer writing to it (``job``), and ``closed`` once it is no longer answered."""

    transport: asyncio.Transport | None
    current: Request | None
    job: Answer | None
    closed: bool

    def respond(self, status: int, body: bytes, ctype: bytes = b"application/json") -> None:
        """Write a complete answer to the current request now."""

    def next(self) -> None:
        """The current request is answered: close (no keep-alive) or start the next one."""

    def job_done(self, job: Answer) -> None:
        """A paced answer is complete."""

    def job_failed(self, job: FaultJob, close: bool) -> None:
        """A paced answer misbehaved and ended (``close``: the connection closes too)."""


class ConnHost(Protocol):
    """What a connection needs from the server it serves."""

    def connected(self, conn: Client) -> None:
        """``conn`` is open (``stop`` and the ``exit`` fault drop it)."""

    def disconnected(self, conn: Client) -> None:
        """``conn`` is closed."""

    def route(self, conn: Client, req: Request) -> None:
        """Answer ``req``, the current request of ``conn``."""

    def finish(self, rec: Record) -> None:
        """Keep the ground truth of a finished generation request."""

    @property
    def heads(self) -> Heads:
        """The answer heads it writes (``head``, ``answer_head``; the date cached per second)."""


class SimHost(ConnHost, Protocol):
    """What the request handlers, the pacer, fault injection and the batching loop read."""

    @property
    def config(self) -> SimConfig: ...

    @property
    def tokenizer(self) -> WordTokenizer: ...

    @property
    def exited(self) -> asyncio.Event:
        """Set once the ``exit`` fault struck."""

    @property
    def log(self) -> Callable[[str], None] | None:
        """Where SGLang-format log lines go (None: nowhere)."""

    @property
    def profiler(self) -> SimProfiler | None:
        """The capture of SGLang's profiling endpoints (None: fixed-timing mode)."""

    @property
    def model_json(self) -> str:
        """The served model's name as a JSON string."""

    @property
    def words(self) -> list[bytes]:
        """Each token id's text, with its leading space."""

    @property
    def generations(self) -> int:
        """Valid generation requests received since start."""

    def fail(
        self,
        conn: Client,
        rec: Record,
        status: int,
        body: bytes,
        ctype: bytes = b"application/json",
    ) -> None:
        """Answer a generation request with an error now and keep its ground truth."""

    def truth(self) -> list[dict[str, JsonValue]]:
        """Ground truth of every finished generation request kept."""

    def clear_truth(self) -> None:
        """Forget the ground truth kept."""

    def lateness_summary(self) -> dict[str, JsonValue]:
        """How late chunks were written (ms) and the faults injected."""

    def batching_metrics(self) -> str | None:
        """The batching model's Prometheus text (None: fixed-timing mode)."""

    def clients(self) -> list[Client]:
        """The open connections, now."""

    def stop_listening(self) -> None:
        """Close the listening socket; open connections stay."""

    def profile_steps_done(self) -> None:
        """A capture reached its ``num_steps``: stop it and write its traces."""
