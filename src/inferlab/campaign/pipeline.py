"""One config through its stages and one pass: what ``run`` and ``up`` do with each config.

``run_config(cx, pass_)`` enters every stage of the table in order (``campaign.stages.table``),
runs the pass on the live server (``campaign.passes``), and undoes them in reverse on the way out
(``contextlib.ExitStack``), also after a failure or Ctrl-C. For ``run`` a stage's failure
(``StepFailed``), Ctrl-C or an inferlab error becomes the config's outcome and the campaign
goes on; a known death of its server (``campaign.parts.aftermath``) is told in it. For ``up``
(``RunContext.keep``) they are the command's errors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from inferlab.campaign.context import ConfigContext, ConfigOutcome, Pass, Stage, StepFailed
from inferlab.campaign.stages import table
from inferlab.errors import InferlabError

__all__ = ["run_config", "staged"]


@contextlib.contextmanager
def staged(cx: ConfigContext, stages: Sequence[Stage] | None = None) -> Iterator[None]:
    """Every stage (of the table, by default) entered in order, undone in reverse on exit."""
    with contextlib.ExitStack() as stack:
        for stage in table.STAGES if stages is None else stages:
            stack.enter_context(stage(cx))
        yield


def run_config(cx: ConfigContext, pass_: Pass) -> ConfigOutcome:
    """The config through the stage table and ``pass_`` (see the module docstring)."""
    if cx.run.keep:
        with staged(cx):
            return pass_(cx)
    try:
        with staged(cx):
            out = pass_(cx)
    except StepFailed as f:
        out = cx.outcome(f.status, f.message, remedy=f.remedy, log_tail=list(f.tail))
    except KeyboardInterrupt:
        out = cx.outcome(
            "interrupted", "Ctrl-C: the server was stopped; inferlab run --resume continues"
        )
    except InferlabError as exc:
        out = cx.outcome("failed", str(exc))
    failure = cx.held.failure
    if failure is not None:  # the server came up, then died of something known
        out.failed_by(failure.message, failure.remedy, failure.tail)
    return out
