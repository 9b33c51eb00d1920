"""File operations in an engine's installed package, run by the engine's own Python.

One stdlib-only script (no syntax newer than Python 3.8) does the work where the engine lives:
locally as ``PYTHON -c SCRIPT``, on an ssh host as ``ssh HOST PYTHON -c SCRIPT`` (one argv,
``shlex``-quoted), the request as JSON on stdin and the answer as one marked JSON line. So the
same code finds the package, reads, writes and restores on this host or another one; the
driver keeps every byte it needs to undo a change (the manifests of ``campaign.parts.files``).

Operations (``request["op"]``):

- ``locate``: ``{"package", "distribution"}`` → ``{"dir"}`` (realpath, as the engines resolve
  ``__file__``), ``{"triton"}`` (the installed Triton version, or None), ``{"version"}`` (the
  version of ``distribution``, or None);
- ``read``: ``{"dir", "names"}`` → ``{"exists", "snapshot": {relative name: sha256}, "files":
  {name: text or None}}`` (the snapshot covers the directory and its direct subdirectories);
- ``write``: ``{"dir", "files": {name: text}, "delete": [name], "mkdir": bool, "rmdir": bool}``
  → ``{"snapshot"}``; every file is written to a temporary file in its directory, fsynced and
  renamed (atomic), deletions are of named files only, ``rmdir`` removes the (then empty)
  directory and ``mkdir`` creates it (its parent must exist).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from typing import Any

from inferlab.config.hosts import is_local_host
from inferlab.errors import ConfigError

__all__ = ["MARKER", "SCRIPT", "file_op", "file_op_argv"]

MARKER = "INFERLAB-FILES "

SCRIPT = r"""
import hashlib, importlib.util, json, os, sys, tempfile
req = json.loads(sys.stdin.read())
out = {}

def snapshot(d):
    snap = {}
    if not os.path.isdir(d):
        return snap
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            with open(p, "rb") as f:
                snap[name] = hashlib.sha256(f.read()).hexdigest()
        elif os.path.isdir(p):
            for sub in sorted(os.listdir(p)):
                q = os.path.join(p, sub)
                if os.path.isfile(q):
                    with open(q, "rb") as f:
                        snap[name + "/" + sub] = hashlib.sha256(f.read()).hexdigest()
    return snap

def write_atomic(path, text):
    d = os.path.dirname(path)
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else None
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

try:
    op = req["op"]
    if op == "locate":
        spec = importlib.util.find_spec(req["package"])
        locs = list(spec.submodule_search_locations or []) if spec is not None else []
        out["dir"] = os.path.realpath(locs[0]) if locs else None
        from importlib import metadata
        for key, dist in (("triton", "triton"), ("version", req.get("distribution"))):
            try:
                out[key] = metadata.version(dist) if dist else None
            except Exception:
                out[key] = None
    elif op == "read":
        d = req["dir"]
        out["exists"] = os.path.isdir(d)
        out["snapshot"] = snapshot(d)
        files = {}
        for name in req.get("names", []):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                with open(p, encoding="utf-8") as f:
                    files[name] = f.read()
            else:
                files[name] = None
        out["files"] = files
    elif op == "write":
        d = req["dir"]
        if req.get("mkdir") and not os.path.isdir(d):
            os.mkdir(d)
        for name, text in sorted(req.get("files", {}).items()):
            write_atomic(os.path.join(d, name), text)
        for name in req.get("delete", []):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                os.unlink(p)
        if req.get("rmdir") and os.path.isdir(d) and not os.listdir(d):
            os.rmdir(d)
        out["snapshot"] = snapshot(d)
    else:
        out["error"] = "unknown op %r" % (op,)
except Exception as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, exc)
print("INFERLAB-FILES " + json.dumps(out))
"""


def file_op_argv(python: str, host: str = "local", pythonpath: str | None = None) -> list[str]:
    """The argv that runs the script in ``python`` on ``host`` (``local`` or an ssh target);
    ``pythonpath``: the engine's own import path (its config's ``PYTHONPATH``)."""
    if is_local_host(host):
        return [python, "-c", SCRIPT]
    pre = ["env", f"PYTHONPATH={pythonpath}"] if pythonpath else []
    remote = shlex.join([*pre, python, "-c", SCRIPT])
    return ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", host, remote]


def file_op(
    python: str,
    request: dict[str, Any],
    *,
    host: str = "local",
    timeout_s: float = 60.0,
    pythonpath: str | None = None,
) -> dict[str, Any]:
    """Run one operation (see the module docstring) in the engine's Python, with the engine's
    own ``pythonpath`` when it has one; a failure to run it, or an error it reports, is a
    ``ConfigError`` naming the Python and the operation."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    where = python if is_local_host(host) else f"{host}:{python}"
    what = f"{request.get('op')} {request.get('dir') or request.get('package') or ''}".strip()
    try:
        proc = subprocess.run(
            file_op_argv(python, host, pythonpath),
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env=env,  # the engine's own packages only: nothing of ours on its path
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{where}: {what}: no answer within {timeout_s:.0f} s") from None
    except OSError as exc:
        raise ConfigError(
            f"engine.python: {where} cannot be run ({exc.strerror or exc}); expected the "
            "Python the engine is installed in"
        ) from None
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith(MARKER)), None)
    if line is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ConfigError(
            f"engine.python: {where} did not run the file operation ({what}): exit "
            f"{proc.returncode}, {tail[0][:200]!r}"
        )
    data: dict[str, Any] = json.loads(line[len(MARKER) :])
    if "error" in data:
        raise ConfigError(f"{where}: {what}: {data['error']}")
    return data
