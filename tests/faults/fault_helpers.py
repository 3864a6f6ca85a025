"""Running execmode and small scripts in child processes for the fault tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
