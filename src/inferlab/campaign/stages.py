"""The stages one config goes through before it is measured, each a context manager over a
:class:`~inferlab.campaign.context.ConfigContext`, undone in reverse (``campaign.pipeline``).

``files``: tuned files made, every ``files`` kind installed; restored on the way out (kept by
``up``). ``server``: launched (profiling on when ``[profile]`` names it), stored as a ``launch``
verification, stopped on the way out with the stop, GPU-drain and runtime-failure checks
(``campaign.steps.server_running``); kind ``openai``: the endpoint already running. ``verified``:
probes, length, stream, greedy equivalence, the distribution-agreement gate and the lm-eval
score gate (``campaign.parts.evalstep``) against the reference, stored; a failure ends the config
(``StepFailed`` "verify-failed"). ``levers``: the lever evidence of the config's diff against
the baseline, stored and told. A new stage is a function here and an entry in
:data:`RUN_STAGES`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from inferlab.campaign.context import ConfigContext, StepFailed
from inferlab.campaign.parts import capture
from inferlab.campaign.parts.evalstep import SAMPLES_KIND, eval_check
from inferlab.campaign.parts.launch import config_row, served_model, server_url
from inferlab.campaign.steps import check_applied, config_files, server_running
from inferlab.config.campaign import CampaignFile
from inferlab.config.lossy import LossyGate
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.errors import ConfigError
from inferlab.server import ServerProcess
from inferlab.store import Store
from inferlab.verify import GreedyOutputs, VerifyReport, verify_endpoint
from inferlab.verify.gate import AgreementTask
from inferlab.verify.logprobs import LogprobReference

__all__ = [
    "RUN_STAGES",
    "Stage",
    "agreement_task",
    "files",
    "given",
    "levers",
    "reference_outputs",
    "server",
    "serving",
    "store_verification",
    "verified",
    "verify_config",
]

Stage = Callable[[ConfigContext], AbstractContextManager[None]]


@contextlib.contextmanager
def files(cx: ConfigContext) -> Iterator[None]:
    """``cx.cfg`` with its tuned files, installed; restored on exit unless ``up`` keeps them."""
    run = cx.run
    with config_files(
        run.campaign, run.baseline, cx.cfg, store=run.store, config_id=cx.config_id,
        say=cx.say, owner="up" if run.keep else "run", keep=run.keep,
    ) as (cfg, installed):  # fmt: skip
        cx.cfg, cx.installed = cfg, installed
        yield


@contextlib.contextmanager
def given(cx: ConfigContext) -> Iterator[None]:
    """Kind ``openai``: the endpoint that already runs (nothing launched, nothing stopped)."""
    cfg = cx.cfg
    if not cfg.url:
        what = "the URL of the running endpoint" if cx.run.keep else "the URL"
        raise ConfigError(f"{cx.run.path}: engine.url: kind {cfg.engine!r} needs {what}")
    cx.url = cfg.url.rstrip("/")
    cx.model = served_model(cx.url, cfg.model or "")
    yield


@contextlib.contextmanager
def server(cx: ConfigContext) -> Iterator[None]:
    """The config's server, launched and stopped here (``given`` when it launches nothing)."""
    run, cfg = cx.run, cx.cfg
    if not get_engine(cfg.engine).launchers:
        with given(cx):
            yield
        return
    assert run.store is not None and cx.config_id is not None  # ``run`` always stores
    launched, note = capture.launch_form(run.campaign, cfg, run.store)
    with server_running(
        run.campaign, launched, store=run.store, config_id=cx.config_id, say=cx.say,
        held=cx.held, extra={"profiling": note} if note else None, cpus=run.cpus,
    ) as srv:  # fmt: skip
        serving(cx, srv)
        yield


def serving(cx: ConfigContext, srv: ServerProcess) -> None:
    """``cx`` with the server it launched: its URL, the model it serves, its launch log."""
    cx.server, cx.log_path = srv, srv.spec.log_path
    cx.url = server_url(srv, cx.cfg)
    cx.model = served_model(cx.url, cx.cfg.model or "")


@contextlib.contextmanager
def verified(cx: ConfigContext) -> Iterator[None]:
    """Verified (unless ``[verify] enabled = false`` or ``--no-verify``): ``cx.verify``."""
    run = cx.run
    if run.campaign.verify.enabled and not run.no_verify:
        run.progress(f"{cx.name}: verifying ...")
        ref = run.campaign.verify.equivalent_to or run.baseline.name
        cx.verify = rep = verify_config(
            run.campaign, cx.cfg, cx.url, cx.model, run.store, reference_config=ref
        )
        if not rep.passed:
            remedy = "fix the config, or --no-verify to measure anyway"
            raise StepFailed("verify-failed", rep.summary(), remedy)
    yield


@contextlib.contextmanager
def levers(cx: ConfigContext) -> Iterator[None]:
    """The lever evidence of the config against the baseline, in ``cx.levers``."""
    cx.levers = check_applied(
        cx.run.baseline, cx.cfg, url=cx.url, log_path=cx.log_path, installed=cx.installed,
        store=cx.run.store, config_id=cx.config_id, say=cx.say,
    )  # fmt: skip
    yield


#: ``inferlab run``'s stages, in the order they start (undone in reverse)
RUN_STAGES: tuple[Stage, ...] = (files, server, verified, levers)


def reference_outputs(
    camp: CampaignFile, cfg: ResolvedConfig, store: Store
) -> GreedyOutputs | None:
    """The stored greedy outputs ``cfg`` must match (``verify.equivalent_to``), or None."""
    ref_name = camp.verify.equivalent_to
    if ref_name is None or ref_name == cfg.name:
        return None
    stored = store.latest_verification(camp.campaign.name, ref_name, "greedy-outputs")
    return GreedyOutputs.from_json(stored) if stored is not None else None


def agreement_task(
    camp: CampaignFile, cfg: ResolvedConfig, store: Store, reference_config: str
) -> AgreementTask | None:
    """The distribution-agreement work of ``cfg`` (docs/verify.md): none unless the campaign
    or a config sets ``lossy``; the reference config's logprobs are made; a ``lossless =
    false`` config with a gate is gated, every other config gets the figures."""
    if camp.verify.lossy is None and all(c.lossy is None for c in camp.config):
        return None
    reference_config = camp.verify.lossy_against or reference_config
    limits = cfg.lossy or camp.verify.lossy
    gating = not cfg.lossless and limits is not None
    if cfg.name == reference_config:
        return AgreementTask(camp.verify.lossy or LossyGate(), None, gating=False)
    stored = store.latest_verification(camp.campaign.name, reference_config, "logprob-reference")
    if stored is None:
        why = f"no stored logprobs of the reference config {reference_config!r} (not verified?)"
        return AgreementTask(limits or LossyGate(), None, gating, missing=why)
    return AgreementTask(limits or LossyGate(), LogprobReference.from_json(stored), gating)


def verify_config(
    camp: CampaignFile,
    cfg: ResolvedConfig,
    url: str,
    model: str,
    store: Store | None,
    *,
    reference_config: str | None = None,
) -> VerifyReport:
    """Every check of ``[verify]`` (and the agreement gate against ``reference_config``)."""
    spec = get_engine(cfg.api or cfg.engine)
    ref = reference_outputs(camp, cfg, store) if store is not None else None
    task = None
    if store is not None and reference_config is not None:
        task = agreement_task(camp, cfg, store, reference_config)
    rep = verify_endpoint(
        url, model=model, engine=spec, section=camp.verify, reference=ref,
        lossless=cfg.lossless, agreement=task,
    )  # fmt: skip
    samples = None
    if camp.verify.eval is not None and store is not None and reference_config and rep.passed:
        check, samples = eval_check(camp, cfg, url, model, store, reference_config)
        rep.checks.append(check)
    if store is not None:
        store_verification(store, camp, cfg, rep, eval_samples=samples)
    return rep


def store_verification(
    store: Store,
    camp: CampaignFile,
    cfg: ResolvedConfig,
    rep: VerifyReport,
    *,
    eval_samples: dict[str, Any] | None = None,
) -> None:
    """Every check of ``rep`` with ``cfg``, its greedy outputs when it passed, and the raw
    lm-eval samples of ``[verify] eval`` when the harness ran."""
    with store.transaction():
        gid = config_row(store, camp, cfg)
        for c in rep.checks:
            store.add_verification(gid, c.kind, c.passed, c.to_json())
        if rep.outputs is not None and rep.passed:
            store.add_verification(gid, "greedy-outputs", True, rep.outputs.to_json())
        if rep.logprobs is not None and rep.passed:
            store.add_verification(gid, "logprob-reference", True, rep.logprobs.to_json())
        if eval_samples is not None:
            store.add_verification(gid, SAMPLES_KIND, True, eval_samples)
