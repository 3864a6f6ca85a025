"""What a debugging controller reports: its events, how the script ended, its error."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field


class ControllerError(Exception):
    """The script could not be started, or the agent stopped answering."""


@dataclass
class ExitInfo:
    """How the script ended."""

    status: str  # ok | exit | exception | quit | terminated | killed | crashed | vanished
    code: int | None       # exit code (or -signal)
    description: str
    traceback: str | None = None
    # The agent's breakpoints as the run ended, each with a note saying why it never hit.
    breakpoints: list | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Event:
    type: str
    data: dict = field(default_factory=dict)

    def __getitem__(self, key):
        return self.data[key]

    def get(self, key, default=None):
        return self.data.get(key, default)


def describe_exit(code: int, finished: dict | None) -> ExitInfo:
    """What ended the script: its own report if it sent one, else the process's status."""
    if finished is not None:
        status = finished.get("status", "ok")
        text = {
            "ok": "finished normally",
            "exit": f"exited with sys.exit({finished.get('code')})",
            "exception": "raised an exception",
            "quit": "stopped by the debugger",
            "terminated": f"was stopped by a signal (exit code {finished.get('code')})",
            "interrupted": "was interrupted (KeyboardInterrupt)",
        }.get(status, status)
        return ExitInfo(status, finished.get("code"), text, finished.get("traceback"),
                        finished.get("breakpoints"))
    if code < 0:
        sig = -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            return ExitInfo("killed", code, f"was killed by signal {name}")
        return ExitInfo("crashed", code, f"crashed with signal {name}")
    return ExitInfo("vanished", code, f"exited with code {code} without reporting "
                                      "(os._exit, or the interpreter died)")
