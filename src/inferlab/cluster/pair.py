"""A config's placement group and its two actors on one node, for ``run --ray``.

The group is ``STRICT_PACK`` (``cluster.placement.Need.bundles``): bundle 0 holds the server's
actor (its GPUs and CPUs), bundle 1 the client's; both start as soon as the group is ready, so
the client's process starts while the engine loads. Released together once the config is done.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inferlab.cluster.actors import ClientActor, ServerActor
from inferlab.cluster.placement import Need
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig

__all__ = ["ask_group", "release", "start_actors"]


def ask_group(need: Need, name: str) -> Any:
    """The config's placement group, asked for (its ``ready()`` resolves once a node holds it)."""
    from ray.util.placement_group import placement_group

    return placement_group(need.bundles(), strategy="STRICT_PACK", name=name)


def _bundle(pg: Any, i: int) -> Any:
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    return PlacementGroupSchedulingStrategy(placement_group=pg, placement_group_bundle_index=i)


def start_actors(
    ray: Any, pg: Any, need: Need, camp: CampaignFile, cfg: ResolvedConfig
) -> tuple[Any, Any, Any]:
    """The server's actor and the client's, started in ``pg``; and the node they are on."""
    server = (
        ray.remote(ServerActor)
        .options(num_cpus=need.server_cpus, num_gpus=need.gpus, scheduling_strategy=_bundle(pg, 0))
        .remote(camp, cfg)
    )
    client = (
        ray.remote(ClientActor)
        .options(num_cpus=need.client_cpus, scheduling_strategy=_bundle(pg, 1))
        .remote()
    )
    node = ray.util.placement_group_table(pg)["bundles_to_node_id"].get(0)
    return server, client, node


def release(ray: Any, pg: Any, actors: Iterable[Any]) -> None:
    """The actors killed (their servers die with them) and the group removed."""
    from ray.util.placement_group import remove_placement_group

    for actor in actors:
        if actor is not None:
            ray.kill(actor)
    if pg is not None:
        remove_placement_group(pg)
