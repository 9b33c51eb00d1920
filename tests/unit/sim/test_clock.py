"""The model clock's re-timing (``sim.clock``): back to back takes out the client's
turnaround and keeps each duration."""

from __future__ import annotations


def test_back_to_back_takes_out_the_turnaround_and_keeps_each_duration() -> None:
    from inferlab.records import RequestRecord
    from inferlab.sim.clock import back_to_back, on_model_clock

    def rec(i: int, send: int, first: int, last: int) -> RequestRecord:
        return RequestRecord(i, f"r{i}", send_ns=send, end_ns=last, event_ns=[first, last])

    # two users; the client took 3, 5 and 9 ns to send each next request
    recs = [rec(0, 0, 10, 20), rec(1, 1, 12, 30), rec(2, 23, 30, 40), rec(3, 35, 40, 55)]
    back_to_back(recs, 2)
    assert [(r.send_ns, r.event_ns, r.end_ns) for r in recs] == [
        (0, [10, 20], 20),
        (0, [11, 29], 29),
        (20, [27, 37], 37),
        (29, [34, 49], 49),
    ]
    truth = [{"request_id": "r0", "recv_ns": 2, "chunks": [[0, 9, 0], [8, 9, 1], [18, 19, 3]]}]
    done = on_model_clock(recs, truth)
    assert (done.retimed, done.kept) == (1, 3)
    assert (recs[0].send_ns, recs[0].event_ns, recs[0].end_ns) == (2, [8, 18], 18)
