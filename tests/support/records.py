"""Test helper: request records built by hand."""

from __future__ import annotations

from inferlab.records import RequestRecord


def rec(i: int, send: int, client: str | None = None) -> RequestRecord:
    """Request ``i``, sent at ``send`` ns: 3 tokens, one each 20, 30 and 50 ms after it was
    sent, from ``client`` (a host of the cluster, or None)."""
    return RequestRecord(
        index=i,
        request_id=f"r{i}",
        send_ns=send,
        end_ns=send + 50_000_000,
        status=200,
        event_ns=[send + 20_000_000, send + 30_000_000, send + 50_000_000],
        event_tokens=[1, 1, 1],
        usage_completion_tokens=3,
        client=client,
    )
