"""A config's ``files`` step on the node Ray placed its server on, as ``inferlab run`` takes it.

The server's actor enters the campaign's own step (``campaign.stages.files.config_files``:
tuned files made on that node's GPUs or from a saved run, every ``files`` kind installed into
the engine's package there) before its launch and leaves it after its stop (every file
restored, the directory compared).
What the step stores is recorded on the node (:class:`Recorder`) and what it tells is kept;
both come back in a :class:`FilesDone` that the driver stores and tells (:func:`take`), so only
the driver writes the store. The driver sends what the step reads on one host (:func:`sent`):
the files as read beside the campaign file and the baseline's launch log for ``from-log``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from inferlab.campaign.context import Installed
from inferlab.campaign.parts.files import FileSet, check_files
from inferlab.campaign.parts.tunestep import baseline_log
from inferlab.campaign.stages.files import config_files
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.errors import InferlabError
from inferlab.store import Store

__all__ = ["FilesDone", "NodeFiles", "Recorder", "Row", "sent", "take"]


@dataclass(frozen=True)
class Row:
    """One ``add_analysis`` call as the step made it on the node."""

    kind: str
    name: str
    data: dict[str, Any]
    campaign: str | None
    config_id: int | None


@dataclass
class Recorder:
    """Stands in for the store on a node (``campaign.parts.files.Rows``): keeps every row."""

    rows: list[Row] = field(default_factory=list)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        yield

    def add_analysis(
        self,
        kind: str,
        name: str,
        data: Mapping[str, Any],
        *,
        campaign: str | None = None,
        config_id: int | None = None,
    ) -> int:
        self.rows.append(Row(kind, name, dict(data), campaign, config_id))
        return len(self.rows)


@dataclass
class FilesDone:
    """What one call of the step did on the node: the config as launched (with its tuned
    files), what was installed (None once restored), the rows to store and the lines to tell,
    and the error that ended it (what was written is restored by then)."""

    cfg: ResolvedConfig
    installed: Installed | None
    rows: list[Row]
    lines: list[str]
    error: str | None = None


class NodeFiles:
    """The ``files`` step of one config held open on its node between install and restore."""

    def __init__(self, camp: CampaignFile, cfg: ResolvedConfig) -> None:
        self.camp, self.cfg = camp, cfg
        self.rec = Recorder()
        self.lines: list[str] = []
        self.stack: contextlib.ExitStack | None = None

    def _say(self, line: str) -> None:
        self.lines.append(line)

    def _done(self, installed: Installed | None, error: str | None = None) -> FilesDone:
        rows, lines = self.rec.rows, self.lines
        self.rec.rows, self.lines = [], []
        return FilesDone(self.cfg, installed, rows, lines, error)

    def install(
        self, base: ResolvedConfig, config_id: int, sets: list[FileSet] | None, log: str | None
    ) -> FilesDone:
        """The step entered: ``cfg``'s files made and installed (``sets``, ``log``: what the
        driver sent, :func:`sent`; the log is written beside the tuned files first)."""
        stack = contextlib.ExitStack()
        try:
            path = None
            if log is not None:
                path = self.camp.output_dir / "tuned" / f"{self.cfg.name}-baseline.log"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(log, encoding="utf-8")
            self.cfg, inst = stack.enter_context(
                config_files(
                    self.camp,
                    base,
                    self.cfg,
                    store=self.rec,
                    config_id=config_id,
                    say=self._say,
                    file_sets=sets,
                    log=path,
                )
            )
        except InferlabError as exc:
            return self._done(None, str(exc))
        self.stack = stack
        return self._done(inst)

    def restore(self) -> FilesDone:
        """The step left: every file put back as it was (nothing when none was installed)."""
        stack, self.stack = self.stack, None
        try:
            if stack is not None:
                stack.close()
        except InferlabError as exc:
            return self._done(None, str(exc))
        return self._done(None)


def sent(
    store: Store, camp: CampaignFile, base: ResolvedConfig, cfg: ResolvedConfig
) -> tuple[list[FileSet] | None, str | None]:
    """What the driver sends for ``cfg``'s step: its files as read here (None when it tunes:
    the tuned ones are made on the node) and the baseline's launch log when it tunes from it
    (None when the store names none this host can read: the step then says so)."""
    sets = None if cfg.tune else check_files(cfg, cfg.name)
    log = None
    if "from-log" in cfg.tune.values():
        path = baseline_log(store, camp.campaign.name, base.name)
        log = path.read_text(encoding="utf-8", errors="replace") if path else None
    return sets, log


def take(store: Store, got: FilesDone, say: Callable[[str], None]) -> None:
    """What the step did on the node, stored by the driver (one transaction) and told."""
    if got.rows:
        with store.transaction():
            for r in got.rows:
                store.add_analysis(
                    r.kind, r.name, r.data, campaign=r.campaign, config_id=r.config_id
                )
    for line in got.lines:
        say(line)
