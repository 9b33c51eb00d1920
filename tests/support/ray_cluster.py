"""A local Ray cluster for the ``ray`` tests: a 1-CPU head, two "GPU nodes" (2 CPUs, 2 logical
GPUs each) and a client node, the head's GCS on a port of its own (Ray's ``Cluster`` asks for a
free one), so each module of ``ray`` tests starts its own cluster in its own xdist worker."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from inferlab.store import Store

OBJ = 80 * 2**20  # the smallest object store Ray accepts is 75 MiB
#: bring-ups tried: Ray gives a raylet a fixed 30 s to register with the GCS (ray/_private/
#: node.py), which a saturated 2-CPU machine missed for both clusters at once (2026-12-07)
STARTS = 3


@contextlib.contextmanager
def local_cluster() -> Iterator[Any]:
    """The cluster, this process connected to it as inferlab connects (it keeps its
    children's exit codes); shut down on exit."""
    import ray
    from ray.cluster_utils import Cluster

    from inferlab.cluster.connect import CLIENT_RESOURCE, REAPER_CONFIG, connect
    from support import ray_fakes

    ray.cloudpickle.register_pickle_by_value(ray_fakes)
    head = {"num_cpus": 1, "include_dashboard": False, "object_store_memory": OBJ}
    for attempt in range(1, STARTS + 1):
        c = Cluster(initialize_head=True, head_node_args={**head, "_system_config": REAPER_CONFIG})
        try:
            for _ in range(2):
                c.add_node(num_cpus=2, num_gpus=2, object_store_memory=OBJ)
            c.add_node(num_cpus=1, resources={CLIENT_RESOURCE: 1}, object_store_memory=OBJ)
            c.wait_for_nodes()
            break
        except Exception as exc:  # Ray's own: "The current node timed out during startup"
            c.shutdown()
            if attempt == STARTS or "timed out during startup" not in str(exc):
                raise
    connect(c.address)
    try:
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


def launch_records(store: Store) -> dict[str, dict[str, Any]]:
    """Each config's passed launch record (node, GPUs, server pid), by config name."""
    rows = store.db.execute(
        "SELECT g.name, v.detail_json FROM verifications v JOIN configs g ON g.id = v.config_id "
        "WHERE v.kind = 'launch' AND v.passed = 1"
    ).fetchall()
    return {name: json.loads(d) for name, d in rows}


def measured_windows(store: Store, name: str) -> dict[str, tuple[int, int]]:
    """Each config's measured window in campaign ``name``: (first start, last end), ns."""
    rows = store.db.execute(
        "SELECT g.name, min(r.start_ns), max(r.end_ns) FROM runs r JOIN configs g "
        "ON g.id = r.config_id JOIN campaigns c ON c.id = r.campaign_id WHERE c.name = ? "
        "GROUP BY g.name",
        (name,),
    ).fetchall()
    return {n: (int(a), int(b)) for n, a, b in rows}
