"""Test helper: a page opened in headless Chromium (skipped where none is installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def browser_dom(html: Path, tmp_path: Path) -> str:
    """Open ``html`` in headless Chromium: a screenshot with no console error, then the DOM."""
    exe = chromium()
    if exe is None:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    png = tmp_path / "shot.png"
    base = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,2000",
    ]
    env = {**os.environ, "HOME": str(tmp_path)}
    shot = subprocess.run(
        [*base, f"--user-data-dir={tmp_path / 'p1'}", f"--screenshot={png}", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    assert png.exists() and png.stat().st_size > 20_000, shot.stderr[-2000:]
    console = [
        line
        for line in shot.stderr.splitlines()
        if "CONSOLE" in line or "Uncaught" in line or "Refused to" in line
    ]
    assert not console, console
    dom = subprocess.run(
        [*base, f"--user-data-dir={tmp_path / 'p2'}", "--dump-dom", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    assert not [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    return dom.stdout
