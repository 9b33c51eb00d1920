"""A resolved config: one ``[[config]]`` with everything it inherits applied, what will be
launched (``inferlab.campaign.parts.resolve`` builds it with the engine's flag knowledge)."""

from __future__ import annotations

from dataclasses import dataclass, field

from inferlab.config.hosts import is_local_host
from inferlab.config.lossy import LossyGate

__all__ = ["ResolvedConfig"]


@dataclass(frozen=True)
class ResolvedConfig:
    """One config with everything inherited applied: what will be launched."""

    name: str
    engine: str
    model: str | None
    args: list[str]  # the engine args after every set/unset (the launcher adds model/host/port)
    env: dict[str, str]
    chain: list[str]  # root ancestor first, this config last
    host: str = "local"
    port: int | None = None
    url: str | None = None
    python: str | None = None
    launcher: str | None = None
    ready_timeout_s: float = 900.0
    stop_grace_s: float = 20.0
    description: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    #: kernel-config kind → absolute directory of files installed for this config only
    files: dict[str, str] = field(default_factory=dict)
    #: kernel-config kind → "from-log" or the absolute path of a saved tune run
    tune: dict[str, str] = field(default_factory=dict)
    #: kernel-config kind → the config of the chain that asked for the tuning (its output
    #: is shared by the configs that extend it)
    tune_owner: dict[str, str] = field(default_factory=dict)
    #: kind ``command``: ``[engine] argv`` with its placeholders
    command: list[str] = field(default_factory=list)
    health_path: str | None = None  # None: the engine's
    metrics_path: str | None = None  # None: the engine's
    api: str | None = None  # the engine kind whose request fields the server accepts
    #: greedy equivalence gates verification (the last ``lossless`` set along ``extends``)
    lossless: bool = True
    gpus: int | None = None  # [engine] gpus; None: from the engine's parallel flags
    #: the config's own agreement gate (the last ``lossy`` set along ``extends``)
    lossy: LossyGate | None = None

    @property
    def is_local(self) -> bool:
        """Whether the server runs on this machine (``host`` local), not over ssh."""
        return is_local_host(self.host)
