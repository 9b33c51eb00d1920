"""Kernel-config files as a config's lever: installed into the engine's package for that config
only, and the directory restored exactly afterwards.

``files = { fp8_gemm = "tuned/" }`` names a directory of engine config files (checked at plan
time: it exists, every name is one the engine reads for that kind, every file is a JSON
object). Before the launch the files go where the engine reads them (``EngineSpec.config_dirs``
inside the package found in the engine's Python, locally or over ssh):

1. the target files are read (the originals, or "absent") and the directory's snapshot taken;
2. a pending manifest with those originals is written (fsynced) to the campaign's output
   directory — ``.files/<config>.json`` — and the originals are copied to ``.files/backup/``;
3. the files are written atomically (temporary file + rename) and checked by sha256;
4. the manifest (file, sha256, ``new`` | ``replaced``) is stored as a ``files`` analysis.

After the server stops (also after a failure or Ctrl-C) every file is put back as it was and
new ones are removed (a directory inferlab created is removed too); the directory is compared
with the snapshot of step 1 and the result stored. A pending manifest left by a runner that was
killed is restored by the next ``run``/``up`` before anything else (``recover``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict, TypeGuard

from inferlab.campaign.context import Installed, Manifest, ManifestDir, ManifestEntry
from inferlab.campaign.parts.fileset import FileSet, check_files, config_dir, config_extra
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.errors import ConfigError
from inferlab.server.files import file_op
from inferlab.store import Store

__all__ = [
    "FileSet",
    "Rows",
    "check_files",
    "config_dir",
    "config_extra",
    "install",
    "pending_manifests",
    "recover",
    "restore",
    "target_dir",
]

FORMAT = "inferlab.files/1"


class Rows(Protocol):
    """Where ``install`` and ``restore`` record their ``files`` analyses: the store, or on a
    Ray node a recorder whose rows the driver stores (``cluster.nodefiles``)."""

    def transaction(self) -> AbstractContextManager[Any]: ...

    def add_analysis(
        self,
        kind: str,
        name: str,
        data: Mapping[str, Any],
        *,
        campaign: str | None = None,
        config_id: int | None = None,
    ) -> int: ...


# -- where the engine reads them ----------------------------------------------------------


def _python(cfg: ResolvedConfig) -> str:
    return cfg.python or sys.executable


def target_dir(cfg: ResolvedConfig, kind: str) -> str:
    """The directory on the engine's host where ``cfg``'s engine reads ``kind`` files (of the
    installed release, where the directory moved between releases)."""
    spec = get_engine(cfg.engine)
    cd = config_dir(spec, kind)
    got = file_op(
        _python(cfg),
        {"op": "locate", "package": cd.package, "distribution": cd.package},
        host=cfg.host,
        pythonpath=cfg.env.get("PYTHONPATH"),  # an engine installed with --target: its own path
    )
    if not got.get("dir"):
        raise ConfigError(
            f"engine.python: {cd.package} is not installed in {_python(cfg)}"
            + ("" if cfg.is_local else f" on {cfg.host}")
            + f" (config {cfg.name!r} installs {kind} files into its package)"
        )
    d = str(got["dir"]).rstrip("/") + "/" + cd.path_for(got.get("version"))
    if cd.triton_subdirs and got.get("triton"):
        d += "/triton_" + str(got["triton"]).split("+")[0].replace(".", "_")
    return d


# -- install and restore ------------------------------------------------------------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_manifest(path: Path, data: Manifest) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _plan_dir(cfg: ResolvedConfig, fs: FileSet, backup: Path) -> ManifestDir:
    d = target_dir(cfg, fs.kind)
    got = file_op(_python(cfg), {"op": "read", "dir": d, "names": sorted(fs.files)}, host=cfg.host)
    entries: list[ManifestEntry] = []
    for name, text in sorted(fs.files.items()):
        orig = got["files"].get(name)
        entries.append(
            {
                "file": name,
                "sha256": _sha(text),
                "action": "new" if orig is None else "replaced",
                "original_sha256": None if orig is None else _sha(orig),
                "original": orig,
            }
        )
        if orig is not None:
            (backup / fs.kind / name).parent.mkdir(parents=True, exist_ok=True)
            (backup / fs.kind / name).write_text(orig, encoding="utf-8")
    return {
        "kind": fs.kind,
        "dir": d,
        "source": str(fs.source),
        "created": not got["exists"],
        "before": got["snapshot"],
        "entries": entries,
        "written": False,
    }


def install(
    out_dir: Path,
    campaign: str,
    cfg: ResolvedConfig,
    *,
    owner: str = "run",
    store: Rows | None = None,
    config_id: int | None = None,
    file_sets: list[FileSet] | None = None,
) -> Installed | None:
    """Install ``cfg``'s files (see the module docstring); None when it has none. On any
    failure what was written is restored before the error is raised."""
    sets = file_sets if file_sets is not None else check_files(cfg, cfg.name)
    if not sets:
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out_dir / ".files" / f"{cfg.name}.json"
    backup = out_dir / ".files" / "backup" / f"{cfg.name}-{stamp}"
    data: Manifest = {
        "format": FORMAT,
        "campaign": campaign,
        "config": cfg.name,
        "host": cfg.host,
        "python": _python(cfg),
        "owner": owner,
        "pid": os.getpid(),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "backup": str(backup),
        "dirs": [_plan_dir(cfg, fs, backup) for fs in sets],
    }
    inst = Installed(path, data)
    _write_manifest(path, data)  # before anything changes: a crash from here on is undone
    try:
        for d, fs in zip(data["dirs"], sets):
            d["written"] = True
            _write_manifest(path, data)
            got = file_op(
                data["python"],
                {"op": "write", "dir": d["dir"], "files": fs.files, "mkdir": d["created"]},
                host=cfg.host,
            )
            bad = [e["file"] for e in d["entries"] if got["snapshot"].get(e["file"]) != e["sha256"]]
            if bad:
                raise ConfigError(f"{d['dir']}: {', '.join(bad)} did not read back as written")
    except BaseException:
        restore(inst, store=store, config_id=config_id)
        raise
    if store is not None:
        with store.transaction():
            for d in data["dirs"]:
                store.add_analysis(
                    "files",
                    f"{cfg.name}:{d['kind']}",
                    _summary(data, d, "installed"),
                    campaign=campaign,
                    config_id=config_id,
                )
    return inst


def _summary(data: Manifest, d: ManifestDir, state: str) -> dict[str, Any]:
    """The ``files`` analysis of one directory (``store.models.FilesManifest``), as written."""
    return {
        "state": state,
        "kind": d["kind"],
        "dir": d["dir"],
        "source": d.get("source"),
        "host": data["host"],
        "python": data["python"],
        "config": data["config"],
        "created_dir": d["created"],
        "before": d["before"],
        "files": [{k: v for k, v in e.items() if k != "original"} for e in d["entries"]],
    }


class RestoredDir(TypedDict):
    """One directory put back: the files rewritten and removed, and which differ from the
    snapshot before (``exact``: none)."""

    dir: str
    restored: list[str]
    removed: list[str]
    exact: bool
    differs: list[str]


@dataclass
class RestoreReport:
    """How a directory was put back: ``exact`` when it equals the snapshot taken before."""

    config: str
    dirs: list[RestoredDir]

    @property
    def exact(self) -> bool:
        return all(d["exact"] for d in self.dirs)

    def line(self) -> str:
        n = sum(len(d["restored"]) + len(d["removed"]) for d in self.dirs)
        where = ", ".join(d["dir"] for d in self.dirs)
        if self.exact:
            return f"{self.config}: files restored ({n} file(s)) in {where}: as before"
        diff = "; ".join(
            f"{d['dir']}: {', '.join(d['differs'])}" for d in self.dirs if d["differs"]
        )
        return f"{self.config}: files restored ({n} file(s)), but differ from before: {diff}"


def restore(
    inst: Installed, *, store: Rows | None = None, config_id: int | None = None
) -> RestoreReport:
    """Put every file of a pending manifest back (originals rewritten, new files removed, a
    created directory removed), compare with the snapshot taken before, drop the manifest."""
    data = inst.data
    rep = RestoreReport(str(data["config"]), [])
    for d in reversed(data["dirs"]):
        if not d.get("written"):
            rep.dirs.append(
                {"dir": d["dir"], "restored": [], "removed": [], "exact": True, "differs": []}
            )
            continue
        put = {e["file"]: e["original"] for e in d["entries"] if e["original"] is not None}
        gone = [e["file"] for e in d["entries"] if e["original"] is None]
        got = file_op(
            str(data["python"]),
            {"op": "write", "dir": d["dir"], "files": put, "delete": gone, "rmdir": d["created"]},
            host=str(data["host"]),
        )
        now, before = got["snapshot"], d["before"]
        differs = sorted(k for k in set(now) | set(before) if now.get(k) != before.get(k))
        rep.dirs.append(
            {
                "dir": d["dir"],
                "restored": sorted(put),
                "removed": gone,
                "exact": not differs,
                "differs": differs,
            }
        )
    if store is not None:
        with store.transaction():
            for d, r in zip(reversed(data["dirs"]), rep.dirs):
                summary = _summary(data, d, "restored")
                summary["restore"] = r
                store.add_analysis(
                    "files",
                    f"{data['config']}:{d['kind']}",
                    summary,
                    campaign=str(data["campaign"]),
                    config_id=config_id,
                )
    inst.path.unlink(missing_ok=True)
    return rep


def pending_manifests(out_dir: Path) -> list[Installed]:
    """Manifests in the campaign's output directory that were never restored."""
    out = []
    for p in sorted((out_dir / ".files").glob("*.json")):
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if _is_manifest(data):
            out.append(Installed(p, data))
    return out


def _is_manifest(data: object) -> TypeGuard[Manifest]:
    """A manifest this version wrote: the JSON object's ``format`` is ``FORMAT``."""
    return isinstance(data, dict) and data.get("format") == FORMAT


def recover(
    out_dir: Path,
    store: Store | None,
    *,
    live: Callable[[Installed], bool] = lambda inst: False,
) -> list[str]:
    """Restore every pending manifest left by a runner that died (``live`` says which belong
    to a server that is meant to run, e.g. one ``inferlab up`` left); one line each."""
    lines = []
    for inst in pending_manifests(out_dir):
        if live(inst):
            lines.append(
                f"{inst.config}: its files stay installed (its server, from inferlab up, still "
                "runs; inferlab down restores them)"
            )
            continue
        rep = restore(inst, store=store)
        lines.append(f"pending files of a runner that died — {rep.line()}")
    return lines
