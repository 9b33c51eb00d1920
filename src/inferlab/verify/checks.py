"""The checks a server must pass before it is measured.

(a) smoke probes at temperature 0 with an expected regex; (b) greedy equivalence: fixed prompts
at T=0 compared with a reference config's stored outputs, with the match rate and the first
divergence per prompt (a lossless lever must match 100%); (c) the requested output length is
honoured; (d) every stream is well formed (usage present when asked, ``[DONE]`` or a clean end,
at least one token per event).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from inferlab.config.campaign import DEFAULT_PROBES, Probe, VerifySection
from inferlab.engines import EngineSpec
from inferlab.errors import ConnectError
from inferlab.load.http import MAX_EVENT_BYTES, Endpoint, HttpClient, run_loop
from inferlab.load.sse import ParsedStream, error_message_of, parse_stream
from inferlab.verify.agreement import Agreement
from inferlab.verify.gate import AgreementTask, build_reference, decide, measure
from inferlab.verify.logprobs import LogprobReference, NoLogprobs

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "EQUIVALENCE_PROMPTS",
    "TEXT_PROBES",
    "CheckResult",
    "GreedyOutputs",
    "VerifyReport",
    "default_probes",
    "verify_endpoint",
]

#: the default probe of an engine that speaks no language (the reference engine): text, not
#: an answer (a real model is held to DEFAULT_PROBES' "Paris")
TEXT_PROBES = (Probe(prompt="Say anything.", expect=r"\w"),)


def default_probes(engine: EngineSpec) -> list[Probe]:
    """The probes of a ``[verify]`` that names none: the capital of France where the engine
    serves a language model, any word where it speaks none (``EngineSpec.speaks_language``)."""
    return list(DEFAULT_PROBES if engine.speaks_language else TEXT_PROBES)


#: fixed prompts for greedy equivalence (plain text any tokenizer can take)
EQUIVALENCE_PROMPTS = (
    "The quick brown fox jumps over the lazy dog. Then",
    "Once upon a time, in a small village by the sea,",
    "List three prime numbers:",
    "def fibonacci(n):",
    "The capital of Japan is",
    "Translate to French: good morning.",
    "Water boils at",
    "In 1969, the first humans",
    "A haiku about autumn:",
    "The main components of a computer are",
    "Explain photosynthesis in one sentence.",
    "SELECT name FROM users WHERE",
)


@dataclass
class CheckResult:
    kind: str  # probe | equivalence | length | stream | agreement
    passed: bool
    message: str
    detail: dict[str, Any] = field(default_factory=dict)
    #: False: recorded, but a failure does not fail verification (equivalence of a config
    #: declared ``lossless = false``)
    gating: bool = True

    def to_json(self) -> dict[str, JsonValue]:
        return asdict(self)


@dataclass
class GreedyOutputs:
    """Outputs at T=0 for the equivalence prompts: the reference a lossless lever must match."""

    prompts: list[str]
    outputs: list[str]
    max_tokens: int

    def to_json(self) -> dict[str, JsonValue]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GreedyOutputs:
        return cls(list(d["prompts"]), list(d["outputs"]), int(d["max_tokens"]))


@dataclass
class VerifyReport:
    checks: list[CheckResult]
    outputs: GreedyOutputs | None
    #: the reference config's teacher-forced logprobs (``AgreementTask.reference`` None)
    logprobs: LogprobReference | None = None

    @property
    def passed(self) -> bool:
        return not self.failures()

    @property
    def diverged(self) -> bool:
        return any(c.kind == "equivalence" for c in self.failures())

    def failures(self) -> list[CheckResult]:
        """The failed checks that fail verification (non-gating ones are left out)."""
        return [c for c in self.checks if not c.passed and c.gating]

    def summary(self) -> str:
        """Why it failed, in one line: ``failed verification: KIND: MESSAGE; ...`` (or
        ``diverged from the reference: ...`` when greedy equivalence failed)."""
        fails = "; ".join(f"{c.kind}: {c.message}" for c in self.failures())
        what = "diverged from the reference" if self.diverged else "failed verification"
        return f"{what}: {fails}"


@dataclass
class _Answer:
    status: int
    parsed: ParsedStream
    error: str | None

    @property
    def text(self) -> str:
        return "".join(self.parsed.texts)


async def _ask(
    client: HttpClient,
    *,
    model: str,
    prompt: str,
    max_tokens: int,
    chat: bool,
    extra: dict[str, Any],
) -> _Answer:
    body: dict[str, JsonValue] = {
        "model": model,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = prompt
        path = "/v1/completions"
    ex = await client.request(client.build("POST", path, json.dumps(body).encode()))
    parsed = parse_stream(ex.pieces, ex.end_ns)
    err = ex.error_message if ex.error_kind is not None else None
    if err is None and ex.status != 200:
        try:
            obj = json.loads(ex.body())
        except ValueError:
            obj = None
        err = f"HTTP {ex.status}: " + error_message_of(
            obj, ex.body()[:200].decode("utf-8", "replace")
        )
    if err is None and parsed.error_kind is not None:
        err = parsed.error_message
    if err is None and ex.error_kind is None and ex.status == 0:
        raise ConnectError(f"cannot reach {client.endpoint.base}")
    return _Answer(ex.status, parsed, err)


def _stream_problems(a: _Answer) -> list[str]:
    p = a.parsed
    out = []
    if a.error:
        out.append(a.error)
        return out
    if p.usage_completion_tokens is None:
        out.append("no usage although stream_options.include_usage was asked")
    if not p.saw_done and p.finish_reason is None:
        out.append("stream ended without [DONE] or finish_reason")
    if p.usage_completion_tokens is not None and len(p.event_ns) > p.usage_completion_tokens:
        out.append(f"{len(p.event_ns)} token events for {p.usage_completion_tokens} tokens")
    if not p.event_ns:
        out.append("no token in the stream")
    return out


def _first_divergence(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n if len(a) != len(b) else -1)


def verify_endpoint(
    url: str,
    *,
    model: str,
    engine: EngineSpec,
    section: VerifySection,
    reference: GreedyOutputs | None = None,
    headers: dict[str, str] | None = None,
    lossless: bool = True,
    agreement: AgreementTask | None = None,
) -> VerifyReport:
    """Run every check of ``section`` against a running endpoint. Never raises for a wrong
    answer (that is a failed check); raises ``ConnectError`` when nothing answers.
    ``lossless=False``: the equivalence check is recorded but does not gate. ``agreement``:
    the distribution-agreement gate (or the reference's logprobs, made)."""

    async def go() -> VerifyReport:
        # a top-k answer of every position: ~100 bytes a logprob (vLLM at top-1024: 4.4 MB
        # for 50 positions), so a large lossy top_k needs more than one event's default
        lim = agreement.limits if agreement is not None else None
        big = 0 if lim is None else 128 * lim.top_k * (lim.tokens + 256)
        client = HttpClient(
            Endpoint.parse(url),
            timeout_s=120,
            stall_timeout_s=60,
            headers=headers or {},
            max_event_bytes=max(MAX_EVENT_BYTES, big),
        )
        checks: list[CheckResult] = []
        stream_issues: list[str] = []
        try:
            probes = default_probes(engine) if section.probes is None else section.probes
            for probe in probes:
                checks.append(await _probe(client, model, probe, stream_issues))
            checks.append(await _length_check(client, model, engine, section, stream_issues))
            outputs: GreedyOutputs | None = None
            if section.equivalent_to is not None or reference is not None:
                outputs = await _greedy(client, model, engine, section, reference, stream_issues)
                if reference is not None:
                    checks.append(_equivalence(reference, outputs, gating=lossless))
            made: LogprobReference | None = None
            if agreement is not None:
                got = await _agreement(client, model, agreement, engine.teacher_forcing)
                if isinstance(got, LogprobReference):
                    made = got
                else:
                    checks.append(got)
            checks.append(
                CheckResult(
                    "stream",
                    not stream_issues,
                    "well formed" if not stream_issues else "; ".join(sorted(set(stream_issues))),
                    {"problems": stream_issues},
                )
            )
        finally:
            client.close()
        return VerifyReport(checks, outputs, made)

    return run_loop(go())


async def _agreement(
    client: HttpClient, model: str, task: AgreementTask, scorer: str
) -> CheckResult | LogprobReference:
    """The agreement check, or (no reference given) the reference's logprobs, made here;
    ``scorer``: the engine's teacher-forcing mechanism (``EngineSpec.teacher_forcing``)."""
    if task.reference is None and task.missing is None:
        try:
            return await build_reference(client, model, task.limits, scorer)
        except NoLogprobs as exc:
            reason = f"the reference serves no teacher-forced logprobs ({exc})"
            _, msg, detail = decide(None, task.limits, why=reason)
            return CheckResult("agreement", False, msg, detail, gating=False)
    a: Agreement | None = None
    met = True
    why: str | None = task.missing
    if task.reference is not None:
        try:
            a, met = await measure(client, model, task.reference, task.limits, scorer)
        except NoLogprobs as exc:
            why = f"no teacher-forced logprobs ({exc})"
    verdict, msg, detail = decide(a, task.limits, width_met=met, why=why)
    if not task.gating:
        msg = "not gating (lossless): " + msg
    detail["gating"] = task.gating
    return CheckResult("agreement", verdict == "pass", msg, detail, gating=task.gating)


async def _length_check(
    client: HttpClient, model: str, engine: EngineSpec, section: VerifySection, issues: list[str]
) -> CheckResult:
    n = section.length_tokens
    extra = engine.fixed_length_fields(n)
    a = await _ask(
        client, model=model, prompt=EQUIVALENCE_PROMPTS[0], max_tokens=n, chat=False, extra=extra
    )
    issues += _stream_problems(a)
    return _length(a, n, enforced=bool(extra))


def _length(a: _Answer, n: int, *, enforced: bool) -> CheckResult:
    """The output length asked for: exactly ``n`` tokens where the engine can be told to, at
    most ``n`` (and at least one) where only ``max_tokens`` applies."""
    got = a.parsed.usage_completion_tokens
    ok = a.error is None and (got == n if enforced else got is not None and 0 < got <= n)
    msg = f"asked {n} tokens, got {got}" + (f" ({a.error})" if a.error else "")
    if not enforced:
        msg += " (max_tokens only: this engine is not told to ignore EOS)"
    detail = {"requested": n, "usage": got, "events": len(a.parsed.event_ns), "enforced": enforced}
    return CheckResult("length", ok, msg, detail)


async def _greedy(
    client: HttpClient,
    model: str,
    engine: EngineSpec,
    section: VerifySection,
    reference: GreedyOutputs | None,
    issues: list[str],
) -> GreedyOutputs:
    """Outputs at T=0 for the reference's prompts (or the section's first N)."""
    prompts = list(EQUIVALENCE_PROMPTS[: section.equivalence_prompts])
    if reference is not None:
        prompts = reference.prompts
    m = reference.max_tokens if reference else section.equivalence_tokens
    texts = []
    for pr in prompts:
        ans = await _ask(
            client,
            model=model,
            prompt=pr,
            max_tokens=m,
            chat=False,
            extra=engine.fixed_length_fields(m),
        )
        issues += _stream_problems(ans)
        texts.append(ans.text)
    return GreedyOutputs(prompts, texts, m)


async def _probe(client: HttpClient, model: str, probe: Probe, issues: list[str]) -> CheckResult:
    a = await _ask(
        client,
        model=model,
        prompt=probe.prompt,
        max_tokens=probe.max_tokens,
        chat=probe.chat,
        extra={},
    )
    issues += _stream_problems(a)
    ok = a.error is None and re.search(probe.expect, a.text) is not None
    msg = (
        f"{probe.prompt!r} → {a.text.strip()[:80]!r}"
        + ("" if ok else f" does not match {probe.expect!r}")
        + (f" ({a.error})" if a.error else "")
    )
    return CheckResult(
        "probe",
        ok,
        msg,
        {"prompt": probe.prompt, "expect": probe.expect, "output": a.text, "error": a.error},
    )


def _equivalence(ref: GreedyOutputs, got: GreedyOutputs, *, gating: bool = True) -> CheckResult:
    per: list[dict[str, Any]] = []
    first: tuple[str, int, str, str] | None = None
    for pr, a, b in zip(ref.prompts, ref.outputs, got.outputs):
        pos = _first_divergence(a, b)
        per.append(
            {
                "prompt": pr,
                "match": pos < 0,
                "first_divergence_char": None if pos < 0 else pos,
                "reference": a,
                "output": b,
            }
        )
        if pos >= 0 and first is None:
            first = (pr, pos, a, b)
    matched = sum(1 for p in per if p["match"])
    rate = matched / len(per) if per else 0.0
    msg = f"greedy outputs match {matched}/{len(per)} ({rate:.0%})"
    if first is not None:
        pr, pos, a, b = first
        msg += (
            f"; first divergence in {pr!r} at char {pos}: "
            f"{a[pos : pos + 20]!r} vs {b[pos : pos + 20]!r}"
        )
    if not gating:
        msg = "not gating (lossless = false): " + msg
    return CheckResult(
        "equivalence",
        matched == len(per),
        msg,
        {"match_rate": rate, "prompts": per, "gating": gating},
        gating=gating,
    )
