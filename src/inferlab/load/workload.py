"""Prompts and request bodies: random prompts of exact token length, shared prefixes, JSONL,
ShareGPT (one maker per workload kind, ``MAKERS``).

Everything here runs before a load point starts; request bodies are serialized once.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from inferlab.config.bench import BenchConfig
from inferlab.config.workload import WorkloadSpec
from inferlab.engines import EngineSpec
from inferlab.errors import ConfigError
from inferlab.load.prompt import Prompt
from inferlab.load.synth import shared_prefix_prompts

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["MAKERS", "Prompt", "PromptMaker", "build_body", "make_prompts", "workload_descriptor"]


class PromptMaker(Protocol):
    def random_text(self, n: int, rng: random.Random) -> str: ...

    def count_many(self, texts: list[str]) -> list[int]: ...

    def one_token_words(self, limit: int = 512) -> list[str]: ...


def _need(tokenizer: PromptMaker | None, what: str) -> PromptMaker:
    if tokenizer is None:
        raise ConfigError(f"{what} prompts need a tokenizer: pass --tokenizer DIR")
    return tokenizer


def _random(spec: WorkloadSpec, n: int, tokenizer: PromptMaker | None) -> list[Prompt]:
    tok = _need(tokenizer, "random")
    rng = random.Random(spec.seed)
    return [
        Prompt(tok.random_text(spec.input_tokens, rng), None, spec.input_tokens, spec.output_tokens)
        for _ in range(n)
    ]


def _shared_prefix(spec: WorkloadSpec, n: int, tokenizer: PromptMaker | None) -> list[Prompt]:
    tok = _need(tokenizer, "shared-prefix")
    return shared_prefix_prompts(
        spec.prefixes,
        spec.prefix_tokens,
        spec.suffix_tokens,
        spec.prefix_dist,
        spec.output_tokens,
        n,
        tok,
        spec.seed,
    )


def _jsonl(spec: WorkloadSpec, n: int, tokenizer: PromptMaker | None) -> list[Prompt]:
    assert spec.path is not None
    return _counted(_read_jsonl(spec.path, spec), n, tokenizer)


def _sharegpt(spec: WorkloadSpec, n: int, tokenizer: PromptMaker | None) -> list[Prompt]:
    assert spec.path is not None
    return _counted(_read_sharegpt(spec.path, spec), n, tokenizer)


def _counted(base: list[Prompt], n: int, tokenizer: PromptMaker | None) -> list[Prompt]:
    """A file's prompts counted by ``tokenizer`` (when given), cycled to ``n``."""
    if tokenizer is not None:
        texts = [p.text if p.text is not None else _messages_text(p.messages) for p in base]
        counts = tokenizer.count_many(texts)
        base = [Prompt(p.text, p.messages, c, p.output_tokens) for p, c in zip(base, counts)]
    return [base[i % len(base)] for i in range(n)]


#: workload kind (``config.workload.WORKLOADS``) → its prompt maker (a test keeps the two alike)
MAKERS: dict[str, Callable[[WorkloadSpec, int, PromptMaker | None], list[Prompt]]] = {
    "random": _random,
    "shared-prefix": _shared_prefix,
    "jsonl": _jsonl,
    "sharegpt": _sharegpt,
}


def make_prompts(spec: WorkloadSpec, n: int, tokenizer: PromptMaker | None) -> list[Prompt]:
    """``n`` prompts (files are cycled when shorter than ``n``)."""
    return MAKERS[spec.kind](spec, n, tokenizer)


def _messages_text(messages: tuple[dict[str, Any], ...] | None) -> str:
    parts = []
    for m in messages or ():
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(str(x.get("text", "")) for x in c if isinstance(x, dict))
    return "\n".join(parts)


def _read_jsonl(path: Path, spec: WorkloadSpec) -> list[Prompt]:
    """Lines of ``{"prompt": str}`` or ``{"messages": [...]}``, optional ``output_tokens``."""
    out: list[Prompt] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read prompts file: {exc}") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{where}: invalid JSON ({exc.args[0]})") from None
        if not isinstance(obj, dict):
            raise ConfigError(f"{where}: expected an object with 'prompt' or 'messages'")
        out_tokens = obj.get("output_tokens", obj.get("max_tokens", spec.output_tokens))
        if not isinstance(out_tokens, int) or out_tokens < 1:
            raise ConfigError(f"{where}: field 'output_tokens' must be a positive integer")
        if isinstance(obj.get("prompt"), str):
            out.append(Prompt(obj["prompt"], None, None, out_tokens))
        elif isinstance(obj.get("messages"), list) and obj["messages"]:
            msgs = obj["messages"]
            if not all(isinstance(m, dict) and "role" in m and "content" in m for m in msgs):
                raise ConfigError(f"{where}: field 'messages': each needs 'role' and 'content'")
            out.append(Prompt(None, tuple(msgs), None, out_tokens))
        else:
            raise ConfigError(
                f"{where}: expected field 'prompt' (string) or 'messages' (non-empty list)"
            )
    if not out:
        raise ConfigError(f"{path}: no prompts in file")
    return out


def _read_sharegpt(path: Path, spec: WorkloadSpec) -> list[Prompt]:
    """ShareGPT JSON: first human turn is the prompt; the output length is the spec's."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ShareGPT file: {exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a JSON list of conversations")
    out: list[Prompt] = []
    for i, conv in enumerate(data):
        turns = conv.get("conversations") if isinstance(conv, dict) else None
        if not isinstance(turns, list):
            raise ConfigError(f"{path}: entry {i}: expected field 'conversations' (a list)")
        for t in turns:
            if isinstance(t, dict) and t.get("from") in ("human", "user"):
                value = t.get("value")
                if isinstance(value, str) and value.strip():
                    out.append(Prompt(value, None, None, spec.output_tokens))
                break
    if not out:
        raise ConfigError(f"{path}: no conversation with a human turn")
    return out


def build_body(
    prompt: Prompt, *, model: str, endpoint: str, engine: EngineSpec, stream: bool = True
) -> bytes:
    """The JSON body of one request; asks for exactly ``prompt.output_tokens`` tokens."""
    body: dict[str, Any] = {"model": model}
    if endpoint == "chat":
        msgs = (
            list(prompt.messages)
            if prompt.messages
            else [{"role": "user", "content": prompt.text or ""}]
        )
        body["messages"] = msgs
    else:
        body["prompt"] = prompt.text if prompt.text is not None else _messages_text(prompt.messages)
    body["max_tokens"] = prompt.output_tokens
    body["temperature"] = 0.0
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    body.update(engine.fixed_length_fields(prompt.output_tokens))
    return json.dumps(body, separators=(",", ":")).encode()


def workload_descriptor(cfg: BenchConfig) -> dict[str, JsonValue]:
    """What makes two workloads the same distribution: kind, lengths, endpoint, file content
    (the random seed is left out: other prompts of the same lengths are the same workload)."""
    w = cfg.workload
    d: dict[str, JsonValue] = {
        "kind": w.kind,
        "output_tokens": w.output_tokens,
        "endpoint": cfg.endpoint,
    }
    d |= {f: getattr(w, f) for f in w.of.identity}
    if w.of.from_file and w.path is not None:
        d |= _file_identity(w.path)
    if cfg.trace is not None:  # a replay's requests are the trace's, whatever the workload
        d["trace"] = {"format": cfg.trace_format, **_file_identity(cfg.trace)}
    return d


def _file_identity(path: Path) -> dict[str, str]:
    try:
        return {"file_sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    except OSError:
        return {"file": str(path)}
