"""Run EleutherAI's lm-evaluation-harness against an OpenAI endpoint, in a subprocess, and read
its per-sample scores (docs/verify.md, "lm-eval"). The harness does the scoring; nothing here
knows a task.

The harness runs in its own Python (``EvalGate.python``; inferlab's own when it has
``lm_eval``, the ``inferlab[eval]`` extra; else the cached environment of
:mod:`inferlab.envs.lmeval`), so its imports never enter inferlab's. The driver calls
``lm_eval.simple_evaluate`` with ``model = local-completions`` (or ``local-chat-completions``)
at ``URL/v1/completions``, ``log_samples = True``, and writes the harness's own ``samples``
(one record per document and filter, with each metric's value) and ``results`` as JSON.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.config.evalgate import EvalGate
from inferlab.errors import ConfigError, InferlabError
from inferlab.secrets import scrub_text
from inferlab.verify.scoregap import DocKey

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "INSTALL_HINT",
    "HarnessFailed",
    "HarnessRun",
    "driver_args",
    "harness_python",
    "run_harness",
    "sample_scores",
]

INSTALL_HINT = (
    "pip install 'inferlab[eval]' (or build the cached environment: "
    "python -m inferlab.envs.lmeval, and leave verify.eval.python unset)"
)

#: runs in the harness's Python: argv[1] is the JSON of :func:`driver_args`
_DRIVER = r"""
import json, sys
a = json.loads(sys.argv[1])
import lm_eval
from lm_eval.tasks import TaskManager
from lm_eval.utils import handle_non_serializable
s = a["seed"]
res = lm_eval.simple_evaluate(
    model=a["model"], model_args=a["model_args"], tasks=a["tasks"],
    num_fewshot=a["num_fewshot"], limit=a["limit"], log_samples=True, bootstrap_iters=0,
    apply_chat_template=a["chat"],
    task_manager=TaskManager(include_path=a["include_path"], include_defaults=a["defaults"]),
    random_seed=s, numpy_random_seed=s, torch_random_seed=s, fewshot_random_seed=s,
)
out = {"version": lm_eval.__version__, "results": res["results"], "samples": res["samples"],
       "n-samples": res.get("n-samples")}
with open(a["out"], "w") as fh:
    json.dump(out, fh, default=handle_non_serializable)
"""


class HarnessFailed(InferlabError):
    """The harness ran but gave no scores (it failed, timed out, or the engine did not
    answer): the gate cannot decide."""


@dataclass(frozen=True)
class HarnessRun:
    """What the harness wrote: its version, per-task ``results`` and raw ``samples``."""

    version: str
    results: dict[str, Any]
    samples: dict[str, list[dict[str, Any]]]

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "results": self.results, "samples": self.samples}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HarnessRun:
        return cls(str(d["version"]), dict(d["results"]), dict(d["samples"]))


def harness_python(gate: EvalGate) -> str:
    """The Python that runs the harness (``ConfigError`` naming the extra when none has it)."""
    if gate.python is not None:
        if not Path(gate.python).exists():
            raise ConfigError(f"verify.eval.python: {gate.python} does not exist")
        return gate.python
    if importlib.util.find_spec("lm_eval") is not None:
        return sys.executable
    from inferlab.envs.lmeval import cached_python

    cached = cached_python()
    if cached is not None:
        return str(cached)
    raise ConfigError(
        f"verify.eval: lm-evaluation-harness (lm_eval) is not installed: {INSTALL_HINT}"
    )


def driver_args(gate: EvalGate, url: str, model: str, out: Path) -> dict[str, JsonValue]:
    """The driver's arguments: the harness's API model at ``url`` serving ``model``."""
    chat = gate.api == "chat"
    path = "/v1/chat/completions" if chat else "/v1/completions"
    margs: dict[str, JsonValue] = {
        "base_url": url.rstrip("/") + path,
        "model": model,
        "num_concurrent": gate.concurrency,
        "max_retries": 1,
        "seed": gate.seed,
    }
    if gate.tokenizer is None:
        margs |= {"tokenizer_backend": None, "tokenized_requests": False}
    else:
        margs |= {
            "tokenizer_backend": "huggingface",
            "tokenizer": gate.tokenizer,
            "tokenized_requests": False,
        }
    return {
        "model": "local-chat-completions" if chat else "local-completions",
        "model_args": margs,
        "tasks": list(gate.tasks),
        "num_fewshot": gate.num_fewshot,
        "limit": gate.limit,
        "include_path": gate.include_path,
        "defaults": gate.include_defaults,
        "chat": chat,
        "seed": gate.seed,
        "out": str(out),
    }


def _last_words(text: str, limit: int = 300) -> str:
    """The harness output's last line that says something (progress bars left out)."""
    lines = [ln.strip() for ln in text.replace("\r", "\n").splitlines()]
    said = [ln for ln in lines if ln and "it/s]" not in ln and "s/it]" not in ln]
    last = said[-1] if said else "no output"
    return last if len(last) <= limit else last[: limit - 1] + "…"


def run_harness(gate: EvalGate, url: str, model: str, workdir: Path) -> HarnessRun:
    """Run the harness against ``url`` (``HarnessFailed`` with its output's tail when it gives
    no samples; its log is ``workdir/lm-eval.log``)."""
    python = harness_python(gate)
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "lm-eval-samples.json"
    out.unlink(missing_ok=True)
    argv = [python, "-c", _DRIVER, json.dumps(driver_args(gate, url, model, out))]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.setdefault("OPENAI_API_KEY", "EMPTY")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    log = workdir / "lm-eval.log"
    try:
        proc = subprocess.run(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            timeout=gate.timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        why = f"lm-eval ran past {gate.timeout_s:g} s (verify.eval.timeout_s)"
        raise HarnessFailed(why) from exc
    said = scrub_text(proc.stdout)  # the log and the stored message keep no secret
    log.write_text(said)
    if proc.returncode != 0 or not out.is_file():
        raise HarnessFailed(f"lm-eval exited {proc.returncode}: {_last_words(said)} ({log})")
    try:
        run = HarnessRun.from_json(json.loads(out.read_text()))
    except (ValueError, KeyError, TypeError) as exc:
        raise HarnessFailed(f"lm-eval wrote no readable samples ({out}): {exc}") from None
    if not any(run.samples.values()):
        raise HarnessFailed(f"lm-eval scored no document ({log})")
    return run


def _pick(samples: Sequence[Mapping[str, Any]], metric: str | None, flt: str | None) -> str:
    """The filter whose samples are compared: ``flt``, else the first the harness lists."""
    filters = list(dict.fromkeys(str(s.get("filter")) for s in samples))
    if flt is not None and flt not in filters:
        raise HarnessFailed(f"no samples under filter {flt!r} (the harness has {filters})")
    return flt if flt is not None else filters[0]


def sample_scores(
    run: HarnessRun, metric: str | None = None, flt: str | None = None
) -> dict[DocKey, float]:
    """Each document's score (``(task, doc_id)`` → the metric's value under the filter):
    ``metric`` or the first the harness lists for the sample, ``flt`` or the task's first."""
    scores: dict[DocKey, float] = {}
    for task, samples in run.samples.items():
        if not samples:
            continue
        chosen = _pick(samples, metric, flt)
        for s in samples:
            if str(s.get("filter")) != chosen:
                continue
            try:
                name = metric or str(s["metrics"][0])
                if name not in s:
                    raise HarnessFailed(f"{task}: no metric {name!r} in its samples")
                scores[(task, int(s["doc_id"]))] = float(s[name])
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                why = f"{task}: a sample without doc_id or a score ({exc!r})"
                raise HarnessFailed(why) from None
    return scores
