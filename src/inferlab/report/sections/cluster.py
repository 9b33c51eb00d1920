"""The report section "cluster": where each config ran (``run --ray``) and, for load from
several hosts (``bench --ray --clients``), latency split by client host with each host's clock
offset and bound. Reads the store only (no Ray)."""

from __future__ import annotations

from html import escape
from typing import Any

from inferlab.records import RequestRecord
from inferlab.report.sections.base import Section, table
from inferlab.stats.metrics import tpot_ms
from inferlab.stats.summary import percentile
from inferlab.store import Store

__all__ = ["client_rows", "cluster_section", "placement_rows"]

PLACEMENT = ("config", "node", "host", "CUDA_VISIBLE_DEVICES", "server's", "ready s")
CLIENTS = (
    "config",
    "point",
    "trial",
    "client host",
    "requests",
    "TTFT p50 ms",
    "TTFT p99 ms",
    "TPOT p50 ms",
    "offset ms ± bound",
    "late start ms",
)


def placement_rows(store: Store, campaign: str) -> list[tuple[str, ...]]:
    """One row per launch that a Ray actor made: config, node, host, GPUs, ready time."""
    out: list[tuple[str, ...]] = []
    for launch in store.verifications.launches(campaign):
        d = launch.detail
        if d.node_id is None:
            continue
        server_cvd = "server_cuda_visible_devices" in d.model_fields_set  # a failure has none
        out.append(
            (
                launch.config,
                d.node_id[:8],
                d.hostname or "",
                str(d.cuda_visible_devices),
                str(d.server_cuda_visible_devices) if server_cvd else "—",
                f"{d.ready_s:.1f}" if d.ready_s is not None else "failed",
            )
        )
    return out


def _quant(values: list[float], q: float) -> str:
    return f"{percentile(values, q):.1f}" if values else "—"


def _split(records: list[RequestRecord], host: str) -> tuple[str, ...]:
    good = [r for r in records if r.client == host and not r.warmup and r.ok and r.event_ns]
    ttft = [r.ttft_ns / 1e6 for r in good if r.ttft_ns is not None]
    tpot = [t for t in (tpot_ms(r) for r in good) if t is not None]
    return (str(len(good)), _quant(ttft, 50), _quant(ttft, 99), _quant(tpot, 50))


def client_rows(store: Store, campaign: str) -> list[tuple[str, ...]]:
    """Per run measured from several hosts, one row per host: its requests' latencies (from
    the raw records), its clock offset with the RTT/2 bound, and how late it started."""
    out: list[tuple[str, ...]] = []
    for run in store.runs(campaign=campaign):
        clients: dict[str, Any] | None = run.summary.get("clients")
        if not clients:
            continue
        records = store.requests(run.id)
        for h in clients.get("hosts", []):
            host = str(h["client"])
            off = f"{h['offset_ns'] / 1e6:.3f} ± {h['bound_ns'] / 1e6:.3f}"
            late = h.get("late_start_ms")
            late_s = f"{late:.1f}" if isinstance(late, (int, float)) else "—"
            split = _split(records, host)
            out.append((run.config, run.label, str(run.trial), host, *split, off, late_s))
    return out


def cluster_section(store: Store, campaign: str) -> Section | None:
    """Placement and per-client-host latency of ``campaign``; None when it used no cluster."""
    placed, clients = placement_rows(store, campaign), client_rows(store, campaign)
    if not placed and not clients:
        return None
    md: list[str] = []
    html: list[str] = []
    if placed:
        intro = (
            "Where each config ran (`inferlab run --ray`): the Ray node, and the GPUs Ray gave "
            "the server's actor, beside the server process's own `CUDA_VISIBLE_DEVICES`."
        )
        t_md, t_html = table(PLACEMENT, placed)
        md += [intro, "", *t_md, ""]
        html += [f'<p class="muted">{escape(intro)}</p>', t_html]
    if clients:
        intro = (
            "Load from several hosts (`inferlab bench --ray --clients N`): latency per client "
            "host from its raw records (one slow client shows here), its clock offset from the "
            "driver (Cristian, minimum-RTT exchange; the true offset is within ± RTT/2) and how "
            "long after the common start its first request left."
        )
        t_md, t_html = table(CLIENTS, clients)
        md += [intro, "", *t_md, ""]
        html += [f'<p class="muted">{escape(intro)}</p>', t_html]
    return Section("cluster", "Cluster", "\n".join(md), "\n".join(html))
