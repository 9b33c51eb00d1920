"""inferlab on a Ray cluster: campaigns side by side, load from several hosts, tuning on many GPUs.

The optional extra ``inferlab[ray]``. Ray places actors and collects their results; the
existing lifecycle, load generator and tuner do the work on the nodes, and only the driver
writes the store. Nothing here imports ``ray`` until a cluster is asked for
(:func:`inferlab.cluster.connect.connect`). See docs/cluster.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.cluster.bench import bench_ray
    from inferlab.cluster.campaign import check_cluster_plan, placement_lines, run_campaign_ray
    from inferlab.cluster.tune import tune_shapes_ray

__all__ = [
    "bench_ray",
    "check_cluster_plan",
    "placement_lines",
    "run_campaign_ray",
    "tune_shapes_ray",
]

__getattr__ = lazy_face(
    __name__,
    {
        "inferlab.cluster.bench": ("bench_ray",),
        "inferlab.cluster.campaign": ("check_cluster_plan", "placement_lines", "run_campaign_ray"),
        "inferlab.cluster.tune": ("tune_shapes_ray",),
    },
)
