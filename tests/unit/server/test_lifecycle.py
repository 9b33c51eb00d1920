"""Server lifecycle with real subprocesses: launch, readiness, classified failures, stop."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from inferlab.errors import LaunchError
from inferlab.server import LaunchSpec, free_port, launch, log_tail, stop, wait_ready

HEALTH_SERVER = textwrap.dedent(
    """
    import http.server, signal, sys, time
    if "--ignore-term" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    delay = float(sys.argv[sys.argv.index("--delay") + 1]) if "--delay" in sys.argv else 0
    time.sleep(delay)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        def log_message(self, *a): pass
    print("starting on", sys.argv[1], flush=True)
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
    """
)


def spec(tmp: Path, argv: Sequence[str], port: int, **kw: object) -> LaunchSpec:
    return LaunchSpec(
        name="t",
        argv=list(argv),
        env={"MY_FLAG": "1"},
        port=port,
        log_path=tmp / "server.log",
        health_url=f"http://127.0.0.1:{port}/health",
        **kw,
    )  # type: ignore[arg-type]


def script(tmp: Path) -> str:
    p = tmp / "srv.py"
    p.write_text(HEALTH_SERVER)
    return str(p)


def test_launch_ready_stop(tmp_path: Path) -> None:
    port = free_port()
    s = launch(
        spec(
            tmp_path,
            [sys.executable, script(tmp_path), str(port), "--delay", "0.5"],
            port,
            stop_grace_s=5,
        )
    )
    took = wait_ready(s)
    assert 0.4 < took < 20
    assert os.getpgid(s.pid) == s.pid  # its own process group
    rep = stop(s)
    assert rep.signal == "SIGTERM" and rep.port_free
    assert rep.gpu_check.startswith("skipped")
    log = (tmp_path / "server.log").read_text()
    assert "# inferlab launch t:" in log and f"starting on {port}" in log


def test_server_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    port = free_port()
    s = launch(
        spec(
            tmp_path,
            [sys.executable, script(tmp_path), str(port), "--ignore-term"],
            port,
            stop_grace_s=1,
        )
    )
    wait_ready(s)
    rep = stop(s)
    assert rep.signal == "SIGKILL" and rep.port_free
    assert any("ignored SIGTERM" in n for n in rep.notes)


def test_stopping_a_server_this_process_started_but_does_not_wait_for(tmp_path: Path) -> None:
    """``down`` in the process that ran ``up`` (a library caller, an in-process test): the
    server dies a zombie child of this process, which is no straggler to wait for."""
    from inferlab.server.stop import _group_pids, _zombie, stop_group

    port = free_port()
    s = launch(spec(tmp_path, [sys.executable, script(tmp_path), str(port)], port))
    wait_ready(s)
    rep = stop_group(s.pid, port, grace_s=5)  # by pid, as `down` does: no reap
    assert rep.signal == "SIGTERM" and rep.port_free
    assert _zombie(s.pid) is True and _group_pids(s.pid) == set()
    assert rep.seconds < 10  # not the 10 s the straggler loop gives a group that stays
    assert s.proc.wait(5) is not None


def test_exit_before_ready_is_classified_with_log_tail(tmp_path: Path) -> None:
    port = free_port()
    code = "print('OSError: [Errno 98] Address already in use', flush=True); raise SystemExit(1)"

    def fatal(lines: Sequence[str]) -> tuple[str, str, str] | None:
        for line in lines:
            if "Address already in use" in line:
                return ("address-in-use", line, "pick another --port or stop the other server")
        return None

    s = launch(spec(tmp_path, [sys.executable, "-c", code], port))
    with pytest.raises(LaunchError) as ei:
        wait_ready(s, fatal=fatal)
    e = ei.value
    assert e.kind == "address-in-use" and "another --port" in (e.remedy or "")
    assert any("Address already in use" in t for t in e.tail)


def test_never_ready_times_out(tmp_path: Path) -> None:
    port = free_port()
    s = launch(
        spec(
            tmp_path,
            [sys.executable, "-c", "import time; print('loading'); time.sleep(60)"],
            port,
            ready_timeout_s=1.5,
        )
    )
    t0 = time.monotonic()
    with pytest.raises(LaunchError, match="not ready after 1.5 s") as ei:
        wait_ready(s)
    assert time.monotonic() - t0 < 10
    assert ei.value.kind == "ready-timeout" and "loading" in "\n".join(ei.value.tail)
    assert s.proc.wait(5) is not None  # nothing left running


def test_missing_executable(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="cannot start"):
        launch(spec(tmp_path, ["/nonexistent/llama-server"], free_port()))


def test_ssh_host_that_refuses(tmp_path: Path) -> None:
    port = free_port()
    s = launch(
        spec(
            tmp_path,
            ["vllm", "serve", "m; rm -rf /"],
            port,
            host=f"ssh://nobody@127.0.0.1:{free_port()}",
            ready_timeout_s=30,
        )
    )
    with pytest.raises(LaunchError) as ei:
        wait_ready(s)
    assert ei.value.kind == "ssh", ei.value
    assert s.proc.poll() is not None  # ssh exited: nothing left running
    text = "\n".join(log_tail(tmp_path / "server.log"))
    assert "'m; rm -rf /'" in text  # the config value travelled quoted, never as shell code


def test_after_a_ctrl_c_the_grace_is_short_whatever_the_config_says(tmp_path: Path) -> None:
    from inferlab import interrupts
    from inferlab.server.stop import INTERRUPT_GRACE_S

    port = free_port()
    argv = [sys.executable, script(tmp_path), str(port), "--ignore-term"]
    s = launch(spec(tmp_path, argv, port, stop_grace_s=600))
    wait_ready(s)
    interrupts.note()
    try:
        rep = stop(s)
    finally:
        interrupts.clear()
    assert rep.signal == "SIGKILL" and rep.port_free
    assert f"ignored SIGTERM for {INTERRUPT_GRACE_S:g} s: killed" in rep.notes  # not 600 s


def test_a_ctrl_c_during_a_stop_kills_the_group_at_once_then_interrupts(tmp_path: Path) -> None:
    import signal
    import threading

    from inferlab import interrupts
    from inferlab.server.stop import _group_pids

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("a signal handler is set on the main thread only")
    port = free_port()
    argv = [sys.executable, script(tmp_path), str(port), "--ignore-term"]
    s = launch(spec(tmp_path, argv, port, stop_grace_s=600))
    wait_ready(s)
    before = signal.getsignal(signal.SIGINT)
    ctrl_c = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    ctrl_c.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            stop(s)  # its grace is 600 s: only the Ctrl-C ends it
        assert interrupts.seen()
    finally:
        ctrl_c.cancel()
        interrupts.clear()
    assert s.proc.poll() is not None and _group_pids(s.pid) == set()
    assert signal.getsignal(signal.SIGINT) is before  # put back
