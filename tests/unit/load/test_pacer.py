"""The open-loop pacer: order, never early, and every way a schedule stops (no timing bound:
how late a send is belongs to benchmarks/replay_lateness.py)."""

from __future__ import annotations

import asyncio
import time

from inferlab.load.pacer import Pacer


def _run(dues_ms: list[float], *, stop_at: int | None = None, halt_after: int | None = None):
    async def main() -> tuple[list[tuple[int, int, int]], int]:
        loop = asyncio.get_running_loop()
        t0 = time.perf_counter_ns()
        dues = [t0 + int(d * 1e6) for d in dues_ms]
        fired: list[tuple[int, int, int]] = []
        ended = loop.create_future()
        calls = 0

        def fire(k: int, due: int) -> bool:
            fired.append((k, due, time.perf_counter_ns()))
            return stop_at is None or k < stop_at

        def done() -> None:
            nonlocal calls
            calls += 1
            if not ended.done():
                ended.set_result(None)

        def halt() -> bool:
            return halt_after is not None and len(fired) > halt_after

        pacer = Pacer(loop, dues, fire, done, halt=halt)
        pacer.start()
        await asyncio.wait_for(ended, 10)
        pacer.stop()
        await asyncio.sleep(0.01)  # anything queued late would run now
        return fired, calls

    return asyncio.run(main())


def test_fires_in_order_never_before_due() -> None:
    fired, calls = _run([0.0, 0.5, 0.5, 2.0, 3.3, 10.0])
    assert [k for k, _, _ in fired] == [0, 1, 2, 3, 4, 5]
    assert all(at >= due for _, due, at in fired)
    assert calls == 1


def test_fire_returning_false_stops_the_schedule() -> None:
    fired, calls = _run([0.0, 1.0, 2.0, 3.0, 4.0], stop_at=2)
    assert [k for k, _, _ in fired] == [0, 1, 2]  # the third said stop; none after it
    assert calls == 1


def test_halt_is_seen_during_a_long_gap() -> None:
    t0 = time.monotonic()
    fired, calls = _run([0.0, 60_000.0], halt_after=0)  # the second is due in a minute
    assert [k for k, _, _ in fired] == [0]
    assert calls == 1
    assert time.monotonic() - t0 < 30  # it did not sleep the minute out


def test_empty_schedule_ends_at_once() -> None:
    fired, calls = _run([])
    assert fired == [] and calls == 1
