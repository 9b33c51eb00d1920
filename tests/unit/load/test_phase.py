"""Collecting worker results: a worker that sends its result and exits at once is never lost."""

from __future__ import annotations

import multiprocessing as mp
import os
from multiprocessing.connection import Connection
from typing import Any

import pytest

from inferlab.errors import MeasurementError
from inferlab.load.http import Endpoint
from inferlab.load.jobs import WorkerJob, WorkerResult
from inferlab.load.phase import collect_results, run_phase


def test_a_result_sent_after_the_wait_timed_out_is_still_read() -> None:
    """The race behind "exited without reporting (exit code 0)": the worker sends its result
    and exits after the parent's wait timed out, before the parent looks at liveness. Here the
    liveness probe itself plays that worker (sends, closes its end, reports it exited)."""
    parent, child = mp.Pipe()
    got: list[Any] = []
    calls = [0]

    def alive() -> bool:
        calls[0] += 1
        if calls[0] == 2:  # after one empty wait: send the result and exit
            child.send(("result", "R"))
            child.close()
            return False
        return calls[0] < 2

    collect_results([parent], alive, got.append, poll_s=0.01)
    assert got == [("result", "R")]


def test_progress_messages_are_delivered_before_the_result() -> None:
    parent, child = mp.Pipe()
    child.send(("progress", 0, "p1"))
    child.send(("result", "R"))
    child.close()
    got: list[Any] = []
    collect_results([parent], lambda: False, got.append)
    assert got == [("progress", 0, "p1"), ("result", "R")]


def _send_and_exit(
    job: WorkerJob, conn: Connection, stop: Any, done: Any, errs: Any, finish: Any
) -> None:
    conn.send(("ready", job.worker))
    conn.recv()
    conn.send(("result", WorkerResult(job.worker, [], [], [], 1, 2)))
    os._exit(0)  # no flush, no cleanup: gone the moment the result is written


def _exit_silently(
    job: WorkerJob, conn: Connection, stop: Any, done: Any, errs: Any, finish: Any
) -> None:
    conn.send(("ready", job.worker))
    conn.recv()
    os._exit(3)


def _jobs(n: int) -> list[WorkerJob]:
    ep = Endpoint.parse("http://127.0.0.1:1")
    return [WorkerJob(worker=i, endpoint=ep, items=[]) for i in range(n)]


def test_workers_that_exit_right_after_sending_are_all_collected() -> None:
    for _ in range(5):
        out = run_phase(_jobs(4), lambda d, e: None, target=_send_and_exit)
        assert [r.worker for r in out.results] == [0, 1, 2, 3]
        assert not out.interrupted and out.finish_ns is None


def test_a_worker_that_exits_without_its_result_is_named() -> None:
    with pytest.raises(MeasurementError, match=r"worker 0: exit code 3"):
        run_phase(_jobs(1), lambda d, e: None, target=_exit_silently)
