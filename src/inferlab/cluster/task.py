"""One config of a campaign on a Ray cluster: the campaign's stage table, stepped by results.

placed (``cluster.pair``) → every stage of ``campaign.stages.table`` entered in order → every
cell measured (with ``sequential = true``, a candidate first waits for the reference's cells
when that one runs too, then each cell is a sequential A/B against them) → the stages left in
reverse (``cluster.walk``) → torn down. A stage in :data:`ON_NODE` is one actor call each way
on the server's node: ``files`` installs there (``cluster.nodefiles``), ``server`` launches and
stops there, ``verified`` checks there (after the config it must match, when that one runs
too). Every other stage (``levers``, and any new one) is entered in the driver, on the same
:class:`~inferlab.campaign.context.ConfigContext` as on one host. The driver
(:mod:`inferlab.cluster.campaign`) waits on every config's pending call at once and hands each
result here, in its one thread, so every store write happens in the driver, one transaction
per finished point. A lost actor (its node died) fails this config's unfinished cells with the
cause; the other configs go on.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferlab.campaign.context import (
    ConfigContext,
    ConfigOutcome,
    CpuSplit,
    RunContext,
    RuntimeFailure,
)
from inferlab.campaign.stages import table
from inferlab.campaign.stages.verified import (
    REMEDY,
    reference_outputs,
    store_verification,
    wants_verify,
)
from inferlab.cluster.actors import Launched, Measured, Stopped
from inferlab.cluster.cells import Cell, Cells
from inferlab.cluster.nodefiles import FilesDone, sent, take
from inferlab.cluster.pair import ask_group, release, start_actors
from inferlab.cluster.placement import Need, node_lost
from inferlab.cluster.records import store_launch, store_stop
from inferlab.cluster.shared import Shared
from inferlab.cluster.walk import StageWalk
from inferlab.config.resolve import ResolvedConfig
from inferlab.errors import InferlabError
from inferlab.verify import VerifyReport

__all__ = ["ON_NODE", "ConfigRun", "State"]

#: where a config's stages run under Ray: Ray pins nothing on the driver's host
_PLACED = CpuSplit(None, None, "remote", "Ray places the server and its client")


class State(enum.Enum):
    """Where one config is (``ConfigRun.state``)."""

    NEW = "new"  # not placed yet
    PLACING = "placing"  # its placement group asked for
    ENTERING = "entering"  # a stage's way in (``ConfigRun.stage``)
    WAITING = "waiting"  # a stage waits for another config (verify after its reference)
    MEASURING = "measuring"
    AB_WAIT = "ab-wait"  # its cells wait for the sequential A/B's reference
    LEAVING = "leaving"  # the stages left in reverse
    DONE = "done"


class ConfigRun:
    """The way of one config (see the module docstring): config ``index`` of the ``total``
    this driver runs. ``pending`` is the actor call waited on and what to do with its result;
    ``reference`` is the run whose greedy outputs this one must match, ``ab_reference`` the
    one whose cells its sequential A/B is against (both set by the driver, when they run)."""

    def __init__(
        self,
        sh: Shared,
        cfg: ResolvedConfig,
        gid: int,
        todo: list[Cell],
        need: Need,
        index: int,
        total: int,
    ) -> None:
        self.sh, self.cfg, self.gid, self.need, self.index = sh, cfg, gid, need, index
        self.total = total
        self.reference: ConfigRun | None = None
        self.ab_reference: ConfigRun | None = None
        self.cells = Cells(list(todo))
        self.state = State.NEW
        self.pending: tuple[Any, Callable[[Any], None]] | None = None
        self.outcome: ConfigOutcome | None = None
        self.pg: Any = None
        self.server: Any = None
        self.client: Any = None
        self.recon = False
        self.launched: Launched | None = None
        say, base = sh.events.message, sh.baseline or cfg
        run = RunContext(
            sh.camp,
            sh.path,
            base,
            sh.reference,
            _PLACED,
            sh.store,
            say,
            say,
            sh.events,
            sh.no_verify,
        )
        self.cx = ConfigContext(run, cfg, gid)
        on_node = {
            "files": (self._enter_files, self._leave_files),
            "server": (self._enter_server, self._leave_server),
            "verified": (self._enter_verified, self._leave),
        }
        self.walk = StageWalk(
            self.cx,
            table.STAGES,
            on_node,
            self._next_cell,
            self._teardown,
            self._failed,
            self._failed_out,
        )
        self.since = time.monotonic()
        self.warned_wait = False

    # -- helpers -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def done(self) -> bool:
        return self.state is State.DONE

    def _wait(self, ref: Any, then: Callable[[Any], None], state: State) -> None:
        self.state = state
        self.pending = (ref, then)

    def _end(self, status: str, message: str = "", **kw: Any) -> None:
        if self.outcome is None:
            self.outcome = ConfigOutcome(self.name, status, message, self.cells.run_ids, **kw)

    # -- placement -----------------------------------------------------------------------
    def place(self) -> None:
        """Ask Ray for this config's placement group (it waits until a node is free)."""
        self.pg = ask_group(self.need, f"inferlab:{self.sh.camp.campaign.name}:{self.name}")
        self.since = time.monotonic()
        self._wait(self.pg.ready(), self._placed, State.PLACING)

    def _placed(self, _: Any) -> None:
        """Both actors start now (``cluster.pair``); then the stages."""
        sh = self.sh
        self.server, self.client, node = start_actors(sh.ray, self.pg, self.need, sh.camp, self.cfg)
        self.recon = sh.take_recon and node not in sh.recon_nodes
        sh.recon_nodes.add(node)  # one recon per node, by the first config placed there
        sh.events.config_started(self.cfg, self.index, self.total)
        self._enter_next()

    # -- the stages ---------------------------------------------------------------------
    def _enter_next(self) -> None:
        self.state = State.ENTERING
        self.walk.enter_next()

    def _entered(self) -> None:
        self.walk.entered_on_node()

    def _leave(self) -> None:
        self.state = State.LEAVING
        self.walk.leave()

    def _failed(self, status: str, message: str, remedy: str | None, tail: list[str]) -> None:
        self._end(status, message, remedy=remedy, log_tail=tail)

    def _failed_out(self, message: str) -> None:
        self.outcome = None
        self._end("failed", message)

    def _enter_files(self) -> None:
        """The ``files`` stage on the server's node, before the launch (``cluster.nodefiles``)."""
        if not (self.cfg.files or self.cfg.tune):
            self._entered()
            return
        base = self.sh.baseline or self.cfg
        sets, log = sent(self.sh.store, self.sh.camp, base, self.cfg)
        call = self.server.install_files.remote(base, self.gid, sets, log)
        self._wait(call, self._installed, State.ENTERING)

    def _installed(self, got: FilesDone) -> None:
        take(self.sh.store, got, self.sh.events.message)
        self.cfg, self.cx.cfg, self.cx.installed = got.cfg, got.cfg, got.installed
        if got.error is not None:
            self._end("failed", got.error)
            self._leave()
            return
        self._entered()

    def _leave_files(self) -> None:
        if not (self.cfg.files or self.cfg.tune) or self.server is None:
            self._leave()
            return
        self._wait(self.server.restore_files.remote(), self._restored, State.LEAVING)

    def _restored(self, got: FilesDone) -> None:
        take(self.sh.store, got, self.sh.events.message)
        if got.error is not None:  # as on one host: a restore that failed fails the config
            self.outcome = None
            self._end("failed", got.error)
        self._leave()

    def _enter_server(self) -> None:
        self._wait(self.server.launch.remote(self.recon), self._launched, State.ENTERING)

    def _launched(self, got: Launched) -> None:
        self.launched = got
        store_launch(self.sh, self.gid, got)
        if got.error is not None:
            tail = list(got.error.get("tail", []))[-12:]
            remedy = got.error.get("remedy")
            self._end("launch-failed", got.error["message"], remedy=remedy, log_tail=tail)
            self._leave()
            return
        self.sh.events.message(
            f"{self.name}: ready in {got.ready_s or 0:.1f} s on {got.placed.hostname} "
            f"(node {got.placed.node_id[:8]}, "
            f"CUDA_VISIBLE_DEVICES={got.placed.cuda_visible_devices})"
        )
        self.cx.url, self.cx.model = got.url or "", got.model
        log = Path(got.log_path) if got.log_path else None
        self.cx.log_path = log if log is not None and log.is_file() else None  # read here?
        self.cells.aim(self.sh, self.client, self.cfg, self.gid, got)
        self._entered()

    def _leave_server(self) -> None:
        self.sh.events.message(f"{self.name}: stopping ...")
        self._wait(self.server.stop.remote(), self._stopped, State.LEAVING)

    def _enter_verified(self) -> None:
        """Verified on the node once the config it must match has verified (``tick``)."""
        if wants_verify(self.cx):
            self.state = State.WAITING
        else:
            self._entered()

    def past_verify(self) -> bool:
        """Whether a config that must match this one's greedy outputs may verify now."""
        return self.walk.has("verified") or self.state in (State.LEAVING, State.DONE)

    def past_measure(self) -> bool:
        """Whether every cell of this config is measured (or will never be)."""
        return self.state in (State.LEAVING, State.DONE)

    def tick(self, may_place: bool = True) -> None:
        """Ask for a placement (when the driver lets it) once the references hold one (so it
        never waits for a node its dependents hold); verify once the reference has verified;
        measure once the A/B's reference has measured."""
        refs = [r for r in (self.reference, self.ab_reference) if r is not None]
        placed = all(r.state not in (State.NEW, State.PLACING) for r in refs)
        if self.state is State.NEW and may_place and placed:
            self.place()
        if self.state is State.AB_WAIT and self.ab_reference is not None:
            if self.ab_reference.past_measure():
                self._next_cell()
            return
        ref = self.reference
        if self.state is not State.WAITING or self.launched is None:
            return
        if ref is not None and not ref.past_verify():
            return
        reference = reference_outputs(self.sh.camp, self.cfg, self.sh.store)
        call = self.server.verify.remote(self.launched.url, self.launched.model, reference)
        self._wait(call, self._verified, State.ENTERING)

    def _verified(self, rep: VerifyReport) -> None:
        store_verification(self.sh.store, self.sh.camp, self.cfg, rep)
        self.cx.verify = rep
        if not rep.passed:
            self._end("verify-failed", rep.summary(), remedy=REMEDY)
            self._leave()
            return
        self._entered()

    # -- the cells -----------------------------------------------------------------------
    def _next_cell(self) -> None:
        cells = self.cells
        if not cells.todo:
            self._end("measured")
            self._leave()
            return
        if cells.baselines is None:
            if self.ab_reference is not None and not self.ab_reference.past_measure():
                self.state = State.AB_WAIT  # ``tick`` goes on once the reference has measured
                return
            cells.baselines = self.sh.baselines(self.name)
        label, trial = cells.todo[0]
        call = self.client.measure.remote(label, trial, baselines=cells.baselines)
        self._wait(call, self._measured, State.MEASURING)

    def _measured(self, got: Measured) -> None:
        """Ask the server's actor whether its server exited during the point, then commit."""
        call = self.server.exited.remote(*self.cells.watch_call(got))
        self._wait(call, lambda exited: self._commit(got, exited), State.MEASURING)

    def _commit(self, got: Measured, exited: str | None) -> None:
        status, message = self.cells.commit(self.sh, got, exited, self.sh.resume_hint)
        if status:
            self._end(status, message)
            self._leave()
        else:
            self._next_cell()

    def _stopped(self, got: Stopped | None) -> None:
        """Stored as ``inferlab run`` stores a stop (``cluster.records.store_stop``); a runtime
        failure turns a measured config into a failed one (what was measured is kept)."""
        failure = store_stop(self.sh, self.gid, self.name, got) if got is not None else None
        if failure is not None:
            self._with_failure(failure)
        self._leave()

    def _with_failure(self, failure: RuntimeFailure) -> None:
        if self.outcome is None:
            self._end("failed", failure.message, remedy=failure.remedy, log_tail=failure.tail)
        else:
            self.outcome.failed_by(failure.message, failure.remedy, failure.tail)

    def _teardown(self) -> None:
        self.pending = None
        release(self.sh.ray, self.pg, (self.client, self.server))
        self.client = self.server = self.pg = None
        self.state = State.DONE
        self._end("measured")
        assert self.outcome is not None
        self.sh.events.config_done(self.outcome)

    # -- failures ------------------------------------------------------------------------
    def resolve(self, value: Any = None, error: BaseException | None = None) -> None:
        """Hand the pending call's result (or the error its ``ray.get`` raised) on."""
        assert self.pending is not None
        _, then = self.pending
        self.pending = None
        if error is None:
            then(value)
            return
        from ray.exceptions import RayActorError, RayTaskError

        if isinstance(error, RayActorError):
            self.lost(error)
            return
        cause = error.cause if isinstance(error, RayTaskError) else error
        if isinstance(cause, InferlabError):
            self._end("failed", str(cause))
        else:
            self._end("failed", f"an inferlab bug on the node: {type(cause).__name__}: {cause}")
        self._leave()

    def lost(self, error: BaseException) -> None:
        """An actor of this config died (its node was lost): its unfinished cells fail."""
        cause = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        node = self.launched.placed if self.launched is not None else None
        where = (node.node_id, node.hostname) if node else None
        finding, message = node_lost(self.name, where, self.cells.todo, cause, self.sh.resume_hint)
        self.sh.findings(self.gid, [finding], source="ray")
        self._end("failed", message)
        self.launched = None  # nothing left to stop or restore on the node
        self.walk.drop_node()
        self._leave()

    def fail_placement(self, why: str) -> None:
        """No alive node can hold this config any more."""
        self._end("failed", f"{why}; {self.sh.resume_hint} reruns it on a larger cluster")
        self._teardown()

    def interrupt(self, timeout_s: float = 60.0) -> None:
        """Ctrl-C on the driver: stop the server now (best effort), record it, restore its
        files, tear down (each call waited for here, ``timeout_s`` at most)."""
        self._end("interrupted", f"Ctrl-C: the server was stopped; {self.sh.resume_hint} continues")
        self.pending = None
        self._leave()
        while self.pending is not None:  # the stop, then the restore
            ref, then = self.pending
            try:
                value = self.sh.ray.get(ref, timeout=timeout_s)
            except Exception:  # the node may be gone too; teardown still runs
                self.pending = None
                self.walk.drop_node()
                self._leave()
            else:
                self.pending = None
                then(value)


#: the stages with a form on the server's node (``ConfigRun.walk``'s ``on_node``)
ON_NODE = ("files", "server", "verified")
