"""Did each lever take effect? Evidence per item of a config's diff against the baseline.

Every flag set, changed or removed, every environment variable, every ``files`` kind and another
checkpoint (``[[config]] model``) is one item. The engine's declarations (``EngineSpec.evidence``)
say where to look:

- its args as the server parsed them: the launch log's args dump (vLLM ``non-default args:``,
  SGLang ``server_args=ServerArgs(...)``) or its ``/get_server_info``;
- effects once the verification requests ran: counters in ``/metrics`` (speculative decoding's
  drafts, accept length) or log lines (``accept len``); a counter at 0 on a server that has
  generated no token yet (``[verify] enabled = false``: no request came before) is no reading;
- variables echoed by a library (NCCL with ``NCCL_DEBUG=INFO``: ``NCCL_PROTO set by environment
  to LL``) or warned about while absent (vLLM CPU: ``libiomp is not found in LD_PRELOAD``);
- the kernel-config lines of the launch log: no ``Using default W8A8 Block FP8 kernel config``
  for a shape an installed file covers, and ``Using configuration from <that file>``.

Each item ends ``applied`` (with the evidence), ``not-applied`` (with the line that shows it)
or ``unknown`` (no source could tell). Stored as a ``lever`` verification of the config.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab.campaign.context import Installed, LeverItem
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import EngineSpec, get_engine, parse_prometheus
from inferlab.engines.evidence import EnvEvidence, field_name, same_value
from inferlab.engines.flags import Change
from inferlab.errors import ConfigError
from inferlab.logs import analyze_log
from inferlab.recon.tuned import parse_config_name
from inferlab.secrets import scrub_text
from inferlab.store import Store

__all__ = ["Sources", "check_levers", "gather", "item_lines", "record_levers"]

_MAX_LOG = 64 << 20


@dataclass
class Sources:
    """What the server showed: its launch log lines, ``/get_server_info``, ``/metrics``."""

    log_path: Path | None
    lines: list[str]
    server_info: dict[str, Any] | None
    metrics: str | None

    def line(self, n: int) -> str:
        """Line ``n`` (1-based) of the log, cleaned for evidence."""
        return self.lines[n - 1].strip() if 0 < n <= len(self.lines) else f"line {n}"


def _read_lines(path: Path | None) -> list[str]:
    if path is None:
        return []
    try:
        with path.open("rb") as f:
            data = f.read(_MAX_LOG)
    except OSError:
        return []
    # lines as the log analyzer numbers them: split at \n only (progress bars write \r)
    lines = data.decode("utf-8", "replace").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _get(url: str, timeout_s: float) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return bytes(r.read()) if r.status == 200 else None
    except (OSError, ValueError):
        return None


def gather(
    spec: EngineSpec,
    cfg: ResolvedConfig,
    *,
    log_path: Path | None,
    url: str | None,
    timeout_s: float = 5.0,
) -> Sources:
    """Read the sources the engine offers (an unreachable one is simply absent)."""
    info: dict[str, Any] | None = None
    metrics: str | None = None
    if url and spec.evidence.server_info_path:
        body = _get(url + spec.evidence.server_info_path, timeout_s)
        try:
            got = json.loads(body) if body else None
        except ValueError:
            got = None
        info = got if isinstance(got, dict) else None
    mpath = cfg.metrics_path or spec.metrics_path
    if url and mpath:
        body = _get(url + mpath, timeout_s)
        metrics = body.decode("utf-8", "replace") if body else None
    return Sources(log_path, _read_lines(log_path), info, metrics)


# -- flags ----------------------------------------------------------------------------------


def _dump(spec: EngineSpec, src: Sources) -> tuple[dict[str, Any], str, bool] | None:
    """The first args dump of the launch log: (args, where, complete)."""
    for i, line in enumerate(src.lines, 1):
        for d in spec.evidence.args_dumps:
            if d.marker in line:
                args = d.find(line)
                if args is not None:
                    return args, f"{d.name} (launch log line {i})", d.complete
    return None


def _from_args(
    ch: Change,
    names: tuple[str, ...],
    args: dict[str, Any],
    where: str,
    complete: bool,
    source: str,
) -> tuple[str, str, str] | None:
    name = next((n for n in names if n in args), names[0])
    negated = name.startswith("no_") and name[3:] in args and name not in args
    if negated:
        name = name[3:]
    if name in args:
        got = args[name]
        shown = f"{name}={got!r} in {where}"
        if negated:
            ok = got is False if ch.kind != "removed" else got is not False
        elif ch.kind == "removed":
            if same_value(ch.old, got):
                return "unknown", f"{shown}: still the old value (maybe also the default)", source
            ok = True
        else:
            ok = same_value(ch.new, got)
        want = "" if ok else f" (asked: {' '.join(ch.new or ()) or 'on'})"
        return ("applied" if ok else "not-applied"), shown + want, source
    if complete:
        return None  # this dump has no such field: another source may
    if ch.kind == "removed":
        return "applied", f"{name} not among the {where}: back to the default", source
    return (
        "unknown",
        f"{name} not among the {where}: equal to the engine's default, or spelled otherwise",
        source,
    )


def _metric(spec: EngineSpec, src: Sources, key: str) -> float | None:
    m = spec.metric(key)
    if m is None or src.metrics is None:
        return None
    names = set(m.names) | {n + "_total" for n in m.names}
    vals = [s.value for s in parse_prometheus(src.metrics) if s.name in names]
    return sum(vals) if vals else None


def _effects(spec: EngineSpec, ch: Change, src: Sources) -> list[tuple[str, str, str]]:
    out = []
    for eff in spec.evidence.effects:
        if eff.flag != ch.flag or ch.kind == "removed":
            continue
        # a counter at 0 tells nothing when the server has generated no token yet (a campaign
        # with [verify] enabled = false sends no request before this check)
        idle = _metric(spec, src, "generation_tokens") == 0
        for key in eff.metrics:
            v = _metric(spec, src, key)
            if v is not None and v == 0 and idle:
                why = f"{key} = 0, but no token was generated before the check: no reading"
                out.append(("unknown", f"{eff.what}? {why}", "metrics"))
            elif v is not None and v == 0 and eff.gauge:  # no batch logged yet: no reading
                why = f"{key} = 0 after the verification requests: not set until a batch is logged"
                out.append(("unknown", f"{eff.what}? {why}", "metrics"))
            elif v is not None:
                st = "applied" if v > 0 else "not-applied"
                out.append(
                    (st, f"{eff.what}? {key} = {v:g} after the verification requests", "metrics")
                )
        if eff.log and not any(s == "applied" for s, _, _ in out):
            hit = _first(src, eff.log)
            if hit is not None:
                out = [("applied", f"{eff.what}: {src.line(hit)}", "launch log")]
            elif eff.log_against and (miss := _first(src, eff.log_against)) is not None:
                out.append(("not-applied", f"not {eff.what}: {src.line(miss)}", "launch log"))
    return out


def _flag_item(spec: EngineSpec, ch: Change, src: Sources) -> LeverItem:
    found: list[tuple[str, str, str]] = []
    names = spec.evidence.field_names(ch.flag)
    if src.server_info is not None:
        got = _from_args(ch, names, src.server_info, "/get_server_info", True, "server_info")
        if got is not None:
            found.append(got)
    dump = _dump(spec, src)
    if dump is not None and not found:
        got = _from_args(ch, names, dump[0], dump[1], dump[2], "launch log")
        none = ("unknown", f"{dump[1]} has no field {' or '.join(names)}", "launch log")
        found.append(got or none)
    found += _effects(spec, ch, src)
    if not found:
        why = "no args dump in the launch log and no server info: no evidence source"
        return LeverItem(ch.flag, "flag", "unknown", why, None)
    return LeverItem(ch.flag, "flag", *_decide(found))


def _decide(found: list[tuple[str, str, str]]) -> tuple[str, str, str | None]:
    for want in ("not-applied", "applied", "unknown"):
        hit = [f for f in found if f[0] == want]
        if hit:
            return want, "; ".join(f[1] for f in hit), hit[0][2]
    return "unknown", "", None


# -- environment ----------------------------------------------------------------------------


def _first(src: Sources, pattern: str) -> int | None:
    rx = re.compile(pattern)
    return next((i for i, ln in enumerate(src.lines, 1) if rx.search(ln)), None)


def _env_rule(
    rule: EnvEvidence, name: str, value: str | None, env: dict[str, str], src: Sources
) -> tuple[str, str, str | None] | None:
    if rule.echo is not None:
        if rule.requires is not None:
            var, wanted = rule.requires
            if env.get(var, "").upper() not in wanted:
                return "unknown", f"not shown unless {var}={wanted[0]}: {rule.hint}", None
        if _first(src, rule.active) is None:
            return "unknown", f"no {rule.active!r} line in the launch log (not started?)", None
        at = _first(src, rule.echo.format(name=re.escape(name)))
        if at is None:
            st = "applied" if value is None else "not-applied"
            return st, f"{rule.active} lines but none says {name} was set", "launch log"
        m = re.search(rule.echo.format(name=re.escape(name)), src.lines[at - 1])
        got = m.group(1) if m else ""
        ok = value is not None and got.lower() == value.lower()
        return ("applied" if ok else "not-applied"), src.line(at), "launch log"
    if rule.warns is not None and value is not None and rule.when in value:
        warn = _first(src, rule.warns)
        if warn is not None:
            return "not-applied", src.line(warn), "launch log"
        if _first(src, rule.active) is not None:
            return "applied", f"no {rule.warns!r} warning once the worker started", "launch log"
        return "unknown", "the launch log does not reach the check", None
    return None


def _env_item(spec: EngineSpec, name: str, cfg: ResolvedConfig, src: Sources) -> LeverItem:
    value = cfg.env.get(name)
    for rule in spec.evidence.env:
        if re.fullmatch(rule.names, name):
            got = _env_rule(rule, name, value, cfg.env, src)
            if got is not None:
                return LeverItem(f"env {name}", "env", *got)
    return LeverItem(f"env {name}", "env", "unknown", "no evidence source for this variable", None)


# -- files ----------------------------------------------------------------------------------


def _files_item(spec: EngineSpec, kind: str, inst: Installed | None, src: Sources) -> LeverItem:
    item = f"files {kind}"
    dirs = [d for d in (inst.data["dirs"] if inst else []) if d["kind"] == kind]
    if not dirs:
        return LeverItem(item, "files", "not-applied", "the files were not installed", None)
    if kind not in spec.evidence.files_in_log or src.log_path is None:
        return LeverItem(item, "files", "unknown", "the engine does not log its config files", None)
    d = dirs[0]
    names = {e["file"] for e in d["entries"]}
    parsed = [p for p in (parse_config_name(n) for n in names) if p is not None]
    an = analyze_log(src.log_path)
    covered: set[tuple[int | None, int | None, str]]
    if kind == "fp8_gemm":
        covered = {(p.n, p.k, p.device) for p in parsed}
        untuned: list[tuple[int | None, int | None, str, tuple[int, ...]]] = [
            (u.n, u.k, u.device, u.lines) for u in an.untuned_gemms
        ]
        tuned = [t for t in an.tuned if t.kernel == "fp8-gemm"]
        what = "W8A8 Block FP8"
    else:
        covered = {(p.e, p.n, p.device) for p in parsed}
        untuned = [(u.e, u.n, u.device, u.lines) for u in an.untuned_moe]
        tuned = [t for t in an.tuned if t.kernel == "moe"]
        what = "MoE"
    bad = [u for u in untuned if u[:3] in covered]
    if bad:
        return LeverItem(item, "files", "not-applied", src.line(bad[0][3][0]), "launch log")
    ours = [t for t in tuned if os.path.basename(t.path) in names]
    here = [t for t in ours if os.path.dirname(t.path) == d["dir"].rstrip("/")]
    if here:
        return LeverItem(item, "files", "applied", src.line(here[0].line), "launch log")
    if ours:
        t = ours[0]
        why = f"read from {os.path.dirname(t.path)}, not where inferlab installed it ({d['dir']})"
        return LeverItem(item, "files", "not-applied", f"{src.line(t.line)} — {why}", "launch log")
    if untuned:
        shapes = ", ".join("/".join(map(str, u[:2])) for u in untuned[:4])
        why = f"the engine ran {shapes} on its default {what} config; the files cover others"
        return LeverItem(item, "files", "not-applied", why, "launch log")
    why = f"no {what} kernel-config line in the launch log (another backend, or not logged)"
    return LeverItem(item, "files", "unknown", why, None)


# -- model --------------------------------------------------------------------------------


def _model_item(
    spec: EngineSpec, base: ResolvedConfig, cfg: ResolvedConfig, src: Sources
) -> LeverItem:
    """Another checkpoint (``[[config]] model``): the args dump's model field (vLLM ``model``,
    SGLang ``model_path``, the launcher's model flag) must name it."""
    try:
        flag = spec.launcher(cfg.launcher).model_flag or "--model"
    except ConfigError:  # an endpoint inferlab does not launch
        flag = "--model"
    ch = Change(flag, "changed", (base.model or "",), (cfg.model or "",))
    found = []
    names = spec.evidence.field_names(flag)
    if src.server_info is not None:
        got = _from_args(ch, names, src.server_info, "/get_server_info", True, "server_info")
        found += [got] if got is not None else []
    dump = _dump(spec, src)
    if dump is not None and not found:
        got = _from_args(ch, names, dump[0], dump[1], dump[2], "launch log")
        found += [got] if got is not None else []
    if not found:
        why = f"no args dump naming {field_name(flag)} in the launch log and no server info"
        return LeverItem("model", "model", "unknown", why, None)
    return LeverItem("model", "model", *_decide(found))


# -- all items ------------------------------------------------------------------------------


def check_levers(
    base: ResolvedConfig, cfg: ResolvedConfig, src: Sources, installed: Installed | None
) -> list[LeverItem]:
    """Every item of ``cfg``'s diff against ``base``, each with its evidence (scrubbed of
    secrets); ``[]`` for the baseline itself."""
    if cfg.name == base.name:
        return []
    spec = get_engine(cfg.engine)
    items = [_model_item(spec, base, cfg, src)] if cfg.model != base.model else []
    items += [_flag_item(spec, ch, src) for ch in spec.diff(base.args, cfg.args)]
    names = [k for k in cfg.env if base.env.get(k) != cfg.env[k]]
    names += [k for k in base.env if k not in cfg.env]
    items += [_env_item(spec, k, cfg, src) for k in names]
    kinds = sorted({k for k in cfg.files if base.files.get(k) != cfg.files[k]} | set(cfg.tune))
    items += [_files_item(spec, k, installed, src) for k in kinds]
    for it in items:
        it.evidence = scrub_text(it.evidence)[:400]
    return items


def record_levers(store: Store, config_id: int, items: list[LeverItem]) -> None:
    """Store the items as the config's ``lever`` verification (passed: none not applied)."""
    with store.transaction():
        store.add_verification(
            config_id,
            "lever",
            all(i.status != "not-applied" for i in items),
            {"items": [i.to_json() for i in items]},
        )


def item_lines(items: list[LeverItem] | list[dict[str, Any]]) -> list[str]:
    """``✓ --flag: evidence`` lines (from items or their stored JSON)."""
    out = []
    for it in items:
        d = it.to_json() if isinstance(it, LeverItem) else it
        mark = {"applied": "✓", "not-applied": "✗"}.get(str(d["status"]), "?")
        src = f" [{d['source']}]" if d.get("source") else ""
        out.append(f"{mark} {d['item']}: {d['status']} — {d['evidence']}{src}")
    return out
