"""A config's stage table (``campaign.stages.table``) walked one step at a time for ``run --ray``.

Each stage is entered in order and left in reverse, as on one host. A stage with a form on the
server's node (``on_node``: its enter and leave, each an actor call that resumes the walk with
:meth:`StageWalk.entered_on_node` or :meth:`StageWalk.leave`) runs there; every other stage is
entered here, in the driver, on the config's :class:`~inferlab.campaign.context.ConfigContext`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from inferlab.campaign.context import ConfigContext, Stage, StepFailed
from inferlab.errors import InferlabError

__all__ = ["StageWalk", "Step"]

Step = Callable[[], None]


@dataclass
class StageWalk:
    """Where one config is in the table. ``past_last``: every stage is in (measure);
    ``torn``: every stage is out (tear down); ``failed(status, message, remedy, tail)``: a stage
    here ended the config on its way in; ``failed_out(message)``: on its way out."""

    cx: ConfigContext
    stages: Sequence[Stage]
    on_node: Mapping[str, tuple[Step, Step]]
    past_last: Step
    torn: Step
    failed: Callable[[str, str, str | None, list[str]], None]
    failed_out: Callable[[str], None]
    stage: int = 0  # the next stage to enter
    #: the stages in, in order; None: held on the node, else the exit of one entered here
    entered: list[tuple[Stage, contextlib.ExitStack | None]] = field(default_factory=list)

    def has(self, name: str) -> bool:
        """Whether stage ``name`` is in."""
        return any(s.name == name for s, _ in self.entered)

    def enter_next(self) -> None:
        """The next stage entered (on the node, or here); past the last one, ``past_last``."""
        if self.stage == len(self.stages):
            self.past_last()
            return
        stage = self.stages[self.stage]
        self.stage += 1
        if stage.name in self.on_node:
            self.on_node[stage.name][0]()
            return
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(stage(self.cx))
        except StepFailed as f:
            self.failed(f.status, f.message, f.remedy, list(f.tail))
            self.leave()
            return
        except InferlabError as exc:
            self.failed("failed", str(exc), None, [])
            self.leave()
            return
        self.entered.append((stage, stack))
        self.enter_next()

    def entered_on_node(self) -> None:
        """The stage on the node is in: on to the next."""
        self.entered.append((self.stages[self.stage - 1], None))
        self.enter_next()

    def leave(self) -> None:
        """The last stage in left (on the node, or here); once none is in, ``torn``."""
        if not self.entered:
            self.torn()
            return
        stage, stack = self.entered.pop()
        if stack is None:
            self.on_node[stage.name][1]()
            return
        try:
            stack.close()
        except InferlabError as exc:  # as on one host: a stage that fails on its way out
            self.failed_out(str(exc))
        self.leave()

    def drop_node(self) -> None:
        """Forget the stages held on the node (it is gone); those held here are still left."""
        self.entered = [(s, st) for s, st in self.entered if st is not None]
