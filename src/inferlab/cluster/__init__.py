"""inferlab on a Ray cluster: campaigns side by side, load from several hosts, tuning on many GPUs.

The optional extra ``inferlab[ray]``. Ray places actors and collects their results; the
existing lifecycle, load generator and tuner do the work on the nodes, and only the driver
writes the store. Nothing here imports ``ray`` until a cluster is asked for
(:func:`inferlab.cluster.connect.connect`). See docs/cluster.md.
"""

from __future__ import annotations
