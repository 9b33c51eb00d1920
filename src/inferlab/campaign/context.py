"""What one campaign run and one config of it carry through the pipeline (``campaign.pipeline``).

A :class:`RunContext` is made once per ``run``/``up``: the campaign, its baseline and
reference, the CPU split, the store, where lines go, and the seams (launcher, model clock).
A :class:`ConfigContext` is made per config and filled in by the stages as they run (its
tuned config, installed files, URL, model, launch log, verification, lever evidence). Both
``say`` (a line told), ``record`` (a verification row stored with the config) and build an
``outcome``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferlab.campaign import files as lever_files
from inferlab.campaign.applied import LeverItem
from inferlab.campaign.cpus import CpuSplit
from inferlab.campaign.launch import output_dir
from inferlab.campaign.steps import Held
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.load.bench import BenchEvents
from inferlab.server import ServerProcess
from inferlab.store import Store
from inferlab.verify import VerifyReport

__all__ = ["CampaignEvents", "ConfigContext", "ConfigOutcome", "RunContext", "Say"]

Say = Callable[[str], None]


@dataclass
class ConfigOutcome:
    config: str
    status: str  # measured | skipped | launch-failed | verify-failed | interrupted | failed
    message: str = ""
    run_ids: list[int] = field(default_factory=list)
    remedy: str | None = None
    log_tail: list[str] = field(default_factory=list)

    def failed_by(self, message: str, remedy: str | None, tail: list[str]) -> None:
        """Its server came up, then died of something known: that first (then what was said
        before, cut), its remedy and log tail; a measured config becomes failed."""
        seen = self.message[:300] + ("…" if len(self.message) > 300 else "")
        self.message = message + (f" — {seen}" if seen else "")
        self.remedy, self.log_tail = remedy, tail
        if self.status == "measured":
            self.status = "failed"


class CampaignEvents(BenchEvents):
    """Progress of a campaign (on top of each sweep's own events)."""

    def config_started(self, cfg: ResolvedConfig, index: int, total: int) -> None:
        """A config is about to be launched."""

    def config_done(self, outcome: ConfigOutcome) -> None:
        """A config ended (measured, skipped or failed)."""


def _drop(line: str) -> None:
    """A line nobody reads (``up`` tells no progress)."""


@dataclass
class RunContext:
    """One ``run`` or ``up``: what every config of it shares.

    ``say`` takes what is told (notes, lever lines, files installed); ``progress`` the running
    commentary (``verifying ...``), which ``up`` drops. ``keep``: ``up``'s servers and files are
    left in place and its failures are the command's errors, not outcomes."""

    campaign: CampaignFile
    path: Path
    baseline: ResolvedConfig  # every config's diff and lever evidence are against it
    reference: str  # the config greedy equivalence and the sequential A/B are against
    cpus: CpuSplit
    store: Store | None
    say: Say
    progress: Say = _drop
    events: CampaignEvents = field(default_factory=CampaignEvents)
    no_verify: bool = False
    keep: bool = False
    held: Callable[[], Held] = Held  # a fresh Held per config: the launcher and model clock

    @property
    def name(self) -> str:
        """The campaign's name (its runs, analyses and lock are under it)."""
        return self.campaign.campaign.name

    @property
    def output_dir(self) -> Path:
        return output_dir(self.campaign)

    def record(
        self, config_id: int | None, kind: str, passed: bool, detail: dict[str, Any]
    ) -> None:
        """A verification row of config ``config_id`` (nothing without a store)."""
        if self.store is not None and config_id is not None:
            with self.store.transaction():
                self.store.add_verification(config_id, kind, passed, detail)

    def outcome(self, config: str, status: str, message: str = "", **kw: Any) -> ConfigOutcome:
        return ConfigOutcome(config, status, message, **kw)


@dataclass
class ConfigContext:
    """One config on its way through the stages; each stage fills in what it made."""

    run: RunContext
    cfg: ResolvedConfig  # as launched: with its tuned files (``stages.files``)
    config_id: int | None  # its store row (None: ``up`` without a store)
    held: Held = field(default_factory=Held)
    installed: lever_files.Installed | None = None
    server: ServerProcess | None = None  # the server this run launched (None: kind openai)
    url: str = ""
    model: str = ""
    log_path: Path | None = None
    verify: VerifyReport | None = None
    levers: list[LeverItem] = field(default_factory=list)
    launch: int = 1  # which launch of the config this is (``[load] launches``; campaign.rounds)

    @property
    def name(self) -> str:
        return self.cfg.name

    def say(self, line: str) -> None:
        self.run.say(line)

    def record(self, kind: str, passed: bool, detail: dict[str, Any]) -> None:
        self.run.record(self.config_id, kind, passed, detail)

    def outcome(self, status: str, message: str = "", **kw: Any) -> ConfigOutcome:
        """This config's outcome (named as the campaign file names it)."""
        return self.run.outcome(self.name, status, message, **kw)
