"""A stored recon (``Recon.to_dict()``) as plain tables: lists of rows of strings that the
terminal, Markdown and HTML renderers share, so the three never disagree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ReconTable", "recon_tables"]

_CHOICES_SHOWN = 6
_REASONS = {
    "default": "default config",
    "down": "no _down config",
    "fallback": "other Triton's config",
}


@dataclass(frozen=True)
class ReconTable:
    """A titled table; ``note`` replaces the rows when there are none."""

    key: str
    title: str
    columns: tuple[str, ...]
    rows: Sequence[tuple[str, ...]] = ()
    note: str | None = None
    caption: str | None = None


def _s(x: Any) -> str:
    return "–" if x is None or x == "" else str(x)


def _gpus(d: Mapping[str, Any]) -> ReconTable:
    rows = []
    for g in d.get("gpus") or []:
        procs = ", ".join(
            f"{p.get('name') or '?'}[{p['pid']}] {p.get('used_mib', 0)} MiB"
            for p in g.get("processes") or []
        )
        rows.append(
            (
                _s(g.get("index")),
                _s(g.get("name")),
                f"{_s(g.get('memory_used_mib'))} / {_s(g.get('memory_total_mib'))}",
                f"{_s(g.get('sm_clock_mhz'))} / {_s(g.get('sm_clock_max_mhz'))}",
                procs or "none",
            )
        )
    nvml = d.get("nvml") or {}
    return ReconTable(
        "gpus",
        "GPUs (NVML)",
        ("#", "name", "memory used / total (MiB)", "SM clock now / max (MHz)", "processes"),
        rows,
        note=None if rows else _s(nvml.get("note") or "no GPU"),
        caption=f"driver {_s(nvml.get('driver'))}, CUDA driver API {_s(nvml.get('cuda_driver'))}"
        if rows
        else None,
    )


def _software(d: Mapping[str, Any]) -> ReconTable:
    rows: list[tuple[str, str]] = [("host", _s(d.get("host")))]
    py, tc, eng, repo = d.get("python"), d.get("torch"), d.get("engine"), d.get("repo")
    if py:
        rows.append(("python", f"{py['executable']} ({py['version']})"))
    if tc:
        torch = _s(tc.get("torch"))
        if tc.get("torch"):
            torch += (
                f" · CUDA {_s(tc.get('cuda'))} · cuDNN {_s(tc.get('cudnn'))}"
                f" · NCCL {_s(tc.get('nccl'))}"
                f" · GPUs visible {tc.get('device_count') if tc.get('cuda_available') else 0}"
            )
        rows.append(("torch", torch))
        rows.append(("triton", _s(tc.get("triton"))))
    if eng:
        dist = ", ".join(eng.get("distributions") or [])
        rows.append(
            ("engine", f"{eng['name']} {_s(eng.get('version'))}" + (f" ({dist})" if dist else ""))
        )
        rows.append(("engine package", _s(eng.get("package_dir"))))
        if eng.get("triton_subdir"):
            rows.append(("MoE configs read from", eng["triton_subdir"]))
        h = eng.get("help")
        if h and h.get("argv"):
            rows.append(
                (
                    "--help",
                    f"{' '.join(h['argv'][1:])}: {len(h.get('flags') or [])} flags "
                    f"in {h.get('seconds', 0):.1f} s",
                )
            )
    if not py:
        rows.append(("engine", "not inspected (pass --engine and/or --python)"))
    if repo:
        rows.append(
            (
                f"checkout ({d.get('repo_source')})",
                f"{repo['path']} @ {repo['commit'][:12]} {repo['commit_date']}"
                + (" (dirty)" if repo.get("dirty") else ""),
            )
        )
        rows.append(("branch", f"{_s(repo.get('branch'))} → upstream {_s(repo.get('upstream'))}"))
        if repo.get("behind") is not None:
            when = (
                "fetched now"
                if repo.get("fetched")
                else f"as of the last fetch ({_s(repo.get('last_fetch'))}); --fetch to update"
            )
            rows.append(
                ("commits behind upstream", f"{repo['behind']} (ahead {repo['ahead']}), {when}")
            )
    return ReconTable("software", "Software", ("item", "value"), rows)


def _flag_text(f: Mapping[str, Any]) -> str:
    name = str(f["name"])
    if f.get("negatable"):
        name += " / --no-" + name[2:]
    ch = list(f.get("choices") or [])
    if ch:
        more = f",…+{len(ch) - _CHOICES_SHOWN}" if len(ch) > _CHOICES_SHOWN else ""
        name += " {" + ",".join(ch[:_CHOICES_SHOWN]) + more + "}"
    return name


def _flags(d: Mapping[str, Any]) -> ReconTable | None:
    from inferlab.recon.flags import FLAG_FAMILIES

    eng = d.get("engine") or {}
    h = eng.get("help")
    if not h:
        return None
    fams: Mapping[str, list[Mapping[str, Any]]] = h.get("families") or {}
    order = [k for k in FLAG_FAMILIES if k in fams] + [k for k in fams if k not in FLAG_FAMILIES]
    rows = [
        (
            FLAG_FAMILIES[k].title if k in FLAG_FAMILIES else k,
            "\n".join(_flag_text(f) for f in fams[k]) or "none",
        )
        for k in order
    ]
    return ReconTable(
        "flags",
        f"Flags {eng['name']} offers",
        ("family", "flags (choices)"),
        rows if h.get("flags") else [],
        note=None
        if h.get("flags")
        else "--help gave no flags: " + "; ".join(h.get("errors") or []),
        caption="parsed from the engine's own --help; families are regexes on flag names "
        "(inferlab.recon.flags.FLAG_FAMILIES)",
    )


def _tuned(d: Mapping[str, Any]) -> ReconTable | None:
    dirs: Sequence[Mapping[str, Any]] = d.get("tuned_dirs") or []
    if not dirs:
        return None
    devices = list(d.get("devices") or [])
    per_dev: Mapping[str, Mapping[str, list[str]]] = d.get("tuned_for_devices") or {}
    rows = []
    for t in dirs:
        row = [
            t["kind"],
            t["path"],
            f"{t['files']} ({t['devices']} GPUs)" if t["exists"] else "missing",
        ]
        row += [str(len((per_dev.get(dev) or {}).get(t["kind"], []))) for dev in devices]
        rows.append(tuple(row))
    return ReconTable(
        "tuned",
        "Tuned kernel configs shipped",
        ("kind", "directory", "files (GPU models)", *(f"for {dev}" for dev in devices)),
        rows,
        caption=None
        if devices
        else "no local GPU: pass --device NAME (e.g. NVIDIA_H200) to count the files for a GPU",
    )


def _needed(d: Mapping[str, Any]) -> ReconTable | None:
    if not d.get("log"):
        return None
    rows = []
    for n in d.get("needed") or []:
        if n.get("present") is None:
            here = "unknown (no engine config directory searched)"
        elif n["present"]:
            here = "yes: " + ", ".join(n["files"])
            if n.get("in_current_subdir") is False:
                here += f" (not in {n['current_subdir']}: a fallback)"
        else:
            here = "NO"
        rows.append(
            (
                n["kind"],
                n.get("shape") or "",
                n["device"],
                _s(n.get("dtype")),
                "×".join(str(x) for x in n["block_shape"]) if n.get("block_shape") else "–",
                _REASONS.get(n.get("reason") or "default", str(n.get("reason"))),
                ", ".join(str(x) for x in n["lines"][:5]) + (" …" if len(n["lines"]) > 5 else ""),
                here,
            )
        )
    return ReconTable(
        "needed",
        "Shapes the log ran on a default config vs tuned files here",
        (
            "kind",
            "shape",
            "device",
            "dtype",
            "block",
            "log says",
            "log lines",
            "tuned file in this engine?",
        ),
        rows,
        note=None if rows else f"{d['log']}: no default-config (untuned) kernel warnings",
        caption=f"from {d['log']}; 'NO': this engine would run that shape untuned too "
        "(FP8 GEMM: inferlab tune fp8-gemm --from-log LOG; fused MoE: the engine's own tuning "
        "script)",
    )


def _env(d: Mapping[str, Any]) -> ReconTable:
    rows = [(g, k, v) for g, kv in (d.get("env") or {}).items() for k, v in kv.items()]
    return ReconTable(
        "env",
        "NCCL, CUDA and engine variables in effect",
        ("group", "variable", "value"),
        rows,
        note=None if rows else "none set (every NCCL / CUDA / engine variable at its default)",
        caption="values of secret-looking names are redacted",
    )


def _server(d: Mapping[str, Any]) -> ReconTable | None:
    srv = d.get("server")
    if not srv:
        return None
    rows = []
    for e in srv["endpoints"]:
        says = e.get("error") or ", ".join(f"{k}={v}" for k, v in (e.get("summary") or {}).items())
        ms = f"{e['ms']:.1f}" if e.get("ms") is not None else "–"
        rows.append((e["path"], _s(e.get("status")), ms, says))
    return ReconTable(
        "server",
        f"Server {srv['url']}",
        ("path", "status", "ms", "says"),
        rows,
        caption="ms: wall time of one GET, connect included",
    )


def _errors(d: Mapping[str, Any]) -> ReconTable | None:
    errs = d.get("errors") or []
    if not errs:
        return None
    return ReconTable("errors", "Not found out", ("what",), [(e,) for e in errs])


def recon_tables(data: Mapping[str, Any]) -> list[ReconTable]:
    """The tables of one recon, in display order (absent parts are left out)."""
    out: list[ReconTable | None] = [
        _gpus(data),
        _software(data),
        _flags(data),
        _tuned(data),
        _needed(data),
        _env(data),
        _server(data),
        _errors(data),
    ]
    return [t for t in out if t is not None]
