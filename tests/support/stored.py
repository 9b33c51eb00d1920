"""Test helper: a stored run to read back: two raw requests (one measured, multi-token
chunks; one warm-up HTTP 503), and the campaign/config/environment rows they belong to (a config
whose argv and env carry secrets)."""

from __future__ import annotations

from typing import Any

from inferlab.records import ErrorKind, RequestRecord
from inferlab.store import Store


def sample_records() -> list[RequestRecord]:
    """The two raw requests (their nanosecond stamps exact)."""
    ok = RequestRecord(
        0,
        "a",
        send_ns=10**15,
        end_ns=10**15 + 9_000_000,
        status=200,
        event_ns=[10**15 + 5_000_000, 10**15 + 7_123_457, 10**15 + 8_999_999],
        event_tokens=[1, 3, 2],
        usage_completion_tokens=6,
        input_tokens=12,
        requested_output_tokens=6,
        finish_reason="length",
        warnings=["w1"],
    )
    bad = RequestRecord(
        1,
        "b",
        warmup=True,
        scheduled_ns=5,
        send_ns=7,
        end_ns=9,
        status=503,
        error_kind=ErrorKind.HTTP,
        error_message="HTTP 503: overloaded",
    )
    return [ok, bad]


def add_run(store: Store, label: str = "C=1", trial: int = 0, **kw: object) -> int:
    """The run of ``sample_records`` at ``label``, ``trial`` (``kw``: more ``add_run`` fields)."""
    with store.transaction():
        cid = store.campaign_id("c")
        gid = store.config_id(
            cid,
            "base",
            engine="vllm",
            model="m",
            argv=["--api-key", "sk-SECRET-ARG", "--tp", "2"],
            env={"HF_TOKEN": "hf_SECRET_ENV", "NCCL_PROTO": "LL"},
        )
        eid = store.runs.environment_id(
            {"inferlab_version": "x", "gpu_name": "H200", "gpu_count": 8}
        )
        return store.runs.add(
            campaign_id=cid,
            config_id=gid,
            environment_id=eid,
            source="inferlab bench",
            definitions="inferlab/1",
            metrics_version=1,
            label=label,
            concurrency=1,
            rate=None,
            trial=trial,
            model="m",
            workload={"kind": "random", "input_tokens": 12},
            records=sample_records(),
            summary={"ok": 1, "output_tok_s": 5.0},
            **kw,
        )  # type: ignore[arg-type]


def profile_body(**over: Any) -> dict[str, Any]:
    """The smallest ``profile`` analysis its model takes (``store.models.ProfileBody``): no
    steps, no kernels; ``over`` replaces or adds keys (``capture``, ``mode``, ...)."""
    body: dict[str, Any] = {
        "trace": "t.json", "format": "torch", "segment": "decode", "step_source": "sim",
        "device": None, "sm_count": None, "steps": [], "span_us": 0.0, "busy_us": 0.0,
        "kernel_us": 0.0, "kernels": 0, "kernel_names": 0, "copy_us": 0.0, "copies": 0,
        "categories": [], "kernel_rows": [], "unknown": [], "occupancy": [],
        "occupancy_share": None, "graph_launches": 0, "graph_kernels": 0, "verdict": "",
    }  # fmt: skip
    return {**body, **over}
