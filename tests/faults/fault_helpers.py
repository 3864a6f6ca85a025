"""Running execmode and small scripts in child processes for the fault tests."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
LOOP = os.path.join(SCRIPTS, "ops_forever.py")


def child_env(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_python(code: str, timeout: float = 120, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env(**env), timeout=timeout, cwd=ROOT)


def run_execmode(*args, timeout: float = 120, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "execmode", *args], capture_output=True,
                          text=True, env=child_env(**env), timeout=timeout, cwd=ROOT)


def c_compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "") or "cc") or shutil.which("gcc")


def start_cli(tmp_path, command: str, mode: str = "ops"):
    """The CLI running ops_forever.py, once the script is in its loop: (proc, script pid,
    session path)."""
    session = tmp_path / "run.emsession"
    pid_file = tmp_path / "script.pid"
    stderr = open(tmp_path / "stderr.txt", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "execmode", command, "--session", str(session), LOOP,
         str(pid_file), mode], stdout=subprocess.PIPE, stderr=stderr, text=True,
        env=child_env(), cwd=str(tmp_path))
    stderr.close()
    for line in proc.stdout:  # the script prints "started" once its pid file is written
        if line.strip() == "started":
            break
    else:
        pytest.fail(f"the script did not start: {(tmp_path / 'stderr.txt').read_text()}")
    return proc, int(pid_file.read_text()), session


def wait_gone(pid: int, timeout: float) -> bool:
    """True once ``pid`` has ended (a zombie counts: it runs nothing and its parent may be
    an init that reaps late)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):
        fd = None
    deadline = time.monotonic() + timeout
    if fd is not None:
        try:
            return bool(select.select([fd], [], [], timeout)[0])
        finally:
            os.close(fd)
    while time.monotonic() < deadline:  # no pidfd: poll /proc
        if not _running(pid):
            return True
        time.sleep(0.01)
    return not _running(pid)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
