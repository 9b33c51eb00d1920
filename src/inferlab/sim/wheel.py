"""One timer wheel that paces every stream of the reference engine.

Slots are 1 ms wide and keyed by absolute ``perf_counter`` milliseconds. An item due at
``due_ns`` goes into slot ``ceil(due_ns / 1e6)``, so it is never fired before it is due. One
``loop.call_at`` is armed for the earliest non-empty slot; when it fires, every item of every
slot that has begun is fired once and re-inserted at the slot it returns. An :class:`Answer` is
what a connection writes to a client; a :class:`Job` is the plain item: one answer's frames,
each written once its slot has begun.
"""

from __future__ import annotations

import asyncio
from heapq import heappop, heappush
from time import perf_counter_ns
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from array import array

    from inferlab.sim.truth import Record

__all__ = ["Answer", "Job", "JobConn", "Paced", "TimerWheel", "slot_of"]


class Paced(Protocol):
    """An item the wheel fires: ``fire()`` does its due work and returns its next slot, or -1."""

    def fire(self) -> int: ...


class JobConn(Protocol):
    """The connection a :class:`Job` writes to and tells when the answer is complete."""

    transport: asyncio.Transport | None

    def job_done(self, job: Answer) -> None: ...


class Answer:
    """One answer a connection writes: its transport's ``write``, its ground-truth record, and
    ``dead`` once the client is gone (nothing more is written)."""

    __slots__ = ("conn", "dead", "rec", "write")

    def __init__(self, conn: JobConn, rec: Record) -> None:
        assert conn.transport is not None
        self.conn = conn
        self.write = conn.transport.write
        self.rec = rec
        self.dead = False


class Job(Answer):
    """One answer being paced by the wheel: ``frames[i]`` is written once ``dues[i]`` passed."""

    __slots__ = ("frames", "i", "n", "slots", "writes")

    def __init__(
        self, conn: JobConn, frames: tuple[bytes, ...], slots: array[int], rec: Record
    ) -> None:
        super().__init__(conn, rec)
        self.frames = frames
        self.slots = slots
        self.writes = rec.writes
        self.i = 0
        self.n = len(frames)

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


def slot_of(due_ns: int) -> int:
    """The wheel slot (absolute ms, rounded up) of a ``perf_counter_ns`` due time."""
    return -(-due_ns // 1_000_000)


class TimerWheel:
    """Fires :class:`Paced` items at their slots from a single event-loop timer."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._slots: dict[int, list[Paced]] = {}
        self._heap: list[int] = []
        self._handle: asyncio.TimerHandle | None = None
        self._armed = -1
        self._running = False
        # loop.time() and perf_counter are both CLOCK_MONOTONIC under uvloop and asyncio on
        # Linux; elsewhere the offset between the two clocks is measured once.
        offset = loop.time() - perf_counter_ns() / 1e9
        self._offset = 0.0 if -0.002 < offset < 0.002 else offset
        self.fires = 0
        self.items_fired = 0

    def __len__(self) -> int:
        return sum(len(v) for v in self._slots.values())

    def add(self, item: Paced, slot: int) -> None:
        """Schedule ``item`` to fire once slot ``slot`` (absolute ms) has begun."""
        bucket = self._slots.get(slot)
        if bucket is not None:
            bucket.append(item)
            return
        self._slots[slot] = [item]
        heappush(self._heap, slot)
        if not self._running and (self._handle is None or slot < self._armed):
            self._arm(slot)

    def close(self) -> None:
        """Drop every item and disarm the timer."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._slots.clear()
        self._heap.clear()

    def _arm(self, slot: int) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed = slot
        self._handle = self._loop.call_at(slot / 1000.0 + self._offset, self._run)

    def _run(self) -> None:
        self._handle = None
        self._running = True
        heap = self._heap
        slots = self._slots
        fired = 0
        try:
            while heap:
                if heap[0] > perf_counter_ns() // 1_000_000:
                    break
                for item in slots.pop(heappop(heap)):
                    fired += 1
                    nxt = item.fire()
                    if nxt >= 0:
                        bucket = slots.get(nxt)
                        if bucket is None:
                            slots[nxt] = [item]
                            heappush(heap, nxt)
                        else:
                            bucket.append(item)
        finally:
            self._running = False
            self.fires += 1
            self.items_fired += fired
            if heap:
                self._arm(heap[0])
