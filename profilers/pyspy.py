"""py-spy integration: sample a running process, then fold the samples into the session.

A :class:`Sampler` runs ``py-spy record --pid PID`` next to the process it samples (the
runner samples itself, so the script starts the same way with or without py-spy, and a
py-spy that cannot attach never stops the script). ``--nonblocking`` by default: py-spy
then reads the process without pausing it (blocking mode is known to stall processes with
many native threads); ``native=True`` adds C frames, which py-spy only supports in
blocking mode. Output is py-spy's ``raw`` (folded stacks) or ``speedscope`` format;
both are parsed here, neither is ever evaluated.

Where py-spy cannot run, :class:`PySpyStatus` says exactly why and what to do; the
recording continues without samples.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sysconfig
import tempfile
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

DEFAULT_RATE = 100
FORMATS = ("raw", "speedscope")
_START_TIMEOUT_S = 10.0
_STOP_TIMEOUT_S = 30.0
_CAP_SYS_PTRACE = 19
_PERMISSION_TEXT = "Permission Denied"


@dataclass
class PySpyStatus:
    """What happened to py-spy, in words a user can act on. Stored in meta as "pyspy"."""

    status: str  # "off", "sampling", "ok", "unavailable", "failed"
    reason: str = ""
    advice: str = ""
    samples: int = 0
    rate: int = DEFAULT_RATE
    native: bool = False
    format: str = "raw"
    command: list = field(default_factory=list)
    output: list = field(default_factory=list)  # py-spy's own last lines, for diagnosis

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def message(self) -> str:
        """One line for a terminal: the status, the reason and the advice."""
        if self.status == "ok":
            return f"py-spy: {self.samples} samples at {self.rate} Hz"
        text = f"py-spy {self.status}"
        if self.reason:
            text += f": {self.reason}"
        if self.advice:
            text += f". {self.advice}"
        return text


class FoldedStack(NamedTuple):
    """Samples that share one stack in one thread."""

    thread: str
    frames: tuple  # "function (file:line)", root first
    count: int


def find_pyspy() -> str | None:
    """The py-spy executable: $EXECMODE_PYSPY, then PATH, then this Python's scripts folder."""
    configured = os.environ.get("EXECMODE_PYSPY")
    if configured:
        return configured if os.path.isfile(configured) or shutil.which(configured) else None
    found = shutil.which("py-spy")
    if found:
        return found
    candidate = Path(sysconfig.get_paths()["scripts"]) / "py-spy"
    return str(candidate) if candidate.is_file() else None


class Sampler:
    """``py-spy record`` against one process, started and stopped from Python."""

    def __init__(self, pid: int | None = None, *, rate: int = DEFAULT_RATE,
                 native: bool = False, fmt: str = "raw"):
        if fmt not in FORMATS:
            raise ValueError(f"py-spy format must be one of {FORMATS}, got {fmt!r}")
        if not isinstance(rate, int) or rate <= 0:
            raise ValueError(f"the py-spy rate must be a positive number of Hz, got {rate!r}")
        self.pid = os.getpid() if pid is None else pid
        self.status = PySpyStatus("off", rate=rate, native=native, format=fmt)
        self._proc: subprocess.Popen | None = None
        self._lines: list[str] = []
        self._started = threading.Event()
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._out: Path | None = None

    def start(self, timeout: float = _START_TIMEOUT_S) -> PySpyStatus:
        """Launch py-spy and wait until it samples (or says why it can't)."""
        st = self.status
        exe = find_pyspy()
        if exe is None:
            return self._give_up("unavailable", "the py-spy executable was not found",
                                 _missing_advice())
        self._tmp = tempfile.TemporaryDirectory(prefix="execmode-pyspy-")
        suffix = ".txt" if st.format == "raw" else ".json"
        self._out = Path(self._tmp.name) / f"samples{suffix}"
        cmd = [exe, "record", "--pid", str(self.pid), "--rate", str(st.rate),
               "--format", st.format, "--output", str(self._out), "--full-filenames",
               "--threads"]
        # py-spy reads native stacks only by pausing the process (blocking mode).
        cmd.append("--native" if st.native else "--nonblocking")
        st.command = cmd
        try:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, errors="replace", start_new_session=True)
        except OSError as exc:
            return self._give_up("unavailable", f"py-spy could not be started: {exc}",
                                 _missing_advice())
        threading.Thread(target=self._read_output, name="execmode-pyspy-output",
                         daemon=True).start()
        self._started.wait(timeout)
        if self._started.is_set() and self._proc.poll() is None:
            st.status = "sampling"
            return st
        if self._proc.poll() is None:  # neither sampling nor dead: stop waiting for it
            self._proc.kill()
            self._proc.wait()
            return self._give_up("failed", f"py-spy did not start sampling within {timeout:g} s",
                                 "check that py-spy works here: py-spy dump --pid <pid>")
        self._proc.wait()
        reason, advice = diagnose(self._lines)
        return self._give_up("unavailable", reason, advice)

    def stop(self, timeout: float = _STOP_TIMEOUT_S) -> tuple[PySpyStatus, list[FoldedStack]]:
        """Stop sampling (SIGINT, as Ctrl-C) and return the status and the folded stacks."""
        st = self.status
        if st.status != "sampling" or self._proc is None:
            return st, []
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
            return self._give_up("failed", f"py-spy did not finish writing within {timeout:g} s",
                                 "try a lower --rate"), []
        try:
            stacks = parse_file(self._out, st.format)
        except (OSError, ValueError) as exc:
            # py-spy may print "Sampling process" and only then fail to attach (a ptrace
            # refusal): name that cause rather than the missing output file it leaves.
            if _mentions_permission(self._lines):
                return self._give_up("unavailable", *diagnose(self._lines)), []
            reason = f"py-spy wrote no readable samples ({exc})"
            return self._give_up("failed", reason, _last_lines_advice(self._lines)), []
        finally:
            self._cleanup()
        st.status = "ok"
        st.samples = sum(s.count for s in stacks)
        st.output = self._lines[-5:]
        return st, stacks

    def _read_output(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            line = line.rstrip()
            if line:
                self._lines.append(line)
            if "Sampling process" in line:
                self._started.set()
        self._started.set()  # exited: start() stops waiting and diagnoses

    def _give_up(self, status: str, reason: str, advice: str) -> PySpyStatus:
        st = self.status
        st.status, st.reason, st.advice = status, reason, advice
        st.output = self._lines[-5:]
        self._cleanup()
        return st

    def _cleanup(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


# --- why py-spy could not run ---------------------------------------------------------------
def diagnose(lines: list[str]) -> tuple[str, str]:
    """(reason, advice) from py-spy's output when it exited without sampling."""
    if _mentions_permission(lines):
        return ("py-spy could not attach to the process: permission denied",
                _permission_advice())
    last = lines[-1] if lines else "no output"
    return f"py-spy exited without sampling: {last}", _last_lines_advice(lines)


def _mentions_permission(lines: list[str]) -> bool:
    return any(_PERMISSION_TEXT.lower() in line.lower() for line in lines)


def _permission_advice() -> str:
    advice = []
    if os.geteuid() != 0:
        advice.append('run as root, e.g. sudo env "PATH=$PATH" execmode profile --pyspy ...')
    elif not _has_cap_sys_ptrace():
        advice.append("this process runs as root without CAP_SYS_PTRACE (a container): "
                      "start the container with --cap-add SYS_PTRACE")
    scope = _ptrace_scope()
    if scope is not None and scope > 0:
        advice.append(f"kernel.yama.ptrace_scope is {scope}: allow attaching with "
                      "sudo sysctl kernel.yama.ptrace_scope=0, or run as root")
    if not advice:
        advice.append("py-spy needs the right to ptrace the script: run as root "
                      "or with CAP_SYS_PTRACE")
    return "; ".join(advice)


def _missing_advice() -> str:
    return ("install it with: pip install py-spy (or set EXECMODE_PYSPY to the path of a "
            "py-spy executable)")


def _last_lines_advice(lines: list[str]) -> str:
    return "py-spy said: " + " | ".join(lines[-3:]) if lines else "py-spy printed nothing"


def _has_cap_sys_ptrace() -> bool:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> _CAP_SYS_PTRACE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return True  # cannot tell: do not blame capabilities


def _ptrace_scope() -> int | None:
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope", encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


# --- parsing py-spy's files -----------------------------------------------------------------
def parse_file(path: Path | str, fmt: str) -> list[FoldedStack]:
    """Folded stacks from a py-spy output file (raw or speedscope)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    return parse_raw(text) if fmt == "raw" else parse_speedscope(text)


def parse_raw(text: str) -> list[FoldedStack]:
    """py-spy's raw format: ``frame;frame;...;frame COUNT`` per line, root first.

    With ``--threads`` the first frame is ``thread (TID): NAME``.
    """
    folded: Counter = Counter()
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            raise ValueError(f"line {number} is not 'stack count': {line[:80]!r}")
        frames = stack.split(";")
        thread = ""
        if frames and frames[0].startswith("thread ("):
            thread = frames.pop(0)
        folded[(thread, tuple(frames))] += int(count)
    return [FoldedStack(t, f, c) for (t, f), c in folded.items()]


def parse_speedscope(text: str) -> list[FoldedStack]:
    """py-spy's speedscope output: one sampled profile per thread."""
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError("not a speedscope document")
    frames = (doc.get("shared") or {}).get("frames") or []
    names = []
    for fr in frames:
        name, file, line = fr.get("name", "?"), fr.get("file") or "", fr.get("line")
        names.append(f"{name} ({file}:{line})" if line is not None else f"{name} ({file})")
    folded: Counter = Counter()
    for profile in doc.get("profiles") or []:
        if profile.get("type") != "sampled":
            continue
        thread = str(profile.get("name", ""))
        for sample in profile.get("samples") or []:
            stack = tuple(names[i] for i in sample if isinstance(i, int) and 0 <= i < len(names))
            folded[(thread, stack)] += 1
    return [FoldedStack(t, f, c) for (t, f), c in folded.items()]

