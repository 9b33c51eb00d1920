"""The ``verified`` stage: every check of ``[verify]`` against the reference, stored.

Probes, length, stream, greedy equivalence, the distribution-agreement gate and the lm-eval
score gate (``campaign.parts.evalstep``) against the reference config; a failure ends the
config (``StepFailed`` "verify-failed"). Skipped with ``[verify] enabled = false`` or
``--no-verify``. Under ``run --ray`` the server's node runs the checks (``cluster.task``) and
the driver stores them here (``store_verification``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from inferlab.campaign.context import ConfigContext, Stage, StepFailed
from inferlab.campaign.parts.evalstep import SAMPLES_KIND, eval_check
from inferlab.campaign.parts.launch import config_row
from inferlab.config.campaign import CampaignFile
from inferlab.config.lossy import LossyGate
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.store import Store
from inferlab.verify import GreedyOutputs, VerifyReport, verify_endpoint
from inferlab.verify.gate import AgreementTask
from inferlab.verify.logprobs import LogprobReference

__all__ = [
    "REMEDY",
    "VERIFIED",
    "agreement_task",
    "reference_outputs",
    "store_verification",
    "verify_config",
    "wants_verify",
]

#: what a config that failed verification is told to do
REMEDY = "fix the config, or --no-verify to measure anyway"


def wants_verify(cx: ConfigContext) -> bool:
    """Whether this run verifies its configs (``[verify] enabled``, no ``--no-verify``)."""
    return cx.run.campaign.verify.enabled and not cx.run.no_verify


@contextlib.contextmanager
def _verified(cx: ConfigContext) -> Iterator[None]:
    """Verified (unless ``[verify] enabled = false`` or ``--no-verify``): ``cx.verify``. A
    config's later launches (``[load] launches``) check its probes again, not the greedy
    equivalence, the agreement gate and the eval: those are facts of the config, decided and
    stored at its first launch (``probes_again``)."""
    run = cx.run
    if wants_verify(cx):
        run.progress(f"{cx.name}: verifying ...")
        ref = run.campaign.verify.equivalent_to or run.baseline.name
        if cx.launch > 1:
            cx.verify = rep = probes_again(run.campaign, cx.cfg, cx.url, cx.model)
        else:
            cx.verify = rep = verify_config(
                run.campaign, cx.cfg, cx.url, cx.model, run.store, reference_config=ref
            )
        if not rep.passed:
            raise StepFailed("verify-failed", rep.summary(), REMEDY)
    yield


VERIFIED = Stage("verified", _verified)


def reference_outputs(
    camp: CampaignFile, cfg: ResolvedConfig, store: Store
) -> GreedyOutputs | None:
    """The stored greedy outputs ``cfg`` must match (``verify.equivalent_to``), or None."""
    ref_name = camp.verify.equivalent_to
    if ref_name is None or ref_name == cfg.name:
        return None
    stored = store.latest_verification(camp.campaign.name, ref_name, "greedy-outputs")
    return GreedyOutputs.from_json(stored.to_json()) if stored is not None else None


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
    reference = LogprobReference.from_json(stored.to_json())
    return AgreementTask(limits or LossyGate(), reference, gating)


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
        url,
        model=model,
        engine=spec,
        section=camp.verify,
        reference=ref,
        lossless=cfg.lossless,
        agreement=task,
    )
    samples = None
    if camp.verify.eval is not None and store is not None and reference_config and rep.passed:
        check, samples = eval_check(camp, cfg, url, model, store, reference_config)
        rep.checks.append(check)
    if store is not None:
        store_verification(store, camp, cfg, rep, eval_samples=samples)
    return rep


def probes_again(camp: CampaignFile, cfg: ResolvedConfig, url: str, model: str) -> VerifyReport:
    """``[verify]``'s probes (and its length check) on a later launch of ``cfg``: the
    checks that say this server answers, without the equivalence, gate and eval that its first
    launch decided and stored. Not stored: the stored verification stays the first launch's."""
    section = camp.verify.model_copy(update={"equivalent_to": None, "lossy": None, "eval": None})
    spec = get_engine(cfg.api or cfg.engine)
    return verify_endpoint(url, model=model, engine=spec, section=section, lossless=cfg.lossless)


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
